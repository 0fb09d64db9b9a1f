"""Notebook panels: the Explorer (one layout, live) and the comparison grid (many layouts, side by side).

Both run the optimizer on a background thread, so the kernel stays free to pause, step or change a
parameter while a layout runs; both have a programmatic face (``play(block=True)``, ``state``, ``frame()``,
``run()``, ``table()``) so notebooks also run headless. Each is a thin view over a widget-free controller
(``ExplorerController``, ``GridController``) that holds the parameters as observable traits, the runs, the
worker thread and the errors; ``panel.controller`` is it, and tests and scripts can drive it directly.
"""

from .compare import Comparison, GridController, compare
from .explorer import Explorer, ExplorerController, ExplorerState
from .status import ExplorerError

__all__ = [
    "Explorer",
    "ExplorerController",
    "ExplorerError",
    "ExplorerState",
    "Comparison",
    "GridController",
    "compare",
]
