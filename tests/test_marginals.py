"""Contingency tables and marginal tables (dpfast.linear.contingency): labels, the one charge,
refusals before the charge, sensitivity, the consistent estimate against a dense
least-squares solve, its never-worse total squared error, exact variances against
simulation, and the high-probability bounds."""
import doctest
import functools
import itertools
import math
import os

import numpy as np
import pandas as pd
import pytest

import dpfast as dp
from dpfast.linear import contingency as M
from dpfast.linear import marginal_accuracy as A
from dpfast.linear import marginal_plan as P
from dpfast.linear.contingency import (crosstab, marginal_error_bound, marginal_variance,
                                     marginals)
from dpfast.linear.workloads import Marginals
from refusals import rng_state, spends_nothing

HUGE = 1e9          # epsilon so large that the noise is exactly 0: exact tables
KEYS = {"a": ["x", "y"], "b": [0, 1, 2], "c": ["u", "v", "w", "z"], "d": [True, False]}


def make_frame(seed, n=200, keys=KEYS):
    gen = np.random.default_rng(seed)
    return pd.DataFrame({c: [cats[i] for i in gen.integers(0, len(cats), n)]
                         for c, cats in keys.items()})


def histogram(frame, keys=KEYS):
    """The full histogram of a frame over the keys (axes in key order)."""
    codes = [frame[c].map({v: i for i, v in enumerate(cats)}).to_numpy()
             for c, cats in keys.items()]
    counts = np.zeros(tuple(len(c) for c in keys.values()), dtype=np.int64)
    np.add.at(counts, tuple(codes), 1)
    return counts


def used_accountant():
    acct = dp.Accountant(epsilon=100.0)
    acct.spend(0.25, label="earlier release")
    return acct


def arrays(rel):
    return {lab: np.asarray(t, dtype=np.float64) for lab, t in rel.tables.items()}


def marginal_of(table, label, attrs):
    """The marginal of a table (labelled by attribute names) over a subset of them."""
    axes = tuple(i for i, n in enumerate(label) if n not in attrs)
    kept = [n for n in label if n in attrs]
    out = np.asarray(table, dtype=np.float64).sum(axis=axes)
    return np.transpose(out, [kept.index(n) for n in sorted(attrs, key=str)])


def table_operator(sizes, attrs):
    """Dense matrix summing a flat histogram over the attributes not in ``attrs``."""
    blocks = [np.eye(n) if a in attrs else np.ones((1, n)) for a, n in enumerate(sizes)]
    return np.asarray(functools.reduce(np.kron, blocks))


def projection(sizes, sets):
    """W W^+ for the stacked table operators: the least-squares projection."""
    w = np.vstack([table_operator(sizes, s) for s in sets])
    return w @ np.linalg.pinv(w)


# -- crosstab ---------------------------------------------------------------------------

def test_crosstab_of_two_columns_is_a_dataframe_labelled_by_the_keys():
    frame = make_frame(0)
    table = crosstab(frame, ["a", "c"], epsilon=1.0, keys=KEYS, accountant=dp.Accountant(),
                     rng=1)
    assert isinstance(table, pd.DataFrame) and table.shape == (2, 4)
    assert table.index.tolist() == KEYS["a"] and table.columns.tolist() == KEYS["c"]
    assert table.index.name == "a" and table.columns.name == "c"
    assert (table.dtypes == np.int64).all()


def test_crosstab_exact_counts_are_pandas_crosstab_over_the_keys():
    frame = make_frame(1)
    frame = frame[frame["c"] != "z"]                 # a category with no record: a 0 cell
    table = crosstab(frame, ["b", "c"], epsilon=HUGE, keys=KEYS, accountant=dp.Accountant(),
                     rng=0)
    want = pd.crosstab(frame["b"], frame["c"]).reindex(index=KEYS["b"], columns=KEYS["c"],
                                                       fill_value=0)
    np.testing.assert_array_equal(table.to_numpy(), want.to_numpy())
    assert table["z"].sum() == 0


def test_crosstab_of_one_or_three_columns_is_a_series():
    frame = make_frame(2)
    one = crosstab(frame, "a", epsilon=1.0, keys=KEYS, rng=0, accountant=dp.Accountant())
    assert isinstance(one, pd.Series) and one.index.tolist() == KEYS["a"]
    three = crosstab(frame, ["a", "b", "d"], epsilon=HUGE, keys=KEYS, rng=0,
                     accountant=dp.Accountant())
    assert isinstance(three.index, pd.MultiIndex) and three.index.names == ["a", "b", "d"]
    assert len(three) == 12 and three.sum() == len(frame)
    assert three[("y", 2, False)] == ((frame["a"] == "y") & (frame["b"] == 2)
                                      & ~frame["d"]).sum()


def test_crosstab_of_a_mapping_returns_an_array_and_its_labels():
    frame = make_frame(3)
    columns = {c: frame[c].to_numpy() for c in ("a", "b")}
    table, labels = crosstab(columns, ["b", "a"], epsilon=HUGE, keys=KEYS, rng=0,
                             accountant=dp.Accountant())
    assert isinstance(table, np.ndarray) and table.dtype == np.int64 and table.shape == (3, 2)
    assert labels == (KEYS["b"], KEYS["a"])
    np.testing.assert_array_equal(table, histogram(frame).sum(axis=(2, 3)).T)


def test_crosstab_of_one_column_draws_the_noise_of_count_categories():
    frame = make_frame(4)
    table = crosstab(frame, ["c"], epsilon=0.5, keys=KEYS, rng=9, accountant=dp.Accountant())
    want = dp.count_categories(frame["c"], KEYS["c"], epsilon=0.5, rng=9,
                               accountant=dp.Accountant())
    np.testing.assert_array_equal(table.to_numpy(), want)


def test_numeric_and_categorical_columns():
    frame = make_frame(5)
    frame["c"] = frame["c"].astype("category")
    frame["b"] = frame["b"].astype(np.int32)
    frame["e"] = frame["b"] * 10.0
    keys = {**KEYS, "e": [0.0, 10.0, 20.0]}
    table = crosstab(frame, ["c", "e"], epsilon=HUGE, keys=keys, rng=0,
                     accountant=dp.Accountant())
    np.testing.assert_array_equal(table.to_numpy(), histogram(frame).sum(axis=(0, 3)).T)


# -- one charge, refusals before it -----------------------------------------------------

FRAME = make_frame(6, n=50)
COUNTS = histogram(FRAME)
GOOD = {
    "crosstab": ((FRAME, ["a", "b", "c"]), {"epsilon": 1.0, "keys": KEYS}),
    "marginals": ((FRAME,), {"epsilon": 1.0, "keys": KEYS}),
    "marginals_counts": ((COUNTS,), {"epsilon": 1.0}),
}


def call(name, args, kwargs, acct, rng):
    func = crosstab if name == "crosstab" else marginals
    return func(*args, **{"accountant": acct, "rng": rng, **kwargs})


@pytest.mark.parametrize("name", sorted(GOOD))
@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_good_input_charges_epsilon_once_and_draws(name, method):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    spent, state = acct.spent, rng_state(rng)
    args, kwargs = GOOD[name]
    if name != "crosstab":
        kwargs = {**kwargs, "method": method}
    call(name, args, kwargs, acct, rng)
    assert len(acct) == 2 and acct.spent[0] == pytest.approx(spent[0] + 1.0)
    assert rng_state(rng) != state


@pytest.mark.parametrize("name", sorted(GOOD))
def test_refused_budget_draws_nothing(name):
    acct, rng = dp.Accountant(epsilon=0.5), dp.ChaCha20(7)
    args, kwargs = GOOD[name]
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        call(name, args, kwargs, acct, rng)


VE, TE = ValueError, TypeError
NAN = float("nan")
MASKED = np.ma.masked_array(FRAME["a"].to_numpy(), mask=[True] + [False] * 49)
WITH_NAN = FRAME.assign(b=FRAME["b"].astype(float).where(FRAME.index != 3))
OUTSIDE = FRAME.assign(c=FRAME["c"].where(FRAME.index != 7, "secret-value"))
COMMON = [({"epsilon": 0.0}, VE, "epsilon"), ({"epsilon": -1.0}, VE, "epsilon"),
          ({"epsilon": NAN}, VE, "epsilon"), ({"epsilon": "1"}, TE, "epsilon"),
          ({"epsilon": 1e-14}, VE, "epsilon"), ({"threads": 0}, VE, "threads"),
          ({"rng": "seed"}, TE, "rng"), ({"rng": np.random.default_rng(1)}, TE, "rng"),
          ({"accountant": "acct"}, TE, "accountant")]
KEYS_BAD = [
    ({"keys": None}, VE, "keys"), ({"keys": "auto"}, VE, "keys"),
    ({"keys": FRAME}, VE, "keys"), ({"keys": [["x", "y"]]}, TE, "keys"),
    ({"keys": {**KEYS, "a": FRAME["a"]}}, VE, "keys"),
    ({"keys": {**KEYS, "a": FRAME["a"].to_numpy()}}, VE, "keys"),
    ({"keys": {**KEYS, "a": pd.Categorical(["x", "y"])}}, VE, "keys"),
    ({"keys": {**KEYS, "a": ["x", "y", "x"]}}, VE, "keys"),
    ({"keys": {**KEYS, "a": []}}, VE, "keys"), ({"keys": {**KEYS, "a": ["x", None]}}, VE, "keys"),
    ({"keys": {**KEYS, "a": ["x", NAN]}}, VE, "keys"), ({"keys": {**KEYS, "a": "xy"}}, TE, "keys"),
    ({"keys": {**KEYS, "a": {"x", "y"}}}, TE, "keys"),
    ({"keys": {**KEYS, "a": [["x"]]}}, TE, "keys"),
]
DATA_BAD = [
    ({"frame": OUTSIDE}, VE, "'frame'"), ({"frame": WITH_NAN}, VE, "'frame'"),
    ({"frame": {**FRAME, "a": MASKED}}, TE, "masked"),
    ({"frame": {**FRAME, "a": FRAME["a"].to_numpy()[:10]}}, VE, "one length"),
    ({"frame": {**FRAME, "a": np.zeros((50, 2))}}, VE, "1-D"),
    ({"frame": FRAME.to_numpy()}, None, ""),
    ({"frame": OUTSIDE, "keys": {**KEYS, "c": list(OUTSIDE["c"])}}, VE, "repeated"),
]
CASES = {
    "crosstab": COMMON + KEYS_BAD + DATA_BAD + [
        ({"columns": ["a", "zz"]}, VE, "'columns'"), ({"columns": ["a", "a"]}, VE, "'columns'"),
        ({"columns": []}, VE, "'columns'"), ({"columns": [["a"]]}, TE, "'columns'"),
        ({"keys": {"a": ["x", "y"]}}, VE, "'keys'"),
        ({"frame": [[1, 2]]}, TE, "'frame'")],
    "marginals": COMMON + KEYS_BAD + DATA_BAD + [
        ({"k": 0}, VE, "'k'"), ({"k": 5}, VE, "'k'"), ({"k": 1.5}, TE, "'k'"),
        ({"k": True}, TE, "'k'"), ({"k": None}, TE, "'k'"), ({"method": "gls"}, VE, "'method'"),
        ({"workload": [("a", "zz")]}, VE, "'workload'"),
        ({"workload": [("a", "b"), ("b", "a")]}, VE, "'workload'"),
        ({"workload": [("a", "a")]}, VE, "'workload'"), ({"workload": [()]}, VE, "'workload'"),
        ({"workload": []}, VE, "'workload'"), ({"workload": "ab"}, TE, "'workload'"),
        ({"workload": Marginals((2, 3), k=1)}, VE, "'workload'"),
        ({"workload": [("a", "b")], "k": 3}, VE, "'k'"),
        ({"keys": {**KEYS, "zz": [1, 2]}}, VE, "'keys'"), ({"frame": FRAME["b"]}, TE, "Series")],
    "marginals_counts": COMMON + [
        ({"frame": COUNTS.astype(float) + 0.5}, VE, "integer"),
        ({"frame": np.where(COUNTS == COUNTS.flat[0], NAN, COUNTS)}, VE, "NaN"),
        ({"frame": np.ma.masked_array(COUNTS)}, TE, "masked"), ({"frame": np.int64(5)}, VE, ""),
        ({"frame": np.zeros((2, 0), dtype=int)}, VE, ""), ({"frame": COUNTS > 0}, TE, ""),
        ({"frame": COUNTS.astype(str)}, TE, ""), ({"frame": np.full((2, 2), 2**62)}, VE, ""),
        ({"keys": {"a": ["x", "y"]}}, VE, "'keys'"), ({"keys": {**KEYS, "a": ["x"]}}, VE, "'keys'"),
        ({"keys": COUNTS}, VE, "'keys'"), ({"k": 5}, VE, "'k'"), ({"method": "x"}, VE, "method"),
        ({"workload": [(0, 7)]}, VE, "'workload'"),
        ({"workload": Marginals((2, 3, 4, 3), k=2)}, VE, "'workload'")],
}


@pytest.mark.parametrize("name, overrides, exc, text", [
    (name, o, e, t) for name, cases in sorted(CASES.items()) for o, e, t in cases],
    ids=lambda x: x if isinstance(x, str) else None)
def test_bad_input_spends_nothing_and_draws_nothing(name, overrides, exc, text):
    args, kwargs = GOOD[name]
    overrides = dict(overrides)
    if "frame" in overrides:
        args = (overrides.pop("frame"),) + args[1:]
    if "columns" in overrides:
        args = (args[0], overrides.pop("columns"))
    acct, rng = used_accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(exc or (TypeError, ValueError)) as info:
        call(name, args, {**kwargs, **overrides}, acct, rng)
    assert not isinstance(info.value, dp.BudgetExceededError)
    assert text in str(info.value)
    assert "secret-value" not in str(info.value)


def test_values_outside_the_keys_are_reported_by_record_not_by_value():
    with pytest.raises(ValueError, match=r"column 'c' \(the first at record 7\)"):
        marginals(OUTSIDE, epsilon=1.0, keys=KEYS, accountant=dp.Accountant(), rng=0)


def test_keys_taken_from_a_categorical_dtype_are_refused():
    frame = FRAME.assign(c=FRAME["c"].astype("category"))
    for keys in ({**KEYS, "c": frame["c"].cat.categories},
                 {**KEYS, "c": frame["c"].dtype.categories}):
        with pytest.raises(ValueError, match="'keys'.*not the data"):
            crosstab(frame, ["c"], epsilon=1.0, keys=keys, accountant=dp.Accountant(), rng=0)
    # a public list equal to the data's categories is fine
    crosstab(frame, ["c"], epsilon=1.0, keys={"c": ["u", "v", "w", "z"]},
             accountant=dp.Accountant(), rng=0)


# -- sensitivity and the noise scale ----------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_one_added_record_moves_each_table_by_one_and_all_by_the_scale(seed):
    frame = make_frame(seed, n=60)
    extra = make_frame(100 + seed, n=1)
    neighbour = pd.concat([frame, extra], ignore_index=True)
    workloads = [None, [("a", "b", "c"), ("a", "d"), ("c",)], Marginals((2, 3, 4, 2), k=3)]
    for workload in workloads:
        acct = dp.Accountant()
        kw = {"epsilon": HUGE, "keys": KEYS, "method": "independent", "accountant": acct,
              "rng": 0, "workload": workload}
        before, after = marginals(frame, **kw), marginals(neighbour, **kw)
        changes = [np.abs(after[lab].to_numpy() - before[lab].to_numpy()).sum()
                   for lab in before]
        assert changes == [1] * len(before)                       # each record: one cell
        assert sum(changes) == len(before) == before.scale * HUGE  # l1 sensitivity = scale
        assert len(acct) == 2 and acct.spent[0] == pytest.approx(2 * HUGE)


def test_workload_sensitivity_is_the_number_of_tables():
    for workload in (Marginals((2, 3, 4, 2), k=2), Marginals((2, 3, 4, 2), k=3),
                     Marginals((2, 3, 4, 2), attributes=[(0, 1), (1,), (1, 2, 3)])):
        rel = marginals(COUNTS, epsilon=2.0, workload=workload, accountant=dp.Accountant(),
                        rng=0)
        assert rel.scale == workload.sensitivity / 2.0 == len(rel) / 2.0


@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_the_release_does_not_depend_on_threads(method):
    frame = make_frame(7, n=150_000)               # counted on several threads
    out = [marginals(frame, epsilon=1.0, keys=KEYS, method=method, threads=t, rng=3,
                     accountant=dp.Accountant()) for t in (1, 2, 4)]
    for rel in out[1:]:
        for lab in rel:
            np.testing.assert_array_equal(rel[lab].to_numpy(), out[0][lab].to_numpy())
    tabs = [crosstab(frame, ["a", "b", "c"], epsilon=1.0, keys=KEYS, threads=t, rng=3,
                     accountant=dp.Accountant()) for t in (1, 2)]
    np.testing.assert_array_equal(tabs[0].to_numpy(), tabs[1].to_numpy())


# -- results: labels, forms of input ----------------------------------------------------

def test_marginals_of_a_frame_are_labelled_tables():
    rel = marginals(FRAME, epsilon=1.0, keys=KEYS, accountant=dp.Accountant(), rng=0)
    assert list(rel) == list(itertools.combinations("abcd", 2)) and len(rel) == 6
    assert rel.method == "consistent" and rel.scale == 6.0 and rel.categories == KEYS
    ac = rel[("a", "c")]
    assert isinstance(ac, pd.DataFrame) and ac.index.tolist() == KEYS["a"]
    assert ac.columns.tolist() == KEYS["c"] and ac.dtypes.iloc[0] == np.float64
    assert "6 tables" in repr(rel)
    ind = marginals(FRAME, epsilon=1.0, keys=KEYS, method="independent",
                    accountant=dp.Accountant(), rng=0)
    assert (ind[("a", "c")].dtypes == np.int64).all()
    three = marginals(FRAME, epsilon=1.0, keys=KEYS, k=3, accountant=dp.Accountant(), rng=0)
    assert isinstance(three[("a", "b", "c")].index, pd.MultiIndex)
    one = marginals(FRAME, epsilon=1.0, keys=KEYS, k=1, accountant=dp.Accountant(), rng=0)
    assert isinstance(one[("b",)], pd.Series) and one[("b",)].index.tolist() == KEYS["b"]
    assert one["b"] is one[("b",)]


def test_table_axes_follow_the_workload_order():
    rel = marginals(FRAME, epsilon=HUGE, keys=KEYS, workload=[("c", "a"), ("b",)],
                    method="independent", accountant=dp.Accountant(), rng=0)
    assert rel[("c", "a")].index.name == "c" and rel[("c", "a")].shape == (4, 2)
    np.testing.assert_array_equal(rel[("c", "a")].to_numpy(), COUNTS.sum(axis=(1, 3)).T)


@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_counts_frames_and_mappings_give_the_same_release(method):
    kw = {"epsilon": 1.0, "method": method, "rng": 5}
    from_frame = marginals(FRAME, keys=KEYS, accountant=dp.Accountant(), **kw)
    from_mapping = marginals({c: FRAME[c].to_numpy() for c in KEYS}, keys=KEYS,
                             accountant=dp.Accountant(), **kw)
    named = marginals(COUNTS, keys=KEYS, accountant=dp.Accountant(), **kw)
    unnamed = marginals(COUNTS, accountant=dp.Accountant(), **kw)
    assert list(unnamed) == list(itertools.combinations(range(4), 2))
    for lab, idx in zip(from_frame, unnamed):
        for other in (from_mapping[lab], named[lab], unnamed[idx]):
            assert isinstance(other, np.ndarray)
            np.testing.assert_array_equal(other, from_frame[lab].to_numpy())


def test_workload_forms_agree():
    sizes = COUNTS.shape
    forms = [{"k": 2}, {"workload": Marginals(sizes, k=2)},
             {"workload": list(itertools.combinations(range(4), 2))}]
    rels = [marginals(COUNTS, epsilon=1.0, rng=2, accountant=dp.Accountant(), **f)
            for f in forms]
    for rel in rels[1:]:
        assert list(rel) == list(rels[0])
        for lab in rel:
            np.testing.assert_array_equal(rel[lab], rels[0][lab])


def test_nonnegative_tables_are_integers_with_one_total():
    rel = marginals(make_frame(8, n=30), epsilon=0.3, keys=KEYS, accountant=dp.Accountant(),
                    rng=1)
    out = rel.nonnegative()
    totals = {int(np.asarray(t).sum()) for t in out.values()}
    assert len(totals) == 1 and totals.pop() == max(0, round(rel[("a", "b")].to_numpy().sum()))
    for lab, t in out.items():
        assert isinstance(t, pd.DataFrame) and (t.to_numpy() >= 0).all()
        assert t.to_numpy().dtype == np.int64 and t.index.name == lab[0]


# -- consistency: the exact least-squares projection ------------------------------------

WORKLOADS = [
    ((2, 3, 4, 2), None),                                           # every pair
    ((3, 2, 4), [(0, 1, 2), (0, 1), (2,)]),                          # nested tables
    ((2, 3, 2, 3, 2), [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4)]),     # a cycle
    ((4, 3, 2, 5), [(0, 1, 2), (1, 2, 3), (0, 3)]),                  # 3-way and 2-way
    ((5, 1, 3), [(0, 1), (1, 2), (0, 2)]),                           # a size-1 attribute
]


def random_counts(sizes, seed):
    return np.random.default_rng(seed).poisson(3.0, size=sizes)


@pytest.mark.parametrize("sizes, workload", WORKLOADS)
def test_shared_sub_marginals_agree(sizes, workload):
    rel = marginals(random_counts(sizes, 1), epsilon=0.7, workload=workload,
                    accountant=dp.Accountant(), rng=4)
    tables = arrays(rel)
    total = np.abs(tables[next(iter(tables))]).sum()
    for (la, ta), (lb, tb) in itertools.combinations(tables.items(), 2):
        shared = set(la) & set(lb)
        for r in range(len(shared) + 1):           # every sub-marginal, the total included
            for attrs in itertools.combinations(sorted(shared), r):
                np.testing.assert_allclose(marginal_of(ta, la, attrs), marginal_of(tb, lb, attrs),
                                           rtol=1e-12, atol=1e-12 * total)


@pytest.mark.parametrize("sizes, workload", WORKLOADS)
def test_consistent_is_the_dense_least_squares_projection(sizes, workload):
    counts = random_counts(sizes, 2)
    kw = {"epsilon": 0.5, "workload": workload, "rng": 11}
    noisy = marginals(counts, method="independent", accountant=dp.Accountant(), **kw)
    fitted = marginals(counts, method="consistent", accountant=dp.Accountant(), **kw)
    sets = [tuple(lab) for lab in noisy]
    y = np.concatenate([noisy[s].ravel() for s in sets]).astype(np.float64)
    want = projection(sizes, sets) @ y
    got = np.concatenate([fitted[s].ravel() for s in sets])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(y).max())


def test_component_is_the_inclusion_exclusion_of_means():
    y = np.random.default_rng(3).normal(size=(3, 4, 2))
    table = (0, 2, 5)
    for sub in P.subsets(table):
        want = 0.0
        for r in range(len(sub) + 1):
            for keep in itertools.combinations(sub, r):
                axes = tuple(i for i, a in enumerate(table) if a not in keep)
                mean = y.mean(axis=axes, keepdims=True) if axes else y
                want = want + (-1) ** (len(sub) - r) * mean
        got = A.component(y, table, sub)
        shape = [y.shape[i] if a in sub else 1 for i, a in enumerate(table)]
        np.testing.assert_allclose(np.broadcast_to(got.reshape(shape), y.shape),
                                   np.broadcast_to(want, y.shape), atol=1e-12)


@pytest.mark.parametrize("sizes, workload", WORKLOADS)
def test_consistent_total_squared_error_never_exceeds_independent(sizes, workload):
    for seed in range(40):
        counts = random_counts(sizes, seed)
        kw = {"epsilon": 0.3 + seed % 4, "workload": workload, "rng": seed}
        exact = marginals(counts, epsilon=HUGE, workload=workload, method="independent",
                          accountant=dp.Accountant(), rng=0)
        ind = marginals(counts, method="independent", accountant=dp.Accountant(), **kw)
        con = marginals(counts, method="consistent", accountant=dp.Accountant(), **kw)
        sse_i = sum(((ind[s] - exact[s]) ** 2.0).sum() for s in exact)
        sse_c = sum(((con[s] - exact[s]) ** 2.0).sum() for s in exact)
        assert sse_c <= sse_i * (1 + 1e-12) + 1e-9, (seed, sse_c, sse_i)
        # the same noise, post-processed: the consistent release is the projection of the
        # independent one
        again = A.consistent(con._plan, [ind[s] for s in ind])
        for s, t in zip(con, again):
            np.testing.assert_allclose(con[s], t, rtol=1e-12, atol=1e-9)


# -- accuracy ---------------------------------------------------------------------------

@pytest.mark.parametrize("sizes, workload", WORKLOADS)
def test_variances_are_the_projection_diagonal(sizes, workload):
    eps = 0.8
    con = marginal_variance(list(sizes), epsilon=eps, workload=workload)
    ind = marginal_variance(list(sizes), epsilon=eps, workload=workload, method="independent")
    sets = list(con)
    t = len(sets) / eps
    sigma2 = 2 * math.exp(-1 / t) / (1 - math.exp(-1 / t)) ** 2
    diag = np.diag(projection(sizes, sets))
    start = 0
    for s in sets:
        n = math.prod(sizes[a] for a in s)
        np.testing.assert_allclose(diag[start:start + n] * sigma2, con[s], rtol=1e-9)
        assert ind[s] == pytest.approx(sigma2, rel=1e-12)
        assert con[s] <= ind[s] * (1 + 1e-12)
        start += n


@pytest.mark.parametrize("sizes, workload", WORKLOADS)
def test_error_coefficients_are_the_projection_rows(sizes, workload):
    plan = P.domain_plan(list(sizes), 2, workload, "test")
    p = projection(sizes, plan.sets)
    factors = A.variance_factors(plan, "consistent")
    start = 0
    for j, s in enumerate(plan.sets):
        coef, mult = A.error_coefficients(plan, j)
        assert mult.sum() == p.shape[0]
        assert (mult * coef ** 2).sum() == pytest.approx(factors[j], rel=1e-10)
        row = np.sort(p[start])                      # any cell of the table: the first
        want = np.sort(np.repeat(coef, mult.astype(int)))
        np.testing.assert_allclose(row, want, atol=1e-12)
        start += math.prod(sizes[a] for a in s)


def excess_kurtosis(scale):
    """Of discrete Laplace noise: kappa4 / kappa2^2 = (1 + 4q + q^2) / (2q)."""
    q = math.exp(-1 / scale)
    return (1 + 4 * q + q * q) / (2 * q)


SIM_SIZES, SIM_RUNS, SIM_EPS = (2, 3, 2), 2000, 1.5


@pytest.fixture(scope="module")
def simulation():
    """Errors of SIM_RUNS releases (seeds 0..) of all 2-way marginals, per method."""
    counts = random_counts(SIM_SIZES, 0)
    exact = marginals(counts, epsilon=HUGE, method="independent", accountant=dp.Accountant(),
                      rng=0)
    out = {}
    for method in ("independent", "consistent"):
        runs = [marginals(counts, epsilon=SIM_EPS, method=method, rng=seed,
                          accountant=dp.Accountant()) for seed in range(SIM_RUNS)]
        out[method] = {s: np.stack([r[s] - exact[s] for r in runs]) for s in exact}
    return out


@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_variances_match_simulation(simulation, method):
    # The mean of R squared errors of one cell estimates its variance with relative standard
    # deviation sqrt((2 + g) / R): the chi-square's sqrt(2 / R) for Gaussian errors, plus
    # the excess kurtosis g of the error (at most that of one discrete Laplace noise, since
    # the consistent errors are linear combinations of them). Averaging over the cells of a
    # table can only lower it; for independent noise the cells are independent, dividing
    # the variance by their number. Tolerance: 4.5 standard deviations.
    errors = simulation[method]
    want = marginal_variance(list(SIM_SIZES), epsilon=SIM_EPS, method=method)
    g = excess_kurtosis(len(want) / SIM_EPS)
    for s, err in errors.items():
        assert err.mean() == pytest.approx(0.0, abs=5 * math.sqrt(want[s] / SIM_RUNS))
        cells = err[0].size if method == "independent" else 1
        rsd = math.sqrt((2 + g) / (SIM_RUNS * cells))
        assert (err ** 2).mean() == pytest.approx(want[s], rel=4.5 * rsd)


@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_error_bounds_hold_in_simulation(simulation, method):
    beta = 0.05
    bound = marginal_error_bound(list(SIM_SIZES), epsilon=SIM_EPS, beta=beta, method=method)
    # every cell of every table within its table's bound, all at once
    within = np.all([np.abs(e).reshape(SIM_RUNS, -1).max(axis=1) <= bound[s]
                     for s, e in simulation[method].items()], axis=0)
    assert (~within).mean() <= beta
    # ... and not far above what is needed
    assert all(bound[s] <= 2.0 * np.quantile(np.abs(e), 1 - beta / 10)
               for s, e in simulation[method].items())


def test_bounds_compare_the_methods_as_their_variances_do():
    sizes = [9, 9, 16, 7, 15, 6, 5, 2]
    ind = marginal_error_bound(sizes, epsilon=1.0, method="independent")
    con = marginal_error_bound(sizes, epsilon=1.0)
    total = sum(math.prod(sizes[a] for a in s) for s in ind)
    assert set(ind.values()) == {float(dp.max_error_bound(total, epsilon=1.0,
                                                          sensitivity=28))}
    assert all(con[s] < ind[s] for s in ind)


def test_tail_bound_of_one_noise_is_its_exact_tail():
    for scale in (0.5, 3.0, 40.0):
        q = math.exp(-1 / scale)
        tail = A.tail_bound(np.array([1.0]), np.array([1.0]), scale, math.log(1e-6))
        for u in (1, 2, 5, 17):
            exact = q ** u / (1 + q)                 # P[K >= u]
            assert exact <= tail(u) <= exact + 1e-6 * math.exp(-8)


def test_release_accuracy_methods():
    rel = marginals(COUNTS, epsilon=1.0, accountant=dp.Accountant(), rng=0)
    assert rel.variance() == marginal_variance(list(COUNTS.shape), epsilon=1.0)
    assert rel.variance("independent") == marginal_variance(list(COUNTS.shape), epsilon=1.0,
                                                            method="independent")
    assert rel.error_bound(0.1) == marginal_error_bound(list(COUNTS.shape), epsilon=1.0,
                                                        beta=0.1)
    keyed = marginal_variance(KEYS, epsilon=1.0)
    assert list(keyed) == list(marginals(FRAME, epsilon=1.0, keys=KEYS, rng=0,
                                         accountant=dp.Accountant()))
    with pytest.raises(ValueError, match="'beta'"):
        rel.error_bound(1.5)
    with pytest.raises(ValueError, match="'method'"):
        rel.variance("gls")


# -- the bundled Adult data -------------------------------------------------------------

ADULT_KEYS = {
    "age": [10, 20, 30, 40, 50, 60, 70, 80, 90],
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                  "State-gov", "Without-pay", "Never-worked", "?"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                  "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
                  "Doctorate", "5th-6th", "Preschool"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated",
                       "Widowed", "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv",
                   "Protective-serv", "Armed-Forces", "?"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                     "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
}


def test_adult_two_way_marginals():
    from dpfast.datasets import load_adult
    frame = load_adult(as_frame=True)[list(ADULT_KEYS)]
    frame = frame.assign(age=frame["age"] // 10 * 10)
    exact = marginals(frame, epsilon=HUGE, keys=ADULT_KEYS, method="independent",
                      accountant=dp.Accountant(), rng=0)
    assert len(exact) == 28 and all(t.to_numpy().sum() == len(frame) for t in exact.values())
    kw = {"epsilon": 1.0, "keys": ADULT_KEYS, "rng": 1}
    ind = marginals(frame, method="independent", accountant=dp.Accountant(), **kw)
    con = marginals(frame, accountant=dp.Accountant(), **kw)
    sse = [sum(((r[s].to_numpy() - exact[s].to_numpy()) ** 2.0).sum() for s in exact)
           for r in (ind, con)]
    assert sse[1] <= sse[0]
    assert con[("race", "sex")].shape == (5, 2)


@pytest.mark.parametrize("module", [M, A], ids=["contingency", "marginal_accuracy"])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_integer_columns_with_integer_keys_take_a_lookup_table():
    # Small integer categories are read through a lookup table; the release is the one the
    # hashing path makes on the same records given as strings, and values outside the keys
    # are refused the same way.
    rng = np.random.default_rng(5)
    a, b = rng.integers(3, 9, 10_000), rng.integers(0, 4, 10_000)
    ints = dp.crosstab({"a": a, "b": b}, ["a", "b"], epsilon=1.0,
                       keys={"a": list(range(3, 10)), "b": [3, 2, 1, 0]}, rng=7,
                       accountant=dp.Accountant())[0]
    strs = dp.crosstab({"a": a.astype(str), "b": b.astype(str)}, ["a", "b"], epsilon=1.0,
                       keys={"a": [str(v) for v in range(3, 10)], "b": ["3", "2", "1", "0"]},
                       rng=7, accountant=dp.Accountant())[0]
    assert np.array_equal(ints, strs)
    acct = dp.Accountant()
    with pytest.raises(ValueError, match="outside 'keys'"):
        dp.crosstab({"a": np.append(a, 12)}, ["a"], epsilon=1.0, keys={"a": list(range(3, 10))},
                    accountant=acct)
    with pytest.raises(ValueError, match="outside 'keys'"):
        dp.crosstab({"a": np.append(a, -5)}, ["a"], epsilon=1.0, keys={"a": list(range(3, 10))},
                    accountant=acct)
    assert acct.spent == (0.0, 0.0)


@pytest.mark.parametrize("kind", ["arrow", "polars", "parquet"])
def test_arrow_polars_and_parquet_records_give_the_same_release(kind, tmp_path):
    """crosstab and marginals read a pyarrow Table, a polars DataFrame or a Parquet file
    through dpfast.tables, as a mapping of its columns: the same release for a seed as the
    mapping of the same columns; a null is refused before anything is charged."""
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(4)
    cols = {"sex": rng.choice(["F", "M"], 300), "edu": rng.choice(["HS", "BA", "MA"], 300)}
    keys = {"sex": ["F", "M"], "edu": ["HS", "BA", "MA"]}
    table = pa.table(cols)
    if kind == "polars":
        data = pytest.importorskip("polars").from_arrow(table)
    elif kind == "parquet":
        import pyarrow.parquet as pq
        data = str(tmp_path / "people.parquet")
        pq.write_table(table, data)
    else:
        data = table
    want, _ = dp.crosstab(cols, ["sex", "edu"], epsilon=1.0, keys=keys,
                          accountant=dp.Accountant(), rng=8)
    got, cats = dp.crosstab(data, ["sex", "edu"], epsilon=1.0, keys=keys,
                            accountant=dp.Accountant(), rng=8)
    assert np.array_equal(got, want) and cats == (keys["sex"], keys["edu"])
    ref = dp.marginals(cols, keys=keys, k=2, epsilon=1.0, accountant=dp.Accountant(), rng=9)
    rel = dp.marginals(data, keys=keys, k=2, epsilon=1.0, accountant=dp.Accountant(), rng=9)
    assert all(np.array_equal(rel[t], ref[t]) for t in ref)
    acct = dp.Accountant(epsilon=1.0)
    with pytest.raises(ValueError, match="nulls"):
        dp.crosstab(pa.table({"sex": ["F", None], "edu": ["HS", "BA"]}), ["sex", "edu"],
                    epsilon=1.0, keys=keys, accountant=acct)
    assert acct.spent == (0.0, 0.0)


def test_a_parquet_file_is_read_once_per_column_and_a_rewrite_is_refused(tmp_path,
                                                                          monkeypatch):
    """crosstab reads each column of a Parquet file once; a file rewritten while a release
    reads it is refused, before anything is charged."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from dpfast.tables import columns as C
    keys = {"sex": ["F", "M"], "edu": ["HS", "BA"]}
    path = str(tmp_path / "people.parquet")
    pq.write_table(pa.table({"sex": ["F", "M", "F"], "edu": ["HS", "BA", "BA"]}), path)
    reads = []
    real = C.ParquetColumns.column

    def counted(self, name, param, func):
        reads.append(name)
        return real(self, name, param, func)
    monkeypatch.setattr(C.ParquetColumns, "column", counted)
    dp.crosstab(path, ["sex", "edu"], epsilon=1.0, keys=keys, accountant=dp.Accountant(),
                rng=1)
    assert sorted(reads) == ["edu", "sex"]

    def rewritten(self, name, param, func):
        if name == "edu":                       # another writer replaces the file meanwhile
            pq.write_table(pa.table({"sex": ["M"] * 5, "edu": ["HS"] * 5}), path)
        return real(self, name, param, func)
    monkeypatch.setattr(C.ParquetColumns, "column", rewritten)
    acct = dp.Accountant(epsilon=1.0)
    with pytest.raises(RuntimeError, match="changed after it was opened"):
        dp.crosstab(path, ["sex", "edu"], epsilon=1.0, keys=keys, accountant=acct)
    assert acct.spent == (0.0, 0.0)


def test_data_given_as_keys_or_column_names_is_refused_without_showing_it():
    """A polars or Arrow column given as a column's categories is the data (as a pandas
    Series is); a column of data given as the column names is refused by kind, and no
    message shows a value; nothing is charged."""
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    secret = "alice_secret"
    frame = pd.DataFrame({"name": [secret, "bob", secret], "sex": ["F", "M", "F"]})
    for keys in (pl.from_pandas(frame)["name"], pa.chunked_array([[secret, "bob"]]),
                 pa.array([secret, "bob"])):
        acct = dp.Accountant()
        with pytest.raises(ValueError, match="not the data") as info:
            dp.crosstab(pl.from_pandas(frame), ["name"], epsilon=1.0, keys={"name": keys},
                        accountant=acct)
        assert secret not in str(info.value) and acct.spent == (0.0, 0.0)
    for columns in (frame["name"], pl.from_pandas(frame)["name"], frame["name"].unique()):
        with pytest.raises(TypeError, match="not a column of data") as info:
            dp.crosstab(frame, columns, epsilon=1.0, keys={"sex": ["F", "M"]},
                        accountant=dp.Accountant())
        assert secret not in str(info.value)
    with pytest.raises(ValueError, match="position 1") as info:
        dp.marginals(frame, keys={"sex": ["F", "M"], "name": [secret, "bob"]},
                     workload=[("sex",), (secret, secret)], epsilon=1.0,
                     accountant=dp.Accountant())
    assert secret not in str(info.value).split("among")[0]


def test_an_arrow_record_batch_is_a_table_and_a_lazy_frame_is_refused():
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    cols = {"sex": np.array(["F", "M", "F", "F"])}
    keys = {"sex": ["F", "M"]}
    want, _ = dp.crosstab(cols, ["sex"], epsilon=1.0, keys=keys, accountant=dp.Accountant(),
                          rng=3)
    got, _ = dp.crosstab(pa.RecordBatch.from_pydict(cols), ["sex"], epsilon=1.0, keys=keys,
                         accountant=dp.Accountant(), rng=3)
    assert np.array_equal(got, want)
    acct = dp.Accountant()
    with pytest.raises(TypeError, match="LazyFrame"):
        dp.crosstab(pl.DataFrame(cols).lazy(), ["sex"], epsilon=1.0, keys=keys, accountant=acct)
    assert acct.spent == (0.0, 0.0)


def test_a_parquet_file_rewritten_in_place_with_its_mtime_restored_is_refused(tmp_path,
                                                                             monkeypatch):
    """The file's owner rewrites it between two column reads, same size, and sets its
    modification time back: its change time still tells."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from dpfast.tables import columns as C
    path = str(tmp_path / "people.parquet")
    pq.write_table(pa.table({"sex": ["F", "M"], "edu": ["HS", "BA"]}), path)
    original = open(path, "rb").read()
    stat = os.stat(path)
    real = C.ParquetColumns.column

    def rewritten(self, name, param, func):
        if name == "edu":
            with open(path, "r+b") as f:        # the same bytes, in place: size unchanged
                f.write(original)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return real(self, name, param, func)
    monkeypatch.setattr(C.ParquetColumns, "column", rewritten)
    acct = dp.Accountant(epsilon=1.0)
    with pytest.raises(RuntimeError, match="changed after it was opened"):
        dp.crosstab(path, ["sex", "edu"], epsilon=1.0,
                    keys={"sex": ["F", "M"], "edu": ["HS", "BA"]}, accountant=acct)
    assert acct.spent == (0.0, 0.0)
