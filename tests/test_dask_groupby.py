"""dpfast.dask.group_by on a real distributed.LocalCluster (worker processes): the same
DataFrame as dpfast.group_by on the whole frame with the same seed, for 1 and 2 workers and
1, 3 and 7 partitions (private and public keys, with and without a privacy unit, Laplace and
Gaussian noise); bad records refused before the charge with the single-machine path's
errors; an unpayable budget reads nothing; the rows released are the rows read before the
charge, and a worker killed after the charge changes nothing. Skipped without Dask. No
timing assertions."""
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="dpfast.dask needs dask (pip install dpfast[dask])")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dpfast as dp  # noqa: E402
import dpfast.dask as dpd  # noqa: E402
from dpfast import pieces as _pieces  # noqa: E402

pytestmark = pytest.mark.xdist_group("dask")

STATS = dict(n="count", total=("salary", "sum"), avg=("salary", "mean"),
             spread=("salary", "std"), bounds={"salary": (0.0, 100.0)})
PUBLIC = ["a", "b", "c", "zz"]          # "zz": no record; "d", "e": records dropped


@pytest.fixture(scope="module")
def people():
    """2 * 10**4 records of 3,000 people (1-20 rows each, string ids), 5 departments with
    skewed sizes, salaries partly outside the bounds."""
    rng = np.random.default_rng(11)
    n = 8_000
    return pd.DataFrame({
        "dept": rng.choice(list("abcde"), n, p=[0.5, 0.2, 0.15, 0.1, 0.05]),
        "user": np.char.add("u", rng.integers(0, 3_000, n).astype(str)).astype(object),
        "salary": rng.uniform(-10.0, 120.0, n)})


def _budget():
    return dp.Accountant(epsilon=10.0, delta=1e-3)


def _privacy(noise, keys):
    if noise == "laplace" and keys is not None:
        return dict(noise=noise, epsilon=1.0)
    return dict(noise=noise, epsilon=1.0, delta=1e-6)


# Each of the privacy unit, the keys and the noise both ways, in four cases (a full cross
# of the three adds only time: their code paths are independent).
CASES = [(None, None, "laplace"), (None, PUBLIC, "gaussian"), ("user", None, "gaussian"),
         ("user", PUBLIC, "laplace")]


@pytest.mark.parametrize("unit, keys, noise", CASES,
                         ids=[f"{u or 'rows'}-{'public' if k else 'private'}-{n}"
                              for u, k, n in CASES])
def test_same_release_as_the_whole_frame(clusters, people, unit, keys, noise):
    bounds = dict(max_groups=2, max_rows=3) if unit else {}
    seed = 101 + CASES.index((unit, keys, noise))
    want = dp.group_by(people, "dept", privacy_unit=unit, keys=keys, **bounds).agg(
        accountant=_budget(), rng=seed, **_privacy(noise, keys), **STATS)
    assert (want["n"] > 0).sum() >= 3
    for workers, partitionings in ((1, (7,)), (2, (1, 3))):
        with clusters(workers).as_current():
            for parts in partitionings:
                frame = dd.from_pandas(people, npartitions=parts)
                acct = _budget()
                got = dpd.group_by(frame, "dept", privacy_unit=unit, keys=keys,
                                   **bounds).agg(accountant=acct, rng=seed,
                                                 **_privacy(noise, keys), **STATS)
                pd.testing.assert_frame_equal(got, want, check_exact=True)
                assert got.attrs == want.attrs
                assert len(acct) == 1                   # one charge
    # Another seed releases other noise (the seed, not the data, is what repeats).
    other = dp.group_by(people, "dept", privacy_unit=unit, keys=keys, **bounds).agg(
        accountant=_budget(), rng=seed + 1000, **_privacy(noise, keys), **STATS)
    assert not other["total"].equals(want["total"].reindex(other.index))


def test_bounding_keeps_what_the_single_machine_path_keeps(clusters, people):
    # max_rows=1, one group per person, public keys, noise far below one unit: the counts
    # released are the exact counts of the rows kept (one per person), so they show which
    # rows the bounding kept, per department.
    keys = list("abcde")
    kw = dict(n="count", epsilon=1e6, rng=5)
    want = dp.group_by(people, "dept", privacy_unit="user", keys=keys).agg(
        accountant=dp.Accountant(), **kw)
    assert want["n"].sum() == people["user"].nunique()
    with clusters(2).as_current():
        got = dpd.group_by(dd.from_pandas(people, npartitions=5), "dept",
                           privacy_unit="user", keys=keys).agg(accountant=dp.Accountant(),
                                                               **kw)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("rule", ["optimal", "gaussian"])
def test_each_key_selection_rule(clusters, people, rule):
    # Private keys with max_groups=2: the optimal rule on people per key, or the weighted
    # Gaussian rule on each person's weights (from all of a person's pairs, which are in
    # one bucket); the default ('auto') takes the weighted Gaussian rule here, tested above.
    kw = dict(accountant=None, rng=57, epsilon=1.0, delta=1e-6, selection_rule=rule, **STATS)
    want = dp.group_by(people, "dept", privacy_unit="user", max_groups=2).agg(
        **{**kw, "accountant": _budget()})
    with clusters(2).as_current():
        got = dpd.group_by(dd.from_pandas(people, npartitions=6), "dept", privacy_unit="user",
                           max_groups=2).agg(**{**kw, "accountant": _budget()})
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    plan = dpd.group_by(dd.from_pandas(people, npartitions=6), "dept", privacy_unit="user",
                        max_groups=2).plan(epsilon=1.0, delta=1e-6, selection_rule=rule,
                                           **STATS)
    assert f"({rule} rule)" in plan["measurement"].iloc[0]


def test_from_parquet_files(clusters, people, tmp_path):
    dd.from_pandas(people, npartitions=4).to_parquet(tmp_path / "people", write_index=False)
    frame = dd.read_parquet(tmp_path / "people")
    kw = dict(accountant=None, rng=17, epsilon=1.0, delta=1e-6, **STATS)
    want = dp.group_by(frame.compute(), "dept", privacy_unit="user", max_rows=2).agg(
        **{**kw, "accountant": _budget()})
    with clusters(2).as_current():
        got = dpd.group_by(frame, "dept", privacy_unit="user", max_rows=2).agg(
            **{**kw, "accountant": _budget()})
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_plan_is_the_single_machine_plan(people):
    frame = dd.from_pandas(people, npartitions=3)
    kw = dict(epsilon=1.0, delta=1e-6, **STATS)
    want = dp.group_by(people, "dept", privacy_unit="user", max_groups=2).plan(**kw)
    got = dpd.group_by(frame, "dept", privacy_unit="user", max_groups=2).plan(**kw)
    pd.testing.assert_frame_equal(got, want)


def _transitions(client):
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def _quiet_transitions(client):
    """The scheduler's transition count once it stops moving: an earlier test's keys may
    still be being released on the shared cluster (at most 5 s)."""
    last = _transitions(client)
    for _ in range(50):
        time.sleep(0.1)
        now = _transitions(client)
        if now == last:
            return now
        last = now
    return last


def _spoiled(people, column, row, value):
    bad = people.copy()
    bad[column] = bad[column].astype(object) if column == "dept" else bad[column]
    bad.loc[row, column] = value
    return bad


@pytest.mark.parametrize("column, value, exc, where", [
    ("salary", np.nan, ValueError, "is NaN"),
    ("salary", -np.inf, ValueError, "is infinite"),
    ("dept", None, ValueError, "is null"),
    ("user", None, ValueError, "is null"),
])
def test_bad_records_are_refused_before_the_charge(clusters, people, column, value, exc,
                                                   where):
    # One bad record, in the third of seven partitions: found only by reading, refused
    # with the single-machine error (its position in the whole frame), nothing spent.
    # (Object columns kept as they are: Dask would make the None of a string column a
    # pandas NA, see the next test.)
    row = 3 * len(people) // 7 + 123
    bad = _spoiled(people, column, row, value)
    kw = dict(epsilon=1.0, delta=1e-6, **STATS)
    with pytest.raises(exc) as local:
        dp.group_by(bad, "dept", privacy_unit="user").agg(accountant=_budget(), **kw)
    acct = _budget()
    with dask.config.set({"dataframe.convert-string": False}):
        frame = dd.from_pandas(bad, npartitions=7)
        with clusters(2).as_current(), pytest.raises(exc) as dist:
            dpd.group_by(frame, "dept", privacy_unit="user").agg(accountant=acct, **kw)
    assert acct.spent == (0.0, 0.0) and len(acct) == 0
    assert where in str(dist.value)
    assert str(dist.value) == str(local.value)
    assert f"index {row}" in str(dist.value)


@pytest.mark.parametrize("column", ["dept", "user"])
def test_a_missing_string_is_refused_as_on_the_computed_frame(clusters, people, column):
    # Dask stores strings as pyarrow strings, a None among them as a pandas NA: the release
    # refuses it before the charge exactly as dpfast.group_by refuses the computed frame.
    frame = dd.from_pandas(_spoiled(people, column, 4321, None), npartitions=5)
    kw = dict(epsilon=1.0, delta=1e-6, n="count")
    with pytest.raises((TypeError, ValueError)) as local:
        dp.group_by(frame.compute(), "dept", privacy_unit="user").agg(accountant=_budget(),
                                                                       **kw)
    acct = _budget()
    with clusters(1).as_current(), pytest.raises(type(local.value)) as dist:
        dpd.group_by(frame, "dept", privacy_unit="user").agg(accountant=acct, **kw)
    assert str(dist.value) == str(local.value)
    assert acct.spent == (0.0, 0.0)


def test_keys_of_mixed_types_across_partitions_are_refused(clusters, people):
    # Each partition holds keys of one type; the frame holds two.
    mixed = people.assign(dept=people["dept"].astype(object))
    mixed.loc[mixed.index[-5000:], "dept"] = 7
    acct = _budget()
    with dask.config.set({"dataframe.convert-string": False}):
        frame = dd.from_pandas(mixed, npartitions=4)
        with clusters(1).as_current(), pytest.raises(TypeError, match="'by'.*one type"):
            dpd.group_by(frame, "dept").agg(accountant=acct, epsilon=1.0, delta=1e-6,
                                            n="count")
    with pytest.raises(TypeError, match="'by'.*one type"):
        dp.group_by(mixed, "dept").agg(accountant=acct, epsilon=1.0, delta=1e-6, n="count")
    assert acct.spent == (0.0, 0.0)


@pytest.mark.parametrize("call, exc", [
    (lambda f, a: dpd.group_by(f, "nope").agg(accountant=a, epsilon=1.0, delta=1e-6,
                                              n="count"), ValueError),
    (lambda f, a: dpd.group_by(f, "dept", privacy_unit="nope"), ValueError),
    (lambda f, a: dpd.group_by(f, "dept", privacy_unit="user", max_rows=0), ValueError),
    (lambda f, a: dpd.group_by(f, "dept", max_rows=2), ValueError),
    (lambda f, a: dpd.group_by(f, "dept").agg(accountant=a, epsilon=1.0, delta=1e-6,
                                              avg=("salary", "mean"),
                                              bounds={"salary": (5, 5)}), ValueError),
    (lambda f, a: dpd.group_by(f, "dept").agg(accountant=a, epsilon=1.0, delta=1e-6,
                                              avg=("salary", "mean")), TypeError),
    (lambda f, a: dpd.group_by(f, "dept").agg(accountant=a, epsilon=1.0, n="count"),
     ValueError),                                       # private keys need delta
    (lambda f, a: dpd.group_by(f, "dept", keys=["a", "a"]).agg(
        accountant=a, epsilon=1.0, n="count"), ValueError),
    (lambda f, a: dpd.group_by(f, "dept", keys=f["dept"]), ValueError),
    (lambda f, a: dpd.group_by(f._meta, "dept"), TypeError),
    (lambda f, a: dpd.group_by(f, "dept").agg(accountant=a, epsilon=1.0, delta=1e-6,
                                              n="count", rng="seed"), TypeError),
    (lambda f, a: dpd.group_by(f, "dept").agg(accountant=a, epsilon=5.0, delta=1e-6,
                                              n="count"), dp.BudgetExceededError),
    (lambda f, a: dpd.group_by(f, "dept", keys=PUBLIC).agg(
        accountant=a, noise="gaussian", rho=0.01, n="count"), ValueError),
])
def test_refusals_read_nothing_and_spend_nothing(clusters, people, call, exc):
    acct = dp.Accountant(epsilon=2.0, delta=1e-5)
    acct.spend(0.5, label="earlier")
    client = clusters(1)
    with client.as_current():
        frame = dd.from_pandas(people, npartitions=3)
        before, spent = _quiet_transitions(client), acct.spent
        with pytest.raises(exc):
            call(frame, acct)
        assert _transitions(client) == before           # nothing submitted, nothing read
    assert acct.spent == spent and len(acct) == 1


def test_the_release_uses_the_rows_read_before_the_charge(clusters, people):
    # Two releases with one seed are one release; and the rows prepared before the charge
    # are bound by a keyed digest: a partition whose rows differ after the charge (as one
    # recomputed from a changed input would) is refused, never released.
    kw = dict(accountant=None, rng=31, epsilon=1.0, delta=1e-6, **STATS)
    frame = dd.from_pandas(people, npartitions=3)
    with clusters(2).as_current():
        first = dpd.group_by(frame, "dept", privacy_unit="user").agg(
            **{**kw, "accountant": _budget()})
        again = dpd.group_by(frame, "dept", privacy_unit="user").agg(
            **{**kw, "accountant": _budget()})
    pd.testing.assert_frame_equal(first, again, check_exact=True)

    keys = np.array(list("abcde"), dtype=object)
    mac = bytes(range(32))
    part = people.iloc[:5000]
    prepared, digest = _pieces.prepared_records(part, "dept", "user", ["salary"], keys, 0, 3,
                                             mac, "GroupBy.agg")
    key = bytes(32)
    pieces = _pieces.bucketed(prepared, digest, mac, key, key)
    assert sum(p["code"].size for p in pieces) == 5000
    changed = part.copy()
    changed.iloc[17, 2] += 1.0                          # one salary changed
    redone, _ = _pieces.prepared_records(changed, "dept", "user", ["salary"], keys, 0, 3, mac,
                                      "GroupBy.agg")
    with pytest.raises(RuntimeError, match="changed after"):
        _pieces.bucketed(redone, digest, mac, key, key)


def test_bucket_rows_carry_the_priorities_of_their_frame_positions(people):
    # A partition starting at row 12345 (mid-chunk) sends each row to its person's bucket
    # with the two uniforms of its position in the frame (the cells the single-machine
    # kernel draws there), in frame order within each bucket.
    from dpfast import _native, noise
    keys = np.array(list("abcde"), dtype=object)
    mac = bytes(range(32))
    k1, k2 = bytes(range(32)), bytes(range(1, 33))
    whole = {}
    for k in (k1, k2):
        whole[k] = np.empty(12345 + 5000)
        noise.uniforms(_native.Key.from_bytes(k), 1, whole[k])
    part = people.iloc[:5000]
    prepared, digest = _pieces.prepared_records(part, "dept", "user", ["salary"], keys, 12345,
                                                3, mac, "GroupBy.agg")
    pieces = _pieces.bucketed(prepared, digest, mac, k1, k2)
    got = np.concatenate([p["prio"] for p in pieces])
    assert np.array_equal(np.sort(got), np.sort(whole[k1][12345:]))
    for p in pieces:
        rows = np.flatnonzero(np.isin(whole[k1][12345:], p["prio"]))
        assert np.array_equal(whole[k1][12345 + rows], p["prio"])        # frame order
        assert np.array_equal(whole[k2][12345 + rows], p["pair_prio"])
        assert np.array_equal(part["user"].to_numpy()[rows], p["person"])
    for start, n in ((0, 10), (12345, _native.CHUNK), (_native.CHUNK, 7),
                     (2 * _native.CHUNK - 3, 103), (5, 0)):
        cells = np.empty(3 * _native.CHUNK + 100)
        noise.uniforms(_native.Key.from_bytes(k1), 1, cells)
        assert np.array_equal(_pieces.uniforms_from(k1, start, n), cells[start:start + n])


def test_a_worker_killed_after_the_charge_changes_nothing(clusters):
    # The release runs in a thread; the moment its charge is recorded, a worker (holding
    # half the rows kept for the release) is SIGKILLed. Its rows are made again from the
    # frame's graph, checked against their digest, and the release is the single-machine
    # one.
    import os
    import signal
    import threading
    import time
    rng = np.random.default_rng(12)
    n = 200_000
    rows = pd.DataFrame({"dept": rng.integers(0, 50, n), "user": rng.integers(0, 40_000, n),
                         "salary": rng.uniform(0.0, 100.0, n)})
    kw = dict(rng=61, epsilon=1.0, delta=1e-6, **STATS)
    want = dp.group_by(rows, "dept", privacy_unit="user", max_rows=4).agg(
        accountant=_budget(), **kw)
    client = clusters(2)
    pids = client.run(os.getpid)
    acct = _budget()
    out = {}

    def release():
        with client.as_current():
            out["got"] = dpd.group_by(dd.from_pandas(rows, npartitions=8), "dept",
                                      privacy_unit="user", max_rows=4).agg(accountant=acct,
                                                                           **kw)
    thread = threading.Thread(target=release)
    thread.start()
    deadline = time.monotonic() + 60
    while len(acct) == 0 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.0005)
    assert len(acct) == 1                                   # charged, not yet released
    os.kill(next(iter(pids.values())), signal.SIGKILL)
    assert "got" not in out                                 # killed mid-release
    thread.join(120)
    assert not thread.is_alive()
    pd.testing.assert_frame_equal(out["got"], want, check_exact=True)
    client.wait_for_workers(2, timeout=60)                  # the nanny restarts it
