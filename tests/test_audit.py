"""The empirical privacy auditor (dpfast.auditing): it flags the sparse-vector variants that
Lyu, Su & Li showed are not private (bound above 1.5 at a claimed epsilon of 1, 99 %
confidence), and stays below the claimed epsilon for dpfast's Laplace mechanism, report
noisy max, exponential mechanism and sparse vector objects. Fixed seeds; no timing
assertions."""
import numpy as np
import pytest

import dpfast as dp
from dpfast import auditing
from dpfast.mechanisms.sparse_vector import sample_runs

BROKEN = ["svt_no_threshold_noise", "svt_no_halting", "svt_small_query_noise"]
CORRECT = ["laplace", "above_threshold", "sparse", "report_noisy_max",
           "exponential_mechanism"]


@pytest.mark.parametrize("name", BROKEN)
def test_broken_sparse_vector_variants_are_flagged(name):
    result = auditing.run_case(name, rng=1)
    assert auditing.CASES[name].broken
    assert result.epsilon_lower_bound > 1.5 and result.violated
    assert result.confidence == 0.99 and result.samples == 4_000_000


@pytest.mark.parametrize("name", CORRECT)
def test_dpfast_mechanisms_pass(name):
    samples = 100_000 if name in ("report_noisy_max", "exponential_mechanism") else None
    result = auditing.run_case(name, samples=samples, rng=2)
    assert not auditing.CASES[name].broken
    assert result.epsilon_lower_bound < 1.0 and not result.violated


def test_the_laplace_bound_is_tight_with_many_samples():
    # The event {out >= t} (t >= 1) has a likelihood ratio of exactly e: the bound comes
    # close to epsilon from below.
    result = auditing.run_case("laplace", samples=8_000_000, rng=3)
    assert 0.93 < result.epsilon_lower_bound < 1.0


def test_a_mechanism_with_half_the_noise_is_caught():
    def half_noise(x, n, rng):           # claims epsilon 1, really epsilon 2
        return x + dp.laplace(0.5, n, rng=rng)
    result = dp.audit(half_noise, 0.0, 1.0, samples=1_000_000, epsilon=1.0, rng=4)
    assert result.violated and result.epsilon_lower_bound > 1.8


def test_delta_weakens_the_bound():
    def half_noise(x, n, rng):
        return x + dp.laplace(0.5, n, rng=rng)
    strict = dp.audit(half_noise, 0.0, 1.0, samples=400_000, rng=5)
    loose = dp.audit(half_noise, 0.0, 1.0, samples=400_000, delta=0.05, rng=5)
    assert loose.epsilon_lower_bound < strict.epsilon_lower_bound


def test_sample_runs_are_the_objects_answers():
    q = np.array([1.0, 2.0, 9.0, 3.0, 12.0, 0.5])
    for seed in range(30):
        obj = dp.Sparse(5.0, epsilon=1.0, cutoff=2, accountant=dp.Accountant(), rng=seed)
        answers = obj.query(q)
        runs = sample_runs(q, 5.0, epsilon=1.0, cutoff=2, runs=1, rng=seed)[0]
        assert np.array_equal(runs[:answers.size], answers.astype(np.int8))
        assert np.all(runs[answers.size:] == -1)


def test_sample_runs_check_their_arguments_as_the_objects_do():
    for kwargs, exc, name in [({"threshold": True}, TypeError, "threshold"),
                              ({"epsilon": 0.0}, ValueError, "epsilon"),
                              ({"cutoff": 0}, ValueError, "cutoff"),
                              ({"shares": (0.5, 0.6)}, ValueError, "shares"),
                              ({"runs": 0}, ValueError, "runs")]:
        args = {"threshold": 0.0, "epsilon": 1.0, "runs": 10, **kwargs}
        with pytest.raises(exc, match=f"'{name}'"):
            sample_runs([1.0, 2.0], args.pop("threshold"), **args)


def test_sample_runs_charge_nothing():
    acct = dp.default_accountant()
    before = acct.spent
    sample_runs([1.0, 2.0], 0.0, epsilon=1.0, runs=100, rng=1)
    assert acct.spent == before


def test_result_text_and_fields():
    result = auditing.run_case("svt_no_halting", samples=1_000_000, rng=6)
    text = str(result)
    assert "VIOLATED" in text and "favouring" in text and "1,000,000 samples" in text
    assert 0 < result.p_neighbour < result.p <= 1


def test_same_seed_same_result():
    a = auditing.run_case("above_threshold", samples=200_000, rng=7)
    b = auditing.run_case("above_threshold", samples=200_000, rng=7)
    assert a == b


def _ok(x, n, rng):
    return x + dp.laplace(1.0, n, rng=rng)


@pytest.mark.parametrize("kwargs, exc, name", [
    ({"mechanism": 3}, TypeError, "mechanism"),
    ({"samples": 999}, ValueError, "samples"), ({"samples": 1.5}, TypeError, "samples"),
    ({"epsilon": 0.0}, ValueError, "epsilon"), ({"delta": 1.0}, ValueError, "delta"),
    ({"confidence": 1.0}, ValueError, "confidence"), ({"confidence": 0}, ValueError, "confidence"),
    ({"thresholds": 0}, ValueError, "thresholds"),
    ({"mechanism": lambda x, n, rng: np.zeros(n + 1)}, ValueError, "mechanism"),
    ({"mechanism": lambda x, n, rng: np.zeros((n, 2))}, TypeError, "mechanism"),
    ({"mechanism": lambda x, n, rng: np.full(n, np.nan)}, ValueError, "mechanism"),
    ({"mechanism": lambda x, n, rng: np.array(["a"] * n)}, TypeError, "mechanism"),
    ({"rng": "seed"}, TypeError, "rng"),
])
def test_bad_arguments(kwargs, exc, name):
    args = {"mechanism": _ok, "samples": 10_000, "rng": 1, **kwargs}
    with pytest.raises(exc, match=f"'{name}'"):
        dp.audit(args.pop("mechanism"), 0.0, 1.0, **args)


def test_unknown_case():
    with pytest.raises(ValueError, match="'name'"):
        auditing.run_case("svt_fine")
