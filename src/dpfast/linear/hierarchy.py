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
from .hierarchy_estimates import least_squares, level_counts, round_top_down
from .hierarchy_input import check_parents, leaves_from_frames
from .hierarchy_release import HierarchyRelease
from .hierarchy_split import default_split, split_objective
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
        data, hierarchy, labels = leaves_from_frames(data, hierarchy, func)
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
    par = check_parents(hierarchy, n_leaves, func)
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
    exact = level_counts(np.asarray(counts, dtype=np.int64), params.parents)   # top first
    return HierarchyPlan(params, exact, labels)


def noisy_hierarchy(plan: HierarchyPlan, key: _native.Key, threads: int) -> HierarchyRelease:
    """The release of a planned hierarchy under ``key`` (the release's, handed out by its
    charge): each level's noise (discrete Laplace or discrete Gaussian), then the consistent
    least squares weighted by each level's noise variance and the integer rounding
    (post-processing; the plan's counts are overwritten)."""
    p = plan.params
    _noise_levels(key, threads, plan.exact, p.noises)
    var = [n.variance for n in p.noises]
    est, est_var = least_squares(plan.exact, var, p.parents)
    return HierarchyRelease(round_top_down(est, p.parents), est, est_var, p.parents,
                            p.epsilon, p.shares, plan.labels, delta=p.delta, rho=p.rho,
                            noise="gaussian" if p.rho is not None else "laplace",
                            scales=tuple(p.scales))


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
