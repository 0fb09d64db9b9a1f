"""pytest plugin: umap-learn's estimator tests run against umapviz.UMAP.

Loaded with ``-p umap_peer_plugin`` (bench/umap_peer_tests.py puts this folder on the path) before the tests are
collected, it puts ``umapviz.UMAP`` where umap-learn's tests import the class from (``umap.UMAP`` and
``umap.umap_.UMAP``). umap-learn's functions (its metrics, its fuzzy set) stay umap-learn's.
"""

import umap
import umap.umap_

import umapviz

umap.UMAP = umapviz.UMAP
umap.umap_.UMAP = umapviz.UMAP
