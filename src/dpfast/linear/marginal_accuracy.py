"""The accuracy of marginal tables: the consistent tables (the least-squares projection of
the noisy ones), the exact per-cell variances and high-probability error bounds of a
release (:func:`marginal_variance`, :func:`marginal_error_bound`). Public: they need only
the attributes' sizes and the noise, never the data.

Consistency (``method="consistent"``, free post-processing). The noisy tables ``y_T`` are
replaced by the weighted least-squares fit ``M_T x`` over all histograms ``x`` of the
attributes, ``M_T`` summing ``x`` over the attributes not in ``T`` (weights: inverse noise
variances). It is computed exactly with the ANOVA decomposition. A table ``f`` over the
attributes ``T`` is the sum, over ``S`` included in ``T``, of its ``S``-components

    c_{T,S} = sum over R in S of (-1)^{|S|-|R|} * (mean of f over the attributes T \\ R)
            = prod_{a in S} (1 - mean_a) prod_{a in T \\ S} mean_a  f,

functions of the attributes ``S`` with mean zero along each of them. These subspaces are
orthogonal, and the ``S``-component of ``M_T x`` is ``n_{A\\T} x_S`` (``n_U``: the product of
the sizes of the attributes ``U``; ``x_S`` the ``S``-component of ``x``). So table ``T``
observes ``x_S`` as ``c_{T,S} / n_{A\\T}`` with noise of variance ``sigma_T^2 / (n_{T\\S}
n_{A\\T}^2)`` per cell of ``S`` (the same correlation pattern for every ``T``), the least
squares problem splits into one problem per ``S``, and each is solved by inverse-variance
weighting of the tables that contain ``S``. Here we estimate ``v_S = n_{A\\S} x_S`` (the same
weighting, every observation scaled by ``n_{A\\S}``, so that only table-sized numbers
appear): ``v_S`` is seen by table ``T`` as ``n_{T\\S} c_{T,S}`` with weight ``1 /
n_{T\\S}`` (equal ``sigma_T``), hence ``V_S = sum_T c_{T,S} / sum_T 1/n_{T\\S}``, and table
``T`` is rebuilt as ``sum_{S in T} V_S / n_{T\\S}`` (broadcast). The tables so obtained are
mutually consistent (they are the marginals of one ``x``), unbiased, and, all tables having
the same noise, the orthogonal projection of the noisy tables onto the consistent ones: the
total squared error over all released cells never exceeds that of the noisy tables, in any
realisation. The per-cell variances are exact (:func:`marginal_variance`).
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from ..mechanisms.laplace import max_error_bound
from ..noise import Gaussian, Measure
from .marginal_plan import (ADAPTIVE, Plan, check_method, domain_plan, subsets,
                            table_measure)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    from numpy.typing import ArrayLike, NDArray

    #: A table's attributes: sorted indices.
    Attrs: TypeAlias = tuple[int, ...]

__all__ = ["component", "consistent", "no_model_bound", "variance_factors", "variances",
           "error_coefficients", "tail_bound", "error_bounds", "marginal_variance",
           "marginal_error_bound"]


def component(y: NDArray[np.float64], table: Attrs, sub: Attrs) -> NDArray[np.float64]:
    """The ``sub``-component of a table over the attributes ``table``: the mean over the
    other attributes, then centred along each remaining axis, the product form of the
    inclusion-exclusion sum of means (see the module)."""
    other = tuple(i for i, a in enumerate(table) if a not in sub)
    c: NDArray[np.float64] = y.mean(axis=other) if other else y.copy()
    for axis in range(c.ndim):
        c = c - c.mean(axis=axis, keepdims=True)
    return c


def consistent(plan: Plan, noisy: list[NDArray[Any]]) -> list[NDArray[np.float64]]:
    """The least-squares consistent tables (see the module): per attribute set S, the
    inverse-variance average V_S of the tables' observations, then each table rebuilt."""
    total: dict[Attrs, NDArray[np.float64]] = {}
    weight = plan.weights()
    for s, y in zip(plan.sets, noisy):
        values = np.asarray(y, dtype=np.float64)
        for sub in subsets(s):
            c = component(values, s, sub)
            total[sub] = total[sub] + c if sub in total else c
    out = []
    for s, shape in zip(plan.sets, plan.shapes):
        est = np.zeros(shape)
        for sub in subsets(s):
            v = total[sub] / (weight[sub] * plan.outside(s, sub))
            est += v.reshape([plan.sizes[a] if a in sub else 1 for a in s])
        out.append(est)
    return out


def no_model_bound(method: str, func: str) -> None:
    if method in ("model",) + ADAPTIVE:
        raise ValueError(f"The {func} of method={method!r} is not stated: the model's "
                         "tables are not linear in the noise (and AIM's and MST's "
                         "measurements are chosen by the data). Use expected_error() (where "
                         "a measurement holds the table) or another 'method'.")


def variance_factors(plan: Plan, method: str) -> list[float]:
    """Per-cell variance of each table in units of one noisy cell's variance."""
    if method == "independent":
        return [1.0] * len(plan.sets)
    weight = plan.weights()
    # Var V_S per cell = prod_{a in S} (1 - 1/n_a) / W_S; table T adds it / n_{T\S}^2.
    return [sum(math.prod(1.0 - 1.0 / plan.sizes[a] for a in sub)
                / (plan.outside(s, sub) ** 2 * weight[sub]) for sub in subsets(s))
            for s in plan.sets]


def variances(plan: Plan, method: str,
               measured: Measure) -> dict[tuple[Hashable, ...], float]:
    """Per-cell variance of each table: the noise's variance (discrete Laplace, or sigma**2
    for Gaussian noise) times the table's factor."""
    sigma2 = measured.noise.variance
    return {lab: sigma2 * f for lab, f in zip(plan.labels, variance_factors(plan, method))}


def error_coefficients(plan: Plan, j: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(a, mult): the error of any cell c of consistent table j is sum_i a_i K_i over the
    noisy cells, coefficient a[i] on mult[i] of them.

    The coefficient of noisy cell c' of table T' is sum over S in I = T & T' of
    prod_{a in S} (delta(c_a, c'_a) - 1/n_a) / (n_{T\\S} n_{T'\\S} W_S): it depends only on
    the attributes G of I where c and c' agree, and n_{T'\\I} prod_{a in I\\G} (n_a - 1)
    cells c' share G. Tables T' with the same I and n_{T'\\I} are grouped.
    """
    weight, table = plan.weights(), plan.sets[j]
    groups: dict[tuple[Attrs, int], int] = {}
    for other in plan.sets:
        inter = tuple(a for a in table if a in other)
        key = (inter, plan.outside(other, inter))
        groups[key] = groups.get(key, 0) + 1
    coef, mult = [], []
    for (inter, rest), count in groups.items():
        for agree in subsets(inter):
            coef.append(sum(
                math.prod(1.0 - 1.0 / plan.sizes[a] if a in agree else -1.0 / plan.sizes[a]
                          for a in sub)
                / (plan.outside(table, sub) * rest * plan.outside(inter, sub) * weight[sub])
                for sub in subsets(inter)))
            mult.append(count * rest * math.prod(plan.sizes[a] - 1 for a in inter
                                                 if a not in agree))
    return np.array(coef), np.array(mult, dtype=np.float64)


def _cumulant(s: NDArray[np.float64], scale: float,
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """log E[exp(s K)] and its derivative, K discrete Laplace of parameter ``scale``
    (``|s| < 1/scale``): ``E[exp(s K)] = (1-q)^2 / ((1 - q e^s)(1 - q e^-s))``."""
    r = 1.0 / scale
    up, down = np.exp(s - r), np.exp(-s - r)
    k = 2.0 * math.log(-math.expm1(-r)) - np.log1p(-up) - np.log1p(-down)
    return k, up / (1.0 - up) - down / (1.0 - down)


def tail_bound(coef: NDArray[np.float64], mult: NDArray[np.float64], scale: float,
                log_p: float) -> Callable[[float], float]:
    """u -> an upper bound on ``P[X >= u]``, ``X = sum_i a_i K_i`` (``a[i]`` on ``mult[i]``
    independent discrete Laplace noises of parameter ``scale``), for probabilities around
    ``exp(log_p)``.

    One noise of the largest coefficient, ``a0 K0``, is kept exact and the rest ``R``
    bounded by Chernoff: ``P[X >= u] = sum_k P[K0 = k] P[R >= u - a0 k]`` with
    ``P[R >= w] <= min_l exp(C_R(l) - l w)`` over a grid of ``l`` in ``[0, 1/(scale
    max|a|))`` (any ``l`` gives a bound; ``C_R`` is R's cumulant function); the ``k`` with
    ``|k| > kmax`` add their probability, below ``exp(log_p - 9)``. This is never above the
    plain Chernoff bound of ``X`` (up to the grid), and much closer to the truth when one
    noise dominates."""
    keep = (coef != 0) & (mult > 0)
    a, m = np.abs(coef[keep]), mult[keep].copy()
    top = int(np.argmax(a))
    a0 = float(a[top])
    m[top] -= 1
    a, m = a[m > 0], m[m > 0]
    q = math.exp(-1.0 / scale)
    kmax = math.ceil(scale * (9.0 - log_p))
    k = np.arange(-kmax, kmax + 1)
    pk = (-math.expm1(-1.0 / scale)) / (1.0 + q) * np.exp(-np.abs(k) / scale)
    beyond = 2.0 * q ** (kmax + 1) / (1.0 + q)
    if not a.size:                                  # X = a0 K0: P[K0 >= ceil(u / a0)]
        return lambda u: 1.0 if u <= 0 else q ** math.ceil(u / a0 * (1 - 1e-12)) / (1 + q)
    frac = np.concatenate((np.linspace(0.0, 0.9, 46), 1.0 - np.geomspace(0.1, 1e-7, 36)))
    lam = frac / (scale * float(a.max()))
    c_r = np.array([float(m @ _cumulant(x * a, scale)[0]) for x in lam])

    def tail(u: float) -> float:
        exponent = c_r[None, :] - lam[None, :] * (u - a0 * k)[:, None]
        return float(pk @ np.exp(np.minimum(exponent.min(axis=1), 0.0))) + beyond
    return tail


def _quantile(tail: Callable[[float], float], log_p: float, start: float) -> float:
    """The smallest u (to 1e-4 relative) with ``tail(u) <= exp(log_p)``, ``tail``
    non-increasing."""
    def above(u: float) -> bool:
        return math.log(max(tail(u), 1e-300)) > log_p

    lo, hi = 0.0, start
    while above(hi):
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-4 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return hi


def error_bounds(plan: Plan, method: str, measured: Measure, beta: object,
                  func: str) -> dict[tuple[Hashable, ...], float]:
    b = _v.check_real(beta, "beta", func, low=0.0, high=1.0)
    noise = measured.noise
    if isinstance(noise, Gaussian):
        return _gaussian_error_bounds(plan, method, noise, b)
    m = len(plan.sets)
    eps = float(m) / noise.scale if measured.epsilon is None else measured.epsilon
    scale = noise.scale
    if math.exp(-1.0 / scale) == 0.0:               # the noise is exactly 0
        return {lab: 0.0 for lab in plan.labels}
    if method == "independent":
        j = float(max_error_bound(plan.n_cells, epsilon=eps, sensitivity=float(m), beta=b))
        return {lab: j for lab in plan.labels}
    # Each cell's error exceeds its bound, on either side, with probability <= beta / N.
    log_p = math.log(b / (2.0 * plan.n_cells))
    return {lab: _quantile(tail_bound(*error_coefficients(plan, j), scale, log_p), log_p,
                           scale)
            for j, lab in enumerate(plan.labels)}


def _gaussian_error_bounds(plan: Plan, method: str, noise: Gaussian,
                           b: float) -> dict[tuple[Hashable, ...], float]:
    """Gaussian noise: the error of a cell of table T is ``sum_i a_i K_i`` over independent
    discrete Gaussians, each sigma-subgaussian (Canonne, Kamath & Steinke 2020), so it is
    subgaussian with variance proxy ``sigma**2 sum_i a_i**2``, the table's variance factor
    times ``sigma**2``: ``P[|error| >= u] <= 2 exp(-u**2 / (2 f_T sigma**2))``. At ``beta /
    N`` per cell (a union bound over all ``N`` cells), ``u = sqrt(f_T)`` times the noise's
    own :meth:`~dpfast.noise.Gaussian.tail_bound` at ``beta / N``."""
    one = noise.tail_bound(b / plan.n_cells)
    return {lab: math.sqrt(f) * one
            for lab, f in zip(plan.labels, variance_factors(plan, method))}


def _accuracy_plan(func: str, domain: Any, k: int | None, workload: Any,
                   method: str | None, noise: object, epsilon: object, delta: object,
                   rho: object) -> tuple[Plan, str, Measure]:
    """The checked plan, method and noise of an accuracy function (no data involved; the
    noise is the release's, from the same keywords: nothing is charged)."""
    how = check_method(method, func)
    no_model_bound(how, func)
    plan = domain_plan(domain, k, workload, func)
    return plan, how, table_measure(func, noise, epsilon, delta, rho, len(plan.sets))


def marginal_variance(domain: Mapping[Any, Any] | ArrayLike, *,
                      epsilon: float | None = None, k: int | None = 2, workload: Any = None,
                      method: str | None = None, noise: str = "laplace",
                      delta: float | None = None,
                      rho: float | None = None) -> dict[tuple[Hashable, ...], float]:
    """marginal_variance(domain, *, epsilon=None, k=2, workload=None, method=None, noise="laplace", delta=None, rho=None)

    The exact variance of every released cell of :func:`marginals`, per table (all cells of
    a table have the same). Public: it needs only the attributes' sizes.

    Parameters
    ----------
    domain : mapping or sequence of int
        The ``keys`` of the release (names to categories), or the attributes' sizes (the
        shape of the counts).
    epsilon, k, workload, method, noise, delta, rho
        As for :func:`marginals` (the same keywords give the same noise; nothing is
        charged).

    Returns
    -------
    dict
        Table label to per-cell variance.

    Raises
    ------
    TypeError
        ``domain`` is neither a mapping of names to ordered sequences of categories nor a
        sequence of int sizes (a str, or a float size, for instance); ``k`` is not an int;
        ``workload`` is neither a :class:`~dpfast.workloads.Marginals` nor a sequence of
        attribute tuples; ``epsilon``, ``delta`` or ``rho`` is not a real number;
        ``noise`` is not a str.
    ValueError
        A size < 1; ``k`` outside [1, number of attributes], giving more than 65,536
        tables, or changed from its default with ``workload``; a ``workload`` naming an
        unknown or repeated attribute, listing a table twice, empty, or a ``Marginals`` over
        another domain; tables of more than ``2**34`` cells; ``method`` not one of
        ``"consistent"`` or ``"independent"`` (``"model"``, ``"aim"`` and ``"mst"`` have no
        stated variance); the privacy keywords missing or not fitting ``noise`` (as for
        :func:`marginals`), out of range, or giving a noise scale or sigma out of the
        sampler's range.

    Notes
    -----
    ``"independent"``: the variance of discrete Laplace noise of scale ``t = m/epsilon``,
    ``sigma^2 = 2 e^{-1/t} / (1 - e^{-1/t})^2``, or of the discrete Gaussian, ``sigma^2``
    (an upper bound, exact to ``1e-8`` relative from sigma = 1: the discrete Gaussian's
    variance falls short of it by about ``4 pi^2 sigma^4 e^{-2 pi^2 sigma^2}``).
    ``"consistent"``: the components ``V_S``
    are independent across ``S``, each the inverse-variance average of its observations,
    so a cell of table ``T`` has variance ``sigma^2 sum_{S in T} prod_{a in S} (1 - 1/n_a) /
    (n_{T\\S}^2 W_S)`` with ``W_S = sum_{T' contains S} 1 / n_{T'\\S}`` (the factor
    ``prod (1 - 1/n_a)`` is the diagonal of the centring along the attributes of ``S``).

    Examples
    --------
    The 2-way tables of three census attributes, before any data is seen (nothing is
    charged):

    >>> import dpfast as dp
    >>> keys = {"sex": ["F", "M"], "age": ["0-17", "18-64", "65+"],
    ...         "region": ["N", "S", "E", "W"]}
    >>> v = dp.marginal_variance(keys, epsilon=1.0)               # method="consistent"
    >>> {table: round(var, 2) for table, var in v.items()}
    {('sex', 'age'): 12.93, ('sex', 'region'): 12.4, ('age', 'region'): 12.02}
    >>> round(dp.marginal_variance(keys, epsilon=1.0, method="independent")[("sex", "age")], 2)
    17.83

    By sizes alone (tables labelled by axis):

    >>> v = dp.marginal_variance([2, 2, 2], epsilon=1.0, method="independent")
    >>> round(v[(0, 1)], 3)
    17.834
    >>> round(dp.marginal_variance([2, 2, 2], epsilon=1.0)[(0, 1)] / v[(0, 1)], 4)
    0.5833
    >>> g = dp.marginal_variance([2, 2, 2], noise="gaussian", rho=0.5, method="independent")
    >>> round(g[(0, 1)], 9)             # sigma**2 = l2**2 / (2 rho), l2**2 = 3 tables
    3.0
    """
    plan, how, measured = _accuracy_plan("marginal_variance", domain, k, workload, method,
                                         noise, epsilon, delta, rho)
    return variances(plan, how, measured)


def marginal_error_bound(domain: Mapping[Any, Any] | ArrayLike, *,
                         epsilon: float | None = None, beta: float = 0.05,
                         k: int | None = 2, workload: Any = None, method: str | None = None,
                         noise: str = "laplace", delta: float | None = None,
                         rho: float | None = None) -> dict[tuple[Hashable, ...], float]:
    """marginal_error_bound(domain, *, epsilon=None, beta=0.05, k=2, workload=None, method=None, noise="laplace", delta=None, rho=None)

    Bounds, one per table, that the errors of every cell of every table released by
    :func:`marginals` stay within, all at once, with probability at least ``1 - beta``.

    Parameters
    ----------
    domain, epsilon, k, workload, method, noise, delta, rho
        As for :func:`marginal_variance`.
    beta : float, optional
        Failure probability, in (0, 1).

    Returns
    -------
    dict
        Table label to bound.

    Raises
    ------
    TypeError
        ``domain`` is neither a mapping of names to ordered sequences of categories nor a
        sequence of int sizes (a str, or a float size, for instance); ``k`` is not an int;
        ``workload`` is neither a :class:`~dpfast.workloads.Marginals` nor a sequence of
        attribute tuples; ``epsilon``, ``delta`` or ``rho`` is not a real number;
        ``noise`` is not a str.
    ValueError
        A size < 1; ``k`` outside [1, number of attributes], giving more than 65,536
        tables, or changed from its default with ``workload``; a ``workload`` naming an
        unknown or repeated attribute, listing a table twice, empty, or a ``Marginals`` over
        another domain; tables of more than ``2**34`` cells; ``method`` not one of
        ``"consistent"`` or ``"independent"`` (``"model"``, ``"aim"`` and ``"mst"`` have no
        stated bound); the privacy keywords missing or not fitting ``noise`` (as for
        :func:`marginals`), out of range, or giving a noise scale or sigma out of the
        sampler's range; ``beta`` outside (0, 1) (a bool or non-number: TypeError).

    Notes
    -----
    ``"independent"``: the exact quantile of the largest of the ``N`` (all cells) discrete
    Laplace noises, :func:`dpfast.max_error_bound`. ``"consistent"``: the error of a cell
    is a fixed linear combination ``sum_j a_j K_j`` of the ``N`` independent noises (the
    same distribution for every cell of a table; the coefficients are computed exactly from
    the ANOVA weights). Its tail is bounded by keeping the noise of the largest coefficient
    exact and bounding the rest by Chernoff (exact cumulant function of discrete Laplace
    noise), and each table's bound is where that tail is ``beta / (2 N)``: a union bound
    over both signs and all ``N`` cells. The bound is rigorous, not an approximation, and
    somewhat conservative; the variances (:func:`marginal_variance`) compare the methods
    exactly. Cost: about ``m^2`` small steps for ``m`` tables.

    Gaussian noise: every discrete Gaussian is sigma-subgaussian (Canonne, Kamath & Steinke
    2020), so the error of a cell, a linear combination of them, is subgaussian with
    variance proxy its variance (:func:`marginal_variance`, ``f_T sigma^2``), and each
    table's bound is ``sqrt(f_T) sigma sqrt(2 ln(2 N / beta))``, with the same union bound.
    Rigorous for both methods (``f_T = 1`` for ``"independent"``).

    Examples
    --------
    Before releasing the 2-way tables of three census attributes: every cell of every table
    within these bounds, all at once, with probability at least 95% (nothing is charged):

    >>> import dpfast as dp
    >>> keys = {"sex": ["F", "M"], "age": ["0-17", "18-64", "65+"],
    ...         "region": ["N", "S", "E", "W"]}
    >>> b = dp.marginal_error_bound(keys, epsilon=1.0)
    >>> {table: round(bound, 1) for table, bound in b.items()}
    {('sex', 'age'): 16.5, ('sex', 'region'): 16.1, ('age', 'region'): 15.8}
    >>> b = dp.marginal_error_bound(keys, noise="gaussian", rho=0.5)
    >>> {table: round(bound, 1) for table, bound in b.items()}
    {('sex', 'age'): 5.5, ('sex', 'region'): 5.4, ('age', 'region'): 5.3}

    By sizes alone (tables labelled by axis):

    >>> float(dp.marginal_error_bound([2, 2, 2], epsilon=1.0, method="independent")[(0, 1)])
    16.0
    >>> round(dp.marginal_error_bound([2, 2, 2], epsilon=1.0)[(0, 1)], 1)
    13.2
    >>> g = dp.marginal_error_bound([2, 2, 2], noise="gaussian", rho=0.5,
    ...                             method="independent")
    >>> round(g[(0, 1)], 2)             # sigma sqrt(2 ln(2 N / beta)), N = 12 cells
    6.09
    """
    func = "marginal_error_bound"
    plan, how, measured = _accuracy_plan(func, domain, k, workload, method, noise, epsilon,
                                         delta, rho)
    return error_bounds(plan, how, measured, beta, func)
