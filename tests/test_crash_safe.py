"""Crash-safe releases into files: an in-place release killed (SIGKILL) at random points and
rerun ends exactly as an uninterrupted release with the same seed; in between, the journal
beside the file marks it incomplete; a rerun with other arguments is refused before anything
is charged.

The kill test runs on DPFAST_KILL_CELLS cells (default 10^7, about half a second per run here;
an acceptance run sets it to 2*10^8 and repeats the test).
"""
import os
import random
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import dpfast as dp
from dpfast.releases.histograms import BLOCK
from dpfast.releases.journal import JOURNAL_SUFFIX, UNDO_SUFFIX, Journal, block_sum
from refusals import rng_state, spends_nothing

CELLS = int(float(os.environ.get("DPFAST_KILL_CELLS", 1e7)))
KILLS = 3
SEED = 11


def make_table(path, n, dtype=np.int32):
    table = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(n,))
    table[:] = np.arange(n, dtype=np.int64) % 1000
    table.flush()
    return table


def expected(n, dtype=np.int32, seed=SEED):
    """The uninterrupted release (made in memory, no journal)."""
    table = (np.arange(n, dtype=np.int64) % 1000).astype(dtype)
    return dp.noisy_counts(table, epsilon=1.0, out=table, rng=seed,
                           accountant=dp.Accountant(), progress=False)


def journal_files(path):
    return [p for p in (path + JOURNAL_SUFFIX, path + UNDO_SUFFIX) if os.path.exists(p)]


def in_progress(path):
    """Whether a journal of an unfinished release is beside the file."""
    return os.path.exists(path + JOURNAL_SUFFIX) and Journal(path, {}, lock=False).resuming


def completed(path):
    """Whether the marker of a completed release is beside the file (and nothing else)."""
    return journal_files(path) == [path + JOURNAL_SUFFIX] and \
        Journal(path, {}, lock=False).released is not None


def start_release(path, ledger=None):
    args = [sys.executable, "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import processes; "
            "processes.release_file_in_place(sys.argv[2], int(sys.argv[3]), "
            "sys.argv[4] if len(sys.argv) > 4 else None)",
            os.path.dirname(__file__), path, str(SEED)] + ([ledger] if ledger else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_killed_in_place_release_completes_exactly_when_rerun(tmp_path):
    path = str(tmp_path / "cells.npy")
    make_table(path, CELLS)
    want = expected(CELLS)
    # How long an uninterrupted release takes here, to aim the kills inside it.
    timing = str(tmp_path / "timing.npy")
    make_table(timing, CELLS)
    t0 = time.perf_counter()
    assert start_release(timing).wait() == 0
    duration = time.perf_counter() - t0
    assert completed(timing)
    np.testing.assert_array_equal(np.load(timing, mmap_mode="r"), want)
    os.unlink(timing)

    original = np.arange(CELLS, dtype=np.int64) % 1000
    rng = random.Random(os.getpid() ^ time.time_ns())
    states = []
    for _ in range(KILLS):
        proc = start_release(path)
        time.sleep(rng.uniform(0.0, duration))
        proc.send_signal(signal.SIGKILL)
        code = proc.wait()
        if completed(path):       # finished before the kill (or killed while exiting)
            break
        assert code == -signal.SIGKILL
        table = np.load(path, mmap_mode="r")
        # Never silently half-noised: a file that is not untouched has its journal beside
        # it, which records what is done.
        assert in_progress(path) or np.array_equal(table, original)
        if in_progress(path):
            j = Journal(path, {}, lock=False)
            states.append((len(j.done), j.pending is not None))
        del table
    if not completed(path):
        assert start_release(path).wait() == 0
    np.testing.assert_array_equal(np.load(path, mmap_mode="r"), want)
    assert completed(path)
    # Once complete, the same release is refused: it would noise the cells twice.
    table = np.lib.format.open_memmap(path, mode="r+")
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="already released"):
        dp.noisy_counts(table, epsilon=1.0, out=table, accountant=acct, rng=gen)
    print("journal states at the kills (blocks done, a block in progress):", states)


def _has_a_record(journal):
    try:
        with open(journal, "rb") as f:
            return b"\n" in f.read(4096)
    except FileNotFoundError:
        return False


def test_journal_marks_the_file_and_holds_the_key_privately(tmp_path):
    path = str(tmp_path / "cells.npy")
    make_table(path, 3 * BLOCK)
    proc = start_release(path)
    deadline = time.time() + 30
    # Killed once the journal holds its first complete record (the start, with the key).
    while not _has_a_record(path + JOURNAL_SUFFIX) and time.time() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if not _has_a_record(path + JOURNAL_SUFFIX):
        pytest.skip("the release finished before it could be killed")
    assert stat.S_IMODE(os.stat(path + JOURNAL_SUFFIX).st_mode) == 0o600
    j = Journal(path, {}, lock=False)
    assert j.resuming and len(j.key) == 32 and j.state["epsilon"] == 1.0


def interrupted(tmp_path, n=3 * BLOCK, ledger=None):
    """A file whose release was killed while changing a block after its first, with its
    journal."""
    path = str(tmp_path / "cells.npy")
    make_table(path, n)
    proc = start_release(path, ledger)
    deadline = time.time() + 60
    while time.time() < deadline:
        if in_progress(path):
            j = Journal(path, {}, lock=False)
            if j.done and j.pending is not None:
                break
        time.sleep(0.0005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if not in_progress(path):
        pytest.skip("the release finished before it could be killed")
    return path


def test_a_rerun_with_other_arguments_is_refused_before_the_charge(tmp_path):
    path = interrupted(tmp_path)
    table = np.lib.format.open_memmap(path, mode="r+")
    before = np.array(table)
    acct, rng = dp.Accountant(epsilon=10.0), dp.ChaCha20(3)
    for kwargs, name in [({"epsilon": 0.5}, "epsilon"), ({"sensitivity": 2}, "sensitivity"),
                         ({"postprocess": "clip"}, "clip")]:
        args = {"epsilon": 1.0, **kwargs}
        with spends_nothing(acct, rng), pytest.raises(ValueError, match=f"interrupted.*{name}"):
            dp.noisy_counts(table, out=table, accountant=acct, rng=rng, **args)
    np.testing.assert_array_equal(table, before)
    # The same arguments complete it: charged once here (the killed run's accountant was
    # in memory), nothing drawn from rng.
    state = rng_state(rng)
    dp.noisy_counts(table, epsilon=1.0, out=table, accountant=acct, rng=rng)
    assert rng_state(rng) == state and acct.spent == (1.0, 0.0)
    assert "interrupted" in acct.ledger[0].label
    np.testing.assert_array_equal(table, expected(3 * BLOCK))
    assert completed(path)


def test_a_resume_on_the_same_ledger_is_not_charged_again(tmp_path):
    ledger = str(tmp_path / "budget.ledger")
    dp.Accountant(epsilon=1.5, ledger=ledger)
    path = interrupted(tmp_path, ledger=ledger)
    acct = dp.Accountant.from_ledger(ledger)
    assert acct.spent == (1.0, 0.0)                # charged before any block was touched
    table = np.lib.format.open_memmap(path, mode="r+")
    dp.noisy_counts(table, epsilon=1.0, out=table, accountant=acct)
    # one charge, and the completion's record that it stands (no cost)
    assert acct.spent == (1.0, 0.0) and len(acct) == 2
    assert acct.ledger[1].charged == (0.0, 0.0)
    np.testing.assert_array_equal(table, expected(3 * BLOCK))


def test_an_out_of_place_release_into_a_file_resumes_too(tmp_path):
    n = 3 * BLOCK + 5
    src = (np.arange(n, dtype=np.int64) % 1000).astype(np.int32)
    out_path = str(tmp_path / "out.npy")
    out = np.lib.format.open_memmap(out_path, mode="w+", dtype=np.int32, shape=(n,))
    dp.noisy_counts(src, epsilon=1.0, out=out, rng=SEED, accountant=dp.Accountant())
    np.testing.assert_array_equal(out, expected(n))
    assert completed(out_path)


def test_a_journal_cut_while_starting_is_discarded(tmp_path):
    path = str(tmp_path / "cells.npy")
    table = make_table(path, 1000)
    with os.fdopen(os.open(path + JOURNAL_SUFFIX, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(b'start {"func": "noisy_co')           # killed mid-write: no block touched
    dp.noisy_counts(table, epsilon=1.0, out=table, rng=SEED, accountant=dp.Accountant())
    np.testing.assert_array_equal(table, expected(1000))
    assert completed(path)


def test_a_damaged_saved_block_is_refused(tmp_path):
    path = interrupted(tmp_path)
    j = Journal(path, {}, lock=False)
    if j.pending is None:
        pytest.skip("killed between blocks: no saved block to damage")
    b = j.pending[0]
    with open(path + UNDO_SUFFIX, "r+b") as f:
        f.write(b"\xff\xff")
    table = np.lib.format.open_memmap(path, mode="r+")
    if block_sum(table[b * BLOCK:(b + 1) * BLOCK]) != j.state["sources"][b]:
        # The block was being changed: only the saved copy could put it back.
        with pytest.raises(ValueError, match="damaged"):
            dp.noisy_counts(table, epsilon=1.0, out=table, accountant=dp.Accountant())
    else:
        # Killed after the block was saved, before it changed: the saved copy is not
        # needed, and the rerun completes the release exactly.
        del table
        assert start_release(path).wait() == 0
        np.testing.assert_array_equal(np.load(path, mmap_mode="r"), expected(3 * BLOCK))


def test_two_processes_cannot_release_one_file_at_once(tmp_path):
    path = str(tmp_path / "cells.npy")
    make_table(path, 3 * BLOCK)
    proc = start_release(path)
    try:
        while not in_progress(path) and proc.poll() is None:
            time.sleep(0.0005)
        table = np.lib.format.open_memmap(path, mode="r+")
        acct, gen = dp.Accountant(), dp.ChaCha20(1)
        if proc.poll() is None:
            with spends_nothing(acct, gen), pytest.raises(ValueError, match="another process"):
                dp.noisy_counts(table, epsilon=1.0, out=table, accountant=acct, rng=gen)
    finally:
        assert proc.wait() == 0
    np.testing.assert_array_equal(np.load(path, mmap_mode="r"), expected(3 * BLOCK))


def test_a_copy_on_write_map_keeps_no_journal(tmp_path):
    # mode "c" changes memory only: the file is untouched, so there is nothing to resume.
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    table = np.load(path, mmap_mode="c")
    dp.noisy_counts(table, epsilon=1.0, out=table, rng=SEED, accountant=dp.Accountant())
    np.testing.assert_array_equal(table, expected(1000))
    assert not journal_files(path)
    np.testing.assert_array_equal(np.load(path), np.arange(1000) % 1000)
