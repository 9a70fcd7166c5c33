"""dpfast.linear.graphical and dp.marginals(method="model"): the junction tree, belief
propagation against the brute-force joint (small and split cliques), any marginal across
cliques, exact tables reproduced exactly (epsilon = infinity), the noisy fit, synthetic
records, and the release's charge, refusals and labels."""
import itertools

import numpy as np
import pytest

import dpfast as dp
from dpfast.linear import graphical as G
from dpfast.linear.graphical import clique as GC, fit as GF, model as GM, sampling as GS


def check_tree(shape, cliques, tree):
    # Every attribute is covered, every measured set lies in a clique, the edges form a
    # tree listed from the root, and the running-intersection property holds.
    assert set().union(*map(set, tree.cliques)) == set(range(len(shape)))
    for c in cliques:
        assert any(set(c) <= set(t) for t in tree.cliques)
    assert len(tree.edges) == len(tree.cliques) - 1
    seen = {0}
    for p, c in tree.edges:
        assert p in seen and c not in seen
        seen.add(c)
    adj = {i: set() for i in range(len(tree.cliques))}
    for p, c in tree.edges:
        adj[p].add(c), adj[c].add(p)
    for a in range(len(shape)):
        holding = {i for i, t in enumerate(tree.cliques) if a in t}
        start = next(iter(holding))
        reach, todo = {start}, [start]
        while todo:
            i = todo.pop()
            for j in adj[i] & holding - reach:
                reach.add(j), todo.append(j)
        assert reach == holding, a


@pytest.mark.parametrize("cliques", [
    [(0, 1), (1, 2), (2, 3)],
    [(0, 1), (1, 2), (2, 0), (3,)],
    [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5)],
    list(itertools.combinations(range(5), 2)),
])
def test_junction_tree_is_a_valid_tree(cliques):
    shape = (2, 3, 4, 2, 3, 2)
    check_tree(shape, cliques, G.junction_tree(shape, cliques))


def test_a_clique_past_the_limit_is_refused_with_its_size():
    with pytest.raises(ValueError, match="125,000,000,000 cells"):
        G.junction_tree((5000, 5000, 5000), [(0, 1), (1, 2), (0, 2)])


def brute_joint(shape, sets, potentials, total):
    d = len(shape)
    logp = np.zeros(shape)
    for s, t in zip(sets, potentials):
        logp = logp + t.reshape([shape[i] if i in s else 1 for i in range(d)])
    joint = np.exp(logp - logp.max())
    return joint * (total / joint.sum())


def marginal_of(joint, attrs):
    keep = tuple(sorted(attrs))
    t = joint.sum(axis=tuple(i for i in range(joint.ndim) if i not in keep))
    return np.transpose(t, [keep.index(a) for a in attrs])


@pytest.mark.parametrize("shape, sets", [
    # Several small cliques (broadcast path), a cycle that fills in.
    ((2, 3, 4, 2, 3), [(0, 1), (1, 2), (2, 3), (3, 0), (3, 4), (4,)]),
    # One clique of 8**5 * 4 cells, split into two groups (matrix-product path).
    ((8, 8, 8, 8, 8, 4), list(itertools.combinations(range(6), 2)) + [(0, 1, 2)]),
    # A split clique beside small ones.
    ((8, 8, 8, 8, 9, 3, 2), list(itertools.combinations(range(5), 2)) + [(4, 5), (5, 6)]),
])
def test_beliefs_and_marginals_are_the_brute_force_joints(shape, sets):
    gen = np.random.default_rng(1)
    model = G.GraphicalModel(shape, sets, 1000.0)
    model.set_potentials([gen.normal(size=t.shape) for t in model.potentials])
    joint = brute_joint(shape, model.sets, model.potentials, 1000.0)
    for i, c in enumerate(model.tree.cliques):
        np.testing.assert_allclose(model.clique_table(i), marginal_of(joint, c), rtol=1e-4)
    for s, mu in zip(model.sets, model.measured_marginals()):
        np.testing.assert_allclose(mu, marginal_of(joint, s), rtol=1e-4)
    # Any set of attributes, inside one clique or across several, in the order asked.
    for attrs in [(1,), (2, 0), (0, len(shape) - 1), (len(shape) - 1, 1, 2)]:
        np.testing.assert_allclose(model.marginal(attrs), marginal_of(joint, attrs),
                                   rtol=1e-4, atol=1e-9)
    with pytest.raises(ValueError, match="distinct"):
        model.marginal((0, 0))


def test_a_message_with_cells_of_no_mass_into_a_split_clique_stays_finite():
    # A child clique whose separator cells underflow to zero mass sends log(0) up; in the
    # split parent's matrix product an infinity times a zero feature was NaN (long fits
    # reached it). The message is a large finite negative instead: beliefs are the joint's.
    shape = (8, 8, 8, 8, 8, 4, 3)
    sets = list(itertools.combinations(range(6), 2)) + [(4, 5, 6)]
    gen = np.random.default_rng(4)
    model = G.GraphicalModel(shape, sets, 1000.0)
    potentials = [gen.normal(size=t.shape) for t in model.potentials]
    potentials[-1][:2, :2, :] = -1e4                  # no mass at (4, 5) in {0, 1}^2
    model.set_potentials(potentials)
    assert any(c.V for c in model._clique)            # the parent is split
    joint = brute_joint(shape, model.sets, model.potentials, 1000.0)
    for i, c in enumerate(model.tree.cliques):
        table = model.clique_table(i)
        assert np.isfinite(table).all()
        np.testing.assert_allclose(table, marginal_of(joint, c), rtol=1e-4, atol=1e-9)
    assert model.marginal((4, 5))[:2, :2].sum() == 0.0


def test_a_model_with_no_mass_a_float_holds_is_nan_never_uniform_or_inconsistent():
    # Every cell of clique (0, 1) holds an impossible term: no representable mass. The
    # finite stand-in for log 0 must not make the cliques uniform (NaN, as infinities gave).
    model = G.GraphicalModel((2, 3, 3, 3), [(0, 1), (0, 2), (0, 3)], 100.0)
    p = [np.zeros((2, 3)) for _ in range(3)]
    p[1][1, :] = p[2][0, :] = GM.IMPOSSIBLE
    model.set_potentials(p)
    assert np.isnan(model.marginal((1,))).all()
    assert all(np.isnan(t).all() for t in model.measured_marginals())
    # A warm start from such potentials starts from the uniform model instead.
    ms = [G.Measurement(s, np.full(t.shape, 100.0 / t.size), 1.0)
          for s, t in zip(model.sets, model.potentials)]
    fitted = G.estimate(ms, model.shape, iterations=20, warm=model)
    assert all(np.isfinite(t).all() for t in fitted.measured_marginals())
    # A fit from a point without a finite loss stops at once.
    calls = []
    GF.accelerated(lambda th: (calls.append(1), (float("inf"), [np.ones(2)]))[1],
                   [np.zeros(2)], 10**6, 0.0)
    assert len(calls) == 1


@pytest.mark.parametrize("seed", [0, 39])
def test_a_fit_to_far_noisier_measurements_than_counts_stays_consistent(seed):
    # Noise a thousand times the counts: the fit drives potentials to hundreds, cells
    # underflow unevenly across cliques, and neighbours disagreed on their separator (by 4
    # records of 2 million, seed 39). Such states are refused during the fit.
    shape = (3, 2, 3, 5, 2, 4)
    sets = [(0, 1, 2), (0, 1, 4), (0, 4), (0, 5), (1,), (1, 4), (2,), (3,), (3, 5), (5,)]
    gen = np.random.default_rng(seed)
    x = gen.poisson(gen.uniform(0, 3000), shape).astype(float)
    ms = [G.Measurement(s, marginal_of(x, s) + gen.normal(0, 1e6, marginal_of(x, s).shape),
                        1e6) for s in sets]
    with np.errstate(all="ignore"):
        model = G.estimate(ms, shape, iterations=200)
    for parent, child in model.tree.edges:
        sep = model._sep(child, parent)
        a, b = (marginal_of(model.clique_table(i), [model.tree.cliques[i].index(x)
                                                    for x in sep]) for i in (parent, child))
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * model.total)
        assert np.isfinite(a).all() and (a >= 0).all()


def test_exact_tables_are_reproduced_exactly():
    # epsilon = infinity: exact tables (sigma 0) of a real joint, zeros included, are the
    # model's marginals to float precision, and the model is the maximum-entropy one (on a
    # chain, the product formula).
    gen = np.random.default_rng(3)
    shape = (3, 4, 2, 3)
    x = gen.poisson(3.0, shape).astype(float)
    x[0, 0] = 0.0
    sets = [(0, 1), (1, 2), (2, 3)]
    ms = [G.Measurement(c, marginal_of(x, c), 0.0) for c in sets]
    model = G.estimate(ms, shape, tol=1e-13)
    for c, m in zip(sets, ms):
        np.testing.assert_allclose(model.marginal(c), m.values, rtol=0, atol=1e-9 * x.sum())
    m01, m12, m23 = (m.values for m in ms)
    m1, m2 = x.sum(axis=(0, 2, 3)), x.sum(axis=(0, 1, 3))
    with np.errstate(divide="ignore", invalid="ignore"):
        chain = np.nan_to_num(m01[:, :, None, None] * m12[None, :, :, None]
                              * m23[None, None, :, :] / m1[None, :, None, None]
                              / m2[None, None, :, None])
    np.testing.assert_allclose(model.marginal((0, 1, 2, 3)), chain, atol=1e-8 * x.sum())
    with pytest.raises(ValueError, match="non-negative"):
        G.estimate([G.Measurement((0,), np.array([1.0, -1.0, 2.0]), 0.0)], (3,))
    with pytest.raises(ValueError, match="all be exact"):
        G.estimate([G.Measurement((0,), np.ones(3), 0.0),
                    G.Measurement((1,), np.ones(2), 1.0)], (3, 2))
    for bad, match in [(G.Measurement((0, 0), np.ones((3, 3)), 1.0), "distinct"),
                       (G.Measurement((2,), np.ones(3), 1.0), "distinct"),
                       (G.Measurement((0,), np.ones(2), 1.0), "shape"),
                       (G.Measurement((0,), np.array([1.0, np.nan, 1.0]), 1.0), "finite"),
                       (G.Measurement((0,), np.ones(3), -1.0), "sigma")]:
        with pytest.raises(ValueError, match=match):
            G.estimate([bad], (3, 2))


def test_the_noisy_fit_descends_to_a_consistent_nonnegative_model():
    gen = np.random.default_rng(2)
    shape = (3, 4, 2, 3, 5)
    x = gen.poisson(20.0, shape).astype(float)
    sets = list(itertools.combinations(range(5), 2))
    ms = [G.Measurement(c, marginal_of(x, c) + gen.normal(0, 3.0, marginal_of(x, c).shape),
                        3.0) for c in sets]

    def loss(model):
        return sum(((model.marginal(m.clique) - m.values) ** 2).sum() for m in ms) / 18.0
    first = G.estimate(ms, shape, iterations=1)
    model = G.estimate(ms, shape, iterations=300)
    assert loss(model) < 0.05 * loss(first)
    # Less error than the noisy tables themselves, consistent and non-negative.
    err = sum(np.abs(model.marginal(c) - marginal_of(x, c)).sum() for c in sets)
    assert err < sum(np.abs(m.values - marginal_of(x, m.clique)).sum() for m in ms)
    for a in range(5):
        ones = [model.marginal(c).sum(axis=1 - c.index(a)) for c in sets if a in c]
        for t in ones[1:]:
            np.testing.assert_allclose(t, ones[0], rtol=1e-9)
    assert all((model.marginal(c) >= 0).all() for c in sets)
    # Warm start from a fitted model: already at its loss.
    again = G.estimate(ms, shape, iterations=1, warm=model)
    assert loss(again) <= loss(model) * 1.001
    # The stated error: held tables have one, others (a triple) none.
    assert model.expected_error((0, 1)) > 0 and model.expected_error((0,)) > 0
    assert model.expected_error((0, 1, 2)) is None


def test_the_fit_stops_at_the_noises_own_loss():
    gen = np.random.default_rng(3)
    shape = (4, 5, 3, 6)
    x = gen.poisson(30.0, shape).astype(float)
    sets = list(itertools.combinations(range(4), 2))
    ms = [G.Measurement(c, marginal_of(x, c) + gen.normal(0, 4.0, marginal_of(x, c).shape),
                        4.0) for c in sets]
    cells = sum(m.values.size for m in ms)

    def loss(model):                     # in units of sigma: cells / 2 at the truth
        return sum(((model.marginal(m.clique) - m.values) ** 2).sum() for m in ms) / 32.0
    assert loss(G.estimate(ms, shape, iterations=3)) > G.DISCREPANCY * cells / 2
    stopped = G.estimate(ms, shape, iterations=500)
    assert loss(stopped) <= G.DISCREPANCY * cells / 2
    run_on = G.estimate(ms, shape, iterations=500, discrepancy=None)
    assert loss(run_on) < 0.9 * loss(stopped)
    assert loss(G.estimate(ms, shape, iterations=500, discrepancy=3.0)) > loss(stopped)
    for bad in (-0.1, float("nan"), float("inf"), 10 ** 400):
        with pytest.raises(ValueError, match="discrepancy"):
            G.estimate(ms, shape, discrepancy=bad)
    for bad in (True, "0.7"):
        with pytest.raises(TypeError, match="discrepancy"):
            G.estimate(ms, shape, discrepancy=bad)


def test_the_accelerated_fit_holds_its_step_and_converges_on_an_ill_conditioned_loss():
    # A quadratic with curvatures 1e-3 .. 3 (condition 3,000): gradient descent at the
    # largest stable step needs ~60,000 steps to 1e-10; the accelerated descent, its step
    # halved once from 1 and then held, needs about sqrt(condition) times fewer.
    curv = np.geomspace(1e-3, 3.0, 50)
    evals = []

    def at(theta):
        evals.append(1)
        return 0.5 * float(np.sum(curv * theta[0] ** 2)), [curv * theta[0]]
    best = GF.accelerated(at, [np.ones(50)], 3000, 0.0, floor=1e-10)
    assert 0.5 * float(np.sum(curv * best[0] ** 2)) <= 1e-10
    assert len(evals) < 1500
    # A loss that is never finite past the start: the step halves to nothing and stops.
    start = [np.ones(3)]
    assert GF.accelerated(lambda th: (float("nan") if th is not start else 1.0,
                                      [np.ones(3)]), start, 100, 0.0) is start


def test_a_large_clique_of_many_sets_is_split():
    # Adult-sized: 6 attributes, 816,480 cells, its 15 pairs and 2 five-attribute sets
    # (messages). Broadcasting each over the clique costs several times the split.
    shape = (9, 9, 16, 7, 15, 6)
    sets = list(itertools.combinations(range(6), 2)) + [(1, 2, 3, 4, 5), (0, 1, 3, 4, 5)]
    clique = GC.Clique(shape, tuple(range(6)), sets)
    assert clique.V and clique.nu * clique.nv == clique.cells
    assert clique._cost({a: n for a, n in enumerate(shape)}, clique.V) < \
        clique._cost({a: n for a, n in enumerate(shape)}, ()) / 2


def test_synthetic_records_follow_the_model():
    gen = np.random.default_rng(5)
    shape = (3, 4, 2, 3, 2)
    model = G.GraphicalModel(shape, [(0, 1), (1, 2, 3), (3, 4)], 20000.0)
    model.set_potentials([gen.normal(size=t.shape) for t in model.potentials])
    drawn = {}
    for rake in (False, True):
        rows = model.synthetic(20000, np.random.default_rng(6), rake=rake)
        assert rows.shape == (20000, 5) and rows.dtype == np.int64
        counts = np.zeros(shape)
        np.add.at(counts, tuple(rows.T), 1)
        drawn[rake] = counts
        # Every clique and a set across cliques, within sampling error (4 standard
        # deviations of a multinomial count at most: false alarm below 1e-4 per cell).
        for attrs in list(model.tree.cliques) + [(0, 4), (0, 2, 4)]:
            want = model.marginal(attrs)
            sd = np.sqrt(want * (1 - want / 20000.0)) + 1.0
            assert (np.abs(marginal_of(counts, attrs) - want) <= 4 * sd).all(), attrs
    # Drawn alone, the root clique's cells by systematic sampling: within one record.
    root = model.tree.cliques[0]
    assert np.abs(marginal_of(drawn[False], root) - model.marginal(root)).max() <= 1 + 1e-9
    # Raked: the measured tables nearer the model's, in sum (one table may move away).
    gaps = {rake: sum(np.abs(marginal_of(drawn[rake], s) - model.marginal(s)).sum()
                      for s in model.sets) for rake in drawn}
    assert gaps[True] < gaps[False]
    with pytest.raises(TypeError, match="rake"):
        model.synthetic(10, np.random.default_rng(6), rake="no")


def test_raking_brings_rows_to_reachable_tables():
    # Targets that some rows meet exactly (another draw's counts): raking a random draw
    # closes most of its l1 distance to them, never adds a row, and keeps codes in range.
    # An attribute in no target set (the last) is never moved.
    gen = np.random.default_rng(8)
    shape = (4, 6, 3, 5)
    goal = np.stack([gen.integers(0, n, 5000) for n in shape], axis=1)
    rows = np.stack([gen.integers(0, n, 5000) for n in shape], axis=1)
    untouched = rows[:, 3].copy()
    sets = [(0, 1), (1, 2), (0,)]
    targets = {s: marginal_of(np.bincount(np.ravel_multi_index(goal.T, shape),
                                          minlength=360).reshape(shape), s) for s in sets}

    def gap():
        c = np.bincount(np.ravel_multi_index(rows.T, shape), minlength=360).reshape(shape)
        return sum(np.abs(marginal_of(c, s) - targets[s]).sum() for s in sets)
    before = gap()
    GS.rake(rows, shape, targets, np.random.default_rng(9))
    assert rows.shape == (5000, 4) and all((rows[:, i] < n).all() for i, n in enumerate(shape))
    assert gap() <= 0.15 * before
    assert np.array_equal(rows[:, 3], untouched)


def test_rows_past_the_raking_limit_are_drawn_alone(monkeypatch):
    model = G.GraphicalModel((3, 4), [(0, 1)], 100.0)
    model.set_potentials([np.random.default_rng(1).normal(size=(3, 4))])
    monkeypatch.setattr(GM, "RAKE_RECORDS", 50)     # where synthetic reads it
    past = model.synthetic(51, np.random.default_rng(2))
    assert np.array_equal(past, model.synthetic(51, np.random.default_rng(2), rake=False))
    within = model.synthetic(50, np.random.default_rng(2))
    assert within.shape == (50, 2)


def test_raking_never_leaves_rows_farther_than_it_found_them():
    # Fewer rows than cells (a sparse table): moves proposed alone pile into the few cells
    # short of a fraction of a record; at most one enters such a cell a pass, and the best
    # pass's rows are kept.
    weights = 1.0 / np.arange(1, 101)
    for seed in range(20):
        for n in (5, 10, 40):
            target = {(0,): weights / weights.sum() * n}
            rows = np.random.default_rng(seed).choice(100, size=(n, 1), p=weights / weights.sum())
            before = np.abs(np.bincount(rows[:, 0], minlength=100) - target[(0,)]).sum()
            GS.rake(rows, (100,), target, np.random.default_rng(seed))
            after = np.abs(np.bincount(rows[:, 0], minlength=100) - target[(0,)]).sum()
            assert after <= before + 1e-9 and rows.shape == (n, 1)


def test_the_models_cached_tables_are_read_only_and_follow_the_potentials():
    gen = np.random.default_rng(4)
    model = G.GraphicalModel((3, 4, 2), [(0, 1), (1, 2)], 100.0)
    first = model.measured_marginals()
    with pytest.raises(ValueError):
        first[0][0, 0] = -1.0
    with pytest.raises(ValueError):
        model.beliefs()[0][...] = 0.0
    model.set_potentials([gen.normal(size=t.shape) for t in model.potentials])
    again = model.measured_marginals()
    assert not np.allclose(again[0], first[0])
    np.testing.assert_allclose(again[0], model.marginal((0, 1)))
    # The same arrays in a new list: the cache stands (no second inference).
    model.set_potentials(list(model.potentials))
    assert model.measured_marginals()[0] is again[0]


def records(n=3000, seed=0):
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 3, n)
    b = (a + gen.integers(0, 2, n)) % 4
    c = gen.integers(0, 2, n)
    d = (b + c) % 3
    return {"a": a, "b": b, "c": c, "d": d}, {"a": [0, 1, 2], "b": [0, 1, 2, 3],
                                            "c": [0, 1], "d": [0, 1, 2]}


def test_marginals_method_model_charges_once_and_returns_the_models_tables():
    cols, keys = records()
    acct = dp.Accountant(rho=1.0)
    rel = dp.marginals(cols, keys=keys, k=2, noise="gaussian", rho=0.5, method="model",
                       accountant=acct, rng=1)
    assert acct.spent.rho == pytest.approx(0.5)
    assert rel.method == "model" and len(rel) == 6
    # Consistent (every shared one-way marginal equal) and non-negative.
    for name in keys:
        ones = [t.sum(axis=1 - lab.index(name)) for lab, t in rel.tables.items()
                if name in lab]
        for t in ones[1:]:
            np.testing.assert_allclose(t, ones[0], rtol=1e-9)
    assert all((t >= 0).all() for t in rel.tables.values())
    np.testing.assert_allclose(rel.tables[("a", "b")], rel.model.marginal((0, 1)))
    errors = rel.expected_error()
    assert all(v > 0 for v in errors.values())
    with pytest.raises(ValueError, match="expected_error"):
        rel.variance()
    with pytest.raises(ValueError, match="expected_error"):
        dp.marginal_variance(keys, k=2, noise="gaussian", rho=0.5, method="model")
    # Synthetic records labelled as the input, as many as the model's total by default.
    syn = rel.synthetic_records(rng=2)
    assert list(syn) == list(keys) and len(syn["a"]) == round(rel.model.total)
    assert set(syn["b"]) <= set(keys["b"])
    assert len(rel.synthetic_records(10, rng=3)["d"]) == 10
    with pytest.raises(TypeError, match="records"):
        rel.synthetic_records(1.5)


def test_marginals_method_model_with_a_dataframe_gives_a_dataframe():
    pd = pytest.importorskip("pandas")
    cols, keys = records()
    keys = {k: [f"v{x}" for x in v] for k, v in keys.items()}
    frame = pd.DataFrame({k: np.asarray(keys[k], dtype=object)[v] for k, v in cols.items()})
    rel = dp.marginals(frame, keys=keys, k=2, noise="gaussian", epsilon=1.0, delta=1e-6,
                       method="model", accountant=dp.Accountant(epsilon=1.0, delta=1e-6),
                       rng=4)
    syn = rel.synthetic_records(rng=5)
    assert isinstance(syn, pd.DataFrame) and list(syn.columns) == list(keys)
    assert set(syn["a"]) <= set(keys["a"])
    with pytest.raises(ValueError, match="method 'model'"):
        dp.marginals(frame, keys=keys, k=2, epsilon=1.0, accountant=dp.Accountant(),
                     rng=4).synthetic_records()


def test_a_model_past_the_clique_limit_is_refused_before_the_charge():
    gen = np.random.default_rng(0)
    keys = {f"x{i}": list(range(30)) for i in range(5)}       # all pairs: 30**5 cells
    cols = {k: gen.integers(0, 30, 100) for k in keys}
    acct = dp.Accountant(rho=1.0)
    with pytest.raises(ValueError, match="24,300,000 cells"):
        dp.marginals(cols, keys=keys, k=2, noise="gaussian", rho=0.5, method="model",
                     accountant=acct, rng=0)
    assert acct.spent.rho == 0.0


def test_one_model_answers_threads_alike():
    # A model is read-only once fitted: threads asking it (beliefs computed concurrently,
    # split cliques' matrix products) get the answers one thread gets.
    import threading
    shape = (8, 8, 8, 8, 8, 4)
    sets = list(itertools.combinations(range(6), 2))
    gen = np.random.default_rng(9)
    potentials = [gen.normal(size=[shape[a] for a in s]) for s in sets]
    one = G.GraphicalModel(shape, sets, 500.0)
    one.set_potentials(potentials)
    want = [one.marginal(s) for s in sets]
    shared = G.GraphicalModel(shape, sets, 500.0)
    shared.set_potentials(potentials)
    got: dict[int, list] = {}

    def ask(i):
        got[i] = [shared.marginal(s) for s in sets]
    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        for a, b in zip(got[i], want):
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_marginal_across_cliques_never_builds_the_whole_product():
    # P(a, b) = sum_c P(a, c) P(b, c) / P(c): the union (a, b, c) is past the clique limit
    # (600 * 600 * 50 cells), the answer is not; checked against the matrix product.
    shape = (600, 600, 50)
    gen = np.random.default_rng(4)
    model = G.GraphicalModel(shape, [(0, 2), (1, 2)], 1000.0)
    model.set_potentials([gen.normal(size=(600, 50)), gen.normal(size=(600, 50))])
    pac, pbc = model.marginal((0, 2)), model.marginal((1, 2))
    pc = pac.sum(axis=0)
    want = (pac / pc) @ pbc.T
    np.testing.assert_allclose(model.marginal((0, 1)), want, rtol=1e-9, atol=1e-12)


def test_estimate_refuses_bad_shapes_iterations_and_warm_models():
    m = G.Measurement((0,), np.ones(3), np.float32(1.0))       # numpy reals are reals
    assert G.estimate([m], (3,), iterations=2).total == pytest.approx(3.0)
    for shape in [(), (0,), (3.0,), (True,)]:
        with pytest.raises(ValueError, match="shape"):
            G.estimate([m], shape)
    with pytest.raises(ValueError, match="iterations"):
        G.estimate([m], (3,), iterations=0)
    other = G.estimate([G.Measurement((0,), np.ones(4), 1.0)], (4,), iterations=1)
    with pytest.raises(ValueError, match="warm"):
        G.estimate([m], (3,), warm=other)
    with pytest.raises(ValueError, match="expected_error"):
        other.expected_error((7,))


def test_a_marginal_over_more_than_52_attributes_of_a_chain():
    # einsum names at most 52 axes: a longer subtree is eliminated attribute by attribute.
    # A chain of 60 binary attributes: P(x0, x59) by the product of its transfer matrices.
    d = 60
    gen = np.random.default_rng(8)
    sets = [(i, i + 1) for i in range(d - 1)]
    model = G.GraphicalModel((2,) * d, sets, 100.0)
    model.set_potentials([gen.normal(size=(2, 2)) for _ in sets])
    chain = np.eye(2)
    for t in model.potentials:
        chain = chain @ np.exp(t)
    want = chain / chain.sum() * 100.0
    np.testing.assert_allclose(model.marginal((0, d - 1)), want, rtol=1e-9)


def test_synthetic_records_past_the_cap_are_refused():
    cols, keys = records(n=200)
    rel = dp.marginals(cols, keys=keys, k=2, noise="gaussian", rho=0.5, method="mst",
                       accountant=dp.Accountant(rho=1.0), rng=1)
    from dpfast.linear.marginal_release import MAX_RECORDS
    with pytest.raises(ValueError, match="records"):
        rel.synthetic_records(MAX_RECORDS + 1)
