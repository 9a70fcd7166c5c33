"""Budget-checked mechanisms. Each validates every argument, charges the accountant, then
makes one kernel call: nothing is drawn for a call that fails validation or the budget."""
import math

import numpy as np

from . import noise as _noise
from . import random as _random
from . import validation as _v
from .accountant import resolve_accountant

__all__ = ["laplace_mechanism"]

# Integer inputs are released as value + K in int64 without overflow while |value| <= 2^62
# (|K| < 2^51).
_MAX_INT_VALUE = 2**62


def laplace_mechanism(value, *, sensitivity, epsilon, accountant=None, rng=None,
                      threads=None):
    """laplace_mechanism(value, *, sensitivity, epsilon, accountant=None, rng=None, threads=None)

    Release ``value`` with Laplace noise of scale ``sensitivity / epsilon`` per coordinate.

    Parameters
    ----------
    value : int, float or array_like of them
        The true query answer(s). Integer data (Python ints, numpy integer arrays) gets
        discrete Laplace noise and an int64 result; floating data is rounded to the grid
        ``g = laplace_granularity(sensitivity/epsilon)`` and gets grid Laplace noise, so the
        result is a multiple of ``g`` whatever the input's low bits.
    sensitivity : float
        L1 sensitivity of the query (over all coordinates together), > 0.
    epsilon : float
        Privacy parameter, > 0; charged to the accountant before any noise is drawn.
    accountant : Accountant, optional
        Charged ``epsilon``; default :func:`dpfast.default_accountant`.
    rng : None, ChaCha20 or numpy.random.Generator over ChaCha20, or an int seed, optional
        ``None`` (the default, for real releases) draws from an OS-keyed generator. A seed
        makes the noise reproducible: two releases with the same seed carry the *same* noise,
        and their difference reveals the change in the data. Seeds are for tests only.
    threads : int, optional
        Threads for large inputs (default ``OMP_NUM_THREADS``); the output for a given
        generator state does not depend on it.

    Returns
    -------
    int, float or ndarray
        Same shape as ``value``; int64 for integer data, float64 otherwise.

    Raises
    ------
    TypeError, ValueError
        For any invalid argument (NaN/inf data, epsilon <= 0, negative sensitivity, boolean
        or object data, ...), before anything is charged or drawn.
    BudgetExceededError
        If the accountant cannot afford epsilon; nothing is drawn.

    Notes
    -----
    epsilon-differentially private up to the floating-point term of
    :func:`laplace_privacy_loss` (below 2.4e-7 for float data; for integer data it depends on
    the scale, e.g. 7e-12 at scale 1000). Float inputs must satisfy ``|value| <= 2**52 g`` so
    that grid arithmetic is exact.

    Examples
    --------
    >>> import dpfast as dp
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> noisy = dp.laplace_mechanism(6460, sensitivity=1, epsilon=0.5, accountant=acct, rng=0)
    >>> isinstance(noisy, int), acct.spent
    (True, (0.5, 0.0))
    """
    func = "laplace_mechanism"
    d = _v.check_sensitivity(sensitivity, func)
    eps = _v.check_epsilon(epsilon, func)
    data, is_int = _v.check_data(value, "value", func)
    acct = resolve_accountant(accountant, func)
    bitgen = _random.resolve_rng(rng, func)
    nthreads = _random.resolve_threads(threads, func)
    if is_int:
        scale = _v.check_mechanism_scale(d, eps, func, high=_noise.MAX_DISCRETE_SCALE)
        _check_magnitude(data, _MAX_INT_VALUE, "2**62", func)
        kind = "discrete"
    else:
        scale = _v.check_mechanism_scale(d, eps, func)
        limit = 2.0**52 * _noise.laplace_granularity(scale)
        _check_magnitude(data, limit, f"{limit:g} (2**52 grid steps at scale {scale:g}, for "
                         "exact grid arithmetic)", func)
        kind = "grid"

    out = _noise._empty(kind, data.shape)      # a MemoryError here costs no budget
    acct.spend(eps, 0.0, label=func)
    out = _noise._draw(kind, scale, data.shape, bitgen, nthreads, base=data.reshape(-1),
                       out=out)
    return out[()].item() if data.ndim == 0 else out


def _check_magnitude(data, limit, limit_text, func):
    """ValueError naming the first entry with |entry| > limit (min/max, so that int64's
    most negative value, whose abs overflows, is caught too)."""
    if not data.size:
        return
    lo, hi = data.min(), data.max()
    if lo < -limit or hi > limit:
        bad = lo if lo < -limit else hi
        raise ValueError(f"The 'value' parameter of {func} must have |value| <= {limit_text}. "
                         f"Got {bad.item()!r} instead.")
