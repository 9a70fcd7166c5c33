"""The bundled UCI Adult extract: its known figures, the pandas form, and releases of it.

Counts here are those of the data set's documentation; releases at a huge epsilon are exact.
Tests needing pandas skip without it.
"""
import sys

import numpy as np
import pytest

import dpfast as dp
from dpfast.datasets import ADULT_COLUMNS, ADULT_NUMERIC, load_adult

MARITAL = {"Married-civ-spouse": 22_379, "Never-married": 16_117, "Divorced": 6_633,
           "Separated": 1_530, "Widowed": 1_518, "Married-spouse-absent": 628,
           "Married-AF-spouse": 37}


def test_adult_known_figures():
    train = load_adult("train")
    assert len(train["age"]) == 32_561
    assert int((train["age"] > 50).sum()) == 6_460
    everyone = load_adult("all")
    assert len(everyone["age"]) == 48_842
    values, counts = np.unique(everyone["marital-status"], return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist())) == {
        "Married-civ-spouse": 22_379, "Never-married": 16_117, "Divorced": 6_633,
        "Separated": 1_530, "Widowed": 1_518, "Married-spouse-absent": 628,
        "Married-AF-spouse": 37}
    assert train["age"].dtype == np.int64 and train["sex"].dtype.kind == "U"
    with pytest.raises(ValueError, match="'split'"):
        load_adult("validation")


@pytest.mark.parametrize("split, n", [("train", 32_561), ("all", 48_842)])
def test_load_adult_as_frame(split, n):
    pytest.importorskip("pandas")
    frame = load_adult(split, as_frame=True)
    arrays = load_adult(split)
    assert frame.shape == (n, len(ADULT_COLUMNS))
    assert tuple(frame.columns) == ADULT_COLUMNS
    assert frame.index.tolist() == list(range(n))
    for name in ADULT_COLUMNS:
        if name in ADULT_NUMERIC:
            assert frame[name].dtype == np.int64
            np.testing.assert_array_equal(frame[name].to_numpy(), arrays[name])
        else:
            assert frame[name].dtype == "category"
            np.testing.assert_array_equal(frame[name].to_numpy(dtype=str), arrays[name])


def test_load_adult_as_frame_counts_with_dpfast():
    pytest.importorskip("pandas")
    frame = load_adult("all", as_frame=True)
    got = dp.count_categories(frame["marital-status"], list(MARITAL), epsilon=1e6,
                              accountant=dp.Accountant())
    assert got.tolist() == list(MARITAL.values())


def test_load_adult_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        load_adult(as_frame=True)
    assert len(load_adult()["age"]) == 32_561        # the numpy form needs no pandas


def test_load_adult_as_frame_must_be_a_bool():
    with pytest.raises(TypeError, match="'as_frame' parameter of load_adult"):
        load_adult(as_frame="yes")


def test_adult_known_counts_through_the_public_api():
    train = load_adult("train")
    counts, edges = dp.histogram(train["age"], bins=[0, 51, 200], accountant=dp.Accountant(), epsilon=1e6)
    assert counts.tolist() == [32_561 - 6_460, 6_460]
    everyone = load_adult("all")
    cats = ["Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
            "Married-spouse-absent", "Married-AF-spouse"]
    got = dp.count_categories(everyone["marital-status"], cats, accountant=dp.Accountant(), epsilon=1e6)
    assert got.tolist() == [22_379, 16_117, 6_633, 1_530, 1_518, 628, 37]


def test_adult_marital_status_report_noisy_max_picks_the_mode():
    col = load_adult("all")["marital-status"]
    names, counts = np.unique(col, return_counts=True)
    order = np.argsort(-counts)
    names, counts = names[order], counts[order]
    assert names[0] == "Married-civ-spouse" and counts.tolist()[:2] == [22_379, 16_117]
    # Exact tail: with X, Y iid Laplace(1) (scale D/eps = 1 for counts at eps = 1),
    # P[X - Y > t] = e^-t (2 + t) / 4, so P[anything else wins] is at most the sum of these
    # over the other categories (and at least the largest term): about e^-6262.
    gaps = (counts[0] - counts[1:]).astype(float)
    log_terms = -gaps + np.log((2 + gaps) / 4)
    log_p_other = float(np.logaddexp.reduce(log_terms))
    assert -6270 < log_terms.max() <= log_p_other < -6200
    # Over n draws, P[any other category at all] <= n e^-6200: the observed frequency must
    # be 0 (alpha ~ 1e-2690); the softmax (EM, Gumbel) tail is smaller still.
    g = dp.ChaCha20(500)
    a = dp.Accountant()
    picks = set()
    for _ in range(1000):
        picks.add(int(dp.report_noisy_max(counts, epsilon=1.0, monotonic=True, accountant=a,
                                          rng=g)))
        picks.add(int(dp.report_noisy_max(counts, epsilon=1.0, monotonic=True, noise="gumbel",
                                          accountant=a, rng=g)))
        picks.add(names.tolist().index(dp.exponential_mechanism(
            counts, epsilon=1.0, monotonic=True, candidates=names.tolist(), accountant=a,
            rng=g)))
    assert picks == {0}
    assert a.spent == (3000.0, 0.0) and len(a) == 3000


def test_each_call_returns_columns_of_its_own():
    """The embedded files are parsed once per process; a caller writing into its columns
    changes no later call's."""
    first = load_adult()
    first["age"][:] = -1
    first["sex"][:] = "x"
    again = load_adult()
    assert again["age"].min() >= 17 and set(again["sex"]) == {"Female", "Male"}
    assert again["age"].flags.writeable
