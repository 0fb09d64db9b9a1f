"""The Explorer's parameters as typed, observable traits: what its controls show and its controller runs.

Two kinds of check, by who can make them:
- the panel's own settings (epochs_per_frame, size, colour_by_class, lock_view) are checked here and a bad value
  is refused at once (ParameterError, a ValueError): nothing else can say more about them;
- layout and graph parameters (strategy, n_chunks, n_neighbors, ...) are checked by the optimizer and the graph
  builder when the controller (re)starts, against the graph (n_chunks=10**9 is too many only for a given graph):
  the trait holds what was asked for, and the panel shows their error until a change mends it. Here they are only
  normalised (NumPy integers as ints, a RandomState drawn once into its seed).

Whether a change restarts the layout or rebuilds the graph is the controller's business: it observes these.
"""

from __future__ import annotations

import numbers
from typing import Any

from traitlets import Any as AnyTrait
from traitlets import Dict, HasTraits, List, Unicode, validate

from ... import datasets
from ..session import check_count, draw_seed
from ..status import ParameterError

# Which traits redo what when they change.
REBUILD_TRAITS = ("data", "labels", "n_samples", "n_neighbors", "graph_options")
RESTART_TRAITS = (
    "strategy",
    "n_chunks",
    "random_state",
    "init",
    "n_epochs",
    "device",
    "outlier_method",
    "optimizer_options",
)
REDRAW_TRAITS = ("colour_by_class", "lock_view", "size")
N_CHUNKS_MODES = ("auto", "shipped", "degree")  # the named rules; "fixed" in the menu means an int


class ExplorerParams(HasTraits):
    """The parameters of one Explorer.

    Parameters
    ----------
    **kwargs
        Initial values of the traits below (``strategy="buffered"``, ...).
    """

    # -- data and graph ---------------------------------------------------------------------------------
    data = AnyTrait(datasets.DEFAULT, help="a dataset name, a data file path, an (n, d) array or a FuzzyGraph")
    labels = AnyTrait(None, allow_none=True, help="class codes for an array (a dataset brings its own)")
    n_samples = AnyTrait(None, allow_none=True, help="points of a dataset (None: its default)")
    n_neighbors = AnyTrait(15, help="graph neighbours per point")
    graph_options = Dict(help="other build_graph parameters: metric, min_dist, spread, knn")
    # -- layout ----------------------------------------------------------------------------------------
    strategy = Unicode("chunked", help="one of umapviz.optimize.STRATEGIES")
    n_chunks = AnyTrait("auto", help="an int, or a rule: 'auto', 'shipped', 'degree'")
    random_state = AnyTrait(0, allow_none=True, help="the seed (None: a fresh one at each restart)")
    init = AnyTrait("spectral", help="'spectral', 'random' or an (n, 2) array")
    n_epochs = AnyTrait(None, allow_none=True, help="epochs of a run (None: the optimizer's default for the graph)")
    device = AnyTrait(None, allow_none=True, help="'cpu', 'gpu' or None (the optimizer's default)")
    optimizer_options = Dict(help="other LayoutOptimizer parameters: learning_rate, ...")
    outlier_method = Unicode("neighbors", help="'neighbors' or 'radius' (see umapviz.metrics.outliers)")
    # -- the panel's own settings ---------------------------------------------------------------------
    epochs_per_frame = AnyTrait(1, help="epochs run between two frames, a positive int")
    size = AnyTrait(480, help="the view's width and height in pixels, a positive int")
    colour_by_class = AnyTrait(True, help="colour points by label (False: by density only, faster on a CPU)")
    lock_view = AnyTrait(False, help="keep the view range of the frame shown when locked")
    # -- the dataset menu ------------------------------------------------------------------------------
    dataset = Unicode(help="the dataset menu's entry for ``data``")
    dataset_options = List(Unicode(), help="the dataset menu's entries")

    @validate("epochs_per_frame", "size")
    def _positive_count(self, proposal: Any) -> int:
        return _count(proposal["trait"].name, proposal["value"])

    @validate("colour_by_class", "lock_view")
    def _flag(self, proposal: Any) -> bool:
        value = proposal["value"]
        if not isinstance(value, (bool, numbers.Integral)):
            raise ParameterError(f"{proposal['trait'].name}={value!r} must be True or False.")
        return bool(value)

    @validate("n_chunks", "n_neighbors", "n_epochs", "n_samples")
    def _plain_int(self, proposal: Any) -> Any:
        value = proposal["value"]  # a NumPy integer as an int; anything else is the builder's to judge
        return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value

    @validate("random_state")
    def _seed(self, proposal: Any) -> Any:
        return _plain(draw_seed(proposal["value"]))  # drawn once, so a restart repeats the run

    def layout_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``make_optimizer``: the layout traits set, and the other options."""
        params = {
            "strategy": self.strategy,
            "n_chunks": self.n_chunks,
            "random_state": self.random_state,
            "init": self.init,
            **self.optimizer_options,
        }
        for name in ("n_epochs", "device"):
            if getattr(self, name) is not None:
                params[name] = getattr(self, name)
        return params

    def graph_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``build_graph`` other than the data and the pruning threshold."""
        return {"n_neighbors": self.n_neighbors, **self.graph_options}


def _count(name: str, value: Any) -> int:
    try:
        return check_count(name, value)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value
