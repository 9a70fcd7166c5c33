"""pytest-benchmark cases: ``python -m pytest bench --benchmark-only``.

Not part of the test suite (tests/ has no timed assertions); compare groups side by side
with ``--benchmark-group-by=group``. ``dpfast bench`` prints the same comparisons as ratios.
"""
import numpy as np
import pytest

import dpfast as dp

N = 10**7


@pytest.fixture(scope="module")
def cha():
    return dp.ChaCha20(1)


@pytest.mark.benchmark(group="keystream")
def test_numpy_pcg64_random_raw(benchmark):
    bg = np.random.PCG64(1)
    benchmark(bg.random_raw, N)


@pytest.mark.benchmark(group="keystream")
def test_chacha20_random_raw(benchmark, cha):
    benchmark(cha.random_raw, N)


@pytest.mark.benchmark(group="laplace")
def test_numpy_generator_laplace(benchmark):
    gen = np.random.default_rng(1)
    benchmark(gen.laplace, 0.0, 1.0, N)


@pytest.mark.benchmark(group="laplace")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_laplace(benchmark, cha, threads):
    benchmark(dp.laplace, 1.0, N, rng=cha, threads=threads)


@pytest.mark.benchmark(group="laplace")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_discrete_laplace(benchmark, cha, threads):
    benchmark(dp.discrete_laplace, 1.0, N, rng=cha, threads=threads)


@pytest.mark.benchmark(group="mechanism")
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_dp_laplace_mechanism(benchmark, cha, dtype):
    counts = np.arange(N, dtype=dtype)
    acct = dp.Accountant()
    benchmark(dp.laplace_mechanism, counts, sensitivity=1, epsilon=0.5, accountant=acct,
              rng=cha)


@pytest.mark.benchmark(group="uniform")
def test_dp_uniform(benchmark, cha):
    benchmark(dp.uniform, N, rng=cha)


@pytest.mark.benchmark(group="uniform")
def test_numpy_generator_random(benchmark):
    gen = np.random.default_rng(1)
    benchmark(gen.random, N)
