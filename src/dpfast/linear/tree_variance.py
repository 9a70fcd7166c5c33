"""The exact variances of the tree mechanism's consistent estimate, and the choice of the
tree's shape from them.

With per-level weights ``w_l`` (inverse noise variances, 0 for the unmeasured root), the
estimate's covariance is ``M^-1`` with ``M = sum_l w_l J_l`` (``J_l`` block-diagonal all-ones
blocks of level ``l``'s node size ``s_l = b^l``). On the space ``E_k`` of vectors constant on
level-k blocks and summing to zero on level-(k+1) blocks, ``M`` is ``lambda_k = sum_{l <= k}
w_l s_l`` (:func:`level_lambdas`), so a query's variance takes ``O(height)`` steps and the
mean over all ranges of ``[0, n)`` has a closed form (:func:`mean_range_variance`), from
which :func:`tree_shape` picks the branching and height (after Qardaji, Yang & Li 2013).
:mod:`dpfast.linear.tree` releases the tree.
"""
from __future__ import annotations

import functools
import math

from ..noise import Laplace

__all__ = ["tree_shape", "level_weights", "level_lambdas", "mean_range_variance",
           "noise_variance"]


@functools.lru_cache(maxsize=256)
def tree_shape(n: int, branching: int | None = None, gaussian: bool = False,
               ) -> tuple[int, int]:
    """(branching, height) of the tree over ``n`` cells: ``branching ** height >= n`` cells
    with ``height`` measured levels (the root, above them, is not measured). Given
    ``branching``, the least such height; else the pair with the least mean variance over
    all ranges of ``[0, n)`` (height 1: the identity), the node variance growing as
    ``height**2`` (Laplace noise, scale ``height / epsilon``) or as ``height`` (``gaussian``:
    ``sigma**2`` proportional to the l2 sensitivity squared, ``height``)."""
    if branching is not None:
        height, size = 1, branching
        while size < n:
            height, size = height + 1, size * branching
        return branching, height
    if n <= 2:
        return max(n, 2), 1
    candidates = set()
    for h in range(1, max(1, math.ceil(math.log2(n))) + 1):
        b = max(2, math.ceil(round(n ** (1.0 / h), 9)))
        while b ** h < n:
            b += 1
        while b > 2 and (b - 1) ** h >= n:
            b -= 1
        candidates.add((b, h))
    for b in range(2, 17):
        candidates.add(tree_shape(n, b))
    # Noise variance per node grows as height^2 (Laplace: scale height / epsilon) or as
    # height (Gaussian: sigma^2 = height / (2 rho)).
    power = 1 if gaussian else 2
    return min(candidates, key=lambda c: (mean_range_variance(n, c[0], c[1], c[1] ** power),
                                          c[1], c[0]))


def level_weights(b: int, h: int, node_variance: float) -> list[float]:
    """w_l (inverse variances) for levels 0..h: the root level h is not measured."""
    return [1.0 / node_variance] * h + [0.0]


def level_lambdas(b: int, weights: list[float]) -> list[float]:
    """lambda_k = sum_{l <= k} w_l b**l for k = 0..h: the eigenvalue of the estimate's
    inverse covariance on the space E_k (see the module)."""
    lam, acc = [], 0.0
    for level, w in enumerate(weights):
        acc += w * b ** level
        lam.append(acc)
    return lam


def _pair_sum(a: int, s: int, n: int) -> int:
    """Sum over ranges [lo, hi) of [0, n) of |range & [a, a+s)|^2 for a block inside
    [0, n): the sum over cell pairs (i, j) of the block of (min + 1)(n - max)."""
    big_a, big_c = a + 1, n - a
    s_min = (s - 1) * s * (2 * s - 1) // 6
    s_max = s * s * (s - 1) - s_min
    s_prod = (s * (s - 1) // 2) ** 2
    return big_a * big_c * s * s - big_a * s_max + big_c * s_min - s_prod


def _level_pair_sum(s: int, n: int) -> int:
    """_pair_sum summed over the level's blocks of size s (the last one cut at n): exact,
    in O(1), summing the polynomial in the block index."""
    f, r = divmod(n, s)
    s_min = (s - 1) * s * (2 * s - 1) // 6
    s_max = s * s * (s - 1) - s_min
    s_prod = (s * (s - 1) // 2) ** 2
    # Blocks a = j s, j < f: A = j s + 1, C = n - j s.
    sj = f * (f - 1) // 2
    sj2 = (f - 1) * f * (2 * f - 1) // 6
    sum_a = f + s * sj
    sum_c = n * f - s * sj
    sum_ac = n * f + (n * s - s) * sj - s * s * sj2
    total = sum_ac * s * s - sum_a * s_max + sum_c * s_min - f * s_prod
    return total + (_pair_sum(f * s, r, n) if r else 0)


def mean_range_variance(n: int, branching: int, height: int, node_variance: float) -> float:
    """Mean variance, over all n(n+1)/2 ranges of [0, n), of the consistent tree estimate
    with this shape and noise variance per measured node (exact)."""
    lam = level_lambdas(branching, level_weights(branching, height, node_variance))
    t = [_level_pair_sum(branching ** k, n) / branching ** k for k in range(height + 1)]
    t.append(0.0)
    total = sum((t[k] - t[k + 1]) / lam[k] for k in range(height + 1))
    return float(total / (n * (n + 1) // 2))


def noise_variance(integer: bool, scale: float) -> float:
    """Variance of the noise of this scale per measured node (that of
    :class:`dpfast.noise.Laplace`)."""
    return Laplace(scale, integer).variance
