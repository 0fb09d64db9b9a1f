"""Is the spectral start as good a start as before? Eigenvalues against SciPy, and layouts from both starts.

    PYTHONPATH=$PWD python3 bench/spectral_quality.py --n 20000 --before bd2aaad --epochs 50

On the ``clusters`` graph at ``--n`` points: per component solved, the largest gap between the solver's
eigenvalues and SciPy's (ARPACK at tolerance 1e-12; LAPACK's dense solver up to 1,000 vertices), which should be
within the solver's tolerance (a symmetric matrix's eigenvalue error is at most the residual); then, for the
start of git revision ``--before`` and the current one, the trustworthiness of the start and of the layout after
``--epochs`` epochs of chunked("auto"), and the final layout's outliers by the neighbour method.
"""

from __future__ import annotations

import argparse

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from spectral_cost import clusters_graph, time_before

from umapviz import datasets
from umapviz.graph import spectral_init
from umapviz.graph import start as init_mod
from umapviz.graph.start import spectral
from umapviz.graph.start.components import connected_components
from umapviz.metrics import outlier_summary, trustworthiness
from umapviz.optimize import LayoutOptimizer


def scipy_top(adj: scipy.sparse.csr_matrix, n_vec: int) -> np.ndarray:
    """SciPy's leading eigenvalues of the normalised adjacency, descending."""
    adj = adj.astype(np.float64)
    d = scipy.sparse.diags(1.0 / np.sqrt(np.asarray(adj.sum(axis=1)).ravel()))
    M = (d @ adj @ d).tocsr()
    if M.shape[0] <= 1000:
        return scipy.linalg.eigvalsh(M.toarray())[::-1][:n_vec]
    values = scipy.sparse.linalg.eigsh(M, k=n_vec, which="LA", tol=1e-12, return_eigenvectors=False)
    return np.sort(values)[::-1]


def eigenvalue_gaps(graph, n_vec: int = 3) -> list[float]:
    """Per component solved: max |lambda - SciPy's lambda| over its leading ``n_vec``."""
    adj = init_mod._adjacency(graph)
    n_comp, labels = connected_components(graph.head, graph.tail, graph.n_vertices)
    sizes = np.bincount(labels, minlength=n_comp)
    members, bounds, local = init_mod._component_members(labels, sizes)
    comps = [c for c in np.argsort(-sizes, kind="stable") if sizes[c] > 2 * (n_vec - 1) + 1]
    gaps = []
    for c in comps:
        verts = members[bounds[c] : bounds[c + 1]]
        sub = adj if n_comp == 1 else init_mod._component_adjacency(adj, verts, local)
        ((values, _),) = spectral.leading_eigenpairs(sub, np.array([0, verts.size]), n_vec, "cpu")
        gaps.append(float(np.max(np.abs(values - scipy_top(sub, n_vec)))))
    return gaps


def run_from(graph, X, start: np.ndarray, epochs: int) -> tuple[float, float, int]:
    """Trustworthiness of the start and after ``epochs`` epochs, and the final layout's neighbour outliers."""
    opt = LayoutOptimizer(graph, strategy="chunked", n_chunks="auto", random_state=0, init=start)
    opt.step(epochs)
    final = opt.embedding
    return trustworthiness(X, start), trustworthiness(X, final), outlier_summary(final, graph)["neighbors"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--before", default="bd2aaad")
    p.add_argument("--epochs", type=int, default=50)
    args = p.parse_args()
    graph = clusters_graph(args.n, "cpu")
    X, _ = datasets.load("clusters", n_samples=args.n, random_state=0)
    gaps = eigenvalue_gaps(graph)
    print(
        f"components solved: {len(gaps)}; largest |eigenvalue - SciPy's|: {max(gaps):.1e} "
        f"(tolerance {spectral.TOL:.0e})"
    )
    print(f"\n| start | trustworthiness of the start | after {args.epochs} epochs | neighbour outliers |")
    print("|---|---|---|---|")
    starts = {
        f"before ({args.before})": time_before(graph, args.before, "cpu", 1)["layout"],
        "now": spectral_init(graph, 2, 0),
    }
    for name, start in starts.items():
        t0, t1, out = run_from(graph, X, start, args.epochs)
        print(f"| {name} | {t0:.4f} | {t1:.4f} | {out} |", flush=True)


if __name__ == "__main__":
    main()
