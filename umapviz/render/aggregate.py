"""Aggregation of an (N, 2) embedding into pixel grids: the device-neutral front, with its checks.

NumPy embeddings go through :mod:`umapviz.render.aggregate_cpu` (a cached Numba pass), CuPy ones through
:mod:`umapviz.render.aggregate_gpu` (a fused CUDA kernel); both repeat datashader's point glyph (its
``Canvas.points`` with ``count`` / ``count_cat``) bit for bit.

The path is chosen by array type, as datashader does: a CuPy embedding never leaves the GPU (only the grids
come back), a NumPy one is read in place without copying the points.

Grids follow datashader's orientation: row 0 is the *bottom* of the view (smallest y).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from umapviz._backend import is_cupy, to_host, xp_of
from umapviz._validation import renamed
from umapviz.render.aggregate_cpu import N_EDGE_BINS, count_grids, edge_bins
from umapviz.render.view import View, as_view, check_pixels

SIDES = ("left", "right", "bottom", "top")  # row order of Aggregate.edge_counts
# Largest H x W x K uint32 count grid aggregate() allocates: sparse label codes (0 and 5000) would otherwise
# ask datashader for gigabytes, or get the process killed for memory.
MAX_GRID_BYTES = 2 * 2**30


@dataclass(frozen=True)
class Aggregate:
    """Pixel grids of one embedding over one view.

    Attributes
    ----------
    counts : numpy.ndarray or cupy.ndarray
        (H, W) uint32 points per pixel, or (H, W, K) per label when labels were given; NumPy, or CuPy when
        ``aggregate(..., keep_on_device=True)`` counted a CuPy embedding (``outlier_counts`` likewise).
    outlier_counts : numpy.ndarray, cupy.ndarray or None
        (H, W) uint32 outlier points per pixel, or None without an outlier mask.
    edge_counts : numpy.ndarray
        (4, N_EDGE_BINS) uint32 finite points outside the view, by the side (SIDES order) and the position along
        it where the ray from the view's centre towards the point leaves the view (left to right on bottom/top,
        bottom to top on left/right).
    view : View
        The view counted over.
    n_labels : int or None
        K, the label layers of ``counts``; None without labels.
    """

    counts: np.ndarray
    outlier_counts: np.ndarray | None
    edge_counts: np.ndarray
    view: View
    n_labels: int | None = None

    @property
    def width(self) -> int:
        return int(self.counts.shape[1])

    @property
    def height(self) -> int:
        return int(self.counts.shape[0])

    @functools.cached_property
    def total(self) -> np.ndarray:
        """(H, W) points per pixel, all labels together (computed once: a pass over H x W x K counts)."""
        if self.counts.ndim == 2:
            return self.counts
        if is_cupy(self.counts):
            return self.counts.sum(axis=2, dtype=np.uint32)
        # uint32 like the counts; NumPy's einsum sums a short last axis in one pass, where .sum reduces it
        # pixel by pixel (several times slower)
        return np.einsum("ijk->ij", self.counts)

    @property
    def n_in_view(self) -> int:
        return int(self.total.sum(dtype=np.int64))

    @property
    def n_out_of_view(self) -> int:
        """Finite points outside the view (NaN and inf rows are in neither count)."""
        return int(self.edge_counts.sum(dtype=np.int64))


def check_embedding(embedding: Any) -> Any:
    """Return ``embedding`` as an (N, 2) NumPy or CuPy array, or raise a clear error."""
    if not is_cupy(embedding):
        embedding = np.asarray(embedding)
    if embedding.ndim != 2 or embedding.shape[1] != 2:
        raise ValueError(
            f"embedding must have shape (N, 2); got {tuple(embedding.shape)}. "
            "Rendering draws 2-D layouts only: pass the first two columns, e.g. embedding[:, :2]."
        )
    if embedding.dtype not in (np.float32, np.float64):
        # datashader and the kernel take only these; float64 holds integers up to 2**53 and longdouble values
        # beyond float32's range (float32 would merge int64 coordinates near 1e9, or turn 1e300 into inf).
        embedding = embedding.astype(np.float64)
    return embedding


def check_labels(labels: Any, n: int, n_labels: int | None) -> tuple[Any, int]:
    """(labels as an integer array of length n, the number of label values K); labels must be in [0, K)."""
    if not is_cupy(labels):
        labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), one per point; got {tuple(labels.shape)}.")
    if labels.dtype.kind not in "iu":
        raise ValueError(
            f"labels must be integer codes 0..K-1; got dtype {labels.dtype}. "
            "Convert names to codes first, e.g. codes, names = pandas.factorize(labels)."
        )
    if n == 0:
        return labels, int(n_labels or 1)
    lo, hi = int(labels.min()), int(labels.max())  # 1-D reductions: cheap on both backends
    if n_labels is None:
        n_labels = hi + 1
    if lo < 0 or hi >= n_labels:
        raise ValueError(
            f"labels must lie in [0, {n_labels}); got values from {lo} to {hi}. "
            "Map 'no label' (e.g. -1) to its own code, or pass a larger n_labels."
        )
    return labels, int(n_labels)


def check_outliers(outliers: Any, n: int) -> Any:
    """A boolean mask of length n from a mask or an array of point indices (empty: no outliers)."""
    if not is_cupy(outliers):
        outliers = np.asarray(outliers)
    xp = xp_of(outliers)
    if outliers.ndim == 1 and outliers.size == 0:  # [] arrives as float64: no outliers, whatever the dtype
        return xp.zeros(n, dtype=bool)
    if outliers.dtype == bool:
        if outliers.shape != (n,):
            raise ValueError(f"an outlier mask must have shape ({n},); got {tuple(outliers.shape)}.")
        return outliers
    if outliers.dtype.kind in "iu" and outliers.ndim == 1:
        lo, hi = int(outliers.min()), int(outliers.max())
        if outliers.shape == (n,) and lo >= 0 and hi <= 1:
            # Read as indices, a 0/1 mask would mark points 0 and 1 instead of the points it flags.
            raise ValueError(
                f"outliers is an integer array of length {n} holding only 0 and 1: it looks like a 0/1 mask, "
                "not point indices. Pass mask.astype(bool) for a mask, or np.flatnonzero(mask) for indices."
            )
        if lo < 0 or hi >= n:
            raise ValueError(
                f"outlier indices must lie in [0, {n}); got values from {lo} to {hi}. For a mask pass booleans; "
                "for -1/1 predictions (IsolationForest, LocalOutlierFactor: -1 = outlier) pass pred == -1."
            )
        mask = xp.zeros(n, dtype=bool)
        mask[outliers] = True
        return mask
    raise ValueError(
        f"outliers must be a boolean mask of shape ({n},) or a 1-D array of point indices; "
        f"got dtype {outliers.dtype} and shape {tuple(outliers.shape)}."
    )


def check_grid_size(width: int, height: int, n_labels: int, labels: Any = None) -> None:
    """ValueError when the (height, width, n_labels) uint32 count grid would exceed MAX_GRID_BYTES."""
    nbytes = width * height * n_labels * 4  # Python ints: no overflow for codes near 2**63
    if nbytes <= MAX_GRID_BYTES:
        return
    if labels is None:
        raise ValueError(
            f"a {width} x {height} image needs {nbytes / 2**30:.1f} GiB of counts, over the "
            f"{MAX_GRID_BYTES / 2**30:g} GiB limit: draw a smaller image (e.g. width=800, height=800)."
        )
    codes = ""
    if labels.size:  # two reductions, on this error path only
        codes = f" (codes present: {int(labels.min())} to {int(labels.max())})"
    raise ValueError(
        f"labels with K={n_labels} values{codes} need a {width} x {height} x {n_labels} grid of counts: "
        f"{nbytes / 2**30:.1f} GiB, over the {MAX_GRID_BYTES / 2**30:g} GiB limit. Number the labels 0..K-1 "
        "without gaps, e.g. codes, names = pandas.factorize(labels) (or np.unique(labels, return_inverse=True)), "
        "and leave n_labels at its default; or draw a smaller image."
    )


def aggregate(
    embedding: Any,
    view: View,
    width: int = 800,
    height: int = 800,
    labels: Any = None,
    n_labels: int | None = None,
    outliers: Any = None,
    *,
    keep_on_device: bool = False,
    n_colors: int | None = None,
    n_colours: int | None = None,
) -> Aggregate:
    """Count an (N, 2) NumPy or CuPy embedding into pixel grids over ``view``.

    Parameters
    ----------
    embedding : array, shape (N, 2)
        The layout, NumPy or CuPy.
    view : View or (xmin, xmax, ymin, ymax)
        The data range the grids cover.
    width, height : int
        The grids' size in pixels.
    labels : array of int, optional
        Codes in [0, K): per-label counts (H, W, K) instead of (H, W).
    n_labels : int, optional
        K (default: the largest code + 1).
    outliers : array of bool or int, optional
        A mask (or indices) of the outlier points: a separate grid of them.
    keep_on_device : bool
        For a CuPy embedding, leave the grids on the GPU as CuPy arrays (``shade`` shades them there); by
        default they come back to the host.
    n_colors : int, optional
        The palette's size, where K exceeds it: classes share its colours (class ``k`` takes colour
        ``k mod n_colors``, see ``style.class_colors``), so those of one colour are counted together, as code
        ``k mod n_colors``: the same image, from at most ``n_colors`` layers of counts instead of one per class
        (a layer per class costs width x height x 4 bytes: gigabytes for thousands of classes).
    n_colours : int, optional
        The deprecated name of ``n_colors`` (DeprecationWarning; removed in the next release).

    Returns
    -------
    Aggregate
    """
    n_colors = renamed("n_colours", "n_colors", n_colours, n_colors)
    width, height = check_pixels(width, "width"), check_pixels(height, "height")
    view = as_view(view)  # a fixed view given as numbers, as render() takes it
    embedding = check_embedding(embedding)
    n = int(embedding.shape[0])
    if labels is not None:
        labels, n_labels = check_labels(labels, n, n_labels)
        if n_colors is not None and n_labels > n_colors:
            labels, n_labels = labels % n_colors, n_colors
    check_grid_size(width, height, n_labels if labels is not None else 1, labels)
    if outliers is not None:
        outliers = check_outliers(outliers, n)

    if is_cupy(embedding):
        import cupy as cp  # noqa: PLC0415 - CuPy only for a CuPy embedding

        from umapviz.render.aggregate_gpu import gpu_aggregate  # noqa: PLC0415 - imports CuPy

        counts, outlier_counts, edge_counts = gpu_aggregate(
            embedding,
            view.bounds,
            width,
            height,
            cp.asarray(labels) if labels is not None else None,
            n_labels or 0,
            cp.asarray(outliers) if outliers is not None else None,
            N_EDGE_BINS,
            keep_on_device=keep_on_device,
        )
    else:
        labels = None if labels is None else to_host(labels)
        outliers = None if outliers is None else to_host(outliers)
        counts, outlier_counts = count_grids(embedding, view, width, height, labels, n_labels, outliers)
        edge_counts = np.zeros((4, N_EDGE_BINS), dtype=np.uint32)
    agg = Aggregate(counts, outlier_counts, edge_counts, view, n_labels if labels is not None else None)
    if not is_cupy(embedding) and agg.n_in_view < n:
        # Only when some points fell outside (or are NaN) is the extra pass over the points needed.
        agg.edge_counts[...] = edge_bins(embedding, view)
    return agg
