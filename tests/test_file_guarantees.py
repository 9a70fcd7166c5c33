"""Releases into files hold on every path: a resume never publishes true counts, the files
beside a release cannot be planted by another user, and everything that can fail about the
files fails before the charge.

The kill tests run a real child (tests/file_release_child.py, as a script or forked)
releasing a real .npy file in place and SIGKILL it; the hostile-user tests run a child as a
second uid (nobody, 65534) when the tests run as root, and are skipped (with the reason)
otherwise; the full-disk tests mount a small tmpfs (root only).
"""
import errno
import json
import mmap
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native
from dpfast.ledger import encode
from dpfast.releases import histograms
from dpfast.releases.journal import JOURNAL_SUFFIX, UNDO_SUFFIX, Journal, block_sum
from refusals import spends_nothing

BLOCK = _native.CHUNK          # small blocks: many points to kill at in a small file
NBLOCKS = 16
CELLS = NBLOCKS * BLOCK + 123
SEED = 5
RUNS = int(os.environ.get("DPFAST_KILL_RUNS", 20))
CHILD = os.path.join(os.path.dirname(__file__), "file_release_child.py")
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")
OTHER_UID = 65534


def table_values(n=CELLS):
    return (np.arange(n, dtype=np.int64) % 1000).astype(np.int32)


def make_table(path, n=CELLS, values=None):
    table = np.lib.format.open_memmap(path, mode="w+", dtype=np.int32, shape=(n,))
    table[:] = table_values(n) if values is None else values
    table.flush()
    del table


def expected(values):
    """The uninterrupted release of these counts (in memory, no journal)."""
    return dp.noisy_counts(values.copy(), epsilon=1.0, rng=SEED, accountant=dp.Accountant(),
                           out=values.copy())


def start(path, fill=False):
    proc = subprocess.Popen([sys.executable, CHILD, path, str(SEED), str(BLOCK)]
                            + (["fill"] if fill else []),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def forked_release(path):
    """A forked child releasing the file in place (as the child script does, without an
    interpreter's start-up); returns its pid once it is about to start."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 1
        try:
            import file_release_child
            file_release_child.main(path, SEED, BLOCK,
                                    tell=lambda word: word == "ready" and os.write(w, b"ready\n"))
            code = 0
        except BaseException:
            import traceback
            os.write(2, traceback.format_exc().encode())
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        assert f.readline() == "ready\n"
    return pid


def exit_code(pid):
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def journal_state(path):
    try:
        return Journal(path, {}, lock=False)
    except FileNotFoundError:
        return None


def remove_journal(path):
    for p in (path + JOURNAL_SUFFIX, path + UNDO_SUFFIX):
        if os.path.exists(p):
            os.unlink(p)


def killed_after_a_block(path, fill=False):
    """Start a release of the file and SIGKILL it once its journal records a finished block
    and before it completes (retried with a fresh table if it finished first)."""
    for _ in range(20):
        make_table(path)
        proc = start(path, fill)
        while proc.poll() is None:
            j = journal_state(path)
            if j is not None and j.resuming and j.done and len(j.done) < NBLOCKS:
                proc.send_signal(signal.SIGKILL)
                break
        proc.wait()
        j = journal_state(path)
        if j is not None and j.resuming:
            return j
        remove_journal(path)
    pytest.skip("the release always finished before it could be killed")


def release_here(path, monkeypatch, **kwargs):
    monkeypatch.setattr(histograms, "BLOCK", BLOCK)
    cells = np.lib.format.open_memmap(path, mode="r+")
    return dp.noisy_counts(cells, epsilon=1.0, out=cells, progress=False, **kwargs)


@pytest.fixture
def public_tmp():
    """A new directory that every user can reach (pytest's own are its owner's only)."""
    d = tempfile.mkdtemp(prefix="dpfast-test-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def small_disk(tmp_path):
    """A directory on a tmpfs of 2 MiB (root only), unmounted afterwards."""
    d = tmp_path / "small"
    d.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(d)],
            capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield str(d)
    subprocess.run(["umount", "--lazy", str(d)], check=True)


# -- a resume cannot publish true values ---------------------------------------------------

def test_rerunning_the_readme_snippet_after_a_kill_is_refused(tmp_path, monkeypatch):
    # The README's snippet writes 7 into every cell, then releases in place. Killed after a
    # block, then run again unchanged: the journal's done block holds 7s again (true
    # counts); skipping it would publish them. The rerun is refused, nothing is written.
    path = str(tmp_path / "cells.npy")
    killed_after_a_block(path, fill=True)
    rerun = start(path, fill=True)
    out, err = rerun.communicate()
    assert rerun.returncode != 0 and "no longer hold" in err and "done" not in out
    assert journal_state(path).resuming                     # no "released" marker written
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="no longer hold"):
        release_here(path, monkeypatch, accountant=acct, rng=gen)
    assert (np.load(path) == 7).all()       # the caller's true counts: never called released


@pytest.mark.parametrize("how", ["np.save", "memmap"])
def test_fresh_counts_written_after_a_kill_are_refused(tmp_path, monkeypatch, how):
    path = str(tmp_path / "cells.npy")
    killed_after_a_block(path)
    fresh = table_values()[::-1].copy()
    if how == "np.save":
        np.save(path, fresh)
    else:
        cells = np.lib.format.open_memmap(path, mode="r+")
        cells[:] = fresh
        cells.flush()
        del cells
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="no longer hold"):
        release_here(path, monkeypatch, accountant=acct, rng=gen)
    np.testing.assert_array_equal(np.load(path), fresh)


def test_one_changed_block_not_yet_released_is_refused(tmp_path, monkeypatch):
    # Blocks not done must hold the source of the start: new counts there would be noised
    # under a key already used for the old ones.
    path = str(tmp_path / "cells.npy")
    j = killed_after_a_block(path)
    b = NBLOCKS - 1
    assert b not in j.done
    cells = np.lib.format.open_memmap(path, mode="r+")
    cells[b * BLOCK] += 1
    del cells
    with pytest.raises(ValueError, match="no longer hold"):
        release_here(path, monkeypatch, accountant=dp.Accountant())


def test_a_replaced_file_is_refused(tmp_path, monkeypatch):
    path = str(tmp_path / "cells.npy")
    killed_after_a_block(path)
    np.save(str(tmp_path / "new.npy"), table_values())
    os.replace(str(tmp_path / "new.npy"), path)            # same path, another inode
    with pytest.raises(ValueError, match="replaced"):
        release_here(path, monkeypatch, accountant=dp.Accountant())


def test_an_unchanged_file_completes_exactly(tmp_path, monkeypatch):
    path = str(tmp_path / "cells.npy")
    killed_after_a_block(path)
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    release_here(path, monkeypatch, accountant=acct, rng=gen)
    np.testing.assert_array_equal(np.load(path), expected(table_values()))
    assert acct.spent == (1.0, 0.0)       # the killed run's accountant was in memory


def test_kills_at_random_points_twenty_runs_in_a_row(tmp_path):
    # Each run: a fresh table, a release SIGKILLed at a random moment (or not at all), then
    # reruns until it completes. Every run must end exactly as one uninterrupted release.
    path = str(tmp_path / "cells.npy")
    want = expected(table_values())
    make_table(path)
    t0 = time.perf_counter()
    assert exit_code(forked_release(path)) == 0
    duration = time.perf_counter() - t0
    rng = random.Random(os.getpid() ^ time.time_ns())
    killed = 0
    for _ in range(RUNS):
        remove_journal(path)
        make_table(path)
        pid = forked_release(path)
        time.sleep(rng.uniform(0, duration))
        os.kill(pid, signal.SIGKILL)
        killed += exit_code(pid) == -signal.SIGKILL
        while True:
            j = journal_state(path)
            if j is not None and j.released is not None:
                break
            assert exit_code(forked_release(path)) == 0
        np.testing.assert_array_equal(np.load(path), want)
    assert killed > 0


# -- files no one else can plant -----------------------------------------------------------

def as_other_user(func, *args):
    """Run func(*args) in a forked child as uid/gid 65534; its exit code (0: returned)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            func(*args)
            code = 0
        except BaseException as exc:         # reported through the exit code
            sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        finally:
            os._exit(code)
    return exit_code(pid)


def shared_directory(public_tmp):
    """A directory everyone can write, like /tmp (sticky)."""
    d = os.path.join(public_tmp, "shared")
    os.mkdir(d)
    os.chmod(d, 0o1777)
    return d


def plant_journal(path, key, done):
    """A journal with the attacker's key that marks blocks done (as a hostile user)."""
    st = os.stat(path)
    start = {"func": "noisy_counts", "key": key.hex(), "sources": [], "ledger": None,
             "device": st.st_dev, "inode": st.st_ino}
    with os.fdopen(os.open(path + JOURNAL_SUFFIX, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(encode("start " + json.dumps(start)))
        for b in done:
            f.write(encode(f"done {b} 0000000000000000"))


def plant_file(path, mode=0o666):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.close(fd)
    os.chmod(path, mode)


@root_only
def test_a_journal_planted_by_another_user_is_refused_before_the_charge(public_tmp):
    d = shared_directory(public_tmp)
    path = os.path.join(d, "cells.npy")
    make_table(path)
    assert as_other_user(plant_journal, path, b"\x01" * 32, range(NBLOCKS + 1)) == 0
    cells = np.lib.format.open_memmap(path, mode="r+")
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="another user"):
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct, rng=gen)
    np.testing.assert_array_equal(cells, table_values())


@root_only
def test_an_undo_file_planted_by_another_user_receives_nothing(public_tmp):
    d = shared_directory(public_tmp)
    path = os.path.join(d, "cells.npy")
    make_table(path)
    assert as_other_user(plant_file, path + UNDO_SUFFIX) == 0
    cells = np.lib.format.open_memmap(path, mode="r+")
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="another user"):
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct, rng=gen)
    assert os.path.getsize(path + UNDO_SUFFIX) == 0       # no true count reached it


@pytest.mark.parametrize("where", [JOURNAL_SUFFIX, UNDO_SUFFIX])
def test_symbolic_links_beside_the_file_are_refused(tmp_path, where):
    path = str(tmp_path / "cells.npy")
    victim = str(tmp_path / "victim")
    with open(victim, "wb") as f:
        f.write(b"precious")
    make_table(path)
    os.symlink(victim, path + where)
    cells = np.lib.format.open_memmap(path, mode="r+")
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="symbolic link"):
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct, rng=gen)
    assert open(victim, "rb").read() == b"precious"


def test_a_hard_linked_undo_file_is_refused(tmp_path):
    path = str(tmp_path / "cells.npy")
    other = str(tmp_path / "mine.bin")
    plant_file(other, 0o600)
    make_table(path)
    os.link(other, path + UNDO_SUFFIX)
    cells = np.lib.format.open_memmap(path, mode="r+")
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="2 links"):
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct, rng=gen)
    assert os.path.getsize(other) == 0


def test_the_markers_temporary_file_follows_no_planted_link(tmp_path):
    # The marker is written to a new file with a random name, created exclusively: a link
    # planted at any predictable name is never followed.
    path = str(tmp_path / "cells.npy")
    victim = str(tmp_path / "victim")
    with open(victim, "wb") as f:
        f.write(b"precious")
    make_table(path, 1000)
    os.symlink(victim, path + JOURNAL_SUFFIX + ".tmp")
    cells = np.lib.format.open_memmap(path, mode="r+")
    dp.noisy_counts(cells, epsilon=1.0, out=cells, rng=SEED, accountant=dp.Accountant())
    assert open(victim, "rb").read() == b"precious"
    assert Journal(path, {}, lock=False).released is not None
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["cells.npy", "victim", "cells.npy" + JOURNAL_SUFFIX, "cells.npy" + JOURNAL_SUFFIX
         + ".tmp"])


def release_in(path, report):
    """As the other user: an in-place release of the file; the spend written to report."""
    cells = np.lib.format.open_memmap(path, mode="r+")
    acct = dp.Accountant()
    try:
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct)
    finally:
        with open(report, "w") as f:
            f.write(repr(acct.spent))


@root_only
def test_a_directory_the_caller_cannot_write_fails_before_the_charge(public_tmp):
    d = os.path.join(public_tmp, "readonly")
    os.mkdir(d, 0o755)                        # root's: the other user cannot create files
    path = os.path.join(d, "cells.npy")
    make_table(path, 1000)
    os.chmod(path, 0o666)                      # ...but may write the cells
    report = os.path.join(public_tmp, "report")
    plant_file(report, 0o666)
    assert as_other_user(release_in, path, report) == 1
    assert open(report).read() == repr((0.0, 0.0))
    np.testing.assert_array_equal(np.load(path), table_values(1000))
    assert not os.path.exists(path + JOURNAL_SUFFIX)


def test_a_full_disk_fails_before_the_charge(small_disk, monkeypatch):
    path = os.path.join(small_disk, "cells.npy")
    make_table(path, 7 * BLOCK)               # 1.75 MiB of cells: no room for the undo copy
    monkeypatch.setattr(histograms, "BLOCK", 2 * BLOCK)
    cells = np.lib.format.open_memmap(path, mode="r+")
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(OSError) as info:
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct, rng=gen)
    assert info.value.errno == errno.ENOSPC and "nothing was charged" in str(info.value)
    np.testing.assert_array_equal(cells, table_values(7 * BLOCK))
    del cells, info
    assert sorted(os.listdir(small_disk)) == ["cells.npy"]


def _release_into_sparse_file(directory, report):
    src = table_values(1 << 19).astype(np.int64)
    out = np.lib.format.open_memmap(os.path.join(directory, "out.npy"), mode="w+",
                                    dtype=np.int64, shape=src.shape)        # holes: 4 MiB
    acct = dp.Accountant()
    try:
        dp.noisy_counts(src, epsilon=1.0, out=out, accountant=acct)
    except OSError as exc:
        with open(report, "w") as f:
            f.write(f"{exc.errno} {acct.spent}")


def test_a_sparse_file_on_a_full_disk_fails_before_the_charge(small_disk, tmp_path):
    # Writing noise into a sparse file's holes on a full disk would kill the process
    # (SIGBUS) after the charge: the cells' space is allocated first.
    report = str(tmp_path / "report")
    pid = os.fork()
    if pid == 0:
        try:
            _release_into_sparse_file(small_disk, report)
        finally:
            os._exit(0)
    assert exit_code(pid) == 0                                          # no SIGBUS
    assert open(report).read() == f"{errno.ENOSPC} (0.0, 0.0)"


# -- other paths ---------------------------------------------------------------------------

def test_an_unknown_journal_record_is_refused(tmp_path, monkeypatch):
    path = str(tmp_path / "cells.npy")
    killed_after_a_block(path)
    with open(path + JOURNAL_SUFFIX, "ab") as f:
        f.write(encode("skip 3"))
    with pytest.raises(ValueError, match="unknown kind"):
        release_here(path, monkeypatch, accountant=dp.Accountant())


def test_power_loss_durability_gives_the_same_release(tmp_path):
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    cells = np.lib.format.open_memmap(path, mode="r+")
    dp.noisy_counts(cells, epsilon=1.0, out=cells, rng=SEED, accountant=dp.Accountant(),
                    durability="power")
    np.testing.assert_array_equal(cells, expected(table_values(1000)))
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="durability"):
        dp.noisy_counts(table_values(10), epsilon=1.0, accountant=acct, rng=gen,
                        durability="disk")


def test_an_array_over_a_raw_mapping_is_released(tmp_path):
    # An ndarray whose base is an mmap.mmap (not a numpy.memmap): no journal, no crash.
    path = str(tmp_path / "raw.bin")
    with open(path, "wb") as f:
        f.write(table_values(1000).tobytes())
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
    arr = np.ndarray((1000,), dtype=np.int32, buffer=m)
    dp.noisy_counts(arr, epsilon=1.0, out=arr, rng=SEED, accountant=dp.Accountant())
    np.testing.assert_array_equal(arr, expected(table_values(1000)))
    del arr
    m.close()


def test_a_journal_written_by_hand_naming_the_ledger_is_charged(tmp_path):
    # A journal naming this accountant's ledger, with a key of its author's choosing, finds
    # no charge committed to that key in the ledger: the "resume" pays like any release
    # (here the budget is spent, so it is refused, and the file is untouched).
    ledger = str(tmp_path / "budget.ledger")
    acct = dp.Accountant(epsilon=1.0, ledger=ledger)
    acct.spend(1.0)
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    cells = np.lib.format.open_memmap(path, mode="r+")
    j = Journal.for_release(cells, {"func": "noisy_counts", "source": "in place",
                                    "epsilon": 1.0, "sensitivity": 1.0, "clip": False,
                                    "block": histograms.BLOCK})
    state = {**j.params, "key": (b"\x07" * 32).hex(), "ledger": os.path.realpath(ledger),
             "sources": [block_sum(np.asarray(cells))], "pid": 1, "time": 0.0}
    j.close()
    with os.fdopen(os.open(path + JOURNAL_SUFFIX, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(encode("start " + json.dumps(state)))
    with pytest.raises(dp.BudgetExceededError):
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct)
    np.testing.assert_array_equal(cells, table_values(1000))
    # With budget left, the forged resume is charged as a completion.
    other = str(tmp_path / "other.ledger")
    acct2 = dp.Accountant(epsilon=2.0, ledger=other)
    state["ledger"] = os.path.realpath(other)
    with open(path + JOURNAL_SUFFIX, "wb") as f:
        f.write(encode("start " + json.dumps(state)))
    dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct2)
    assert acct2.spent == (1.0, 0.0) and "interrupted" in acct2.ledger[-1].label


def test_a_genuine_resume_is_proved_by_its_committed_charge(tmp_path, monkeypatch):
    ledger = str(tmp_path / "budget.ledger")
    dp.Accountant(epsilon=1.5, ledger=ledger)
    path = str(tmp_path / "cells.npy")
    killed_after_a_block_in(path, ledger)          # charged in the ledger, then killed
    acct = dp.Accountant.from_ledger(ledger)
    assert acct.spent == (1.0, 0.0) and len(acct.ledger) == 1
    release_here(path, monkeypatch, accountant=acct)
    # Not charged twice: the completion redeems the committed charge, once, with a durable
    # record of no cost.
    assert acct.spent == (1.0, 0.0) and len(acct.ledger) == 2
    assert acct.ledger[1].charged == (0.0, 0.0) and "stands" in acct.ledger[1].label
    np.testing.assert_array_equal(np.load(path), expected(table_values()))


def _forge_journal(cells, path, key, ledger):
    """A journal written by hand naming ``ledger`` and ``key`` (as an attacker would)."""
    j = Journal.for_release(cells, {"func": "noisy_counts", "source": "in place",
                                    "epsilon": 1.0, "sensitivity": 1.0, "clip": False,
                                    "block": histograms.BLOCK})
    flat = np.asarray(cells).reshape(-1)
    state = {**j.params, "key": key.hex(), "ledger": os.path.realpath(ledger),
             "sources": [block_sum(flat[b * histograms.BLOCK:(b + 1) * histograms.BLOCK])
                         for b in range(-(-flat.size // histograms.BLOCK))],
             "pid": 1, "time": 0.0}
    j.close()
    with os.fdopen(os.open(path + JOURNAL_SUFFIX, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                           0o600), "wb") as f:
        f.write(encode("start " + json.dumps(state)))


@pytest.mark.parametrize("decoy", ["lease", "partition", "label"])
def test_no_label_or_lease_or_block_stands_for_a_committed_charge(tmp_path, decoy):
    # A commitment is a detail only Release.charge writes, on a sequential charge: a lease
    # returned in full, a partition of a parallel block or a spend labelled with the old
    # "[release <digest>]" tag does not pay for a forged journal's key.
    from dpfast._release import key_digest
    ledger = str(tmp_path / "budget.ledger")
    acct = dp.Accountant(epsilon=2.0, ledger=ledger)
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    cells = np.lib.format.open_memmap(path, mode="r+")
    key = b"\x07" * 32
    _forge_journal(cells, path, key, ledger)
    tag = f"noisy_counts [release {key_digest(key)}]"
    if decoy == "lease":
        with acct.lease(epsilon=1.0, label=tag):
            pass                                    # the whole slice comes back
    elif decoy == "partition":
        with acct.parallel() as block:
            block.spend(1.0, label="a real release on another partition")
            block.spend(1.0, label=tag)
    else:
        acct.spend(0.5, label=tag)
    before = acct.spent[0]
    dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct)
    assert acct.spent[0] == before + 1.0             # the completion paid its epsilon


def test_a_committed_charge_is_redeemed_once(tmp_path, monkeypatch):
    # A genuine release is killed and completed (free: its charge stands, redeemed); a
    # journal for other data naming the same key must pay: one charge, one completion.
    monkeypatch.setattr(histograms, "BLOCK", BLOCK)
    ledger = str(tmp_path / "budget.ledger")
    dp.Accountant(epsilon=3.0, ledger=ledger)
    path = str(tmp_path / "cells.npy")
    killed_after_a_block_in(path, ledger)
    key = bytes.fromhex(journal_state(path).state["key"])
    acct = dp.Accountant.from_ledger(ledger)
    release_here(path, monkeypatch, accountant=acct)
    assert acct.spent == (1.0, 0.0)
    other = str(tmp_path / "other.npy")
    make_table(other, values=(np.arange(CELLS, dtype=np.int64) * 7) % 1000)
    c2 = np.lib.format.open_memmap(other, mode="r+")
    _forge_journal(c2, other, key, ledger)
    dp.noisy_counts(c2, epsilon=1.0, out=c2, accountant=acct)
    assert acct.spent == (2.0, 0.0)


def killed_after_a_block_in(path, ledger):
    """A release of a new table at ``path`` charged to ``ledger``, killed just after its
    first block."""
    make_table(path)
    pid = os.fork()
    if pid == 0:
        try:
            from dpfast.releases import journal as jmod
            histograms.BLOCK = BLOCK
            real = jmod.Journal.mark_done

            def die_after_first(self, b, block):
                real(self, b, block)
                os._exit(9)
            jmod.Journal.mark_done = die_after_first
            cells = np.lib.format.open_memmap(path, mode="r+")
            dp.noisy_counts(cells, epsilon=1.0, out=cells, rng=SEED,
                            accountant=dp.Accountant.from_ledger(ledger))
        finally:
            os._exit(1)
    assert exit_code(pid) == 9


def test_the_journal_exists_before_the_charge(tmp_path, monkeypatch):
    # Created (exclusively, ours) before the charge: no one can take its name in between
    # and make the release fail after it was paid for.
    from dpfast._release import Release
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    seen = []
    real = Release.charge

    def spy(self, *args, **kwargs):
        st = os.lstat(path + JOURNAL_SUFFIX)
        seen.append((st.st_uid == os.geteuid(), st.st_mode & 0o777))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Release, "charge", spy)
    cells = np.lib.format.open_memmap(path, mode="r+")
    dp.noisy_counts(cells, epsilon=1.0, out=cells, rng=SEED, accountant=dp.Accountant())
    assert seen == [(True, 0o600)]
    # A refused charge leaves nothing behind.
    make_table(path, 1000)
    os.unlink(path + JOURNAL_SUFFIX)
    with pytest.raises(dp.BudgetExceededError):
        dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=dp.Accountant(epsilon=0.5))
    assert sorted(os.listdir(tmp_path)) == ["cells.npy"]


def test_no_true_counts_stay_beside_a_completed_release(tmp_path):
    # Killed just as the marker lands: the saved block (true counts) is already gone, and
    # the journal still says every block is done, so a rerun just completes.
    path = str(tmp_path / "cells.npy")
    make_table(path)
    pid = os.fork()
    if pid == 0:
        try:
            from dpfast.releases import journal as jmod
            jmod.os = type("os_dying_at_replace", (), {
                **{k: getattr(os, k) for k in dir(os) if not k.startswith("__")},
                "replace": staticmethod(lambda *a: os._exit(9))})
            histograms.BLOCK = BLOCK
            cells = np.lib.format.open_memmap(path, mode="r+")
            dp.noisy_counts(cells, epsilon=1.0, out=cells, rng=SEED, accountant=dp.Accountant())
        finally:
            os._exit(1)
    assert exit_code(pid) == 9
    assert not os.path.exists(path + UNDO_SUFFIX)
    assert start(path).wait() == 0
    np.testing.assert_array_equal(np.load(path), expected(table_values()))
    assert Journal(path, {}, lock=False).released is not None


def test_two_maps_of_one_file_are_one_release_in_place(tmp_path):
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    a = np.lib.format.open_memmap(path, mode="r+")
    b = np.lib.format.open_memmap(path, mode="r+")
    dp.noisy_counts(a, epsilon=1.0, out=b, rng=SEED, accountant=dp.Accountant())
    np.testing.assert_array_equal(b, expected(table_values(1000)))
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="already released"):
        dp.noisy_counts(a, epsilon=1.0, out=b, accountant=acct, rng=gen)
    with spends_nothing(acct, gen), pytest.raises(ValueError, match="overlaps"):
        dp.noisy_counts(a[1:], epsilon=1.0, out=b[:-1], accountant=acct, rng=gen)


def test_a_memmap_of_an_unnamed_file_is_refused(tmp_path):
    with tempfile.TemporaryFile(dir=tmp_path) as f:
        f.write(table_values(1000).tobytes())
        f.flush()
        cells = np.memmap(f, dtype=np.int32, mode="r+", shape=(1000,))
        acct, gen = dp.Accountant(), dp.ChaCha20(1)
        with spends_nothing(acct, gen), pytest.raises(ValueError, match="by its path"):
            dp.noisy_counts(cells, epsilon=1.0, out=cells, accountant=acct, rng=gen)
        np.testing.assert_array_equal(cells, table_values(1000))
        del cells


def test_a_fifo_at_the_journal_is_refused_without_hanging(tmp_path):
    path = str(tmp_path / "cells.npy")
    make_table(path, 1000)
    os.mkfifo(path + JOURNAL_SUFFIX, 0o600)
    out = subprocess.run(
        [sys.executable, "-c", "import sys, numpy as np, dpfast as dp; "
         "c = np.lib.format.open_memmap(sys.argv[1], mode='r+'); "
         "dp.noisy_counts(c, epsilon=1.0, out=c, accountant=dp.Accountant())", path],
        capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "not a regular file" in out.stderr
    np.testing.assert_array_equal(np.load(path), table_values(1000))
