"""Gaussian noise in crosstab and marginals (dpfast.linear.contingency): the noise keywords
refused before anything is charged or drawn, one measure over the whole release's l2
sensitivity sqrt(m) (the charged rho is m / (2 sigma**2), one ledger entry), known answers on
fixed seeds, the same release on any thread count, the released noise's variance against
sigma**2, consistent tables that agree, non-negative integer tables, and the variances and
error bounds of marginal_variance / marginal_error_bound with the same keywords."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpfast as dp
from dpfast import noise as N
from dpfast.linear.contingency import (crosstab, marginal_error_bound, marginal_variance,
                                     marginals)
from refusals import rng_state, spends_nothing

KEYS = {"a": ["x", "y"], "b": [0, 1, 2], "c": ["u", "v", "w", "z"], "d": [True, False]}
NAN, INF = float("nan"), float("inf")
VE, TE = ValueError, TypeError


def make_frame(seed, n=200, keys=KEYS):
    gen = np.random.default_rng(seed)
    return pd.DataFrame({c: [cats[i] for i in gen.integers(0, len(cats), n)]
                         for c, cats in keys.items()})


FRAME = make_frame(0, n=50)
COUNTS = np.random.default_rng(1).integers(0, 9, (2, 3, 4, 2))


def zcdp_accountant():
    """A zCDP accountant with an earlier charge on its ledger."""
    acct = dp.Accountant(rho=100.0)
    acct.spend(rho=0.25, label="earlier release")
    return acct


# -- refusals: nothing charged, nothing drawn ---------------------------------------------

GAUSS = {"noise": "gaussian"}
#: Bad privacy keywords (the noise keywords are given in full by each case).
BAD_KEYWORDS = [
    ({**GAUSS, "rho": 0.0}, VE, "'rho'"), ({**GAUSS, "rho": -1.0}, VE, "'rho'"),
    ({**GAUSS, "rho": NAN}, VE, "'rho'"), ({**GAUSS, "rho": INF}, VE, "'rho'"),
    ({**GAUSS, "rho": "0.5"}, TE, "'rho'"), ({**GAUSS, "rho": True}, TE, "'rho'"),
    ({"epsilon": 1.0, "rho": 0.5}, VE, "'rho'"),
    ({"noise": "laplace", "epsilon": 1.0, "rho": 0.5}, VE, "'rho'"),
    ({**GAUSS, "epsilon": 1.0}, VE, "delta"), (GAUSS, VE, "rho="),
    ({**GAUSS, "delta": 1e-9}, VE, "delta without epsilon"),
    ({**GAUSS, "epsilon": 1.0, "delta": 0.0}, VE, "'delta'"),
    ({**GAUSS, "epsilon": 1.0, "delta": 1.0}, VE, "'delta'"),
    ({**GAUSS, "epsilon": 1.0, "delta": 1.5}, VE, "'delta'"),
    ({**GAUSS, "epsilon": 1.0, "delta": "1e-9"}, TE, "'delta'"),
    ({**GAUSS, "epsilon": 0.0, "delta": 1e-9}, VE, "'epsilon'"),
    ({**GAUSS, "epsilon": 1.0, "delta": 1e-9, "rho": 0.5}, VE, "not both"),
    ({**GAUSS, "epsilon": 1.0, "rho": 0.5}, VE, "not both"),
    ({"noise": "normal", "epsilon": 1.0}, VE, "'noise'"),
    ({"noise": "Gaussian", "rho": 0.5}, VE, "'noise'"),
    ({"noise": 1, "epsilon": 1.0}, TE, "'noise'"), ({"noise": None, "epsilon": 1.0}, TE, "'noise'"),
    ({"epsilon": 1.0, "delta": 1e-9}, VE, "'delta'"),
    ({"noise": "laplace", "epsilon": 1.0, "delta": 0.5}, VE, "'delta'"),
    ({}, VE, "'epsilon'"), ({"noise": "laplace"}, VE, "'epsilon'"),
    ({"epsilon": 1e-14}, VE, "'epsilon'"),                 # Laplace scale beyond the kernel
    ({**GAUSS, "rho": 1e-300}, VE, "sigma"),               # sigma beyond the kernel
]
#: The releases: (function, positional arguments, other keywords).
RELEASES = {
    "crosstab": (crosstab, (FRAME, ["a", "c"]), {"keys": KEYS}),
    "marginals": (marginals, (FRAME,), {"keys": KEYS}),
    "marginals_independent": (marginals, (FRAME,), {"keys": KEYS, "method": "independent"}),
    "marginals_counts": (marginals, (COUNTS,), {}),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
@pytest.mark.parametrize("keywords, exc, text", BAD_KEYWORDS,
                         ids=[repr(c[0]) for c in BAD_KEYWORDS])
def test_bad_noise_keywords_spend_nothing_and_draw_nothing(name, keywords, exc, text):
    func, args, kwargs = RELEASES[name]
    acct, rng = zcdp_accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(exc) as info:
        func(*args, **kwargs, **keywords, accountant=acct, rng=rng)
    assert not isinstance(info.value, dp.BudgetExceededError)
    assert text in str(info.value)
    assert func.__name__ in str(info.value)


@pytest.mark.parametrize("func", [marginal_variance, marginal_error_bound])
@pytest.mark.parametrize("keywords, exc, text", BAD_KEYWORDS,
                         ids=[repr(c[0]) for c in BAD_KEYWORDS])
def test_accuracy_functions_refuse_the_same_keywords(func, keywords, exc, text):
    with pytest.raises(exc) as info:
        func(KEYS, **keywords)
    assert text in str(info.value) and func.__name__ in str(info.value)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_rho_alone_on_an_epsilon_delta_accountant_is_refused(name):
    func, args, kwargs = RELEASES[name]
    acct, rng = dp.Accountant(epsilon=10.0, delta=1e-6), dp.ChaCha20(7)
    acct.spend(0.5, 1e-9, label="earlier release")
    with spends_nothing(acct, rng), pytest.raises(ValueError, match="rho alone"):
        func(*args, **kwargs, noise="gaussian", rho=0.5, accountant=acct, rng=rng)
    # ... which takes the same release given in (epsilon, delta)
    func(*args, **kwargs, noise="gaussian", epsilon=1.0, delta=1e-9, accountant=acct, rng=rng)
    assert len(acct) == 2 and acct.spent[0] == pytest.approx(1.5)
    assert acct.spent[1] == pytest.approx(1e-9 + 1e-9)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_refused_budget_draws_nothing(name):
    func, args, kwargs = RELEASES[name]
    acct, rng = dp.Accountant(rho=0.1), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        func(*args, **kwargs, noise="gaussian", rho=0.2, accountant=acct, rng=rng)


# -- one measure, its sensitivity and its charge ---------------------------------------------

def binary_counts(d=8, seed=0):
    """A histogram of d binary attributes: C(d, 2) two-way tables."""
    return np.random.default_rng(seed).integers(0, 50, (2,) * d)


def test_28_tables_are_charged_28_over_2_sigma_squared_once():
    counts = binary_counts()
    l2 = math.sqrt(28)
    # (epsilon, delta) on an (epsilon, delta) accountant: the tightest sigma for this one
    # release, charged (epsilon, delta), its rho stated in the ledger
    acct = dp.Accountant(epsilon=2.0, delta=1e-6)
    rel = marginals(counts, noise="gaussian", epsilon=1.0, delta=1e-9, accountant=acct, rng=0)
    assert len(rel) == 28 and len(acct) == 1                  # one charge for 28 tables
    sigma = rel.scale
    assert sigma == N.gaussian_sigma_for(l2, 1.0, 1e-9, True)
    assert acct.spent == (1.0, 1e-9)
    rho = acct.ledger[0].rho
    assert rho == pytest.approx(28 / (2 * sigma ** 2), rel=1e-12)
    assert rho >= 28 / (2 * sigma ** 2)                       # never understated
    # On an accountant that composes in zCDP, (epsilon, delta) releases compose through
    # zCDP: sigma from the rho of the tight conversion, which is what is charged
    zacct = dp.Accountant(epsilon=1.0, delta=1e-9, composition="zcdp")
    zrel = marginals(counts, noise="gaussian", epsilon=1.0, delta=1e-9, accountant=zacct,
                     rng=0)
    assert zacct.remaining.rho == 0.0 and zacct.spent.rho == zacct.rho
    assert zrel.scale == pytest.approx(math.sqrt(28 / (2 * zacct.rho)), rel=1e-12)
    assert 28 / (2 * zrel.scale ** 2) <= zacct.rho
    assert (rel.noise, rel.epsilon, rel.delta) == ("gaussian", 1.0, 1e-9)
    # 28 tables calibrated one by one at (epsilon/28, delta/28) and composed would need
    # several times the noise
    assert sigma < 0.5 * N.gaussian_sigma_for(1.0, 1.0 / 28, 1e-9 / 28, True)
    # a rho budget: sigma = sqrt(28 / (2 rho)), charged rho exactly
    acct = dp.Accountant(rho=0.014973)
    rel = marginals(counts, noise="gaussian", rho=0.014973, accountant=acct, rng=0)
    assert len(acct) == 1 and acct.spent.rho == 0.014973 and rel.rho == 0.014973
    assert rel.epsilon is None
    assert rel.scale == pytest.approx(math.sqrt(28 / (2 * 0.014973)), rel=1e-12)
    assert 28 / (2 * rel.scale ** 2) <= 0.014973
    assert "noise='gaussian'" in repr(rel) and "rho=0.014973" in repr(rel)


@pytest.mark.parametrize("seed", range(3))
def test_one_added_record_moves_the_release_by_its_l2_sensitivity(seed):
    # rho so large that sigma is about 1e-6: the discrete Gaussian is 0 (exact tables)
    frame = make_frame(seed, n=60)
    neighbour = pd.concat([frame, make_frame(100 + seed, n=1)], ignore_index=True)
    for workload in (None, [("a", "b", "c"), ("a", "d"), ("c",)]):
        acct = dp.Accountant(rho=1e13)
        kw = {"noise": "gaussian", "rho": 1e12, "keys": KEYS, "method": "independent",
              "accountant": acct, "rng": 0, "workload": workload}
        before, after = marginals(frame, **kw), marginals(neighbour, **kw)
        change = np.concatenate([(after[t].to_numpy() - before[t].to_numpy()).ravel()
                                 for t in before])
        m = len(before)
        assert np.array_equal(np.sort(np.abs(change))[-m:], np.ones(m))  # one cell a table
        assert np.abs(change).sum() == m and math.sqrt(float(change @ change)) == math.sqrt(m)
        # the charge: l2**2 / (2 sigma**2) with l2 = sqrt(m)
        assert acct.spent.rho == 2e12 and m / (2 * before.scale ** 2) == pytest.approx(1e12)


def test_crosstab_has_l2_sensitivity_one():
    acct = dp.Accountant(rho=1.0)
    table = crosstab(FRAME, ["a", "b", "c"], noise="gaussian", rho=0.5, keys=KEYS,
                     accountant=acct, rng=3)
    assert isinstance(table, pd.Series) and table.dtype == np.int64 and table.size == 24
    assert len(acct) == 1 and acct.spent.rho == 0.5
    exact = crosstab(FRAME, ["a", "b", "c"], epsilon=1e9, keys=KEYS,
                     accountant=dp.Accountant(), rng=0)
    # sigma = 1 / sqrt(2 rho) = 1: the noise is small integers
    assert np.abs(table.to_numpy() - exact.to_numpy()).max() <= 8


# -- known answers, threads ------------------------------------------------------------------

def test_known_answers_on_fixed_seeds():
    counts = np.arange(24).reshape(2, 3, 4)
    rel = marginals(counts, noise="gaussian", rho=0.5, method="independent",
                    accountant=dp.Accountant(rho=1.0), rng=0)
    assert rel.scale == pytest.approx(math.sqrt(3.0), rel=1e-15)
    assert {t: rel[t].tolist() for t in rel} == KNOWN_MARGINALS
    table, labels = crosstab({"a": ["x", "y", "y", "x", "y"], "b": [0, 1, 2, 2, 2]}, ["a", "b"],
                             noise="gaussian", rho=0.125, keys=KEYS,
                             accountant=dp.Accountant(rho=1.0), rng=5)
    assert labels == (KEYS["a"], KEYS["b"]) and table.tolist() == KNOWN_CROSSTAB
    # the consistent release projects the same noisy tables (same seed): the least-squares
    # fit of the known answers
    con = marginals(counts, noise="gaussian", rho=0.5, accountant=dp.Accountant(rho=1.0),
                    rng=0)
    fit = marginals(counts, noise="gaussian", rho=0.5, accountant=dp.Accountant(rho=1.0),
                    rng=0, method="independent")
    assert {t: fit[t].tolist() for t in fit} == KNOWN_MARGINALS
    totals = [float(con[t].sum()) for t in con]
    assert max(totals) - min(totals) < 1e-9
    np.testing.assert_allclose(con[(0, 1)], KNOWN_CONSISTENT_01, rtol=0, atol=1e-9)


KNOWN_MARGINALS = {
    (0, 1): [[5, 22, 38], [56, 70, 87]],
    (0, 2): [[15, 13, 20, 19], [49, 53, 54, 59]],
    (1, 2): [[16, 11, 15, 19], [18, 24, 24, 27], [27, 29, 32, 33]],
}
KNOWN_CONSISTENT_01 = [[5.277777777777784, 22.44444444444445, 37.611111111111114],
                       [56.277777777777786, 70.44444444444446, 86.61111111111113]]
KNOWN_CROSSTAB = [[1, -3, -1], [2, 0, 4]]


def test_the_release_does_not_depend_on_threads():
    # 91,200 cells: more than one chunk of noise, drawn on several threads
    counts = np.random.default_rng(4).integers(0, 5, (300, 300, 2))
    out = [marginals(counts, noise="gaussian", rho=0.5, method=m, threads=t, rng=3,
                     accountant=dp.Accountant(rho=10.0))
           for m in ("independent", "consistent") for t in (1, 2)]
    for a, b in ((out[0], out[1]), (out[2], out[3])):
        for t in a:
            np.testing.assert_array_equal(a[t], b[t])
    frame = make_frame(7, n=150_000)               # counted on several threads
    tabs = [crosstab(frame, ["a", "b", "c"], noise="gaussian", epsilon=1.0, delta=1e-9,
                     keys=KEYS, threads=t, rng=3, accountant=dp.Accountant(epsilon=1.0, delta=1e-9))
            for t in (1, 2)]
    np.testing.assert_array_equal(tabs[0].to_numpy(), tabs[1].to_numpy())


# -- the noise: variance, consistency, non-negativity ----------------------------------------

def test_released_noise_has_variance_sigma_squared():
    # Zero counts: the independent release is the noise itself, 10,400 cells a release, 5
    # releases. The mean of R squared discrete Gaussian noises estimates sigma**2 with
    # relative standard deviation sqrt((2 + g) / R), g its excess kurtosis (below 1e-30 at
    # sigma 5). Tolerance: 5 standard deviations (false alarm below 1e-6 per assertion).
    counts = np.zeros((100, 100, 2), dtype=np.int64)
    rho = 3 / (2 * 5.0 ** 2)                                  # sigma = 5 for 3 tables
    noise = np.concatenate([
        np.concatenate([np.ravel(t) for t in marginals(
            counts, noise="gaussian", rho=rho, method="independent", rng=seed,
            accountant=dp.Accountant(rho=1.0)).tables.values()])
        for seed in range(5)]).astype(np.float64)
    sigma2 = marginal_variance([100, 100, 2], noise="gaussian", rho=rho,
                               method="independent")[(0, 1)]
    assert sigma2 == pytest.approx(25.0, rel=1e-12)
    r = noise.size
    assert abs(noise.mean()) <= 5 * math.sqrt(sigma2 / r)
    assert (noise ** 2).mean() == pytest.approx(sigma2, rel=5 * math.sqrt(2 / r))
    assert np.array_equal(noise, np.round(noise))              # integer noise


SIM_SIZES, SIM_RUNS, SIM_RHO = (2, 3, 2), 1000, 0.2


@pytest.fixture(scope="module")
def simulation():
    """Errors of SIM_RUNS Gaussian releases (seeds 0..) of all 2-way marginals, per
    method."""
    counts = np.random.default_rng(0).integers(0, 30, SIM_SIZES)
    exact = marginals(counts, epsilon=1e9, method="independent", accountant=dp.Accountant(),
                      rng=0)
    out = {}
    for method in ("independent", "consistent"):
        runs = [marginals(counts, noise="gaussian", rho=SIM_RHO, method=method, rng=seed,
                          accountant=dp.Accountant(rho=1.0)) for seed in range(SIM_RUNS)]
        out[method] = {s: np.stack([r[s] - exact[s] for r in runs]) for s in exact}
    return out


@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_variances_match_simulation(simulation, method):
    # As for Laplace noise (tests/test_marginals.py), with the Gaussian's excess kurtosis 0:
    # relative standard deviation sqrt(2 / R) of a cell's mean squared error (sigma = 1.94:
    # the discrete Gaussian's kurtosis differs from 0 by less than 1e-30). 4.5 standard
    # deviations.
    want = marginal_variance(list(SIM_SIZES), noise="gaussian", rho=SIM_RHO, method=method)
    assert want == marginals(np.zeros(SIM_SIZES, dtype=int), noise="gaussian", rho=SIM_RHO,
                             method=method, accountant=dp.Accountant(rho=1.0), rng=0).variance()
    for s, err in simulation[method].items():
        assert err.mean() == pytest.approx(0.0, abs=5 * math.sqrt(want[s] / SIM_RUNS))
        cells = err[0].size if method == "independent" else 1
        rsd = math.sqrt(2 / (SIM_RUNS * cells))
        assert (err ** 2).mean() == pytest.approx(want[s], rel=4.5 * rsd)
    if method == "consistent":                 # consistency lowers every table's variance
        ind = marginal_variance(list(SIM_SIZES), noise="gaussian", rho=SIM_RHO,
                                method="independent")
        assert all(want[s] < ind[s] for s in want)


@pytest.mark.parametrize("method", ["independent", "consistent"])
def test_error_bounds_hold_in_simulation(simulation, method):
    beta = 0.05
    bound = marginal_error_bound(list(SIM_SIZES), noise="gaussian", rho=SIM_RHO, beta=beta,
                                 method=method)
    within = np.all([np.abs(e).reshape(SIM_RUNS, -1).max(axis=1) <= bound[s]
                     for s, e in simulation[method].items()], axis=0)
    assert (~within).mean() <= beta
    assert all(bound[s] <= 2.0 * np.quantile(np.abs(e), 1 - beta / 10)
               for s, e in simulation[method].items())
    # the bound is sqrt(variance) sqrt(2 ln(2 N / beta)), N all the cells
    var = marginal_variance(list(SIM_SIZES), noise="gaussian", rho=SIM_RHO, method=method)
    n = sum(math.prod(SIM_SIZES[a] for a in s) for s in var)
    for s in bound:
        assert bound[s] == pytest.approx(math.sqrt(var[s] * 2 * math.log(2 * n / beta)),
                                         rel=1e-12)


def test_release_accuracy_methods_take_the_release_noise():
    acct = dp.Accountant(epsilon=2.0, delta=1e-6)
    kw = {"noise": "gaussian", "epsilon": 1.0, "delta": 1e-7}
    rel = marginals(COUNTS, **kw, accountant=acct, rng=0)
    shape = list(COUNTS.shape)
    assert rel.variance() == marginal_variance(shape, **kw)
    assert rel.variance("independent") == marginal_variance(shape, **kw, method="independent")
    assert set(rel.variance("independent").values()) == {rel.scale ** 2}
    assert rel.error_bound(0.1) == marginal_error_bound(shape, **kw, beta=0.1)
    # For many tables Gaussian noise beats Laplace noise of the same epsilon: 28 tables
    gauss = marginal_variance([2] * 8, noise="gaussian", epsilon=1.0, delta=1e-9)
    laplace = marginal_variance([2] * 8, epsilon=1.0)
    assert all(gauss[t] < 0.6 * laplace[t] for t in laplace)


@pytest.mark.parametrize("sizes, workload", [
    ((2, 3, 4, 2), None), ((3, 2, 4), [(0, 1), (1, 2), (0, 2), (0, 1, 2)]),
    ((2, 3, 4, 2), [(0, 1, 2), (1, 3), (2,), (0, 3)])])
def test_consistent_gaussian_tables_agree_on_shared_margins(sizes, workload):
    counts = np.random.default_rng(2).integers(0, 20, sizes)
    rel = marginals(counts, noise="gaussian", rho=0.05, workload=workload,
                    accountant=dp.Accountant(rho=1.0), rng=4)
    tables = {t: np.asarray(v) for t, v in rel.items()}
    for (s, x), (t, y) in itertools.combinations(tables.items(), 2):
        shared = sorted(set(s) & set(t))
        mx = x.sum(axis=tuple(i for i, a in enumerate(s) if a not in shared))
        my = y.sum(axis=tuple(i for i, a in enumerate(t) if a not in shared))
        mx = np.transpose(mx, np.argsort([a for a in s if a in shared])) if shared else mx
        my = np.transpose(my, np.argsort([a for a in t if a in shared])) if shared else my
        np.testing.assert_allclose(mx, my, rtol=1e-12, atol=1e-9 * float(counts.sum()))


def test_nonnegative_gaussian_tables_are_integers_with_one_total():
    frame = make_frame(3, n=30)                         # small counts: many clipped cells
    rel = marginals(frame, noise="gaussian", epsilon=1.0, delta=1e-9, keys=KEYS,
                    accountant=dp.Accountant(epsilon=1.0, delta=1e-9), rng=1)
    nonneg = rel.nonnegative()
    assert list(nonneg) == list(rel)
    totals = set()
    for t, table in nonneg.items():
        values = table.to_numpy()
        assert values.dtype.kind == "i" and values.min() >= 0
        assert table.shape == rel[t].shape
        totals.add(int(values.sum()))
    assert len(totals) == 1


def test_adult_28_two_way_tables_with_gaussian_noise():
    # One release on the bundled data: sigma from the whole release's l2 sensitivity, the
    # error of the consistent non-negative tables below Laplace's for the same epsilon.
    from dpfast.benchmarks.linear import adult_table
    cols, keys = adult_table()
    exact = marginals(cols, epsilon=1e9, keys=keys, method="independent",
                      accountant=dp.Accountant(), rng=0)
    acct = dp.Accountant(epsilon=2.0, delta=1e-6, composition="zcdp")
    gauss = marginals(cols, noise="gaussian", epsilon=1.0, delta=1e-9, keys=keys,
                      accountant=acct, rng=0)
    lap = marginals(cols, epsilon=1.0, keys=keys, accountant=dp.Accountant(), rng=0)
    assert len(gauss) == 28 and len(acct) == 1
    assert acct.spent.rho == pytest.approx(28 / (2 * gauss.scale ** 2), rel=1e-12)
    n = len(cols["age"])

    def l1(rel):
        return sum(float(np.abs(np.asarray(v) - np.asarray(exact[t])).sum())
                   for t, v in rel.nonnegative().items()) / n / 28
    assert l1(gauss) < l1(lap)
