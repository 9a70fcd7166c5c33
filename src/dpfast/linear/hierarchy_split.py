"""The default split of a Gaussian census hierarchy's rho over its levels: the objective
(the sum over levels of the mean variance of a unit's least-squares estimate), its exact
gradient, and the certified search for the shares that minimise it.

:func:`default_split` is what :func:`dpfast.census_hierarchy` uses under Gaussian noise when
no ``split=`` is given; it reads only the public tree, never a count.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

__all__ = ["default_split", "split_objective", "SplitObjective"]


def split_objective(parents: list[NDArray[np.int64]], n_leaves: int,
                    shares: Sequence[float]) -> float:
    """The objective the default Gaussian split minimises: the sum over levels of the mean,
    over the level's units, of the variance of a unit's least-squares estimate (the
    release's ``variances``), with level ``l``'s noise variance ``1 / shares[l]`` (rho = 1/2;
    any other rho divides every variance, and so the objective, by ``2 rho``).

    Parameters
    ----------
    parents : list of int64 arrays
        The checked parent arrays, top level first (``hierarchy_params(...).parents``).
    n_leaves : int
        Units of the last level.
    shares : sequence of float
        Each level's share of rho, top first (> 0).

    Returns
    -------
    float
    """
    return SplitObjective(parents, n_leaves)(np.asarray(shares, dtype=np.float64))


class SplitObjective:
    """:func:`split_objective` for one hierarchy, its structure read once: evaluating it
    (and its gradient) touches only the units above the leaves (the leaves' variances are
    one number, summed over each parent's children through the children's counts)."""

    def __init__(self, parents: list[NDArray[np.int64]], n_leaves: int):
        self.parents = parents
        self.kids = [np.bincount(p).astype(np.float64) for p in parents]
        self.n_leaves = n_leaves

    def __call__(self, w: NDArray[np.float64]) -> float:
        return self.value_and_gradient(w, gradient=False)[0]

    def value_and_gradient(self, w: NDArray[np.float64], gradient: bool = True,
                           ) -> tuple[float, NDArray[np.float64]]:
        """The objective at level precisions ``w`` (noise variances ``1 / w``), by the
        recursion of :func:`~dpfast.linear.hierarchy_estimates.least_squares`' variances,
        and (``gradient``) its derivatives in ``w``, by the same recursion run backwards
        (reverse mode)."""
        depth = len(self.parents)
        kids, par = self.kids, self.parents
        v: list[Any] = [None] * (depth + 1)       # subtree variances; the leaves' a float
        vs: list[Any] = [None] * depth            # variance of a unit's children's sum
        fin: list[Any] = [None] * depth           # final variances above the leaves
        sh: list[Any] = [None] * depth            # per parent: (vs - final) / vs**2
        v[depth] = 1.0 / float(w[depth])
        for level in range(depth - 1, -1, -1):                 # bottom-up
            below = v[level + 1]
            vs[level] = (kids[level] * below if level == depth - 1
                         else np.bincount(par[level], weights=below))
            v[level] = 1.0 / (w[level] + 1.0 / vs[level])
        fin[0] = v[0]
        total = float(v[0][0])
        for level in range(depth):                             # top-down
            sh[level] = (vs[level] - fin[level]) / vs[level] ** 2
            below = v[level + 1]
            if level == depth - 1:                              # the leaves
                total += below - below * below * float(kids[level] @ sh[level]) / self.n_leaves
            else:
                fin[level + 1] = below - below * below * sh[level][par[level]]
                total += float(fin[level + 1].mean())
        grad = np.zeros(depth + 1)
        if not gradient:
            return total, grad
        # Backwards: g_x is the derivative of the total in x.
        vd = v[depth]
        g_vd = 1.0 - 2.0 * vd * float(kids[depth - 1] @ sh[depth - 1]) / self.n_leaves
        g_sh = kids[depth - 1] * (-vd * vd / self.n_leaves)
        g_vs: list[Any] = [None] * depth
        g_v: list[Any] = [None] * (depth + 1)
        g_fin: list[Any] = [None] * depth
        for level in range(depth - 1, -1, -1):                 # top-down, reversed
            f, s = fin[level], vs[level]
            if level < depth - 1:
                below = v[level + 1]
                g_below = g_fin[level + 1]
                shp = sh[level][par[level]]
                g_v[level + 1] = g_below * (1.0 - 2.0 * below * shp)
                g_sh = -np.bincount(par[level], weights=g_below * below * below,
                                    minlength=s.size)
            g_vs[level] = g_sh * (2.0 * f / s ** 3 - 1.0 / s ** 2)
            g_fin[level] = 1.0 / f.size - g_sh / s ** 2
        g_v[0] = g_fin[0]
        for level in range(depth):                             # bottom-up, reversed
            vl, s = v[level], vs[level]
            grad[level] = -float(g_v[level] @ (vl * vl))
            g_s = g_vs[level] + g_v[level] * vl * vl / (s * s)
            if level == depth - 1:
                g_vd += float(kids[level] @ g_s)
            else:
                g_v[level + 1] = g_v[level + 1] + g_s[par[level]]
        grad[depth] = -g_vd * vd * vd
        return total, grad


def default_split(parents: list[NDArray[np.int64]], n_leaves: int) -> tuple[float, ...]:
    """The default rho shares of a Gaussian hierarchy release, top level first: those that
    minimise :func:`split_objective` (the sum over levels of the mean variance of a unit's
    least-squares estimate), to within 1e-4 of its least value, certified.

    The objective is ``f(w) = tr(Q M(w)^-1)`` with ``M(w) = sum_l w_l A_l^T A_l`` (``A_l``
    the counts of level ``l``, ``w_l = 2 rho_l`` its precision, ``Q`` the levels' averaged
    queries): an A-optimal design over the levels, convex in ``w`` and homogeneous of degree
    -1, so that with ``d = -grad f(w)``, ``sum w_l d_l = f(w)`` and, by convexity, every
    ``w*`` on the simplex has ``f(w*) >= 2 f(w) - max d``: the search stops once ``max d <=
    (1 + 1e-4) f(w)``. Each step is the multiplicative algorithm's, ``w_l <- w_l sqrt(d_l) /
    sum_j w_j sqrt(d_j)`` (monotone for A-optimality; Yu 2010), extrapolated along its
    direction while the objective keeps falling (a level that is nearly redundant, its
    share shrinking towards 0, is otherwise approached slowly). The gradient is exact
    (:meth:`SplitObjective.value_and_gradient`, reverse mode); every evaluation reads only
    the units above the leaves.

    Parameters
    ----------
    parents : list of int64 arrays
        The checked parent arrays, top level first (``hierarchy_params(...).parents``).
    n_leaves : int
        Units of the last level.

    Returns
    -------
    tuple of float
        One share per level, top first, summing to 1.
    """
    levels = len(parents) + 1
    if levels == 1:
        return (1.0,)
    f = SplitObjective(parents, n_leaves)
    w = np.full(levels, 1.0 / levels)
    value, grad = f.value_and_gradient(w)
    for _ in range(200):
        d = np.maximum(-grad, 0.0)
        if d.max() <= (1.0 + 1e-4) * value:                     # certified
            break
        step = w * np.sqrt(d)
        step = step / step.sum() - w
        shrinking = step < 0
        # Stay inside the simplex: no share below a twentieth of where it stands.
        t_max = 0.95 * float(np.min(-w[shrinking] / step[shrinking])) \
            if shrinking.any() else math.inf
        t, best, best_value = 1.0, w + step, f(w + step)
        while 2.0 * t <= t_max:
            trial = w + 2.0 * t * step
            trial_value = f(trial)
            if not trial_value < best_value:
                break
            t, best, best_value = 2.0 * t, trial, trial_value
        if not best_value < value:                # no progress left (rounding): stop
            break
        w = best / best.sum()
        value, grad = f.value_and_gradient(w)
    return tuple(float(x) for x in w / w.sum())
