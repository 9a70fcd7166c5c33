"""dpfast.benchmarks.records: the synthetic table and the metrics the peers are scored with
(no peer runs and no timings; one dpfast child on a tiny table, for where it runs)."""
import os

import numpy as np
import pytest

from dpfast.benchmarks import records as R


@pytest.fixture(scope="module")
def table():
    return R.make_table(rows=200_000, people=20_000, departments=500, seed=3)


def test_table_shape_and_ranges(table):
    assert set(table) == {"user_id", "dept", "salary"}
    assert [table[k].dtype for k in ("user_id", "dept", "salary")] == \
        [np.int64, np.int64, np.float64]
    assert all(len(v) == 200_000 for v in table.values())
    per_person = np.bincount(table["user_id"], minlength=20_000)
    assert per_person.min() >= 1 and per_person.max() <= 20 and len(per_person) == 20_000
    assert table["dept"].min() >= 1 and table["dept"].max() <= 500
    assert table["salary"].min() >= 0.0 and table["salary"].max() <= 300_000.0


def test_each_person_in_one_department(table):
    pairs = np.unique(np.stack([table["user_id"], table["dept"]]), axis=1)
    assert pairs.shape[1] == 20_000          # one (person, department) pair per person


def test_rows_are_shuffled(table):
    # A person's rows are not contiguous: the id changes at nearly every row, where sorted
    # (or grouped) ids would change 20,000 times.
    changes = np.count_nonzero(np.diff(table["user_id"]))
    assert changes > 150_000


def test_zipf_departments_and_lognormal_salaries(table):
    people_per_dept = np.bincount(np.unique(np.stack([table["user_id"], table["dept"]]),
                                            axis=1)[1], minlength=501)
    h = np.sum(1.0 / np.arange(1, 501))
    # P(1) = 1/H, P(2) = 1/(2H): about 2,940 and 1,470 of 20,000 people; 5 sigma is ~270.
    assert abs(people_per_dept[1] - 20_000 / h) < 300
    assert abs(people_per_dept[2] - 20_000 / (2 * h)) < 200
    log_salary = np.log(table["salary"][table["salary"] < 300_000])
    assert abs(np.median(table["salary"]) - 50_000) < 600
    assert abs(np.std(np.log(table["salary"])) - 0.7) < 0.02
    assert np.mean(table["salary"] == 300_000) < 0.01 and len(log_salary) > 0


def test_same_seed_same_table_other_seed_other():
    a = R.make_table(rows=5_000, people=1_000, departments=50, seed=7)
    b = R.make_table(rows=5_000, people=1_000, departments=50, seed=7)
    c = R.make_table(rows=5_000, people=1_000, departments=50, seed=8)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["salary"], c["salary"])


@pytest.mark.parametrize("rows", [1_000, 1_001, 10_500, 19_999, 20_000])
def test_rows_adjusted_both_ways(rows):
    # 1,000 people draw about 10,500 rows: fewer asked removes rows, more asks for added ones,
    # down to one row each and up to twenty.
    t = R.make_table(rows=rows, people=1_000, departments=10, seed=1)
    per_person = np.bincount(t["user_id"], minlength=1_000)
    assert len(t["user_id"]) == rows == per_person.sum()
    assert per_person.min() >= 1 and per_person.max() <= 20


@pytest.mark.parametrize("rows, people", [(999, 1_000), (20_001, 1_000), (0, 10)])
def test_impossible_sizes_refused(rows, people):
    with pytest.raises(ValueError, match="rows"):
        R.make_table(rows=rows, people=people, departments=10)


def test_parquet_round_trip(table, tmp_path):
    path = str(tmp_path / "table.parquet")
    R.write_parquet(table, path)
    back = R.read_parquet(path)
    assert all(np.array_equal(back[k], table[k]) and back[k].dtype == table[k].dtype
               for k in table)


def _small():
    # departments 7 (3 rows), 2 (2 rows), 9 (1 row); one salary above the bound.
    return {"user_id": np.array([1, 1, 2, 3, 3, 4], dtype=np.int64),
            "dept": np.array([7, 7, 2, 7, 2, 9], dtype=np.int64),
            "salary": np.array([100.0, 200.0, 50.0, 900.0, 150.0, 10.0])}


def test_truth_counts_and_clamped_means():
    t = R.truth(_small(), lo=0.0, hi=600.0)
    assert t["dept"].tolist() == [2, 7, 9]
    assert t["count"].tolist() == [2, 3, 1]
    assert np.allclose(t["mean"], [100.0, (100 + 200 + 600) / 3, 10.0])
    assert t["median"] == pytest.approx(np.median([100, 200, 50, 600, 150, 10]))
    assert t["overall_mean"] == pytest.approx((100 + 200 + 50 + 600 + 150 + 10) / 6)


def test_mean_error_scores_the_largest_and_counts_missing_as_one():
    t = R.truth(_small(), lo=0.0, hi=600.0)
    assert R.largest(t, 2).tolist() == [1, 0]            # departments 7 then 2
    exact = {2: 100.0, 7: 300.0}
    assert R.mean_error(exact, t, largest_k=2) == 0.0
    # 10% off on department 7, department 2 missing (1): mean 0.55; department 9 is not
    # among the 2 largest, so its absence or error does not count.
    assert R.mean_error({7: 330.0, 9: 1e9}, t, largest_k=2) == pytest.approx(0.55)
    assert R.mean_error({2: float("nan"), 7: 300.0}, t, largest_k=2) == pytest.approx(0.5)
    assert R.mean_error({}, t, largest_k=10) == 1.0       # fewer present than asked: all


def test_released_and_spurious_counts_and_relative_error():
    t = R.truth(_small())
    released = {2: 1.0, 7: 2.0, 5: 3.0}
    assert R.released_count(released, t) == 2
    assert R.spurious_count(released, t) == 1                # no record has department 5
    assert R.relative_error(110.0, 100.0) == pytest.approx(0.1)
    assert R.relative_error(float("nan"), 100.0) == float("inf")


def test_bounded_baseline_keeps_the_first_rows_per_person_and_department():
    # Person 1 has 7 rows in department 3 (salaries 1..7): the first 5 in table order are
    # kept. Person 2 has 2 rows there (100, 200), all kept.
    t = {"user_id": np.array([1, 2, 1, 1, 1, 2, 1, 1, 1], dtype=np.int64),
         "dept": np.full(9, 3, dtype=np.int64),
         "salary": np.array([1.0, 100.0, 2.0, 3.0, 4.0, 200.0, 5.0, 6.0, 7.0])}
    b = R.bounded_baseline(t, max_rows=5)
    assert b["released"] == {3: pytest.approx((1 + 2 + 3 + 4 + 5 + 100 + 200) / 7)}
    assert b["seconds"] >= b["bounding_seconds"] >= 0.0


def test_bounded_median_error_is_the_bounding_alone():
    # Everyone has at most 5 rows: every row is kept and the median is the table's.
    t = {"user_id": np.repeat(np.arange(4, dtype=np.int64), 5),
         "salary": np.arange(1.0, 21.0)}
    assert R.bounded_median_error(t, max_rows=5, draws=3) == {
        "error": 0.0, "worst": 0.0, "draws": 3, "max_rows": 5}
    # Person 0 holds the 9 lowest salaries, person 1 the 9 highest, person 2 the middle one
    # (10): kept 1 a person, the median is whichever of the three is in the middle, 10.
    t = {"user_id": np.r_[np.zeros(9), np.ones(9), [2]].astype(np.int64),
         "salary": np.r_[np.arange(1.0, 10.0), np.arange(11.0, 20.0), [10.0]]}
    assert R.bounded_median_error(t, max_rows=1, draws=4)["error"] == 0.0
    # Person 0's 8 rows are at 1, person 1's 2 rows at 100 and 200: 2 kept a person give the
    # median (1 + 100) / 2 against the table's 1.
    t = {"user_id": np.r_[np.zeros(8), [1, 1]].astype(np.int64),
         "salary": np.r_[np.ones(8), [100.0, 200.0]]}
    r = R.bounded_median_error(t, max_rows=2, draws=2)
    assert r["error"] == r["worst"] == pytest.approx(49.5)


def test_a_child_runs_in_its_own_scratch_directory_removed_after(tmp_path, monkeypatch):
    # Whatever a library writes where it runs (Spark's warehouse of temporary tables) lands
    # in the child's scratch directory, which is removed: never in the caller's directory.
    # The table is given by a relative path.
    monkeypatch.chdir(tmp_path)
    R.write_parquet(R.make_table(rows=2_000, people=200, departments=10, seed=4), "t.parquet")
    r = R.run_peer("dpfast", "mean", "t.parquet", timeout=120)
    assert "value" in r and r["cwd"] != str(tmp_path)
    assert not os.path.exists(r["cwd"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def test_markdown_lists_measured_and_skipped():
    report = {"machine": {"cpu": "x", "cores": 2, "memory_gib": 1.0, "python": "3",
                          "numpy": "2", "numpy_simd": "none", "dpfast": "0",
                          "simd": "scalar", "threads_available": False,
                          "default_threads": 1},
              "rows": 10**7, "people": 10**6, "departments": 10**4, "present": 9_995,
              "true_median": 5e4, "true_mean": 6e4, "epsilon": 1.0, "delta": 1e-6,
              "max_groups": 1, "max_rows": 5,
              "baseline": {"seconds": 2.0, "bounding_seconds": 1.8, "released": 9_995,
                           "error": 0.01, "median_seconds": 0.1,
                           "median_bounded": {"error": 4e-4, "worst": 7e-4, "draws": 5,
                                              "max_rows": 5}},
              "grouped": [{"library": "PipelineDP", "version": "0.3.1", "task": "grouped",
                           "seconds": 100.0, "load_seconds": 5.0, "peak_rss_mib": 4096.0,
                           "load_rss_mib": 1024.0, "released": 2000.0, "error": 0.056},
                          {"library": "Tumult Analytics", "version": "0.21.0",
                           "task": "grouped", "seconds": 365.0, "load_seconds": 1.7,
                           "peak_rss_mib": 740.0, "load_rss_mib": 700.0, "released": 1540.0,
                           "error": 0.125, "memory_not_measured": "Spark's JVM"},
                          {"library": "OpenDP float", "task": "grouped",
                           "skipped": "needs polars 1.36.1"}],
              "ungrouped": [{"library": "OpenDP", "version": "0.16.0", "task": "median",
                             "failed": "timed out after 600 s"}],
              "joint": [{"method": "joint", "error": 0.06, "worst": 0.1, "seconds": 2.9,
                         "rows": 2000, "m": 99, "repeats": 5}]}
    text = R.to_markdown(report)
    assert "| time, 10⁷ rows |" in text and "(of 9,995 present)" in text
    assert "| PipelineDP 0.3.1 | 100.00 s" in text and "| 2,000 | 0.056 |" in text
    assert "| 1,540 | 0.125 | — (Spark's JVM) |" in text
    assert "OpenDP float (grouped): needs polars 1.36.1" in text
    assert "OpenDP (median): timed out after 600 s" in text
    assert "| 99 | JointExp (Gillenwater et al.), one draw of all m | 0.06 | 0.1 | 2.9 s |" \
        in text
    assert ("| no privacy: 5 rows a person kept uniformly at random (the bounding alone; "
            "mean of 5 draws, worst 0.0007) | median | — | 0.0004 | — |") in text
