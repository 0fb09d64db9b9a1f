"""Probe a point of a layout: which point is where, and why a point was flung.

A point flies when many of its edges' moves are computed from one stale copy of its row and then added up: each
move is sized for the row as it stood, so their sum overshoots. How many are summed at once is fixed by the graph
(its degree), the strategy and ``n_chunks`` (docs/optimizer.md). ``point_info`` gathers that number beside the
point's degree, its rank among the busiest vertices, the outlier measures and how far it sits from its graph
neighbours; ``flung`` lists the flagged points busiest first; ``nearest_point``, ``points_in_box`` and
``points_in_polygon`` find points under a cursor, a box or a lasso.

Core module: NumPy and Numba (CuPy embeddings are handled through their own array module, imported lazily).
"""

from __future__ import annotations

from .diagnosis import (
    PointInfo,
    degree_rank,
    flung,
    point_info,
    typical_neighbor_distance,
    update_steps,
)
from .picking import nearest_point, points_in_box, points_in_polygon

__all__ = [
    "PointInfo",
    "point_info",
    "flung",
    "typical_neighbor_distance",
    "update_steps",
    "degree_rank",
    "nearest_point",
    "points_in_box",
    "points_in_polygon",
]
