"""The comparison grid: many layouts side by side. ``GridController`` (widget-free) in :mod:`.grid`, the
ipywidgets view and ``compare()`` in :mod:`.panel`."""

from .grid import GridController
from .panel import Comparison, compare

__all__ = ["Comparison", "GridController", "compare"]
