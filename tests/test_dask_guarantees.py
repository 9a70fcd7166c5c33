"""dpfast.dask keeps the release's promises on a real distributed.LocalCluster (worker
processes): a lazy release computed again after its input changed is refused (unchanged, it
is bit-identical); chunks of unknown size and data errors found only by reading records are
refused before the charge; the key, never a seed, reaches the workers (so the tree and the
hierarchy on records equal the single-machine release with the same seed); and refusals
describe a bad value by its position, never by printing it. Skipped without Dask."""
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dpfast.dask needs dask (pip install dpfast[dask])")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dpfast as dp  # noqa: E402
import dpfast.dask as dpd  # noqa: E402

# The same pytest-xdist worker as tests/test_dask.py (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("dask")

MARKER = 987_654_321          # a value hidden in bad data: no message may print it


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of two worker processes (one thread each) for the whole module."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


def _transitions(client):
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


def _computed(client, out):
    """``out`` computed on the cluster: (result, None), or (None, the message) if it is
    refused. A result is returned once the scheduler has forgotten it (a result still held
    is handed out again as it was, without running any task; so is a refusal)."""
    future = client.compute(out)
    key = future.key
    try:
        result = future.result()
    except ValueError as exc:
        return None, str(exc)
    del future
    for _ in range(500):
        if not client.run_on_scheduler(lambda k, dask_scheduler: k in dask_scheduler.tasks,
                                       key):
            break
        time.sleep(0.01)
    return result, None


CHANGED = "changed since the release was charged"


class Counts:
    """An array-like read when the tasks run (as a file or a database would be): dask
    pickles it into the graph as it is at compute time, not a copy made at graph time."""

    def __init__(self, data):
        self.data = data
        self.shape, self.dtype, self.ndim = data.shape, data.dtype, data.ndim

    def __getitem__(self, index):
        return np.array(self.data[index])


# -- a lazy release computed again ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64, np.float64])
def test_a_rewritten_npy_file_is_refused_and_an_unchanged_one_is_identical(
        client, tmp_path, dtype):
    x = np.random.default_rng(1).poisson(6, 150_001).astype(dtype)
    path = tmp_path / "counts.npy"
    np.save(path, x)
    acct = dp.Accountant()
    out = dpd.noisy_counts(dpd.from_npy(str(path), chunks=40_000), epsilon=1.0,
                           accountant=acct, rng=3)
    first, error = _computed(client, out)
    assert error is None
    assert np.array_equal(first, dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(),
                                                 rng=3))
    assert np.array_equal(_computed(client, out)[0], first)      # unchanged: identical
    changed = x.copy()
    changed[100_000] += 1                                           # one cell, block 2
    np.save(path, changed)
    assert CHANGED in _computed(client, out)[1]
    assert acct.spent == (1.0, 0.0) and len(acct) == 1


def test_an_array_like_changed_after_the_charge_is_refused(client):
    x = np.random.default_rng(2).poisson(4, (400, 300)).astype(np.int64)
    source = Counts(x.copy())
    out = dpd.noisy_counts(da.from_array(source, chunks=(90, 300), asarray=False),
                           epsilon=0.5, accountant=dp.Accountant(), rng=4)
    first, error = _computed(client, out)
    assert error is None
    assert np.array_equal(first, dp.noisy_counts(x, epsilon=0.5, accountant=dp.Accountant(),
                                                 rng=4))
    source.data[399, 299] -= 1
    assert CHANGED in _computed(client, out)[1]


def test_chunks_of_unknown_size_are_refused_before_anything(client):
    x = da.from_array(np.arange(-500, 500), chunks=100)
    acct = dp.Accountant()
    before = _transitions(client)
    with client.as_current(), pytest.raises(ValueError, match="compute_chunk_sizes") as err:
        dpd.noisy_counts(x[x > 0], epsilon=1.0, accountant=acct)
    assert "'counts'" in str(err.value)
    assert acct.spent == (0.0, 0.0)
    assert _transitions(client) == before                           # nothing read


# -- messages ------------------------------------------------------------------------------

def test_the_int32_refusal_names_the_cell_not_the_count():
    x = np.full((4, 5), 3, dtype=np.int64)
    x[2, 3] = 2**31 - 10
    acct = dp.Accountant()
    with pytest.raises(ValueError, match=r"cell \(2, 3\)") as err:
        dpd.noisy_counts(da.from_array(x, chunks=(3, 5)), epsilon=1.0, dtype=np.int32,
                         accountant=acct)
    assert str(2**31 - 10) not in str(err.value)
    y = np.zeros(1000)
    y[MARKER % 1000] = MARKER * 1e300
    with pytest.raises(ValueError, match=rf"cell \({MARKER % 1000},\)") as err:
        dpd.noisy_counts(da.from_array(y, chunks=300), epsilon=1.0, accountant=acct)
    assert str(MARKER) not in str(err.value)
    assert acct.spent == (0.0, 0.0)


# -- data errors found only by reading records: refused before the charge --------------------

@pytest.fixture(scope="module")
def people():
    rng = np.random.default_rng(5)
    n = 3_000
    return pd.DataFrame({"edu": rng.choice(["HS", "BA"], n), "age": rng.integers(0, 90, n),
                         "height": rng.normal(170, 9, n), "block": rng.integers(0, 40, n)})


def _bad(people, column, value, row=2_500):
    frame = people.copy()
    if frame[column].dtype.kind in "iu" and not isinstance(value, int):
        frame[column] = frame[column].astype(object if isinstance(value, str) else float)
    frame.loc[row, column] = value
    return dd.from_pandas(frame, npartitions=4)


HIERARCHY = [np.zeros(4, np.int64), np.repeat(np.arange(4), 10)]


@pytest.mark.parametrize("column, value, call", [
    ("edu", f"X{MARKER}", lambda f, a: dpd.crosstab(f, ["edu"], epsilon=1.0,
                                                     keys={"edu": ["HS", "BA"]}, accountant=a)),
    ("edu", f"X{MARKER}", lambda f, a: dpd.count_categories(f["edu"], ["HS", "BA"],
                                                             epsilon=1.0, accountant=a)),
    ("height", np.nan, lambda f, a: dpd.histogram(f["height"], bins=4, range=(100, 240),
                                                  epsilon=1.0, accountant=a)),
    ("height", np.nan, lambda f, a: dpd.histogramdd(f[["age", "height"]], bins=[3, 4],
                                                    range=[(0, 90), (100, 240)], epsilon=1.0,
                                                    accountant=a)),
    ("block", MARKER, lambda f, a: dpd.census_hierarchy(f, "block", HIERARCHY, epsilon=1.0,
                                                        accountant=a)),
    ("age", MARKER, lambda f, a: dpd.tree_mechanism(f, "age", 90, epsilon=1.0,
                                                    accountant=a)),
    ("age", -MARKER, lambda f, a: dpd.tree_mechanism(f, "age", 90, epsilon=1.0,
                                                     accountant=a)),
], ids=["crosstab", "count_categories", "histogram", "histogramdd", "census_hierarchy",
        "tree_mechanism", "tree_mechanism-negative"])
def test_data_errors_are_refused_before_the_charge(client, people, column, value, call):
    acct = dp.Accountant()
    with client.as_current(), pytest.raises(ValueError) as err:
        call(_bad(people, column, value), acct)
    assert acct.spent == (0.0, 0.0) and len(acct) == 0
    assert str(MARKER) not in str(err.value)


@pytest.mark.parametrize("call", [
    lambda f, a: dpd.histogramdd(f[["age", "edu"]], bins=[3, 2], range=[(0, 90), (0, 2)],
                                 epsilon=1.0, accountant=a),
    lambda f, a: dpd.tree_mechanism(f, "edu", 90, epsilon=1.0, accountant=a),
    lambda f, a: dpd.census_hierarchy(f, "edu", HIERARCHY, epsilon=1.0, accountant=a),
    lambda f, a: dpd.histogram(f["edu"], bins=2, range=(0, 2), epsilon=1.0, accountant=a),
], ids=["histogramdd", "tree_mechanism", "census_hierarchy", "histogram"])
def test_text_columns_are_refused_unread(client, people, call):
    acct = dp.Accountant()
    before = _transitions(client)
    with client.as_current(), pytest.raises(TypeError, match="'frame'|'values'"):
        call(dd.from_pandas(people, npartitions=3), acct)
    assert _transitions(client) == before and acct.spent == (0.0, 0.0)


def test_a_budget_that_cannot_pay_reads_nothing(client, people):
    acct = dp.Accountant(epsilon=0.5)
    before = _transitions(client)
    with client.as_current(), pytest.raises(dp.BudgetExceededError):
        dpd.tree_mechanism(dd.from_pandas(people, npartitions=3), "age", 90, epsilon=1.0,
                           accountant=acct)
    assert _transitions(client) == before and acct.spent == (0.0, 0.0)


# -- the key, not a seed, on the workers ------------------------------------------------------

def test_tree_and_hierarchy_on_records_equal_the_single_machine_release(client, people):
    frame = dd.from_pandas(people, npartitions=5)
    leaves = np.bincount(people["age"], minlength=90)
    blocks = np.bincount(people["block"], minlength=40)
    with client.as_current():
        tree = dpd.tree_mechanism(frame, "age", 90, epsilon=1.0, accountant=dp.Accountant(),
                                  rng=8)
        hier = dpd.census_hierarchy(frame, "block", HIERARCHY, epsilon=1.0,
                                    accountant=dp.Accountant(), rng=9)
    want = dp.tree_mechanism(leaves, epsilon=1.0, accountant=dp.Accountant(), rng=8)
    assert np.array_equal(tree.estimate, want.estimate)
    want_h = dp.census_hierarchy(blocks, HIERARCHY, epsilon=1.0, accountant=dp.Accountant(),
                                 rng=9)
    assert all(np.array_equal(a, b) for a, b in zip(hier.counts, want_h.counts))
