"""The core runs with NumPy, SciPy and Numba alone (as on a GPU machine that has only those and CuPy)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Everything the core may use only on demand (progress bars, approximate kNN, some datasets, GPUs) or never
# (plotting and widgets).
OPTIONAL = (
    "tqdm",
    "pynndescent",
    "sklearn",
    "pandas",
    "cupy",
    "matplotlib",
    "ipywidgets",
    "holoviews",
    "datashader",
    "bokeh",
    "panel",
)

SCRIPT = textwrap.dedent(
    """
    import sys

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {optional!r}:
                raise ImportError("not installed here: " + name)
            return None

    sys.meta_path.insert(0, Refuse())
    import numpy as np
    import umapviz
    from umapviz import metrics, probe

    X = np.random.default_rng(0).normal(size=(300, 8)).astype(np.float32)
    graph = umapviz.build_graph(X, n_neighbors=10, cache=False)
    opt = umapviz.LayoutOptimizer(graph, strategy="chunked", n_chunks="auto", random_state=0)  # spectral init
    opt.run()
    est = umapviz.UMAP(n_neighbors=10, n_epochs=20, random_state=0)
    emb = est.fit_transform(X)
    assert est.transform(X[:20]).shape == (20, 2)
    info = probe.point_info(graph, opt.embedding, 0, strategy="chunked", n_chunks=3, random_state=0)
    assert info.edges_per_chunk.sum() == info.degree and probe.nearest_point(opt.embedding, 0.0, 0.0) >= 0
    print(metrics.fingerprint(opt.embedding), metrics.trustworthiness(X, emb, n_neighbors=5))
    """
)


def test_core_pipeline_needs_only_numpy_scipy_numba():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(optional=OPTIONAL)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    fingerprint, trust = run.stdout.split()
    assert len(fingerprint) == 16 and float(trust) > 0.5
