"""The graph stage: data -> kNN -> fuzzy simplicial set -> pruned, symmetric edge list (a FuzzyGraph).

Fronts and twins: :mod:`.build` (``build_graph``; its GPU path in :mod:`.build_gpu`), :mod:`.knn` (shared checks)
with :mod:`.knn_cpu` / :mod:`.knn_gpu`, :mod:`.fuzzy` (shared pieces) with :mod:`.fuzzy_cpu` / :mod:`.fuzzy_gpu`,
:mod:`.init` (initial layouts) and :mod:`.spectral` (its eigen-solve) with :mod:`.spectral_cpu` /
:mod:`.spectral_gpu`.
"""

from ._types import FuzzyGraph
from .build import build_graph
from .edges import graph_from_fuzzy_set
from .fuzzy import find_ab_params
from .fuzzy_cpu import fuzzy_simplicial_set
from .init import random_init, spectral_init
from .knn import BuildCancelled
from .params import GraphParams, default_n_epochs

__all__ = [
    "BuildCancelled",
    "FuzzyGraph",
    "GraphParams",
    "build_graph",
    "default_n_epochs",
    "find_ab_params",
    "fuzzy_simplicial_set",
    "graph_from_fuzzy_set",
    "random_init",
    "spectral_init",
]
