"""Workloads as operators: every structured workload equals its explicit matrix (built here
from unit vectors, which the workloads themselves never do), entries are in [0, 1], and the
sensitivity is the largest column l1 norm -- checked against neighbouring histograms."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from dpfast.linear import workloads as wl


def explicit(w):
    """W, column by column: answer(e_j)."""
    cols = [w.answer(np.eye(w.n_cells)[j].reshape(w.domain)) for j in range(w.n_cells)]
    return np.stack(cols, axis=1)


SMALL = [wl.Identity(5), wl.Identity((2, 3)), wl.Prefixes(6), wl.Ranges(7),
         wl.Rectangles((3, 4)), wl.Marginals((2, 3, 4), k=2),
         wl.Marginals((3, 2, 2), attributes=[(0,), (1, 2), (0, 1, 2)]),
         wl.Conjunctions(4, 2), wl.Conjunctions(3), wl.Conjunctions(4, 2, negations=True),
         wl.Conjunctions(3, negations=True),
         wl.Explicit(np.array([[1, 0.5, 0], [0, 0, 1.0]])),
         wl.Explicit(sp.random(6, 8, density=0.4, random_state=1), domain=(2, 4))]


@pytest.mark.parametrize("w", SMALL, ids=repr)
def test_operator_matches_its_matrix(w):
    m = explicit(w)
    assert m.shape == (w.n_queries, w.n_cells)
    assert m.min() >= 0 and m.max() <= 1
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, w.n_cells)
    y = rng.normal(size=w.n_queries)
    np.testing.assert_allclose(w.answer(x.reshape(w.domain)), m @ x)
    np.testing.assert_allclose(w.answer(x), m @ x)            # flat input too
    np.testing.assert_allclose(w.adjoint(y), m.T @ y)
    i = int(rng.integers(w.n_queries))
    np.testing.assert_allclose(w.query(i), m[i])
    assert w.sensitivity == pytest.approx(np.abs(m).sum(axis=0).max())


@pytest.mark.parametrize("w", SMALL, ids=repr)
def test_a_neighbour_moves_answers_by_at_most_the_sensitivity(w):
    x = np.random.default_rng(1).integers(0, 5, w.n_cells).astype(float)
    base = w.answer(x)
    moves = []
    for j in range(w.n_cells):                  # add one record in each cell in turn
        x[j] += 1
        d = np.abs(w.answer(x) - base)
        x[j] -= 1
        assert d.max() <= 1 + 1e-12             # each query: sensitivity 1
        moves.append(d.sum())
    assert max(moves) == pytest.approx(w.sensitivity)   # attained: not an overestimate


def test_structured_sensitivities_have_their_closed_forms():
    n = 100
    assert wl.Identity(n).sensitivity == 1
    assert wl.Prefixes(n).sensitivity == n
    assert wl.Ranges(n).sensitivity == max((i + 1) * (n - i) for i in range(n))
    assert wl.Marginals((4, 5, 6, 7), k=2).sensitivity == 6
    assert wl.Conjunctions(10, 3).sensitivity == 120          # the all-ones record
    assert wl.Conjunctions(10, 3, negations=True).sensitivity == 120
    assert wl.Conjunctions(8).sensitivity == 2**8


def test_conjunctions_count_records_by_brute_force():
    rng = np.random.default_rng(2)
    d = 5
    records = rng.integers(0, 2, (300, d))
    x = np.zeros((2,) * d)
    np.add.at(x, tuple(records.T), 1)
    w = wl.Conjunctions(d, 2, negations=True)
    got = w.answer(x)
    want = []
    for s in itertools.combinations(range(d), 2):
        for signs in itertools.product((0, 1), repeat=2):
            want.append(np.sum(np.all(records[:, list(s)] == signs, axis=1)))
    np.testing.assert_array_equal(got, want)
    w = wl.Conjunctions(d)                         # monotone, all 2^d sets
    want = [np.sum(np.all(records[:, list(s)] == 1, axis=1))
            for r in range(d + 1) for s in itertools.combinations(range(d), r)]
    np.testing.assert_array_equal(w.answer(x), want)
    assert w.n_queries == 2**d


def test_ranges_and_rectangles_answer_by_prefix_sums():
    x = np.arange(12.0).reshape(3, 4)
    w = wl.Rectangles((3, 4))
    (lo0, hi0), (lo1, hi1) = w.axes[0].bounds(), w.axes[1].bounds()
    want = [x[a:b, c:d].sum() for a, b in zip(lo0, hi0) for c, d in zip(lo1, hi1)]
    np.testing.assert_allclose(w.answer(x), want)


def test_bad_workloads_and_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="'matrix'.*\\[0, 1\\]"):
        wl.Explicit([[0.5, 2.0]])
    with pytest.raises(ValueError, match="'matrix'"):
        wl.Explicit([[0.5, np.nan]])
    with pytest.raises(ValueError, match="'k'"):
        wl.Marginals((2, 3), k=3)
    with pytest.raises(ValueError, match="'attributes'"):
        wl.Marginals((2, 3), attributes=[(0, 5)])
    with pytest.raises(ValueError, match="'n'"):
        wl.Ranges(0)
    with pytest.raises(TypeError, match="'n'"):
        wl.Ranges(2.5)
    with pytest.raises(ValueError, match="'x'.*shape \\(4,\\)"):
        wl.Prefixes(4).answer(np.ones(5))
    with pytest.raises(ValueError, match="'x'"):
        wl.Prefixes(2).answer([1.0, np.nan])
    with pytest.raises(TypeError, match="'x'.*masked"):
        wl.Prefixes(2).answer(np.ma.masked_array([1.0, 2.0], mask=[True, False]))
    with pytest.raises(ValueError, match="answers"):
        wl.Ranges(10**5).answer(np.zeros(10**5))         # 5e9 answers: not materialized
