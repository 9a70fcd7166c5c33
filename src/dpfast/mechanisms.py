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
    rng : None, int, ChaCha20 or numpy.random.Generator over ChaCha20, optional
    threads : int, optional

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
    _v.check_threads(threads, func)
    scale = d / eps
    if is_int:
        _v.check_scale(scale, func, high=_noise.MAX_DISCRETE_SCALE)
        if data.size and np.abs(data).max() > _MAX_INT_VALUE:
            raise ValueError(f"The 'value' parameter of {func} must have |value| <= 2**62. "
                             f"Got {data.flat[int(np.argmax(np.abs(data)))]!r} instead.")
        kind = "discrete"
    else:
        _v.check_scale(scale, func)
        limit = 2.0**52 * _noise.laplace_granularity(scale)
        if data.size and np.abs(data).max() > limit:
            raise ValueError(
                f"The 'value' parameter of {func} must have |value| <= {limit:g} (2**52 grid "
                f"steps at scale {scale:g}) for exact grid arithmetic. "
                f"Got {data.flat[int(np.argmax(np.abs(data)))]!r} instead.")
        kind = "grid"

    acct.spend(eps, 0.0, label=func)
    out = _noise._draw(kind, scale, data.shape, bitgen, threads, func,
                       base=data.reshape(-1))
    return out[()].item() if data.ndim == 0 else out
