"""Notebook panels: the Explorer (one layout, live) and the comparison grid (many layouts, side by side).

Both run the optimizer on a background thread, so the kernel stays free to pause, step or change a
parameter while a layout runs; both have a programmatic face (``play(block=True)``, ``state``, ``frame()``,
``run()``, ``table()``) so notebooks also run headless.
"""

from .compare import Comparison, compare
from .explorer import Explorer, ExplorerError, ExplorerState

__all__ = ["Explorer", "ExplorerError", "ExplorerState", "Comparison", "compare"]
