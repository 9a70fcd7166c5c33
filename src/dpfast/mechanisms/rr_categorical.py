"""k-ary (generalized) randomized response: its response probabilities, the mechanism for
categorical answers, and the unbiased estimates of the true category counts.

Keep the true category with probability ``e**eps / (e**eps + k - 1)``, else report one of
the other ``k - 1`` uniformly; exactly ``eps``-DP for each respondent (see
:mod:`dpfast.mechanisms.randomized_response`, which exports every name here).
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

from .. import validation as _v
from .._release import Keys, release
from ..tables import category_codes, category_list
from .rr_coins import CHUNK, keep_probability, uniforms

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike
    from .rr_coins import IntLike

__all__ = [
    "randomized_response_categorical",
    "rr_categorical_probabilities",
    "rr_estimate_counts",
]


# -- privacy parameters ----------------------------------------------------------------------

def rr_categorical_probabilities(k: IntLike, *, epsilon: float) -> tuple[float, float]:
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
    q = keep_probability(eps, kk)
    return q, (1.0 - q) / (kk - 1)


def _check_k(k: object, func: str) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise _v.fail(TypeError, "k", func, "an int in [2, 2**62]", k)
    if not 2 <= k <= 2**62:                 # type: ignore[operator]  # k: numbers.Integral
        raise _v.fail(ValueError, "k", func, "an int in [2, 2**62]", k)
    return int(k)


# -- mechanism -------------------------------------------------------------------------------

def randomized_response_categorical(values: ArrayLike,
                                    categories: IntLike | Sequence[Any] | NDArray[Any], *,
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
        codes = category_codes(values, cats, func)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        raise ValueError(f"The 'values' parameter of {func} must contain only values in "
                         f"'categories'. Got a value outside them at record {bad[0]} "
                         "instead.")
    shape = np.shape(values)
    if math.prod(shape) != codes.size:      # e.g. a pandas Categorical: keep it flat
        shape = codes.shape
    q = keep_probability(eps, k)
    out = np.empty_like(codes)
    release(func, accountant, eps, 0.0, rng, threads, codes.size, _categorical_coins, codes,
            out, q, k, keys=True)
    return out.reshape(shape)


def _categorical_coins(keys: Keys, threads: int, codes: NDArray[np.int64],
                       out: NDArray[np.int64], q: float, k: int) -> None:
    """The responses of randomized_response_categorical into out, CHUNK at a time: keep the
    code when U < q, else report one of the other k - 1 uniformly."""
    gen = keys.coins()
    integers = np.random.Generator(gen).integers    # exact, from the same ChaCha20 stream
    for start in range(0, codes.size, CHUNK):
        c = codes[start:start + CHUNK]
        u = uniforms(keys, threads, c.size)
        o = c.copy()
        lie = np.flatnonzero(u >= q)
        # j uniform in 0..k-2, skipping the true category: uniform over the other k - 1.
        j = integers(0, k - 1, size=lie.size, dtype=np.int64)
        o[lie] = j + (j >= c[lie])
        out[start:start + c.size] = o


# -- estimator -------------------------------------------------------------------------------

def rr_estimate_counts(noisy_codes: ArrayLike, k: IntLike, *, epsilon: float,
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
    q = keep_probability(eps, kk)
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
