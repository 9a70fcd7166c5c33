"""dpfast.dask on a real distributed.LocalCluster (worker processes): the same seed gives
bit-identical releases for 1, 2 and 4 workers and three chunkings, equal to the
single-machine release; a worker killed mid-release changes nothing; bad input spends
nothing and submits nothing. Skipped without Dask. No timing assertions."""
import os
import signal
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dpfast.dask needs dask (pip install dpfast[dask])")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dpfast as dp  # noqa: E402
import dpfast.dask as dpd  # noqa: E402

WORKERS = (1, 2, 4)
# One pytest-xdist worker runs this whole module (with --dist loadgroup), so its clusters
# are started once.
pytestmark = pytest.mark.xdist_group("dask")


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """200,000 records as Parquet datasets of 1, 5 and 12 files, and as pandas."""
    rng = np.random.default_rng(1)
    n = 200_000
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n),
                          "edu": rng.choice(["HS", "BA", "MA"], n, p=[0.5, 0.3, 0.2]),
                          "age": rng.integers(17, 91, n),
                          "block": rng.integers(0, 2_000, n)})
    paths = []
    for parts in (1, 5, 12):
        path = tmp_path_factory.mktemp(f"parquet{parts}")
        dd.from_pandas(frame, npartitions=parts).to_parquet(path, write_index=False)
        paths.append(path)
    return frame, paths


KEYS = {"sex": ["F", "M"], "edu": ["HS", "BA", "MA", "PhD"]}


def test_noisy_counts_is_the_same_for_any_workers_and_chunks(clusters):
    x = np.random.default_rng(0).poisson(7, 200_003)     # chunks across kernel chunks
    want = dp.noisy_counts(x, epsilon=0.5, accountant=dp.Accountant(), rng=21)
    # Every chunking on two workers; one and four workers on the uneven one.
    for n in WORKERS:
        client = clusters(n)
        for chunks in ((200_003, 50_000, 77_777) if n == 2 else (77_777,)):
            got = dpd.noisy_counts(da.from_array(x, chunks=chunks), epsilon=0.5,
                                   accountant=dp.Accountant(), rng=21)
            assert np.array_equal(client.compute(got).result(), want), (n, chunks)


def test_two_dimensional_counts_any_chunks(clusters):
    x = np.random.default_rng(2).poisson(3.0, (600, 700)).astype(np.float64) / 2
    want = dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng=22)
    client = clusters(2)
    for chunks in ((600, 700), (100, 350), (77, 64)):
        got = dpd.noisy_counts(da.from_array(x, chunks=chunks), epsilon=1.0,
                               accountant=dp.Accountant(), rng=22)
        assert np.array_equal(client.compute(got).result(), want), chunks


def test_counts_from_an_npy_file(clusters, tmp_path):
    x = np.random.default_rng(3).poisson(5, 1_500_000).astype(np.int32)
    path = tmp_path / "counts.npy"
    np.save(path, x)
    want = dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng=23)
    got = dpd.noisy_counts(dpd.from_npy(str(path), chunks=400_000), epsilon=1.0,
                           accountant=dp.Accountant(), rng=23)
    assert np.array_equal(clusters(2).compute(got).result(), want)


def test_crosstab_from_parquet_any_workers_and_partitions(clusters, records):
    frame, paths = records
    want = dp.crosstab(frame, ["sex", "edu"], epsilon=1.0, keys=KEYS,
                       accountant=dp.Accountant(), rng=24)
    for n in (1, 2):                    # 4 workers: in the noisy-counts test above
        with clusters(n).as_current():
            for path in paths:
                got = dpd.crosstab(dd.read_parquet(path), ["sex", "edu"], epsilon=1.0,
                                   keys=KEYS, accountant=dp.Accountant(), rng=24)
                pd.testing.assert_frame_equal(got, want)


def test_other_frame_releases_on_the_cluster(clusters, records):
    frame, paths = records
    with clusters(2).as_current():
        parts = [dd.read_parquet(p) for p in paths]
        hist = [dpd.histogram(f["age"], bins=8, range=(10, 90), epsilon=1.0,
                              accountant=dp.Accountant(), rng=25)[0] for f in parts]
        cats = [dpd.count_categories(f["edu"], KEYS["edu"], epsilon=1.0,
                                     accountant=dp.Accountant(), rng=26) for f in parts]
        tree = [dpd.tree_mechanism(f, "age", 128, epsilon=1.0, accountant=dp.Accountant(),
                                   rng=27).estimate for f in parts]
        hierarchy = [np.zeros(20, np.int64), np.repeat(np.arange(20), 100)]
        hier = [dpd.census_hierarchy(f, "block", hierarchy, epsilon=1.0,
                                     accountant=dp.Accountant(), rng=28).counts for f in parts]
    want = dp.histogram(frame["age"].to_numpy(), bins=8, range=(10, 90), epsilon=1.0,
                        accountant=dp.Accountant(), rng=25)[0]
    assert all(np.array_equal(h, want) for h in hist)
    want = dp.count_categories(frame["edu"], KEYS["edu"], epsilon=1.0,
                               accountant=dp.Accountant(), rng=26)
    assert all(np.array_equal(c, want) for c in cats)
    assert all(np.array_equal(t, tree[0]) for t in tree)
    assert all(all(np.array_equal(a, b) for a, b in zip(h, hier[0])) for h in hier)
    levels = hier[0]
    assert all(np.array_equal(np.bincount(p, weights=levels[i + 1], minlength=levels[i].size),
                              levels[i]) for i, p in enumerate(hierarchy))


def test_a_worker_killed_mid_release_changes_nothing(clusters):
    x = np.random.default_rng(4).poisson(9, 6_000_000)
    want = dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng=29)
    client = clusters(2)
    pids = client.run(os.getpid)
    got = dpd.noisy_counts(da.from_array(x, chunks=100_000), epsilon=1.0,
                           accountant=dp.Accountant(), rng=29)
    futures = client.futures_of(client.persist(got))
    while sum(f.done() for f in futures) < 3:
        time.sleep(0.001)
    unfinished = sum(not f.done() for f in futures)
    os.kill(next(iter(pids.values())), signal.SIGKILL)       # a worker dies mid-release
    result = client.compute(got).result()
    assert unfinished > 0
    assert np.array_equal(result, want)
    client.wait_for_workers(2, timeout=60)                   # the nanny restarts it


def _transitions(client):
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


@pytest.mark.parametrize("call, exc", [
    (lambda a, f: dpd.noisy_counts(a.astype(bool), epsilon=1.0, accountant=a.acct), TypeError),
    (lambda a, f: dpd.noisy_counts(a.astype(complex), epsilon=1.0, accountant=a.acct), TypeError),
    (lambda a, f: dpd.noisy_counts(a, epsilon=0.0, accountant=a.acct), ValueError),
    (lambda a, f: dpd.noisy_counts(a, epsilon=1.0, sensitivity=-1, accountant=a.acct),
     ValueError),
    (lambda a, f: dpd.noisy_counts(np.arange(10), epsilon=1.0, accountant=a.acct), TypeError),
    (lambda a, f: dpd.noisy_counts(a, epsilon=5.0, accountant=a.acct), dp.BudgetExceededError),
    (lambda a, f: dpd.crosstab(f, ["sex", "edu"], epsilon=1.0, keys={"sex": ["F", "M"]},
                               accountant=a.acct), ValueError),
    (lambda a, f: dpd.crosstab(f, ["sex"], epsilon=1.0, keys={"sex": f["sex"]},
                               accountant=a.acct), ValueError),
    (lambda a, f: dpd.crosstab(f, ["nope"], epsilon=1.0, keys={"nope": [1]},
                               accountant=a.acct), ValueError),
    (lambda a, f: dpd.crosstab(f, ["sex"], epsilon=5.0, keys=KEYS, accountant=a.acct),
     dp.BudgetExceededError),
    (lambda a, f: dpd.histogram(f["age"], bins="auto", epsilon=1.0, accountant=a.acct),
     ValueError),
    (lambda a, f: dpd.histogram(f["age"], bins=5, epsilon=1.0, accountant=a.acct), ValueError),
    (lambda a, f: dpd.count_categories(f["edu"], {"HS"}, epsilon=1.0, accountant=a.acct),
     TypeError),
    (lambda a, f: dpd.tree_mechanism(f, "age", 0, epsilon=1.0, accountant=a.acct), ValueError),
], ids=lambda x: getattr(x, "__name__", None))
def test_bad_input_spends_nothing_and_submits_nothing(clusters, records, call, exc):
    frame, paths = records
    client = clusters(1)
    arr = da.from_array(np.arange(1000), chunks=100)
    arr.acct = dp.Accountant(epsilon=2.0)
    arr.acct.spend(0.5, label="earlier")
    with client.as_current():
        ddf = dd.read_parquet(paths[1])
        before, spent = _transitions(client), arr.acct.spent
        with pytest.raises(exc):
            call(arr, ddf)
        assert _transitions(client) == before                # nothing submitted
    assert arr.acct.spent == spent and len(arr.acct) == 1


def test_nan_counts_are_refused_before_the_charge(clusters):
    x = np.ones(1000)
    x[777] = np.nan
    acct = dp.Accountant()
    with clusters(1).as_current(), pytest.raises(ValueError, match="NaN"):
        dpd.noisy_counts(da.from_array(x, chunks=100), epsilon=1.0, accountant=acct)
    assert acct.spent == (0.0, 0.0)


def test_values_outside_the_keys_are_refused_before_the_charge(clusters, records):
    # Found only by reading the records: the counts are read (and kept on the workers)
    # before the charge, so the refusal costs nothing.
    frame, paths = records
    acct = dp.Accountant()
    with clusters(1).as_current(), pytest.raises(ValueError, match="outside 'keys'"):
        dpd.crosstab(dd.read_parquet(paths[0]), ["edu"], epsilon=1.0,
                     keys={"edu": ["HS", "BA"]}, accountant=acct)
    assert acct.spent == (0.0, 0.0)


def test_the_key_comes_from_the_os_without_a_seed():
    x = da.from_array(np.zeros(10_000, np.int64), chunks=3_000)
    a = dpd.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant()).compute(
        scheduler="synchronous")
    b = dpd.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant()).compute(
        scheduler="synchronous")
    assert not np.array_equal(a, b)


def test_int32_releases_and_their_limits(clusters, tmp_path):
    x16 = np.random.default_rng(5).poisson(20, 700_001).astype(np.uint16)
    want = dp.noisy_counts(x16, epsilon=1.0, out=np.empty(x16.size, np.int32),
                           accountant=dp.Accountant(), rng=30)
    path = tmp_path / "u16.npy"
    np.save(path, x16)
    got = dpd.noisy_counts(dpd.from_npy(str(path), chunks=123_457), epsilon=1.0,
                           dtype=np.int32, accountant=dp.Accountant(), rng=30)
    assert got.dtype == np.int32
    assert np.array_equal(clusters(2).compute(got).result(), want)
    # 32-bit counts near the int32 limit are refused before the charge; 64-bit output and
    # real counts as int32 are not choices.
    big = da.from_array(np.array([2**31 - 10, 5], dtype=np.int32), chunks=1)
    acct = dp.Accountant()
    with pytest.raises(ValueError, match="'counts'"):
        dpd.noisy_counts(big, epsilon=1.0, dtype=np.int32, accountant=acct)
    with pytest.raises(ValueError, match="check=True"):
        dpd.noisy_counts(big, epsilon=1.0, dtype=np.int32, check=False, accountant=acct)
    with pytest.raises(TypeError, match="'dtype'"):
        dpd.noisy_counts(big.astype(float), epsilon=1.0, dtype=np.int32, accountant=acct)
    with pytest.raises(TypeError, match="'dtype'"):
        dpd.noisy_counts(big, epsilon=1.0, dtype=np.int16, accountant=acct)
    assert acct.spent == (0.0, 0.0)


def test_from_npy_reads_rows_in_the_workers(tmp_path):
    x = np.arange(60).reshape(12, 5)
    np.save(tmp_path / "x.npy", x)
    arr = dpd.from_npy(str(tmp_path / "x.npy"), chunks=5)
    assert arr.chunks == ((5, 5, 2), (5,))
    assert np.array_equal(arr.compute(scheduler="synchronous"), x)
    assert np.array_equal(arr[3:7, 1:3].compute(scheduler="synchronous"), x[3:7, 1:3])
    np.save(tmp_path / "f.npy", np.asfortranarray(x))
    with pytest.raises(ValueError, match="C-order"):
        dpd.from_npy(str(tmp_path / "f.npy"))


def test_every_module_of_the_package_binds_the_third_party_dask(clusters):
    # The package is named dask inside dpfast: each of its modules must reach the real Dask
    # (absolute imports), and the functions its tasks ship must unpickle on a worker process
    # by reference to their module. (The examples of every public name run as doctests in
    # tests/test_docs_cli.py::test_docstring_examples.)
    import importlib
    import pickle
    import pkgutil

    import dask

    modules = [importlib.import_module(m.name)
               for m in pkgutil.walk_packages(dpd.__path__, "dpfast.dask.")]
    assert {m.__name__ for m in modules} >= {"dpfast.dask.arrays", "dpfast.dask.graph",
                                             "dpfast.dask.groupby", "dpfast.dask.tables",
                                             "dpfast.dask.histograms"}
    for module in modules:
        for alias in ("dask", "da", "dd"):
            if hasattr(module, alias):
                assert getattr(module, alias).__name__.split(".")[0] == "dask", module
                assert getattr(module, alias).__file__.startswith(
                    os.path.dirname(dask.__file__)), module
    assert set(dpd.__all__) <= set(vars(dpd))
    assert all(getattr(dpd, n).__module__.startswith("dpfast.dask.") for n in dpd.__all__)
    shipped = dpd.graph.noised
    assert pickle.loads(pickle.dumps(shipped)) is shipped        # pickled by reference
    client = clusters(1)
    # On a worker process: the function arrives as the one its module defines there.
    same, pid = client.submit(lambda f: (f is __import__("dpfast.dask.graph").dask.graph.noised,
                                         os.getpid()), shipped, pure=False).result()
    assert same and pid != os.getpid()


def test_a_bad_generator_is_refused_before_the_data_is_read(clusters):
    client = clusters(1)
    x = da.from_array(np.ones(1000), chunks=100)
    with client.as_current():
        before = _transitions(client)
        with pytest.raises(TypeError, match="'rng'"):
            dpd.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng="seed")
        assert _transitions(client) == before


def test_without_the_check_pass_nan_fails_the_blocks():
    # check=False skips the value checks of the read before the charge (not the read); the
    # blocks then refuse NaN as they are noised (the charge stands, nothing is released).
    x = np.ones(1000)
    x[777] = np.nan
    acct = dp.Accountant()
    out = dpd.noisy_counts(da.from_array(x, chunks=100), epsilon=1.0, check=False,
                           accountant=acct, rng=1)
    assert acct.spent == (1.0, 0.0)
    with pytest.raises(ValueError, match="NaN"):
        out.compute(scheduler="synchronous")


@pytest.mark.parametrize("keys, exc", [
    (None, ValueError), ({"sex": ["F", "F"]}, ValueError), ({"sex": ["F", None]}, ValueError),
    ({"sex": []}, ValueError), ({"sex": "FM"}, TypeError), ({"sex": {"F", "M"}}, TypeError),
    (["F", "M"], TypeError)])
def test_crosstab_keys_are_checked_as_by_dpfast_crosstab(records, keys, exc):
    frame, paths = records
    acct = dp.Accountant()
    with pytest.raises(exc, match="'keys'"):
        dpd.crosstab(dd.read_parquet(paths[0]), ["sex"], epsilon=1.0, keys=keys,
                     accountant=acct)
    assert acct.spent == (0.0, 0.0)
