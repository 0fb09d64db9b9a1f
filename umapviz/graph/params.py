"""One graph build's parameters, checked once and read by every path that builds a graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fuzzy import find_ab_params

# UMAP's default number of epochs: more for small data, where each epoch is cheap.
_SMALL_DATA = 10_000


def default_n_epochs(n_vertices: int) -> int:
    """UMAP's default epoch count: 500 up to 10,000 points, 200 above.

    Parameters
    ----------
    n_vertices : int
        Number of points in the graph.
    """
    return 500 if n_vertices <= _SMALL_DATA else 200


@dataclass(frozen=True)
class GraphParams:
    """The parameters of one graph build: what :class:`FuzzyGraph` records in ``params``, plus the epoch count
    that sets the pruning threshold and the curve ``(a, b)`` fitted to ``min_dist`` and ``spread``.

    Parameters
    ----------
    n_neighbors : int
        Neighbours per point, counting the point itself.
    metric : str
        ``"euclidean"`` or ``"cosine"``.
    knn : str
        The kNN method used (``"exact"``, ``"approx"``, ``"exact-gpu"``, or a caller's own name).
    min_dist, spread : float
        Shape of the low-dimensional curve.
    random_state : int or None
        The seed the kNN drew from (None for a search that does not depend on one).
    n_epochs : int
        The optimizer's epoch count; edges weaker than ``max(w) / n_epochs`` are pruned.
    a, b : float
        The curve ``1 / (1 + a d^(2b))`` that ``min_dist`` and ``spread`` give (see :func:`find_ab_params`).
    """

    n_neighbors: int
    metric: str
    knn: str
    min_dist: float
    spread: float
    random_state: int | None
    n_epochs: int
    a: float
    b: float

    @classmethod
    def for_data(
        cls,
        n_samples: int,
        *,
        n_neighbors: int,
        metric: str,
        knn: str,
        min_dist: float = 0.1,
        spread: float = 1.0,
        random_state: int | None = None,
        n_epochs: int | None = None,
        curve: tuple[float, float] | None = None,
    ) -> GraphParams:
        """The parameters of a build of ``n_samples`` points: ``n_epochs`` None takes :func:`default_n_epochs`,
        ``curve`` None fits ``(a, b)`` to ``min_dist`` and ``spread`` (which checks them).

        Parameters
        ----------
        n_samples : int
            Number of points.
        n_neighbors, metric, knn, min_dist, spread, random_state, n_epochs
            As the class's fields; ``n_epochs`` may be None.
        curve : tuple of float, optional
            ``(a, b)`` already fitted to ``min_dist`` and ``spread``.
        """
        a, b = find_ab_params(spread, min_dist) if curve is None else curve
        return cls(
            n_neighbors=int(n_neighbors),
            metric=metric,
            knn=knn,
            min_dist=float(min_dist),
            spread=float(spread),
            random_state=random_state,
            n_epochs=default_n_epochs(n_samples) if n_epochs is None else int(n_epochs),
            a=float(a),
            b=float(b),
        )

    def record(self) -> dict[str, Any]:
        """What ``FuzzyGraph.params`` holds: the parameters a user chose (no epoch count, no curve)."""
        return {
            "n_neighbors": self.n_neighbors,
            "metric": self.metric,
            "knn": self.knn,
            "min_dist": self.min_dist,
            "spread": self.spread,
            "random_state": self.random_state,
        }
