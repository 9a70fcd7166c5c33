"""Sum, mean, variance and standard deviation of a column clamped to public bounds.

Each is post-processing of noisy counts and exact sums on a grid (:func:`noisy_moments`).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import validation as _v
from .._release import Release
from .bounding import kept
from .inputs import Column, check_squares, column
from .parts import Part, split
from .sums import noisy_count, noisy_total, units, value_grid

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike


def noisy_moments(func: str, values: object, bounds: object, privacy_unit: object,
                  max_rows: object, order: int, noise_name: object, epsilon: object,
                  delta: object, rho: object, accountant: AccountantLike | None, rng: RngLike,
                  threads: int | None) -> tuple[Column, NDArray[np.float64]]:
    """Noisy count, centred sum and (order 2) centred sum of squares of a column, each a
    part of the budget: ``[count, sum of (x - mid)]`` or ``[..., sum of (x - mid)**2]``."""
    col = column(func, values, bounds, privacy_unit, max_rows)
    if order == 2:
        check_squares(col.lo, col.hi, func)
    half = (col.hi - col.lo) / 2.0
    r = float(col.max_rows)
    parts = [Part("count", r, r, True),
             Part("centred sum", r * half, r * half, False)]
    if order == 2:
        parts.append(Part("centred sum of squares", r * half * half, r * half * half, False))
    plan = split(func, noise_name, epsilon, delta, rho, parts, accountant)
    g = value_grid(plan.noisy()[1], half, col.x.size, func)
    g2 = value_grid(plan.noisy()[2], half * half, col.x.size, func) if order == 2 else 0.0
    rel = Release(func, accountant, plan.epsilon, plan.delta, rng, threads, col.x.size,
                  rho=plan.rho)
    keys = rel.charge_keys()
    x = kept(col, keys, rel.threads)
    mid = (col.lo + col.hi) / 2.0
    out = [float(noisy_count(plan.noisy()[0], keys.next(),
                             np.array([x.size], dtype=np.int64))[0])]
    out.append(noisy_total(plan.noisy()[1], keys, units(x, mid, half, g), g))
    if order == 2:
        out.append(noisy_total(plan.noisy()[2], keys,
                                units((x - mid) ** 2, 0.0, half * half, g2), g2))
    return col, np.array(out)


def sum(values: object, *, bounds: object, epsilon: object = None, delta: object = None,
        rho: object = None, noise: object = "laplace", privacy_unit: object = None,
        max_rows: object = 1, accountant: AccountantLike | None = None,
        rng: RngLike = None, threads: int | None = None) -> float:
    """Differentially private sum of a column, each value clamped to ``bounds``.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    float
        The noisy sum. Sensitivity ``max_rows * max(|low|, |high|)`` (l1 and l2).

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` is not an int;
        ``privacy_unit`` holds values of mixed types; ``accountant`` is not an accountant;
        ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The sum of 1,000 ages (true sum 54,652) at epsilon = 0.5, with Laplace noise of scale
    200 (``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.sum(ages, bounds=(0, 100), epsilon=0.5, accountant=acct, rng=1))
    54932
    >>> acct.spent
    (0.5, 0.0)
    """
    func = "sum"
    col = column(func, values, bounds, privacy_unit, max_rows)
    reach = max(abs(col.lo), abs(col.hi))
    r = float(col.max_rows)
    plan = split(func, noise, epsilon, delta, rho, [Part("sum", r * reach, r * reach, False)],
                 accountant)
    g = value_grid(plan.noisy()[0], reach, col.x.size, func)
    rel = Release(func, accountant, plan.epsilon, plan.delta, rng, threads, col.x.size,
                  rho=plan.rho)
    keys = rel.charge_keys()
    x = kept(col, keys, rel.threads)
    return noisy_total(plan.noisy()[0], keys, units(x, 0.0, reach, g), g)


def mean(values: object, *, bounds: object, epsilon: object = None, delta: object = None,
         rho: object = None, noise: object = "laplace", privacy_unit: object = None,
         max_rows: object = 1, accountant: AccountantLike | None = None,
         rng: RngLike = None, threads: int | None = None) -> float:
    """Differentially private mean of a column clamped to ``bounds``: a noisy count and a
    noisy sum of the values centred on the middle of the bounds, the budget split equally
    (the split that minimises the worst-case variance of the ratio, whose two terms have the
    same sensitivity per unit of budget), and ``mid + sum / max(count, 1)`` clamped to the
    bounds.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    float
        The noisy mean, within ``bounds``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` is not an int;
        ``privacy_unit`` holds values of mixed types; ``accountant`` is not an accountant;
        ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The mean of 1,000 ages (true mean 54.652), and again with each person owning two rows
    (``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.mean(ages, bounds=(0, 100), epsilon=0.5, accountant=acct, rng=1), 2)
    54.66
    >>> person = np.repeat(np.arange(500), 2)
    >>> m = dp.mean(ages, bounds=(0, 100), epsilon=0.5, privacy_unit=person, max_rows=2,
    ...             accountant=acct, rng=1)
    >>> 0 <= m <= 100, acct.spent
    (True, (1.0, 0.0))
    """
    col, (n, s) = noisy_moments("mean", values, bounds, privacy_unit, max_rows, 1, noise,
                           epsilon, delta, rho, accountant, rng, threads)
    mid = (col.lo + col.hi) / 2.0
    return float(np.clip(mid + s / max(n, 1.0), col.lo, col.hi))


def variance(values: object, *, bounds: object, epsilon: object = None,
             delta: object = None, rho: object = None, noise: object = "laplace",
             privacy_unit: object = None, max_rows: object = 1,
             accountant: AccountantLike | None = None, rng: RngLike = None,
             threads: int | None = None, ddof: int = 0) -> float:
    """Differentially private variance of a column clamped to ``bounds``: noisy count, sum
    and sum of squares of the centred values (the budget in three equal parts), combined as
    ``(sumsq - sum**2 / n) / (n - ddof)``, clamped to ``[0, ((high - low) / 2)**2]``.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).
    ddof : int, optional
        Delta degrees of freedom, >= 0, as numpy's (default 0).

    Returns
    -------
    float
        The noisy variance, in ``[0, ((high - low) / 2)**2]``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` or ``ddof`` is
        not an int; ``privacy_unit`` holds values of mixed types; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; the square of the
        bounds' half-width is not a normal float; ``ddof`` < 0; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The variance of 1,000 ages (true variance 429.74; ``rng=1``: reproducible, for tests
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.variance(ages, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=1), 1)
    430.0
    >>> acct.spent
    (1.0, 0.0)
    """
    return _variance("variance", values, bounds, epsilon, delta, rho, noise, privacy_unit,
                     max_rows, accountant, rng, threads, ddof)


def std(values: object, *, bounds: object, epsilon: object = None, delta: object = None,
        rho: object = None, noise: object = "laplace", privacy_unit: object = None,
        max_rows: object = 1, accountant: AccountantLike | None = None,
        rng: RngLike = None, threads: int | None = None, ddof: int = 0) -> float:
    """The square root of :func:`variance` (the same release, at the same cost).

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).
    ddof : int, optional
        Delta degrees of freedom, >= 0, as numpy's (default 0).

    Returns
    -------
    float
        The noisy standard deviation, in ``[0, (high - low) / 2]``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` or ``ddof`` is
        not an int; ``privacy_unit`` holds values of mixed types; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; the square of the
        bounds' half-width is not a normal float; ``ddof`` < 0; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The standard deviation of 1,000 ages (true 20.73; ``rng=1``: reproducible, for tests
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.std(ages, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=1), 2)
    20.74
    """
    return math.sqrt(_variance("std", values, bounds, epsilon, delta, rho, noise,
                               privacy_unit, max_rows, accountant, rng, threads, ddof))


def _variance(func: str, values: object, bounds: object, epsilon: object, delta: object,
              rho: object, noise: object, privacy_unit: object, max_rows: object,
              accountant: AccountantLike | None, rng: RngLike, threads: int | None,
              ddof: object) -> float:
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)):
        raise TypeError(f"The 'ddof' parameter of {func} must be an int >= 0. Got "
                        f"{_v.describe(ddof)} instead.")
    if ddof < 0:
        raise ValueError(f"The 'ddof' parameter of {func} must be an int >= 0. Got {ddof!r} "
                         "instead.")
    col, (n, s, s2) = noisy_moments(func, values, bounds, privacy_unit, max_rows, 2, noise,
                               epsilon, delta, rho, accountant, rng, threads)
    n = max(n, 1.0)
    var = (s2 - s * s / n) / max(n - int(ddof), 1.0)
    return float(np.clip(var, 0.0, ((col.hi - col.lo) / 2.0) ** 2))
