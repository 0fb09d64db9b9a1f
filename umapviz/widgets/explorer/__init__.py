"""The Explorer: one layout, live. ``ExplorerController`` (widget-free: parameters as traits, runs, frames, focus)
in :mod:`.controller` with its parts (:mod:`.params`, :mod:`.current`, :mod:`.setup_jobs`, :mod:`.play_jobs`,
:mod:`.frames`), and the ipywidgets view over it in :mod:`.panel` (+ :mod:`.view`, :mod:`.inspector`)."""

from .controller import ExplorerController, ExplorerState
from .panel import Explorer

__all__ = ["Explorer", "ExplorerController", "ExplorerState"]
