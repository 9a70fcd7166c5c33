"""MWEM (dpfast.linear.multiplicative_weights): reproducible from a seed, one charge, nothing spent or drawn on
bad input, accurate (better than the uniform histogram, within the paper's bound), and the
same whatever the thread count; with measure="queries" (the paper's algorithm) and measure="tables"
(Marginals' default). Deterministic seeds throughout; no timing assertions."""
import doctest
import itertools
import math

import numpy as np
import pytest

import dpfast as dp
from dpfast.linear import multiplicative_weights as mwem_module
from dpfast.linear import mwem_rounds
from dpfast.linear import workloads
from dpfast.linear.multiplicative_weights import MWEMRelease, mwem, mwem_error_bound
from dpfast.linear.workloads import (Conjunctions, Explicit, Identity, Marginals, Prefixes,
                                     Ranges, Workload)
from refusals import rng_state, spends_nothing

NAN, INF = float("nan"), float("inf")


def bumpy(n, seed=0, total=100_000):
    """A 1-D histogram with a few bumps (something the uniform histogram answers badly)."""
    i = np.arange(n)
    shape = (np.exp(-((i - 0.2 * n) / (0.05 * n)) ** 2)
             + 0.5 * np.exp(-((i - 0.7 * n) / (0.1 * n)) ** 2))
    return np.random.default_rng(seed).multinomial(total, shape / shape.sum())


def correlated(domain, seed=0, total=200_000):
    """A multi-dimensional histogram with dependent attributes."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(math.prod(domain), 0.3))
    return rng.multinomial(total, p).reshape(domain)


def max_error(rel, workload, counts):
    return float(np.abs(rel.answers - workload.answer(counts)).max())


def uniform_error(workload, counts):
    u = np.full(workload.n_cells, counts.sum() / workload.n_cells)
    return float(np.abs(workload.answer(u) - workload.answer(counts)).max())


def used_accountant():
    acct = dp.Accountant(epsilon=100.0)
    acct.spend(0.25, label="earlier release")       # so "unchanged" is not "still zero"
    return acct


# -- the release ----------------------------------------------------------------------

def table_sizes(workload, selected):
    return [math.prod(workload.shapes[j]) for j in selected]


@pytest.mark.parametrize("measure", ["queries", "tables"])
def test_release_fields(measure):
    counts = correlated((4, 3, 5))
    wl = Marginals((4, 3, 5), k=2)
    rel = mwem(counts, wl, epsilon=1.0, rounds=7, measure=measure,
               accountant=dp.Accountant(), rng=1)
    assert isinstance(rel, MWEMRelease) and rel.measure == measure
    assert rel.synthetic.shape == (4, 3, 5) and rel.synthetic.dtype == np.float64
    assert np.all(rel.synthetic >= 0)
    assert rel.synthetic.sum() == pytest.approx(rel.total, rel=1e-12)
    assert np.array_equal(rel.answers, wl.answer(rel.synthetic))
    assert rel.selected.shape == (7,) and rel.selected.dtype == np.int64
    n_selectable = wl.n_queries if measure == "queries" else len(wl.attributes)
    assert np.all((0 <= rel.selected) & (rel.selected < n_selectable))
    n_values = 7 if measure == "queries" else sum(table_sizes(wl, rel.selected))
    assert rel.measurements.shape == (n_values,) and rel.measurements.dtype == np.float64
    assert (rel.epsilon, rel.rounds) == (1.0, 7)
    assert rel.total_epsilon == pytest.approx(0.05)
    # The measured total is close to the true one (Laplace of scale 20).
    assert abs(rel.total - counts.sum()) < 400


def test_public_total_is_used_and_costs_nothing_extra():
    counts = bumpy(32)
    rel = mwem(counts, Ranges(32), epsilon=1.0, rounds=5, total=12345.0,
               accountant=dp.Accountant(), rng=2)
    assert rel.total == 12345.0 and rel.total_epsilon == 0.0
    assert rel.synthetic.sum() == pytest.approx(12345.0, rel=1e-12)


def test_same_seed_same_release_and_other_seeds_differ():
    counts, wl = correlated((5, 4, 3)), Marginals((5, 4, 3), k=2)
    runs = [mwem(counts, wl, epsilon=0.5, rounds=8, accountant=dp.Accountant(), rng=seed)
            for seed in (11, 11, 12)]
    assert np.array_equal(runs[0].synthetic, runs[1].synthetic)
    assert np.array_equal(runs[0].selected, runs[1].selected)
    assert np.array_equal(runs[0].measurements, runs[1].measurements)
    assert not np.array_equal(runs[0].synthetic, runs[2].synthetic)
    assert not np.array_equal(runs[0].measurements, runs[2].measurements)


def test_known_answer_on_a_fixed_seed():
    # Ranges over a 3-bump histogram at a large epsilon, pinned so that any change to the
    # draws or the updates shows up here. The first pick, [3, 6), is the range the uniform
    # start answers worst (375 against 50).
    counts = np.array([0, 50, 400, 50, 0, 0, 300, 200])
    wl = Ranges(8)
    rel = mwem(counts, wl, epsilon=200.0, rounds=4, total=1000, accountant=dp.Accountant(),
               rng=2024)
    lo, hi = wl.bounds()
    assert [(int(lo[i]), int(hi[i])) for i in rel.selected] == [(3, 6), (0, 2), (2, 4), (6, 7)]
    np.testing.assert_allclose(rel.measurements, [49.985949121415615, 49.98697064816952,
                                                  450.03768487274647, 299.9811137467623],
                               rtol=1e-12)
    # Each measurement is within a few noise scales (2 T / eps = 0.04) of the truth.
    assert np.all(np.abs(rel.measurements - wl.answer(counts)[rel.selected]) < 0.5)
    again = mwem(counts, wl, epsilon=200.0, rounds=4, total=1000, accountant=dp.Accountant(),
                 rng=dp.ChaCha20(2024))
    assert np.array_equal(rel.synthetic, again.synthetic)


def test_flat_and_shaped_counts_give_the_same_release():
    counts, wl = correlated((3, 4, 2)), Marginals((3, 4, 2), k=2)
    a = mwem(counts, wl, epsilon=1.0, rounds=6, accountant=dp.Accountant(), rng=5)
    b = mwem(counts.ravel(), wl, epsilon=1.0, rounds=6, accountant=dp.Accountant(), rng=5)
    c = mwem(counts.astype(np.float64), wl, epsilon=1.0, rounds=6,
             accountant=dp.Accountant(), rng=5)
    assert np.array_equal(a.synthetic, b.synthetic)
    assert np.array_equal(a.synthetic, c.synthetic)


def test_non_native_byte_order_gives_the_native_release():
    counts, wl = correlated((3, 4, 2)), Marginals((3, 4, 2), k=2)
    a = mwem(counts, wl, epsilon=1.0, rounds=4, accountant=dp.Accountant(), rng=9)
    b = mwem(counts.astype(">i8"), wl, epsilon=1.0, rounds=4, accountant=dp.Accountant(),
             rng=9)
    assert np.array_equal(a.synthetic, b.synthetic)


def test_average_and_last():
    counts, wl = bumpy(64), Ranges(64)
    avg = mwem(counts, wl, epsilon=2.0, rounds=15, total=100_000,
               accountant=dp.Accountant(), rng=8)
    last = mwem(counts, wl, epsilon=2.0, rounds=15, total=100_000, average=False,
                accountant=dp.Accountant(), rng=8)
    # Same draws (selections depend only on the per-round histograms, not the average).
    assert np.array_equal(avg.selected, last.selected)
    assert not np.array_equal(avg.synthetic, last.synthetic)
    for rel in (avg, last):
        assert rel.synthetic.sum() == pytest.approx(100_000, rel=1e-12)


def test_tiny_domain_huge_epsilon_recovers_the_truth():
    counts = np.array([100, 200, 300, 400])
    for wl in (Identity(4), Ranges(4), Prefixes(4)):
        rel = mwem(counts, wl, epsilon=1e4, rounds=40, average=False,
                   accountant=dp.Accountant(), rng=3)
        assert abs(rel.total - 1000) < 0.1
        np.testing.assert_allclose(rel.synthetic, counts, atol=5.0)
        assert max_error(rel, wl, counts) < 10.0


def replay(workload, rel, average=True):
    """MWEM's updates done the textbook way, on the release's own selections and
    measurements: dense rows, each update renormalised at once, every measured query (at the
    mean of its measurements, clamped to [0, n]) updated MWEM_PASSES times per round."""
    n = rel.total
    xhat = np.full(workload.n_cells, n / workload.n_cells)
    measured, rounds = {}, []
    for i, m in zip(rel.selected.tolist(), rel.measurements.tolist(), strict=True):
        measured.setdefault(i, []).append(min(max(m, 0.0), n))
        for _ in range(mwem_module.MWEM_PASSES):
            for j, ms in measured.items():
                q = workload.query(j)
                xhat = xhat * np.exp(q * (np.mean(ms) - q @ xhat) / (2 * n))
                xhat *= n / xhat.sum()
        rounds.append(xhat)
    return np.mean(rounds, axis=0) if average else xhat


@pytest.mark.parametrize("workload, counts, average", [
    (Ranges(40), bumpy(40, 1), True),
    (Marginals((4, 3, 5), k=2), correlated((4, 3, 5), 2), False),
    (Conjunctions(4, negations=True), correlated((2,) * 4, 3), True),
    (Explicit(np.random.default_rng(5).random((12, 30)) ** 2), bumpy(30, 4), True)],
    ids=["ranges", "marginals", "conjunctions", "explicit"])
def test_updates_match_the_textbook_updates(workload, counts, average):
    # At this small epsilon the marginals and explicit cases select a query twice.
    rel = mwem(counts, workload, epsilon=0.3, rounds=12, average=average, measure="queries",
               accountant=dp.Accountant(), rng=6)
    if workload.n_queries < 50:
        assert len(set(rel.selected.tolist())) < rel.rounds
    np.testing.assert_allclose(rel.synthetic.ravel(), replay(workload, rel, average),
                               rtol=1e-9, atol=1e-9 * rel.total)


# -- accuracy -------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_beats_uniform_and_stays_within_the_bound_on_ranges(seed):
    counts, wl = bumpy(64, seed), Ranges(64)
    rel = mwem(counts, wl, epsilon=1.0, rounds=30, total=int(counts.sum()),
               accountant=dp.Accountant(), rng=seed)
    error = max_error(rel, wl, counts)
    assert error < 0.25 * uniform_error(wl, counts)
    assert error < 0.05 * counts.sum()
    assert error < rel.error_bound()


@pytest.mark.parametrize("seed", range(4))
def test_beats_uniform_and_stays_within_the_bound_on_marginals(seed):
    domain = (6, 5, 4, 3)
    counts, wl = correlated(domain, seed), Marginals(domain, k=2)
    rel = mwem(counts, wl, epsilon=1.0, rounds=30, total=int(counts.sum()),
               measure="queries", accountant=dp.Accountant(), rng=seed)
    error = max_error(rel, wl, counts)
    assert error < 0.5 * uniform_error(wl, counts)
    assert error < 0.05 * counts.sum()
    assert error < rel.error_bound()
    assert rel.error_bound() == mwem_error_bound(counts.sum(), counts.size, wl.n_queries,
                                                 epsilon=1.0, rounds=30)


def test_measured_total_still_beats_uniform():
    counts, wl = bumpy(128, 7), Ranges(128)
    rel = mwem(counts, wl, epsilon=1.0, rounds=25, accountant=dp.Accountant(), rng=7)
    assert max_error(rel, wl, counts) < 0.25 * uniform_error(wl, counts)


def test_other_workloads():
    # Conjunctions (every subset of 6 boolean attributes) and an explicit 0/1 matrix.
    counts = correlated((2,) * 6, 1)
    wl = Conjunctions(6)
    rel = mwem(counts, wl, epsilon=1.0, rounds=20, accountant=dp.Accountant(), rng=4)
    assert max_error(rel, wl, counts) < 0.5 * uniform_error(wl, counts)
    matrix = (np.random.default_rng(2).random((40, 50)) < 0.3).astype(float)
    matrix[:, :5] *= 0.5                           # entries in [0, 1], not only 0/1
    wl = Explicit(matrix)
    counts = bumpy(50, 2)
    rel = mwem(counts, wl, epsilon=1.0, rounds=20, total=int(counts.sum()),
               accountant=dp.Accountant(), rng=4)
    assert max_error(rel, wl, counts) < 0.5 * uniform_error(wl, counts)


def test_error_bound_formula():
    got = mwem_error_bound(10_000, 1024, 500, epsilon=1.0, rounds=30)
    want = 2 * 10_000 * math.sqrt(math.log(1024) / 30) + 10 * 30 * math.log(500) / 1.0
    assert got == pytest.approx(want, rel=1e-15)
    assert mwem_error_bound(0, 1, 1, epsilon=1.0, rounds=1) == 0.0
    for kwargs, exc in [({"n": -1.0}, ValueError), ({"n_cells": 0}, ValueError),
                        ({"n_queries": 1.5}, TypeError), ({"epsilon": 0.0}, ValueError),
                        ({"rounds": True}, TypeError), ({"n": NAN}, ValueError)]:
        args = {"n": 100.0, "n_cells": 10, "n_queries": 10, "epsilon": 1.0, "rounds": 5,
                **kwargs}
        with pytest.raises(exc, match=next(iter(kwargs))):
            mwem_error_bound(args["n"], args["n_cells"], args["n_queries"],
                             epsilon=args["epsilon"], rounds=args["rounds"])


# -- measure="tables" ------------------------------------------------------------------

def table_error(rel, workload, counts):
    """The mean over the tables of the l1 error, over the number of records."""
    l1 = np.abs(rel.answers - workload.answer(counts)).sum()
    return float(l1) / float(counts.sum()) / len(workload.attributes)


def test_measure_defaults_to_tables_for_marginals_and_queries_otherwise():
    counts, wl = correlated((4, 3, 5)), Marginals((4, 3, 5), k=2)
    default = mwem(counts, wl, epsilon=1.0, rounds=5, accountant=dp.Accountant(), rng=4)
    tables = mwem(counts, wl, epsilon=1.0, rounds=5, measure="tables", average=False,
                  accountant=dp.Accountant(), rng=4)
    assert default.measure == "tables"
    assert np.array_equal(default.synthetic, tables.synthetic)
    assert np.array_equal(default.measurements, tables.measurements)
    rel = mwem(bumpy(16), Ranges(16), epsilon=1.0, rounds=3, accountant=dp.Accountant(), rng=4)
    assert rel.measure == "queries" and rel.measurements.shape == (3,)
    averaged = mwem(bumpy(16), Ranges(16), epsilon=1.0, rounds=3, average=True,
                    accountant=dp.Accountant(), rng=4)
    assert np.array_equal(rel.synthetic, averaged.synthetic)


@pytest.mark.parametrize("workload", [Ranges(16), Identity(16), Prefixes(16), Explicit(np.eye(16)),
                                      Conjunctions(4, negations=True)],
                         ids=["ranges", "identity", "prefixes", "explicit", "conjunctions"])
def test_tables_are_refused_for_other_workloads(workload):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(ValueError, match="'measure'"):
        mwem(bumpy(16), workload, epsilon=1.0, rounds=3, measure="tables", accountant=acct,
             rng=rng)


def replay_tables(workload, rel, average=False):
    """The table-mode fits done with dense rows, on the release's own selections and
    measurements: each round, the selected table's target (the mean of its measurements,
    each cell at least FIT_FLOOR, scaled to the total n) divided by x_hat's answers to the
    table's rows, spread back over the cells through the rows (each cell is in exactly one
    row of a table)."""
    n = rel.total
    xhat = np.full(workload.n_cells, n / workload.n_cells)
    rows = {j: np.array([workload.query(c) for c in
                         range(workload.offsets[j], workload.offsets[j + 1])])
            for j in set(rel.selected.tolist())}
    parts = np.split(rel.measurements, np.cumsum(table_sizes(workload, rel.selected))[:-1])
    measured, rounds = {}, []
    for j, m in zip(rel.selected.tolist(), parts, strict=True):
        measured.setdefault(j, []).append(m)
        q = rows[j]
        assert np.array_equal(q.sum(axis=0), np.ones(workload.n_cells))
        target = np.maximum(np.mean(measured[j], axis=0), mwem_module.FIT_FLOOR)
        target *= n / target.sum()
        xhat = xhat * (q.T @ (target / (q @ xhat)))
        np.testing.assert_allclose(q @ xhat, target, rtol=1e-9)     # the table is fitted
        rounds.append(xhat)
    return np.mean(rounds, axis=0) if average else xhat


@pytest.mark.parametrize("workload, average, total", [
    (Marginals((4, 3, 5), k=2), True, None),
    (Marginals((3, 4, 2, 3), attributes=[(0, 1), (1, 2, 3), (3,), (0, 2)]), False, 5000.0),
    (Marginals((5, 4, 3), k=3), True, 20_000.0),
    (Marginals((3, 4, 5, 2, 16, 3), attributes=[(0, 4), (1, 2), (3, 5), (4, 5), (2,),
                                                (0, 1, 3)]), False, None)],
    ids=["pairs", "mixed-sets", "whole-domain", "blocks"])
def test_table_updates_match_the_textbook_updates(workload, average, total):
    # "blocks": more cells than workloads.BLOCK, so the updates work on leading axes and
    # a trailing block of axes.
    counts = correlated(workload.domain, 8, total=20_000)
    rel = mwem(counts, workload, measure="tables", epsilon=0.3, rounds=12, total=total, average=average,
               accountant=dp.Accountant(), rng=6)
    assert rel.measure == "tables"
    assert len(set(rel.selected.tolist())) < rel.rounds          # some table measured twice
    np.testing.assert_allclose(rel.synthetic.ravel(), replay_tables(workload, rel, average),
                               rtol=1e-9, atol=1e-9 * rel.total)
    if not average:
        # The last table measured is fitted exactly.
        j = int(rel.selected[-1])
        parts = np.split(rel.measurements, np.cumsum(table_sizes(workload, rel.selected))[:-1])
        mean = np.mean([p for p, k in zip(parts, rel.selected) if k == j], axis=0)
        target = np.maximum(mean, mwem_module.FIT_FLOOR)
        np.testing.assert_allclose(workload.tables(rel.synthetic)[j].ravel(),
                                   target * rel.total / target.sum(), rtol=1e-9)


def test_dense_helpers_match_numpy():
    # The table updates sum and multiply over the leading axes and a trailing block of at
    # least workloads.BLOCK cells; every attribute set of up to 3 attributes (and all 7)
    # of a domain whose block starts at axis 4.
    domain = (3, 4, 5, 2, 16, 8, 9)
    assert workloads.trailing_block(domain) == 4
    rng = np.random.default_rng(0)
    x = rng.random(domain)
    sets = [s for k in (1, 2, 3) for s in itertools.combinations(range(7), k)]
    for keep in sets + [tuple(range(7))]:
        other = tuple(a for a in range(7) if a not in keep)
        np.testing.assert_allclose(workloads.marginal(x, keep), x.sum(axis=other),
                                   rtol=1e-12)
        factor = rng.random([domain[a] for a in keep])
        y = x.copy()
        mwem_rounds.multiply(y, keep, factor)
        index = tuple(slice(None) if a in keep else np.newaxis for a in range(7))
        assert np.array_equal(y, x * factor[index])
    # Many tables at once, through shared intermediates (small and large ones).
    sets.append(tuple(range(7)))
    for limit in (1, 100, workloads.SHARED_CELLS, 10**9):
        tables = workloads.marginal_sums(x, sets, shared_cells=limit)
        assert len(tables) == len(sets)
        for keep, table in zip(sets, tables, strict=True):
            other = tuple(a for a in range(7) if a not in keep)
            np.testing.assert_allclose(table, x.sum(axis=other), rtol=1e-12)
            assert not np.shares_memory(table, x)


def test_table_measurements_are_the_tables_with_noise():
    counts, wl = correlated((4, 3, 5), 3), Marginals((4, 3, 5), k=2)
    rel = mwem(counts, wl, measure="tables", epsilon=100.0, rounds=6, total=200_000, accountant=dp.Accountant(),
               rng=3)
    parts = np.split(rel.measurements, np.cumsum(table_sizes(wl, rel.selected))[:-1])
    truth = wl.tables(counts)
    # Laplace of scale 2 T / eps = 0.12 on every cell.
    for j, m in zip(rel.selected.tolist(), parts, strict=True):
        assert np.all(np.abs(m - truth[j].ravel()) < 3.0)


def test_tables_beat_queries_and_uniform_on_marginals():
    domain = (6, 5, 4, 3)
    wl = Marginals(domain, k=2)
    for seed in range(3):
        counts = correlated(domain, seed)
        errors = {measure: table_error(mwem(counts, wl, epsilon=1.0, rounds=10,
                                            measure=measure, accountant=dp.Accountant(),
                                            rng=seed), wl, counts)
                  for measure in ("queries", "tables")}
        uniform = np.full(wl.n_cells, counts.sum() / wl.n_cells)
        uniform_error = float(np.abs(wl.answer(uniform) - wl.answer(counts)).sum()) \
            / counts.sum() / len(wl.attributes)
        assert errors["tables"] < 0.75 * errors["queries"]
        assert errors["tables"] < 0.6 * uniform_error


def test_tables_approach_the_marginals_at_a_large_epsilon():
    domain = (3, 4, 2)
    counts, wl = correlated(domain, 1, total=10_000), Marginals(domain, k=2)
    errors = [table_error(mwem(counts, wl, measure="tables", epsilon=1e4, rounds=rounds, total=10_000,
                               average=False, accountant=dp.Accountant(), rng=3), wl, counts)
              for rounds in (15, 60)]
    assert errors[1] < 0.005 and errors[1] < errors[0] / 5


def test_error_bound_is_for_queries_only():
    counts, wl = correlated((4, 3, 5)), Marginals((4, 3, 5), k=2)
    rel = mwem(counts, wl, measure="tables", epsilon=1.0, rounds=3, accountant=dp.Accountant(), rng=1)
    with pytest.raises(ValueError, match="measure='queries'"):
        rel.error_bound()


# -- budget and refusals -----------------------------------------------------------------

@pytest.mark.parametrize("counts, workload, measure", [
    (bumpy(16), Ranges(16), "queries"),
    (correlated((4, 3, 5)), Marginals((4, 3, 5), k=2), "queries"),
    (correlated((4, 3, 5)), Marginals((4, 3, 5), k=2), "tables")])
def test_one_charge_of_exactly_epsilon(counts, workload, measure):
    for total in (None, 1000):
        acct = dp.Accountant(epsilon=0.7)
        rel = mwem(counts, workload, epsilon=0.7, rounds=12, total=total, measure=measure,
                   accountant=acct, rng=1)
        assert rel.measure == measure
        assert acct.spent == (0.7, 0.0) and len(acct) == 1
        assert acct.ledger[0] == (0.7, 0.0, "mwem")


def test_default_accountant_is_charged():
    before = dp.default_accountant().spent[0]
    mwem(bumpy(8), Prefixes(8), epsilon=0.125, rounds=2, rng=1)
    assert dp.default_accountant().spent[0] == pytest.approx(before + 0.125)


def test_refused_budget_draws_nothing():
    acct, rng = dp.Accountant(epsilon=0.5), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        mwem(bumpy(8), Prefixes(8), epsilon=1.0, rounds=3, accountant=acct, rng=rng)
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        mwem(COUNTS, Marginals((2, 3), k=1), epsilon=1.0, rounds=3, measure="tables",
             accountant=acct, rng=rng)


class _Custom(Workload):
    """A workload dpfast cannot vouch for (its rows could exceed 1)."""
    domain, n_queries = (4,), 1

    def _answer(self, x):
        return np.array([10.0 * x.sum()])

    def _adjoint(self, y):
        return np.full(4, 10.0 * y[0])


COUNTS = np.array([[3, 0, 7], [1, 2, 5]])
GOOD = {"counts": COUNTS, "workload": Marginals((2, 3), k=1), "epsilon": 1.0, "rounds": 3}
masked = np.ma.masked_array(COUNTS, mask=COUNTS > 4)
BAD = [
    ({"epsilon": 0.0}, ValueError, "epsilon"), ({"epsilon": -1.0}, ValueError, "epsilon"),
    ({"epsilon": NAN}, ValueError, "epsilon"), ({"epsilon": INF}, ValueError, "epsilon"),
    ({"epsilon": "1"}, TypeError, "epsilon"), ({"epsilon": 5e-324}, ValueError, "epsilon"),
    ({"rounds": 0}, ValueError, "rounds"), ({"rounds": -2}, ValueError, "rounds"),
    ({"rounds": 1.5}, TypeError, "rounds"), ({"rounds": True}, TypeError, "rounds"),
    ({"rounds": "3"}, TypeError, "rounds"),
    ({"counts": [[3, 0, NAN], [1, 2, 5]]}, ValueError, "counts"),
    ({"counts": [[3, 0, INF], [1, 2, 5]]}, ValueError, "counts"),
    ({"counts": [[3, 0, -1], [1, 2, 5]]}, ValueError, "counts"),
    ({"counts": [["a", "b", "c"], ["d", "e", "f"]]}, TypeError, "counts"),
    ({"counts": COUNTS > 2}, TypeError, "counts"),
    ({"counts": COUNTS + 1j}, TypeError, "counts"),
    ({"counts": masked}, TypeError, "counts"),
    ({"counts": [[3, 0], [1, 2, 5]]}, ValueError, "counts"),
    ({"counts": [[1e300, 0, 7], [1, 2, 5]]}, ValueError, "counts"),
    ({"counts": COUNTS.T}, ValueError, "workload"),
    ({"counts": COUNTS.ravel()[:5]}, ValueError, "workload"),
    ({"workload": Ranges(5)}, ValueError, "workload"),
    ({"workload": np.eye(6)}, TypeError, "workload"),
    ({"workload": _Custom()}, TypeError, "workload"),
    ({"workload": Explicit(np.zeros((0, 6)))}, ValueError, "workload"),
    ({"total": 0}, ValueError, "total"), ({"total": -5.0}, ValueError, "total"),
    ({"total": NAN}, ValueError, "total"), ({"total": INF}, ValueError, "total"),
    ({"total": "18"}, TypeError, "total"),
    ({"average": "yes"}, TypeError, "average"), ({"average": 1}, TypeError, "average"),
    ({"rng": "seed"}, TypeError, "rng"), ({"rng": np.random.default_rng(1)}, TypeError, "rng"),
    ({"threads": 0}, ValueError, "threads"), ({"threads": 1.5}, TypeError, "threads"),
    ({"accountant": "acct"}, TypeError, "accountant"),
    ({"measure": "rows"}, ValueError, "measure"), ({"measure": "Tables"}, ValueError, "measure"),
    ({"measure": ""}, ValueError, "measure"), ({"measure": 1}, TypeError, "measure"),
    ({"measure": ("tables",)}, TypeError, "measure"),
    ({"measure": "tables", "workload": Identity((2, 3))}, ValueError, "measure"),
    ({"measure": "tables", "workload": Ranges(6), "counts": COUNTS.ravel()}, ValueError,
     "measure"),
    ({"measure": "queries", "epsilon": 0.0}, ValueError, "epsilon"),
    ({"measure": "tables", "counts": [[3, 0, -1], [1, 2, 5]]}, ValueError, "counts"),
]


@pytest.mark.parametrize("overrides, exc, name", BAD,
                         ids=[f"{n}-{i}" for i, (_, _, n) in enumerate(BAD)])
def test_bad_input_spends_nothing_and_draws_nothing(overrides, exc, name):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    kwargs = {**GOOD, "accountant": acct, "rng": rng, **overrides}
    counts, workload = kwargs.pop("counts"), kwargs.pop("workload")
    with spends_nothing(acct, rng), pytest.raises(exc) as info:
        mwem(counts, workload, **kwargs)
    assert not isinstance(info.value, dp.BudgetExceededError)
    assert f"'{name}'" in str(info.value)


def test_good_input_spends_and_draws():
    acct, rng = used_accountant(), dp.ChaCha20(7)
    spent, state = acct.spent, rng_state(rng)
    rel = mwem(**{k: v for k, v in GOOD.items() if k not in ("counts", "workload")},
               counts=GOOD["counts"], workload=GOOD["workload"], accountant=acct, rng=rng)
    assert acct.spent[0] == pytest.approx(spent[0] + 1.0) and len(acct) == 2
    assert rng_state(rng) != state
    assert rel.synthetic.shape == (2, 3)


# -- threads ---------------------------------------------------------------------------

def test_threads_do_not_change_the_release():
    # More than one chunk (65,536) of utilities, so the selection kernel really uses the
    # threads; several rounds and a measured total.
    n = 150_000
    counts = np.random.default_rng(0).poisson(np.linspace(0.0, 4.0, n))
    assert_same_releases([mwem(counts, Identity(n), epsilon=5.0, rounds=4,
                               accountant=dp.Accountant(), rng=21, threads=t)
                          for t in (1, 2, 1)])


def assert_same_releases(releases):
    for rel in releases[1:]:
        assert np.array_equal(rel.synthetic, releases[0].synthetic)
        assert np.array_equal(rel.selected, releases[0].selected)
        assert np.array_equal(rel.measurements, releases[0].measurements)
        assert rel.total == releases[0].total


def test_threads_do_not_change_the_table_release():
    # A table of more than one chunk (65,536 cells), so the vector Laplace kernel really
    # uses the threads; a measured total. At this epsilon the large table is worth measuring
    # (its noise, about 0.08 per cell, is far below its error on the uniform histogram).
    domain = (300, 250)
    counts = np.random.default_rng(1).poisson(np.linspace(0.0, 3.0, 75_000)).reshape(domain)
    wl = Marginals(domain, attributes=[(0, 1), (0,), (1,)])
    releases = [mwem(counts, wl, measure="tables", epsilon=100.0, rounds=4, accountant=dp.Accountant(), rng=22,
                     threads=t) for t in (1, 2, 1)]
    assert 0 in releases[0].selected.tolist()
    assert_same_releases(releases)


def test_docstring_examples():
    result = doctest.testmod(mwem_module,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# -- the selection's distribution --------------------------------------------------------

def first_selections(counts, workload, measure, epsilon, draws):
    """The first round's selection of ``draws`` releases (one round, public total)."""
    n = float(counts.sum())
    return np.array([mwem(counts, workload, epsilon=epsilon, rounds=1, total=n,
                          measure=measure, accountant=dp.Accountant(), rng=seed).selected[0]
                     for seed in range(draws)])


@pytest.mark.parametrize("measure", ["queries", "tables"])
def test_first_selection_follows_the_exponential_mechanism(measure):
    # One round from the uniform histogram: P[i] is proportional to exp(eps * u_i / 4)
    # (selection at eps / 2, sensitivity 1), with u_i = |q_i . x - q_i . uniform| for a
    # query, and for table j the l1 error of its table less (2 / eps) * its cells (the
    # measurement's expected l1 error). Chi-square goodness of fit, false alarm 1e-4.
    pytest.importorskip("scipy")
    from support_stats import exponential_pvalue
    counts = correlated((4, 3, 5), 9, total=2_000)
    wl = Marginals((4, 3, 5), k=2)
    uniform = np.full(wl.n_cells, counts.sum() / wl.n_cells)
    error = np.abs(wl.answer(counts) - wl.answer(uniform))
    if measure == "queries":
        epsilon, u = 0.02, error
        plain = None
    else:
        epsilon = 0.06
        plain = np.add.reduceat(error, wl.offsets[:-1])
        u = plain - (2.0 / epsilon) * np.diff(wl.offsets)
    draws = 3_000
    got = np.bincount(first_selections(counts, wl, measure, epsilon, draws),
                      minlength=u.size)

    def pvalue(u):
        return exponential_pvalue(got, u, epsilon / 4)

    assert pvalue(u) > 1e-4
    if plain is not None:
        # Power: the same draws reject the selection without the noise term.
        assert pvalue(plain) < 1e-4


def test_a_subclass_of_a_trusted_workload_is_refused_before_the_charge():
    # A subclass could answer 50 times its queries under MWEM's sensitivity-1 calibration:
    # MWEM takes exactly dpfast's own workload classes.
    from refusals import spends_nothing

    class Louder(dp.workloads.Explicit):
        def answer(self, x):
            return 50 * super().answer(x)

    acct, gen = dp.Accountant(), dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(TypeError, match="not a subclass"):
        dp.mwem(np.arange(8), Louder(np.eye(8)), epsilon=1.0, rounds=2, accountant=acct,
                rng=gen)
