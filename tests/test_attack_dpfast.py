"""Mironov's support attack, run against dpfast: it must learn nothing.

For numpy (tests/test_attack_numpy.py) most single outputs for input 0 are doubles that
input 1 can never produce. Here, for every output y of dpfast's mechanism on input 0 we
exhibit keystream bits that make the mechanism on input 1 output exactly y (and the reverse):
the inverse CDF is inverted with float arithmetic, and the candidate bits are then run through
the kernel's own sampling code (a test shim over the same C function), so membership is
proven, not estimated. Deterministic (fixed seeds).
"""
import math

import numpy as np
import pytest

import dpfast as dp
from dpfast.noise import real_laplace
from dpfast import _native

MANT_MASK = (1 << 52) - 1
SIGN = 1 << 52


def bits_for(k, t):
    """(word, n0) that the kernel maps to discrete Laplace value k at parameter t."""
    k = np.asarray(k, dtype=np.int64)
    mag = np.abs(k).astype(np.float64)
    c = math.log(2) - math.log1p(math.exp(-1.0 / t))
    # Aim at the middle of the cell of |K| = mag: t*(c + L) = mag + 1/2.
    L = (mag + 0.5) / t - c
    n0 = np.maximum(np.ceil(L / math.log(2)) - 1, 0)
    m = np.exp((n0 + 1) * math.log(2) - L)
    mant = np.clip(np.round((m - 1.0) * 2.0**52), 0, MANT_MASK).astype(np.uint64)
    words = mant | np.where(k < 0, np.uint64(SIGN), np.uint64(0))
    n0 = n0.astype(np.uint64)
    got = _native.dlap_from_bits(words, n0, t)
    # The cell is ~2^28 mantissa steps wide, so the midpoint lands inside; nudge if not.
    for step in (1, -1, 2, -2, 4, -4):
        miss = got != k
        if not miss.any():
            break
        words[miss] = (words[miss] & ~np.uint64(MANT_MASK)) | \
            ((words[miss] & np.uint64(MANT_MASK)) + np.uint64(step & MANT_MASK)) \
            & np.uint64(MANT_MASK)
        got[miss] = _native.dlap_from_bits(words[miss], n0[miss], t)
    return words, n0, got == k


def reachable_grid(y, x, scale, n=1):
    """For each output y, whether the grid mechanism on input x can output exactly y (a
    release of ``n`` coordinates: its grid keeps their rounding within budget)."""
    g = real_laplace(scale, 1.0, n).g
    t = scale / g
    cells = np.asarray(y) / g
    on_grid = cells == np.round(cells)
    k = (cells - np.rint(x / g)).astype(np.int64)
    _, _, ok = bits_for(k, t)
    return on_grid & ok


@pytest.mark.parametrize("epsilon", [1.0, 0.1])
def test_every_output_is_reachable_from_the_neighbouring_input(epsilon):
    n = 20_000
    acct = dp.Accountant()
    out0 = dp.laplace_mechanism(np.zeros(n), sensitivity=1.0, epsilon=epsilon,
                                accountant=acct, rng=101)
    out1 = dp.laplace_mechanism(np.ones(n), sensitivity=1.0, epsilon=epsilon,
                                accountant=acct, rng=202)
    scale = 1.0 / epsilon
    # Sanity: the membership test accepts every output for its own input...
    assert reachable_grid(out0, 0.0, scale, n).all()
    assert reachable_grid(out1, 1.0, scale, n).all()
    # ...and then no output rules out the other input: 0 % distinguishable.
    ruled_out_0 = 1.0 - reachable_grid(out0, 1.0, scale, n).mean()
    ruled_out_1 = 1.0 - reachable_grid(out1, 0.0, scale, n).mean()
    assert ruled_out_0 == 0.0 and ruled_out_1 == 0.0


def test_outputs_share_one_grid_whatever_the_input_bits():
    # Inputs whose low bits differ (as Mironov's attack exploits) give outputs on the same
    # power-of-two grid.
    scale = 1.0
    g = real_laplace(scale, 1.0, 6000).g          # the grid of a release of 6000 values
    assert g <= dp.laplace_granularity(scale)
    inputs = np.array([0.0, 1.0, 0.1, 1 / 3, 1e-9, -2.5 + 2**-40])
    outs = dp.laplace_mechanism(np.repeat(inputs, 1000), sensitivity=1.0, epsilon=1.0,
                                accountant=dp.Accountant(), rng=7)
    cells = outs / g
    assert (cells == np.round(cells)).all()


def test_membership_test_rejects_off_grid_values():
    # The membership check is not vacuous: a value just off the grid, or a cell the kernel
    # cannot produce at this scale, is rejected.
    g = dp.laplace_granularity(1.0)
    assert not reachable_grid(np.array([0.5 * g]), 0.0, 1.0)[0]
    assert reachable_grid(np.array([3 * g]), 0.0, 1.0)[0]


def test_integer_mechanism_outputs_are_reachable_from_the_neighbour():
    acct = dp.Accountant()
    out0 = dp.laplace_mechanism(np.zeros(5000, dtype=np.int64), sensitivity=1, epsilon=1.0,
                                accountant=acct, rng=11)
    assert out0.dtype == np.int64
    for x_other in (1, -1):
        _, _, ok = bits_for(out0 - x_other, 1.0)
        assert ok.all()
