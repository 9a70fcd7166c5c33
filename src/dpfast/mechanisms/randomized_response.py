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
from .. import noise as _noise
from ..tables import category_list

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TypeAlias

    from numpy.typing import ArrayLike, NDArray

    from .._native import ChaCha20
    from ..accounting import AccountantLike

    # What an ``rng=`` argument may be (see dpfast.rng.resolve_rng); None is the default.
    from ..rng import RngLike
    # An integer as the checks here accept it: any numbers.Integral (which mypy does not
    # see int or numpy integers as), bools excluded at run time.
    _IntLike: TypeAlias = int | np.integer[Any] | numbers.Integral

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

# Respondents per kernel call: bounds the temporary uniforms at 32 MiB whatever the input
# size; a constant, so a seed gives the same output for any input length split.
_CHUNK = 2**22


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


def _keep_probability(eps: float, k: int) -> float:
    """The largest double q < 1 at or below the computed e^eps/(e^eps + k - 1) whose exact
    odds ratio q (k - 1)/(1 - q) does not exceed e^eps (checked against a lower bound on
    e^eps), so that the coins are eps-DP exactly, not up to rounding."""
    # exp overflows past 709.78; beyond ~37 the double q is capped below 1 anyway, so a
    # smaller exponent only lowers the bound we compare against (still a valid bound).
    e_lo = math.nextafter(math.nextafter(math.exp(min(eps, 700.0)), 0.0), 0.0)
    q = 1.0 / (1.0 + (k - 1) * math.exp(-eps))
    q = min(q, math.nextafter(1.0, 0.0))
    bound = Fraction(e_lo)
    for _ in range(64):                     # a few steps at most; 64 is a safety stop
        fq = Fraction(q)
        if fq * (k - 1) <= bound * (1 - fq):
            return q
        q = math.nextafter(q, 0.0)
    raise AssertionError("keep probability did not converge")  # pragma: no cover


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
    q = _keep_probability(eps, 2)
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


def rr_categorical_probabilities(k: _IntLike, *, epsilon: float) -> tuple[float, float]:
    """rr_categorical_probabilities(k, *, epsilon)

    Response probabilities of k-ary randomized response.

    Parameters
    ----------
    k : int
        Number of categories, >= 2.
    epsilon : float
        Privacy parameter, > 0.

    Returns
    -------
    (float, float)
        ``(q, r)``: the probability of reporting the true category, a double at most
        ``e**eps / (e**eps + k - 1)`` whose odds ratio ``q (k - 1)/(1 - q)`` does not
        exceed ``e**eps``, and ``r = (1 - q)/(k - 1)``, that of each other category.

    Raises
    ------
    TypeError
        ``k`` is not an int (a bool or a float included); ``epsilon`` is not a real number.
    ValueError
        ``k`` is outside [2, 2**62]; ``epsilon`` is <= 0, NaN or infinite.

    Examples
    --------
    >>> import dpfast as dp
    >>> q, r = dp.rr_categorical_probabilities(4, epsilon=1.0)
    >>> round(q, 6), round(r, 6)
    (0.475367, 0.174878)
    >>> round(q / r, 6) <= round(2.718281828459045, 6)      # the odds ratio, at most e
    True
    """
    func = "rr_categorical_probabilities"
    kk = _check_k(k, func)
    eps = _v.check_epsilon(epsilon, func)
    q = _keep_probability(eps, kk)
    return q, (1.0 - q) / (kk - 1)


def _check_k(k: object, func: str) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise _v.fail(TypeError, "k", func, "an int in [2, 2**62]", k)
    if not 2 <= k <= 2**62:                 # type: ignore[operator]  # k: numbers.Integral
        raise _v.fail(ValueError, "k", func, "an int in [2, 2**62]", k)
    return int(k)


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


def _uniforms(keys: Keys, threads: int, n: int) -> NDArray[np.float64]:
    """n full-precision uniforms from one kernel call (the release's next key)."""
    return _noise.uniforms(keys.next(), threads, np.empty(n))


def _binary_coins(keys: Keys, threads: int, bits: NDArray[np.uint8],
                  out: NDArray[np.uint8], t: float, two_coin: bool) -> None:
    """The responses of randomized_response into out, _CHUNK respondents at a time: a
    first coin U < t for each; with two coins, a second coin for those whose first failed."""
    for start in range(0, bits.size, _CHUNK):
        b = bits[start:start + _CHUNK]
        u = _uniforms(keys, threads, b.size)
        if two_coin:
            # First coin: truth with probability p. Only the others need the second coin,
            # so draw it for them alone (a fifth of the respondents at p = 0.8).
            o = b.copy()
            lie = np.flatnonzero(u >= t)
            o[lie] = _uniforms(keys, threads, lie.size) < t
        else:
            # Flip when the keep coin fails: XOR with the failure indicator.
            o = b ^ (u >= t).view(np.uint8)
        out[start:start + b.size] = o


def randomized_response_categorical(values: ArrayLike,
                                    categories: _IntLike | Sequence[Any] | NDArray[Any], *,
                                    epsilon: float, accountant: AccountantLike | None = None,
                                    rng: RngLike = None,
                                    threads: int | None = None) -> NDArray[np.int64]:
    """randomized_response_categorical(values, categories, *, epsilon, accountant=None, rng=None, threads=None)

    k-ary (generalized) randomized response for categorical answers.

    Each respondent's true category is reported with probability ``e**eps/(e**eps + k - 1)``;
    otherwise one of the other ``k - 1`` categories is reported, uniformly. Exactly
    ``eps``-DP for each respondent.

    Parameters
    ----------
    values : array_like, pandas Series or Categorical
        One true category per respondent; every value must be in ``categories``.
    categories : sequence or int
        The public list of the ``k >= 2`` possible answers (public: not taken from the
        data), or an int ``k`` when ``values`` are already codes ``0..k-1``.
    epsilon : float
        Privacy parameter, > 0; charged once per call.
    accountant, rng, threads
        As for :func:`randomized_response`.

    Returns
    -------
    ndarray of int64
        The reported category of each respondent as its index into ``categories`` (the
        shape of ``values``); ``numpy.asarray(categories)[codes]`` gives the values, and
        :func:`rr_estimate_counts` takes the codes directly.

    Raises
    ------
    TypeError
        ``categories`` is neither an ordered sequence nor an int (a str, a set or a mapping
        included); ``epsilon`` is not a real number; ``accountant`` is not an accountant;
        ``rng`` is not one of the accepted kinds; ``threads`` is not an int.
    ValueError
        A value outside ``categories`` (or, with ``categories=k``, a code outside
        ``0..k-1``); the error gives its position, not the value, since error messages end
        up in logs. Fewer than two categories, a repeated category or a NaN among them;
        ``k`` outside [2, 2**62]; ``epsilon`` <= 0, NaN or infinite; ``threads`` outside
        [1, 1024]. Raised before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``; nothing is drawn.

    Examples
    --------
    5,000 answers to "how do you get to work?", randomized at epsilon = 1, and the counts
    estimated back (``rng=5`` makes the example reproducible: a seed is for tests and
    research only, never for a real release):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> modes = ["bus", "car", "bike", "walk"]
    >>> answers = np.random.default_rng(1).choice(modes, 5000, p=[0.2, 0.5, 0.1, 0.2])
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> codes = dp.randomized_response_categorical(answers, modes, epsilon=1.0,
    ...                                            accountant=acct, rng=5)
    >>> codes.dtype, codes.shape, tuple(acct.spent)
    (dtype('int64'), (5000,), (1.0, 0.0))
    >>> np.asarray(modes)[codes[:4]].tolist()         # the reported answers
    ['car', 'walk', 'bus', 'walk']
    >>> counts, var = dp.rr_estimate_counts(codes, 4, epsilon=1.0)
    >>> counts.round().tolist(), np.sqrt(var).round().tolist()
    ([1007.0, 2594.0, 368.0, 1030.0], [96.0, 105.0, 92.0, 96.0])
    >>> [int((answers == m).sum()) for m in modes]    # the true counts
    [1012, 2497, 493, 998]
    """
    func = "randomized_response_categorical"
    eps = _v.check_epsilon(epsilon, func)
    if isinstance(categories, numbers.Integral) and not isinstance(categories,
                                                                   (bool, np.bool_)):
        k = _check_k(categories, func)
        cats: range | list[Any] = range(k)
    else:
        cats = category_list(categories, f"The 'categories' parameter of {func} must be an "
                             "ordered sequence of categories or an int.")
        if len(cats) < 2:
            raise ValueError(f"The 'categories' parameter of {func} must have at least 2 "
                             f"categories. Got {_v.describe(categories)} instead.")
        k = len(cats)
    nan = next((i for i, c in enumerate(cats) if isinstance(c, float) and math.isnan(c)),
               None) if isinstance(cats, list) else None
    if nan is not None:
        # NaN never equals itself, so no value could be matched to it.
        raise ValueError(f"The 'categories' parameter of {func} must not contain NaN. "
                         f"Got {_v.describe(categories)} with a NaN at "
                         f"{_v.position(nan)} instead.")
    arr = _v.as_array(values, "values", func) if isinstance(values, np.ndarray) else None
    if isinstance(cats, range) and arr is not None and arr.dtype.kind in "iu":
        # Codes already: skip the sort-based lookup (seconds at 10^7 values).
        codes: NDArray[np.int64] = np.asarray(arr, dtype=np.int64).reshape(-1).copy()
        codes[(codes < 0) | (codes >= k)] = -1
    else:
        codes = _v.category_codes(values, cats, func)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        raise ValueError(f"The 'values' parameter of {func} must contain only values in "
                         f"'categories'. Got a value outside them at record {bad[0]} "
                         "instead.")
    shape = np.shape(values)
    if math.prod(shape) != codes.size:      # e.g. a pandas Categorical: keep it flat
        shape = codes.shape
    q = _keep_probability(eps, k)
    out = np.empty_like(codes)
    release(func, accountant, eps, 0.0, rng, threads, codes.size, _categorical_coins, codes,
            out, q, k, keys=True)
    return out.reshape(shape)


def _categorical_coins(keys: Keys, threads: int, codes: NDArray[np.int64],
                       out: NDArray[np.int64], q: float, k: int) -> None:
    """The responses of randomized_response_categorical into out, _CHUNK at a time: keep the
    code when U < q, else report one of the other k - 1 uniformly."""
    gen = keys.coins()
    integers = np.random.Generator(gen).integers    # exact, from the same ChaCha20 stream
    for start in range(0, codes.size, _CHUNK):
        c = codes[start:start + _CHUNK]
        u = _uniforms(keys, threads, c.size)
        o = c.copy()
        lie = np.flatnonzero(u >= q)
        # j uniform in 0..k-2, skipping the true category: uniform over the other k - 1.
        j = integers(0, k - 1, size=lie.size, dtype=np.int64)
        o[lie] = j + (j >= c[lie])
        out[start:start + c.size] = o


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


def rr_proportion_variance(proportion: float, n: _IntLike, *,
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


def rr_estimate_counts(noisy_codes: ArrayLike, k: _IntLike, *, epsilon: float,
                       covariance: bool = False
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """rr_estimate_counts(noisy_codes, k, *, epsilon, covariance=False)

    Unbiased estimates of the true category counts from k-ary randomized responses.

    Parameters
    ----------
    noisy_codes : array_like of int
        The codes returned by :func:`randomized_response_categorical`, in ``0..k-1``.
    k : int
        Number of categories, >= 2.
    epsilon : float
        The epsilon the responses were made with.
    covariance : bool, optional
        Return the full ``k x k`` covariance estimate instead of the per-category variances.

    Returns
    -------
    counts : ndarray of float64, shape (k,)
        ``(m_j - r n) / (q - r)`` with ``m_j`` the reported counts and ``q, r`` from
        :func:`rr_categorical_probabilities`. Unbiased; entries may be negative and they sum
        to ``n``.
    variance : ndarray of float64, shape (k,) or (k, k)
        Unbiased estimate of ``Var(counts_j) = [n r (1 - r) + n_j (q - r)(1 - q - r)] /
        (q - r)**2`` (non-negative), or of the covariance matrix, over the mechanism's coins
        with the true answers fixed.

    Raises
    ------
    TypeError
        ``noisy_codes`` is not integer data (floats, strings); ``k`` is not an int;
        ``epsilon`` is not a real number; ``covariance`` is not a bool.
    ValueError
        ``noisy_codes`` is empty, holds NaN, or has a code outside ``[0, k)`` (its position
        given); ``k`` outside [2, 2**62]; ``epsilon`` <= 0, NaN or infinite.

    Examples
    --------
    Codes ``0..2`` of 10,000 respondents (``rng=2``: a seed is for tests and research
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> truth = np.repeat([0, 1, 2], [5000, 3000, 2000])
    >>> codes = dp.randomized_response_categorical(
    ...     truth, 3, epsilon=2.0, accountant=dp.Accountant(epsilon=2.0), rng=2)
    >>> counts, var = dp.rr_estimate_counts(codes, 3, epsilon=2.0)
    >>> bool(np.all(np.abs(counts - [5000, 3000, 2000]) < 5 * np.sqrt(var)))
    True
    >>> round(float(counts.sum()), 6)         # the estimates sum to n
    10000.0
    >>> counts, cov = dp.rr_estimate_counts(codes, 3, epsilon=2.0, covariance=True)
    >>> cov.shape
    (3, 3)
    """
    func = "rr_estimate_counts"
    kk = _check_k(k, func)
    eps = _v.check_epsilon(epsilon, func)
    cov = _v.check_bool(covariance, "covariance", func)
    codes, is_int = _v.check_data(noisy_codes, "noisy_codes", func)
    codes = codes.reshape(-1)
    if codes.size == 0:
        raise ValueError(f"The 'noisy_codes' parameter of {func} must have at least one "
                         "response. Got an empty array instead.")
    if not is_int:
        raise _v.fail_data(TypeError, "noisy_codes", func, "integer codes in [0, k)",
                           noisy_codes)
    lo, hi = int(codes.min()), int(codes.max())
    if lo < 0 or hi >= kk:
        where = _v.entry_at((codes < 0) | (codes >= kk), "is outside them")
        raise ValueError(f"The 'noisy_codes' parameter of {func} must contain codes in "
                         f"[0, {kk}) (k={kk}). Got {where} instead.")
    q = _keep_probability(eps, kk)
    r = (1.0 - q) / (kk - 1)
    d = q - r
    n = codes.size
    m = np.bincount(codes, minlength=kk).astype(np.float64)
    est = (m - r * n) / d
    # Cov(m) = diag(mu) - n r^2 J - r d (1 n' + n 1') - d^2 diag(n_true) is linear in the
    # true counts, so plugging in the unbiased estimate is unbiased. The diagonal,
    # n r(1-r) + n_j d (1-q-r), is linear in m_j and non-negative at m_j = 0 and n.
    if not cov:
        var = (n * r * (1 - r) + est * d * (1 - q - r)) / (d * d)
        return est, np.maximum(var, 0.0)
    mu = r * n + d * est                      # = m
    c = np.diag(mu - d * d * est) - n * r * r
    c -= r * d * (est[None, :] + est[:, None])
    return est, c / (d * d)
