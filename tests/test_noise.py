"""The noise layer: each noise object draws exactly what its kernel draws, and states its
scale, variance, tail bound and privacy cost."""
import math

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native, zcdp
from dpfast.noise import Gaussian, Laplace
from dpfast.samplers import dlap_variance, gaussian_grid, laplace_grid


def _key(seed):
    return _native.Key(dp.ChaCha20(seed))


@pytest.mark.parametrize("integer", [True, False])
def test_laplace_fill_matches_its_kernel_bit_for_bit(integer):
    n = _native.CHUNK + 5            # two chunks: the chunk offset is part of the address
    dtype = np.int64 if integer else np.float64
    base = np.arange(n, dtype=dtype)
    got = Laplace(3.5, integer).fill(_key(7), 2, np.empty(n, dtype), base, 4)
    want = np.empty(n, dtype)
    if integer:
        _native.fill_discrete_laplace(_key(7), 2, want, 3.5, base, 4)
    else:
        g, t = laplace_grid(3.5)
        _native.fill_laplace(_key(7), 2, want, t, g, base, 4)
    assert np.array_equal(got, want)
    assert not np.array_equal(got, base)


@pytest.mark.parametrize("integer", [True, False])
def test_gaussian_fill_matches_its_kernel_bit_for_bit(integer):
    n = 1000
    dtype = np.int64 if integer else np.float64
    got = Gaussian(7.25, integer).fill(_key(3), 1, np.empty(n, dtype))
    want = np.empty(n, dtype)
    if integer:
        _native.fill_discrete_gaussian(_key(3), 1, want, 7.25)
    else:
        g = gaussian_grid(7.25)
        _native.fill_gaussian(_key(3), 1, want, 7.25 / g, g)
    assert np.array_equal(got, want)
    assert 5 < got.std() < 10


def test_scalars_match_their_kernels():
    assert Laplace(2.0, True).scalar(_key(1), 1, 10) == \
        _native.discrete_laplace_scalar(_key(1), 1, 2.0, 10)
    g, t = laplace_grid(2.0)
    assert Laplace(2.0, False).scalar(_key(1), 1, 1.5) == \
        _native.laplace_scalar(_key(1), 1, t, g, 1.5)
    cell = Gaussian(4.0, True).fill(_key(2), 1, np.zeros(1, np.int64))
    assert Gaussian(4.0, True).scalar(_key(2), 1, 0) == int(cell[0])


@pytest.mark.parametrize("integer", [True, False])
def test_the_one_number_kernel_takes_a_key_and_nothing_else(integer):
    kernel, params = Laplace(2.0, integer).scalar_kernel
    assert isinstance(kernel(_key(1), 1, *params, 3), int if integer else float)
    for bad in (dp.ChaCha20(seed=1), None, b"\x00" * 32):
        with pytest.raises(TypeError):
            kernel(bad, 1, *params, 3)


def test_costs_variances_and_tail_bounds():
    lap = Laplace(4.0, integer=True)
    assert lap.epsilon(2.0) == 0.5 and lap.rho(2.0) == 0.125
    assert lap.variance == dlap_variance(4.0)
    g, t = laplace_grid(4.0)
    assert Laplace(4.0, integer=False).variance == dlap_variance(t) * g * g
    # P[|K| > j] = 2 q^(j+1) / (1 + q) <= beta, and j is the smallest such.
    j = lap.tail_bound(0.05)
    q = math.exp(-1 / 4.0)
    assert 2 * q ** (j + 1) / (1 + q) <= 0.05 < 2 * q ** j / (1 + q)
    gau = Gaussian(10.0, integer=True)
    assert gau.variance == 100.0 and gau.scale == 10.0 and gau.rho(2.0) == 0.02
    # (epsilon, delta): the tight conversion of its rho, never below dpfast.zcdp's.
    assert gau.epsilon(2.0, 1e-6) == zcdp.epsilon_from_rho(0.02, 1e-6)
    assert Gaussian(10.0, integer=False).epsilon(2.0, 1e-6) == gau.epsilon(2.0, 1e-6)
    assert 0.6 < gau.epsilon(2.0, 1e-6) < 1.2
    assert gau.tail_bound(0.05) == pytest.approx(10 * math.sqrt(2 * math.log(40)))


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_scale_is_refused(bad):
    with pytest.raises(ValueError, match="scale"):
        Laplace(bad, True)
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(bad, False)
    with pytest.raises(TypeError):
        Laplace("1", True)  # type: ignore[arg-type]
