"""The noise of a sparse-vector object, shared by the sparse-vector mechanisms and the
private multiplicative weights of :mod:`dpfast.linear.online`.

For each of the threshold, the comparisons and the released values, one Laplace scale
(Lyu, Su & Li 2017, Algorithms 1 and 7) and the :class:`dpfast.noise.Laplace` of that scale:
discrete for an integer threshold with an integral sensitivity, otherwise on dpfast's grid
(:mod:`dpfast.samplers`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v
from ..noise import Laplace
from ..samplers import MAX_DISCRETE_SCALE

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .._release import Keys

__all__ = ["MAX_INT", "ThresholdNoise", "make_noise"]

#: Integer thresholds and queries stay exact in int64 with noise added while |value| <= 2^62.
MAX_INT = 2**62


@dataclass(frozen=True)
class ThresholdNoise:
    """The noise of one sparse-vector object: for each of the threshold, the comparisons
    and the released values, the scale, and the :class:`dpfast.noise.Laplace` of each
    scale (discrete, or on that scale's grid)."""

    discrete: bool
    threshold: float                   # noise scales
    queries: float
    values: float
    laplaces: dict[float, Laplace] = field(default_factory=dict, compare=False)

    def laplace(self, scale: float) -> Laplace:
        """The Laplace noise of this scale: discrete (parameter ``scale``) or on the grid of
        :func:`dpfast.samplers.laplace_grid` ``(scale)``."""
        noise = self.laplaces.get(scale)
        if noise is None:
            noise = self.laplaces[scale] = Laplace(scale, integer=self.discrete)
        return noise

    def limit(self, scale: float) -> float:
        """The largest magnitude a value noised at this scale may have."""
        return float(MAX_INT) if self.discrete else 2.0**52 * self.laplace(scale).g

    def draw(self, keys: Keys, threads: int, base: NDArray[Any],
             scale: float) -> NDArray[Any]:
        """``base`` (int64 when discrete, else float64) plus noise of this scale, under the
        release's next key."""
        out = np.empty(base.size, np.int64 if self.discrete else np.float64)
        return self.laplace(scale).fill(keys.next(), threads, out, base)

    def draw_one(self, keys: Keys, value: int | float, scale: float) -> int | float:
        """One value plus noise of this scale (on the calling thread), under the release's
        next key."""
        return self.laplace(scale).scalar(keys.next(), 1, int(value) if self.discrete
                                          else float(value))


def make_noise(threshold: object, epsilon: float, cutoff: int, sensitivity: float,
               monotonic: bool, shares: tuple[float, ...], func: str) -> ThresholdNoise:
    """The noise scales (Lyu et al., Algorithms 1 and 7), discrete for an integer threshold
    and an integral sensitivity, each within the samplers' range."""
    discrete = isinstance(threshold, (int, np.integer)) and not isinstance(
        threshold, (bool, np.bool_)) and float(sensitivity).is_integer()
    per_query = (1.0 if monotonic else 2.0) * cutoff * sensitivity
    scales = (sensitivity / (shares[0] * epsilon), per_query / (shares[1] * epsilon),
              cutoff * sensitivity / (shares[2] * epsilon) if len(shares) > 2 else 1.0)
    high = MAX_DISCRETE_SCALE if discrete else _v.MAX_SCALE
    for scale in scales:
        _v.check_noise_scale(scale, "'epsilon', 'sensitivity', 'cutoff' and 'shares'", func,
                             high=high)
    return ThresholdNoise(discrete, *scales)
