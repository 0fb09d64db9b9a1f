"""Sphinx configuration: the API from the numpydoc docstrings (napoleon), docs/*.md (MyST) and the notebooks as
stored, outputs included (myst-nb, never executed: the build stays offline and fast). `make docs` builds it with
warnings as errors."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's umapviz, installed or not

project = "umapviz"
author = "the umapviz authors"
copyright = "the umapviz authors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_nb",
]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "notebooks/.ipynb_checkpoints", "notebooks/sanitize.cfg"]

# The notebooks are shown as committed (they are executed by `make test` through nbval, and their outputs kept).
nb_execution_mode = "off"
# Widget and HoloViews outputs carry JavaScript bundles the static page cannot run: their text/plain or
# text/html form is shown instead, and the unknown types are skipped without a warning. ref.python: a word of a
# type ("shape (n_vertices,)") that names attributes of two classes is left unlinked rather than warned about.
suppress_warnings = ["mystnb.unknown_mime_type", "ref.python"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc "Parameters" sections say the types
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # a dataclass's Attributes section beside its autodoc'd fields: no duplicates

html_theme = "alabaster"
html_title = "umapviz"
