"""UMAP as a scikit-learn style estimator over build_graph + LayoutOptimizer."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import numbers
import warnings

import numpy as np
import scipy.sparse

from ._umap_learn_params import (
    check_curve,
    check_n_components,
    check_n_jobs,
    check_not_implemented,
    check_output_metric,
    check_transform_mode,
    unique_rows,
)
from ._validation import RandomStateLike, check_data, check_n_epochs, check_n_neighbors, check_random_state
from .graph import build_graph
from .graph.fuzzy import find_ab_params
from .graph.fuzzy.fuzzy_cpu import new_point_memberships
from .graph.fuzzy.supervised import check_target, check_target_n_neighbors
from .graph.knn import GEMM_METRICS, check_metric, check_metric_kwds, metric_cpu
from .graph.knn.auto_search import DEFAULT_TARGET
from .graph.knn.knn_cpu import query_knn, reference_index
from .graph.knn.partitioned import DEFAULT_OVERLAP, DEFAULT_REFINE
from .graph.matrix import GraphMatrix, graph_matrix
from .optimize import LayoutOptimizer
from .optimize.optimizer import check_layout_params
from .optimize.transform import embed_new_points, transform_n_epochs


class UMAP:
    """Uniform Manifold Approximation and Projection with a choice of layout update strategy.

    ``__init__`` only stores parameters; ``fit`` sets ``fuzzy_graph_`` (the FuzzyGraph the layout ran on),
    ``graph_`` (the same graph as the SciPy CSR matrix umap-learn's ``graph_`` is), ``optimizer_`` (the
    LayoutOptimizer after its run) and ``embedding_`` (a NumPy array; as in umap-learn, NaN for a point the graph
    left without an edge); ``transform`` embeds new points into it.

    With a fixed ``random_state`` every strategy gives the same bytes run after run except ``"hogwild"``, whose
    threads race on the embedding (on the GPU, and on the CPU with more than one thread). ``random_state`` may
    also be a NumPy ``RandomState`` or ``Generator`` (scikit-learn's convention): each ``fit`` draws one seed from
    it, used by the graph and the layout alike, so a fresh ``RandomState(0)`` repeats its bytes and a shared
    generator gives a new layout per fit. The seed a fit used is ``optimizer_.seed``.

    Parameters
    ----------
    n_neighbors, metric, min_dist, spread, knn, knn_partitions, knn_overlap, knn_refine, knn_target_recall
        The graph's, as :func:`umapviz.build_graph` takes them (the last four tune the partitioned kNN, which
        ``knn="auto"`` picks on the GPU for large data and escalates until its measured recall reaches
        ``knn_target_recall``).
    n_components : int
        Dimensions of the embedding.
    n_epochs : int, optional
        Epochs of the layout; None: 500 up to 10,000 points, else 200.
    strategy, n_chunks, init, learning_rate, negative_sample_rate, repulsion_strength
        The layout's, as :class:`umapviz.LayoutOptimizer` takes them.
    random_state : int, None, numpy.random.RandomState or numpy.random.Generator
        Seeds the graph (approximate kNN) and the layout; see above.
    device : str
        ``"auto"`` (default: the GPU where one is usable), ``"cpu"`` or ``"gpu"``.
    cache : bool or str
        The graph cache: False (default), True (the default directory) or a directory.
    verbose : bool
        Progress bars for the long stages.

    umap-learn's parameters, with its names and meanings (docs/umap_learn.md lists them all):

    metric_kwds, local_connectivity, set_op_mix_ratio, disconnection_distance
        The graph's, as :func:`umapviz.build_graph` takes them (a metric other than euclidean or cosine, or one of
        these not at its default, builds the graph on the CPU).
    a, b : float, optional
        The curve ``1 / (1 + a d^(2b))``, both or neither; None: fitted to ``min_dist`` and ``spread``.
    n_jobs : int
        Numba threads of the fit and transform (-1: all); NN-descent runs on one thread when seeded.
    unique : bool
        Fit the distinct rows of X only; duplicates get their row's position (``embedding_`` has X's rows,
        ``graph_`` the distinct ones).
    target_metric, target_weight, target_n_neighbors
        How ``fit(X, y)`` uses y: ``"categorical"`` labels (-1 unlabelled) or a metric on y's values; 0 the data
        alone, 1 the target alone; the target graph's neighbours (-1: ``n_neighbors``).
    precomputed_knn : tuple
        ``(knn_indices, knn_dists)`` (umap-learn's third element, its search index, is not used): the graph's kNN,
        so no search runs on X. ``transform`` still searches X exactly.
    force_approximation_algorithm : bool
        True: ``knn="approx"`` (NN-descent) whatever the data size.
    densmap, output_dens, output_metric, transform_mode
        Only their defaults: the rest is refused, naming what to use instead.
    """

    def __init__(
        self,
        n_neighbors: int = 15,
        n_components: int = 2,
        metric: str = "euclidean",
        min_dist: float = 0.1,
        spread: float = 1.0,
        n_epochs: int | None = None,
        strategy: str = "chunked",
        n_chunks: int | str = "auto",
        random_state: RandomStateLike = None,
        init: str | np.ndarray = "spectral",
        device: str = "auto",
        learning_rate: float = 1.0,
        negative_sample_rate: int = 5,
        repulsion_strength: float = 1.0,
        knn: str = "auto",
        knn_partitions: int | str = "auto",
        knn_overlap: int = DEFAULT_OVERLAP,
        cache: bool | str = False,
        verbose: bool = False,
        knn_refine: int | str = DEFAULT_REFINE,
        metric_kwds: dict | None = None,
        local_connectivity: float = 1.0,
        set_op_mix_ratio: float = 1.0,
        a: float | None = None,
        b: float | None = None,
        n_jobs: int | None = -1,
        unique: bool = False,
        disconnection_distance: float | None = None,
        target_n_neighbors: int = -1,
        target_metric: str = "categorical",
        target_weight: float = 0.5,
        precomputed_knn: tuple = (None, None, None),
        force_approximation_algorithm: bool = False,
        densmap: bool = False,
        output_dens: bool = False,
        output_metric: str = "euclidean",
        transform_mode: str = "embedding",
        knn_target_recall: float = DEFAULT_TARGET,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.metric = metric
        self.min_dist = min_dist
        self.spread = spread
        self.n_epochs = n_epochs
        self.strategy = strategy
        self.n_chunks = n_chunks
        self.random_state = random_state
        self.init = init
        self.device = device
        self.learning_rate = learning_rate
        self.negative_sample_rate = negative_sample_rate
        self.repulsion_strength = repulsion_strength
        self.knn = knn
        self.knn_partitions = knn_partitions
        self.knn_overlap = knn_overlap
        self.cache = cache
        self.verbose = verbose
        self.knn_refine = knn_refine
        self.metric_kwds = metric_kwds
        self.local_connectivity = local_connectivity
        self.set_op_mix_ratio = set_op_mix_ratio
        self.a = a
        self.b = b
        self.n_jobs = n_jobs
        self.unique = unique
        self.disconnection_distance = disconnection_distance
        self.target_n_neighbors = target_n_neighbors
        self.target_metric = target_metric
        self.target_weight = target_weight
        self.precomputed_knn = precomputed_knn
        self.force_approximation_algorithm = force_approximation_algorithm
        self.densmap = densmap
        self.output_dens = output_dens
        self.output_metric = output_metric
        self.transform_mode = transform_mode
        self.knn_target_recall = knn_target_recall

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters, as scikit-learn expects."""
        names = self.__init__.__code__.co_varnames[1 : self.__init__.__code__.co_argcount]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params) -> UMAP:
        for name, value in params.items():
            if name not in self.get_params():
                raise ValueError(f"UMAP has no parameter {name!r}; valid ones: {sorted(self.get_params())}.")
            setattr(self, name, value)
        return self

    def fit(self, X, y=None) -> UMAP:
        """Build the graph of X and run the layout optimizer to the end.

        With ``y`` (one target per row of X, -1 for an unlabelled row under ``target_metric="categorical"``) the
        graph is intersected with the target's, as umap-learn's supervised and semi-supervised fits do.

        Sets ``fuzzy_graph_``, ``graph_``, ``optimizer_``, ``embedding_``, ``n_features_in_`` and, for a DataFrame
        whose column names are all strings, ``feature_names_in_``. They are assigned only once everything
        succeeded, so a failed refit leaves the previous fit intact. The data is kept for ``transform``'s neighbour
        search (as a float32 copy, or X itself when it already is a C-contiguous float32 NumPy array: don't modify
        it then).
        """
        # The parameters are checked first: a typo should not wait for (or write to the cache) a kNN graph that can
        # take minutes to build.
        check_output_metric(self.output_metric, check_n_components(self.n_components), self.densmap)
        check_transform_mode(self.transform_mode)
        check_not_implemented(self.get_params())
        check_layout_params(
            strategy=self.strategy,
            n_chunks=self.n_chunks,
            init=self.init,
            learning_rate=self.learning_rate,
            negative_sample_rate=self.negative_sample_rate,
            repulsion_strength=self.repulsion_strength,
            n_components=check_n_components(self.n_components),
        )
        curve = check_curve(self.a, self.b)
        threads = check_n_jobs(self.n_jobs)
        metric = check_metric(self.metric)
        check_metric_kwds(metric, self.metric_kwds)
        check_target_n_neighbors(self.target_n_neighbors)
        seed = check_random_state(self.random_state)  # one draw from a RandomState / Generator, for both stages
        data = check_data(X)  # kept (not copied when already float32 and C-contiguous) for transform
        target = (
            None
            if y is None
            else check_target(y, len(data), self.target_metric, self.target_weight, self.target_n_neighbors)
        )
        precomputed = _precomputed_knn(self.precomputed_knn)
        if not isinstance(self.unique, (bool, np.bool_)):
            raise ValueError(f"unique={self.unique!r} must be True or False.")
        inverse = None
        if self.unique:
            if precomputed is not None or metric == "precomputed":
                raise ValueError("unique=True needs the data's rows: pass unique=False with precomputed kNN/metric.")
            index, inverse = unique_rows(data)
            data = np.ascontiguousarray(data[index])
            if target is not None:
                target = dataclasses.replace(target, y=target.y[index])
        n_neighbors = check_n_neighbors(self.n_neighbors)
        if n_neighbors > len(data) and len(data) >= 3:  # umap-learn's rule: fewer neighbours, said so
            warnings.warn(
                f"n_neighbors={n_neighbors} is larger than the data's {len(data)} rows; using {len(data) - 1}.",
                UserWarning,
                stacklevel=2,
            )
            n_neighbors = len(data) - 1
        n_components = check_n_components(self.n_components)
        if len(data) == 1:  # umap-learn's rule: one point sits at the origin, with no graph; transform refuses
            graph, optimizer, embedding = None, None, np.zeros((1, n_components), dtype=np.float32)
            a, b = curve if curve is not None else find_ab_params(self.spread, self.min_dist)
        else:
            with _numba_threads(threads):
                graph = build_graph(
                    data,
                    n_neighbors=n_neighbors,
                    metric=metric,
                    min_dist=self.min_dist,
                    spread=self.spread,
                    n_epochs=self.n_epochs,
                    knn="approx" if self.force_approximation_algorithm and metric != "precomputed" else self.knn,
                    knn_partitions=self.knn_partitions,
                    knn_overlap=self.knn_overlap,
                    knn_refine=self.knn_refine,
                    knn_target_recall=self.knn_target_recall,
                    random_state=seed,
                    cache=self.cache,
                    progress=self.verbose,
                    device=self.device,
                    metric_kwds=self.metric_kwds,
                    local_connectivity=self.local_connectivity,
                    set_op_mix_ratio=self.set_op_mix_ratio,
                    target=target,
                    precomputed_knn=precomputed,
                    disconnection_distance=self.disconnection_distance,
                )
                if curve is not None:
                    graph = dataclasses.replace(graph, a=curve[0], b=curve[1])
                optimizer = LayoutOptimizer(
                    graph,
                    strategy=self.strategy,
                    n_chunks=self.n_chunks,
                    random_state=seed,
                    init=self.init,
                    n_epochs=self.n_epochs,
                    learning_rate=self.learning_rate,
                    negative_sample_rate=self.negative_sample_rate,
                    repulsion_strength=self.repulsion_strength,
                    device=self.device if graph.params.get("metric") in GEMM_METRICS else "cpu",
                    n_components=self.n_components,
                ).run(progress=self.verbose)
            embedding = _nan_where_isolated(optimizer.embedding, graph)
            a, b = graph.a, graph.b
        feature_names = _feature_names(X)
        self._reference = None  # transform's prepared copy (GPU memory after a GPU fit): rebuilt when needed
        self.fuzzy_graph_ = graph
        self._graph_matrix = None  # graph_, made on first read (it costs 8 bytes an edge)
        self._a, self._b = a, b  # umap-learn's names (umap.plot reads them)
        self._n_neighbors = n_neighbors  # after umap-learn's lowering to the rows there are
        self.optimizer_ = optimizer
        self.embedding_ = embedding if inverse is None else embedding[inverse]
        self._unique_inverse_ = inverse  # umap.utils.disconnected_vertices reads it with unique=True
        self.n_features_in_ = int(data.shape[1])
        self._fit_data = data
        self._fit_n_epochs = check_n_epochs(self.n_epochs)
        if feature_names is not None:
            self.feature_names_in_ = feature_names
        elif hasattr(self, "feature_names_in_"):  # names from an earlier fit no longer describe the data
            del self.feature_names_in_
        return self

    @property
    def graph_(self) -> GraphMatrix:
        """The fitted graph as umap-learn's ``graph_`` is: the symmetric fuzzy membership matrix, a
        ``scipy.sparse.csr_matrix`` (n, n) of float32 (the memberships the layout samples: umap-learn's less those
        below ``max / n_epochs``, which it prunes before its layout too). ``fuzzy_graph_`` is the same graph as
        the kit's FuzzyGraph; reading FuzzyGraph attributes through ``graph_`` still works, with a FutureWarning.
        """
        if not self.__sklearn_is_fitted__():
            raise AttributeError("graph_ is set by fit: call fit(X) first.")
        if self.fuzzy_graph_ is None:
            raise AttributeError("This UMAP was fitted on a single row, which has no graph: fit at least 2 rows.")
        matrix = self.__dict__.get("_graph_matrix")
        if matrix is None:
            matrix = self._graph_matrix = graph_matrix(self.fuzzy_graph_)
        return matrix

    def inverse_transform(self, X):
        """Not offered: the kit explains layouts and does not map embedded points back to data space.

        Parameters
        ----------
        X : array-like
            Points of the embedding.
        """
        raise NotImplementedError(
            "umapviz.UMAP has no inverse_transform; use umap-learn's UMAP(...).fit(X).inverse_transform(points)."
        )

    def update(self, X):
        """Not offered: refit on all the data (``fit(np.vstack([X_old, X_new]))``), or use umap-learn's update.

        Parameters
        ----------
        X : array-like
            New rows.
        """
        raise NotImplementedError(
            "umapviz.UMAP has no update; refit on all the data, e.g. fit(np.vstack([X_old, X_new])), or use "
            "umap-learn's UMAP.update."
        )

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """The embedding's column names, ``umap0`` .. ``umap{n_components - 1}`` (umap-learn's), whatever
        ``input_features`` says (scikit-learn's Pipeline and ColumnTransformer read them).

        Parameters
        ----------
        input_features : array-like of str, optional
            Ignored: the names do not depend on the input's.
        """
        return np.array([f"umap{i}" for i in range(check_n_components(self.n_components))], dtype=object)

    def fit_transform(self, X, y=None):
        """Fit and return the embedding (n_samples, n_components); with ``transform_mode="graph"`` the fitted graph,
        ``graph_`` (umap-learn's rule)."""
        self.fit(X, y)
        return self.graph_ if self.transform_mode == "graph" else self.embedding_

    def transform(self, X) -> np.ndarray:
        """Embed new points X (n_new, n_features) into the fitted embedding; returns float32 (n_new, n_components).

        UMAP's transform: each new point is joined to its ``n_neighbors`` nearest training points (exact search,
        the fit's metric), starts at their weighted mean position and moves alone in a short run of the layout's
        SGD (``n_epochs // 3`` epochs when ``n_epochs`` was given, else 100 up to 10,000 new points and 30 above)
        while the training layout stays fixed (umapviz/optimize/transform.py). Deterministic: it uses the fit's
        seed, so the same fitted model and X give the same bytes. After a ``device="gpu"`` fit the neighbour
        search runs on the GPU (the same neighbours as the CPU's exact search) and the short run on the CPU; a
        NumPy array comes back either way. The first call prepares the training data for the search and keeps
        it for the next calls (on the GPU after a GPU fit: twice the training data's float32 size, 3 GiB at
        1M x 384, freed by the next ``fit`` or when the model is deleted). Transforming the training data gives
        points near, not at, their fitted positions; ``embedding_`` holds those. New points tend to settle on the
        rim of their group rather than inside it, as with umap-learn: only their own k edges pull them, against
        the usual repulsion.

        As in umap-learn, a point's result depends on the batch it comes in: the epoch count (by batch size), the
        pruning threshold ``max(w) / n_epochs`` and the negative samples (hashed by the edge's place in the batch)
        are the batch's, so ``transform(X)[:1]`` need not equal ``transform(X[:1])``. Each point's weights are its
        own, though: a far-away point (a fill value such as 1e20) changes nothing for the others. X needs at
        least one row: an empty X is refused, as scikit-learn's transformers refuse it.
        """
        if not self.__sklearn_is_fitted__():
            raise _not_fitted_error("transform")
        data = self._check_new_data(X)
        graph, optimizer = self.fuzzy_graph_, self.optimizer_
        if graph is None or optimizer is None:
            raise ValueError(
                "Transform unavailable when model was fit with only a single data sample: there are no neighbours "
                "to place new points among. Fit at least 2 rows."
            )
        k, metric = graph.knn_indices.shape[1], graph.params["metric"]
        if metric not in GEMM_METRICS:
            return self._embed(*self._search_other_metric(data, k, metric, graph), graph, optimizer, len(data))
        if optimizer.device == "gpu":  # n_new x n_train x d multiply-adds: minutes on the host at scale
            from .graph.knn import knn_gpu  # noqa: PLC0415 - the GPU path, loaded on its first use

            prepare, search = knn_gpu.reference_index_gpu, knn_gpu.query_knn_gpu
        else:
            prepare, search = reference_index, functools.partial(query_knn, progress=self.verbose)
        if getattr(self, "_reference", None) is None:  # the training side of the search, once per fit
            self._reference = prepare(self._fit_data, metric)
        indices, dists = search(self._fit_data, data, k, metric, reference=self._reference)
        return self._embed(indices, dists, graph, optimizer, len(data))

    def _search_other_metric(self, data: np.ndarray, k: int, metric: str, graph) -> tuple[np.ndarray, np.ndarray]:
        """transform's neighbours under a metric without a GEMM search: SciPy's distances to the training rows, or
        read from the checked X's rows of distances to them (metric="precomputed": X's columns are the training
        points, as fit's were)."""
        if metric == "precomputed":
            if (data < 0).any():
                raise ValueError("With metric='precomputed', transform takes non-negative distances.")
            return metric_cpu.precomputed_knn(data, k, queries=True)
        kwds = check_metric_kwds(metric, graph.params.get("metric_kwds"))
        return metric_cpu.exact_metric_knn(self._fit_data, k, metric, kwds, queries=data)

    def _embed(self, indices, dists, graph, optimizer, n_new: int):
        """New points placed by transform's short SGD run against the fitted layout; with ``transform_mode="graph"``
        their memberships to the fitted points instead, as an (n_new, n_fitted) CSR matrix (umap-learn's)."""
        if self.transform_mode == "graph":
            rows = np.repeat(np.arange(n_new), indices.shape[1])
            memberships = scipy.sparse.csr_matrix(
                (new_point_memberships(dists).ravel(), (rows, indices.ravel())), shape=(n_new, graph.n_vertices)
            )
            memberships.eliminate_zeros()
            return memberships
        fitted = optimizer.embedding  # the layout of the graph's vertices (the distinct rows with unique=True)
        return embed_new_points(
            indices,
            new_point_memberships(dists),
            fitted,
            a=graph.a,
            b=graph.b,
            n_epochs=transform_n_epochs(self._fit_n_epochs, n_new),
            learning_rate=optimizer.learning_rate,
            negative_sample_rate=optimizer.negative_sample_rate,
            repulsion_strength=optimizer.repulsion_strength,
            seed=optimizer.seed,
        )

    def _check_new_data(self, X) -> np.ndarray:
        """X for transform: checked as fit checks its data (its float32 cast against the fit's column ranges), with
        the fit's columns; column names as scikit-learn checks them (a mismatch is refused, names on one side
        only warned about)."""
        data = check_data(X, reference=self._fit_data)
        if data.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {data.shape[1]} features, but this UMAP was fitted on {self.n_features_in_}. Pass new "
                "data with the same columns, in the same order, as the data given to fit."
            )
        names, fitted = _feature_names(X), getattr(self, "feature_names_in_", None)
        if names is not None and fitted is not None and not np.array_equal(names, fitted):
            raise ValueError(
                f"X's column names {list(names)} differ from those seen in fit {list(fitted)}. Pass the columns "
                "fit saw, in the same order (e.g. X[est.feature_names_in_])."
            )
        if (names is None) != (fitted is None):  # scikit-learn's warnings, in its words
            has, fit_with = ("has", "without") if fitted is None else ("does not have valid", "with")
            warnings.warn(
                f"X {has} feature names, but UMAP was fitted {fit_with} feature names", UserWarning, stacklevel=3
            )
        return data

    def __getstate__(self) -> dict:
        """What pickle stores: everything but transform's prepared training data (rebuilt when needed; it holds
        a local function, which pickle cannot store)."""
        state = dict(self.__dict__)
        state.pop("_reference", None)
        state.pop("_graph_matrix", None)  # graph_ is made again from fuzzy_graph_ when read
        return state

    def __sklearn_is_fitted__(self) -> bool:
        """Whether ``fit`` has completed, for sklearn.utils.validation.check_is_fitted."""
        return hasattr(self, "embedding_")

    def __sklearn_tags__(self):
        """scikit-learn's tags for a transformer that is neither classifier nor regressor and needs no y, built as
        BaseEstimator and TransformerMixin build them (UMAP inherits neither, so sklearn stays optional)."""
        from sklearn.utils import Tags, TargetTags, TransformerTags  # noqa: PLC0415 - sklearn is optional

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags(preserves_dtype=["float32"]),  # transform always returns float32
            regressor_tags=None,
            classifier_tags=None,
        )

    def __repr__(self) -> str:
        defaults = UMAP().get_params()
        changed = {k: v for k, v in self.get_params().items() if not _same(v, defaults[k])}
        return "UMAP(" + ", ".join(f"{k}={_short_repr(v)}" for k, v in changed.items()) + ")"


def _nan_where_isolated(embedding: np.ndarray, graph) -> np.ndarray:
    """The layout with NaN rows where a vertex has no edge (umap-learn's rule: such a point's place means nothing,
    and its plots drop NaN points); the layout itself when every vertex has one."""
    isolated = graph.degree == 0
    if not isolated.any():
        return embedding
    out = np.array(embedding, copy=True)
    out[isolated] = np.nan
    return out


def _precomputed_knn(value) -> tuple | None:
    """umap-learn's ``precomputed_knn``: None when unset (its default ``(None, None, None)``), else the tuple."""
    if value is None or (isinstance(value, tuple) and all(v is None for v in value)):
        return None
    return value


@contextlib.contextmanager
def _numba_threads(threads: int | None):
    """Numba's thread count set to ``threads`` (None: unchanged) for the block, restored after."""
    if threads is None:
        yield
        return
    import numba  # noqa: PLC0415 - only to set the thread count

    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


class _NotFittedError(ValueError, AttributeError):
    """Raised by transform before fit where scikit-learn (and its NotFittedError) is not installed."""


def _not_fitted_error(method: str) -> Exception:
    """scikit-learn's NotFittedError where it is installed (so ``except NotFittedError`` works), else a stand-in
    with the same bases (ValueError, AttributeError)."""
    try:
        from sklearn.exceptions import NotFittedError  # noqa: PLC0415 - sklearn is optional
    except ImportError:
        NotFittedError = _NotFittedError
    return NotFittedError(f"This UMAP instance is not fitted yet: call fit(X) before {method}(X).")


def _feature_names(X) -> np.ndarray | None:
    """X's column names as an object array when all are strings (scikit-learn's rule), else None. Read through
    ``columns`` so that pandas is never imported here."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(columns, dtype=object)
    if names.size == 0 or not all(isinstance(name, str) for name in names):
        return None
    return names


def _same(a, b) -> bool:
    """Whether a parameter value equals its default: 1 and 1.0 or np.int64(15) and 15 do, True and 1 do not."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or isinstance(a, bool) or isinstance(b, bool):
        return False
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return type(a) is type(b) and a == b


def _short_repr(value) -> str:
    """An array parameter (an init layout) by its shape and dtype: its numbers would fill the screen."""
    if isinstance(value, np.ndarray):
        return f"<array of shape {value.shape}, {value.dtype}>"
    return repr(value)
