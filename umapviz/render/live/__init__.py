"""The live, interactive plot (HoloViews and Bokeh): :mod:`.view` (``LiveView``, wiring the plot's streams) keeps
its range in :mod:`.view_range`, its marks in :mod:`.marks` and the frame it drew in :mod:`.frames`;
:mod:`.picking` answers hover, click and selection; :mod:`.linked` links several views' ranges and selections.
Importing this package imports HoloViews: ``umapviz.render`` loads it only when ``LiveView`` is asked for."""

from .linked import LinkedViews
from .view import LiveView

__all__ = ["LinkedViews", "LiveView"]
