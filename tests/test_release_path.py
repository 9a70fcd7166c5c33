"""The release path, for every public mechanism: bad input spends nothing and draws nothing.

Every mechanism goes through ``dpfast._release.release``: arguments are checked (the data,
the privacy parameters, any ``out=`` array), then the accountant is charged, then one kernel
draws. Each case below is a call with one bad argument; it must raise ``TypeError`` or
``ValueError`` with the accountant's total and ledger and the generator's position exactly as
they were. The same call with good arguments must spend and draw, so the check cannot pass
by never reaching the release. A budget refusal draws nothing either.
"""
import inspect

import numpy as np
import pytest

import dpfast as dp
from refusals import rng_state, spends_nothing

NAN, INF = float("nan"), float("inf")
VE, TE = ValueError, TypeError

COUNTS = np.array([[3, 0, 7], [1, 2, 5]])
VOTES = np.array([49.0, 25.0, 6.0, 2.0])
BITS = np.array([1, 0, 1, 1])
AGES = np.array([23, 35, 47, 61])
PEOPLE = np.array([[30.0, 0.0], [41.0, 1.0], [67.0, 1.0]])

# name -> (good keyword arguments, [(overrides, exception), ...]); a value of DELETE removes a
# keyword argument.
DELETE = object()
COMMON_BAD = [({"epsilon": 0.0}, VE), ({"epsilon": -1.0}, VE), ({"epsilon": NAN}, VE),
              ({"epsilon": INF}, VE), ({"epsilon": "1"}, TE), ({"rng": "seed"}, TE),
              ({"rng": np.random.default_rng(1)}, TE), ({"threads": 0}, VE),
              ({"threads": 1.5}, TE), ({"accountant": "acct"}, TE)]
SENSITIVITY_BAD = [({"sensitivity": 0.0}, VE), ({"sensitivity": -1.0}, VE),
                   ({"sensitivity": NAN}, VE), ({"sensitivity": "1"}, TE)]

MECHANISMS = {
    "laplace_mechanism": (
        {"value": 5, "sensitivity": 1.0, "epsilon": 1.0},
        COMMON_BAD + SENSITIVITY_BAD + [
            ({"value": NAN}, VE), ({"value": [1.0, INF]}, VE), ({"value": "5"}, TE),
            ({"value": True}, TE), ({"value": [1 + 2j]}, TE), ({"value": 2**70}, VE),
            ({"value": np.array([1e300])}, VE), ({"value": [object()]}, TE)]),
    "gaussian_mechanism": (
        {"value": [1.0, 2.0], "sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-6},
        COMMON_BAD + SENSITIVITY_BAD + [
            ({"delta": 0.0}, VE), ({"delta": 1.0}, VE), ({"delta": NAN}, VE),
            ({"value": [NAN]}, VE), ({"calibration": "exact"}, VE),
            ({"calibration": "classic", "epsilon": 2.0}, VE)]),
    "histogram": (
        {"data": AGES, "bins": 4, "range": (0, 100), "epsilon": 1.0},
        COMMON_BAD + [
            ({"bins": "auto"}, VE), ({"range": DELETE}, VE), ({"bins": 0}, VE),
            ({"bins": [0, 50, 20]}, VE), ({"range": (5, 5)}, VE),
            ({"data": [1.0, NAN]}, VE), ({"data": ["a"]}, TE),
            ({"postprocess": "round"}, VE), ({"total": 10}, VE)]),
    "histogramdd": (
        {"sample": PEOPLE, "bins": [4, 2], "range": [(0, 100), (0, 2)], "epsilon": 1.0},
        COMMON_BAD + [
            ({"range": DELETE}, VE), ({"bins": [4]}, VE), ({"sample": [[1.0, NAN]]}, VE),
            ({"sample": np.zeros((2, 2, 2))}, VE), ({"bins": "auto"}, VE)]),
    "count_categories": (
        {"values": ["a", "b", "a"], "categories": ["a", "b"], "epsilon": 1.0},
        COMMON_BAD + [
            ({"values": ["a", "c"]}, VE), ({"categories": "ab"}, TE),
            ({"categories": {"a", "b"}}, TE), ({"categories": ["a", "a"]}, VE),
            ({"other": 1}, TE)]),
    "noisy_counts": (
        {"counts": COUNTS, "epsilon": 1.0},
        COMMON_BAD + SENSITIVITY_BAD + [
            ({"counts": [1.0, NAN]}, VE), ({"counts": ["a"]}, TE),
            ({"out": np.empty((2, 3), dtype=np.float64)}, VE),
            ({"out": np.empty((3, 2), dtype=np.int64)}, VE),
            ({"out": np.empty((2, 3), dtype=np.int16)}, VE),
            ({"out": np.empty((3, 2), dtype=np.int64).T}, VE),
            ({"out": np.lib.stride_tricks.as_strided(np.zeros(6, np.int64), (2, 3), (0, 8))},
             VE),
            ({"out": [[0] * 3] * 2}, TE), ({"postprocess": "consistent",
                                             "out": np.empty((2, 3), dtype=np.int64)}, VE),
            ({"progress": "yes"}, TE)]),
    "randomized_response": (
        {"bits": BITS, "p": 0.5},
        [c for c in COMMON_BAD if "epsilon" not in c[0]] + [
            ({"p": 0.0}, VE), ({"p": 1.0}, VE), ({"p": NAN}, VE), ({"epsilon": 1.0}, VE),
            ({"p": DELETE}, VE), ({"bits": [0, 2]}, VE), ({"bits": [0.5]}, VE),
            ({"bits": ["1"]}, TE)]),
    "randomized_response_categorical": (
        {"values": ["a", "c", "b"], "categories": ["a", "b", "c"], "epsilon": 1.0},
        COMMON_BAD + [
            ({"values": ["a", "d"]}, VE), ({"categories": ["a"]}, VE),
            ({"categories": "abc"}, TE), ({"categories": [1.0, NAN]}, VE)]),
    "report_noisy_max": (
        {"scores": VOTES, "epsilon": 1.0},
        COMMON_BAD + SENSITIVITY_BAD + [
            ({"scores": []}, VE), ({"scores": [1.0, NAN]}, VE), ({"scores": [1.0, INF]}, VE),
            ({"scores": [-INF, -INF]}, VE), ({"scores": [[1.0]]}, VE), ({"scores": ["a"]}, TE),
            ({"noise": "cauchy"}, VE), ({"monotonic": "yes"}, TE)]),
    "exponential_mechanism": (
        {"utilities": VOTES, "epsilon": 1.0},
        COMMON_BAD + SENSITIVITY_BAD + [
            ({"utilities": []}, VE), ({"utilities": [NAN]}, VE), ({"candidates": "abcd"}, TE),
            ({"candidates": {"a", "b", "c", "d"}}, TE),
            ({"candidates": ["a"]}, VE), ({"monotonic": 1}, TE)]),
    "permute_and_flip": (
        {"utilities": VOTES, "epsilon": 1.0},
        COMMON_BAD + SENSITIVITY_BAD + [({"utilities": [NAN, 1.0]}, VE),
                                        ({"utilities": 3.0}, VE)]),
    "top_k": (
        {"scores": VOTES, "k": 2, "epsilon": 1.0},
        COMMON_BAD + SENSITIVITY_BAD + [
            ({"k": 0}, VE), ({"k": 5}, VE), ({"k": 2.0}, TE), ({"k": True}, TE),
            ({"epsilon": 2.0**-1000}, VE),
            ({"scores": [1.0, -INF, -INF]}, VE)]),
    "tree_mechanism": (
        {"counts": np.array([3, 0, 7, 1, 2, 5, 9, 4, 0, 1, 1, 8, 2, 0, 6]), "epsilon": 1.0},
        COMMON_BAD + [
            ({"counts": [1.0, NAN]}, VE), ({"counts": []}, VE), ({"counts": ["a"]}, TE),
            ({"counts": np.zeros((2, 2, 2), int)}, VE), ({"branching": 1}, VE),
            ({"branching": 2.5}, VE), ({"branching": (2, 2)}, VE),
            ({"counts": [2.0**60, 2.0**60]}, VE),
            ({"counts": [2.0**40, 0.5], "epsilon": 1e6}, VE)]),
    "census_hierarchy": (
        {"data": np.array([5, 0, 3, 9, 1]), "epsilon": 1.0,
         "hierarchy": [np.zeros(2, int), np.array([0, 0, 1, 1, 1])]},
        COMMON_BAD + [
            ({"data": [5, -1, 3, 9, 1]}, VE), ({"data": [5.0, 0.0, 3.0, 9.0, 1.0]}, VE),
            ({"data": [5, 0, 3]}, VE), ({"hierarchy": "states"}, TE),
            ({"hierarchy": [np.zeros(2, int), np.array([0, 0, 1, 1, 3])]}, VE),
            ({"hierarchy": [np.zeros(2, int) + 1, np.array([0, 0, 1, 1, 1])]}, VE),
            ({"split": [0.5, 0.5]}, VE), ({"split": [0.5, 0.5, 0.5]}, VE),
            ({"split": [1.0, 0.0, 0.0]}, VE)]),
    "mwem": (
        {"counts": COUNTS, "workload": dp.workloads.Marginals((2, 3), k=1), "epsilon": 1.0,
         "rounds": 3},
        COMMON_BAD + [
            ({"rounds": 0}, VE), ({"rounds": 2.5}, TE), ({"counts": [[1.0, NAN, 0.0]] * 2}, VE),
            ({"counts": [[-1, 0, 7], [1, 2, 5]]}, VE), ({"counts": np.ones((3, 2), int)}, VE),
            ({"workload": dp.workloads.Identity(7)}, VE), ({"workload": "marginals"}, TE),
            ({"total": -5.0}, VE)]),
    "smalldb": (
        {"counts": np.array([3, 0, 2]), "queries": dp.workloads.Prefixes(3), "epsilon": 1.0,
         "alpha": 0.5},
        COMMON_BAD + [
            ({"alpha": 0.0}, VE), ({"alpha": 1.0}, VE), ({"alpha": NAN}, VE),
            ({"counts": [3.0, NAN, 2.0]}, VE), ({"counts": [3, -1, 2]}, VE),
            ({"queries": dp.workloads.Prefixes(4)}, VE), ({"queries": [[1, 0, 0]]}, TE),
            ({"alpha": 0.01}, VE)]),
    "crosstab": (
        {"frame": {"sex": np.array(["F", "M", "M"]), "edu": np.array(["BA", "HS", "HS"])},
         "columns": ["sex", "edu"], "epsilon": 1.0,
         "keys": {"sex": ["F", "M"], "edu": ["HS", "BA", "MA"]}},
        COMMON_BAD + [
            ({"keys": None}, VE), ({"keys": {"sex": ["F", "M"]}}, VE),
            ({"keys": {"sex": ["F", "F"], "edu": ["HS", "BA"]}}, VE),
            ({"keys": {"sex": ["F"], "edu": ["HS", "BA"]}}, VE), ({"columns": ["age"]}, VE)]),
    "marginals": (
        {"frame_or_counts": np.arange(24).reshape(2, 3, 4), "epsilon": 1.0},
        COMMON_BAD + [
            ({"k": 4}, VE), ({"k": 0}, VE), ({"method": "mwem2"}, VE),
            ({"frame_or_counts": np.full((2, 3), 0.5)}, VE),
            ({"frame_or_counts": np.array([[1.0, NAN], [0.0, 1.0]])}, VE)]),
}
# Statistics of records (dpfast.records): values clamped to public bounds.
SALARIES = np.array([31.0, 45.5, 52.0, 67.25, 12.0, 88.0])
RECORDS_BAD = COMMON_BAD + [
    ({"bounds": DELETE}, TE), ({"bounds": None}, VE), ({"bounds": "auto"}, VE),
    ({"bounds": (5.0, 5.0)}, VE), ({"bounds": (9.0, 1.0)}, VE), ({"bounds": (0.0, NAN)}, VE),
    ({"bounds": (0.0, INF)}, VE), ({"bounds": 7.0}, TE), ({"bounds": (1.0, 2.0, 3.0)}, TE),
    ({"values": [1.0, NAN]}, VE), ({"values": [1.0, -INF]}, VE), ({"values": ["a"]}, TE),
    ({"values": np.zeros((2, 3))}, VE), ({"privacy_unit": [1, 2]}, VE),
    ({"privacy_unit": [1, 2, 3, None, 5, 6]}, VE), ({"privacy_unit": [1, "b", 3, 4, 5, 6]}, TE),
    ({"privacy_unit": [1, 1, 2, 2, 3, 3], "max_rows": 0}, VE),
    ({"privacy_unit": [1, 1, 2, 2, 3, 3], "max_rows": 1.5}, TE), ({"max_rows": 2}, VE)]
RECORDS_GOOD = {"values": SALARIES, "bounds": (0.0, 100.0), "epsilon": 1.0}
for _name in ("sum", "mean", "variance", "std"):
    MECHANISMS[_name] = (dict(RECORDS_GOOD), list(RECORDS_BAD))
MECHANISMS["median"] = (dict(RECORDS_GOOD), RECORDS_BAD[:-1] + [({"method": "joint"}, TE)])
MECHANISMS["quantiles"] = (
    {**RECORDS_GOOD, "q": [0.25, 0.5, 0.75]},
    RECORDS_BAD + [({"q": [0.5, 1.5]}, VE), ({"q": [NAN]}, VE), ({"q": []}, VE),
                   ({"q": "half"}, TE), ({"method": "joint"}, VE)])
POSITIONAL = {"laplace_mechanism": ["value"], "gaussian_mechanism": ["value"],
              "histogram": ["data", "bins"], "histogramdd": ["sample", "bins"],
              "count_categories": ["values", "categories"], "noisy_counts": ["counts"],
              "randomized_response": ["bits"],
              "randomized_response_categorical": ["values", "categories"],
              "report_noisy_max": ["scores"], "exponential_mechanism": ["utilities"],
              "permute_and_flip": ["utilities"], "top_k": ["scores", "k"],
              "tree_mechanism": ["counts"], "census_hierarchy": ["data", "hierarchy"],
              "mwem": ["counts", "workload"], "smalldb": ["counts", "queries"],
              "crosstab": ["frame", "columns"], "marginals": ["frame_or_counts"],
              "sum": ["values"], "mean": ["values"], "variance": ["values"],
              "std": ["values"], "median": ["values"], "quantiles": ["values", "q"]}


# The counting releases take noise="laplace" (default) or "gaussian" with rho= or
# epsilon=/delta=: every wrong combination is refused before the charge and the draw.
COUNTING = ["histogram", "histogramdd", "count_categories", "noisy_counts", "tree_mechanism",
            "census_hierarchy", "crosstab", "marginals"]
GAUSSIAN_BAD = [
    ({"noise": "gaussian", "epsilon": DELETE, "rho": 0.0}, VE),
    ({"noise": "gaussian", "epsilon": DELETE, "rho": -0.5}, VE),
    ({"noise": "gaussian", "epsilon": DELETE, "rho": NAN}, VE),
    ({"noise": "gaussian", "epsilon": DELETE, "rho": INF}, VE),
    ({"noise": "gaussian", "epsilon": DELETE, "rho": "0.1"}, TE),
    ({"rho": 0.1}, VE),                                       # rho with Laplace noise
    ({"noise": "gaussian"}, VE),                              # neither delta nor rho
    ({"noise": "gaussian", "epsilon": DELETE}, VE),           # nothing at all
    ({"noise": "gaussian", "epsilon": DELETE, "delta": 1e-6}, VE),   # delta alone
    ({"noise": "gaussian", "delta": 0.0}, VE),
    ({"noise": "gaussian", "delta": 1.0}, VE),
    ({"noise": "gaussian", "delta": NAN}, VE),
    ({"noise": "gaussian", "delta": 1e-6, "rho": 0.1}, VE),   # both ways at once
    ({"noise": "gaussian", "epsilon": 0.0, "delta": 1e-6}, VE),
    ({"delta": 1e-6}, VE),                                    # delta with Laplace noise
    ({"noise": "normal"}, VE), ({"noise": 1}, TE), ({"noise": None}, TE),
]
for _name in COUNTING + ["sum", "mean", "variance", "std"]:
    MECHANISMS[_name][1].extend(GAUSSIAN_BAD)


def call(name, kwargs, accountant, rng):
    kwargs = {k: v for k, v in kwargs.items() if v is not DELETE}
    args = [kwargs.pop(k) for k in POSITIONAL[name] if k in kwargs]
    kwargs.setdefault("accountant", accountant)
    kwargs.setdefault("rng", rng)
    return getattr(dp, name)(*args, **kwargs)


def used_accountant():
    # Non-zero spent and a non-empty ledger, so "unchanged" is not trivially "still zero".
    acct = dp.Accountant(epsilon=100.0, delta=0.5)
    acct.spend(0.25, 1e-6, label="earlier release")
    return acct


def test_every_public_mechanism_is_covered():
    charged = {name for name in dp.__all__ if inspect.isfunction(getattr(dp, name))
               and "accountant" in inspect.signature(getattr(dp, name)).parameters}
    assert charged == set(MECHANISMS)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_good_input_spends_and_draws(name):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    spent, state = acct.spent, rng_state(rng)
    call(name, MECHANISMS[name][0], acct, rng)
    assert acct.spent != spent and len(acct) == 2
    assert rng_state(rng) != state


@pytest.mark.parametrize("name, overrides, exc", [
    (name, overrides, exc) for name, (_, cases) in sorted(MECHANISMS.items())
    for overrides, exc in cases], ids=lambda x: x if isinstance(x, str) else None)
def test_bad_input_spends_nothing_and_draws_nothing(name, overrides, exc):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    kwargs = {**MECHANISMS[name][0], **overrides}
    with spends_nothing(acct, rng), pytest.raises(exc) as info:
        call(name, kwargs, acct, rng)
    # A programming error inside the release path would surface as another error, or as a
    # budget refusal dressed as a ValueError.
    assert not isinstance(info.value, dp.BudgetExceededError)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_refused_budget_draws_nothing(name):
    acct, rng = dp.Accountant(epsilon=1e-3, delta=1e-9), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        call(name, MECHANISMS[name][0], acct, rng)


def test_in_place_release_of_a_big_endian_table():
    # Accepted through a native working copy, with the noise a native table would get.
    native = np.arange(10_000, dtype=np.int64)
    swapped = native.astype(">i8")
    want = dp.noisy_counts(native, epsilon=1.0, accountant=dp.Accountant(), rng=3)
    got = dp.noisy_counts(swapped, epsilon=1.0, out=swapped, accountant=dp.Accountant(),
                          rng=3)
    assert got is swapped
    np.testing.assert_array_equal(swapped, want)


def test_read_only_out_is_refused_before_the_charge():
    table = np.arange(6, dtype=np.int64)
    table.flags.writeable = False
    acct, rng = used_accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(ValueError, match="writeable"):
        dp.noisy_counts(table, epsilon=1.0, out=table, accountant=acct, rng=rng)


# The data argument of each mechanism (the records the release protects).
DATA = {"laplace_mechanism": "value", "gaussian_mechanism": "value", "histogram": "data",
        "histogramdd": "sample", "count_categories": "values", "noisy_counts": "counts",
        "randomized_response": "bits", "randomized_response_categorical": "values",
        "report_noisy_max": "scores", "exponential_mechanism": "utilities",
        "permute_and_flip": "utilities", "top_k": "scores", "tree_mechanism": "counts",
        "census_hierarchy": "data", "mwem": "counts", "smalldb": "counts",
        "marginals": "frame_or_counts", "sum": "values", "mean": "values",
        "variance": "values", "std": "values", "median": "values", "quantiles": "values"}
# Mechanisms whose data is a frame (columns of records), not one array: their masked,
# ragged and byte-order cases are in their own test files (tests/test_marginals.py).
FRAME_DATA = {"crosstab"}
SECRET = 987654321          # a record value that no error message may echo


def test_every_mechanism_names_its_data():
    assert set(DATA) | FRAME_DATA == set(MECHANISMS)


@pytest.mark.parametrize("name", sorted(DATA))
def test_masked_data_is_refused_before_the_charge(name):
    # np.asarray drops the mask: the masked values would be released as if they were data.
    good = np.asarray(MECHANISMS[name][0][DATA[name]])
    masked = np.ma.masked_array(good, mask=np.zeros(good.shape, dtype=bool))
    masked.mask.flat[0] = True
    acct, rng = used_accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(TypeError, match=f"'{DATA[name]}'.*masked"):
        call(name, {**MECHANISMS[name][0], DATA[name]: masked}, acct, rng)


@pytest.mark.parametrize("name", sorted(DATA))
def test_ragged_data_is_refused_naming_the_argument_not_the_records(name):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    ragged = [[1, 2], [SECRET]]
    with spends_nothing(acct, rng), pytest.raises(ValueError) as info:
        call(name, {**MECHANISMS[name][0], DATA[name]: ragged}, acct, rng)
    assert f"'{DATA[name]}' parameter of {name}" in str(info.value)
    assert str(SECRET) not in str(info.value)


@pytest.mark.parametrize("name", sorted(DATA))
def test_non_native_byte_order_gives_the_native_release(name):
    good = np.asarray(MECHANISMS[name][0][DATA[name]])
    swapped = good.astype(good.dtype.newbyteorder("S"))
    assert not swapped.dtype.isnative and np.array_equal(swapped, good)
    want = call(name, {**MECHANISMS[name][0], DATA[name]: good}, used_accountant(),
                dp.ChaCha20(7))
    got = call(name, {**MECHANISMS[name][0], DATA[name]: swapped}, used_accountant(),
               dp.ChaCha20(7))
    assert same(got, want)


def same(a, b):
    """Equal results: arrays element by element, tuples and lists item by item, release
    objects by what they release."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    for released in ("estimate", "counts", "synthetic", "database", "tables"):
        if hasattr(a, released):
            return type(a) is type(b) and same(getattr(a, released), getattr(b, released))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", ["report_noisy_max", "exponential_mechanism", "top_k"])
def test_wrong_dtype_errors_describe_the_data_without_its_values(name):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    text = np.array([f"{SECRET}", "x"])
    with spends_nothing(acct, rng), pytest.raises(TypeError) as info:
        call(name, {**MECHANISMS[name][0], DATA[name]: text}, acct, rng)
    assert str(SECRET) not in str(info.value) and "shape (2,)" in str(info.value)


def _gaussian(name, **privacy):
    kwargs = {k: v for k, v in MECHANISMS[name][0].items() if k != "epsilon"}
    return {**kwargs, "noise": "gaussian", **privacy}


@pytest.mark.parametrize("name", COUNTING)
def test_gaussian_noise_spends_rho_on_a_zcdp_accountant_and_draws(name):
    acct, rng = dp.Accountant(rho=1.0), dp.ChaCha20(7)
    acct.spend(0.25, label="earlier release")
    spent, state = acct.spent.rho, rng_state(rng)
    call(name, _gaussian(name, rho=0.125), acct, rng)
    assert acct.spent.rho > spent and len(acct) == 2 and acct.ledger[-1].rho is not None
    assert rng_state(rng) != state


@pytest.mark.parametrize("name", COUNTING)
def test_gaussian_noise_under_epsilon_delta_charges_both_and_draws(name):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    call(name, _gaussian(name, epsilon=1.0, delta=1e-6), acct, rng)
    assert acct.ledger[-1][:2] == (1.0, 1e-6) and acct.ledger[-1].rho > 0
    assert len(acct) == 2


@pytest.mark.parametrize("name", COUNTING)
def test_rho_alone_on_an_epsilon_delta_accountant_spends_nothing_and_draws_nothing(name):
    acct, rng = used_accountant(), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(ValueError) as info:
        call(name, _gaussian(name, rho=0.1), acct, rng)
    assert not isinstance(info.value, dp.BudgetExceededError)


@pytest.mark.parametrize("name", COUNTING)
def test_gaussian_noise_refused_by_the_budget_draws_nothing(name):
    acct, rng = dp.Accountant(rho=1e-9), dp.ChaCha20(7)
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        call(name, _gaussian(name, rho=0.5), acct, rng)


@pytest.mark.parametrize("name", COUNTING)
def test_an_epsilon_delta_release_fits_a_zcdp_accountant_of_that_budget(name):
    # Releases charged to an accountant that composes in zCDP are calibrated through rho,
    # so a release of the accountant's whole (epsilon, delta) takes exactly its rho.
    acct, rng = dp.Accountant(epsilon=1.0, delta=1e-9, composition="zcdp"), dp.ChaCha20(7)
    call(name, _gaussian(name, epsilon=1.0, delta=1e-9), acct, rng)
    assert len(acct) == 1 and acct.remaining.rho == 0.0
    assert acct.spent.epsilon <= 1.0
    with spends_nothing(acct, rng), pytest.raises(dp.BudgetExceededError):
        call(name, _gaussian(name, epsilon=1e-3, delta=1e-9), acct, rng)
