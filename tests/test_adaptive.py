"""dp.marginals(method="aim" | "mst"): the selection follows the exponential mechanism on
AIM's noise-aware score (chi-square, false alarm 1e-4, with power against the score without
its noise term), the rounds spend exactly the declared budget, and bad input is refused
before anything is charged or drawn."""
import math
from fractions import Fraction

import numpy as np
import pytest
from refusals import GAUSSIAN_BAD_KEYWORDS, spends_nothing
from test_graphical import records

import dpfast as dp
from dpfast._release import Keys
from dpfast.linear import adaptive as A
from dpfast.linear import graphical as G


def test_candidates_are_the_downward_closure_weighted_by_overlap():
    cands = A.candidates([(0, 1), (1, 2)])
    assert cands == {(0,): 1.0, (0, 1): 3.0, (1,): 2.0, (1, 2): 3.0, (2,): 1.0}


@pytest.mark.parametrize("method", ["aim", "mst"])
@pytest.mark.parametrize("budget", [{"rho": 0.05}, {"epsilon": 1.0, "delta": 1e-6}])
def test_the_rounds_spend_exactly_the_declared_budget(method, budget):
    cols, keys = records()
    acct = dp.Accountant(**budget)
    rel = dp.marginals(cols, keys=keys, k=2, noise="gaussian", method=method, accountant=acct,
                       rng=1, **budget)
    # The accountant is charged the budget once; the rounds' own sum is that rho.
    assert len(acct) == 1
    if "rho" in budget:
        assert acct.spent.rho == pytest.approx(budget["rho"])
    else:
        assert tuple(acct.spent)[:2] == (budget["epsilon"], budget["delta"])
    assert rel.method == method and len(rel) == 6
    assert all((t >= 0).all() for t in rel.tables.values())


def test_the_rounds_sum_to_rho():
    cols, keys = records()
    x = {}
    codes = [np.asarray(cols[k]) for k in keys]
    shape = tuple(len(v) for v in keys.values())
    full = np.zeros(shape, dtype=np.int64)
    np.add.at(full, tuple(codes), 1)
    sets = sorted(A.candidates([(0, 1), (1, 2), (2, 3), (0, 3)]))
    for s in sets:
        x[s] = full.sum(axis=tuple(i for i in range(4) if i not in s))
    for run in (A.aim, A.mst):
        m = A.Measurer(Keys(dp.ChaCha20(5)), 0.3)
        if run is A.aim:
            run(x, shape, [(0, 1), (1, 2), (2, 3), (0, 3)], m)
        else:
            pairs = {(i, j): full.sum(axis=tuple(k for k in range(4) if k not in (i, j)))
                     for i in range(4) for j in range(i + 1, 4)}
            run({**x, **pairs}, shape, m)
        # Exactly: the rounds' costs, summed as fractions, never pass the charged rho.
        assert float(m.spent) == pytest.approx(0.3, rel=1e-9) and m.spent <= Fraction(0.3)


def test_aims_selection_follows_the_exponential_mechanism_on_its_noise_aware_score():
    pytest.importorskip("scipy")
    from support_stats import exponential_pvalue
    cols, keys = records(n=3000)
    shape = (3, 4, 2, 3)
    full = np.zeros(shape, dtype=np.int64)
    np.add.at(full, tuple(np.asarray(cols[k]) for k in keys), 1)
    workload = [(0, 1), (1, 2), (2, 3), (1, 3)]
    cands = A.candidates(workload)
    names = list(cands)
    exact = {r: full.sum(axis=tuple(i for i in range(4) if i not in r)) for r in names}
    # The model of the first round: exact one-way tables (the score's model is public).
    model = G.estimate([G.Measurement((a,), exact[(a,)].astype(float), 0.0)
                        for a in range(4)], shape)
    weights = np.array([cands[r] for r in names])
    sigma, epsilon = 300.0, 0.002
    u = A.aim_scores(exact, model, names, weights, sigma)
    # The score, computed here from its definition.
    plain = np.array([w * np.abs(exact[r] - model.marginal(r)).sum()
                      for r, w in zip(names, weights)])
    cells = np.array([math.prod(shape[a] for a in r) for r in names])
    np.testing.assert_allclose(u, plain - weights * math.sqrt(2 / math.pi) * sigma * cells)
    delta = weights.max()
    measurer = A.Measurer(Keys(dp.ChaCha20(7)), 1e9)
    draws = 3000
    got = np.bincount([A._select_among(measurer, u, np.ones(len(u), bool), epsilon, delta)
                       for _ in range(draws)], minlength=len(u))

    def pvalue(score):
        return exponential_pvalue(got, score, epsilon / (2 * delta))

    assert pvalue(u) > 1e-4
    assert pvalue(plain) < 1e-4          # power: the score without its noise term
    # Candidates outside the size limit are never chosen.
    ok = np.array([len(r) == 1 for r in names])
    picks = {A._select_among(measurer, u, ok, epsilon, delta) for _ in range(200)}
    assert all(len(names[i]) == 1 for i in picks)


@pytest.mark.parametrize("method", ["aim", "mst"])
def test_bad_input_is_refused_before_anything_is_charged(method):
    cols, keys = records(n=200)
    for kw, exc in GAUSSIAN_BAD_KEYWORDS + [({"noise": "laplace", "epsilon": 1.0},
                                             ValueError)]:
        acct, gen = dp.Accountant(epsilon=10, delta=1e-3), dp.ChaCha20(1)
        with spends_nothing(acct, gen), pytest.raises(exc):
            dp.marginals(cols, keys=keys, k=2, method=method, accountant=acct, rng=gen, **kw)
    # A rho the (epsilon, delta) accountant cannot hold; a budget past what is left; a
    # domain that does not match the data (a value outside its column's categories).
    acct, gen = dp.Accountant(epsilon=1.0, delta=1e-6, composition="basic"), dp.ChaCha20(1)
    bad = dict(cols, a=np.where(np.arange(200) == 7, 9, cols["a"]))
    for data, kw, exc in [(cols, {"rho": 0.1}, ValueError),
                          (cols, {"epsilon": 2.0, "delta": 1e-6}, dp.BudgetExceededError),
                          (bad, {"epsilon": 0.5, "delta": 1e-6}, ValueError)]:
        with spends_nothing(acct, gen), pytest.raises(exc):
            dp.marginals(data, keys=keys, k=2, noise="gaussian", method=method,
                         accountant=acct, rng=gen, **kw)


def test_tables_past_a_clique_are_refused_and_mst_spends_all_on_a_forest():
    # A workload table past the clique limit is refused before the charge; MST skips the
    # pairs no clique can hold (here the two wide attributes' pair), measuring a spanning
    # forest, and its rounds still spend exactly the budget.
    gen = np.random.default_rng(3)
    keys = {"w1": list(range(5000)), "w2": list(range(5000)), "s": [0, 1]}
    cols = {k: gen.integers(0, len(v), 500) for k, v in keys.items()}
    acct, rng = dp.Accountant(rho=1.0), dp.ChaCha20(2)
    with spends_nothing(acct, rng), pytest.raises(ValueError, match="25,000,000 cells"):
        dp.marginals(cols, keys=keys, k=2, noise="gaussian", rho=0.5, method="aim",
                     accountant=acct, rng=rng)
    shape = (5000, 5000, 2)
    full = {(0,): np.bincount(cols["w1"], minlength=5000),
            (1,): np.bincount(cols["w2"], minlength=5000),
            (2,): np.bincount(cols["s"], minlength=2)}
    for a, b in [(0, 2), (1, 2)]:
        x, y = list(cols.values())[a], list(cols.values())[b]
        full[(a, b)] = np.bincount(x * shape[b] + y, minlength=shape[a] * shape[b]).reshape(
            shape[a], shape[b])
    m = A.Measurer(Keys(dp.ChaCha20(5)), 0.3)
    model, ms = A.mst(full, shape, m)
    assert float(m.spent) == pytest.approx(0.3, rel=1e-9) and m.spent <= Fraction(0.3)
    assert sorted(x.clique for x in ms if len(x.clique) == 2) == [(0, 2), (1, 2)]


def test_model_method_takes_laplace_noise_and_counts():
    # The fit weighs each table by its noise's variance, whatever the noise.
    cols, keys = records()
    shape = tuple(len(v) for v in keys.values())
    counts = np.zeros(shape, dtype=np.int64)
    np.add.at(counts, tuple(np.asarray(cols[k]) for k in keys), 1)
    rel = dp.marginals(counts, k=2, epsilon=2.0, method="model", accountant=dp.Accountant(),
                       rng=3)
    assert rel.noise == "laplace" and all((t >= 0).all() for t in rel.tables.values())
    rel = dp.marginals(counts, k=2, noise="gaussian", rho=0.5, method="aim",
                       accountant=dp.Accountant(rho=1.0), rng=3)
    truth = counts.sum(axis=(2, 3))
    assert np.abs(rel.tables[(0, 1)] - truth).sum() < 0.2 * counts.sum()


@pytest.mark.parametrize("method", ["aim", "mst"])
def test_no_variance_or_bound_is_stated_and_a_tiny_rho_is_refused(method):
    cols, keys = records(n=300)
    rel = dp.marginals(cols, keys=keys, k=2, noise="gaussian", rho=0.5, method=method,
                       accountant=dp.Accountant(rho=1.0), rng=1)
    for call in (rel.variance, rel.error_bound):
        with pytest.raises(ValueError, match="expected_error"):
            call()
    with pytest.raises(ValueError, match="expected_error"):
        dp.marginal_variance(keys, k=2, noise="gaussian", rho=0.5, method=method)
    # Every round's sigma is checked against the kernel's range before the charge.
    acct, gen = dp.Accountant(rho=1.0), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="largest sigma"):
        dp.marginals(cols, keys=keys, k=2, noise="gaussian", rho=1e-24, method=method,
                     accountant=acct, rng=gen)


def test_aims_first_round_may_pick_what_does_not_grow_the_model():
    # The one-way model already past the first round's share of the size limit: the
    # candidates that do not grow it stay allowed (the round had no candidate at all).
    shape = (30, 2)
    gen = np.random.default_rng(0)
    x = np.zeros(shape, dtype=np.int64)
    np.add.at(x, (gen.integers(0, 30, 500), gen.integers(0, 2, 500)), 1)
    exact = {(0,): x.sum(1), (1,): x.sum(0), (0, 1): x}
    m = A.Measurer(Keys(dp.ChaCha20(2)), 0.5)
    model, ms = A.aim(exact, shape, [(0, 1)], m, max_cells=10)
    assert m.spent <= Fraction(0.5) and float(m.spent) == pytest.approx(0.5)
    assert all(len(x.clique) == 1 for x in ms)
