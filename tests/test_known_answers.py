"""Known answers for every public sampler and mechanism on fixed seeds.

Each case is a release made with a seed; its output is reduced to dtype, shape and a SHA-256
prefix of its bytes, and compared with ``known_answers.json``, recorded from dpfast before
its kernels were reorganized. The same digest must come out on every instruction set this
CPU runs and on one and two threads: a seed gives the same release everywhere.

Regenerate the file only for a deliberate, documented change of outputs::

    python tests/test_known_answers.py --write
"""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dpfast as dp

C = 65536


def digest(x):
    """dtype, shape and SHA-256 prefix of an output (tuples and lists element by element)."""
    if isinstance(x, tuple):
        return "|".join(digest(v) for v in x)
    if isinstance(x, list):
        return digest(tuple(x))
    if isinstance(x, (int, float, str)) or x is None:
        return repr(x)
    a = np.asarray(x)
    return f"{a.dtype.str}{a.shape}:" + hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:24]


def acct():
    return dp.Accountant(delta=0.5)


def cases():
    """name -> function of the thread count that makes the release."""
    out = {}
    def add(name, fn):
        out[name] = fn
    for n in (None, 1, 7, 129, C + 13, 3 * C):
        add(f"uniform {n}", lambda t, n=n: dp.uniform(n, rng=11, threads=t))
        add(f"laplace {n}", lambda t, n=n: dp.laplace(2.5, n, rng=12, threads=t))
        add(f"discrete_laplace {n}", lambda t, n=n: dp.discrete_laplace(3.0, n, rng=13, threads=t))
        add(f"gaussian {n}", lambda t, n=n: dp.gaussian(1.5, n, rng=14, threads=t))
        add(f"discrete_gaussian {n}", lambda t, n=n: dp.discrete_gaussian(7.0, n, rng=15, threads=t))
    add("laplace tiny scale", lambda t: dp.laplace(1e-200, 1000, rng=16, threads=t))
    add("discrete_laplace big", lambda t: dp.discrete_laplace(2.0**39, 1000, rng=17, threads=t))
    add("discrete_gaussian small", lambda t: dp.discrete_gaussian(0.3, 5000, rng=18, threads=t))
    add("raw", lambda t: dp.ChaCha20(19).random_raw(1000))
    add("default_rng", lambda t: dp.default_rng(20).integers(0, 100, 50))
    add("spawn", lambda t: [g.random_raw(3) for g in dp.ChaCha20(21).spawn(3)])
    add("lm int scalar", lambda t: dp.laplace_mechanism(5, sensitivity=1, epsilon=1.0, accountant=acct(), rng=22, threads=t))
    add("lm float scalar", lambda t: dp.laplace_mechanism(5.25, sensitivity=1, epsilon=1.0, accountant=acct(), rng=23, threads=t))
    add("lm int array", lambda t: dp.laplace_mechanism(np.arange(C + 5), sensitivity=2, epsilon=0.5, accountant=acct(), rng=24, threads=t))
    add("lm float array", lambda t: dp.laplace_mechanism(np.linspace(-3, 3, 2 * C + 1).reshape(-1, 1), sensitivity=2, epsilon=0.5, accountant=acct(), rng=25, threads=t))
    add("gm scalar", lambda t: dp.gaussian_mechanism(3.0, sensitivity=1, epsilon=1.0, delta=1e-6, accountant=acct(), rng=26, threads=t))
    add("gm array", lambda t: dp.gaussian_mechanism(np.arange(C + 9, dtype=float), sensitivity=1, epsilon=1.0, delta=1e-6, accountant=acct(), rng=27, threads=t))
    data = np.random.default_rng(5).integers(0, 100, 300000)
    add("histogram int", lambda t: dp.histogram(data, 10, range=(0, 100), epsilon=1.0, accountant=acct(), rng=28, threads=t))
    add("histogram float edges", lambda t: dp.histogram(data * 1.5, [0, 3, 10, 50, 150], epsilon=1.0, accountant=acct(), rng=29, threads=t))
    add("histogram clip", lambda t: dp.histogram(data, 7, range=(0, 100), epsilon=0.1, accountant=acct(), rng=30, threads=t, postprocess="clip"))
    add("histogram consistent", lambda t: dp.histogram(data, 7, range=(0, 100), epsilon=0.1, accountant=acct(), rng=31, threads=t, postprocess="consistent"))
    pts = np.random.default_rng(6).normal(size=(100000, 2))
    add("histogramdd", lambda t: dp.histogramdd(pts, [4, 5], range=[(-2, 2), (-3, 3)], epsilon=1.0, accountant=acct(), rng=32, threads=t))
    cats = np.array(["a", "b", "c", "d"])[np.random.default_rng(7).integers(0, 4, 10000)]
    add("count_categories", lambda t: dp.count_categories(cats, ["a", "b", "c"], other=True, epsilon=1.0, accountant=acct(), rng=33, threads=t))
    counts = np.random.default_rng(8).integers(0, 1000, 5 * C + 3)
    add("noisy_counts int", lambda t: dp.noisy_counts(counts, epsilon=1.0, accountant=acct(), rng=34, threads=t))
    add("noisy_counts float", lambda t: dp.noisy_counts(counts * 0.5, epsilon=1.0, accountant=acct(), rng=35, threads=t))
    def nc_i32(t):
        m = counts.astype(np.int32)
        dp.noisy_counts(m, epsilon=1.0, accountant=acct(), rng=36, threads=t, out=m)
        return m
    add("noisy_counts i32 inplace", nc_i32)
    def nc_block(t):
        big = np.arange((1 << 22) + 1000, dtype=np.int64)
        dp.noisy_counts(big, epsilon=2.0, accountant=acct(), rng=37, threads=t, out=big)
        return big
    add("noisy_counts blocks inplace", nc_block)
    u = np.random.default_rng(9).normal(size=3 * C + 11) * 3
    for noise in ("laplace", "exponential", "gumbel"):
        add(f"rnm {noise}", lambda t, noise=noise: [dp.report_noisy_max(u, epsilon=1.0, noise=noise, accountant=acct(), rng=38 + i, threads=t) for i in range(5)])
    add("em", lambda t: [dp.exponential_mechanism(u, epsilon=1.0, accountant=acct(), rng=50 + i, threads=t) for i in range(8)])
    add("em small", lambda t: [dp.exponential_mechanism([3, 1, 2], epsilon=1.0, monotonic=True, accountant=acct(), rng=60 + i, threads=t) for i in range(8)])
    add("pf", lambda t: [dp.permute_and_flip(u, epsilon=1.0, accountant=acct(), rng=70 + i, threads=t) for i in range(5)])
    add("top_k", lambda t: dp.top_k(u, 7, epsilon=1.0, accountant=acct(), rng=80, threads=t))
    bits = (np.arange(5_000_000) % 3 == 0).astype(np.uint8)
    add("rr p", lambda t: dp.randomized_response(bits, p=0.8, accountant=acct(), rng=81, threads=t))
    add("rr eps", lambda t: dp.randomized_response(bits, epsilon=1.0, accountant=acct(), rng=82, threads=t))
    add("rr scalar", lambda t: dp.randomized_response(1, epsilon=1.0, accountant=acct(), rng=83, threads=t))
    codes = np.random.default_rng(10).integers(0, 5, 5_000_000)
    add("rr categorical", lambda t: dp.randomized_response_categorical(codes, 5, epsilon=1.0, accountant=acct(), rng=84, threads=t))
    return out


ANSWERS = Path(__file__).with_name("known_answers.json")


CASES = cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_known_answer(name, impl):
    want = json.loads(ANSWERS.read_text())[name]
    for threads in (1, 2):
        assert digest(CASES[name](threads)) == want, (name, impl, threads)


def test_every_case_has_an_answer():
    assert sorted(json.loads(ANSWERS.read_text())) == sorted(CASES)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    ANSWERS.write_text(json.dumps({k: digest(f(1)) for k, f in CASES.items()}, indent=1,
                                  sort_keys=True) + "\n")
