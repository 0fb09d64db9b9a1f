"""umapviz: see how UMAP's layout optimizer behaves.

The core (graph, optimize, metrics, datasets, estimator) imports only NumPy, SciPy and Numba (CuPy for GPUs,
on first use). What else it uses loads when needed: tqdm for progress bars, pynndescent for approximate kNN,
scikit-learn for some datasets. The widgets and renderers are imported on first use.
"""

from __future__ import annotations

from . import datasets, metrics
from .estimator import UMAP
from .graph import FuzzyGraph, build_graph
from .optimize import STRATEGIES, EpochRecord, LayoutOptimizer

__version__ = "0.1.0"

__all__ = [
    "UMAP",
    "FuzzyGraph",
    "build_graph",
    "LayoutOptimizer",
    "EpochRecord",
    "STRATEGIES",
    "datasets",
    "metrics",
    "Explorer",
    "compare",
    "__version__",
]


def __getattr__(name: str):
    # The widgets pull in ipywidgets/holoviews/datashader: import them only when asked for.
    if name in ("Explorer", "compare"):
        from . import widgets  # noqa: PLC0415

        return getattr(widgets, name)
    raise AttributeError(f"module 'umapviz' has no attribute {name!r}")
