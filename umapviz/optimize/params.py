"""One description of a layout run, built once by LayoutOptimizer and read by either engine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EngineParams:
    """What an engine needs to run a layout's epochs, beyond the graph and the edge order.

    Parameters
    ----------
    strategy : str
        One of ``STRATEGIES`` (docs/optimizer.md).
    n_chunks : int
        Chunks per epoch, resolved to an int in [1, nnz] (1 for ``"buffered"``).
    seed : int
        The run's seed, 0 <= seed < 2**32: it drives the negative samples' hash.
    a, b : float
        The low-dimensional curve ``1 / (1 + a d^(2b))`` (the graph's).
    gamma : float
        The repulsion strength.
    negative_sample_rate : int
        Negative samples per active edge and epoch.
    private_head : bool
        True: an edge's negative samples move the head as its attraction left it. False: they are computed
        from the head's position before its attraction (how the GPU implementation behaved before its fix;
        kept to show that difference).
    """

    strategy: str
    n_chunks: int
    seed: int
    a: float
    b: float
    gamma: float
    negative_sample_rate: int
    private_head: bool = True

    @property
    def curve(self) -> tuple[np.float32, np.float32, np.float32, np.float32]:
        """``(a, b, c_att, c_rep)`` as float32, each a float64 product rounded once: the scalars both engines'
        kernels take (``c_att = -2ab``, the attraction's factor; ``c_rep = 2 gamma b``, the repulsion's)."""
        a, b = self.a, self.b
        return np.float32(a), np.float32(b), np.float32(-2.0 * a * b), np.float32(2.0 * self.gamma * b)
