"""Private selection: report noisy max, the exponential mechanism, permute-and-flip, top-k.

Each function releases only an index (or indices), never the noisy scores. Utilities are
shifted by their maximum before anything is scaled, so utilities spanning +-1e300 neither
overflow nor swamp the noise, and ``-inf`` marks an excluded candidate.

Which noise gives which mechanism (Dwork & Roth section 3.3-3.4, with the corrections of
Ding et al. 2021 and McKenna & Sheldon 2020; checked by simulation in the tests):

- Laplace noise of scale ``2 D/eps`` (``D/eps`` for monotone utilities such as counts):
  Report Noisy Max, eps-DP.
- One-sided exponential noise of the same scale: *permute-and-flip* -- not the exponential
  mechanism, although Theorem 3.13 of the textbook says so. Never worse than the exponential
  mechanism in expected utility.
- Gumbel noise of the same scale: exactly the exponential mechanism,
  ``P[r] proportional to exp(eps u_r / (2 D))`` (``eps u_r / D`` when monotone).

Floating point. All noise comes from the full-precision uniform ``U`` (a second, independent
uniform ``V`` where noted). Laplace and exponential noise use ``L = -ln U``, computed with an
absolute error of a few units of 2**-53 (see :mod:`dpfast.samplers`). Gumbel noise is ``-ln E``
with ``E`` an Exp(1) variable computed to *relative* accuracy: one bit picks ``E <= ln 2``,
computed as ``-log1p(-V/2)`` (``V/2`` itself below 2**-60), or ``E > ln 2``, computed as
``ln 2 + L``; so the Gumbel's upper tail reaches about 762 scales instead of being cut off at
``-ln(2**-53) = 36.7`` as ``-ln(-ln U)`` would be. Each noisy score is therefore the
exact-noise score of a utility moved by at most ``d`` scales, ``d`` about
``(|u - max u| / scale + 800) * 2**-50``. Laplace and exponential noise have log-densities
that are 1-Lipschitz in units of the scale, so such a shift changes each output probability
by a factor at most ``exp(2d)``; comparing two neighbouring datasets pays it twice, and the
loss is at most ``eps + 4d``: below 1e-11 for utilities within 1e3 scales of the maximum.
The Gumbel log-density's slope is at most ``E <= 763`` over the values the sampler can
produce, giving ``eps + 4 * 763 * d`` (below 1e-8 in the same setting); noise beyond the
sampler's range (probability below 2**-1000) makes these ``(eps', delta)`` guarantees with
a negligible ``delta``.

``exponential_mechanism`` samples by a two-stage inverse CDF: a chunk of 65,536 candidates by
the cumulative chunk sums at one uniform, then a candidate by the chunk's own running sum at
a second uniform. Weights ``exp(a (u - max u))`` are computed to about an ulp, but a
candidate whose weight is below about ``2**-52`` of the running sum at its position can get
a probability off by a large factor: the output distribution is within total variation about
``n * 2**-52`` of the exact one, so this is ``(eps, delta)``-DP with ``delta`` about
``(1 + e**eps) * n * 2**-52``, not eps-DP. ``report_noisy_max(..., noise="gumbel")`` draws
from the same distribution with the bounds of the previous paragraph instead.

Timing. Subnormal arithmetic is much slower than normal arithmetic on many CPUs, so a kernel
that met subnormal values would take longer on some utilities than on others. The kernels
flush subnormal utilities and subnormal scaled differences ``(u - max u) * eps/(2 D)`` to 0
with bit operations, and the exponential mechanism's weights ``exp(x)`` to 0 below
``x = -708`` (computing ``exp(-708)`` there instead, so that every weight costs the same):
this moves each noisy score by less than 2**-1022 and each candidate's probability by less
than ``2**-1021`` of the total, far inside the bounds above. ``bench/data_timing.py`` times
every selection mechanism on utilities in each regime.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .. import _native
from .. import noise as _noise
from .. import validation as _v
from .._release import release

if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any, Literal, TypeVar

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike

    # What an ``rng=`` argument may be (see dpfast.rng.resolve_rng); None is the default.
    from ..rng import RngLike
    _T = TypeVar("_T")

__all__ = ["report_noisy_max", "exponential_mechanism", "permute_and_flip", "top_k",
           "exponential_mechanism_utility_gap"]

_NOISE = {"laplace": _native.NOISE_LAPLACE, "exponential": _native.NOISE_EXPONENTIAL,
          "gumbel": _native.NOISE_GUMBEL}


# Utility dtypes the kernels read in place (converting a batch at a time); others are
# converted to float64 first.
_KERNEL_DTYPES = (np.float64, np.float32, np.int64, np.int32)
# Elements per block when counting candidates without a temporary of the input's size.
_BLOCK = 1 << 20


def _utilities(values: ArrayLike, name: str, func: str) -> tuple[NDArray[Any], float]:
    """1-d utilities (float64, float32, int64 or int32, C-contiguous, native byte order: no
    copy of such an array) and their maximum, which must be finite."""
    arr = _v.as_array(values, name, func)
    if arr.dtype.kind not in "iuf":
        arr, _ = _v.check_data(values, name, func)   # raises the documented error
    if arr.dtype.type not in _KERNEL_DTYPES:
        arr = arr.astype(np.float64)
    u = arr if arr.flags.c_contiguous and arr.dtype.isnative else \
        np.asarray(arr, dtype=arr.dtype.newbyteorder("="), order="C")
    if u.ndim != 1:
        raise ValueError(f"The {name!r} parameter of {func} must be 1-d. Got an array of "
                         f"shape {u.shape} instead.")
    if u.size == 0:
        raise ValueError(f"The {name!r} parameter of {func} must have at least one "
                         "candidate. Got an empty array instead.")
    # The largest utility, NaN if any is NaN: numpy's max streams large arrays fastest, the
    # compiled range scan has the least overhead on small ones.
    top = float(u.max() if u.size > _BLOCK else _v.value_range(u)[1])
    if math.isnan(top) or top == math.inf:
        bad = np.isnan(u) | (u == np.inf)
        i = int(np.argmax(bad))
        what = "is NaN" if math.isnan(u[i]) else "is +inf"
        raise ValueError(f"The {name!r} parameter of {func} must not contain NaN or +inf "
                         f"(-inf excludes a candidate). Got an entry at {_v.position(i)} "
                         f"{what} instead.")
    if top == -math.inf:
        raise ValueError(f"The {name!r} parameter of {func} excludes every candidate "
                         "(all -inf).")
    return u, top


def _available(u: NDArray[Any]) -> int:
    """How many candidates are not excluded (-inf), block by block."""
    if u.dtype.kind != "f":
        return u.size
    return sum(int(np.count_nonzero(u[i:i + _BLOCK] > -np.inf))
               for i in range(0, u.size, _BLOCK))


def _noise_scale(func: str, epsilon: float, sensitivity: float,
                 monotonic: bool) -> tuple[float, float]:
    """epsilon and the noise scale of every selection mechanism here: 2D/eps, or D/eps when
    monotone (Laplace, exponential and Gumbel noise alike)."""
    eps = _v.check_epsilon(epsilon, func)
    d = _v.check_sensitivity(sensitivity, func)
    mono = _v.check_bool(monotonic, "monotonic", func)
    # Kept in [2^-1022, 2^1001], so 1/scale is finite and positive (no 0 * -inf = NaN
    # weights).
    scale = (1.0 if mono else 2.0) * _v.check_mechanism_scale(d, eps, func, low=2.0**-1022)
    return eps, scale


def report_noisy_max(scores: ArrayLike, *, epsilon: float, sensitivity: float = 1,
                     noise: Literal["laplace", "exponential", "gumbel"] = "laplace",
                     monotonic: bool = False, accountant: AccountantLike | None = None,
                     rng: RngLike = None, threads: int | None = None) -> int:
    """report_noisy_max(scores, *, epsilon, sensitivity=1, noise="laplace", monotonic=False, accountant=None, rng=None, threads=None)

    Index of the largest score after independent noise is added to each (only the index is
    released).

    Parameters
    ----------
    scores : 1-d array_like of float
        One score per candidate; ``-inf`` excludes a candidate; NaN and ``+inf`` are errors.
    epsilon : float
        Privacy parameter, > 0, charged before any noise is drawn.
    sensitivity : float, optional
        How much one person can change any single score, > 0.
    noise : {"laplace", "exponential", "gumbel"}
        Laplace: Report Noisy Max. Exponential: report one-sided noisy arg-max, which is
        permute-and-flip. Gumbel: exactly the exponential mechanism.
    monotonic : bool, optional
        True when adding a person can only raise (or only lower) all scores, e.g. counts;
        halves the noise scale (``D/eps`` instead of ``2 D/eps``).
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism` (an int seed is for tests and research only).

    Returns
    -------
    int
        The index of the selected candidate (never an excluded one).

    Raises
    ------
    TypeError
        If ``epsilon`` or ``sensitivity`` is not a real number (a bool included) or
        ``monotonic`` is not a bool; ``scores`` is not numeric data (booleans, strings,
        objects, a masked array); ``accountant`` is not an accountant; ``rng`` is not one of
        the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0, or their noise scale
        ``sensitivity/epsilon`` is outside [2^-1022, 2^1000]; ``scores`` is ragged, not 1-d,
        empty, holds a NaN or ``+inf`` (the message gives its position, not the data) or
        excludes every candidate (all ``-inf``); ``noise`` is not one of the three names;
        ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. Every check above runs before anything
        is charged or drawn.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=2.0)
    >>> votes = [49, 25, 6, 2]        # sports: football, basketball, hockey, curling
    >>> dp.report_noisy_max(votes, epsilon=1.0, monotonic=True, accountant=acct,
    ...                     rng=1)   # a seed: reproducible, for tests only
    0
    >>> acct.spent
    (1.0, 0.0)
    """
    func = "report_noisy_max"
    if not isinstance(noise, str) or noise not in _NOISE:
        raise ValueError(f"The 'noise' parameter of {func} must be one of "
                         f"{sorted(_NOISE)}. Got {noise!r} instead.")
    eps, scale = _noise_scale(func, epsilon, sensitivity, monotonic)
    u, umax = _utilities(scores, "scores", func)
    return release(func, accountant, eps, 0.0, rng, threads, u.size, _noise.noisy_argmax, u,
                   _NOISE[noise], umax, 1.0 / scale)


def permute_and_flip(utilities: ArrayLike, *, epsilon: float, sensitivity: float = 1,
                     monotonic: bool = False, accountant: AccountantLike | None = None,
                     rng: RngLike = None, threads: int | None = None) -> int:
    """permute_and_flip(utilities, *, epsilon, sensitivity=1, monotonic=False, accountant=None, rng=None, threads=None)

    The permute-and-flip mechanism (McKenna & Sheldon 2020): visit candidates in random
    order and accept ``r`` with probability ``exp(eps (u_r - max u) / (2 D))``.

    Drawn as the arg-max of ``u_r`` plus one-sided exponential noise of scale ``2 D/eps``
    (``D/eps`` when monotone), which has exactly the same output distribution
    (Ding et al. 2021) and costs one pass. eps-DP; never worse than the exponential
    mechanism in expected utility.

    Parameters
    ----------
    utilities : 1-d array_like of float
        One utility per candidate; ``-inf`` excludes a candidate; NaN and ``+inf`` are
        errors.
    epsilon, sensitivity, monotonic, accountant, rng, threads
        As for :func:`report_noisy_max`.

    Returns
    -------
    int
        The index of the selected candidate (never an excluded one).

    Raises
    ------
    TypeError
        If ``epsilon`` or ``sensitivity`` is not a real number (a bool included) or
        ``monotonic`` is not a bool; ``utilities`` is not numeric data (booleans, strings,
        objects, a masked array); ``accountant`` is not an accountant; ``rng`` is not one of
        the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0, or their noise scale
        ``sensitivity/epsilon`` is outside [2^-1022, 2^1000]; ``utilities`` is ragged, not
        1-d, empty, holds a NaN or ``+inf`` (the message gives its position, not the data)
        or excludes every candidate (all ``-inf``); ``threads`` is outside [1, 1024]; or
        ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. Every check above runs before anything
        is charged or drawn.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> dp.permute_and_flip([49, 25, 6, 2], epsilon=1.0, monotonic=True, accountant=acct,
    ...                     rng=2)   # a seed: reproducible, for tests only
    0
    >>> acct.spent
    (1.0, 0.0)
    """
    func = "permute_and_flip"
    eps, scale = _noise_scale(func, epsilon, sensitivity, monotonic)
    u, umax = _utilities(utilities, "utilities", func)
    return release(func, accountant, eps, 0.0, rng, threads, u.size, _noise.noisy_argmax, u,
                   _native.NOISE_EXPONENTIAL, umax, 1.0 / scale)


def exponential_mechanism(utilities: ArrayLike, *, epsilon: float, sensitivity: float = 1,
                          monotonic: bool = False, candidates: Collection[_T] | None = None,
                          accountant: AccountantLike | None = None, rng: RngLike = None,
                          threads: int | None = None) -> int | _T:
    """exponential_mechanism(utilities, *, epsilon, sensitivity=1, monotonic=False, candidates=None, accountant=None, rng=None, threads=None)

    Select candidate ``r`` with probability proportional to ``exp(eps u_r / (2 D))``
    (``exp(eps u_r / D)`` when monotone).

    Computed without exponentiating raw utilities: one pass for the maximum, one for the
    chunk sums of ``exp(a (u - max))`` (threads over chunks of 65,536, summed in chunk
    order), one full-precision uniform, and a scan of a single chunk to find the index. The
    result for a given ``rng`` state does not depend on the number of threads.

    Parameters
    ----------
    utilities : 1-d array_like of float
        ``-inf`` excludes a candidate; NaN and ``+inf`` are errors; all excluded is an error.
    candidates : sequence, optional
        If given (same length, ordered: not a set, a mapping or a string), the selected
        element is returned instead of its index.
    epsilon, sensitivity, monotonic, accountant, rng, threads
        As for :func:`report_noisy_max`.

    Returns
    -------
    int or element of ``candidates``
        The selected candidate's index, or the candidate itself.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``sensitivity`` is not a real number (a bool included) or
        ``monotonic`` is not a bool; ``utilities`` is not numeric data (booleans, strings,
        objects, a masked array); ``candidates`` is not a sequence (a set, a mapping, a
        string); ``accountant`` is not an accountant; ``rng`` is not one of the accepted
        kinds; or ``threads`` is not an int.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0, or their noise scale
        ``sensitivity/epsilon`` is outside [2^-1022, 2^1000]; ``utilities`` is ragged, not
        1-d, empty, holds a NaN or ``+inf`` (the message gives its position, not the data)
        or excludes every candidate (all ``-inf``); ``candidates`` has not one element per
        utility; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. Every check above runs before anything
        is charged or drawn.

    Notes
    -----
    Utility guarantee: :func:`exponential_mechanism_utility_gap`.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> dp.exponential_mechanism([49, 25, 6, 2], epsilon=1.0, monotonic=True,
    ...                          candidates=["football", "basketball", "hockey", "curling"],
    ...                          accountant=acct, rng=3)   # a seed: for tests only
    'football'
    >>> acct.spent
    (1.0, 0.0)
    """
    func = "exponential_mechanism"
    eps, scale = _noise_scale(func, epsilon, sensitivity, monotonic)
    u, umax = _utilities(utilities, "utilities", func)
    cand = None
    if candidates is not None:
        # Sets are unordered: which element an index names would depend on hashing.
        if isinstance(candidates, (str, bytes, Mapping, set, frozenset)) \
                or not hasattr(candidates, "__len__"):
            raise TypeError(f"The 'candidates' parameter of {func} must be a sequence with "
                            f"one element per utility. Got {_v.describe(candidates)} "
                            "instead.")
        cand = candidates if isinstance(candidates, np.ndarray) else list(candidates)
    if cand is not None and len(cand) != u.size:
        raise ValueError(f"The 'candidates' parameter of {func} must have one element per "
                         f"utility ({u.size}). Got {len(cand)} instead.")
    index = release(func, accountant, eps, 0.0, rng, threads, u.size,
                    _noise.exponential_mechanism, u, umax, 1.0 / scale)
    return cand[index] if cand is not None else index


def top_k(scores: ArrayLike, k: int | np.integer[Any], *, epsilon: float,
          sensitivity: float = 1, monotonic: bool = False, accountant: AccountantLike | None = None,
          rng: RngLike = None, threads: int | None = None) -> NDArray[np.int64]:
    """top_k(scores, k, *, epsilon, sensitivity=1, monotonic=False, accountant=None, rng=None, threads=None)

    Indices of ``k`` candidates, best first, by one-shot Gumbel top-k.

    Adds Gumbel noise of scale ``2 D k / eps`` (``D k / eps`` when monotone) to every score
    once and returns the ``k`` largest. This equals, in distribution, ``k`` sequential draws
    without replacement of the exponential mechanism at ``eps / k`` each (Durfee & Rogers
    2019), so by composition the whole release is eps-DP: ``epsilon`` is the total, and it
    is what the accountant is charged.

    Parameters
    ----------
    scores : 1-d array_like of float
        One score per candidate; ``-inf`` excludes a candidate; NaN and ``+inf`` are errors.
    k : int
        How many candidates to select, in [1, the number not excluded].
    epsilon : float
        Total privacy parameter of the ``k`` selections, > 0.
    sensitivity, monotonic, accountant, rng, threads
        As for :func:`report_noisy_max`.

    Returns
    -------
    ndarray of int64
        The ``k`` selected indices, best (largest noisy score) first.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``sensitivity`` is not a real number (a bool included) or
        ``monotonic`` is not a bool; ``scores`` is not numeric data (booleans, strings,
        objects, a masked array); ``k`` is not an int (a bool included); ``accountant`` is
        not an accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not
        an int.
    ValueError
        If ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0, or their noise scale
        ``sensitivity/epsilon`` is outside [2^-1022, 2^1000]; ``scores`` is ragged, not 1-d,
        empty, holds a NaN or ``+inf`` (the message gives its position, not the data) or
        excludes every candidate (all ``-inf``); ``k`` is outside [1, the number of
        candidates not excluded] or ``k`` times the noise scale exceeds 2**1001; ``threads``
        is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. Every check above runs before anything
        is charged or drawn.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=10.0)
    >>> dp.top_k([100, 80, 60, 1, 0], 2, epsilon=10.0, monotonic=True,
    ...          accountant=acct, rng=4).tolist()   # a seed: for tests only
    [0, 1]
    >>> acct.spent
    (10.0, 0.0)
    """
    func = "top_k"
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"The 'k' parameter of {func} must be an int >= 1. Got {k!r} instead.")
    eps, scale = _noise_scale(func, epsilon, sensitivity, monotonic)
    u, umax = _utilities(scores, "scores", func)
    available = _available(u)
    if not 1 <= k <= available:
        raise ValueError(f"The 'k' parameter of {func} must be in [1, {available}] (the "
                         f"candidates not excluded). Got {k!r} instead.")
    if scale * int(k) > 2.0**1001:
        # Beyond it 1 / (scale k) could be 0, and 0 * -inf would pick excluded candidates.
        raise ValueError(f"The 'epsilon', 'sensitivity' and 'k' parameters of {func} must give "
                         f"a per-pick noise scale k * scale <= 2**1001. Got k={k!r}, "
                         f"epsilon={epsilon!r}, sensitivity={sensitivity!r} instead.")
    # Each thread keeps its k best in a heap: memory O(k threads), not O(len(scores)).
    return release(func, accountant, eps, 0.0, rng, threads, u.size, _noise.noisy_top_k, u,
                   _native.NOISE_GUMBEL, umax, 1.0 / (scale * int(k)), int(k))


def exponential_mechanism_utility_gap(n_candidates: int | np.integer[Any], *, epsilon: float,
                                      sensitivity: float = 1, beta: float = 0.05,
                                      monotonic: bool = False) -> float:
    """exponential_mechanism_utility_gap(n_candidates, *, epsilon, sensitivity=1, beta=0.05, monotonic=False)

    With probability at least ``1 - beta`` the exponential mechanism's choice has utility
    within this gap of the best: ``(2 D / eps) ln(|R| / beta)`` (``D / eps`` times that log
    when monotone) -- Dwork & Roth Theorem 3.11 / Corollary 3.12 with ``t = ln(1/beta)``.
    The same holds for Gumbel report-noisy-max (same distribution). Nothing is charged or
    drawn.

    Parameters
    ----------
    n_candidates : int
        The number of candidates ``|R|``, >= 1.
    epsilon : float
        Privacy parameter of the selection, > 0.
    sensitivity : float, optional
        The utilities' sensitivity ``D``, > 0.
    beta : float, optional
        Failure probability, in (0, 1).
    monotonic : bool, optional
        Whether the selection used monotone utilities (half the gap).

    Returns
    -------
    float
        The utility gap.

    Raises
    ------
    TypeError
        If ``n_candidates`` is not an int (a bool included), ``epsilon``, ``sensitivity`` or
        ``beta`` is not a real number, or ``monotonic`` is not a bool.
    ValueError
        If ``n_candidates`` < 1; ``epsilon`` or ``sensitivity`` is NaN, infinite or <= 0; or
        ``beta`` is not in (0, 1).

    Examples
    --------
    >>> import dpfast as dp
    >>> round(dp.exponential_mechanism_utility_gap(1000, epsilon=1.0), 2)
    19.81
    >>> round(dp.exponential_mechanism_utility_gap(1000, epsilon=1.0, monotonic=True), 2)
    9.9
    """
    func = "exponential_mechanism_utility_gap"
    if isinstance(n_candidates, (bool, np.bool_)) or not isinstance(n_candidates,
                                                                     (int, np.integer)):
        raise TypeError(f"The 'n_candidates' parameter of {func} must be an int >= 1. "
                        f"Got {n_candidates!r} instead.")
    if n_candidates < 1:
        raise ValueError(f"The 'n_candidates' parameter of {func} must be an int >= 1. "
                         f"Got {n_candidates!r} instead.")
    eps = _v.check_epsilon(epsilon, func)
    d = _v.check_sensitivity(sensitivity, func)
    b = _v.check_real(beta, "beta", func, low=0.0, high=1.0)
    mono = _v.check_bool(monotonic, "monotonic", func)
    return (1.0 if mono else 2.0) * d / eps * math.log(n_candidates / b)
