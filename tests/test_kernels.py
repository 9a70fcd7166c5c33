"""The chunked kernels: rebuilt from raw ChaCha20 streams, pinned, thread- and ISA-independent."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native
from dpfast.noise import real_laplace

CHUNK = _native.CHUNK


def _stream(key, nonce64):
    """ChaCha20 with the 64-bit-counter layout's nonce words set to nonce64, counter 0."""
    return dp.ChaCha20(key=key, nonce=b"\0\0\0\0" + int(nonce64).to_bytes(8, "little"))


def rebuild_bits(seed, n):
    """(words, n0) that the kernels consume for a call of n samples with rng=seed."""
    key = dp.ChaCha20(seed).random_raw(4).astype("<u8").tobytes()   # the per-call sub-key
    words, n0s = [], []
    for c in range(-(-n // CHUNK)):
        m = min(CHUNK, n - c * CHUNK)
        w = _stream(key, 2 * c).random_raw(m)
        h = w >> np.uint64(53)
        n0 = np.where(h > 0, 10 - np.floor(np.log2(np.maximum(h, 1))).astype(np.int64), -1)
        extra = _stream(key, 2 * c + 1)
        for i in np.flatnonzero(n0 < 0):        # slow path: continue counting zero bits
            z = 0
            for _ in range(_native.MAX_EXTRA_WORDS):
                v = int(extra.random_raw())
                if v:
                    z += 64 - v.bit_length()
                    break
                z += 64
            n0[i] = 11 + z
        words.append(w)
        n0s.append(n0.astype(np.uint64))
    return np.concatenate(words), np.concatenate(n0s)


N_MULTI = 2 * CHUNK + 1000     # three chunks, the last partial, ~70 slow-path samples


def test_discrete_laplace_rebuilt_from_keystream():
    t = 3.5
    words, n0 = rebuild_bits(77, N_MULTI)
    assert (n0 >= 11).sum() > 20          # the slow path is exercised
    want = _native.dlap_from_bits(words, n0, t).astype(np.int64)
    np.testing.assert_array_equal(dp.discrete_laplace(t, N_MULTI, rng=77), want)


def test_laplace_rebuilt_from_keystream():
    scale = 2.5
    g = dp.laplace_granularity(scale)
    words, n0 = rebuild_bits(78, N_MULTI)
    want = _native.dlap_from_bits(words, n0, scale / g) * g
    np.testing.assert_array_equal(dp.laplace(scale, N_MULTI, rng=78), want)


def test_uniform_rebuilt_from_keystream():
    words, n0 = rebuild_bits(79, N_MULTI)
    np.testing.assert_array_equal(dp.uniform(N_MULTI, rng=79),
                                  _native.uniform_from_bits(words, n0))


def test_mechanism_is_rounded_input_plus_noise():
    scale = 4.0
    x = np.linspace(-1000, 1000, N_MULTI)
    acct = dp.Accountant()
    got = dp.laplace_mechanism(x, sensitivity=1.0, epsilon=0.25, accountant=acct, rng=80)
    # On the grid that keeps the rounding of N_MULTI coordinates within budget.
    noise = real_laplace(scale, 1.0, N_MULTI)
    g = noise.g
    want = noise.fill(_native.Key(dp.ChaCha20(80)), 1, np.empty(N_MULTI), np.rint(x / g) * g)
    np.testing.assert_array_equal(got, want)
    assert g < dp.laplace_granularity(scale)
    xi = np.arange(N_MULTI, dtype=np.int64) - 5
    got_i = dp.laplace_mechanism(xi, sensitivity=2, epsilon=0.5, accountant=acct, rng=81)
    np.testing.assert_array_equal(got_i, xi + dp.discrete_laplace(4.0, N_MULTI, rng=81))


# Known answers on fixed seeds: any change to the streams or the samplers shows up here.
PINNED_DLAP = [-1, 5, -5, 0, 0, -2, -1, -1, 0, 0]
PINNED_LAPLACE_HEX = ['-0x1.b5b07c0000000p-2', '0x1.279a1a0000000p+1',
                      '-0x1.4694ef0000000p+1', '0x1.c5e9200000000p-4']
PINNED_UNIFORM_HEX = ['0x1.4dead89986178p-1', '0x1.96d2726721aa4p-4',
                      '0x1.3f5e6046feab6p-4', '0x1.ca4ac1824b488p-1']


def test_known_answers():
    assert dp.discrete_laplace(2.0, 10, rng=12345).tolist() == PINNED_DLAP
    assert [float.hex(v) for v in dp.laplace(1.0, 4, rng=12345)] == PINNED_LAPLACE_HEX
    assert [float.hex(v) for v in dp.uniform(4, rng=12345)] == PINNED_UNIFORM_HEX


@pytest.mark.parametrize("func, arg", [(dp.laplace, 1.0), (dp.discrete_laplace, 10.0),
                                       (dp.uniform, None)])
def test_output_does_not_depend_on_thread_count(func, arg):
    n = 5 * CHUNK + 123
    args = () if arg is None else (arg,)
    outs = [func(*args, n, rng=5, threads=k) for k in (1, 2, 3, 8)]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_output_does_not_depend_on_omp_num_threads(monkeypatch):
    n = 3 * CHUNK
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    a = dp.laplace(1.0, n, rng=6)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    b = dp.laplace(1.0, n, rng=6)
    np.testing.assert_array_equal(a, b)


def test_output_does_not_depend_on_instruction_set():
    impls = [name for name in ("avx512", "avx2", "scalar") if _native.set_simd_impl(name)]
    results = []
    try:
        for name in impls:
            # One switch: the sampling loops and the keystream they read (and the sub-key's).
            assert _native.set_simd_impl(name)
            assert _native.simd_impl() == name
            results.append((dp.laplace(3.0, CHUNK + 500, rng=9),
                            dp.discrete_laplace(0.7, CHUNK + 500, rng=9),
                            dp.uniform(CHUNK + 500, rng=9)))
    finally:
        _native.set_simd_impl("auto")
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_simd_environment_variable_selects_the_implementation():
    # DPFAST_SIMD is read at first use in a fresh process; outputs must not change.
    # `dpfast info` reports the instruction set in use, the one the samplers run.
    code = ("import io, dpfast as dp, dpfast._native as n, dpfast.cli as cli;"
            "x = dp.laplace(1.0, 70000, rng=3); out = io.StringIO(); cli.main(['info'], out);"
            "print(n.simd_impl(), out.getvalue().split()[out.getvalue().split().index("
            "'samplers):') + 1], x.sum().hex())")
    seen = {}
    for name in ("avx512", "avx2", "scalar"):
        if not _native.set_simd_impl(name):
            continue
        env = dict(os.environ, DPFAST_SIMD=name)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        assert out[:2] == [name] * 2
        seen[name] = out[2]
    _native.set_simd_impl("auto")
    assert len(set(seen.values())) == 1


def test_rng_forms_agree_and_advance():
    a = dp.laplace(1.0, 100, rng=dp.ChaCha20(4))
    b = dp.laplace(1.0, 100, rng=np.random.Generator(dp.ChaCha20(4)))
    c = dp.laplace(1.0, 100, rng=4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    g = dp.ChaCha20(4)
    assert not np.array_equal(dp.laplace(1.0, 100, rng=g), dp.laplace(1.0, 100, rng=g))
    # rng=None uses OS-keyed randomness.
    assert not np.array_equal(dp.laplace(1.0, 100), dp.laplace(1.0, 100))


def test_scalar_and_shapes():
    assert isinstance(dp.laplace(1.0, rng=1), float)
    assert isinstance(dp.discrete_laplace(1.0, rng=1), int)
    assert isinstance(dp.uniform(rng=1), float)
    assert dp.laplace(1.0, (3, 4), rng=1).shape == (3, 4)
    assert dp.discrete_laplace(1.0, 0, rng=1).shape == (0,)
    assert dp.uniform((2, 0), rng=1).shape == (2, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_value_range_matches_numpy_on_every_instruction_set(dtype):
    gen = np.random.default_rng(1500)
    arrays = [gen.normal(size=n) * 1e6 for n in (1, 2, 7, 8, 9, 15, 16, 17, 100, 4099)]
    impls = [name for name in ("avx512", "avx2", "scalar") if _native.set_simd_impl(name)]
    try:
        for name in impls:
            assert _native.set_simd_impl(name)
            for a in arrays:
                x = a.astype(dtype)
                assert _native.value_range(x) == (x.min().item(), x.max().item()), (name, x)
                if x.dtype.kind == "f":
                    for pos in {0, x.size // 2, x.size - 1}:
                        y = x.copy()
                        y[pos] = np.nan
                        lo, hi = _native.value_range(y)
                        assert np.isnan(lo) and np.isnan(hi), (name, y.size, pos)
                    y = x.copy()
                    y[-1] = -np.inf
                    assert _native.value_range(y)[0] == -np.inf
    finally:
        _native.set_simd_impl("auto")
    assert _native.value_range(np.zeros(0)) is None
    assert _native.value_range(np.zeros(4)[::2]) is None          # not contiguous
    assert _native.value_range(np.zeros(4, dtype=np.int8)) is None
