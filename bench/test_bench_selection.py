"""pytest-benchmark cases for selection, Gaussian noise, randomized response and the scaling
of Laplace and the exponential mechanism with size: ``python -m pytest bench --benchmark-only``.
"""
import math

import numpy as np
import pytest

import dpfast as dp

N = 10**7


@pytest.fixture(scope="module")
def utilities():
    return np.random.default_rng(3).normal(size=N) * 3.0


@pytest.mark.benchmark(group="selection")
def test_numpy_exponential_mechanism(benchmark, utilities):
    gen = np.random.default_rng(4)

    def naive():
        p = np.exp((utilities - utilities.max()) * 0.5)
        p /= p.sum()
        return gen.choice(utilities.size, p=p)

    benchmark(naive)


@pytest.mark.benchmark(group="selection")
def test_numpy_gumbel_max(benchmark, utilities):
    gen = np.random.default_rng(5)
    benchmark(lambda: np.argmax(utilities * 0.5 + gen.gumbel(size=utilities.size)))


@pytest.mark.benchmark(group="selection")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_exponential_mechanism(benchmark, utilities, threads):
    benchmark(dp.exponential_mechanism, utilities, epsilon=1.0, accountant=dp.Accountant(),
              threads=threads)


@pytest.mark.benchmark(group="selection")
@pytest.mark.parametrize("noise", ["laplace", "exponential", "gumbel"])
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_report_noisy_max(benchmark, utilities, noise, threads):
    benchmark(dp.report_noisy_max, utilities, epsilon=1.0, noise=noise,
              accountant=dp.Accountant(), threads=threads)


@pytest.mark.benchmark(group="gaussian")
def test_numpy_normal(benchmark):
    gen = np.random.default_rng(6)
    benchmark(gen.normal, 0.0, 1.0, N)


@pytest.mark.benchmark(group="gaussian")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_gaussian(benchmark, threads):
    benchmark(dp.gaussian, 1.0, N, threads=threads)


@pytest.mark.benchmark(group="gaussian")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_discrete_gaussian(benchmark, threads):
    benchmark(dp.discrete_gaussian, 100.0, N, threads=threads)


@pytest.mark.benchmark(group="randomized_response")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_randomized_response(benchmark, threads):
    bits = (np.arange(N) % 3 == 0).astype(np.uint8)
    benchmark(dp.randomized_response, bits, epsilon=math.log(3), accountant=dp.Accountant(),
              threads=threads)


@pytest.mark.benchmark(group="scaling")
@pytest.mark.parametrize("size", [10**3, 10**4, 10**5, 10**6, 10**7, 10**8])
def test_scaling_laplace(benchmark, size):
    benchmark(dp.laplace, 1.0, size)


@pytest.mark.benchmark(group="scaling")
@pytest.mark.parametrize("size", [10**3, 10**4, 10**5, 10**6, 10**7])
def test_scaling_exponential_mechanism(benchmark, size):
    u = np.random.default_rng(7).normal(size=size)
    benchmark(dp.exponential_mechanism, u, epsilon=1.0, accountant=dp.Accountant())
