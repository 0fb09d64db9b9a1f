"""Shared fixtures; GPU-marked tests (and the gpu case of the ``device`` fixture) skip cleanly, saying why, where CuPy
or a GPU is missing."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from umapviz import datasets
from umapviz._backend import _cupy_or_reason
from umapviz.graph import build_graph

# bench/'s scripts import one another as siblings; the tests of bench/clusterwise.py import it the same way.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def pytest_collection_modifyitems(config, items):
    cp, why = _cupy_or_reason()
    if cp is not None:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Keep tests away from the user's graph cache."""
    monkeypatch.setenv("UMAPVIZ_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def ctrl_c_raises():
    """Python's own SIGINT handler for the test's duration, the previous one restored after.

    A Ctrl-C test sends SIGINT (``_thread.interrupt_main``) and expects KeyboardInterrupt. A runner started with
    SIGINT ignored (``nohup``, a background job of a non-interactive shell, some CI runners) passes that on to
    pytest, and then the signal does nothing: the test would fail for how it was launched, not for the code."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def blobs_small():
    """600 points in 10-D, 4 clusters: fast to build and to lay out."""

    X, y = make_blobs(600, n_features=10, centers=4, random_state=0)
    return X.astype(np.float32), y


@pytest.fixture(scope="session")
def small_graph(blobs_small):
    return build_graph(blobs_small[0], n_neighbors=10, n_epochs=60, knn="exact", cache=False, progress=False)


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """Each device a feature test runs on: the CPU, and the GPU (marked ``gpu``: it skips, with the reason, where
    no GPU is usable)."""
    return request.param


@pytest.fixture(scope="session")
def mixture_graph():
    """3,000 points of the 256-d Zipf mixture and their graph: hubs with high degree, so buffered updates
    misbehave."""

    X, _ = datasets.load("mixture", n_samples=3000, random_state=0)
    return X, build_graph(X, n_neighbors=15, n_epochs=200, knn="exact", cache=False, progress=False)
