"""Randomized response: local differential privacy for yes/no and categorical answers.

Each respondent's answer is randomized on its own, so the guarantee is per person and holds
even against whoever collects the responses (local DP). One call charges the accountant the
scheme's epsilon once: each person's data enters one response, and responses of different
people are independent, so the release of all of them is epsilon-DP for each person.

Schemes
-------
Two-coin (``p=``), the textbook scheme: with probability ``p`` tell the truth; otherwise
answer 1 with probability ``p`` (a second coin). The response probabilities are
``P[1 | 0] = (1 - p) p`` and ``P[1 | 1] = p + (1 - p) p``, so the privacy loss is the log of
the largest of ``P[1|1]/P[1|0] = (2 - p)/(1 - p)`` and ``P[0|0]/P[0|1] = 1 + p/(1 - p)**2``:
``ln(1 + p/(1 - p)**2)`` when ``p >= 1/2`` (``p = 0.5`` gives ``ln 3``, ``p = 0.8`` gives
``ln 21``) and ``ln((2 - p)/(1 - p))`` below (see :func:`rr_epsilon`).

Symmetric (``epsilon=``): keep the true bit with probability ``e**eps / (1 + e**eps)``, else
flip it; exactly ``eps``-DP.

k-ary (generalized) randomized response (:func:`randomized_response_categorical`): keep the
true category with probability ``e**eps / (e**eps + k - 1)``, else report one of the other
``k - 1`` uniformly; exactly ``eps``-DP.

Floating point
--------------
Every coin compares a full-precision uniform ``U`` (:func:`dpfast.uniform`) with a double
threshold ``t``; since ``U`` is the real uniform rounded down to a double, ``P[U < t] = t``
exactly, so the response probabilities are exactly the formulas above evaluated at the
doubles used. The keep probability for ``epsilon=`` is chosen as a double whose exact odds
ratio does not exceed ``e**eps`` (a few units of 2**-53 below the real-number value), and
:func:`rr_epsilon` rounds the exact log-ratio *up*, so the charged epsilon is never below the
mechanism's true privacy loss. The uniform choice among the other ``k - 1`` categories uses
``numpy.random.Generator(ChaCha20).integers``, which is exactly uniform (rejection sampling
on the ChaCha20 keystream) where ``floor(U * (k - 1))`` would not be.

Estimators
----------
Analysing responses is post-processing: it costs no budget. :func:`rr_estimate_proportion` and
:func:`rr_estimate_counts` invert the response probabilities to get unbiased estimates of
the true proportion of ones / true category counts, and return an unbiased estimate of
their variance. The variance is over the mechanism's randomness with the respondents'
true answers fixed (what a DP release of *this* dataset is uncertain about); if the
respondents are a random sample of a larger population and the population proportion is
the target, add the sampling variance ``pi (1 - pi) / n`` as well.
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from .. import validation as _v
from .._release import Keys, release
from .rr_categorical import (
    randomized_response_categorical,
    rr_categorical_probabilities,
    rr_estimate_counts,
)
from .rr_coins import CHUNK, keep_probability, uniforms

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike

    # What an ``rng=`` argument may be (see dpfast.rng.resolve_rng); None is the default.
    from ..rng import RngLike
    from .rr_coins import IntLike

__all__ = [
    "randomized_response",
    "randomized_response_categorical",
    "rr_epsilon",
    "rr_response_probabilities",
    "rr_categorical_probabilities",
    "rr_estimate_proportion",
    "rr_proportion_variance",
    "rr_estimate_counts",
]


# -- privacy parameters ----------------------------------------------------------------------

def _ratio_bits(p: float) -> Fraction:
    """Exact (as fractions of the double p) largest response-probability ratio of the
    two-coin scheme."""
    f = Fraction(p)
    q = 1 - f
    p1_0, p1_1 = q * f, f + q * f           # P[1|0], P[1|1]
    p0_1, p0_0 = 1 - p1_1, 1 - p1_0         # P[0|1] = (1-p)^2, P[0|0]
    return max(p1_1 / p1_0, p0_0 / p0_1)


def _log_up(ratio: Fraction) -> float:
    """A double >= ln(ratio) for an exact Fraction ratio > 1, at most a few ulps above."""
    r = float(ratio)
    if Fraction(r) < ratio:                 # make r >= ratio before taking the log
        r = math.nextafter(r, math.inf)
    # libm's log is within 1 ulp; one step up covers it, a second covers a 1-ulp libm.
    return math.nextafter(math.nextafter(math.log(r), math.inf), math.inf)


def rr_epsilon(p: float) -> float:
    """rr_epsilon(p)

    The privacy loss of the two-coin randomized response with coin probability ``p``.

    Parameters
    ----------
    p : float
        In (0, 1): the probability of telling the truth, and of answering 1 when not.

    Returns
    -------
    float
        ``ln`` of the largest ratio of response probabilities between a true 0 and a true 1:
        ``ln(1 + p/(1 - p)**2)`` for ``p >= 1/2``, ``ln((2 - p)/(1 - p))`` below. Computed
        from the exact ratio at the double ``p`` and rounded up (by at most a few units in
        the last place), so it is never below the true loss. This is what
        :func:`randomized_response` charges for ``p=``.

    Raises
    ------
    TypeError
        ``p`` is not a real number (a bool included).
    ValueError
        ``p`` is outside (0, 1) or NaN (``p = 1`` always tells the truth; ``p = 0`` always
        answers 0).

    Examples
    --------
    >>> import math
    >>> import dpfast as dp
    >>> math.isclose(dp.rr_epsilon(0.5), math.log(3), rel_tol=1e-15)
    True
    >>> math.isclose(dp.rr_epsilon(0.8), math.log(21), rel_tol=1e-14)
    True
    >>> round(dp.rr_epsilon(0.25), 6)         # ln(7/3): below 1/2 the "1" answer limits
    0.847298
    """
    x = _check_p(p, "rr_epsilon")
    return _log_up(_ratio_bits(x))


def _check_p(p: object, func: str) -> float:
    # p = 1 always tells the truth (no privacy); p = 0 always answers 0 (useless, and the
    # 0/0 ratio of the "1" response is undefined): both excluded.
    return _v.check_real(p, "p", func, low=0.0, high=1.0)


def _scheme(p: float | None, epsilon: float | None,
            func: str) -> tuple[float, float, float, float, float]:
    """Validated binary scheme, exactly one of p/epsilon given:
    (P[1|0], P[1|1], P[1|1] - P[1|0], epsilon to charge, threshold of the coins)."""
    if (p is None) == (epsilon is None):
        raise ValueError(f"{func} needs exactly one of the 'p' and 'epsilon' parameters. "
                         f"Got p={p!r}, epsilon={epsilon!r} instead.")
    if p is not None:
        x = _check_p(p, func)
        lam0 = (1.0 - x) * x
        # 1 - (1-p)^2 rounds once, where p + (1-p)p would round twice; the difference of
        # the two exact probabilities is p itself, used unrounded as the slope.
        return lam0, 1.0 - (1.0 - x) * (1.0 - x), x, _log_up(_ratio_bits(x)), x
    eps = _v.check_epsilon(epsilon, func)
    q = keep_probability(eps, 2)
    return 1.0 - q, q, q - (1.0 - q), eps, q


def rr_response_probabilities(*, p: float | None = None,
                              epsilon: float | None = None) -> tuple[float, float]:
    """rr_response_probabilities(*, p=None, epsilon=None)

    The probabilities of answering 1 for a true 0 and for a true 1.

    Parameters
    ----------
    p, epsilon : float
        Exactly one, as for :func:`randomized_response`.

    Returns
    -------
    (float, float)
        ``(P[1 | 0], P[1 | 1])``: ``((1 - p) p, p + (1 - p) p)`` for the two-coin scheme,
        ``(1 - q, q)`` with ``q`` the keep probability for ``epsilon=`` (the double the
        mechanism uses, a few units of 2**-53 below ``e**eps / (1 + e**eps)``).

    Raises
    ------
    TypeError
        ``p`` or ``epsilon`` is not a real number (a bool included).
    ValueError
        Both or neither of ``p`` and ``epsilon`` given; ``p`` outside (0, 1); ``epsilon``
        <= 0, NaN or infinite.

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.rr_response_probabilities(p=0.5)
    (0.25, 0.75)
    >>> lo, hi = dp.rr_response_probabilities(epsilon=1.0)   # 1 - q, q = e / (1 + e)
    >>> round(lo, 6), round(hi, 6)
    (0.268941, 0.731059)
    """
    func = "rr_response_probabilities"
    lam0, lam1, _, _, _ = _scheme(p, epsilon, func)
    return lam0, lam1


# -- mechanisms ------------------------------------------------------------------------------

def _check_bits(bits: ArrayLike, func: str, name: str = "bits") -> NDArray[np.uint8]:
    """uint8 C-contiguous 0/1 array from bool, integer or float 0/1 data; ValueError naming
    the first other entry (NaN included), TypeError for non-numeric data."""
    arr = _v.as_array(bits, name, func)
    kind = arr.dtype.kind
    if kind == "b":
        return np.asarray(arr, dtype=np.uint8, order="C")
    if kind not in "iuf":
        raise TypeError(f"The {name!r} parameter of {func} must be an array of 0/1 or bools, "
                        f"not dtype {arr.dtype}. Got {_v.describe(bits)} instead.")
    ok = (arr == 0) | (arr == 1)            # NaN compares False: reported as bad
    if not ok.all():
        raise ValueError(f"The {name!r} parameter of {func} must contain only 0 and 1. "
                         f"Got {_v.entry_at(~ok, 'is not 0 or 1')} instead.")
    return np.asarray(arr, dtype=np.uint8, order="C")


def randomized_response(bits: ArrayLike, *, p: float | None = None,
                        epsilon: float | None = None, accountant: AccountantLike | None = None,
                        rng: RngLike = None,
                        threads: int | None = None) -> NDArray[np.uint8] | int:
    """randomized_response(bits, *, p=None, epsilon=None, accountant=None, rng=None, threads=None)

    Randomize each respondent's yes/no answer (local differential privacy).

    Parameters
    ----------
    bits : array_like of bool or 0/1
        One true answer per respondent (any shape). Integer or float data must be exactly
        0 or 1.
    p : float, optional
        Two-coin scheme: tell the truth with probability ``p``, else answer 1 with
        probability ``p``. In (0, 1); charges :func:`rr_epsilon` ``(p)`` (``ln 3`` at 0.5,
        ``ln 21`` at 0.8).
    epsilon : float, optional
        Symmetric scheme: keep the true answer with probability ``e**eps / (1 + e**eps)``,
        else flip it; charges ``epsilon``. Exactly one of ``p`` and ``epsilon``.
    accountant : Accountant, optional
        Charged once per call; default :func:`dpfast.default_accountant`.
    rng : None, int, ChaCha20 or numpy.random.Generator over ChaCha20, optional
        Source of the coins; a seed is for tests only (same seed, same coins).
    threads : int, optional
        Threads for drawing the coins; the output does not depend on it.

    Returns
    -------
    ndarray of uint8 or int
        The noisy answers, 0 or 1, with the shape of ``bits`` (an int for a scalar).

    Raises
    ------
    TypeError
        ``bits`` is not numeric or boolean data (strings, objects); ``p`` or ``epsilon`` is
        not a real number; ``accountant`` is not an accountant; ``rng`` is not one of the
        accepted kinds; ``threads`` is not an int.
    ValueError
        An entry of ``bits`` other than 0 or 1 (NaN included; the message gives its
        position, never its value); both or neither of ``p`` and ``epsilon``; ``p``
        outside (0, 1); ``epsilon`` <= 0, NaN or infinite; ``threads`` outside [1, 1024].
        Raised before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford the epsilon; nothing is drawn.

    Notes
    -----
    The guarantee is per respondent: each person's answer affects only their own response,
    so the whole output is epsilon-DP for each person, and the accountant is charged epsilon
    once, whatever the number of respondents. Estimate the true proportion with
    :func:`rr_estimate_proportion`, passing the same ``p`` or ``epsilon``.

    Examples
    --------
    10,000 yes/no answers, 30 % of them yes, randomized at epsilon = 1, and the proportion
    estimated back (``rng=11`` makes the example reproducible: a seed is for tests and
    research only, never for a real release):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> truth = (np.random.default_rng(1).random(10_000) < 0.3).astype(int)
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> noisy = dp.randomized_response(truth, epsilon=1.0, accountant=acct, rng=11)
    >>> noisy.dtype, noisy.shape, tuple(acct.spent)
    (dtype('uint8'), (10000,), (1.0, 0.0))
    >>> round(float(noisy.mean()), 3)         # the raw share of yes: biased towards 1/2
    0.405
    >>> est, var = dp.rr_estimate_proportion(noisy, epsilon=1.0)
    >>> round(float(truth.mean()), 3), round(est, 3), round(var ** 0.5, 4)
    (0.299, 0.293, 0.0096)

    The two-coin scheme charges :func:`rr_epsilon` of its ``p``:

    >>> acct = dp.Accountant(epsilon=2.0)
    >>> noisy = dp.randomized_response([1, 0, 1, 1], p=0.5, accountant=acct, rng=3)
    >>> round(acct.spent[0], 12)            # ln 3
    1.098612288668
    """
    func = "randomized_response"
    _, _, _, charge, t = _scheme(p, epsilon, func)
    data = _check_bits(bits, func)
    out = np.empty_like(data)               # a MemoryError here costs no budget
    release(func, accountant, charge, 0.0, rng, threads, data.size, _binary_coins,
            data.reshape(-1), out.reshape(-1), t, p is not None, keys=True)
    return out if out.ndim else int(out)


def _binary_coins(keys: Keys, threads: int, bits: NDArray[np.uint8],
                  out: NDArray[np.uint8], t: float, two_coin: bool) -> None:
    """The responses of randomized_response into out, CHUNK respondents at a time: a
    first coin U < t for each; with two coins, a second coin for those whose first failed."""
    for start in range(0, bits.size, CHUNK):
        b = bits[start:start + CHUNK]
        u = uniforms(keys, threads, b.size)
        if two_coin:
            # First coin: truth with probability p. Only the others need the second coin,
            # so draw it for them alone (a fifth of the respondents at p = 0.8).
            o = b.copy()
            lie = np.flatnonzero(u >= t)
            o[lie] = uniforms(keys, threads, lie.size) < t
        else:
            # Flip when the keep coin fails: XOR with the failure indicator.
            o = b ^ (u >= t).view(np.uint8)
        out[start:start + b.size] = o


# -- estimators ------------------------------------------------------------------------------

def rr_estimate_proportion(noisy_bits: ArrayLike, *, p: float | None = None,
                           epsilon: float | None = None) -> tuple[float, float]:
    """rr_estimate_proportion(noisy_bits, *, p=None, epsilon=None)

    Unbiased estimate of the true proportion of ones from randomized responses.

    Parameters
    ----------
    noisy_bits : array_like of bool or 0/1
        The output of :func:`randomized_response` (post-processing: costs no budget).
    p, epsilon : float
        Exactly one: the parameter the responses were made with.

    Returns
    -------
    estimate : float
        ``(mean - P[1|0]) / (P[1|1] - P[1|0])``; unbiased, and may fall outside [0, 1]
        (clip it for display only: clipping biases it).
    variance : float
        Unbiased, non-negative estimate of the estimator's variance over the mechanism's
        coins (true answers fixed); see :func:`rr_proportion_variance`.

    Raises
    ------
    TypeError
        ``noisy_bits`` is not numeric or boolean data; ``p`` or ``epsilon`` is not a real
        number.
    ValueError
        ``noisy_bits`` is empty or has an entry other than 0 or 1 (its position given);
        both or neither of ``p`` and ``epsilon``; ``p`` outside (0, 1); ``epsilon`` <= 0,
        NaN or infinite.

    Examples
    --------
    3,000 yes among 10,000 answers, randomized at epsilon = 1 (``rng=11``: a seed is for
    tests and research only), then estimated with its standard error:

    >>> import dpfast as dp
    >>> truth = [1] * 3000 + [0] * 7000
    >>> noisy = dp.randomized_response(truth, epsilon=1.0,
    ...                                accountant=dp.Accountant(epsilon=1.0), rng=11)
    >>> est, var = dp.rr_estimate_proportion(noisy, epsilon=1.0)
    >>> abs(est - 0.3) < 5 * var ** 0.5
    True
    >>> round(var ** 0.5, 3)                  # about 1 percentage point
    0.01
    """
    func = "rr_estimate_proportion"
    lam0, lam1, slope, _, _ = _scheme(p, epsilon, func)
    data = _check_bits(noisy_bits, func, "noisy_bits")
    if data.size == 0:
        raise ValueError(f"The 'noisy_bits' parameter of {func} must have at least one "
                         "response. Got an empty array instead.")
    n = data.size
    ybar = np.count_nonzero(data) / n
    est = (ybar - lam0) / slope
    # Var(mean) = [pi l1(1-l1) + (1-pi) l0(1-l0)]/n is linear in pi, so evaluating it at
    # the unbiased estimate is unbiased; as a line in the mean it is l0 l1 + mean (1-l0-l1),
    # non-negative at mean = 0 and 1, hence for every possible mean.
    var = (lam0 * lam1 + ybar * (1.0 - lam0 - lam1)) / (n * slope * slope)
    return float(est), float(max(var, 0.0))


def rr_proportion_variance(proportion: float, n: IntLike, *,
                           p: float | None = None, epsilon: float | None = None) -> float:
    """rr_proportion_variance(proportion, n, *, p=None, epsilon=None)

    Exact variance of :func:`rr_estimate_proportion` for ``n`` respondents of whom a
    fraction ``proportion`` truly answer 1.

    Parameters
    ----------
    proportion : float
        True proportion of ones, in [0, 1].
    n : int
        Number of respondents, >= 1.
    p, epsilon : float
        Exactly one, as for :func:`randomized_response`.

    Returns
    -------
    float
        ``[pi l1 (1 - l1) + (1 - pi) l0 (1 - l0)] / (n (l1 - l0)**2)`` with
        ``l0, l1 = P[1|0], P[1|1]``: the variance over the mechanism's coins with the true
        answers fixed. For a random sample from a population, the variance about the
        population proportion is this plus ``pi (1 - pi)/n``.

    Raises
    ------
    TypeError
        ``proportion``, ``p`` or ``epsilon`` is not a real number; ``n`` is not an int (a
        bool or a float included).
    ValueError
        ``proportion`` outside [0, 1]; ``n`` < 1; both or neither of ``p`` and
        ``epsilon``; ``p`` outside (0, 1); ``epsilon`` <= 0, NaN or infinite.

    Examples
    --------
    Planning a survey: the standard error of the estimated proportion for 10,000
    respondents of whom 30 % say yes, at epsilon = 1 (no data needed, nothing charged):

    >>> import dpfast as dp
    >>> round(dp.rr_proportion_variance(0.3, 10_000, epsilon=1.0) ** 0.5, 4)
    0.0096
    >>> round(dp.rr_proportion_variance(0.5, 1000, p=0.5), 8)
    0.00075
    """
    func = "rr_proportion_variance"
    lam0, lam1, slope, _, _ = _scheme(p, epsilon, func)
    pi = _v.check_real(proportion, "proportion", func, low=0.0, high=1.0, low_open=False,
                       high_open=False)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise _v.fail(TypeError, "n", func, "an int >= 1", n)
    if n < 1:
        raise _v.fail(ValueError, "n", func, "an int >= 1", n)
    v = pi * lam1 * (1 - lam1) + (1 - pi) * lam0 * (1 - lam0)
    return v / (int(n) * slope * slope)
