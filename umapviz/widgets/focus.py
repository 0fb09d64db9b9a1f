"""What a panel's user looks at and picks: the view range, a selection of points, an inspected point.

``Focus`` is shared by both controllers (the grid shows one view range and one selection in all its cells, all
of one graph); ``Inspection`` adds what the Explorer answers about one point (``umapviz.probe``). Every
value is an observable, validated trait: a view follows it, and a bad value is refused at once with a
ParameterError (a ValueError) naming it and the fix, the trait keeping its value.

A controller that mixes these in provides ``focus_points()`` (points of the layout on screen, 0 before one)
and calls ``_refocus(rebuilt)`` on the worker once it adopts a new layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from traitlets import Any as AnyTrait
from traitlets import HasTraits, default, observe, validate

from .. import _validation
from .. import probe as inspect_core
from .._backend import to_host
from .._validation import is_integer
from .status import ExplorerError, ParameterError

EMPTY = np.empty(0, dtype=np.int64)
EMPTY.setflags(write=False)


class Focus(HasTraits):
    """The view range and the selection of a panel (a mixin of the controllers).

    Parameters
    ----------
    **kwargs
        Initial trait values, as for any ``traitlets.HasTraits``.
    """

    view_range = AnyTrait(
        None, allow_none=True, help="((x0, x1), (y0, y1)) in data units, or None for the automatic range"
    )
    selection = AnyTrait(allow_none=False, help="indices of the selected points: int64, ascending, unique, read-only")

    @default("selection")
    def _no_selection(self) -> np.ndarray:
        return EMPTY

    def focus_points(self) -> int:
        """Points of the layout on screen (0 before one); a controller provides it."""
        raise NotImplementedError

    # -- view range ----------------------------------------------------------------------------------------
    @validate("view_range")
    def _check_view_range(self, proposal: Any) -> tuple | None:
        value = proposal["value"]
        if value is None:
            return None
        try:
            x_range, y_range = value
        except (TypeError, ValueError):
            raise ParameterError(
                f"view_range={value!r} must be ((x0, x1), (y0, y1)) in data units, or None for the automatic range."
            ) from None
        return check_range("x_range", x_range), check_range("y_range", y_range)

    def zoom(self, x_range: Any, y_range: Any) -> tuple:
        """Show ``x_range`` x ``y_range`` (data units) in the view, at full resolution.

        Parameters
        ----------
        x_range, y_range : pair of float
            (low, high), finite, low < high.

        Returns
        -------
        tuple
            The view range now, ((x0, x1), (y0, y1)).
        """
        self.view_range = (x_range, y_range)
        return self.view_range

    def reset_view(self) -> None:
        """Back to the automatic view range (the layout's robust range, or the locked one)."""
        self.view_range = None

    # -- selection -------------------------------------------------------------------------------------------
    @validate("selection")
    def _check_selection(self, proposal: Any) -> np.ndarray:
        return check_indices(proposal["value"], self.focus_points(), name="selection")

    def select(self, indices: Any) -> np.ndarray:
        """Select the points ``indices`` (in every view of this panel); None or an empty list clears the selection.

        Parameters
        ----------
        indices : sequence of int or None
            Point indices, 0 to n_points - 1 (a boolean mask: pass ``np.flatnonzero(mask)``).

        Returns
        -------
        numpy.ndarray
            The selection now: int64, ascending, unique.
        """
        self.selection = EMPTY if indices is None else check_indices(indices, self.focus_points())
        return self.selection

    def clear_selection(self) -> None:
        """Select nothing (as ``select(None)``; the view's Clear button and a click on empty space do it too)."""
        self.selection = EMPTY

    def clear(self) -> None:
        """Clear what the user picked: the selection (and, in the Explorer, the inspected point); the view range
        and the layout stay. A click on empty plot space and the view's Clear button call it."""
        self.clear_selection()

    def layout_of(self, cell: int = 0) -> Any:
        """The embedding of cell ``cell`` (NumPy or CuPy) to pick points in; a controller provides it."""
        raise NotImplementedError

    # -- picking: read the layout as it is, without waiting for a frame in progress (a hover must not wait) --
    def nearest(self, x: float, y: float, cell: int = 0) -> int:
        """The point nearest to (x, y) in cell ``cell``'s layout (for a hover).

        Parameters
        ----------
        x, y : float
            The position, in data units.
        cell : int
            The grid's cell (0 for the Explorer).
        """
        return inspect_core.nearest_point(self.layout_of(cell), x, y)

    def select_box(self, x_range: Any, y_range: Any, cell: int = 0) -> np.ndarray:
        """Select the points inside a box of cell ``cell``'s layout (a box selection).

        Parameters
        ----------
        x_range, y_range : pair of float
            The box's (low, high) per axis, in data units.
        cell : int
            The grid's cell the box was drawn in (0 for the Explorer); the selection holds in every cell.

        Returns
        -------
        numpy.ndarray
            The selection now, as ``select`` returns it.
        """
        return self.select(to_host(inspect_core.points_in_box(self.layout_of(cell), x_range, y_range)))

    def select_lasso(self, xs: Any, ys: Any, cell: int = 0) -> np.ndarray:
        """Select the points inside a polygon (a lasso) drawn in cell ``cell``'s layout.

        Parameters
        ----------
        xs, ys : sequence of float
            The polygon's vertices, in data units (at least 3).
        cell : int
            The grid's cell the lasso was drawn in (0 for the Explorer); the selection holds in every cell.

        Returns
        -------
        numpy.ndarray
            The selection now, as ``select`` returns it.
        """
        return self.select(to_host(inspect_core.points_in_polygon(self.layout_of(cell), xs, ys)))

    def _refocus(self, rebuilt: bool) -> None:
        """A new layout was adopted: new data (``rebuilt``) drops the view range and the selection, which belonged
        to other points; a restart on the same graph keeps both."""
        if rebuilt:
            with self.hold_trait_notifications():
                self.view_range = None
                self.selection = EMPTY


class Inspection(Focus):
    """The Explorer's focus: also one inspected point, its ``PointInfo`` kept up to date (a mixin of
    ExplorerController, whose ``run``, ``graph``, ``worker`` and ``status`` it uses).

    Parameters
    ----------
    **kwargs
        Initial trait values, as for any ``traitlets.HasTraits``.
    """

    inspected = AnyTrait(None, allow_none=True, help="the inspected point's index, None when none")
    point = AnyTrait(None, allow_none=True, help="umapviz.probe.PointInfo of the inspected point, None when none")

    @validate("inspected")
    def _check_inspected(self, proposal: Any) -> int | None:
        value = proposal["value"]
        return None if value is None else check_index(value, self.focus_points())

    def focus_points(self) -> int:
        """Points of the graph in use (0 before one)."""
        return 0 if self.graph is None else int(self.graph.n_vertices)

    def inspect(self, index: int | None) -> inspect_core.PointInfo | None:
        """Inspect point ``index``: why it sits where it does (see ``umapviz.probe.PointInfo``); None clears it.

        The point stays inspected (``inspected``, its info in ``point``) until another is, ``inspect(None)`` or
        ``clear()``, or new data comes: a restart with another strategy or n_chunks recomputes its info, so
        ``max_edges_in_one_chunk`` follows.

        Parameters
        ----------
        index : int or None
            The point's row in the layout (negative counts from the end); None: inspect nothing.

        Returns
        -------
        umapviz.probe.PointInfo or None
        """
        if index is None:
            self.inspected = None
            return None
        index = check_index(index, self.focus_points())
        self._need_layout("inspect")

        def job() -> inspect_core.PointInfo:
            info = self.point_info(index)
            self.inspected, self.point = index, info
            return info

        return self._on_worker(job)

    def clear(self) -> None:
        """Clear the inspected point and the selection (the plot is no longer dimmed); the view range and the
        layout stay. A click on empty plot space and the view's Clear button call it."""
        with self.hold_trait_notifications():
            self.inspected = None
            self.clear_selection()

    def flung(self) -> np.ndarray:
        """The points the outlier measure flags now, busiest (highest degree) first, as int64 indices."""
        run = self._need_layout("list flung points")
        return self._on_worker(lambda: inspect_core.flung(run.mask, run.graph))

    def trail(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Where point ``index`` was at each recorded epoch.

        Parameters
        ----------
        index : int
            The point's row in the layout (negative counts from the end).

        Returns
        -------
        epochs : numpy.ndarray
            int64, the recorded epochs, ascending (thinned as the recording is: see session.FrameLog).
        positions : numpy.ndarray
            float32, shape (len(epochs), 2): the point's (x, y) at each.
        """
        index = check_index(index, self.focus_points())
        run = self._need_layout("draw a trail")

        def job() -> tuple[np.ndarray, np.ndarray]:
            log = run.log
            if log is None or not len(log):
                return np.empty(0, np.int64), np.empty((0, 2), np.float32)
            positions = np.stack([embedding[index, :2] for embedding in log.embeddings]).astype(np.float32)
            return np.asarray(log.epochs, dtype=np.int64), positions

        return self._on_worker(job)

    def point_info(self, index: int) -> inspect_core.PointInfo:
        """``PointInfo`` of ``index`` in the layout now (call on the worker thread: the layout moves there)."""
        run = self.run
        opt, log = run.optimizer, run.log
        return inspect_core.point_info(
            run.graph,
            opt.device_embedding,
            index,
            strategy=opt.strategy,
            n_chunks=opt.n_chunks,
            random_state=opt.seed,
            labels=run.labels,
            outlier_masks=run.outlier_masks(),
            history_epochs=None if log is None else list(log.epochs),
            history_masks=None if log is None else list(log.outliers),
        )

    def layout_of(self, cell: int = 0) -> Any:
        """The layout now (the Explorer has one: ``cell`` must be 0)."""
        if cell != 0:
            raise ValueError(f"cell={cell!r}: the Explorer shows one layout, cell 0.")
        return self._need_layout("pick points in").optimizer.device_embedding

    def _need_layout(self, what: str) -> Any:
        run = self.run
        if run is None:
            raise ExplorerError(self.status.error or f"nothing to {what}: the panel has no layout yet.")
        return run

    def _on_worker(self, job: Any) -> Any:
        """Run ``job`` on the worker thread (between two frames while playing), where the layout is consistent."""
        return job() if self.worker.in_worker else self.worker.submit(job).result()

    @observe("inspected")
    def _inspected_changed(self, change: Any) -> None:
        if change["new"] is None:
            self.point = None

    def _refocus(self, rebuilt: bool) -> None:
        """As Focus; the inspected point is kept over a restart (its info recomputed under the new strategy and
        n_chunks) and dropped with new data."""
        super()._refocus(rebuilt)
        if rebuilt or (self.inspected is not None and self.inspected >= self.focus_points()):
            self.inspected = None
        elif self.inspected is not None:
            self.point = self.point_info(self.inspected)


class CellsFocus(Focus):
    """The grid's focus: one view range and one selection for all its cells, which lay out one graph (a mixin of
    GridController, whose ``graph``, ``runs``, ``worker``, ``status`` and ``_show_all`` it uses).

    Parameters
    ----------
    **kwargs
        Initial trait values, as for any ``traitlets.HasTraits``.
    """

    def focus_points(self) -> int:
        """Points of the graph every cell lays out (0 before one)."""
        return 0 if self.graph is None else int(self.graph.n_vertices)

    def flung(self, cell: int = 0) -> np.ndarray:
        """The points the outlier measure flags now in cell ``cell``, busiest (highest degree) first.

        Parameters
        ----------
        cell : int
            The configuration's position in ``configs``.

        Returns
        -------
        numpy.ndarray
            int64 point indices, the same points in every cell.
        """
        run = self._run_of(cell)

        def job() -> np.ndarray:  # on the worker: between two frames, the mask and the layout agree
            return inspect_core.flung(run.mask, run.graph)

        return job() if self.worker.in_worker else self.worker.submit(job).result()

    def layout_of(self, cell: int = 0) -> Any:
        """Cell ``cell``'s layout now."""
        return self._run_of(cell).optimizer.device_embedding

    def _run_of(self, cell: int) -> Any:
        runs = self.runs
        if not is_integer(cell) or not 0 <= cell < len(runs):
            raise ValueError(
                f"cell={cell!r} must be an int from 0 to {len(runs) - 1} (one per configuration)"
                if runs
                else self.status.error or "the grid has no layouts yet."
            )
        return runs[int(cell)]

    @observe("view_range")
    def _view_range_changed(self, _change: Any) -> None:
        if self.runs and not self.worker.playing:  # while running, the next frame draws it
            self.worker.submit(self._show_all, key="redraw")


def check_range(name: str, value: Any) -> tuple[float, float]:
    """``value`` as a (low, high) pair of finite floats with low < high (``_validation.check_range``), or a
    ParameterError naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        The pair to check.
    """
    try:
        return _validation.check_range(name, value)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


def check_index(value: Any, n: int) -> int:
    """``value`` as a point index of a layout of ``n`` points (negative counts from the end;
    ``_validation.check_index``), or a ParameterError.

    Parameters
    ----------
    value : int
        The index.
    n : int
        Points of the layout (0: there is none yet).
    """
    if n == 0 and is_integer(value):
        raise ParameterError("there is no layout yet: wait for the panel to build one (wait()).")
    try:
        return _validation.check_index(value, n)
    except (TypeError, IndexError) as exc:
        raise ParameterError(str(exc)) from None


def check_indices(value: Any, n: int, name: str = "indices") -> np.ndarray:
    """``value`` as sorted, unique, read-only int64 point indices of a layout of ``n`` points.

    Parameters
    ----------
    value : sequence of int
        The indices (an empty sequence: none).
    n : int
        Points of the layout (0: there is none yet).
    name : str
        The argument's name, for the messages.
    """
    if value is None:
        raise ParameterError(f"{name}=None: pass point indices (an empty list selects nothing).")
    arr = np.asarray(to_host(value) if hasattr(value, "__cuda_array_interface__") else value)
    if arr.size == 0:
        return EMPTY
    if arr.dtype == np.bool_:
        raise ParameterError(f"{name} must be point indices, got a boolean mask: pass np.flatnonzero(mask).")
    if arr.dtype.kind not in "iu":
        raise ParameterError(f"{name} must be integer point indices, got dtype {arr.dtype}.")
    if arr.ndim != 1:
        raise ParameterError(f"{name} must be one-dimensional, got shape {arr.shape}.")
    if n == 0:
        raise ParameterError("there is no layout yet: wait for the panel to build one (wait()).")
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ParameterError(
            f"{name} has {bad.size:,} index(es) out of range (e.g. {int(bad[0])}): the layout has "
            f"{n:,} points, 0 to {n - 1:,}."
        )
    out = np.unique(arr.astype(np.int64))
    out.setflags(write=False)
    return out
