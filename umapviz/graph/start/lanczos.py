"""One Lanczos basis extension on a device's primitives: the device-neutral definition that
``spectral.thick_restart_lanczos`` runs through ``ops.extend_basis``. ``spectral_gpu.DeviceOps`` runs it as it stands;
``spectral_cpu.HostOps`` is its fused Numba twin. A leaf module (it imports neither twin), so that both the solver
and the GPU twin import it without a cycle."""

from __future__ import annotations

import numpy as np

BREAKDOWN = 1e-10  # a Lanczos vector shorter than this: the component's Krylov space is exhausted (exact)


def extend_basis(ops, V, H, arrow: np.ndarray, first: int, breakdown: float = BREAKDOWN) -> None:
    """Lanczos steps ``first .. BASIS - 1``: each writes the next basis vector ``V[j + 1]`` and column ``j`` of every
    component's projected matrix ``H`` (with row ``j + 1``'s subdiagonal), in place.

    Step ``j`` multiplies ``V[j]`` by the operator, removes the recurrence's known terms (``alpha v_j + beta
    v_j-1``, or after a restart ``alpha v_j`` plus the kept Ritz vectors' couplings ``arrow``), then projects out
    every earlier vector once more (one classical Gram-Schmidt pass) and normalises per component; a component
    whose new vector is shorter than ``breakdown`` gets zeros (its Krylov space is exhausted). The device-neutral
    definition, on ``ops``'s primitives: ``spectral_gpu.DeviceOps.extend_basis`` runs it as it stands, and
    ``spectral_cpu.HostOps.extend_basis`` is its fused CPU twin (the same operations in the same order: change both
    together).

    Parameters
    ----------
    ops : HostOps or DeviceOps
        The primitives.
    V : ndarray
        ``(BASIS + 1, n)`` basis on ``ops.xp``; rows up to ``first`` are set.
    H : ndarray
        ``(n_comp, BASIS + 1, BASIS)`` projected matrices on ``ops.xp`` (upper triangle and subdiagonal).
    arrow : ndarray
        ``(n_comp, KEEP)`` host couplings of the kept Ritz vectors to ``V[first]`` (used where ``first > 0``).
    first : int
        The first step: 0 at the start, ``KEEP`` after a restart.
    breakdown : float
        The length under which a new vector counts as zero.
    """
    xp, m = ops.xp, V.shape[0] - 1
    for j in range(first, m):
        w = ops.matvec(V[j])
        alpha = ops.seg_dots(V[j : j + 1], 1, w)
        if j == 0:  # the recurrence's known terms: w -= alpha v_j + beta v_j-1 (+ the arrow after a restart)
            w = ops.combine(V[:1], 1, alpha, w, -1.0)
        elif j == first:
            w = ops.combine(V, j + 1, xp.concatenate([xp.asarray(arrow), alpha], axis=1), w, -1.0)
        else:
            w = ops.combine(V[j - 1 : j + 1], 2, xp.concatenate([H[:, j, j - 1 : j], alpha], axis=1), w, -1.0)
        again = ops.seg_dots(V, j + 1, w)  # then one classical Gram-Schmidt pass against every earlier vector
        w = ops.combine(V, j + 1, again, w, -1.0)
        b = xp.sqrt(ops.seg_dots(w[None], 1, w)[:, 0])
        V[j + 1] = w * xp.where(b > breakdown, 1.0 / xp.maximum(b, breakdown), 0.0)[ops.comp_of]
        H[:, j, j] = alpha[:, 0]
        if j == first and j > 0:
            H[:, :j, j] = xp.asarray(arrow)
        elif j > 0:
            H[:, j - 1, j] = H[:, j, j - 1]
        H[:, : j + 1, j] = H[:, : j + 1, j] + again
        H[:, j + 1, j] = b
