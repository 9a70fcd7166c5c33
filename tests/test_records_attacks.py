"""Statistics of records on the paths an outside review attacked: each test is one attack
that once succeeded, now refused or made harmless."""
import os
import tempfile

import numpy as np
import pandas as pd
import pytest

import dpfast as dp
from dpfast import _native, groupby, records
from refusals import spends_nothing


def test_a_selection_table_that_cannot_reach_one_is_held_at_its_last_value():
    # Per-key epsilon and delta below what floats resolve: the table is [0], and keys are
    # released with probability 0 (not 1, as beyond a finished table).
    assert list(groupby.selection_probabilities(1e-17, 1e-17)) == [0.0]
    frame = {"dept": np.array(["a", "a", "b"]), "user": np.array([1, 2, 3])}
    out = dp.group_by(frame, "dept", privacy_unit="user").agg(
        med=("user", "median"), bounds={"user": (0, 10)}, epsilon=1e-17, delta=1e-17,
        selection_rule="optimal", accountant=dp.Accountant(1.0, 1e-6), rng=1)
    assert len(out) == 0


@pytest.mark.parametrize("rows", [1, 10**6, 2**31])
def test_the_grid_of_a_sum_does_not_depend_on_the_number_of_rows(rows):
    # Neighbouring tables on either side of a row count must round values alike.
    plan = records.split("sum", "laplace", 10.0, None, None,
                         [records.Part("sum", 1.0, 1.0, False)])
    assert records.value_grid(plan.noisy()[0], 1.0, rows, "sum") == \
        records.value_grid(plan.noisy()[0], 1.0, 1, "sum")


def test_a_sum_past_the_exact_integers_is_refused_before_the_charge():
    plan = records.split("sum", "laplace", 1.0, None, None,
                         [records.Part("sum", 1.0, 1.0, False)])
    with pytest.raises(ValueError, match="split the table"):
        records.value_grid(plan.noisy()[0], 1.0, 2**40, "sum")


@pytest.mark.parametrize("bounds", [(0.0, 1e-310), (0.0, 5e-324), (0.0, 1.7e308),
                                    (-1e300, 1e300)])
def test_bounds_whose_sums_or_noise_leave_the_floats_are_refused(bounds):
    acct, gen = dp.Accountant(), dp.ChaCha20(3)
    for func in (dp.sum, dp.mean, dp.variance, dp.median):
        with spends_nothing(acct, gen), pytest.raises(ValueError, match="bounds"):
            func([0.0, 1e-310], bounds=bounds, epsilon=1.0, accountant=acct, rng=gen)


def test_series_paired_by_position_with_different_indexes_are_refused():
    values = pd.Series([1.0, 1.0, 1.0, 1.0, 5.0], index=[4, 3, 2, 1, 0])
    people = pd.Series([1, 1, 1, 1, 2])
    acct, gen = dp.Accountant(), dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="index"):
        dp.sum(values, bounds=(0, 10), epsilon=1.0, privacy_unit=people, max_rows=1,
               accountant=acct, rng=gen)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="index"):
        dp.group_by({"k": people, "v": values}, "k").agg(
            n="count", epsilon=1.0, delta=1e-6, accountant=acct, rng=gen)


def test_parquet_keys_keep_their_type(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    big = np.array([2**63 + 5, 7, 7, 2**64 - 1], dtype=np.uint64)
    when = pd.to_datetime(["2020-01-01", "2021-01-01", "2021-01-01", "2020-01-01"]).values
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"k": big, "t": when, "v": np.ones(4)}), path)
    acct = dp.Accountant(epsilon=1e9)
    for col, want in (("k", big), ("t", when)):
        got = dp.group_by(path, col, keys=list(np.unique(want))).agg(
            n="count", epsilon=1e6, accountant=acct, rng=1)
        mem = dp.group_by({col: want, "v": np.ones(4)}, col, keys=list(np.unique(want))).agg(
            n="count", epsilon=1e6, accountant=acct, rng=1)
        pd.testing.assert_frame_equal(got, mem)
        assert list(got.index) == list(np.unique(want))


def test_a_nat_key_or_id_is_refused():
    when = np.array(["2020-01-01", "NaT", "2021-01-01"], dtype="datetime64[ns]")
    acct, gen = dp.Accountant(1.0, 1e-6), dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="null"):
        dp.group_by({"k": when, "v": np.ones(3)}, "k").agg(
            n="count", epsilon=1.0, delta=1e-6, accountant=acct, rng=gen)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="null"):
        dp.mean(np.ones(3), bounds=(0, 2), epsilon=1.0, privacy_unit=when, accountant=acct,
                rng=gen)


def test_public_keys_are_matched_without_conversion():
    col = np.array([2**53 + 1, 5, 5], dtype=np.int64)
    acct = dp.Accountant(epsilon=1e9)
    out = dp.group_by({"k": col}, "k", keys=[5, 2**53, 2**53 + 1, 2**70]).agg(
        n="count", epsilon=1e6, accountant=acct, rng=1)
    assert out["n"].tolist() == [2, 0, 1, 0]
    gen = dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(TypeError, match="kind"):
        dp.group_by({"k": col}, "k", keys=[5.0, 9007199254740992.0]).agg(
            n="count", epsilon=1.0, accountant=acct, rng=gen)
    with spends_nothing(acct, gen), pytest.raises(TypeError, match="kind"):
        dp.group_by({"k": np.array(["a", "b"], dtype=object)}, "k", keys=[1, 2]).agg(
            n="count", epsilon=1.0, accountant=acct, rng=gen)


def test_the_grouped_quantile_kernel_refuses_offsets_outside_its_values():
    s = np.arange(10, dtype=np.uint64)
    u = np.full(1, 0.5)
    for start in ([0, 10**12], [5, 3], [-1, 10]):
        with pytest.raises(ValueError, match="start"):
            _native.grouped_quantile(s, np.array(start, dtype=np.int64),
                                     np.zeros(1, dtype=np.int64), 100, 0.5, 1.0, u, u)


def test_a_parquet_path_that_is_not_a_regular_file_is_refused():
    scratch = tempfile.mkdtemp()
    try:
        fifo = os.path.join(scratch, "pipe.parquet")
        os.mkfifo(fifo)
        with pytest.raises(ValueError, match="regular file"):
            dp.group_by(fifo, "k")
    finally:
        for name in os.listdir(scratch):
            os.unlink(os.path.join(scratch, name))
        os.rmdir(scratch)


def test_quantiles_at_extreme_epsilon_are_released_or_refused_by_epsilon():
    x = np.linspace(0, 1, 100)
    acct = dp.Accountant()
    assert 0.0 <= dp.median(x, bounds=(0, 1), epsilon=1e300, accountant=acct, rng=1) <= 1.0
    assert 0.0 <= dp.median(x, bounds=(0, 1), epsilon=1e-300, accountant=acct, rng=1) <= 1.0


@pytest.mark.parametrize("kw", [dict(epsilon=5e-17, delta=1e-6), dict(epsilon=1e-300, delta=1e-6)])
def test_a_count_wider_than_the_discrete_sampler_is_refused_before_the_charge(kw):
    # Past scale 2**40 the discrete Laplace sampler is not exact (a lone person's key was
    # released 11% of the time at delta 1e-6); tiny epsilons also hung the threshold's search.
    acct, gen = dp.Accountant(10.0, 0.5), dp.ChaCha20(3)
    frame = {"k": ["secret", "b"], "u": [1, 2]}
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="discrete samplers"):
        dp.group_by(frame, "k", privacy_unit="u").agg(n="count", accountant=acct, rng=gen,
                                                      **kw)
    zcdp = dp.Accountant(rho=10.0)
    with spends_nothing(zcdp, gen), pytest.raises(ValueError, match="discrete samplers"):
        dp.mean([1.0], bounds=(0, 2), noise="gaussian", rho=1e-26, accountant=zcdp, rng=gen)


@pytest.mark.parametrize("epsilon, delta, max_groups, max_rows", [
    (0.3390645922762008, 4.591815083060642e-06, 2, 5), (1.0, 1e-6, 1, 5)])
def test_the_count_rules_threshold_pays_for_delta_at_a_float_from_a_tail(epsilon, delta,
                                                                        max_groups, max_rows):
    import mpmath
    mpmath.mp.dps = 60
    gb = dp.group_by({"k": ["a"], "u": [1]}, "k", privacy_unit="u", max_groups=max_groups,
                     max_rows=max_rows)
    gp = gb._plan("t", groupby.aggregation_specs({"n": "count"}, "t"), None, "laplace",
                  epsilon, delta, None, None, None, "count")
    t = mpmath.mpf(gp.plan.noisy()[0].noise.t)
    q = mpmath.e ** (-1 / t)
    j = gp.count_threshold - max_rows
    assert max_groups * q ** (j + 1) / (1 + q) <= delta


def test_a_subnormal_delta_per_key_is_refused():
    acct, gen = dp.Accountant(10.0, 0.5), dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="normal float"):
        dp.group_by({"k": ["a"], "u": [1]}, "k", privacy_unit="u", max_groups=2**31 - 1).agg(
            n="count", epsilon=1.0, delta=1e-300, accountant=acct, rng=gen)


def test_list_keys_keep_large_ints_and_trailing_nuls_apart():
    acct = dp.Accountant(epsilon=1e9)
    out = dp.group_by({"k": [2**63 + 1, 2**63 + 2, 1] * 3}, "k").agg(
        n="count", epsilon=1e6, delta=1e-6, accountant=dp.Accountant(1e9, 0.5), rng=1)
    assert sorted(out.index.tolist()) == [1, 2**63 + 1, 2**63 + 2]
    out = dp.group_by({"k": ["a", "a\x00", "a"]}, "k", keys=["a", "a\x00"]).agg(
        n="count", epsilon=1e6, accountant=acct, rng=1)
    assert out["n"].tolist() == [2, 1] and out.index.tolist() == ["a", "a\x00"]
    out = dp.group_by({"k": np.array([1, 2], dtype=np.int64)}, "k", keys=[2**63 + 1]).agg(
        n="count", epsilon=1e6, accountant=acct, rng=1)
    assert out["n"].tolist() == [0]


def test_a_parquet_file_rewritten_after_it_was_opened_is_refused_before_the_charge(tmp_path):
    # group_by() takes the file's identity; agg() reads it before the charge and refuses a
    # file that is no longer the one opened (a changed input behind the lazy read).
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = str(tmp_path / "t.parquet")
    table = {"k": np.array([1, 2, 2]), "u": np.array([1, 2, 3]), "v": np.array([1.0, 2, 3])}
    pq.write_table(pa.table(table), path)
    grouped = dp.group_by(path, "k", privacy_unit="u", keys=[1, 2])
    os.utime(path, ns=(1, 1))                              # same bytes, another file time
    acct, gen = dp.Accountant(10.0), dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(RuntimeError, match="changed"):
        grouped.agg(m=("v", "mean"), bounds={"v": (0, 5)}, epsilon=1.0, accountant=acct,
                    rng=gen)
