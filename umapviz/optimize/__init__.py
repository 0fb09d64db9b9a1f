"""The layout optimizer: schedule, counter-based RNG, strategies (CPU and GPU kernels), LayoutOptimizer.

The exact semantics every backend implements are in docs/optimizer.md.
"""

from .chunks import RULES as N_CHUNKS_RULES
from .chunks import chunks_for, resolve_n_chunks
from .optimizer import REPRODUCIBLE, STRATEGIES, EpochRecord, LayoutOptimizer

__all__ = [
    "LayoutOptimizer",
    "EpochRecord",
    "STRATEGIES",
    "REPRODUCIBLE",
    "N_CHUNKS_RULES",
    "resolve_n_chunks",
    "chunks_for",
]
