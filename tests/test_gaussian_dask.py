"""Gaussian noise in every dpfast.dask release, on a real distributed.LocalCluster of worker
processes.

What is proved here: with noise="gaussian" (rho=, or epsilon= and delta=), each release is
bit-identical for 1 and 2 workers and any chunking or partitioning, and equal to its
single-machine namesake with the same seed (discrete Gaussian noise, cell-addressed);
each is charged once, its whole cost (a table's rho, a tree's or a hierarchy's
params.cost); bad privacy keywords are refused with nothing charged, drawn or submitted to
the cluster. Skipped without Dask. No timing assertions.
"""
import math

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dpfast.dask needs dask (pip install dpfast[dask])")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dpfast as dp  # noqa: E402
import dpfast.dask as dpd  # noqa: E402
from refusals import GAUSSIAN_BAD_KEYWORDS, rng_state, spends_nothing  # noqa: E402

pytestmark = pytest.mark.xdist_group("dask")
G = "gaussian"
KEYS = {"sex": ["F", "M"], "edu": ["HS", "BA", "MA", "PhD"]}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    n = 50_000
    return pd.DataFrame({"sex": rng.choice(["F", "M"], n),
                         "edu": rng.choice(["HS", "BA", "MA"], n),
                         "age": rng.integers(0, 100, n),
                         "block": rng.integers(0, 300, n)})


def zcdp():
    return dp.Accountant(rho=10.0)


@pytest.mark.parametrize("dtype, kwargs", [
    (np.int64, {"rho": 0.02}),
    (np.int32, {"rho": 0.02, "dtype": np.int32}),
    (np.float64, {"epsilon": 0.5, "delta": 1e-9}),
], ids=["int64", "int32", "float64"])
def test_noisy_counts_any_workers_and_chunks(clusters, dtype, kwargs):
    x = (np.random.default_rng(0).poisson(7, 150_007) * 1.5).astype(dtype)
    single = {k: v for k, v in kwargs.items() if k != "dtype"}
    out = np.empty(x.shape, dtype)
    want = dp.noisy_counts(x, noise=G, out=out, accountant=zcdp(), rng=21, **single)
    for n, chunkings in ((1, (150_007,)), (2, (150_007, 77_777))):
        client = clusters(n)
        for chunks in chunkings:
            acct = zcdp()
            got = dpd.noisy_counts(da.from_array(x, chunks=chunks), noise=G, accountant=acct,
                                   rng=21, **kwargs)
            result = client.compute(got).result()
            assert result.dtype == dtype and np.array_equal(result, want), (n, chunks)
            assert len(acct) == 1                    # one charge, on the client


def test_frame_releases_equal_the_single_machine_ones(clusters, frame):
    rho = 0.05
    with clusters(2).as_current():
        for parts in (1, 7):
            f = dd.from_pandas(frame, npartitions=parts)
            acct = zcdp()
            got = [dpd.histogram(f["age"], bins=10, range=(0, 100), noise=G, rho=rho,
                                 accountant=acct, rng=31)[0],
                   dpd.histogramdd(f[["age", "block"]], [5, 6], range=[(0, 100), (0, 300)],
                                   noise=G, rho=rho, accountant=acct, rng=32)[0],
                   dpd.count_categories(f["edu"], KEYS["edu"], noise=G, rho=rho,
                                        accountant=acct, rng=33),
                   dpd.crosstab(f, ["sex", "edu"], keys=KEYS, noise=G, rho=rho,
                                accountant=acct, rng=34).to_numpy()]
            # Each release charged once, its table's rho (l2 sensitivity 1).
            assert [e.rho for e in acct.ledger] == [rho] * 4
            want = [dp.histogram(frame["age"].to_numpy(), bins=10, range=(0, 100), noise=G,
                                 rho=rho, accountant=zcdp(), rng=31)[0],
                    dp.histogramdd(frame[["age", "block"]].to_numpy(), [5, 6],
                                   range=[(0, 100), (0, 300)], noise=G, rho=rho,
                                   accountant=zcdp(), rng=32)[0],
                    dp.count_categories(frame["edu"], KEYS["edu"], noise=G, rho=rho,
                                        accountant=zcdp(), rng=33),
                    dp.crosstab(frame, ["sex", "edu"], keys=KEYS, noise=G, rho=rho,
                                accountant=zcdp(), rng=34).to_numpy()]
            for g, w in zip(got, want):
                assert np.array_equal(g, w), parts


def test_tree_and_hierarchy_charge_their_whole_cost_once(clusters, frame):
    ages = np.bincount(frame["age"], minlength=128)
    blocks = np.bincount(frame["block"], minlength=300)
    hierarchy = [np.zeros(10, np.int64), np.repeat(np.arange(10), 30)]
    with clusters(2).as_current():
        for parts in (1, 5):
            f = dd.from_pandas(frame, npartitions=parts)
            a = dp.Accountant(epsilon=1.0, delta=1e-6, composition="zcdp")
            tree = dpd.tree_mechanism(f, "age", 128, noise=G, epsilon=0.5, delta=1e-7,
                                      accountant=a, rng=41)
            hier = dpd.census_hierarchy(f, "block", hierarchy, noise=G, rho=0.01,
                                        accountant=zcdp(), rng=42)
            want_a = dp.Accountant(epsilon=1.0, delta=1e-6, composition="zcdp")
            want_tree = dp.tree_mechanism(ages, noise=G, epsilon=0.5, delta=1e-7,
                                          accountant=want_a, rng=41)
            want_hier = dp.census_hierarchy(blocks, hierarchy, noise=G, rho=0.01,
                                            accountant=zcdp(), rng=42)
            assert np.array_equal(tree.estimate, want_tree.estimate)
            assert all(np.array_equal(x, y) for x, y in zip(hier.counts, want_hier.counts))
            # One charge of the tree's whole cost, the same as the single-machine release.
            assert len(a) == 1 and len(want_a) == 1
            (e,), (w,) = a.ledger, want_a.ledger
            assert (e.epsilon, e.delta, e.rho) == (w.epsilon, w.delta, w.rho) == \
                (0.5, 1e-7, w.rho)
    levels = hier.counts                       # consistent, non-negative integers
    assert all(np.array_equal(np.bincount(p, weights=levels[i + 1],
                                          minlength=levels[i].size), levels[i])
               for i, p in enumerate(hierarchy))
    assert all(lv.min() >= 0 for lv in levels)


BAD = GAUSSIAN_BAD_KEYWORDS

HIERARCHY = [np.zeros(10, np.int64), np.repeat(np.arange(10), 30)]
CALLS = {
    "noisy_counts": lambda f, a, kw: dpd.noisy_counts(a, **kw),
    "histogram": lambda f, a, kw: dpd.histogram(f["age"], 10, range=(0, 100), **kw),
    "histogramdd": lambda f, a, kw: dpd.histogramdd(f[["age"]], [10], range=[(0, 100)], **kw),
    "count_categories": lambda f, a, kw: dpd.count_categories(f["edu"], KEYS["edu"], **kw),
    "crosstab": lambda f, a, kw: dpd.crosstab(f, ["sex"], keys=KEYS, **kw),
    "tree_mechanism": lambda f, a, kw: dpd.tree_mechanism(f, "age", 128, **kw),
    "census_hierarchy": lambda f, a, kw: dpd.census_hierarchy(f, "block", HIERARCHY, **kw),
}


def _transitions(client):
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


@pytest.mark.parametrize("name", CALLS)
def test_bad_keywords_spend_nothing_draw_nothing_submit_nothing(clusters, frame, name):
    call, client = CALLS[name], clusters(1)
    f = dd.from_pandas(frame, npartitions=3)
    arr = da.from_array(np.arange(1000), chunks=100)
    acct, rng = zcdp(), dp.ChaCha20(5)
    eps_delta = dp.Accountant(epsilon=1.0, delta=1e-6)
    with client.as_current():
        before = _transitions(client)
        for kwargs, exc in BAD:
            with spends_nothing(acct, rng), pytest.raises(exc):
                call(f, arr, {"accountant": acct, "rng": rng, **kwargs})
        # rho alone cannot be charged to an (epsilon, delta) budget: refused unread.
        with spends_nothing(eps_delta, rng), pytest.raises(ValueError, match="rho"):
            call(f, arr, {"noise": G, "rho": 0.01, "accountant": eps_delta, "rng": rng})
        assert _transitions(client) == before              # nothing submitted
    assert rng_state(rng) == (0, 128)
