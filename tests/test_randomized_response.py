"""Randomized response: exact epsilons, response rates against the exact probabilities,
estimator unbiasedness and variance, accounting, bad input, reproducibility and scale.

Statistical tests use fixed seeds, so they are deterministic; each comment states the
false-alarm rate alpha the test would have for a random seed (1e-4 unless said otherwise).
"""
import math

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpfast as dp
from dpfast import (randomized_response, randomized_response_categorical,
                    rr_categorical_probabilities, rr_epsilon, rr_estimate_counts,
                    rr_estimate_proportion, rr_proportion_variance, rr_response_probabilities)
from refusals import spends_nothing

ALPHA = 1e-4
mpmath.mp.prec = 200


def exact_ratio_log(p):
    """ln of the largest response ratio of the two-coin scheme, at 200 bits."""
    p = mpmath.mpf(p)                          # the double, exactly
    l10, l11 = (1 - p) * p, p + (1 - p) * p
    return mpmath.log(max(l11 / l10, (1 - l10) / (1 - l11)))


# -- exact epsilons --------------------------------------------------------------------------

def test_fair_coins_give_ln3():
    eps = rr_epsilon(0.5)
    assert math.log(3) <= eps <= math.log(3) * (1 + 4 * 2.0**-52)


def test_p08_gives_ln21():
    # 0.8 is not a double: the exact loss is that of the double nearest 0.8, within 1e-15
    # of ln 21; rr_epsilon rounds it up by a few ulps.
    assert math.isclose(rr_epsilon(0.8), math.log(21), rel_tol=1e-14)
    assert rr_epsilon(0.8) >= exact_ratio_log(0.8)


@pytest.mark.parametrize("p", [0.5, 0.6, 0.75, 0.8, 0.9, 0.99, 1 - 2.0**-30, 1 - 2.0**-53])
def test_epsilon_formula_above_half(p):
    # ln(1 + p/(1-p)^2) for p >= 1/2, never below the exact loss, at most 4 ulps above.
    exact = exact_ratio_log(p)
    assert exact == mpmath.log(1 + mpmath.mpf(p) / (1 - mpmath.mpf(p))**2)
    eps = rr_epsilon(p)
    assert exact <= eps <= exact * (1 + 4 * 2.0**-52)


@pytest.mark.parametrize("p", [1e-300, 0.1, 0.25, 0.49])
def test_epsilon_formula_below_half(p):
    # Below 1/2 the "1" response has the larger ratio, (2 - p)/(1 - p): p = 0.25 -> ln(7/3).
    exact = exact_ratio_log(p)
    mp = mpmath.mpf(p)
    assert exact == mpmath.log((2 - mp) / (1 - mp))
    assert exact <= rr_epsilon(p) <= exact * (1 + 4 * 2.0**-52)
    if p == 0.25:
        assert math.isclose(rr_epsilon(p), math.log(7 / 3), rel_tol=1e-15)


@pytest.mark.parametrize("eps", [1e-300, 1e-8, 0.1, 1.0, math.log(3), 5.0, 36.0, 50.0, 1e4])
@pytest.mark.parametrize("k", [2, 3, 10, 1000])
def test_keep_probability_is_eps_dp(eps, k):
    # The double q the coins use has odds q (k-1)/(1-q) <= e^eps exactly (so charging eps
    # is sound) and is within a few ulps of e^eps/(e^eps + k - 1) while that is below 1.
    q, r = rr_categorical_probabilities(k, epsilon=eps)
    mq = mpmath.mpf(q)
    assert mq * (k - 1) / (1 - mq) <= mpmath.exp(eps)
    ideal = 1 / (1 + (k - 1) * mpmath.exp(-eps))
    if ideal < 1 - 2.0**-40:
        assert abs(mq - ideal) <= 8 * 2.0**-53 * ideal
    assert 0 < q < 1 and math.isclose(r, (1 - q) / (k - 1))


def test_binary_probabilities():
    assert rr_response_probabilities(p=0.5) == (0.25, 0.75)
    lo, hi = rr_response_probabilities(p=0.8)
    assert math.isclose(lo, 0.16) and math.isclose(hi, 0.96)
    lo, hi = rr_response_probabilities(epsilon=math.log(3))
    assert math.isclose(lo, 0.25) and math.isclose(hi, 0.75)
    assert lo + hi == 1.0
    # The symmetric scheme at eps is the k-ary scheme with k = 2.
    assert hi == rr_categorical_probabilities(2, epsilon=math.log(3))[0]


# -- accounting ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, charge", [({"p": 0.5}, rr_epsilon(0.5)),
                                        ({"p": 0.8}, rr_epsilon(0.8)),
                                        ({"epsilon": 0.7}, 0.7)])
def test_charged_once(kw, charge):
    acct = dp.Accountant()
    randomized_response(np.ones(10**5, dtype=bool), **kw, accountant=acct, rng=1)
    assert acct.ledger == [(charge, 0.0, "randomized_response")]


def test_categorical_charged_once():
    acct = dp.Accountant()
    randomized_response_categorical(np.arange(10**5) % 7, 7, epsilon=0.3, accountant=acct,
                                    rng=1)
    assert acct.ledger == [(0.3, 0.0, "randomized_response_categorical")]


def test_default_accountant_context():
    acct = dp.Accountant()
    with acct:
        randomized_response([0, 1], p=0.5, rng=1)
    assert acct.spent[0] == rr_epsilon(0.5)


def test_budget_exceeded_draws_nothing():
    acct = dp.Accountant(epsilon=1.0)            # ln 3 > 1
    g = dp.ChaCha20(9)
    with spends_nothing(acct, g), pytest.raises(dp.BudgetExceededError):
        randomized_response([0, 1], p=0.5, accountant=acct, rng=g)
    assert acct.spent == (0.0, 0.0)


# -- response rates against the exact probabilities --------------------------------------------

@pytest.mark.parametrize("kw", [{"p": 0.5}, {"p": 0.8}, {"p": 0.3}, {"epsilon": 1.0},
                                {"epsilon": 0.05}])
def test_binary_response_rates(kw):
    # Two binomial tests (true 0s, true 1s), each at alpha/2: alpha = 1e-4 overall.
    n = 200_000
    truth = np.repeat(np.array([0, 1], dtype=np.uint8), n)
    noisy = randomized_response(truth, **kw, accountant=dp.Accountant(), rng=2024)
    lam0, lam1 = rr_response_probabilities(**kw)
    for ones, lam in ((int(noisy[:n].sum()), lam0), (int(noisy[n:].sum()), lam1)):
        assert stats.binomtest(ones, n, lam).pvalue > ALPHA / 2


def test_two_coin_rates_are_the_textbook_ones():
    # p = 0.5: yes-rate 1/4 for a true no, 3/4 for a true yes (Dwork & Roth, section 3.2).
    lam0, lam1 = rr_response_probabilities(p=0.5)
    assert (lam0, lam1) == (0.25, 0.75)


@pytest.mark.parametrize("k, eps", [(2, 1.0), (5, 1.0), (12, 0.5), (3, 4.0)])
def test_categorical_response_rates(k, eps):
    # One chi-square goodness-of-fit test per true category, each at alpha/k: alpha overall.
    n = 200_000
    truth = np.repeat(np.arange(k), n)
    codes = randomized_response_categorical(truth, k, epsilon=eps,
                                            accountant=dp.Accountant(), rng=77 + k)
    q, r = rr_categorical_probabilities(k, epsilon=eps)
    for c in range(k):
        observed = np.bincount(codes[c * n:(c + 1) * n], minlength=k)
        expected = np.full(k, r * n)
        expected[c] = q * n
        expected *= n / expected.sum()           # the sum is n up to rounding
        assert stats.chisquare(observed, expected).pvalue > ALPHA / k


def test_categorical_values_and_order():
    cats = ["red", "green", "blue"]
    vals = np.array(["blue", "red", "red", "green"] * 1000)
    codes = randomized_response_categorical(vals, cats, epsilon=40.0,
                                            accountant=dp.Accountant(), rng=3)
    # At eps = 40 the lie probability is below 2^-53 per respondent: the codes are the
    # true indices into `cats`, in the order given (not sorted).
    assert codes.dtype == np.int64 and codes.shape == vals.shape
    assert (np.asarray(cats)[codes] == vals).all()


def test_categorical_shape_and_int_categories():
    vals = (np.arange(24) % 4).reshape(2, 3, 4)
    codes = randomized_response_categorical(vals, 4, epsilon=1.0,
                                            accountant=dp.Accountant(), rng=1)
    assert codes.shape == (2, 3, 4) and codes.min() >= 0 and codes.max() < 4


def test_categorical_pandas():
    pd = pytest.importorskip("pandas")
    s = pd.Series(["a", "b", "a"], dtype="category")
    codes = randomized_response_categorical(s, ["b", "a"], epsilon=40.0,
                                            accountant=dp.Accountant(), rng=1)
    assert codes.tolist() == [1, 0, 1]


# -- estimators ------------------------------------------------------------------------------

RUNS = 1000


def _proportion_runs(kw, n=2000, ones=600, seed=5):
    truth = np.zeros(n, dtype=np.uint8)
    truth[:ones] = 1
    g = dp.ChaCha20(seed)
    acct = dp.Accountant()
    res = np.array([rr_estimate_proportion(randomized_response(truth, **kw, accountant=acct,
                                                               rng=g), **kw)
                    for _ in range(RUNS)])
    return res[:, 0], res[:, 1], ones / n, n


@pytest.mark.parametrize("kw", [{"p": 0.5}, {"p": 0.8}, {"p": 0.3}, {"epsilon": 1.0},
                                {"epsilon": 0.2}])
def test_proportion_estimator(kw):
    est, var_hat, pi, n = _proportion_runs(kw)
    err = est - pi
    # Acceptance: the mean error over 1,000 runs is within 3 standard errors of zero
    # (alpha = 0.0027 for a random seed).
    se = err.std(ddof=1) / math.sqrt(RUNS)
    assert abs(err.mean()) < 3 * se
    # The exact variance matches the empirical one: the sample variance of 1,000 near-normal
    # estimates has relative standard deviation sqrt(2/999) = 0.045; tolerance 0.2 is 4.5 of
    # them (alpha < 1e-5).
    true_var = rr_proportion_variance(pi, n, **kw)
    assert abs(err.var(ddof=1) / true_var - 1) < 0.2
    # The variance estimate is unbiased (mean within 3 of its standard errors; alpha 0.0027)
    # and never negative. (At p = 1/2 and in the symmetric scheme it does not depend on the
    # data, hence the rounding allowance.)
    assert abs(var_hat.mean() - true_var) < \
        3 * var_hat.std(ddof=1) / math.sqrt(RUNS) + 1e-12 * true_var
    assert (var_hat >= 0).all()


def test_proportion_variance_formula():
    # p = 1/2: l0 = 1/4, l1 = 3/4, every respondent's response has variance 3/16 -> 3/(4n).
    assert math.isclose(rr_proportion_variance(0.5, 1000, p=0.5), 3 / 4 / 1000)
    assert math.isclose(rr_proportion_variance(0.0, 1000, p=0.5), 3 / 4 / 1000)
    # Symmetric: Var = q(1-q)/(n (2q-1)^2), whatever the proportion.
    q = rr_response_probabilities(epsilon=1.0)[1]
    for pi in (0.0, 0.3, 1.0):
        assert math.isclose(rr_proportion_variance(pi, 10, epsilon=1.0),
                            q * (1 - q) / (10 * (2 * q - 1)**2))


@pytest.mark.parametrize("kw", [{"p": 0.8}, {"epsilon": 1.0}])
def test_proportion_variance_estimate_extremes(kw):
    # All-0 and all-1 responses: the estimate leaves [0, 1], its variance estimate stays >= 0.
    for bits in (np.zeros(50), np.ones(50)):
        est, var = rr_estimate_proportion(bits, **kw)
        assert var >= 0


def test_counts_estimator():
    k, eps = 4, 1.0
    true_counts = np.array([900, 600, 300, 200])
    truth = np.repeat(np.arange(k), true_counts)
    n = truth.size
    g = dp.ChaCha20(8)
    acct = dp.Accountant()
    ests, var_hats = [], []
    for _ in range(RUNS):
        codes = randomized_response_categorical(truth, k, epsilon=eps, accountant=acct,
                                                rng=g)
        e, v = rr_estimate_counts(codes, k, epsilon=eps)
        ests.append(e)
        var_hats.append(v)
    ests, var_hats = np.array(ests), np.array(var_hats)
    assert np.allclose(ests.sum(axis=1), n)      # the estimates always sum to n
    err = ests - true_counts
    # Acceptance, per category: mean error within 3 standard errors (alpha 0.0027 each).
    se = err.std(axis=0, ddof=1) / math.sqrt(RUNS)
    assert (np.abs(err.mean(axis=0)) < 3 * se).all()
    # Exact variance vs empirical (tolerance 0.2 = 4.5 relative standard deviations).
    q, r = rr_categorical_probabilities(k, epsilon=eps)
    d = q - r
    exact = (n * r * (1 - r) + true_counts * d * (1 - q - r)) / d**2
    assert (np.abs(err.var(axis=0, ddof=1) / exact - 1) < 0.2).all()
    # Unbiased variance estimates.
    vse = var_hats.std(axis=0, ddof=1) / math.sqrt(RUNS)
    assert (np.abs(var_hats.mean(axis=0) - exact) < 3 * vse + 1e-9 * exact).all()
    # Empirical covariance matches the estimated covariance (off-diagonal too): entries
    # within 0.15 of the geometric mean of the variances (correlation error ~ 4.7 SDs).
    e, cov = rr_estimate_counts(codes, k, epsilon=eps, covariance=True)
    emp = np.cov(err, rowvar=False)
    scale = np.sqrt(np.outer(exact, exact))
    assert (np.abs(emp - cov) < 0.15 * scale).all()


def test_counts_covariance_structure():
    codes = np.array([0, 1, 2, 2, 1, 0, 0, 3] * 50)
    est, var = rr_estimate_counts(codes, 4, epsilon=1.5)
    est2, cov = rr_estimate_counts(codes, 4, epsilon=1.5, covariance=True)
    assert np.array_equal(est, est2)
    assert np.allclose(np.diag(cov), var)
    assert np.allclose(cov, cov.T)
    # The estimates sum to n exactly, so each row of the covariance sums to zero.
    assert np.allclose(cov.sum(axis=1), 0, atol=1e-9 * var.max())
    assert np.linalg.eigvalsh(cov).min() > -1e-9 * var.max()


def test_counts_variance_never_negative():
    # Every response in one category: the extreme estimates, variance still >= 0.
    for k, eps in ((2, 0.1), (5, 3.0), (50, 8.0)):
        est, var = rr_estimate_counts(np.zeros(100, dtype=np.int64), k, epsilon=eps)
        assert (var >= 0).all()


# -- bad input -------------------------------------------------------------------------------

BAD_RR = [
    # A bad bit is named by its position, never its value (messages end up in logs).
    ({"bits": [0, 1, 2], "p": 0.5}, ValueError, ["'bits'", "an entry at index 2 is not 0"]),
    ({"bits": [0.0, np.nan], "p": 0.5}, ValueError, ["'bits'", "index 1 is not 0 or 1"]),
    ({"bits": [[0, 1], [1, -1]], "epsilon": 1.0}, ValueError, ["'bits'", "index (1, 1)"]),
    ({"bits": [0, 0.5], "epsilon": 1.0}, ValueError, ["'bits'", "index 1 is not 0 or 1"]),
    ({"bits": ["0", "1"], "epsilon": 1.0}, TypeError, ["'bits'"]),
    ({"bits": [0, None], "epsilon": 1.0}, TypeError, ["'bits'"]),
    ({"bits": [0, 1], "p": 0.5, "epsilon": 1.0}, ValueError, ["'p'", "'epsilon'", "0.5"]),
    ({"bits": [0, 1]}, ValueError, ["'p'", "'epsilon'", "None"]),
    ({"bits": [0, 1], "p": 1.0}, ValueError, ["'p'", "1.0"]),
    ({"bits": [0, 1], "p": 0.0}, ValueError, ["'p'", "0.0"]),
    ({"bits": [0, 1], "p": 1.5}, ValueError, ["'p'", "1.5"]),
    ({"bits": [0, 1], "p": math.nan}, ValueError, ["'p'", "nan"]),
    ({"bits": [0, 1], "p": "0.5"}, TypeError, ["'p'", "'0.5'"]),
    ({"bits": [0, 1], "epsilon": 0.0}, ValueError, ["'epsilon'", "0.0"]),
    ({"bits": [0, 1], "epsilon": -1.0}, ValueError, ["'epsilon'", "-1.0"]),
    ({"bits": [0, 1], "epsilon": math.inf}, ValueError, ["'epsilon'", "inf"]),
    ({"bits": [0, 1], "epsilon": 1.0, "threads": 0}, ValueError, ["'threads'", "0"]),
    ({"bits": [0, 1], "epsilon": 1.0, "accountant": "a"}, TypeError, ["'accountant'"]),
]


@pytest.mark.parametrize("kw, exc, parts", BAD_RR)
def test_bad_input_binary(kw, exc, parts):
    acct = dp.Accountant()
    g = dp.ChaCha20(4)
    kw = dict(kw)
    bits = kw.pop("bits")
    kw.setdefault("accountant", acct)
    with spends_nothing(acct, g), pytest.raises(exc) as info:
        randomized_response(bits, rng=g, **kw)
    msg = str(info.value)
    assert "randomized_response" in msg
    for part in parts:
        assert part in msg
    assert acct.spent == (0.0, 0.0)


BAD_CAT = [
    ({"values": ["a", "z"], "categories": ["a", "b"]}, ValueError, ["'values'", "record 1"]),
    ({"values": [0, 3], "categories": 3}, ValueError, ["'values'", "record 1"]),
    ({"values": np.array([0, 1, -1]), "categories": 3}, ValueError,
     ["'values'", "record 2"]),
    ({"values": np.array([2**63], dtype=np.uint64), "categories": 3}, ValueError,
     ["'values'", "record 0"]),
    ({"values": ["a"], "categories": ["a"]}, ValueError, ["'categories'", "a list of 1"]),
    ({"values": ["a"], "categories": ["a", "a"]}, ValueError, ["'categories'", "repeat"]),
    ({"values": [1.0], "categories": [1.0, math.nan]}, ValueError, ["'categories'", "NaN"]),
    ({"values": [0], "categories": 1}, ValueError, ["'k'", "1"]),
    ({"values": [0], "categories": True}, TypeError, ["'categories'", "a bool"]),
    ({"values": ["a"], "categories": "ab"}, TypeError, ["'categories'", "a str of 2"]),
    ({"values": ["a"], "categories": {"a", "b"}}, TypeError, ["'categories'"]),
    ({"values": [0], "categories": 2, "epsilon": 0.0}, ValueError, ["'epsilon'", "0.0"]),
    ({"values": [0], "categories": 2, "epsilon": None}, TypeError, ["'epsilon'", "None"]),
]


@pytest.mark.parametrize("kw, exc, parts", BAD_CAT)
def test_bad_input_categorical(kw, exc, parts):
    acct = dp.Accountant()
    g = dp.ChaCha20(4)
    kw = dict(kw)
    kw.setdefault("epsilon", 1.0)
    with spends_nothing(acct, g), pytest.raises(exc) as info:
        randomized_response_categorical(kw.pop("values"), kw.pop("categories"),
                                        accountant=acct, rng=g, **kw)
    for part in parts:
        assert part in str(info.value)
    assert acct.spent == (0.0, 0.0)


def test_categorical_error_does_not_show_the_value():
    # Error messages end up in logs: the offending private value is not repeated.
    with pytest.raises(ValueError) as info:
        randomized_response_categorical(["a", "secret-diagnosis"], ["a", "b"], epsilon=1.0,
                                        accountant=dp.Accountant(), rng=1)
    assert "secret-diagnosis" not in str(info.value)


@pytest.mark.parametrize("call, exc, parts", [
    (lambda: rr_epsilon(1.0), ValueError, ["'p'", "1.0"]),
    (lambda: rr_epsilon(True), TypeError, ["'p'", "True"]),
    (lambda: rr_estimate_proportion([0, 1]), ValueError, ["'p'", "'epsilon'"]),
    (lambda: rr_estimate_proportion([0, 2], p=0.5), ValueError,
     ["'noisy_bits'", "index 1 is not 0 or 1"]),
    (lambda: rr_estimate_proportion([], p=0.5), ValueError, ["'noisy_bits'", "empty"]),
    (lambda: rr_proportion_variance(1.5, 10, p=0.5), ValueError, ["'proportion'", "1.5"]),
    (lambda: rr_proportion_variance(0.5, 0, p=0.5), ValueError, ["'n'", "0"]),
    (lambda: rr_estimate_counts([0, 5], 3, epsilon=1.0), ValueError,
     ["'noisy_codes'", "[0, 3)", "index 1 is outside"]),
    (lambda: rr_estimate_counts([0, -1], 3, epsilon=1.0), ValueError,
     ["'noisy_codes'", "index 1 is outside"]),
    (lambda: rr_estimate_counts([0.5], 3, epsilon=1.0), TypeError, ["'noisy_codes'"]),
    (lambda: rr_estimate_counts([], 3, epsilon=1.0), ValueError, ["'noisy_codes'", "empty"]),
    (lambda: rr_estimate_counts([0], 1, epsilon=1.0), ValueError, ["'k'", "1"]),
    (lambda: rr_estimate_counts([0], 2.0, epsilon=1.0), TypeError, ["'k'", "2.0"]),
    (lambda: rr_estimate_counts([0], 2, epsilon=-1.0), ValueError, ["'epsilon'", "-1.0"]),
    (lambda: rr_estimate_counts([0], 2, epsilon=1.0, covariance=1), TypeError,
     ["'covariance'", "1"]),
    (lambda: rr_categorical_probabilities(1, epsilon=1.0), ValueError, ["'k'", "1"]),
])
def test_bad_input_helpers(call, exc, parts):
    with pytest.raises(exc) as info:
        call()
    for part in parts:
        assert part in str(info.value)


# -- inputs, outputs, reproducibility, scale ---------------------------------------------------

def test_input_forms():
    a = dp.Accountant()
    out = randomized_response(np.array([True, False, True]), epsilon=40.0, accountant=a,
                              rng=1)
    assert out.dtype == np.uint8 and out.tolist() == [1, 0, 1]   # eps = 40: no flips
    assert randomized_response([1.0, 0.0], epsilon=40.0, accountant=a, rng=1).tolist() == \
        [1, 0]
    assert randomized_response(np.zeros((3, 2), dtype=np.int8), p=0.5, accountant=a,
                               rng=1).shape == (3, 2)
    scalar = randomized_response(1, p=0.5, accountant=a, rng=1)
    assert isinstance(scalar, int) and scalar in (0, 1)
    empty = randomized_response([], p=0.5, accountant=a, rng=1)
    assert empty.shape == (0,) and empty.dtype == np.uint8


def test_reproducible_with_seed_and_threads():
    bits = (np.arange(300_001) % 3 == 0)
    for kw in ({"p": 0.8}, {"epsilon": 0.5}):
        a = randomized_response(bits, **kw, accountant=dp.Accountant(), rng=42, threads=1)
        b = randomized_response(bits, **kw, accountant=dp.Accountant(), rng=42, threads=2)
        c = randomized_response(bits, **kw, accountant=dp.Accountant(), rng=43)
        assert np.array_equal(a, b) and not np.array_equal(a, c)
    vals = np.arange(300_001) % 6
    a = randomized_response_categorical(vals, 6, epsilon=1.0, accountant=dp.Accountant(),
                                        rng=42, threads=1)
    b = randomized_response_categorical(vals, 6, epsilon=1.0, accountant=dp.Accountant(),
                                        rng=dp.default_rng(42), threads=2)
    assert np.array_equal(a, b)


def test_generator_advances():
    # Passing one generator to successive calls gives fresh coins each time.
    g = dp.ChaCha20(1)
    bits = np.zeros(1000, dtype=np.uint8)
    a = randomized_response(bits, p=0.5, accountant=dp.Accountant(), rng=g)
    b = randomized_response(bits, p=0.5, accountant=dp.Accountant(), rng=g)
    assert not np.array_equal(a, b)


def test_ten_million_bits():
    # Several kernel chunks; no timing assert (about a second on two cores).
    n = 10**7
    bits = np.zeros(n, dtype=np.uint8)
    bits[: n // 4] = 1
    for kw in ({"p": 0.8}, {"epsilon": 1.0}):
        noisy = randomized_response(bits, **kw, accountant=dp.Accountant(), rng=10)
        assert noisy.shape == (n,)
        est, var = rr_estimate_proportion(noisy, **kw)
        assert abs(est - 0.25) < 5 * math.sqrt(var)       # alpha 6e-7
    codes = randomized_response_categorical(np.arange(n) % 10, 10, epsilon=1.0,
                                            accountant=dp.Accountant(), rng=10)
    counts, var = rr_estimate_counts(codes, 10, epsilon=1.0)
    # Bonferroni over 10 categories at 5 SDs each: alpha 6e-6.
    assert (np.abs(counts - n / 10) < 5 * np.sqrt(var)).all()
