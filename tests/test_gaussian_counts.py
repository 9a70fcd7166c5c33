"""Gaussian noise in the counting releases noisy_counts, histogram, histogramdd and
count_categories (noise="gaussian" with rho=, or with epsilon= and delta=).

What is proved here:
- bad privacy keywords (a table of combinations) are refused with TypeError/ValueError for
  every release, nothing charged and the generator not advanced;
- pinned known answers on fixed seeds; the same release for 1 and 2 threads, int64 and int32
  cells, in memory and into a file, and cut into any pieces (cell-addressed noise);
- the released noise's variance is sigma**2 = l2**2 / (2 rho) for the rho charged (a
  statistical test, false-alarm rate about 2e-9 per comparison), so the charge is the exact
  zCDP cost of the noise; a neighbouring input (one record more) moves exactly one cell by 1
  under the same key (l2 sensitivity 1), and one release is one charge;
- an in-place Gaussian release into a file, killed (SIGKILL) mid-block in a child process,
  completes under its journal's key to exactly the uninterrupted release, without a second
  charge on the same ledger; a resume with other noise or another cost is refused before
  the charge.
"""
import json
import math
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import dpfast as dp
from dpfast.releases import histograms
from dpfast.releases.cells import (CHUNK, counting_measure, noisy_cells, noisy_cells_at,
                                   release_key)
from dpfast.releases.journal import JOURNAL_SUFFIX, Journal
from dpfast.noise import Gaussian
from refusals import GAUSSIAN_BAD_KEYWORDS, refuses_all, rng_state, spends_nothing

AGES = np.array([23, 35, 35, 47, 52, 61, 70, 18, 99, 5])
POINTS = np.array([[0.1, 0.2], [0.5, 0.9], [0.7, 0.3]])
CATS = list("abcabca")

RELEASES = {
    "noisy_counts": lambda **kw: dp.noisy_counts(np.arange(8) * 10, **kw),
    "noisy_counts float": lambda **kw: dp.noisy_counts(np.arange(8) * 2.5, **kw),
    "noisy_counts int32 out": lambda **kw: dp.noisy_counts(
        np.arange(8), out=np.empty(8, np.int32), **kw),
    "histogram": lambda **kw: dp.histogram(AGES, 5, range=(0, 100), **kw),
    "histogramdd": lambda **kw: dp.histogramdd(POINTS, [2, 3], range=[(0, 1), (0, 1)], **kw),
    "count_categories": lambda **kw: dp.count_categories(CATS, ["a", "b", "c"], **kw),
}

G = "gaussian"
BAD = GAUSSIAN_BAD_KEYWORDS


@pytest.mark.parametrize("name", RELEASES)
def test_bad_keywords_are_refused_before_the_charge_and_the_draw(name):
    release = RELEASES[name]
    acct, rng = dp.Accountant(rho=10.0), dp.ChaCha20(3)
    # Integer counts: a sigma beyond the discrete Gaussian sampler's range (2**39).
    integer_only = [({"noise": G, "rho": 1e-30}, ValueError)] if "float" not in name else []
    refuses_all(release, BAD + integer_only, acct, rng)
    # A release in rho alone cannot be charged to an (epsilon, delta) budget.
    for budget in (dp.Accountant(epsilon=1.0), dp.Accountant(epsilon=1.0, delta=1e-6)):
        with spends_nothing(budget, rng), pytest.raises(ValueError, match="rho"):
            release(noise=G, rho=0.1, accountant=budget, rng=rng)
    # And the good ones go through, each one charge.
    release(noise=G, rho=0.1, accountant=acct, rng=rng)
    release(noise=G, epsilon=1.0, delta=1e-6, accountant=acct, rng=rng)
    assert len(acct) == 2


def test_counts_too_large_for_an_int32_out_are_refused_before_the_charge():
    acct, rng = dp.Accountant(rho=10.0), dp.ChaCha20(4)
    counts = np.array([5, 2**31 - 2000, 7])
    with spends_nothing(acct, rng), pytest.raises(ValueError, match=r"index 1 .*beyond"):
        dp.noisy_counts(counts, noise=G, rho=1e-4, out=np.empty(3, np.int32),
                        accountant=acct, rng=rng)


def acct():
    return dp.Accountant(rho=10.0)


def test_known_answers():
    x = np.arange(8) * 10
    assert dp.noisy_counts(x, noise=G, rho=0.5, accountant=acct(), rng=41).tolist() == \
        [0, 9, 21, 30, 39, 50, 60, 70]
    assert dp.noisy_counts(x, noise=G, rho=0.02, sensitivity=3, accountant=acct(),
                           rng=43).tolist() == [-3, -8, 5, 13, 53, 37, 65, 68]
    real = dp.noisy_counts(x * 0.25, noise=G, rho=0.5, accountant=acct(), rng=42)
    assert real.tolist() == [-0.6245689392089844, 2.704557418823242, 5.044820785522461,
                             8.611743927001953, 10.774322509765625, 11.27614974975586,
                             15.771472930908203, 16.820772171020508]
    assert dp.histogram(AGES, 5, range=(0, 100), noise=G, rho=0.1, accountant=acct(),
                        rng=44)[0].tolist() == [3, 5, -2, 2, 1]
    assert dp.count_categories(CATS, ["a", "b", "c"], noise=G, rho=0.1, accountant=acct(),
                               rng=45).tolist() == [1, 4, 0]
    assert dp.histogramdd(POINTS, [2, 3], range=[(0, 1), (0, 1)], noise=G, rho=0.1,
                          accountant=acct(), rng=46)[0].tolist() == [[3, -3, 3], [-1, 0, -1]]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_same_release_for_any_threads_out_and_pieces(dtype, tmp_path):
    x = (np.random.default_rng(0).poisson(6, 3 * CHUNK + 123) * 1.5).astype(dtype)
    kw = {"noise": G, "rho": 0.02, "rng": 31}
    want = dp.noisy_counts(x, threads=1, accountant=acct(), **kw)
    assert np.array_equal(dp.noisy_counts(x, threads=2, accountant=acct(), **kw), want)
    out = np.empty(x.shape, dtype)
    dp.noisy_counts(x, out=out, threads=2, accountant=acct(), **kw)
    assert np.array_equal(out, want)
    # Into a file (a release with its journal), block by block.
    path = str(tmp_path / "out.npy")
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=x.shape)
    dp.noisy_counts(x, out=mm, accountant=acct(), **kw)
    assert np.array_equal(mm, want)
    marker = Journal(path, {}, lock=False).released
    assert marker["noise"] == G and marker["rho"] == 0.02 and marker["epsilon"] is None
    # Pieces of the release under its key, cut anywhere.
    key = release_key("noisy_counts", acct(), None, 31, rho=0.02)
    noise = counting_measure("noisy_counts", G, None, None, 0.02, 1.0, x.dtype.kind == "i",
                             acct(), x.size).noise
    cuts = np.unique(np.concatenate(([0, x.size], np.random.default_rng(1).integers(
        0, x.size, 7), [CHUNK, CHUNK - 1, 2 * CHUNK + 1])))
    got = np.concatenate([noisy_cells(key, int(a), x[a:b], noise, int32=dtype == np.int32)
                          for a, b in zip(cuts[:-1], cuts[1:])])
    assert np.array_equal(got, want)
    if dtype != np.int32:                   # cells given by index, in any order
        part = np.random.default_rng(2).permutation(x.size)[:5000]
        assert np.array_equal(noisy_cells_at(key, part, x[part], noise), want[part])


def variance_matches(noise, sigma2):
    """The sample mean is 0 and the sample variance sigma2, each within 6 standard errors
    (false alarm about 2e-9 each; the noise is (near) normal: var(s2) = 2 sigma2**2 / n)."""
    n = noise.size
    assert abs(noise.mean()) < 6 * math.sqrt(sigma2 / n)
    assert abs(noise.var() - sigma2) < 6 * sigma2 * math.sqrt(2 / (n - 1)), \
        (noise.var(), sigma2)


@pytest.mark.parametrize("integer", [True, False])
def test_noise_variance_is_the_charged_rho(integer):
    n = 1_000_000
    zeros = np.zeros(n, dtype=np.int64 if integer else np.float64)
    # rho alone, sensitivity s: sigma**2 = s**2 / (2 rho), and rho is what is charged.
    for rho, s in ((1 / 18, 1), (0.02, 3)):
        a = acct()
        noise = dp.noisy_counts(zeros, noise=G, rho=rho, sensitivity=s, accountant=a, rng=5)
        assert len(a) == 1 and a.spent.rho == rho
        variance_matches(noise.astype(np.float64), s * s / (2 * rho))
    # epsilon and delta: charged (epsilon, delta), stating the noise's exact rho.
    a = dp.Accountant(epsilon=2.0, delta=1e-6, composition="zcdp")
    noise = dp.noisy_counts(zeros, noise=G, epsilon=0.5, delta=1e-9, accountant=a, rng=6)
    entry = a.ledger[0]
    assert (entry.epsilon, entry.delta) == (0.5, 1e-9)
    variance_matches(noise.astype(np.float64), 1 / (2 * entry.rho))


def test_one_more_record_moves_one_cell_by_one_under_the_same_key():
    ages = np.random.default_rng(2).integers(0, 100, 10_000)
    kw = {"bins": 20, "range": (0, 100), "noise": G, "rho": 0.05, "rng": 9}
    a, b = acct(), acct()
    h0, _ = dp.histogram(ages, accountant=a, **kw)
    h1, _ = dp.histogram(np.append(ages, 42), accountant=b, **kw)
    diff = h1 - h0
    assert diff[8] == 1 and np.count_nonzero(diff) == 1          # l2 distance 1
    # Charged once, rho = l2**2 / (2 sigma**2) with l2 = 1.
    assert len(a) == 1 and a.spent.rho == 0.05
    sigma = dp.noise.measure("histogram", G, None, None, 0.05, l1=1, l2=1,
                             integer=True).noise.sigma
    assert 1 / (2 * sigma**2) <= 0.05 and math.isclose(1 / (2 * sigma**2), 0.05)


# -- an in-place release into a file, killed mid-block and resumed ------------------------

CHILD = r"""
import json, os, signal, sys
import numpy as np
import dpfast as dp
from dpfast.releases import histograms, journal
path, block, kwargs, ledger, seed = sys.argv[1:6]
histograms.BLOCK = int(block)
marked = journal.Journal.mark_done
def mark_done(self, b, cells):
    if b == 2:      # block 2 saved and noised in the file, not yet recorded done
        os.kill(os.getpid(), signal.SIGKILL)
    return marked(self, b, cells)
journal.Journal.mark_done = mark_done
table = np.lib.format.open_memmap(path, mode="r+")
dp.noisy_counts(table, out=table, rng=int(seed), accountant=dp.Accountant.from_ledger(ledger),
                progress=False, **json.loads(kwargs))
"""


def test_a_killed_gaussian_file_release_completes_exactly_and_is_charged_once(
        tmp_path, monkeypatch):
    monkeypatch.setattr(histograms, "BLOCK", CHUNK)     # five blocks of the kernels' chunk
    n, seed = 5 * CHUNK, 12
    kwargs = {"noise": G, "epsilon": 1.0, "delta": 1e-7}
    true = (np.arange(n) % 1000).astype(np.int32)
    want = dp.noisy_counts(true, out=true.copy(), accountant=dp.Accountant(2.0, 1e-6),
                           rng=seed, **kwargs)
    path, ledger = str(tmp_path / "cells.npy"), str(tmp_path / "budget.ledger")
    np.save(path, true)
    dp.Accountant(epsilon=2.0, delta=1e-6, ledger=ledger)
    child = subprocess.run([sys.executable, "-c", CHILD, path, str(CHUNK),
                            json.dumps(kwargs), ledger, str(seed)])
    assert child.returncode == -signal.SIGKILL
    assert Journal(path, {}, lock=False).resuming
    budget = dp.Accountant.from_ledger(ledger)
    entry = budget.ledger[0]                        # the interrupted release's one charge
    assert (entry.epsilon, entry.delta) == (1.0, 1e-7) and entry.rho > 0
    table = np.lib.format.open_memmap(path, mode="r+")
    before = np.array(table)
    rng = dp.ChaCha20(3)
    for other, name in (({"noise": "laplace", "delta": None}, "noise"),
                        ({"delta": 1e-8}, "delta"),
                        ({"epsilon": None, "delta": None, "rho": 0.01}, "epsilon")):
        with spends_nothing(budget, rng), pytest.raises(ValueError,
                                                        match=f"interrupted.*{name}=|"
                                                              "rho alone"):
            dp.noisy_counts(table, out=table, accountant=budget, rng=rng,
                            **{**kwargs, **other})
        assert np.array_equal(table, before)
    # The same keywords complete it under the journal's key: no new charge on this ledger
    # (its charge committed to that key at that very cost), nothing drawn from rng.
    dp.noisy_counts(table, out=table, accountant=budget, rng=rng, **kwargs)
    # one charge, and the completion's record that it stands (no cost)
    assert len(budget) == 2 and budget.ledger[1].charged == (0.0, 0.0)
    assert rng_state(rng) == (0, 128)
    assert np.array_equal(table, want)
    assert not os.path.exists(path + ".dpfast-undo")
    assert Journal(path, {}, lock=False).released["sigma"] == \
        dp.noise.measure("noisy_counts", G, 1.0, 1e-7, None, l1=1, l2=1,
                         integer=True).noise.sigma
    assert os.path.exists(path + JOURNAL_SUFFIX)
