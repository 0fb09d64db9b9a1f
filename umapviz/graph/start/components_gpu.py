"""Each vertex's lowest vertex of its connected component on an NVIDIA GPU (CuPy + components_gpu.cu): twin of
:func:`umapviz.graph.start.components_cpu.lowest_vertex`, the same answer. CuPy loads on first use."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ..._backend import cupy

KERNELS = Path(__file__).with_name("components_gpu.cu")
_THREADS = 256


@functools.lru_cache(maxsize=1)
def _module():
    return cupy().RawModule(code=KERNELS.read_text(), options=("--std=c++17",))


def lowest_vertex_gpu(head, tail, n: int):
    """Each vertex's lowest vertex of its component, by hooking and pointer jumping until nothing changes.

    Parameters
    ----------
    head, tail : cupy.ndarray
        int32 endpoints of the edges, each undirected edge in both directions.
    n : int
        Vertices.

    Returns
    -------
    cupy.ndarray
        int32 lowest vertex of each vertex's component.
    """
    cp = cupy()
    module = _module()
    hook, jump = module.get_function("hook"), module.get_function("jump")
    parent = cp.arange(n, dtype=cp.int32)
    changed = cp.zeros(1, dtype=cp.int32)
    n_edges = int(head.size)
    edge_blocks, vertex_blocks = (max(1, -(-n_edges // _THREADS)),), (max(1, -(-n // _THREADS)),)
    while True:
        while True:  # complete the jumping: every parent a root
            changed.fill(0)
            jump(vertex_blocks, (_THREADS,), (parent, np.int32(n), changed))
            if not int(changed.get()[0]):
                break
        changed.fill(0)
        if n_edges:
            hook(edge_blocks, (_THREADS,), (head, tail, parent, np.int64(n_edges), changed))
        if not int(changed.get()[0]):
            return parent
