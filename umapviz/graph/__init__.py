"""The graph stage: data -> kNN -> fuzzy simplicial set -> pruned, symmetric edge list (a FuzzyGraph).

Fronts and twins: :mod:`.build` (``build_graph``; its GPU path in :mod:`.build_gpu`), :mod:`.cache`, :mod:`.params`
and :mod:`.edges` here; one sub-package per stage, each front in its ``__init__`` with CPU/GPU twins beside it:
:mod:`.knn` (the searches: ``knn_cpu`` / ``knn_gpu``, ``partitioned``, ``refine``, ``recall``), :mod:`.fuzzy`
(``fuzzy_cpu`` / ``fuzzy_gpu``) and :mod:`.start` (initial layouts: ``spectral`` with ``spectral_cpu`` /
``spectral_gpu``, ``spectral_sampled`` over ``landmarks``, ``components``, ``adjacency``).
"""

from ._types import FuzzyGraph
from .build import build_graph
from .edges import graph_from_fuzzy_set
from .fuzzy import find_ab_params
from .fuzzy.fuzzy_cpu import fuzzy_simplicial_set
from .imported import graph_from_sparse, graph_from_umap
from .knn import BuildCancelled
from .params import GraphParams, default_n_epochs
from .start import random_init, spectral_init

# FuzzyGraph's constructors from other tools' graphs, attached where both modules are loaded (_types.py says why).
FuzzyGraph.from_sparse = staticmethod(graph_from_sparse)
FuzzyGraph.from_umap = staticmethod(graph_from_umap)

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
