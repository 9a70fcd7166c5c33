"""Budgets that survive the process: ledger files, many processes, torn records, and what an
accountant without a ledger does across processes."""
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time

import processes
import pytest
from refusals import rng_state

import dpfast as dp
from dpfast.ledger import LedgerError

START_METHODS = [m for m in ("fork", "forkserver", "spawn")
                 if m in multiprocessing.get_all_start_methods()]


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "budget.ledger")


def test_reopening_restores_what_was_spent(path):
    acct = dp.Accountant(epsilon=1.0, delta=1e-5, ledger=path)
    for _ in range(3):
        acct.spend(0.1, 1e-6, label="count")
    again = dp.Accountant(epsilon=1.0, delta=1e-5, ledger=path)
    assert again.spent == (0.3, 3e-6) and len(again) == 3
    assert [e.label for e in again.ledger] == ["count"] * 3
    assert dp.Accountant.from_ledger(path).remaining == (0.7, 7e-06)
    # Exact arithmetic across processes and reopenings: seven more of 0.1 fit, not eight.
    for _ in range(7):
        again.spend(0.1)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(0.1)              # this object sees the other's spends
    assert acct.spent == (1.0, 3e-6)


def test_a_ledger_holds_one_budget(path, tmp_path):
    dp.Accountant(epsilon=1.0, ledger=path)
    with pytest.raises(LedgerError, match="another budget"):
        dp.Accountant(epsilon=2.0, ledger=path)
    with pytest.raises(LedgerError, match="another budget"):
        dp.Accountant(epsilon=1.0, group_size=2, ledger=path)
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(LedgerError, match="not a dpfast ledger"):
        dp.Accountant(epsilon=1.0, ledger=str(other))
    with pytest.raises(FileNotFoundError):
        dp.Accountant.from_ledger(str(tmp_path / "missing.ledger"))
    with pytest.raises(TypeError, match="'ledger'"):
        dp.Accountant(epsilon=1.0, ledger=3)


def test_the_charge_is_on_disk_before_the_noise(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    rng = dp.ChaCha20(1)
    before = rng_state(rng)
    file = acct._ledger_file
    append, seen = file.append, []

    def watched(amounts, details, *kind):
        append(amounts, details, *kind)           # written and synced ...
        seen.append((os.path.getsize(path), rng_state(rng)))   # ... with nothing drawn yet

    file.append = watched
    dp.laplace_mechanism(5, sensitivity=1, epsilon=0.5, accountant=acct, rng=rng)
    assert len(seen) == 1 and seen[0][1] == before and rng_state(rng) != before
    # A refused spend writes nothing and draws nothing.
    size = os.path.getsize(path)
    with pytest.raises(dp.BudgetExceededError):
        dp.laplace_mechanism(5, sensitivity=1, epsilon=0.75, accountant=acct, rng=rng)
    assert os.path.getsize(path) == size and len(seen) == 1


def test_parallel_blocks_and_groups_are_recorded(path):
    acct = dp.Accountant(epsilon=10.0, delta=1e-3, group_size=2, ledger=path)
    with acct.parallel(label="regions") as regions:
        regions.spend(1.0, label="north")
        regions.spend(0.5, 1e-6, label="south")
    acct.spend(0.25)
    again = dp.Accountant.from_ledger(path)
    assert again.group_size == 2 and again.spent == acct.spent
    assert [e.block for e in again.ledger] == [("regions",), ("regions",), ()]
    assert again.spent[0] == 2 * 1.0 + 2 * 0.25


@pytest.mark.parametrize("method", START_METHODS)
def test_processes_racing_on_one_ledger_never_overspend(path, method):
    dp.Accountant(epsilon=1.0, ledger=path)
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(8) as pool:
        results = pool.starmap(processes.spend_from_ledger, [(path, 0.25)] * 8)
    assert sorted(results) == [False] * 4 + [True] * 4
    assert dp.Accountant.from_ledger(path).spent == (1.0, 0.0)


@pytest.mark.parametrize("method", START_METHODS)
def test_a_pickled_ledger_accountant_is_shared_by_workers(path, method):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(4) as pool:
        results = pool.starmap(processes.release_with, [(acct, 1.0)] * 8)
    assert sum(results) == 1
    assert acct.spent == (1.0, 0.0)


@pytest.mark.parametrize("method", START_METHODS)
def test_an_accountant_without_a_ledger_refuses_other_processes(method):
    acct = dp.Accountant(epsilon=1.0)
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    child = ctx.Process(target=processes.try_release, args=(acct, queue))
    if method == "fork":
        # The inherited copy refuses to spend rather than spend the budget again, unseen.
        child.start()
        report = queue.get(timeout=60)
        child.join()
        assert report.startswith("RuntimeError") and "ledger" in report
    else:
        with pytest.raises(TypeError, match="ledger"):   # it cannot be sent at all
            child.start()
    assert acct.spent == (0.0, 0.0)
    with pytest.raises(TypeError, match="ledger"):
        pickle.dumps(acct)
    acct.spend(1.0)                               # in its own process it works as ever


def test_forked_child_gets_a_fresh_default_accountant():
    dp.laplace(1.0, rng=1)
    before = len(dp.default_accountant())
    pid = os.fork()
    if pid == 0:                                  # the child: exit 0 only if all holds
        ok = len(dp.default_accountant()) == 0
        dp.laplace_mechanism(1, sensitivity=1, epsilon=1.0)
        ok = ok and len(dp.default_accountant()) == 1
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(dp.default_accountant()) == before


def _truncate(path, keep):
    with open(path, "r+b") as f:
        f.truncate(keep)


# These three replace the first format's rule (a torn or corrupted record counted at the
# amounts it still showed, and the file usable after it): any damage now exhausts the ledger,
# and every spend is refused naming the line (see test_ledger_integrity.py for each kind).
def test_a_torn_last_record_exhausts_the_ledger(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    acct.spend(0.25)
    acct.spend(0.5, label="torn later")
    data = open(path, "rb").read()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    _truncate(path, last + len(b"charge 2 5e-1 0e0 ") + 3)   # amounts still readable
    torn = dp.Accountant.from_ledger(path)
    assert torn.spent == (1.0, 0.0) and torn.remaining == (0.0, 0.0)
    with pytest.raises(dp.LedgerDamagedError, match="line 3: the record is cut short"):
        torn.spend(1e-9)
    assert os.path.getsize(path) == last + len(b"charge 2 5e-1 0e0 ") + 3


def test_a_record_torn_before_its_amounts_costs_the_whole_budget(path):
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, ledger=path)
    acct.spend(0.25)
    acct.spend(0.5)
    data = open(path, "rb").read()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    _truncate(path, last + 4)                     # "char": nothing readable
    torn = dp.Accountant.from_ledger(path)
    assert torn.spent == (1.0, 1e-6)             # never free: the budget is exhausted
    with pytest.raises(dp.BudgetExceededError):
        torn.spend(1e-9)


def test_a_corrupted_record_in_the_middle_exhausts_the_ledger(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    acct.spend(0.25)
    acct.spend(0.5)
    data = bytearray(open(path, "rb").read())
    first_charge = data.index(b"\ncharge ") + 1
    data[first_charge + 9] = ord("9")             # an amount changed: the checksum fails
    open(path, "r+b").write(bytes(data))
    again = dp.Accountant.from_ledger(path)
    assert again.spent == (1.0, 0.0)
    with pytest.raises(dp.LedgerDamagedError, match="line 2: the record fails its checksum"):
        again.spend(1e-9)


def test_a_process_killed_while_spending_leaves_a_consistent_ledger(path):
    dp.Accountant(epsilon=1e6, ledger=path)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
             "import processes; processes.spend_forever(sys.argv[2])",
             os.path.dirname(__file__), path])
        # Killed mid-stream once it has spent a few times (not after a fixed delay: on a
        # busy machine the process may not have started spending yet).
        start, deadline = os.path.getsize(path), time.time() + 60
        while os.path.getsize(path) < start + 5 * 100 and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    acct = dp.Accountant.from_ledger(path)
    entries = acct.ledger
    assert len(entries) > 10 and all(e.label == "stress" for e in entries)
    spent = acct.spent[0]
    assert abs(spent - 1e-6 * len(entries)) < 1e-9 * len(entries)
    acct.spend(1.0)
    assert dp.Accountant.from_ledger(path).spent[0] == pytest.approx(spent + 1.0)


def test_pickles_name_the_public_paths_and_old_pickles_load(tmp_path):
    """A ledger-backed accountant, a Budget and a LedgerEntry pickle by the names
    dpfast.accounting has had since 0.1 (not by the module that holds the code today), and a
    pickle written in 0.1's form loads and spends."""
    path = str(tmp_path / "b.ledger")
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    acct.spend(0.25, label="x")
    for obj in (acct, acct.spent, acct.ledger[0]):
        raw = pickle.dumps(obj, protocol=0)
        modules = {line[1:] for line in raw.split(b"\n") if line.startswith(b"c")}
        assert modules == {b"dpfast.accounting"}, modules
    old = (b"cdpfast.accounting\n_reopen\n(V" + path.encode() + b"\nI00\ntR.")
    again = pickle.loads(old)
    again.spend(0.25)
    assert dp.Accountant.from_ledger(path).spent == (0.5, 0.0)
