"""One GPU memory plan for a fit: what lives on the GPU at each stage, chosen before the first large allocation.

A card's memory bounds a fit's speed, never whether it runs. The budget is what CuPy's default pool can hand out:
the device's free memory, or under a pool limit (``CUPY_GPU_MEMORY_LIMIT``, ``cupy.get_default_memory_pool()
.set_limit``) the limit less what the pool already holds (:func:`umapviz._backend.gpu_memory`). Within it, each
stage takes the fastest placement that fits:

- the kNN: X uploaded once and resident (fastest: the search, the refinement and the recall check read it there), or
  left on the host (a NumPy array or a memory-mapped ``.npy``) and streamed to the GPU partition by partition and
  tile by tile; the partitions' size (``knn_partitions``) and the refinement rounds (``knn_refine="auto"`` runs
  none where a round does not fit, with a warning);
- knn="auto"'s recall check: the reference searched whole, or a block of rows at a time;
- the fuzzy set, its pruning and the edge list: on the GPU, or where their sparse matrices do not fit, on the CPU
  from the kNN copied to the host (the two give the same bytes: bench/graph_parity.py);
- the layout: the optimizer's edges and schedule on the GPU (the schedule window shrinks to what fits), or, where
  not even a one-epoch window fits, the layout on the CPU, which gives the same bytes
  (:func:`layout_device`, with a warning).

Where no placement fits, a MemoryError says so before the work, naming the stage, the bytes it needs and the knob
that helps. Where CuPy still runs out inside a stage (another process took memory meanwhile, an estimate fell
short), :func:`fit_stage` turns its ``OutOfMemoryError`` into a MemoryError that names the stage and the knob. The
plan is recorded in ``graph.params["memory_plan"]`` (:meth:`MemoryPlan.record`) and printed with the build's
progress output. Where data lives changes no byte of the graph or the layout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._backend import cupy, gpu_memory, is_cupy
from .._host_data import read_only_mapping

GIB = 2**30
# The layout's edges before the graph exists: the symmetrised kNN has at most 2 * n * (k - 1) edges (each directed
# kNN edge once, its reverse at most once; pruning only removes), so the plan counts that many.
_EDGES_PER_POINT_BOUND = 2
# The share of the budget the engine's buffers may take (engine_gpu._choose_window's).
_LAYOUT_SHARE = 0.9
# What helps, per stage, when a stage runs out of GPU memory anyway.
STAGE_ADVICE = {
    "graph": (
        "pass more knn_partitions (smaller partitions) or knn_refine=0, X as a NumPy array or a memory-mapped .npy "
        "rather than a CuPy array (it then streams from the host), free GPU memory (or raise CuPy's pool limit), or "
        "device='cpu'"
    ),
    "layout": (
        "free GPU memory (or raise CuPy's pool limit), or run the layout with device='cpu' (the same bytes, slower)"
    ),
}


@dataclasses.dataclass
class MemoryPlan:
    """Where a fit's data lives on each stage, and why (see the module's docstring).

    Attributes
    ----------
    device : str
        ``"gpu"`` or ``"cpu"`` (the graph's device).
    source : str
        What X is: ``"memory"`` (a host array), ``"memory-mapped file"`` (read a block at a time) or ``"gpu"``.
    budget, total, pool_limit : int
        GPU bytes the fit may use at its start, the card's (or the limit's) total, and CuPy's pool limit (0: none).
    x : str
        Where X lies during the graph build: ``"gpu"`` (given there), ``"resident"`` (uploaded once),
        ``"streamed"`` (host rows travel partition by partition and tile by tile), or ``"host"`` (a CPU build).
    knn : str
        The kNN method.
    partitions, partition_rows, refine : int
        The partitioned search's partitions, the cap on a partition's members, and the refinement rounds.
    recall_block_rows : int or None
        Rows of X the recall check of ``knn="auto"`` searches at a time (X's rows: all at once); None: no check.
    fuzzy : str
        Where the fuzzy set, the pruning and the edge list are computed: ``"gpu"``, or ``"cpu"`` (the kNN copied to
        the host first; the same bytes) where their sparse matrices do not fit.
    layout, layout_window : str, int
        The layout's device and the schedule window planned ("" and 0 before the layout is planned).
    needs : dict
        GPU bytes each stage needs at its peak, as planned.
    why : list of str
        The reasons of each choice that is not the fastest.
    """

    device: str
    source: str = "memory"
    budget: int = 0
    total: int = 0
    pool_limit: int = 0
    x: str = "host"
    knn: str = ""
    partitions: int = 1
    partition_rows: int = 0
    refine: int = 0
    recall_block_rows: int | None = None
    fuzzy: str = "gpu"
    layout: str = ""
    layout_window: int = 0
    needs: dict = dataclasses.field(default_factory=dict)
    why: list = dataclasses.field(default_factory=list)

    def record(self) -> dict:
        """The plan as ``graph.params["memory_plan"]`` holds it (JSON: bytes in GiB, two decimals)."""
        out: dict[str, Any] = {"device": self.device, "source": self.source, "x": self.x, "knn": self.knn}
        if self.device == "gpu":
            out.update(
                budget_gib=round(self.budget / GIB, 2),
                total_gib=round(self.total / GIB, 2),
                pool_limit_gib=round(self.pool_limit / GIB, 2) if self.pool_limit else None,
                needs_gib={stage: round(need / GIB, 2) for stage, need in self.needs.items()},
            )
        if self.knn.startswith("partitioned"):
            out.update(partitions=self.partitions, partition_rows=self.partition_rows, refine=self.refine)
        if self.recall_block_rows is not None:
            out["recall_block_rows"] = self.recall_block_rows
        if self.device == "gpu":
            out["fuzzy"] = self.fuzzy
        if self.layout:
            out.update(layout=self.layout, layout_window=self.layout_window)
        out["why"] = list(self.why)
        return out

    def describe(self) -> str:
        """One line for the progress output: the budget and each stage's placement."""
        if self.device != "gpu":
            return f"memory plan: CPU build, X {self.source} ({self.x})"
        limit = f", pool limit {self.pool_limit / GIB:.1f} GiB" if self.pool_limit else ""
        parts = [f"GPU budget {self.budget / GIB:.1f} of {self.total / GIB:.1f} GiB{limit}", f"X {self.x}"]
        if self.knn.startswith("partitioned"):
            parts.append(
                f"{self.partitions} partitions of at most {self.partition_rows:,} rows, {self.refine} refine rounds"
            )
        if self.recall_block_rows is not None:
            parts.append(f"recall check in blocks of {self.recall_block_rows:,} rows")
        parts.append(f"fuzzy set on the {self.fuzzy.upper()}")
        if self.layout:
            parts.append(
                f"layout on the {self.layout.upper()}" + (f" (window {self.layout_window})" * bool(self.layout_window))
            )
        why = f" -- {'; '.join(self.why)}" if self.why else ""
        return "memory plan: " + ", ".join(parts) + why


def data_source(X: Any) -> str:
    """``"gpu"``, ``"memory-mapped file"`` or ``"memory"``: what X is, as :attr:`MemoryPlan.source` names it.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        The data.
    """
    if is_cupy(X):
        return "gpu"
    if isinstance(X, np.memmap) or read_only_mapping(X) is not None:
        return "memory-mapped file"
    return "memory"


def plan_cpu(X: Any, method: str, n_partitions: int = 1, overlap: int = 1, refine: int = 0) -> MemoryPlan:
    """The plan of a CPU build: X where it is (a memory-mapped file is read a block of rows at a time by the checks,
    the hash and the partitioned search's partitions).

    Parameters
    ----------
    X : numpy.ndarray
        The checked data.
    method : str
        The kNN method.
    n_partitions, overlap, refine : int
        The partitioned search's resolved partitioning and refinement rounds.
    """
    from .knn.partitioned import _max_members  # noqa: PLC0415 - partitioned's module imports the GPU search

    source = data_source(X)
    plan = MemoryPlan(device="cpu", source=source, x="host", knn=method, partitions=n_partitions, refine=refine)
    plan.partition_rows = min(int(X.shape[0]), _max_members(int(X.shape[0]), n_partitions, overlap))
    if source == "memory-mapped file" and method in ("exact", "approx"):
        plan.why.append(
            f"knn={method!r} reads the memory-mapped X whole; knn='partitioned' reads it one partition at a time"
        )
    return plan


def plan_gpu_graph(
    X: Any,
    n_neighbors: int,
    method: str,
    n_partitions: int = 1,
    overlap: int = 1,
    refine: int | str = 0,
    escalating: bool = False,
    distributed: bool = False,
    free_total: tuple[int, int] | None = None,
) -> MemoryPlan:
    """The plan of a GPU graph build, made before it starts; MemoryError (naming the stage, its need and the fix)
    where no placement fits.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        The checked (n, d) data.
    n_neighbors : int
        k.
    method : str
        ``"exact-gpu"`` or ``"partitioned-gpu"``.
    n_partitions, overlap : int
        The resolved partitioning (ignored for the exact search).
    refine : int or "auto"
        The refinement rounds asked for (resolved here: :func:`umapviz.graph.knn.partitioned.refine_rounds`).
    escalating : bool
        Whether knn="auto"'s recall check follows the search.
    distributed : bool
        Whether a Dask client runs the partitions (X then stays where it is).
    free_total : (int, int), optional
        (free, total) GPU bytes; None asks the GPU.
    """
    from .build_gpu import memory_shortfall_message  # noqa: PLC0415 - build_gpu imports this module
    from .knn import AUTO_RECALL_SAMPLE  # noqa: PLC0415
    from .knn.knn_gpu import knn_bytes_needed  # noqa: PLC0415
    from .knn.partitioned import (  # noqa: PLC0415
        DEFAULT_OVERLAP,
        ROWS_PER_PARTITION,
        _max_members,
        partitioned_bytes_needed,
        refine_rounds,
    )
    from .knn.recall import truth_block_rows  # noqa: PLC0415
    from .knn.refine import refine_bytes_needed  # noqa: PLC0415

    n, d = (int(s) for s in X.shape)
    k = int(n_neighbors)
    free, total = gpu_memory() if free_total is None else free_total
    plan = MemoryPlan(
        device="gpu",
        source=data_source(X),
        budget=int(free),
        total=int(total),
        pool_limit=_pool_limit() if free_total is None else 0,
        knn=method,
    )
    partitioned = method == "partitioned-gpu"
    on_device = is_cupy(X)
    x_bytes = 4 * n * d
    # The search's own buffers must fit (X counted where it must be on the device: the exact search's reference).
    if partitioned:
        search = partitioned_bytes_needed(n, d, k, n_partitions, overlap, data_on_device=False)
    else:
        search = knn_bytes_needed(n, d, k, min(n, 1024))
    if search > free:
        other = None
        if not partitioned:
            parts = max(1, -(-n // ROWS_PER_PARTITION))
            other = partitioned_bytes_needed(n, d, k, parts, DEFAULT_OVERLAP, data_on_device=False)
        raise MemoryError(memory_shortfall_message(n, d, k, method, search, free, total, other))
    if partitioned:
        plan.partitions, plan.partition_rows = int(n_partitions), min(n, _max_members(n, n_partitions, overlap))
        plan.refine = refine_rounds(refine, n, d, k, n_partitions, "gpu", on_device, (free, total))
        if refine == "auto" and plan.refine == 0 and n_partitions > 1:
            plan.why.append("no refinement round: a round does not fit")
    # The fuzzy set's peak: the kNN, the memberships and the symmetric sum's three sparse matrices.
    fuzzy = 8 * n * k + 3 * 12 * 2 * n * k
    if on_device:
        plan.x = "gpu"
    elif not partitioned:
        plan.x = "resident"  # the exact search's reference is prepared on the GPU whole
    elif distributed:
        plan.x = "host"
        plan.why.append("the Dask workers take X's partitions from the host")
    else:  # uploaded where X and the work fit in half the budget, and X beside the fuzzy set
        resident = x_bytes + max(search, refine_bytes_needed(n, k) if plan.refine else 0)
        plan.x = "resident" if resident <= 0.5 * free and (x_bytes + fuzzy <= free or fuzzy > free) else "streamed"
        if plan.x == "streamed":
            plan.why.append(
                f"X ({x_bytes / GIB:.1f} GiB) beside the search ({search / GIB:.1f} GiB) or the fuzzy set "
                f"({fuzzy / GIB:.1f} GiB) does not fit: X streams from the host"
            )
    # X held on the GPU while the fuzzy set is made: a CuPy X, or one uploaded for the partitioned search (the exact
    # search's own copy is gone by then).
    held_x = x_bytes if plan.x == "gpu" or (plan.x == "resident" and partitioned) else 0
    plan.fuzzy = "gpu" if fuzzy + held_x <= free else "cpu"
    if plan.fuzzy == "cpu":
        plan.why.append(
            f"the fuzzy set's sparse matrices ({fuzzy / GIB:.1f} GiB) do not fit: it runs on the CPU from the kNN"
        )
    plan.needs["knn"] = int(search + (x_bytes if plan.x == "resident" and partitioned else 0))
    plan.needs["fuzzy set"] = int(fuzzy + held_x) if plan.fuzzy == "gpu" else 0
    plan.needs["graph"] = max(plan.needs["knn"], plan.needs["fuzzy set"])
    if escalating:
        # The check runs beside the graph (and a resident X): planned on what is left then; raised up front only
        # where not even a block fits in the whole budget.
        held = 8 * n * k + (4 * n * d if plan.x in ("gpu", "resident") else 0)
        try:
            plan.recall_block_rows = truth_block_rows(n, d, AUTO_RECALL_SAMPLE, max(0, free - held))
        except MemoryError:
            plan.recall_block_rows = truth_block_rows(n, d, AUTO_RECALL_SAMPLE, free)
        if plan.recall_block_rows < n:
            plan.why.append("the recall check's reference does not fit whole: searched in blocks")
    nnz = _EDGES_PER_POINT_BOUND * n * max(1, k - 1)
    plan.layout, plan.layout_window, plan.needs["layout"] = layout_choice(n, nnz, 2, "chunked", free)
    if plan.layout == "cpu":
        plan.why.append("the layout's edges may not fit: it is planned again once the graph is built")
    return plan


def layout_device(
    graph: Any, n_components: int, strategy: str, device: str, free: int | None = None, progress: bool = False
) -> str:
    """The layout's device for a built graph: ``device`` itself, except that on the GPU, where not even a one-epoch
    schedule of the engine fits in the budget, the CPU (which gives the same bytes), with a UserWarning. The choice
    is added to ``graph.params["memory_plan"]`` where the graph has one.

    Parameters
    ----------
    graph : FuzzyGraph
        The built graph.
    n_components : int
        The embedding's dimension.
    strategy : str
        The optimizer's strategy.
    device : str
        ``"cpu"``, ``"gpu"`` or ``"auto"``.
    free : int, optional
        GPU bytes free; None asks the GPU.
    progress : bool
        Print the layout's placement.
    """
    from .._backend import resolve_device  # noqa: PLC0415

    device = resolve_device(device)
    record = graph.params.get("memory_plan")
    if device != "gpu":
        if isinstance(record, dict):
            record.update(layout=device, layout_window=0)
        return device
    from ..optimize.engine_gpu import MAX_DIM  # noqa: PLC0415 - the engine's own limit says what it takes

    if n_components > MAX_DIM:
        return device  # the engine refuses it with its own message
    n, nnz = int(graph.n_vertices), int(graph.head.shape[0])
    free = gpu_memory()[0] if free is None else free
    chosen, window, need = layout_choice(n, nnz, n_components, strategy, free)
    if isinstance(record, dict):
        record.update(layout=chosen, layout_window=window)
        record.setdefault("needs_gib", {})["layout"] = round(need / GIB, 2)
    if chosen == "cpu":
        reason = (
            f"the layout's edges and schedule ({nnz:,} edges) need about {need / GIB:.2f} GiB of GPU memory at the "
            f"least, but only {free / GIB:.2f} GiB is free"
        )
        if isinstance(record, dict):
            record.setdefault("why", []).append(reason + ": the layout runs on the CPU")
        warnings.warn(
            f"The layout runs on the CPU: {reason}. It gives the same bytes as on the GPU, more slowly. Free GPU "
            "memory (or raise CuPy's pool limit) to run it on the GPU.",
            UserWarning,
            stacklevel=3,
        )
    if progress:
        print(
            f"memory plan: layout on the {chosen.upper()}, schedule window {window} ({need / GIB:.2f} GiB at the least)"
        )
    return chosen


def layout_choice(n: int, nnz: int, dim: int, strategy: str, free: int) -> tuple[str, int, int]:
    """``(device, window, bytes at window 1)`` of a layout: the GPU with the largest schedule window whose buffers
    fit in the engine's share of ``free``, else the CPU.

    Parameters
    ----------
    n, nnz : int
        The graph's vertices and edges.
    dim : int
        The embedding's dimension.
    strategy : str
        The optimizer's strategy.
    free : int
        GPU bytes free.
    """
    from ..optimize.engine_gpu import _SCHED_WMAX, SCHED_WINDOW, device_bytes_needed  # noqa: PLC0415

    least = device_bytes_needed(n, nnz, dim, strategy, 1)
    for window in range(min(SCHED_WINDOW, _SCHED_WMAX), 0, -1):
        if device_bytes_needed(n, nnz, dim, strategy, window) <= _LAYOUT_SHARE * free:
            return "gpu", window, int(least)
    return "cpu", 0, int(least)


def _pool_limit() -> int:
    """CuPy's default pool's limit in bytes (0: none)."""
    return int(cupy().get_default_memory_pool().get_limit())


_WANTED = re.compile(r"allocating ([\d,]+) bytes")


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is the GPU running out of memory: CuPy's ``OutOfMemoryError`` (a MemoryError subclass), or
    a CUDA library's allocation failure (cudaErrorMemoryAllocation, ``*_STATUS_ALLOC_FAILED``).

    Parameters
    ----------
    exc : BaseException
        Any exception.
    """
    if isinstance(exc, MemoryError):
        return type(exc) is not MemoryError  # a plain MemoryError is this kit's own, already explained
    text = str(exc)
    return type(exc).__name__.endswith("Error") and (
        "cudaErrorMemoryAllocation" in text or "ALLOC_FAILED" in text or "out of memory" in text.lower()
    )


def out_of_memory_message(stage: str, exc: BaseException, plan: MemoryPlan | None = None) -> str:
    """The MemoryError text of a stage that ran out of GPU memory: the stage, the bytes asked for, what the plan
    counted, and the knob.

    Parameters
    ----------
    stage : str
        A key of :data:`STAGE_ADVICE`.
    exc : BaseException
        What CuPy (or a CUDA library) raised.
    plan : MemoryPlan, optional
        The fit's plan.
    """
    wanted = _WANTED.search(str(exc))
    asked = f" while allocating {int(wanted.group(1).replace(',', '')) / GIB:.2f} GiB" if wanted else ""
    counted = ""
    if plan is not None and plan.device == "gpu":
        need = plan.needs.get(stage)
        counted = (
            f" The memory plan counted {need / GIB:.2f} GiB for it" if need is not None else " The memory plan had"
        ) + f" of a {plan.budget / GIB:.2f} GiB budget ({plan.describe()[len('memory plan: ') :]})."
    return (
        f"The fit ran out of GPU memory in its {stage} stage{asked}.{counted} Other work on the GPU may have taken "
        f"memory meanwhile. To fit: {STAGE_ADVICE.get(stage, STAGE_ADVICE['graph'])}. ({type(exc).__name__}: {exc})"
    )


@contextlib.contextmanager
def fit_stage(stage: str, plan: MemoryPlan | None = None) -> Iterator[None]:
    """Run a stage of a fit; the GPU running out of memory inside it (:func:`is_out_of_memory`) comes out as a
    MemoryError naming the stage and the knob (:func:`out_of_memory_message`), CuPy's error chained.

    Parameters
    ----------
    stage : str
        ``"graph"`` or ``"layout"``.
    plan : MemoryPlan, optional
        The fit's plan, quoted in the message.
    """
    try:
        yield
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
        raise MemoryError(out_of_memory_message(stage, exc, plan)) from exc
