"""The landmark assignment's step on an NVIDIA GPU (CuPy + landmarks_gpu.cu), twin of
:func:`umapviz.graph.start.landmarks_cpu.grow_owners`: the same labels. CuPy loads on first use."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..._backend import cupy

KERNELS = Path(__file__).with_name("landmarks_gpu.cu")
_THREADS = 256


@functools.lru_cache(maxsize=1)
def _module():
    return cupy().RawModule(code=KERNELS.read_text(), options=("--std=c++17",))


def grow_owners_gpu(indptr, indices, weight, level, owner, step: int) -> int:
    """One step of the assignment on the GPU (see :func:`umapviz.graph.start.landmarks_cpu.grow_owners`).

    Parameters
    ----------
    indptr, indices : cupy.ndarray
        The CSR structure (int64 row pointers, int32 column indices).
    weight : cupy.ndarray
        float32 edge weights.
    level : cupy.ndarray
        int32 step at which each row was labelled, -1 where it has no owner yet (updated).
    owner : cupy.ndarray
        int32 landmark owning each row (updated where a row is labelled).
    step : int
        This step's number (landmarks are step 0).

    Returns
    -------
    int
        How many rows this step labelled.
    """
    cp = cupy()
    count = cp.zeros(1, dtype=cp.uint64)
    n = int(level.size)
    _module().get_function("grow_owners")(
        ((n + _THREADS - 1) // _THREADS,),
        (_THREADS,),
        (indptr, indices, weight, level, owner, np.int32(step), np.int32(n), count),
    )
    return int(count.get()[0])
