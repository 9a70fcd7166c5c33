"""Census hierarchies: counts for every level of a geography that add up.

A hierarchy is public: a tree of units (nation, then e.g. states, counties, tracts), given by
the parent of every unit of each level. Each record lies in one leaf unit and so in one unit
of every level: the vector of all units' counts has l1 sensitivity equal to the number of
levels, and a record changes one count per level by 1. Laplace noise (the default): level
``l`` gets discrete Laplace noise of scale ``1 / (split[l] * epsilon)`` (``split`` sums to 1;
by default equal shares). Gaussian noise (``noise="gaussian"``, Census-style): level ``l``
gets a share ``rho_l = split[l] * rho`` of the release's zCDP budget and discrete Gaussian
noise of ``sigma_l = 1 / sqrt(2 rho_l)``; the levels' costs ``1 / (2 sigma_l**2)`` add to
``rho``. By default the shares minimise the sum over levels of the mean variance of a unit's
least-squares estimate (:func:`default_split`). Under (epsilon, delta), ``rho`` is the
largest the tight conversion allows (:func:`dpfast.zcdp.rho_from_epsilon_delta`): levels
of different sigmas are not one isotropic discrete Gaussian, whose exact (epsilon, delta)
calibration would otherwise apply. Then, as post-processing (free):

1. Weighted least squares consistent with the tree (every parent the sum of its children),
   in two linear passes over the levels: bottom-up, each unit's best estimate from its own
   subtree (inverse-variance weighting of its measurement and its children's sum, each
   level's noise variance its own: ``dlap_variance`` or ``sigma_l**2``); top-down, each
   parent's final estimate shared out among its children in proportion to their
   variances. Unbiased, with the exact variances of ``variances``.
2. Non-negative integers that keep every sum exactly, top-down: the nation's estimate
   rounded (at least 0); then under each parent with integer count ``P``, its children's
   estimates clipped at 0 and scaled to sum to ``P`` (evenly split if all are 0), rounded
   by largest remainders. Each step is vectorised over all units of a level.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release
from ..noise import Gaussian, Laplace, measure
from ..samplers import MAX_DISCRETE_SCALE
from ..tables import is_frame_like
from ..zcdp import rho_from_epsilon_delta
from .tree import check_sigma

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["census_hierarchy", "HierarchyRelease", "default_split", "split_objective"]


class Cost(NamedTuple):
    """What a release charges: (``epsilon``, ``delta``) and, where stated, ``rho`` (its zCDP
    cost; ``epsilon`` is None for a release given in rho alone). Pass them to
    :class:`dpfast._release.Release` as they are."""

    epsilon: float | None
    delta: float
    rho: float | None


class HierarchyRelease:
    """The result of :func:`census_hierarchy`, levels ordered from the top (the nation, one
    unit) to the leaves.

    Attributes
    ----------
    counts : list of int64 arrays
        Non-negative integer counts per unit of each level; every parent equals the sum of
        its children, exactly.
    estimates : list of float64 arrays
        The least-squares consistent estimates (unbiased, possibly negative or fractional).
    variances : list of float64 arrays
        The exact variance of each unit's least-squares estimate.
    parents : list of int64 arrays
        ``parents[l][i]``: the unit of level ``l`` above unit ``i`` of level ``l + 1``.
    labels : list or None
        Per level, the unit labels (pandas Index) when the hierarchy came from a frame.
    epsilon, delta, rho : float or None
        The release's cost: epsilon (None for a release given in rho alone), delta, and the
        zCDP rho of Gaussian noise (None for Laplace noise).
    split : tuple of float
        Each level's share of epsilon (Laplace) or of rho (Gaussian), top first.
    noise : str
        ``"laplace"`` or ``"gaussian"``.
    scales : tuple of float
        Each level's noise scale, top first: the discrete Laplace scale, or the discrete
        Gaussian's sigma (``1 / sqrt(2 split[l] rho)``).
    """

    def __init__(self, counts: list[NDArray[np.int64]], estimates: list[NDArray[np.float64]],
                 variances: list[NDArray[np.float64]], parents: list[NDArray[np.int64]],
                 epsilon: float | None, split: tuple[float, ...],
                 labels: list[Any] | None = None, *, delta: float = 0.0,
                 rho: float | None = None, noise: str = "laplace",
                 scales: tuple[float, ...] = ()):
        self.counts = counts
        self.estimates = estimates
        self.variances = variances
        self.parents = parents
        self.epsilon = epsilon          # None for a release given in rho alone
        self.delta = delta
        self.rho = rho                  # the zCDP cost charged, for Gaussian noise
        self.split = split              # each level's share of epsilon (Laplace) or rho
        self.noise = noise              # "laplace" or "gaussian"
        self.scales = scales            # each level's Laplace scale or sigma, top first
        self.labels = labels

    def error_bound(self, level: int, beta: float = 0.05) -> NDArray[np.float64]:
        """Per unit of ``level``, a bound on the least-squares estimate's error exceeded with
        probability at most ``beta`` (Chebyshev: ``sqrt(variance / beta)``)."""
        b = _v.check_real(beta, "beta", "HierarchyRelease.error_bound", high=1.0)
        return np.sqrt(self.variances[level] / b)

    def to_pandas(self) -> list[Any]:
        """The integer counts of each level as labelled pandas Series (needs pandas)."""
        import pandas as pd
        labels = self.labels or [pd.RangeIndex(len(c)) for c in self.counts]
        return [pd.Series(c, index=ix, name="count") for c, ix in zip(self.counts, labels)]

    def __repr__(self) -> str:
        sizes = [len(c) for c in self.counts]
        cost = (f"epsilon={self.epsilon!r}" if self.rho is None else
                f"rho={self.rho!r}" if self.epsilon is None else
                f"epsilon={self.epsilon!r}, delta={self.delta!r}")
        return f"HierarchyRelease(units per level={sizes}, {cost})"


def _from_frames(records: Any, geography: Any, func: str,
                 ) -> tuple[NDArray[np.int64], list[NDArray[np.int64]], list[Any]]:
    """Leaf counts, parent arrays and unit labels from a frame of records and the frame of
    the public geography (one row per leaf, one column per level, top first)."""
    import pandas as pd
    if not (is_frame_like(records) and is_frame_like(geography)):
        raise TypeError(f"The 'data' and 'hierarchy' parameters of {func} must both be "
                        f"frames, or leaf counts and parent arrays. Got "
                        f"{type(records).__name__} and {type(geography).__name__} instead.")
    cols = list(geography.columns)
    if not cols or geography.empty:
        raise ValueError(f"The 'hierarchy' parameter of {func} must have at least one level "
                         "column and one leaf unit.")
    missing = [c for c in cols if c not in records.columns]
    if missing:
        raise ValueError(f"The 'data' parameter of {func} must have a column for every level "
                         f"of the hierarchy. Missing: {missing!r}.")
    leaves = pd.MultiIndex.from_frame(geography[cols])
    if leaves.has_duplicates:
        raise ValueError(f"The 'hierarchy' parameter of {func} must list each leaf unit once. "
                         f"{int(leaves.duplicated().sum())} rows repeat an earlier one.")
    codes = leaves.get_indexer(pd.MultiIndex.from_frame(records[cols]))
    outside = np.flatnonzero(codes < 0)
    if outside.size:
        # Neither the values nor how many records: an error message can end up in a log.
        raise ValueError(f"The 'data' parameter of {func} must have every record in a leaf "
                         f"unit of the hierarchy. Some are in none (the first at record "
                         f"{int(outside[0])}; their values are not shown).")
    counts = np.bincount(codes, minlength=len(leaves)).astype(np.int64)
    labels: list[Any] = [pd.Index(["total"])]
    parents: list[NDArray[np.int64]] = []
    for depth in range(1, len(cols) + 1):
        units = leaves.droplevel(list(range(depth, len(cols)))) if depth < len(cols) \
            else leaves
        uniq = units.unique()
        parent_of_unit = (np.zeros(len(uniq), dtype=np.int64) if depth == 1 else
                          labels[-1].get_indexer(uniq.droplevel(depth - 1)))
        parents.append(parent_of_unit.astype(np.int64))
        labels.append(uniq)
    return counts, parents, labels          # the leaves are unique: labels[-1] is `leaves`


def _check_parents(parents: Any, n_leaves: int, func: str) -> list[NDArray[np.int64]]:
    """The parent arrays, top level first; each level's units all have a parent and every
    unit above the leaves has at least one child."""
    if not isinstance(parents, (list, tuple)):
        raise TypeError(f"The 'hierarchy' parameter of {func} must be a list of integer "
                        f"arrays (one per level under the top) or a frame. Got "
                        f"{_v.describe(parents)} instead.")
    out: list[NDArray[np.int64]] = []
    below = n_leaves
    for depth in range(len(parents) - 1, -1, -1):          # from the leaves up
        p = _v.as_array(parents[depth], "hierarchy", func)
        if p.dtype.kind not in "iu" or p.shape != (below,):
            raise ValueError(f"The 'hierarchy' parameter of {func} must give, at level "
                             f"{depth + 1}, an integer array of {below} parent indices. Got "
                             f"{_v.describe(p)} instead.")
        p = p.astype(np.int64)
        size = int(p.max()) + 1 if p.size else 0
        if p.size and p.min() < 0:
            raise ValueError(f"The 'hierarchy' parameter of {func} must hold indices >= 0. "
                             f"Got {int(p.min())} at level {depth + 1} instead.")
        if np.bincount(p, minlength=size).min() == 0:
            raise ValueError(f"The 'hierarchy' parameter of {func} must give every unit of "
                             f"level {depth} at least one child (indices 0..{size - 1}).")
        out.append(p)
        below = size
    if below != 1:
        raise ValueError(f"The 'hierarchy' parameter of {func} must lead to one unit at the top "
                         f"(the nation). Got {below} units at the top instead.")
    return out[::-1]


def census_hierarchy(data: Any, hierarchy: Any, *, epsilon: float | None = None,
                     split: Sequence[float] | None = None, noise: str = "laplace",
                     delta: float | None = None, rho: float | None = None,
                     accountant: AccountantLike | None = None, rng: RngLike = None,
                     threads: int | None = None) -> HierarchyRelease:
    """census_hierarchy(data, hierarchy, *, epsilon=None, split=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None, threads=None)

    Release counts for every level of a public hierarchy (nation, then e.g. states and
    counties) so that children sum exactly to their parent and every count is a
    non-negative integer (see the module).

    Parameters
    ----------
    data : array_like of int, or pandas.DataFrame
        Either the exact counts of the leaf units (one per leaf), or the records, one row
        each, with a column for every level of ``hierarchy``.
    hierarchy : list of int arrays, or pandas.DataFrame
        The public geography. With leaf counts: one parent array per level below the top,
        ``hierarchy[0]`` giving each unit of level 1 its unit of level 0 (the top: all
        zeros) down to ``hierarchy[-1]`` giving each leaf its unit above. With records: a
        frame with one row per leaf unit and one column per level, top level first (say
        ``state``, ``county``); every record must lie in one of its rows.
    epsilon : float, optional
        Required with Laplace noise; with Gaussian noise, together with ``delta``.
    split : sequence of float, optional
        Share of the budget for each level, the top (the total) first, summing to 1: of
        epsilon (Laplace noise) or of rho (Gaussian noise). Default: equal shares under
        Laplace noise; under Gaussian noise, the shares that minimise the sum over levels of
        the mean variance of a unit's least-squares estimate (:func:`default_split`).
    noise : {"laplace", "gaussian"}
        Laplace noise (pure epsilon-DP), or discrete Gaussian noise with a rho share per
        level (Census-style): level ``l`` gets ``sigma_l = 1 / sqrt(2 rho_l)``.
    delta : float, optional
        With Gaussian noise and ``epsilon``: in (0, 1). The release's rho is then the
        largest whose tight conversion fits (epsilon, delta)
        (:func:`dpfast.zcdp.rho_from_epsilon_delta`), split over the levels.
    rho : float, optional
        With Gaussian noise: the release's zCDP cost (> 0), split over the levels.
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`.

    Returns
    -------
    HierarchyRelease
        With records, ``labels`` holds each level's units and ``to_pandas()`` gives labelled
        Series.

    Raises
    ------
    TypeError
        ``data`` and ``hierarchy`` are not both frames (when either is), and
        ``hierarchy`` is not a list (or tuple) of parent arrays; ``split`` is not a
        sequence of real numbers; ``epsilon``, ``delta`` or ``rho`` is not a real number; ``noise`` is
        not a str; ``accountant`` is not an accountant; ``rng`` is not one of the accepted
        kinds; ``threads`` is not an int.
    ValueError
        Leaf counts that are not a non-empty 1-D array of integers (floats and strings
        included), hold a negative count, or sum beyond ``2**52``; a parent array of the wrong length or kind, with a negative
        index, leaving a unit without children, or not leading to one unit at the top;
        with frames: a geography without level columns or rows, or listing a leaf twice,
        records without a column for every level, or a record in no leaf unit (the
        message gives its position, never its values); ``split`` not one positive share
        per level summing to 1; ``noise`` neither ``"laplace"`` nor ``"gaussian"``, or
        privacy keywords that do not fit it (as for :func:`dpfast.tree_mechanism`), out of
        range, or giving a level a noise scale or sigma beyond the sampler's range; a
        release given in ``rho`` alone on an (epsilon, delta) accountant; ``threads``
        outside [1, 1024].
    BudgetExceededError
        The accountant cannot afford the release. (Every refusal here comes before
        anything is charged or drawn.)

    Examples
    --------
    2,000 people's counties, released for the nation, each state and each county under a
    rho budget (``rng=0`` makes the example reproducible: a seed is for tests and research
    only, never for a real release):

    >>> import numpy as np
    >>> import pandas as pd
    >>> import dpfast as dp
    >>> geography = pd.DataFrame({"state": ["CA", "CA", "CA", "NV", "NV"],
    ...                           "county": ["Alameda", "Kern", "Marin", "Clark", "Washoe"]})
    >>> gen = np.random.default_rng(5)
    >>> people = geography.iloc[gen.choice(5, 2000, p=[0.3, 0.2, 0.05, 0.35, 0.1])]
    >>> acct = dp.Accountant(rho=0.5)
    >>> rel = dp.census_hierarchy(people, geography, noise="gaussian", rho=0.5,
    ...                           accountant=acct, rng=0)
    >>> rel
    HierarchyRelease(units per level=[1, 2, 5], rho=0.5)
    >>> total, states, counties = rel.to_pandas()
    >>> print(counties)
    state  county
    CA     Alameda    613
           Kern       423
           Marin      103
    NV     Clark      664
           Washoe     198
    Name: count, dtype: int64
    >>> print(people.groupby(["state", "county"]).size())        # the exact counts
    state  county
    CA     Alameda    612
           Kern       422
           Marin      103
    NV     Clark      666
           Washoe     197
    dtype: int64
    >>> int(total.iloc[0]), states.tolist()                       # every sum holds
    (2001, [1139, 862])
    >>> [round(share, 3) for share in rel.split], acct.spent.rho  # rho per level
    ([0.263, 0.293, 0.444], 0.5)

    From leaf counts and parent arrays (two states over five counties), under Laplace
    noise:

    >>> county_counts = np.array([120, 30, 0, 55, 7])
    >>> state_of_county = np.array([0, 0, 1, 1, 1])
    >>> rel = dp.census_hierarchy(county_counts, [np.zeros(2, int), state_of_county],
    ...                           epsilon=1.0, rng=0, accountant=dp.Accountant(epsilon=1.0))
    >>> [level.tolist() for level in rel.counts]
    [[210], [148, 62], [120, 28, 0, 57, 5]]
    """
    func = "census_hierarchy"
    if isinstance(noise, str) and noise == "laplace" and epsilon is not None:
        _v.check_epsilon(epsilon, func)         # first, as before the noise keywords
    labels = None
    if is_frame_like(data) or is_frame_like(hierarchy):
        data, hierarchy, labels = _from_frames(data, hierarchy, func)
    leaves = _v.as_array(data, "data", func)
    if leaves.ndim != 1 or leaves.size == 0 or leaves.dtype.kind not in "iu":
        raise ValueError(f"The 'data' parameter of {func} must be a non-empty 1-D array of "
                         f"integer counts (one per leaf unit) or a frame of records. Got "
                         f"{_v.describe(leaves)} instead.")
    counts, _ = _v.check_data(leaves, "data", func)
    params = hierarchy_params(hierarchy, counts.size, epsilon, split, func, noise=noise,
                              delta=delta, rho=rho)
    plan = hierarchy_plan(counts, params, labels, func)
    cost = params.cost
    rel = Release(func, accountant, cost.epsilon, cost.delta, rng, threads, plan.size,
                  rho=cost.rho)
    return noisy_hierarchy(plan, rel.charge(), rel.threads)


class HierarchyParams:
    """What a hierarchy release knows before it sees a count: the checked parent arrays (top
    level first), each level's share of the budget, its noise (``noises``) and its noise
    scale (``scales``: the Laplace scale or the Gaussian sigma), and the release's cost
    ``cost`` (a :class:`Cost`: pass ``cost.epsilon``, ``cost.delta`` and ``rho=cost.rho`` to
    the release). Public."""

    def __init__(self, cost: Cost, parents: list[NDArray[np.int64]],
                 shares: tuple[float, ...], noises: tuple[Laplace | Gaussian, ...]):
        self.cost, self.parents, self.shares, self.noises = cost, parents, shares, noises
        self.epsilon, self.delta, self.rho = cost.epsilon, cost.delta, cost.rho
        self.scales = [n.scale for n in noises]


def hierarchy_params(hierarchy: Any, n_leaves: int, epsilon: float | None,
                     split: Sequence[float] | None, func: str, *, noise: str = "laplace",
                     delta: float | None = None, rho: float | None = None,
                     ) -> HierarchyParams:
    """The checks of a hierarchy release that read no count: the parent arrays, the privacy
    keywords (as :func:`dpfast.noise.measure` reads them), the split, and each level's
    noise."""
    par = _check_parents(hierarchy, n_leaves, func)
    levels = len(par) + 1
    laplace = isinstance(noise, str) and noise == "laplace"
    if laplace and epsilon is not None and rho is None:
        # Laplace's epsilon, shares and scales, checked (and worded) as they always were.
        eps = _v.check_epsilon(epsilon, func)
        shares = (1.0 / levels,) * levels if split is None else \
            _v.check_shares(split, levels, "split", func)
        scales = [_v.check_mechanism_scale(1.0, eps * s, func, high=MAX_DISCRETE_SCALE)
                  for s in shares]
    # The keywords' checks (a record is in one unit per level: l1 = levels, l2 =
    # sqrt(levels) at equal noise); the noise itself is made per level. (Gaussian noise is
    # checked as for real noise, whose (epsilon, delta) calibration is the quicker to
    # compute: only the keywords are used.)
    m = measure(func, noise, epsilon, delta, rho, l1=float(levels), l2=math.sqrt(levels),
                integer=laplace)
    if laplace:
        return HierarchyParams(Cost(eps, 0.0, None), par, shares,
                               tuple(Laplace(t, integer=True) for t in scales))
    # Gaussian: the whole release is rho-zCDP, rho the sum of the levels' shares.
    # Under (epsilon, delta): the largest rho whose tight conversion fits, one float below
    # (as an accountant holds that budget: a zCDP accountant of the same (epsilon, delta)
    # can pay for it). Levels of different sigmas are not one isotropic Gaussian, and a
    # tighter (epsilon, delta) calibration of several discrete Gaussians is not known here.
    total = m.rho if m.epsilon is None else \
        math.nextafter(rho_from_epsilon_delta(m.epsilon, m.delta), 0.0)
    assert total is not None
    shares = default_split(par, n_leaves) if split is None else \
        _v.check_shares(split, levels, "split", func)
    sigmas = _level_sigmas(total, shares)
    check_sigma(max(sigmas), func)
    return HierarchyParams(Cost(m.epsilon, m.delta, total), par, shares,
                           tuple(Gaussian(s, integer=True) for s in sigmas))


def _level_sigmas(rho: float, shares: tuple[float, ...]) -> list[float]:
    """Each level's sigma, ``1 / sqrt(2 rho share)``, made just large enough that the
    levels' exact costs ``sum 1 / (2 sigma_l**2)`` stay within ``rho`` read as the decimal
    it prints as (what the accountant charges): a record changes one count per level by 1,
    so level ``l`` costs ``1 / (2 sigma_l**2)`` and the levels' costs add (zCDP)."""
    target = Fraction(repr(rho))
    sigmas = [1.0 / math.sqrt(2.0 * rho * s) for s in shares]
    while sum(1 / (2 * Fraction(s) ** 2) for s in sigmas) > target:
        sigmas = [math.nextafter(s, math.inf) for s in sigmas]
    return sigmas


class HierarchyPlan:
    """A checked hierarchy release before its noise: the exact counts of every level (top
    first). No key, no budget: it may travel (a Dask task computes it where the counts
    are)."""

    def __init__(self, params: HierarchyParams, exact: list[NDArray[np.int64]],
                 labels: list[Any] | None):
        self.params, self.exact, self.labels = params, exact, labels
        self.size = sum(c.size for c in exact)


def hierarchy_plan(counts: NDArray[Any], params: HierarchyParams, labels: list[Any] | None,
                   func: str) -> HierarchyPlan:
    """The checks that read the leaf counts (integer, finite, one per leaf), then the exact
    counts of every level."""
    negative = np.flatnonzero(counts < 0)
    if negative.size:
        raise ValueError(f"The 'data' parameter of {func} must hold counts >= 0. The count "
                         f"at index {int(negative[0])} is negative.")
    if counts.sum(dtype=np.float64) > 2**52 or counts.sum(dtype=np.int64) > 2**52:
        raise ValueError(f"The 'data' parameter of {func} must hold counts summing to at "
                         "most 2**52. These counts sum to more (they are not shown).")
    exact = _level_counts(np.asarray(counts, dtype=np.int64), params.parents)   # top first
    return HierarchyPlan(params, exact, labels)


def noisy_hierarchy(plan: HierarchyPlan, key: _native.Key, threads: int) -> HierarchyRelease:
    """The release of a planned hierarchy under ``key`` (the release's, handed out by its
    charge): each level's noise (discrete Laplace or discrete Gaussian), then the consistent
    least squares weighted by each level's noise variance and the integer rounding
    (post-processing; the plan's counts are overwritten)."""
    p = plan.params
    _noise_levels(key, threads, plan.exact, p.noises)
    var = [n.variance for n in p.noises]
    est, est_var = _least_squares(plan.exact, var, p.parents)
    return HierarchyRelease(_round_top_down(est, p.parents), est, est_var, p.parents,
                            p.epsilon, p.shares, plan.labels, delta=p.delta, rho=p.rho,
                            noise="gaussian" if p.rho is not None else "laplace",
                            scales=tuple(p.scales))


def _level_counts(leaves: NDArray[np.int64], parents: list[NDArray[np.int64]],
                  ) -> list[NDArray[np.int64]]:
    """Exact counts of every level, top first (sums of the leaves up the tree)."""
    out = [leaves.copy()]
    for p in parents[::-1]:
        out.append(np.bincount(p, weights=out[-1]).astype(np.int64))
    return out[::-1]


def _noise_levels(key: _native.Key, threads: int, levels: list[NDArray[np.int64]],
                  noises: tuple[Laplace | Gaussian, ...]) -> None:
    """Integer noise added in place, each level with its own noise, all under the one key:
    level after level on consecutive blocks of the key's cells, each level from a fresh
    chunk (distinct chunks read distinct streams: independent noise; the top level is drawn
    as a one-level release under the key would be). The levels are int64 (the discrete
    Gaussian kernel's cells today)."""
    chunk = 0
    for c, noise in zip(levels, noises):
        noise.fill(key, threads, c, c, chunk)
        chunk += -(-c.size // _native.CHUNK)


def _least_squares(noisy: list[NDArray[np.int64]], var: list[float],
                   parents: list[NDArray[np.int64]],
                   ) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """Consistent weighted least-squares estimates and their exact variances.

    Bottom-up, ``z`` is each unit's estimate from its own subtree and ``v`` its variance;
    ``s`` and ``vs`` the sum of a unit's children's ``z`` and its variance. Top-down, a
    child gets ``v / vs`` of its parent's gap (final estimate minus ``s``), and its final
    variance is ``v - (v / vs)^2 (vs - parent's final variance)`` (the smoother's)."""
    depth = len(noisy) - 1
    z: list[Any] = [None] * (depth + 1)
    v: list[Any] = [None] * (depth + 1)           # an array, or one float for a whole level
    s: list[Any] = [None] * depth
    vs: list[Any] = [None] * depth
    z[depth] = noisy[depth].astype(np.float64)
    v[depth] = var[depth]
    for level in range(depth - 1, -1, -1):                 # bottom-up
        p = parents[level]
        s[level] = np.bincount(p, weights=z[level + 1])
        vs[level] = (np.bincount(p) * v[level + 1] if isinstance(v[level + 1], float)
                     else np.bincount(p, weights=v[level + 1]))
        w_own, w_sum = 1.0 / var[level], 1.0 / vs[level]
        v[level] = 1.0 / (w_own + w_sum)
        z[level] = (noisy[level] * w_own + s[level] * w_sum) * v[level]
    est, est_var = [z[0]], [v[0]]
    for level in range(depth):                             # top-down
        p = parents[level]
        gap = (est[level] - s[level]) / vs[level]           # per parent
        shrink = (vs[level] - est_var[level]) / vs[level] ** 2
        est.append(z[level + 1] + v[level + 1] * gap[p])
        est_var.append(v[level + 1] - v[level + 1] ** 2 * shrink[p])
    return est, est_var


def _round_top_down(est: list[NDArray[np.float64]], parents: list[NDArray[np.int64]],
                    ) -> list[NDArray[np.int64]]:
    """Non-negative integers with every parent the sum of its children (see the module)."""
    out = [np.array([max(0, round(float(est[0][0])))], dtype=np.int64)]
    for level, p in enumerate(parents):
        out.append(_share_out(out[level], np.maximum(est[level + 1], 0.0), p))
    return out


def _share_out(totals: NDArray[np.int64], weights: NDArray[np.float64],
               parent: NDArray[np.int64]) -> NDArray[np.int64]:
    """Integers >= 0 per child, summing exactly to its parent's total, each within 1 of its
    share of the total in proportion to the weights (equal shares where a parent's weights
    are all 0): the rounded cumulative shares of each parent's children, differenced."""
    order = None
    if parent.size > 1 and (np.diff(parent) < 0).any():
        order = np.argsort(parent, kind="stable")        # children grouped by parent
        parent, weights = parent[order], weights[order]
    kids = np.bincount(parent, minlength=totals.size)
    end = np.cumsum(kids)
    start = end - kids
    cum = np.cumsum(weights)
    base = cum[start] - weights[start]                    # cumulative weight before a group
    wsum = cum[end - 1] - base
    zero = wsum <= 0                                      # all weights 0: equal shares
    if zero.any():
        rank = np.arange(parent.size) - start[parent]
        cum = np.where(zero[parent], rank + 1.0, cum - base[parent])
        wsum = np.where(zero, kids, wsum)
    else:
        cum -= base[parent]                               # non-decreasing within a group
    total = totals.astype(np.float64)
    cum *= (total / wsum)[parent]
    np.floor(cum + 0.5, out=cum)
    np.minimum(cum, total[parent], out=cum)
    cum[end - 1] = total                                  # each group ends at its total
    out = np.empty(parent.size, dtype=np.int64)
    out[0] = cum[0]
    np.subtract(cum[1:], cum[:-1], out=out[1:], casting="unsafe")
    out[start] = cum[start]
    if order is not None:
        unsorted = np.empty_like(out)
        unsorted[order] = out
        out = unsorted
    return out


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
    return _SplitObjective(parents, n_leaves)(np.asarray(shares, dtype=np.float64))


class _SplitObjective:
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
        recursion of :func:`_least_squares`' variances, and (``gradient``) its derivatives
        in ``w``, by the same recursion run backwards (reverse mode)."""
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
    (:meth:`_SplitObjective.value_and_gradient`, reverse mode); every evaluation reads only
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
    f = _SplitObjective(parents, n_leaves)
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
