"""The coins binary and categorical randomized response share: the keep probability that makes
them exactly epsilon-DP, and the full-precision uniforms they are compared with.

Every coin compares a full-precision uniform ``U`` with a double threshold ``t``, so
``P[U < t] = t`` exactly (see :mod:`dpfast.mechanisms.randomized_response`, "Floating
point"); :func:`keep_probability` chooses the threshold of a keep coin as a double whose
exact odds ratio does not exceed ``e**eps``, and :func:`uniforms` draws ``CHUNK``
respondents' uniforms at most per kernel call.
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from .. import noise as _noise

if TYPE_CHECKING:
    from typing import Any, TypeAlias

    from numpy.typing import NDArray

    from .._release import Keys

    # An integer as the checks here accept it: any numbers.Integral (which mypy does not
    # see int or numpy integers as), bools excluded at run time.
    IntLike: TypeAlias = int | np.integer[Any] | numbers.Integral

__all__ = ["CHUNK", "keep_probability", "uniforms"]

# Respondents per kernel call: bounds the temporary uniforms at 32 MiB whatever the input
# size; a constant, so a seed gives the same output for any input length split.
CHUNK = 2**22


def keep_probability(eps: float, k: int) -> float:
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


def uniforms(keys: Keys, threads: int, n: int) -> NDArray[np.float64]:
    """n full-precision uniforms from one kernel call (the release's next key)."""
    return _noise.uniforms(keys.next(), threads, np.empty(n))
