"""Accuracy of Laplace releases: simultaneous error bounds over k cells."""
import math

from . import validation as _v

__all__ = ["max_error_bound"]


def max_error_bound(k, *, epsilon, sensitivity=1.0, beta=0.05, discrete=True):
    """max_error_bound(k, *, epsilon, sensitivity=1.0, beta=0.05, discrete=True)

    A bound that the largest error over ``k`` released cells stays within, with probability
    at least ``1 - beta``.

    Parameters
    ----------
    k : int
        Number of cells (coordinates) released, >= 1.
    epsilon : float
        Privacy parameter of the release.
    sensitivity : float, optional
        L1 sensitivity of the released vector (1 for a histogram).
    beta : float, optional
        Failure probability, in (0, 1).
    discrete : bool, optional
        ``True`` (default) for integer releases with discrete Laplace noise of scale
        ``sensitivity/epsilon``: the bound is the exact quantile, the smallest integer ``j``
        with ``P[max_i |K_i| > j] <= beta``. ``False`` for continuous Laplace noise: the
        bound ``ln(k/beta) * sensitivity / epsilon`` of Dwork & Roth, Theorem 3.8.

    Returns
    -------
    float or int

    Notes
    -----
    Cells get independent noise, so ``P[max |K_i| > j] = 1 - (1 - P[|K| > j])**k``, and for
    discrete Laplace with ``a = exp(-epsilon/sensitivity)``, ``P[|K| > j] = 2 a**(j+1)/(1+a)``.
    The bound describes the noise only: post-processing (clipping, consistency) changes it.

    Examples
    --------
    >>> import dpfast as dp
    >>> dp.max_error_bound(10_000, epsilon=1.0)
    12
    >>> round(dp.max_error_bound(10_000, epsilon=1.0, discrete=False), 3)
    12.206
    """
    func = "max_error_bound"
    if isinstance(k, bool) or not isinstance(k, int) and not hasattr(k, "__index__"):
        raise TypeError(f"The 'k' parameter of {func} must be an int >= 1. Got {k!r} instead.")
    k = int(k)
    if k < 1:
        raise ValueError(f"The 'k' parameter of {func} must be an int >= 1. Got {k!r} instead.")
    eps = _v.check_epsilon(epsilon, func)
    d = _v.check_sensitivity(sensitivity, func)
    b = _v.check_real(beta, "beta", func, low=0.0, high=1.0)
    if not _v.check_bool(discrete, "discrete", func):
        return math.log(k / b) * d / eps
    # Per-cell tail probability that keeps the maximum within the bound w.p. 1 - beta.
    q = -math.expm1(math.log1p(-b) / k)
    log_a = -eps / d
    a = math.exp(log_a)
    # Smallest j with 2 a^(j+1) / (1 + a) <= q.
    j = math.ceil((math.log(q) + math.log1p(a) - math.log(2.0)) / log_a) - 1
    j = max(j, 0)
    # Guard the ceil against rounding in the logarithms.
    tail = lambda m: 2.0 * math.exp(log_a * (m + 1)) / (1.0 + a)
    while j > 0 and tail(j - 1) <= q:
        j -= 1
    while tail(j) > q:
        j += 1
    return j
