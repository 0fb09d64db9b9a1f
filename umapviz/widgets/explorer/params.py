"""The Explorer's parameters as typed, observable traits: what its controls show and its controller runs.

Two kinds of check, by who can make them:
- what a value's type and range alone decide (a strategy's name, n_chunks >= 1 or a rule, a positive count, a
  flag) is the trait's: a bad value is refused at once with a ParameterError (a ValueError) naming the trait and
  what it takes, and the trait keeps its value. NumPy integers count as ints;
- what only the data can decide (n_chunks=10**9 is too many for a given graph, n_neighbors against the number of
  points, an init array's shape) is checked by the optimizer and the graph builder when the controller
  (re)starts: the trait holds what was asked for, and the panel shows their error until a change mends it.

Whether a change restarts the layout or rebuilds the graph is the controller's business: it observes these.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

from traitlets import Any as AnyTrait
from traitlets import Bool, Dict, Enum, HasTraits, Int, List, TraitError, Unicode, Union, validate

from ... import datasets
from ..._backend import DEVICES
from ...optimize import STRATEGIES
from ...optimize.chunks import RULES
from ..session import OUTLIER_METHODS, draw_seed, split_params
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
N_CHUNKS_MODES = RULES  # the named rules; "fixed" in the menu means an int
# Settings that are traits of their own (the rest of build_graph's and LayoutOptimizer's parameters go to
# graph_options and optimizer_options).
OWN_SETTINGS = (
    "data",
    "labels",
    "n_samples",
    "epochs_per_frame",
    "size",
    "colour_by_class",
    "lock_view",
    "outlier_method",
)
LAYOUT_SETTINGS = ("strategy", "n_chunks", "random_state", "init", "n_epochs", "device")


class Refusing:
    """A trait type that refuses a bad value with a ParameterError naming the trait and what it takes (a mixin
    before a traitlets type). NumPy integers are taken as ints, as everywhere else in the kit."""

    takes = "a valid value"

    def validate(self, obj: Any, value: Any) -> Any:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = int(value)
        try:
            return super().validate(obj, value)
        except TraitError:
            raise ParameterError(f"{self.name}={value!r} must be {self.takes}.") from None


class Count(Refusing, Int):
    """A positive int (or None where ``allow_none``)."""

    def __init__(self, default_value: Any = 1, **kwargs: Any) -> None:
        super().__init__(default_value, min=1, **kwargs)
        self.takes = "a positive integer (1 or more)" + (" or None" if self.allow_none else "")


class Choice(Refusing, Enum):
    """One of a fixed set of names (or None where ``allow_none``)."""

    def __init__(self, values: Any, default_value: Any, **kwargs: Any) -> None:
        super().__init__(values, default_value, **kwargs)
        self.takes = "one of " + ", ".join(map(repr, values)) + (" or None" if self.allow_none else "")


class Flag(Refusing, Bool):
    """True or False (0 and 1 taken as such)."""

    takes = "True or False"


class NChunks(Refusing, Union):
    """n_chunks: an int >= 1, or one of the rules of ``umapviz.optimize.chunks``."""

    takes = "an int >= 1 or one of " + ", ".join(map(repr, RULES))

    def __init__(self, default_value: Any = "auto", **kwargs: Any) -> None:
        super().__init__([Int(min=1), Enum(RULES)], default_value=default_value, **kwargs)


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
    n_samples = Count(None, allow_none=True, help="points of a dataset (None: its default)")
    n_neighbors = Count(15, help="graph neighbours per point (the builder checks it against the points)")
    graph_options = Dict(help="other build_graph parameters: metric, min_dist, spread, knn")
    # -- layout ----------------------------------------------------------------------------------------
    strategy = Choice(STRATEGIES, "chunked", help="one of umapviz.optimize.STRATEGIES")
    n_chunks = NChunks("auto", help="an int >= 1, or a rule of umapviz.optimize.chunks.RULES")
    random_state = AnyTrait(0, allow_none=True, help="the seed (None: a fresh one at each restart)")
    init = AnyTrait("spectral", help="'spectral', 'random' or an (n, 2) array")
    n_epochs = Count(None, allow_none=True, help="epochs of a run (None: the optimizer's default for the graph)")
    device = Choice(DEVICES, None, allow_none=True, help="'auto', 'cpu', 'gpu' or None (the optimizer's default)")
    optimizer_options = Dict(help="other LayoutOptimizer parameters: learning_rate, ...")
    outlier_method = Choice(OUTLIER_METHODS, "neighbors", help="see umapviz.metrics.outliers")
    # -- the panel's own settings ---------------------------------------------------------------------
    epochs_per_frame = Count(1, help="epochs run between two frames")
    size = Count(480, help="the view's width and height in pixels (the plot on screen sets it)")
    colour_by_class = Flag(True, help="colour points by label (False: by density only, faster on a CPU)")
    lock_view = Flag(False, help="keep the view range of the frame shown when locked")
    # -- the dataset menu ------------------------------------------------------------------------------
    dataset = Unicode(help="the dataset menu's entry for ``data``")
    dataset_options = List(Unicode(), help="the dataset menu's entries")

    @validate("data")
    def _data(self, proposal: Any) -> Any:
        """A name or path is checked at once (a missing file fails here, with the command line's message);
        an array or a graph when loaded, where its shape and values are judged."""
        value = proposal["value"]
        if isinstance(value, (str, os.PathLike)):
            try:
                datasets.check_name_or_path(value)
            except (TypeError, ValueError, OSError) as exc:
                raise ParameterError(str(exc)) from None
        return value

    @validate("random_state")
    def _seed(self, proposal: Any) -> Any:
        return _plain(draw_seed(proposal["value"]))  # drawn once, so a restart repeats the run

    def apply(self, **settings: Any) -> None:
        """Set settings at once, all or none: a misspelt name (TypeError) or a bad value (ParameterError, a
        ValueError) changes nothing, and each changed trait notifies once, after all are set.

        Parameters
        ----------
        **settings
            Traits of their own (OWN_SETTINGS, LAYOUT_SETTINGS, n_neighbors), and any other parameter of
            ``build_graph`` (into ``graph_options``) or ``LayoutOptimizer`` (into ``optimizer_options``). New
            data comes without labels unless they are given.
        """
        if "data" in settings and "labels" not in settings:
            settings["labels"] = None
        traits = {name: settings.pop(name) for name in OWN_SETTINGS if name in settings}
        graph_params, optimizer_params = split_params(settings)  # a misspelt name is a TypeError, as usual
        if "n_neighbors" in graph_params:
            traits["n_neighbors"] = graph_params.pop("n_neighbors")
        traits.update({name: optimizer_params.pop(name) for name in LAYOUT_SETTINGS if name in optimizer_params})
        if graph_params:
            traits["graph_options"] = {**self.graph_options, **graph_params}
        if optimizer_params:
            traits["optimizer_options"] = {**self.optimizer_options, **optimizer_params}
        with self.hold_trait_notifications():  # one notification each, once all are set and valid
            for name, value in traits.items():
                setattr(self, name, value)

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


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value
