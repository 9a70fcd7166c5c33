"""dpfast.pieces: dp.group_by of a table held in pieces by an engine equals dp.group_by of the
pieces concatenated, with the same seed, for any split into pieces and on an engine of real
processes; an engine that changes a piece between the reads, skips or repeats a piece or a
bucket, releases nothing; bad input is refused before the charge, with the row's position in
the whole table."""
import concurrent.futures
import pickle

import numpy as np
import pandas as pd
import pytest

import dpfast as dp
from dpfast import pieces

EPS, DELTA = 1.0, 1e-6


def split(frame, cuts):
    """The frame cut into pieces at the row positions ``cuts``."""
    edges = [0, *cuts, len(frame)]
    return [frame.iloc[a:b] for a, b in zip(edges[:-1], edges[1:])]


def budget():
    return dp.Accountant(epsilon=EPS, delta=DELTA)


@pytest.fixture(scope="module")
def rows():
    gen = np.random.default_rng(0)
    n = 20_000
    return pd.DataFrame({"dept": gen.integers(0, 60, n), "user": gen.integers(0, 3_000, n),
                         "salary": gen.uniform(0.0, 100.0, n)})


CASES = {
    "private keys": dict(agg=dict(n="count", total=("salary", "sum"), avg=("salary", "mean"))),
    "public keys, some absent": dict(keys=[3, 5, 7, 100], agg=dict(
        n="count", v=("salary", "variance"))),
    "median per key": dict(keys=list(range(10)), agg=dict(med=("salary", "median"))),
    "weighted rule": dict(rule="gaussian", agg=dict(n="count", avg=("salary", "mean"))),
    "no privacy unit": dict(unit=None, agg=dict(n="count", avg=("salary", "mean"))),
}


def release(data, case, engine=None):
    c = CASES[case]
    unit = c.get("unit", "user")
    grouping = dict(privacy_unit=unit, max_groups=2, max_rows=3, keys=c.get("keys"))
    if unit is None:
        grouping.pop("max_groups"), grouping.pop("max_rows")
    kw = dict(epsilon=EPS, delta=DELTA if c.get("keys") is None else None,
              bounds={"salary": (0.0, 100.0)}, rng=11, accountant=budget(), **c["agg"])
    if "rule" in c:
        kw.update(selection_rule=c["rule"], noise="gaussian")
    if engine is None:
        return dp.group_by(data, "dept", **grouping).agg(**kw)
    return pieces.group_by(engine, data.iloc[:0], "dept", **grouping).agg(**kw)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("cuts", [[7_000, 13_000], [1, 19_999], [], [0, 0, 20_000]])
def test_the_same_release_as_the_whole_table(rows, case, cuts):
    want = release(rows, case)
    got = release(rows, case, pieces.LocalPieces(split(rows, cuts)))
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_more_pieces_than_buckets_give_the_same_release(rows, monkeypatch):
    monkeypatch.setattr(pieces, "MAX_BUCKETS", 3)
    cuts = list(range(2_500, 20_000, 2_500))                   # 8 pieces into 3 buckets
    pd.testing.assert_frame_equal(release(rows, "private keys", pieces.LocalPieces(
        split(rows, cuts))), release(rows, "private keys"), check_exact=True)


class ProcessPieces:
    """An engine of real processes: every step pickled and run in a pool of 2."""

    def __init__(self, frames, pool):
        self.frames, self.pool = frames, pool

    def map(self, fn):
        return list(self.pool.map(fn, range(len(self.frames)), self.frames))

    def shuffle(self, split, combine):
        outs = self.pool.map(split, range(len(self.frames)), self.frames)
        by_bucket = {}
        for out in outs:
            for b, blob in out:
                by_bucket.setdefault(b, []).append(blob)
        return list(self.pool.map(combine, list(by_bucket), list(by_bucket.values())))


def test_an_engine_of_processes_gives_the_same_release(rows):
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        engine = ProcessPieces(split(rows, [4_000, 9_000, 15_000]), pool)
        for case in ("private keys", "median per key"):
            pd.testing.assert_frame_equal(release(rows, case, engine), release(rows, case),
                                          check_exact=True)


class Misbehaving(pieces.LocalPieces):
    """A local engine that misbehaves in one way, at one of its calls."""

    def __init__(self, frames, fault):
        super().__init__(frames)
        self.fault, self.maps = fault, 0

    def map(self, fn):
        self.maps += 1
        out = super().map(fn)
        if self.fault == "skip" and self.maps == 1:
            return out[1:]
        if self.fault == "repeat" and self.maps == 2:
            return out + out[:1]
        # A piece recomputed from a changed input: after its scan, or after its digest.
        if self.fault == "change" or (self.fault == "change late" and self.maps == 2):
            self.frames[1] = self.frames[1].assign(salary=self.frames[1]["salary"] * 0.5)
        return out

    def shuffle(self, split, combine):
        out = super().shuffle(split, combine)
        if self.fault == "bucket twice":
            return out + out[:1]
        if self.fault == "bucket lost":
            return out[1:]
        return out



class Mislabelling(pieces.LocalPieces):
    """An engine that sends piece 1's rows of bucket 0 to the call of bucket 1 (so a person
    with rows in pieces 0 and 1 would be bounded twice), or merges two buckets' calls."""

    def __init__(self, frames, fault):
        super().__init__(frames)
        self.fault = fault

    def shuffle(self, split, combine):
        blobs = {}
        for i, f in enumerate(self.frames):
            for b, blob in split(i, f):
                moved = self.fault == "moved" and i == 1 and b == 0
                blobs.setdefault(1 if moved else b, []).append(blob)
        if self.fault == "merged":
            blobs[0] = blobs[0] + blobs.pop(1)
        return [combine(b, got) for b, got in blobs.items()]


@pytest.mark.parametrize("fault, charged", [("skip", False), ("repeat", False),
                                            ("change", False), ("change late", True),
                                            ("bucket twice", True),
                                            ("bucket lost", True), ("moved", True),
                                            ("merged", True)])
def test_a_misbehaving_engine_releases_nothing(rows, fault, charged):
    acct = budget()
    kind = Mislabelling if fault in ("moved", "merged") else Misbehaving
    engine = kind(split(rows, [5_000, 12_000]), fault)
    with pytest.raises(RuntimeError, match="nothing"):
        pieces.group_by(engine, rows.iloc[:0], "dept", privacy_unit="user", max_rows=3).agg(
            n="count", avg=("salary", "mean"), bounds={"salary": (0.0, 100.0)}, epsilon=EPS,
            delta=DELTA, accountant=acct, rng=1)
    # Refused before the charge (a map that skipped or repeated a piece, a piece changed
    # after its scan) or after it (a piece changed after its digest, buckets mixed up).
    assert (acct.spent.epsilon > 0) == charged


@pytest.mark.parametrize("ids", [
    ("float -0.0", [np.array([0.0, -0.0])], None),
    ("int widths", [np.array([-1], np.int64), np.array([-1], np.int32)], None),
    ("float widths", [np.array([1.5], np.float64), np.array([1.5], np.float32)], None),
    ("time units", [np.array(["2020-01-01"], "datetime64[s]"),
                    np.array(["2020-01-01"], "datetime64[ns]")], None),
], ids=lambda i: i[0])
def test_one_person_stored_in_several_forms_is_bounded_once(ids):
    # Every form of one id goes to one bucket: with max_rows=1 and a large epsilon the
    # count shows the one row kept, as dp.group_by of the pieces concatenated keeps.
    _, forms, _ = ids
    frames = [pd.DataFrame({"k": np.zeros(f.size, np.int64), "u": f}) for f in forms]
    frames += [frames[0].iloc[:0]] * 3                  # more buckets than people
    kw = dict(n="count", epsilon=1e6, rng=3, accountant=dp.Accountant())
    got = pieces.group_by(pieces.LocalPieces(frames), frames[0].iloc[:0], "k",
                          privacy_unit="u", max_rows=1, keys=[0]).agg(**kw)
    whole = dp.group_by(pd.concat(frames, ignore_index=True), "k", privacy_unit="u",
                        max_rows=1, keys=[0]).agg(**{**kw, "accountant": dp.Accountant()})
    assert round(float(got["n"].iloc[0])) == round(float(whole["n"].iloc[0])) == 1


def test_a_piece_given_twice_to_a_bucket_is_refused(rows):
    class Twice(pieces.LocalPieces):
        def shuffle(self, split, combine):
            blobs = {}
            for i, f in enumerate(self.frames):
                for b, blob in split(i, f):
                    blobs.setdefault(b, []).append(blob)
            blobs[0] = blobs[0] + blobs[0][:1]
            return [combine(b, got) for b, got in blobs.items()]
    with pytest.raises(RuntimeError, match="twice; nothing"):
        pieces.group_by(Twice(split(rows, [9_000])), rows.iloc[:0], "dept",
                        privacy_unit="user").agg(n="count", epsilon=EPS, delta=DELTA,
                                                 accountant=budget(), rng=1)


def test_bad_input_is_refused_before_the_charge_with_the_whole_tables_position(rows):
    bad = rows.copy()
    bad.loc[12_345, "salary"] = np.nan
    acct = budget()
    frames = split(bad, [5_000, 12_000])
    with pytest.raises(ValueError) as e:
        pieces.group_by(pieces.LocalPieces(frames), bad.iloc[:0], "dept",
                        privacy_unit="user").agg(
            avg=("salary", "mean"), bounds={"salary": (0.0, 100.0)}, epsilon=EPS,
            delta=DELTA, accountant=acct)
    with pytest.raises(ValueError) as whole:
        dp.group_by(bad, "dept", privacy_unit="user").agg(
            avg=("salary", "mean"), bounds={"salary": (0.0, 100.0)}, epsilon=EPS,
            delta=DELTA, accountant=budget())
    assert str(e.value) == str(whole.value) and "12345" in str(e.value)
    assert acct.spent.epsilon == 0
    with pytest.raises(ValueError, match="no pieces"):
        pieces.group_by(pieces.LocalPieces([]), rows.iloc[:0], "dept").agg(
            n="count", epsilon=EPS, delta=DELTA, accountant=acct)
    assert acct.spent.epsilon == 0


def test_engine_and_meta_checked_at_once(rows):
    with pytest.raises(TypeError, match="'engine'"):
        pieces.group_by([rows], rows.iloc[:0], "dept")
    with pytest.raises(TypeError, match="'meta'"):
        pieces.group_by(pieces.LocalPieces([rows]), rows.to_numpy(), "dept")
    with pytest.raises(ValueError):                      # a column meta does not have
        pieces.group_by(pieces.LocalPieces([rows]), rows.iloc[:0], "nope")


def test_the_steps_pickle_and_the_module_examples_run():
    import doctest
    result = doctest.testmod(pieces, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
    step = pieces._Step(len)
    assert pickle.loads(step(3, [1, 2])) == (3, 2)
    assert pickle.loads(pickle.dumps(step))(0, "ab") == pickle.dumps((0, 2))
