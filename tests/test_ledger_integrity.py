"""A ledger that fails closed: failed writes charge nothing, damage of every kind exhausts the
budget (naming the line, never the record), files someone else could write are refused, and
the descriptors and blocks of an accountant are owned state."""
import contextlib
import copy
import hmac
import json
import multiprocessing
import os
import pickle
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

import dpfast as dp
from dpfast.ledger import encode

MARKER = "QX7-marker-4417"
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root to run a child as another uid")


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "budget.ledger")


def _three_charges(path, delta=0.0):
    acct = dp.Accountant(epsilon=1.0, delta=delta, ledger=path)
    for i in range(3):
        acct.spend(0.25, label=f"{MARKER}-{i}")
    del acct
    return open(path, "rb").read().splitlines(keepends=True)


def _rewrite(path, lines):
    """Write the file in place (same inode, as an editor with O_TRUNC would)."""
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(b"".join(lines))


def _recrc(line):
    payload = line.rstrip(b"\n").rpartition(b"\t")[0]
    return encode(payload.decode())


def _in_child(body):
    """Run body() in a forked child; its return value (JSON) comes back, or its error."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        try:
            out = {"ok": body()}
        except BaseException as exc:     # reported to the parent, which fails the test
            out = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(wr, json.dumps(out).encode())
        os._exit(0)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert "error" not in out, out["error"]
    return out["ok"]


def assert_exhausted(path, line, what):
    """Damage at ``line``: refused at open, or the whole budget shown as spent and every
    spend refused; the message names the line and never the records' contents."""
    size = os.path.getsize(path) if os.path.exists(path) else None
    try:
        acct = dp.Accountant.from_ledger(path)
    except dp.LedgerDamagedError as exc:
        msg = str(exc)
    else:
        assert acct.spent == (acct.epsilon, acct.delta) and acct.remaining == (0.0, 0.0)
        assert not acct.check(1e-9)
        with pytest.raises(dp.LedgerDamagedError) as info:
            acct.spend(1e-9)
        assert isinstance(info.value, dp.BudgetExceededError)
        assert isinstance(info.value, dp.LedgerError)
        msg = str(info.value)
        del acct
    assert f"line {line}: " in msg and what in msg, msg
    assert MARKER not in msg and "25e-2" not in msg
    if size is not None:
        assert os.path.getsize(path) == size          # nothing written


# -- damage of every kind ---------------------------------------------------------------
DAMAGE = {
    "middle record removed": (lambda ls: ls[:2] + ls[3:], 3, "charge 3 where charge 2"),
    "last record removed": (lambda ls: ls[:3], 4, "charge 3 was written"),
    "cut back to the header": (lambda ls: ls[:1], 2, "charge 3 was written"),
    "reordered": (lambda ls: [ls[0], ls[1], ls[3], ls[2]], 3, "charge 3 where charge 2"),
    "repeated": (lambda ls: ls[:3] + [ls[2]] + ls[3:], 4, "charge 2 where charge 3"),
    "checksum failure": (lambda ls: ls[:2] + [ls[2].replace(b'"label":"', b'"label":"x')]
                         + ls[3:], 3, "fails its checksum"),
    "amount edited, CRC fixed": (lambda ls: ls[:2] + [_recrc(ls[2].replace(
        b"charge 2 25e-2", b"charge 2 5e-2"))] + ls[3:], 3, "fails its MAC"),
    "unknown kind": (lambda ls: ls + [encode("refund 4 25e-2")], 5, "unknown kind"),
    "second budget record": (lambda ls: ls + [ls[0]], 5, "a second budget record"),
    "cut short": (lambda ls: ls[:3] + [ls[3][:-10]], 4, "cut short"),
    "emptied": (lambda ls: [], 1, "empty"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damage_exhausts_the_ledger_and_names_its_line(path, kind):
    change, line, what = DAMAGE[kind]
    _rewrite(path, change(_three_charges(path)))
    assert_exhausted(path, line, what)


@pytest.mark.parametrize("charges", [0, 3])
def test_a_budget_raised_by_hand_is_refused_at_open(path, charges):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    for _ in range(charges):
        acct.spend(0.25)
    del acct
    lines = open(path, "rb").read().splitlines(keepends=True)
    lines[0] = _recrc(lines[0].replace(b"budget 1e0 ", b"budget 9e0 "))
    _rewrite(path, lines)
    assert_exhausted(path, 1, "fails its MAC")
    with pytest.raises(dp.LedgerDamagedError, match="line 1"):
        dp.Accountant(epsilon=9.0, ledger=path)


def test_a_running_total_that_does_not_add_up(path):
    # Only a holder of the key can write such a record (a bug, or the owner): it is caught.
    lines = _three_charges(path)
    key = bytes.fromhex(open(path + ".dpfast-key").readline().split()[2])
    ledger_id = lines[0].split(b"\t")[0].split()[7].decode()
    prev = lines[3].split(b" ")[7].decode()
    body = f"charge 4 1e-1 0e-330 5e-1 0e-330 {prev}"          # total should be 85e-2
    text = json.dumps({"label": None})
    mac = hmac.digest(key, f"{ledger_id} {body} {text}".encode(), "sha256")[:16].hex()
    _rewrite(path, lines + [encode(f"{body} {mac} {text}")])
    assert_exhausted(path, 5, "running total does not add up")


def test_a_deleted_ledger_with_its_key_left_is_refused(path):
    _three_charges(path)
    os.unlink(path)
    assert_exhausted(path, 1, "missing while its key file")
    with pytest.raises(dp.LedgerDamagedError, match="missing while its key file"):
        dp.Accountant(epsilon=1.0, ledger=path)        # never a fresh budget
    assert not os.path.exists(path)


def test_an_existing_empty_file_is_never_a_new_budget(path):
    open(path, "wb").close()
    with pytest.raises(dp.LedgerDamagedError, match="line 1: the file is empty"):
        dp.Accountant(epsilon=1.0, ledger=path)
    assert os.path.getsize(path) == 0


def test_the_first_format_is_refused_with_a_way_forward(path):
    with open(path, "wb") as f:
        f.write(encode("budget 1e0 0e0 1 basic -"))
        f.write(encode('charge 25e-2 0e0 {"label":"x"}'))
    for opened in (lambda: dp.Accountant.from_ledger(path),
                   lambda: dp.Accountant(epsilon=1.0, ledger=path)):
        with pytest.raises(dp.LedgerError, match="first ledger format.*start a new ledger"):
            opened()


def test_a_long_lived_accountant_does_not_heal_a_removed_record(path):
    old = dp.Accountant(epsilon=1.0, ledger=path)
    old.spend(0.25)
    old.spend(0.25)
    other = dp.Accountant.from_ledger(path)
    other.spend(0.25)                               # charge 3, never read by `old`
    del other
    lines = open(path, "rb").read().splitlines(keepends=True)
    _rewrite(path, lines[:3])                       # charge 3 removed at a record boundary
    # `old` has read exactly what is left: without the seal it would write a valid charge 3.
    with pytest.raises(dp.LedgerDamagedError, match="line 4: .*charge 3 was written"):
        old.spend(0.25)
    assert open(path, "rb").read() == b"".join(lines[:3])
    assert old.spent == (1.0, 0.0)


def test_a_file_cut_under_a_long_lived_accountant(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    acct.spend(0.25)
    lines = open(path, "rb").read().splitlines(keepends=True)
    _rewrite(path, [])
    with pytest.raises(dp.LedgerDamagedError, match="shorter than what was already read"):
        acct.spend(0.25)
    assert acct.spent == (1.0, 0.0)
    _rewrite(path, lines)          # restored: this accountant stays exhausted (it saw damage)
    with pytest.raises(dp.LedgerDamagedError):
        acct.spend(0.25)


# -- failed writes ----------------------------------------------------------------------
def test_a_short_write_and_efbig_charge_nothing(path):
    dp.Accountant(epsilon=1.0, ledger=path)

    def child():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        acct = dp.Accountant.from_ledger(path)
        acct.spend(0.25)
        size = os.path.getsize(path)
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        report = {}
        for name, limit in (("short write", size + 40), ("EFBIG", size)):
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
            try:
                acct.spend(0.25)
                report[name] = "charged"
            except dp.LedgerError as exc:
                report[name] = [type(exc).__name__, str(exc), os.path.getsize(path) == size,
                                acct.spent, acct._ledger_file.offset == size]
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
        spends = 0
        try:
            while True:
                acct.spend(0.25)
                spends += 1
        except dp.BudgetExceededError as exc:
            report["end"] = [spends, type(exc).__name__, acct.spent]
        return report

    report = _in_child(child)
    for name in ("short write", "EFBIG"):
        kind, msg, unchanged, spent, offset_kept = report[name]
        assert kind == "LedgerError" and "nothing was charged" in msg, report
        assert unchanged and offset_kept and spent == [0.25, 0.0]
    assert "too large" in report["EFBIG"][1] or "File too large" in report["EFBIG"][1]
    assert report["end"] == [3, "BudgetExceededError", [1.0, 0.0]]
    again = dp.Accountant.from_ledger(path)        # a new process's view: exactly the budget
    assert again.spent == (1.0, 0.0) and len(again) == 4
    with pytest.raises(dp.BudgetExceededError):
        again.spend(1e-9)


@pytest.fixture
def full_tmpfs():
    if not ROOT or not shutil.which("mount"):
        pytest.skip("mounting a 64 KiB tmpfs needs root and mount(8)")
    where = tempfile.mkdtemp()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", where],
                          capture_output=True)
    if done.returncode != 0:
        os.rmdir(where)
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", where], check=False)
        os.rmdir(where)


def test_a_full_disk_charges_nothing(full_tmpfs):
    path = os.path.join(full_tmpfs, "budget.ledger")
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    filler = os.path.join(full_tmpfs, "filler")
    with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)
    charged = 0
    for _ in range(100):                # records fill the ledger's last page, then ENOSPC
        size = os.path.getsize(path)
        try:
            acct.spend(0.01)
        except dp.LedgerError as exc:
            assert "nothing was charged" in str(exc) and not isinstance(
                exc, dp.BudgetExceededError)
            break
        charged += 1
    else:
        pytest.fail("the full file system never refused a write")
    assert os.path.getsize(path) == size and acct._ledger_file.offset == size
    assert len(acct) == charged and dp.Accountant.from_ledger(path).spent == acct.spent
    os.unlink(filler)
    acct.spend(0.01)                    # the ledger is sound: spending resumes
    assert dp.Accountant.from_ledger(path).spent[0] == pytest.approx(0.01 * (charged + 1))


# -- files someone else could have written ------------------------------------------------
@pytest.fixture
def shared_dir():
    """A directory every uid can reach, sticky like /tmp."""
    where = tempfile.mkdtemp(dir="/tmp")
    os.chmod(where, 0o1777)
    yield where
    shutil.rmtree(where)


@needs_root
def test_a_ledger_planted_by_another_user_is_refused_unless_shared(shared_dir):
    path = os.path.join(shared_dir, "budget.ledger")

    def plant():
        os.setgid(65534)
        os.setuid(65534)
        dp.Accountant(epsilon=1.0, ledger=path)
        os.chmod(path, 0o666)
        return os.stat(path).st_uid

    assert _in_child(plant) == 65534
    before = open(path, "rb").read()
    for opened in (lambda: dp.Accountant(epsilon=1.0, ledger=path),
                   lambda: dp.Accountant.from_ledger(path)):
        with pytest.raises(dp.LedgerError, match="budget.ledger.*owned by another user"):
            opened()
    assert open(path, "rb").read() == before       # refused before any charge
    acct = dp.Accountant(epsilon=1.0, ledger=path, shared_ledger=True)
    acct.spend(0.25)
    assert dp.Accountant.from_ledger(path, shared_ledger=True).spent == (0.25, 0.0)


@pytest.mark.parametrize("target, mode, what", [
    ("", 0o666, "mode 0666"),
    ("", 0o620, "mode 0620"),
    (".dpfast-key", 0o640, "mode 0640"),
    (".dpfast-key", 0o604, "mode 0604"),
])
def test_files_others_can_change_are_refused(path, target, mode, what):
    dp.Accountant(epsilon=1.0, ledger=path)
    os.chmod(path + target, mode)
    before = open(path, "rb").read()
    with pytest.raises(dp.LedgerError, match=what) as info:
        dp.Accountant.from_ledger(path)
    assert os.path.basename(path + target) in str(info.value)
    assert open(path, "rb").read() == before
    dp.Accountant.from_ledger(path, shared_ledger=True).spend(0.5)   # opted in


@pytest.mark.parametrize("target", ["", ".dpfast-key"])
def test_symbolic_links_are_refused(path, tmp_path, target):
    dp.Accountant(epsilon=1.0, ledger=path)
    real = str(tmp_path / "elsewhere")
    os.rename(path + target, real)
    os.symlink(real, path + target)
    for shared in (False, True):
        with pytest.raises(dp.LedgerError, match="symbolic link"):
            dp.Accountant.from_ledger(path, shared_ledger=shared)
    os.unlink(path + target)
    os.symlink(str(tmp_path / "nowhere"), path + target)
    with pytest.raises((dp.LedgerError, FileNotFoundError)):
        dp.Accountant(epsilon=1.0, ledger=path)
    assert not os.path.exists(str(tmp_path / "nowhere"))     # never created through it


def test_a_directory_others_can_write_is_refused(shared_dir):
    os.chmod(shared_dir, 0o777)                    # world-writable, no sticky bit
    path = os.path.join(shared_dir, "budget.ledger")
    with pytest.raises(dp.LedgerError, match="can be written by other users"):
        dp.Accountant(epsilon=1.0, ledger=path)
    assert os.listdir(shared_dir) == []
    dp.Accountant(epsilon=1.0, ledger=path, shared_ledger=True).spend(0.5)


@needs_root
def test_a_directory_owned_by_another_user_is_refused(shared_dir):
    where = os.path.join(shared_dir, "theirs")
    os.mkdir(where, 0o755)
    os.chown(where, 65534, 65534)
    path = os.path.join(where, "budget.ledger")
    with pytest.raises(dp.LedgerError, match="owned by another user.*uid 65534"):
        dp.Accountant(epsilon=1.0, ledger=path)
    assert os.listdir(where) == []


def test_a_lock_held_elsewhere_is_waited_for_a_bounded_time(path, monkeypatch):
    import fcntl

    import dpfast.ledger.file as ledger_file
    dp.Accountant(epsilon=1.0, ledger=path)
    acct = dp.Accountant.from_ledger(path)
    # Anyone who can open the file can flock it (a read-only descriptor is enough).
    with open(path, "rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        monkeypatch.setattr(ledger_file, "_LOCK_WAIT", 0.2)
        with pytest.raises(dp.LedgerError, match="Could not lock .*budget.ledger"):
            acct.spend(0.25)
    acct.spend(0.25)                              # released: the spend goes through
    assert dp.Accountant.from_ledger(path).spent == (0.25, 0.0)


def test_new_files_are_private_even_under_umask_zero(path):
    old = os.umask(0)
    try:
        dp.Accountant(epsilon=1.0, ledger=path)
    finally:
        os.umask(old)
    for name in (path, path + ".dpfast-key"):
        assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    assert sorted(os.listdir(os.path.dirname(path))) == ["budget.ledger",
                                                         "budget.ledger.dpfast-key"]


def test_processes_creating_one_ledger_at_once_share_it(path):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(4)
    results = ctx.Queue()

    def create_and_spend():
        barrier.wait()
        acct = dp.Accountant(epsilon=1.0, ledger=path)
        charged = 0
        for _ in range(2):
            try:
                acct.spend(0.25)
                charged += 1
            except dp.BudgetExceededError:
                pass
        results.put(charged)

    children = [ctx.Process(target=create_and_spend) for _ in range(4)]
    for child in children:
        child.start()
    charged = [results.get(timeout=60) for _ in children]
    for child in children:
        child.join()
    assert sum(charged) == 4
    acct = dp.Accountant.from_ledger(path)
    assert acct.spent == (1.0, 0.0) and len(acct) == 4
    assert sorted(os.listdir(os.path.dirname(path))) == ["budget.ledger",
                                                         "budget.ledger.dpfast-key"]


# -- descriptors --------------------------------------------------------------------------
def test_dropped_accountants_release_their_descriptors(path):
    dp.Accountant(epsilon=1e6, ledger=path)

    def child():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        for _ in range(200):
            dp.Accountant.from_ledger(path).spend(1e-3)
        return len(os.listdir("/proc/self/fd"))

    assert _in_child(child) < 32
    assert len(dp.Accountant.from_ledger(path)) == 200


def test_close_and_closing(path):
    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    assert open_fds() == before + 2
    acct.spend(0.25)
    acct.close()
    assert open_fds() == before
    with pytest.raises(dp.LedgerError, match="closed"):
        acct.spend(0.25)
    acct.close()                                    # twice is harmless
    with contextlib.closing(dp.Accountant.from_ledger(path)) as again:
        with again:                                 # still the default accountant
            assert dp.default_accountant() is again
            dp.laplace_mechanism(1, sensitivity=1, epsilon=0.25)
    assert open_fds() == before
    assert dp.Accountant.from_ledger(path).spent == (0.5, 0.0)
    dp.Accountant().close()                         # no ledger: nothing to do


# -- blocks are owned state ---------------------------------------------------------------
def test_blocks_refuse_copies_pickles_and_forked_children():
    acct = dp.Accountant(epsilon=1.0)
    with acct.parallel() as block:
        part = block.partition()
        for node in (block, part):
            for clone in (copy.copy, copy.deepcopy, pickle.dumps):
                with pytest.raises(TypeError, match="cannot be copied or pickled"):
                    clone(node)
        pid = os.fork()
        if pid == 0:
            try:
                block.spend(0.5)
                code = 1
            except RuntimeError as exc:
                code = 0 if "another process" in str(exc) else 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        block.spend(0.5)
    for node in (block, part):
        with pytest.raises(RuntimeError, match="has ended"):
            node.spend(0.25)
    assert acct.spent == (0.5, 0.0)


def test_a_ledger_block_in_a_forked_child_is_refused(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    with acct.parallel() as block:
        def child():
            try:
                block.spend(0.5)
            except RuntimeError as exc:
                acct.spend(0.25)         # the accountant itself is shared through the file
                return str(exc)
            return "charged"
        assert "another process" in _in_child(child)
    assert acct.spent == (0.25, 0.0)


# -- no private values in messages ---------------------------------------------------------
def test_a_marker_value_never_appears_in_messages(path):
    np = pytest.importorskip("numpy")
    secret = np.array([4417.25, 1.0])
    messages = []
    for call in (lambda: dp.laplace_mechanism(1, sensitivity=1, epsilon=1.0,
                                              accountant=secret),
                 lambda: dp.Accountant(epsilon=1.0, group_size=secret),
                 lambda: dp.Accountant(epsilon=1.0, composition=MARKER * 3),
                 lambda: dp.Accountant(epsilon=1.0, ledger=[MARKER]),
                 lambda: dp.Accountant(epsilon=1.0, shared_ledger=MARKER * 3),
                 lambda: dp.Accountant().parallel(label=secret),
                 lambda: dp.Accountant().parallel(label=MARKER.encode())):
        with pytest.raises((TypeError, ValueError)) as info:
            call()
        messages.append(str(info.value))
    lines = _three_charges(path)
    _rewrite(path, lines[:2] + [lines[2].replace(MARKER.encode(), b"X" + MARKER.encode())]
             + lines[3:])
    acct = dp.Accountant.from_ledger(path)
    with pytest.raises(dp.LedgerDamagedError) as info:
        acct.spend(0.1)
    messages += [str(info.value), repr(acct)]
    for msg in messages:
        assert MARKER not in msg and "4417" not in msg, msg


def test_a_failed_spend_leaves_process_and_file_equal_under_signals(path):
    # SIGINT sent again and again to a spending child: each spend either completes (file and
    # total) or raises before anything is written, so the child's total is the file's.
    dp.Accountant(epsilon=1e6, ledger=path)
    # The handler raises anywhere but in the loop below, which so sees every interrupt.
    code = ("import signal, sys, dpfast as dp\n"
            "def interrupt(signum, frame):\n"
            "    if frame is not None and frame.f_code.co_filename != '<string>':\n"
            "        raise KeyboardInterrupt\n"
            "signal.signal(signal.SIGINT, interrupt)\n"
            "acct = dp.Accountant.from_ledger(sys.argv[1])\n"
            "print('ready', flush=True)\n"
            "interrupted = 0\n"
            "for _ in range(1000):\n"
            "    try:\n"
            "        acct.spend(1e-3)\n"
            "    except KeyboardInterrupt:\n"
            "        interrupted += 1\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent may still be sending\n"
            "print(len(acct), acct.spent[0], interrupted, flush=True)\n")
    proc = subprocess.Popen([os.sys.executable, "-c", code, path], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    while proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        time.sleep(0.003)
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()          # a child that deadlocked on its own lock fails the test
    count, spent, interrupted = out.split()
    assert int(interrupted) > 0          # the signals did land inside spends
    again = dp.Accountant.from_ledger(path)
    assert len(again) == int(count) and again.spent[0] == float(spent)


# -- any raising signal handler ------------------------------------------------------------

_ALARM_CHILD = r"""
import os, signal, sys, tempfile
import dpfast as dp

class Timeout(Exception):
    pass

def handler(signum, frame):
    raise Timeout()

signal.signal(signal.SIGALRM, handler)
bad = 0
for attempt in range(int(sys.argv[2])):
    path = os.path.join(sys.argv[1], f"b{attempt}.ledger")
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.00001 * (1 + attempt % 60))
        acct.spend(1.0)
    except Timeout:
        pass
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        except Timeout:
            pass
    with open(path, "rb") as f:
        in_file = f.read().count(b"\ncharge ")
    if acct.spent[0] != float(in_file):
        bad += 1                       # the process's total disagrees with its file
    try:
        acct.spend(1.0)                # accepted only if the first was not charged
    except dp.BudgetExceededError:
        pass
    with open(path, "rb") as f:
        if f.read().count(b"\ncharge ") > 1:
            bad += 1                   # two charges of the whole budget: an overspend
    acct.close()
print(bad)
"""


def test_a_raising_alarm_handler_never_splits_a_charge_from_its_record(tmp_path):
    # A timeout helper on SIGALRM (any handler that raises, not only Ctrl-C) interrupting
    # spends at every point: the process's total always equals its file's, and a second
    # charge of the whole budget is always refused.
    out = subprocess.run([sys.executable, "-c", _ALARM_CHILD, str(tmp_path), "150"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "0"
