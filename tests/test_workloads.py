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


# -- Explicit keeps a canonical copy of a sparse matrix -----------------------------------
def duplicated_csr(entry=0.6, copies=2):
    """A 2 x 3 CSR matrix whose entry (0, 0) is stored ``copies`` times (scipy allows it:
    ``W x`` then counts it ``copies`` times)."""
    data = np.full(copies, entry)
    m = sp.csr_matrix((data, np.zeros(copies, dtype=np.int32),
                       np.array([0, copies, copies], dtype=np.int32)), shape=(2, 3))
    assert not m.has_canonical_format
    return m


def test_duplicate_sparse_entries_are_summed_before_the_check():
    m = duplicated_csr(0.6)                     # effective entry 1.2: not a linear query
    assert (m @ np.array([1.0, 0, 0]))[0] == pytest.approx(1.2)
    with pytest.raises(ValueError, match=r"'matrix'.*an entry above 1 at position \(0, 0\)"):
        wl.Explicit(m)
    fifty = duplicated_csr(1.0, copies=50)      # 50 copies of 1: effective entry 50
    with pytest.raises(ValueError, match=r"an entry above 1 at position \(0, 0\)"):
        wl.Explicit(fifty)
    assert not fifty.has_canonical_format and fifty.nnz == 50     # the caller's, untouched


def test_duplicates_summing_into_range_give_the_summed_workload():
    m = duplicated_csr(0.3)                     # 0.3 + 0.3 = 0.6
    w = wl.Explicit(m)
    assert w.matrix.has_canonical_format and w.matrix.nnz == 1
    assert w.query(0)[0] == pytest.approx(0.6) and w.sensitivity == pytest.approx(0.6)
    np.testing.assert_allclose(w.answer([1.0, 2.0, 3.0]), m @ [1.0, 2.0, 3.0])


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc", "bsr", "dia", "lil", "dok"])
@pytest.mark.parametrize("array", [False, True], ids=["matrix", "array"])
def test_every_sparse_format_is_checked_in_canonical_form(fmt, array):
    dense = np.array([[0.0, 1.0, 0.5], [2.0, 0.0, 0.0]])      # 2.0 at (1, 0)
    make = sp.coo_array if array else sp.coo_matrix
    m = make(dense).asformat(fmt)
    with pytest.raises(ValueError, match=r"an entry above 1 at position \(1, 0\)"):
        wl.Explicit(m)
    good = make(dense / 2).asformat(fmt)
    w = wl.Explicit(good)
    np.testing.assert_allclose(w.query(1), [1.0, 0, 0])
    assert w.sensitivity == pytest.approx(1.0)


def test_integer_duplicates_are_summed_in_float64_not_wrapped():
    # int8: 128 copies... two entries of -128 sum to -256, which int8 wraps to 0.
    m = sp.coo_matrix((np.array([-128, -128], dtype=np.int8), ([0, 0], [1, 1])), shape=(1, 2))
    with pytest.raises(ValueError, match=r"a negative entry at position \(0, 1\)"):
        wl.Explicit(m)
    big = sp.coo_matrix((np.array([2**62, 2**62, 2**62, 2**62], dtype=np.int64),
                         ([0] * 4, [0] * 4)), shape=(1, 1))     # 2^64 wraps to 0 in int64
    with pytest.raises(ValueError, match=r"an entry above 1 at position \(0, 0\)"):
        wl.Explicit(big)


def test_explicit_zeros_are_dropped_and_the_callers_matrix_is_never_reached():
    m = sp.csr_matrix((np.array([0.0, 0.5]), np.array([0, 2]), np.array([0, 2])),
                      shape=(1, 3))
    w = wl.Explicit(m)
    assert w.matrix.nnz == 1 and m.nnz == 2
    m.data[1] = 7.0                              # a later edit of the caller's matrix
    assert w.query(0).tolist() == [0.0, 0.0, 0.5] and w.sensitivity == 0.5
    with pytest.raises(ValueError):
        w.matrix.data[0] = 1.0                   # the workload's copy is read-only
    dense = np.array([[0.5, 0.25]])
    wd = wl.Explicit(dense)
    dense[0, 0] = 9.0
    assert wd.query(0).tolist() == [0.5, 0.25]
    with pytest.raises(ValueError):
        wd.matrix[0, 0] = 1.0


@pytest.mark.parametrize("dtype", [bool, complex, object])
def test_boolean_complex_and_object_entries_are_refused(dtype):
    if dtype is not object:                     # scipy.sparse has no object dtype
        with pytest.raises(TypeError, match="'matrix'.*sparse matrix of (boolean|complex)"):
            wl.Explicit(sp.csr_matrix(np.eye(2, dtype=dtype)))
    with pytest.raises(TypeError, match="'matrix'"):
        wl.Explicit(np.eye(2, dtype=dtype))


def test_a_bad_entry_is_described_by_kind_and_position_never_by_value():
    secret = 0.987654321 * 41
    for bad, kind in ((secret, "an entry above 1"), (-secret, "a negative entry"),
                      (np.nan, "a NaN"), (np.inf, "an infinite entry")):
        dense = np.zeros((3, 4))
        dense[2, 1] = bad
        for m in (dense, sp.csr_matrix(dense)):
            with pytest.raises(ValueError) as info:
                wl.Explicit(m)
            assert f"{kind} at position (2, 1)" in str(info.value)
            assert "40.49" not in str(info.value) and "-40" not in str(info.value)


def test_only_the_trusted_workload_types_pass_check_trusted():
    for w in SMALL:
        wl.check_trusted(w, "workload", "mwem")

    class Louder(wl.Identity):
        def _answer(self, x):
            return 50 * x
    with pytest.raises(TypeError, match="'workload' parameter of mwem.*not a subclass"):
        wl.check_trusted(Louder(4), "workload", "mwem")
    with pytest.raises(TypeError, match="Workload"):
        wl.check_trusted(wl.Workload(), "workload", "mwem")


def test_private_multiplicative_weights_refuses_a_subclass_of_a_trusted_workload():
    # A subclass could answer 50 times its queries under the sensitivity-1 calibration.
    import dpfast as dp

    class Louder(wl.Explicit):
        def answer(self, x):
            return 50 * super().answer(x)

    pmw = dp.PrivateMultiplicativeWeights(np.arange(8), epsilon=1.0, alpha=0.5,
                                          accountant=dp.Accountant(), rng=3)
    before = pmw.synthetic
    with pytest.raises(TypeError, match="not a subclass"):
        pmw.answer(Louder(np.eye(8)))
    np.testing.assert_array_equal(pmw.synthetic, before)
    assert pmw.answer(wl.Explicit(np.eye(8))).shape == (8,)
