"""Statistics of records (dp.sum, dp.mean, dp.variance, dp.std, dp.quantiles, dp.median):
known answers, the noise's law, sensitivities checked on neighbouring datasets, the
exponential mechanism's exact probabilities, bad input refused before any charge or draw,
and the charge (once, whole, durable, in rho for a zCDP accountant)."""
import copy
import math
import pickle
import re

import numpy as np
import pytest
from scipy import special, stats

import dpfast as dp
from dpfast import _native, records, zcdp
from dpfast._release import Release
from refusals import rng_state, spends_nothing

# False-alarm rate of every statistical test in this file.
ALPHA = 1e-4
BOUNDS = (0.0, 10.0)


def column(seed, n=10_000):
    """Values partly outside BOUNDS (so clamping matters), and a privacy unit of 1..6 rows
    per person."""
    gen = np.random.default_rng(seed)
    x = gen.normal(5.0, 3.0, size=n)
    person = np.repeat(np.arange(n), gen.integers(1, 7, size=n))[:n]
    return x, person


def grid_keys(x, bounds):
    """The values on the quantile grid, as the release places them (floor, clamped)."""
    lo, hi = bounds
    g, top = records.quantile_grid(lo, hi)
    return np.clip(np.floor((np.clip(x, lo, hi) - lo) / g), 0, top), g, top


# -- known answers ---------------------------------------------------------------------------

SCALARS = [dp.sum, dp.mean, dp.variance, dp.std, dp.median]


@pytest.mark.parametrize("func", SCALARS + [dp.quantiles])
@pytest.mark.parametrize("unit", [False, True])
def test_same_seed_same_release_other_seed_other(func, unit):
    x, person = column(1, 2_000)
    kw = dict(bounds=BOUNDS, epsilon=1.0, accountant=dp.Accountant())
    if unit:
        kw.update(privacy_unit=person, max_rows=2)
    args = (x, [0.25, 0.5, 0.75]) if func is dp.quantiles else (x,)
    a = func(*args, rng=7, **kw)
    np.testing.assert_array_equal(func(*args, rng=7, **kw), a)
    np.testing.assert_array_equal(func(*args, rng=dp.ChaCha20(7), **kw), a)
    assert not np.array_equal(func(*args, rng=8, **kw), a)


def test_near_the_truth_at_large_epsilon():
    x, _ = column(2)
    c = np.clip(x, *BOUNDS)
    kw = dict(bounds=BOUNDS, epsilon=1e3, accountant=dp.Accountant(), rng=3)
    # Noise scales: sum 1e-2; mean's parts 2e-3 and 1e-2 on 1e4 rows; variance's 3e-2 on
    # squares of at most 25: the tolerances are tens of standard deviations.
    assert abs(dp.sum(x, **kw) - c.sum()) < 0.5
    assert abs(dp.mean(x, **kw) - c.mean()) < 1e-4
    assert abs(dp.variance(x, **kw) - c.var()) < 1e-3
    assert abs(dp.std(x, **kw) - c.std()) < 1e-3
    # Gaussian noise, in rho and in (epsilon, delta).
    gkw = dict(bounds=BOUNDS, noise="gaussian", rng=3)
    assert abs(dp.mean(x, rho=1e5, accountant=dp.Accountant(rho=math.inf), **gkw)
               - c.mean()) < 1e-4
    assert abs(dp.sum(x, epsilon=1e3, delta=1e-9, accountant=dp.Accountant(1e4, 1e-3), **gkw)
               - c.sum()) < 0.5


@pytest.mark.parametrize("method", ["recursive", "independent"])
def test_quantiles_near_the_truth_at_large_epsilon(method):
    x, _ = column(4)
    qs = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    got = dp.quantiles(x, qs, bounds=BOUNDS, epsilon=1e3, method=method,
                       accountant=dp.Accountant(), rng=5)
    assert got.shape == qs.shape and np.all(np.diff(got) >= 0)
    np.testing.assert_allclose(got, np.quantile(np.clip(x, *BOUNDS), qs), atol=0.02)
    # Within two ranks of q n: the number of values (on the grid) below each output.
    keys, g, top = grid_keys(x, BOUNDS)
    k = (got - BOUNDS[0]) / g
    assert np.all(k == np.round(k))                         # outputs are grid points
    # Values tied (such as those clamped to the top) leave some ranks out: within two ranks
    # of the best rank any grid point has.
    s = np.sort(keys)
    _, count = em_log_probs(s, top, 0.5, 0.0)
    reachable = np.flatnonzero(count > 0)
    best = np.abs(reachable[None, :] - qs[:, None] * x.size).min(axis=1)
    ranks = np.searchsorted(s, k, side="left")
    assert np.all(np.abs(ranks - qs * x.size) <= best + 2), (ranks, best)
    assert best[-1] == x.size - ranks[-1] > 100               # the tie at the top
    med = dp.median(x, bounds=BOUNDS, epsilon=1e3, accountant=dp.Accountant(), rng=5)
    assert abs(med - np.median(np.clip(x, *BOUNDS))) < 0.02
    assert isinstance(med, float)
    # A scalar q gives a 0-d array.
    assert dp.quantiles(x, 0.5, bounds=BOUNDS, epsilon=1.0, rng=1).shape == ()


def test_small_and_empty_columns():
    acct = dp.Accountant()
    kw = dict(bounds=(-1.0, 3.0), epsilon=1e3, accountant=acct, rng=1)
    assert dp.mean([2.0], **kw) == pytest.approx(2.0, abs=1e-2)
    for f in SCALARS:
        out = f(np.empty(0), **kw)
        assert math.isfinite(out)
    assert -1.0 <= dp.mean(np.empty(0), **kw) <= 3.0
    assert 0.0 <= dp.variance(np.empty(0), **kw) <= 4.0


# -- the law of the noise ------------------------------------------------------------------

def releases(func, n, **kw):
    """n releases of one column under one accountant and one generator."""
    acct, gen = kw.pop("accountant"), dp.ChaCha20(kw.pop("seed"))
    return np.array([func(accountant=acct, rng=gen, **kw) for _ in range(n)])


def test_laplace_sum_noise_has_the_stated_law():
    """Released minus true sum, over 3,000 releases: Laplace(max(|lo|, |hi|) / epsilon) on
    the noise's grid (KS test), centred, with no draw repeated."""
    x = np.array([-7.0, -3.0, 0.0, 1.0, 4.0, 4.0, 9.0])        # -7 clamps to -4, 9 to 5
    true = np.clip(x, -4.0, 5.0).sum()
    eps = 0.7
    d = releases(dp.sum, 3_000, values=x, bounds=(-4.0, 5.0), epsilon=eps, seed=21,
                 accountant=dp.Accountant()) - true
    scale = 5.0 / eps
    g = dp.noise.laplace_grid(scale)[0]
    np.testing.assert_array_equal(d / g, np.round(d / g))
    assert stats.kstest(d, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    assert np.unique(d).size > 2_900


@pytest.mark.parametrize("how", ["rho", "epsilon_delta"])
def test_gaussian_sum_noise_has_the_stated_sigma(how):
    """Gaussian noise of a sum: sigma = l2 / sqrt(2 rho), l2 = max(|lo|, |hi|) plus at most a
    grid step (KS test against that normal), and the same sigma the release plans."""
    x = np.array([1.0, 2.0, 3.0, -1.0])
    reach = 6.0
    if how == "rho":
        rho, kw, n = 0.3, dict(rho=0.3, accountant=dp.Accountant(rho=math.inf)), 3_000
    else:   # each release calibrates its (epsilon, delta) analytically: fewer of them
        n = 500
        kw = dict(epsilon=1.0, delta=1e-6, accountant=dp.Accountant(1e9, 0.5))
        rho = zcdp.rho_from_epsilon_delta(1.0, 1e-6)
    plan = records.split("sum", "gaussian", kw.get("epsilon"), kw.get("delta"), kw.get("rho"),
                         [records.Part("sum", reach, reach, False)], kw["accountant"])
    sigma = plan.measures[0].noise.sigma
    g = plan.measures[0].noise.g
    assert reach / math.sqrt(2 * rho) <= sigma <= (reach + g) / math.sqrt(2 * rho) * (1 + 1e-12)
    d = releases(dp.sum, n, values=x, bounds=(-reach, 2.0), noise="gaussian", seed=22,
                 **kw) - np.clip(x, -reach, 2.0).sum()
    np.testing.assert_array_equal(d / g, np.round(d / g))
    assert stats.kstest(d, stats.norm(scale=reach / math.sqrt(2 * rho)).cdf).pvalue > ALPHA


def test_mean_parts_have_their_share_of_epsilon():
    """dp.mean's noisy count and noisy centred sum, with a person's 2 rows bounded: Laplace
    of scales 2 / (eps/2) and 2 * 5 / (eps/2) (the sensitivities a person can reach, the
    budget split equally), each by a KS test over 2,000 releases."""
    x, person = np.array([1.0, 2.0, 9.0, 12.0, 4.0]), np.array([1, 1, 2, 2, 3])
    acct, gen, eps = dp.Accountant(), dp.ChaCha20(23), 1.0
    out = np.array([records.noisy_moments("mean", x, BOUNDS, person, 2, 1, "laplace", eps,
                                          None, None, acct, gen, None)[1]
                    for _ in range(2_000)])
    count_noise = out[:, 0] - 5
    sum_noise = out[:, 1] - (np.clip(x, *BOUNDS) - 5.0).sum()
    assert acct.spent == (2_000 * eps, 0.0)
    assert np.all(count_noise == np.round(count_noise))
    t = 2.0 / (eps / 2)                                     # discrete Laplace, parameter t
    p = math.exp(-1 / t)
    k = np.arange(-60, 61)
    pmf = (1 - p) / (1 + p) * p ** np.abs(k)
    obs = np.bincount(np.clip(count_noise, -60, 60).astype(int) + 60, minlength=k.size)
    keep = pmf * count_noise.size >= 5                     # cells with enough expectation
    exp = np.append(pmf[keep], 1 - pmf[keep].sum()) * count_noise.size
    obs = np.append(obs[keep], count_noise.size - obs[keep].sum())
    assert stats.chisquare(obs, exp).pvalue > ALPHA
    assert stats.kstest(sum_noise, stats.laplace(scale=10.0 / (eps / 2)).cdf).pvalue > ALPHA


def em_log_probs(s, top, q, a):
    """Exact log-probabilities, per gap j, of the exponential mechanism over the integers
    0..top with rank utility -|j - q n| and factor a: the gap's weight is its number of
    integers times exp(-a |j - q n|). Computed in numpy, independently of the kernel."""
    s = np.asarray(s, dtype=np.float64)
    count = np.diff(np.concatenate(([-1.0], s, [float(top)])))
    with np.errstate(divide="ignore"):
        lw = np.log(count) - a * np.abs(np.arange(s.size + 1) - q * s.size)
    return lw - special.logsumexp(lw), count


@pytest.mark.parametrize("q, max_rows", [(0.5, 1), (0.3, 2), (0.9, 1)])
def test_quantile_draws_follow_the_exponential_mechanism(q, max_rows):
    """For 5 values (one repeated), which gap of the sorted data each of 4,000 releases lands
    in, against the exponential mechanism's exact probabilities (chi-square); where in its
    gap, against the uniform law (KS)."""
    x = np.array([1.0, 2.0, 2.0, 5.0, 6.5])
    bounds, eps = (0.0, 8.0), 1.5
    keys, g, top = grid_keys(x, bounds)
    s = np.sort(keys)
    # The factor of the mechanism: epsilon / (2 * sensitivity of the rank utility), the
    # sensitivity being max_rows * max(q, 1 - q).
    logp, count = em_log_probs(s, top, q, eps / (2 * max_rows * max(q, 1 - q)))
    kw = dict(bounds=bounds, epsilon=eps, accountant=dp.Accountant())
    if max_rows > 1:     # one person a row: every row kept, the sensitivity that of 2 rows
        kw.update(privacy_unit=np.arange(x.size), max_rows=max_rows)
    func = (lambda **k: dp.median(x, **k)) if q == 0.5 else \
        (lambda **k: float(dp.quantiles(x, q, **k)))
    y = (releases(func, 4_000, seed=31, **kw) - bounds[0]) / g
    j = np.searchsorted(s, y, side="left")                  # values below y: its gap
    obs = np.bincount(j, minlength=s.size + 1)
    p = np.exp(logp)
    assert np.all(obs[p == 0] == 0)                         # the empty gap of the tie
    live = p > 0
    assert stats.chisquare(obs[live], p[live] * y.size).pvalue > ALPHA
    start = np.concatenate(([0.0], s + 1))[j]
    u = (y - start + np.random.default_rng(0).random(y.size)) / count[j]
    assert stats.kstest(u, "uniform").pvalue > ALPHA


# -- privacy on neighbouring datasets ------------------------------------------------------

NEIGHBOURS = {                       # the rows of the person added: beyond, at and within
    "above": lambda r: np.full(3 * r, 1e9),
    "at_hi": lambda r: np.full(r, 10.0),
    "below": lambda r: np.full(3 * r, -1e9),
    "spread": lambda r: np.linspace(-50.0, 50.0, 2 * r + 1),
}


def add_person(x, person, rows):
    """The dataset with one more person (a new id), whose rows come last: the rows of the
    others keep their positions, so the same key keeps the same rows of theirs."""
    return (np.concatenate([x, rows]),
            np.concatenate([person, np.full(rows.size, person.max() + 1)]))


@pytest.mark.parametrize("bounds", [(0.0, 10.0), (-3.0, 10.0), (-20.0, -5.0)])
@pytest.mark.parametrize("neighbour", sorted(NEIGHBOURS))
@pytest.mark.parametrize("max_rows", [1, 3])
def test_each_part_moves_at_most_its_sensitivity(bounds, neighbour, max_rows):
    """A person with up to 3 max_rows rows added (values beyond the bounds, at them, or
    spread): under the same key the noise is the same, so the change of each noisy part is
    the change of its noise-free value, which must be at most the sensitivity the noise is
    calibrated to -- sum: max_rows * max(|lo|, |hi|); count: max_rows; centred sum:
    max_rows * (hi - lo) / 2; centred sum of squares: max_rows * ((hi - lo) / 2)**2. The
    worst neighbour reaches it (the sensitivities are not overstated either)."""
    lo, hi = bounds
    x, person = column(5, 3_000)
    x = lo + (x / 10.0) * (hi - lo)
    x2, person2 = add_person(x, person, NEIGHBOURS[neighbour](max_rows))
    half, r = (hi - lo) / 2, max_rows
    acct = dp.Accountant()

    def parts(values, unit, seed):
        kw = dict(privacy_unit=unit, max_rows=r)
        moments = records.noisy_moments("variance", values, bounds, unit, r, 2, "laplace",
                                        1.0, None, None, acct, seed, None)[1]
        return np.append(moments, dp.sum(values, bounds=bounds, epsilon=1.0, accountant=acct,
                                          rng=seed, **kw))

    sens = np.array([r, r * half, r * half * half, r * max(abs(lo), abs(hi))])
    worst = np.zeros(4)
    for seed in range(3):
        change = np.abs(parts(x2, person2, seed) - parts(x, person, seed))
        assert np.all(change <= sens * (1 + 1e-12)), (change, sens)
        worst = np.maximum(worst, change)
    assert worst[0] == min(r, NEIGHBOURS[neighbour](r).size)
    if neighbour == "above" and abs(hi) >= abs(lo):
        assert worst[3] == sens[3]


def test_a_release_approaches_its_noise_free_value():
    """At epsilon 1e9 the releases with a person's rows bounded are the noise-free values of
    the rows kept: each person keeps min(rows, max_rows) of their rows."""
    x, person = column(6, 5_000)
    kw = dict(bounds=BOUNDS, epsilon=1e9, privacy_unit=person, max_rows=2,
              accountant=dp.Accountant(), rng=9)
    kept = records.noisy_moments("mean", x, BOUNDS, person, 2, 1, "laplace", 1e9, None,
                                 None, dp.Accountant(), 9, None)[1]
    rows = np.bincount(np.unique(person, return_inverse=True)[1])
    assert kept[0] == np.minimum(rows, 2).sum()
    assert dp.mean(x, **kw) == pytest.approx(5.0 + kept[1] / kept[0], abs=1e-6)
    assert abs(dp.sum(x, **kw) - dp.sum(x, **{**kw, "max_rows": 6})) > 1.0


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("max_rows", [1, 2, 3])
def test_quantile_probabilities_of_neighbours_within_exp_epsilon(q, max_rows):
    """Exact output probabilities of one quantile draw on D and on D plus a person with
    max_rows rows (at the bounds, in the middle, on existing values): for every integer of
    the grid the two probabilities differ by a factor of at most exp(epsilon). The weights
    are the kernel's (_native.quantile_weights), normalised in numpy, compared over the
    elementary intervals between both datasets' gaps; the worst case nearly reaches it."""
    eps = 0.8
    gen = np.random.default_rng(int(q * 100) + max_rows)
    top = 2**32 - 1
    base = np.sort(gen.integers(0, 200, size=9) * 2**20).astype(np.uint32)
    a = eps / (2 * max_rows * max(q, 1 - q))
    worst = 0.0
    for added in ([0] * max_rows, [top] * max_rows, [int(base[4])] * max_rows,
                  list(gen.integers(0, top, size=max_rows)), [100 * 2**20] * max_rows):
        d2 = np.sort(np.concatenate([base, np.array(added, dtype=np.uint32)]))
        cuts = np.unique(np.concatenate(([0, top + 1], base.astype(np.int64) + 1,
                                         d2.astype(np.int64) + 1, base, d2)))
        cuts = cuts[(cuts >= 0) & (cuts <= top + 1)]
        y = cuts[:-1]                               # one integer of each elementary interval
        lp = []
        for s in (base, d2):
            w = _native.quantile_weights(s, 0, top, q * s.size, a)
            count = np.diff(np.concatenate(([-1], s.astype(np.int64), [top])))
            live = count > 0
            per_int = np.full(w.size, -np.inf)
            per_int[live] = w[live] - np.log(count[live]) - special.logsumexp(w)
            lp.append(per_int[np.searchsorted(s, y, side="left")])
        ratio = np.abs(lp[0] - lp[1])
        assert np.all(ratio <= eps + 1e-9), ratio.max()
        worst = max(worst, ratio.max())
        # The probabilities from the kernel's weights are those of the mechanism in numpy.
        np.testing.assert_allclose(
            _native.quantile_weights(d2, 0, top, q * d2.size, a)
            - special.logsumexp(_native.quantile_weights(d2, 0, top, q * d2.size, a)),
            em_log_probs(d2, top, q, a)[0], rtol=1e-12, atol=1e-12)
    assert worst > 0.3 * eps


def test_recursive_quantiles_neighbours_within_exp_epsilon():
    """Two quantiles by the recursion on a tiny grid (bounds (0, 3): steps of 2**-30, so the
    gaps are exact): every output pair's probability, computed exactly by walking the
    recursion's two levels in numpy, differs between D and D plus one row by at most
    exp(epsilon) -- the first level at epsilon / 2, the sub-problem holding the row at
    epsilon / 2."""
    eps, qs, top = 1.0, (1 / 3, 2 / 3), 2**31 + 2**30       # (0, 3) on the grid: 3 * 2**30
    assert records.quantile_grid(0.0, 3.0)[1] == top
    base = np.array([1, 2, 2, 3, 5, 6], dtype=np.int64) * 2**29    # 6 * 2**29: the top
    per = eps / records.levels(2)

    def level_probs(s, lo, hi, q):
        """{gap index: (log-probability per integer, first, last integer)} of one draw."""
        a = per / (2 * max(q, 1 - q))
        lw = _native.quantile_weights(np.asarray(s, dtype=np.uint32), lo, hi, q * len(s), a)
        count = np.diff(np.concatenate(([lo - 1], np.asarray(s, dtype=np.int64), [hi])))
        live = count > 0
        per_int = np.full(lw.size, -np.inf)
        per_int[live] = lw[live] - np.log(count[live]) - special.logsumexp(lw)
        return per_int, count

    def log_prob(data, y0, y1):
        """log P(the quantiles are (y1, y0)) as the recursion draws them: the middle index
        of two, q = 2/3, first on all the data; then q = 1/3 on the rows below y0, over
        the integers 0..y0, at the relative level (1/3) / (2/3) = 1/2."""
        s = np.sort(data)
        lp0, _ = level_probs(s, 0, top, qs[1])
        j0 = np.searchsorted(s, y0, side="left")
        left = s[:j0]
        lp1, _ = level_probs(left, 0, y0, (qs[0] - 0.0) / (qs[1] - 0.0))
        j1 = np.searchsorted(left, y1, side="left")
        return lp0[j0] + lp1[j1]

    worst = 0.0
    for extra in (0, top, 2 * 2**29, 4 * 2**29, 4 * 2**29 + 12345):
        d2 = np.append(base, extra)
        pts = np.unique(np.concatenate((base, base + 1, [0, extra, extra + 1, top])))
        pts = pts[pts <= top]
        for y0 in pts:
            for y1 in pts[pts <= y0]:
                r = abs(log_prob(base, y0, y1) - log_prob(d2, y0, y1))
                assert r <= eps + 1e-9
                worst = max(worst, r)
    assert worst > 0.3 * eps


# -- thread counts -------------------------------------------------------------------------

def test_rows_kept_the_same_for_any_thread_count():
    x, person = column(7, 100_000)
    for func in (dp.mean, dp.sum, dp.median):
        got = [func(x, bounds=BOUNDS, epsilon=1.0, privacy_unit=person, max_rows=2, rng=11,
                    threads=t, accountant=dp.Accountant()) for t in (1, 2)]
        assert got[0] == got[1]


# -- bad input, refused before any charge or draw ------------------------------------------

def call(func, values=(1.0, 2.0, 3.0), **kw):
    kw.setdefault("bounds", BOUNDS)
    kw.setdefault("epsilon", 1.0)
    if func is dp.quantiles:
        return func(values, kw.pop("q", 0.5), **kw)
    kw.pop("q", None)
    return func(values, **kw)


BAD = [
    (dict(bounds=(1.0, 1.0)), ValueError, "bounds"),
    (dict(bounds=(5.0, 1.0)), ValueError, "bounds"),
    (dict(bounds=None), ValueError, "bounds"),
    (dict(bounds="auto"), ValueError, "bounds"),
    (dict(bounds=(0.0, 1.0, 2.0)), TypeError, "bounds"),
    (dict(bounds=3.0), TypeError, "bounds"),
    (dict(bounds=(0.0, math.nan)), ValueError, "bounds"),
    (dict(bounds=(-math.inf, 1.0)), ValueError, "bounds"),
    (dict(bounds=(-1e308, 1e308)), ValueError, "bounds"),
    (dict(privacy_unit=[1, 2]), ValueError, "privacy_unit"),
    (dict(privacy_unit=[1, 2, 3, 4]), ValueError, "privacy_unit"),
    (dict(privacy_unit=["a", None, "b"]), ValueError, "privacy_unit"),
    (dict(privacy_unit=np.array(["a", 1, "b"], dtype=object)), TypeError, "privacy_unit"),
    (dict(privacy_unit=[1.0, math.nan, 2.0]), ValueError, "privacy_unit"),
    (dict(privacy_unit=[1, 2, 3], max_rows=0), ValueError, "max_rows"),
    (dict(privacy_unit=[1, 2, 3], max_rows=-2), ValueError, "max_rows"),
    (dict(privacy_unit=[1, 2, 3], max_rows=1.5), TypeError, "max_rows"),
    (dict(privacy_unit=[1, 2, 3], max_rows="2"), TypeError, "max_rows"),
    (dict(max_rows=2), ValueError, "max_rows"),
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(epsilon=-1.0), ValueError, "epsilon"),
    (dict(epsilon=math.nan), ValueError, "epsilon"),
    (dict(epsilon="1"), TypeError, "epsilon"),
]
MOMENT_BAD = [
    (dict(noise="gaussian", epsilon=1.0), ValueError, "delta"),
    (dict(noise="gaussian", epsilon=None), ValueError, "rho"),
    (dict(noise="gaussian", epsilon=1.0, delta=0.0), ValueError, "delta"),
    (dict(noise="normal"), ValueError, "noise"),
    (dict(epsilon=1.0, delta=1e-6), ValueError, "delta"),
    (dict(epsilon=None), ValueError, "epsilon"),
]
QUANTILE_BAD = [
    (dict(q=1.5), ValueError, "'q'"),
    (dict(q=-0.1), ValueError, "'q'"),
    (dict(q=[0.5, math.nan]), ValueError, "'q'"),
    (dict(q=[]), ValueError, "'q'"),
    (dict(q="half"), (TypeError, ValueError), "'q'"),
    (dict(method="joint"), ValueError, "method"),
    (dict(epsilon=None), (TypeError, ValueError), "epsilon"),
]


def cases():
    for func in (dp.sum, dp.mean, dp.variance, dp.std, dp.median, dp.quantiles):
        extra = MOMENT_BAD if func in (dp.sum, dp.mean, dp.variance, dp.std) else []
        if func is dp.quantiles:
            extra = QUANTILE_BAD
        if func is dp.median:
            extra = [c for c in QUANTILE_BAD if "q" not in c[0] and "method" not in c[0]]
        for kw, err, name in BAD + extra:
            yield pytest.param(func, kw, err, name,
                               id=f"{func.__name__}-{'-'.join(f'{k}={v!r}'[:24] for k, v in kw.items())}")


@pytest.mark.parametrize("func, kw, err, name", list(cases()))
def test_bad_arguments_refused_before_any_charge(func, kw, err, name):
    acct, gen = dp.Accountant(10.0, 1e-3), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(err, match=name):
        call(func, accountant=acct, rng=gen, **kw)


@pytest.mark.parametrize("func", SCALARS + [dp.quantiles])
@pytest.mark.parametrize("bad, kind", [(math.nan, "NaN"), (math.inf, "infinite"),
                                       (-math.inf, "infinite")])
def test_nan_and_infinities_named_by_position_never_shown(func, bad, kind):
    acct, gen = dp.Accountant(), dp.ChaCha20(2)
    values = np.array([0.5, 123.456, 7.25, bad, 3.0])
    with spends_nothing(acct, gen), pytest.raises(ValueError) as info:
        call(func, values, accountant=acct, rng=gen)
    msg = str(info.value)
    assert "'values'" in msg and "index 3" in msg and kind in msg
    for shown in ("123.456", "7.25", "nan", "-inf"):
        assert shown not in msg
    assert not re.search(r"\binf\b", msg)


def test_privacy_unit_nulls_named_by_position_never_shown():
    acct, gen = dp.Accountant(), dp.ChaCha20(3)
    with spends_nothing(acct, gen), pytest.raises(ValueError) as info:
        dp.mean([1.0, 2.0, 3.0], bounds=BOUNDS, epsilon=1.0, accountant=acct, rng=gen,
                privacy_unit=["alice-secret", "bob-secret", None], max_rows=2)
    assert "index 2" in str(info.value) and "secret" not in str(info.value)


@pytest.mark.parametrize("unit", [[1, "a", "b"], [1, "1", 2]])
def test_privacy_unit_of_mixed_types_in_a_list_refused(unit):
    acct, gen = dp.Accountant(), dp.ChaCha20(4)
    with spends_nothing(acct, gen), pytest.raises(TypeError, match="privacy_unit"):
        dp.sum([1.0, 2.0, 3.0], bounds=BOUNDS, epsilon=1.0, privacy_unit=unit,
               max_rows=2, accountant=acct, rng=gen)


@pytest.mark.parametrize("ddof", ["1", -1, 1.5, None])
def test_bad_ddof_refused_before_any_charge(ddof):
    acct, gen = dp.Accountant(), dp.ChaCha20(5)
    with spends_nothing(acct, gen), pytest.raises((TypeError, ValueError), match="ddof"):
        dp.variance([1.0, 2.0, 3.0], bounds=BOUNDS, epsilon=1.0, ddof=ddof,
                    accountant=acct, rng=gen)


def test_quantiles_of_a_subnormal_interval_refused_or_released():
    acct, gen = dp.Accountant(), dp.ChaCha20(6)
    try:
        y = dp.median([0.0, 1e-320], bounds=(0.0, 5e-324 * 4), epsilon=1.0, accountant=acct,
                      rng=gen)
    except (TypeError, ValueError) as e:
        assert "bounds" in str(e) and acct.spent == (0.0, 0.0)
    else:
        assert 0.0 <= y <= 2e-323


def test_variance_with_ddof_is_numpys():
    x = np.array([9.0, 10.0, 9.5, 8.0])
    kw = dict(bounds=BOUNDS, epsilon=1e9, accountant=dp.Accountant(), rng=1)
    assert dp.variance(x, ddof=1, **kw) == pytest.approx(np.var(x, ddof=1), abs=1e-6)
    assert dp.std(x, ddof=1, **kw) == pytest.approx(np.std(x, ddof=1), abs=1e-6)


# -- the charge ----------------------------------------------------------------------------

@pytest.mark.parametrize("func", SCALARS + [dp.quantiles])
def test_one_charge_of_the_whole_epsilon(func, tmp_path):
    path = tmp_path / "l"
    acct = dp.Accountant(10.0, ledger=path)
    call(func, accountant=acct, rng=1, epsilon=0.75, q=[0.1, 0.5, 0.9])
    call(func, accountant=acct, rng=2, epsilon=0.5, q=[0.1, 0.5, 0.9],
         privacy_unit=[1, 1, 2], max_rows=2)
    assert acct.spent == (1.25, 0.0) and len(acct) == 2
    assert [e.epsilon for e in acct.ledger] == [0.75, 0.5]
    acct.close()
    again = dp.Accountant.from_ledger(path)
    assert len(again) == 2 and again.spent == (1.25, 0.0)
    again.close()


def test_gaussian_releases_paid_in_rho():
    acct = dp.Accountant(rho=1.0)
    dp.mean([1.0, 2.0], bounds=BOUNDS, noise="gaussian", rho=0.25, accountant=acct, rng=1)
    assert acct.spent.rho == pytest.approx(0.25, rel=1e-12) and len(acct) == 1
    dp.variance([1.0, 2.0], bounds=BOUNDS, noise="gaussian", epsilon=1.0, delta=1e-6,
                accountant=acct, rng=2)
    want = 0.25 + zcdp.rho_from_epsilon_delta(1.0, 1e-6)
    assert acct.spent.rho == pytest.approx(want, rel=1e-9)
    # A quantile states the exponential mechanism's zCDP cost, epsilon**2 / 8 per draw.
    dp.quantiles([1.0, 2.0], [0.2, 0.8], bounds=BOUNDS, epsilon=0.4, accountant=acct, rng=3)
    per = 0.4 / records.levels(2)
    assert acct.spent.rho == pytest.approx(want + 2 * per * per / 8, rel=1e-9)
    assert len(acct) == 3


@pytest.mark.parametrize("func, kw", [
    (dp.sum, {}), (dp.mean, {"privacy_unit": [1, 1, 2], "max_rows": 2}), (dp.std, {}),
    (dp.quantiles, {"q": [0.2, 0.5]}), (dp.median, {}),
    (dp.mean, {"noise": "gaussian", "epsilon": 0.6, "delta": 1e-6}),
])
def test_refused_budget_draws_nothing(func, kw):
    acct, gen = dp.Accountant(1.0, 1e-6), dp.ChaCha20(8)
    acct.spend(0.5)
    with spends_nothing(acct, gen), pytest.raises(dp.BudgetExceededError):
        call(func, accountant=acct, rng=gen, **{"epsilon": 0.6, **kw})
    zc, gen2 = dp.Accountant(rho=0.1), dp.ChaCha20(9)
    if func in (dp.sum, dp.mean, dp.std):
        with spends_nothing(zc, gen2), pytest.raises(dp.BudgetExceededError):
            call(func, accountant=zc, rng=gen2, noise="gaussian", epsilon=None, rho=0.2)


def test_charge_keys_hands_out_the_charge_key_first():
    """Release.charge_keys: one charge; the stream's first key is the one charge gives (the
    generator's next), then the generator's next keys; a second charge is refused, and the
    keys refuse copy and pickle."""
    acct, gen = dp.Accountant(), dp.ChaCha20(40)
    twin = dp.ChaCha20(40)
    rel = Release("test", acct, 0.5, 0.0, gen)
    keys = rel.charge_keys()
    assert acct.spent == (0.5, 0.0) and len(acct) == 1
    first = keys.next()
    assert bytes(first) == bytes(rel.key) == bytes(_native.Key(twin))
    assert bytes(keys.next()) == bytes(_native.Key(twin))
    assert bytes(keys.next()) == bytes(_native.Key(twin))
    assert rng_state(gen) == rng_state(twin)
    with pytest.raises(RuntimeError):
        rel.charge_keys()
    assert acct.spent == (0.5, 0.0) and len(acct) == 1
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError):
            attempt(keys)


def test_recursion_draws_its_middle_quantile_first_at_its_share():
    """dp.quantiles(x, [1/3, 2/3]) draws q = 2/3 first, on all the data, at epsilon / 2 (two
    levels): the gap of that output follows the exact single-draw probabilities (chi-square
    over 4,000 releases), and the other output lies at or below it."""
    x = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 6.0])
    bounds, eps = (0.0, 8.0), 2.0
    keys, g, top = grid_keys(x, bounds)
    s = np.sort(keys)
    logp, _ = em_log_probs(s, top, 2 / 3, (eps / 2) / (2 * (2 / 3)))
    acct, gen = dp.Accountant(), dp.ChaCha20(32)
    out = np.array([dp.quantiles(x, [1 / 3, 2 / 3], bounds=bounds, epsilon=eps,
                                 accountant=acct, rng=gen) for _ in range(4_000)])
    assert np.all(out[:, 0] <= out[:, 1])
    j = np.searchsorted(s, (out[:, 1] - bounds[0]) / g, side="left")
    obs, p = np.bincount(j, minlength=s.size + 1), np.exp(logp)
    assert np.all(obs[p == 0] == 0)
    assert stats.chisquare(obs[p > 0], p[p > 0] * j.size).pvalue > ALPHA


def test_the_rows_kept_do_not_depend_on_how_people_are_named():
    """Priorities are addressed by the row's position, so the same people under other ids
    (strings, huge or negative integers, uint64 beyond int64) keep the same rows: the same
    release. Empty data with an empty privacy unit is a release too."""
    x, person = column(12, 4_000)
    names = {
        "int": person,
        "str": np.array([f"user-{p}" for p in person], dtype=object),
        "huge": person.astype(np.int64) * -(2**40) - 2**62,
        "uint64": person.astype(np.uint64) + np.uint64(2**63 + 5),
    }
    for func in (dp.sum, dp.mean, dp.median):
        got = {k: func(x, bounds=BOUNDS, epsilon=1.0, privacy_unit=v, max_rows=2, rng=13,
                       accountant=dp.Accountant()) for k, v in names.items()}
        assert len(set(got.values())) == 1, got
    for func in SCALARS:
        out = func(np.empty(0), bounds=BOUNDS, epsilon=1.0, privacy_unit=[], max_rows=2,
                   rng=1, accountant=dp.Accountant())
        assert math.isfinite(out)


# -- accuracy, before a release ------------------------------------------------------------

def test_accuracy_states_the_noise_and_bounds_hold_in_simulation():
    """accuracy() charges nothing; the sum's std is its noise's (2 scale**2 for Laplace) and
    its bound is exceeded at most about beta of the time; the mean's worst-case std covers
    the simulated one; the median's rank bound holds in every simulated release."""
    x = np.random.default_rng(0).uniform(0, 100, 1000)
    acct = dp.Accountant()
    a = records.accuracy("sum", bounds=(0, 100), rows=1000, epsilon=1.0)
    assert a["std"] == pytest.approx(math.sqrt(2) * 100.0, rel=1e-3)
    errors = np.array([dp.sum(x, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=s)
                       - x.sum() for s in range(300)])
    # At most beta = 0.05 beyond the bound: false alarm 1e-4 allows 0.05 + 3.7 sigma.
    assert np.mean(np.abs(errors) > a["bound"]) <= 0.05 + 3.7 * math.sqrt(0.05 * 0.95 / 300)
    m = records.accuracy("mean", bounds=(0, 100), rows=1000, epsilon=1.0)
    means = [dp.mean(x, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=s) - x.mean()
             for s in range(150)]
    assert np.std(means) <= m["std"] * 1.2
    md = records.accuracy("median", bounds=(0, 100), rows=1000, epsilon=1.0)
    xs = np.sort(x)
    ranks = [abs(np.searchsorted(xs, dp.median(x, bounds=(0, 100), epsilon=1.0,
                                               accountant=acct, rng=s)) - 500)
             for s in range(50)]
    assert max(ranks) <= md["rank_bound"]
    v = records.accuracy("variance", bounds=(0, 100), rows=1000, epsilon=1.0)
    assert v["std"] > 0 and len(v["parts"]) == 3
    assert len(acct) == 300 + 150 + 50                   # accuracy() itself spent nothing


def test_accuracy_refuses_bad_arguments_by_name():
    with pytest.raises(ValueError, match="statistic"):
        records.accuracy("mode", bounds=(0, 1), rows=10, epsilon=1.0)
    with pytest.raises(ValueError, match="bounds"):
        records.accuracy("sum", bounds=(1, 1), rows=10, epsilon=1.0)
    with pytest.raises((TypeError, ValueError), match="rows"):
        records.accuracy("mean", bounds=(0, 1), rows=0, epsilon=1.0)
