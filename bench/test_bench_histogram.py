"""pytest-benchmark cases for table releases: ``python -m pytest bench --benchmark-only``."""
import numpy as np
import pytest

import dpfast as dp

RECORDS = 10**8


@pytest.fixture(scope="module")
def codes():
    return np.random.default_rng(1).integers(0, 1000, size=RECORDS)


@pytest.mark.benchmark(group="histogram")
def test_numpy_histogram(benchmark, codes):
    benchmark(np.histogram, codes, 1000, (0, 1000))


@pytest.mark.benchmark(group="histogram")
def test_numpy_bincount_plus_laplace(benchmark, codes):
    gen = np.random.default_rng(2)
    benchmark(lambda: np.bincount(codes, minlength=1000) + gen.laplace(0.0, 1.0, 1000))


@pytest.mark.benchmark(group="histogram")
@pytest.mark.parametrize("threads", [1, 2])
def test_dp_histogram(benchmark, codes, threads):
    acct = dp.Accountant()
    benchmark(dp.histogram, codes, 1000, range=(0, 1000), epsilon=1.0, accountant=acct,
              threads=threads)


@pytest.mark.benchmark(group="noisy_counts")
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_dp_noisy_counts_in_place(benchmark, dtype):
    table = np.arange(10**7, dtype=dtype) % 1000
    acct = dp.Accountant()
    benchmark(dp.noisy_counts, table, epsilon=1.0, out=table, accountant=acct)
