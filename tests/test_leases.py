"""Leases: a slice of a durable budget reserved with one durable record, spent in memory, the
rest given back with one durable return. A crash (SIGKILL) leaves the slice spent; processes
sharing a ledger through leases never overspend together; a return the ledger cannot vouch
for is damage; a lease is owned state. Real files, real processes, real kills."""
import copy
import hmac
import json
import os
import pickle
import random
import shutil
import signal
import tempfile
import threading
import time

import numpy as np
import pytest

import dpfast as dp
from dpfast.ledger import RETURN, LedgerFile, amount_parse, amount_text, encode
from refusals import rng_state, spends_nothing

MARKER = "QX7-lease-marker-5521"


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "budget.ledger")


def _records(path):
    return open(path, "rb").read().splitlines()


def _child(body):
    """Fork; the child runs body(write) (write sends one JSON line to the parent) and exits
    0, or 1 after reporting an error. Returns (pid, reader)."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        code = 0
        try:
            body(lambda obj: os.write(wr, (json.dumps(obj) + "\n").encode()))
        except BaseException as exc:          # reported to the parent, which fails the test
            os.write(wr, (json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
                     .encode())
            code = 1
        os._exit(code)
    os.close(wr)
    return pid, os.fdopen(rd, "r")


def _result(pid, reader):
    with reader:
        lines = [json.loads(line) for line in reader]
    _, status = os.waitpid(pid, 0)
    errors = [line["error"] for line in lines if "error" in line]
    assert not errors and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, errors
    return lines


# -- the lease's round trip ---------------------------------------------------------------
def test_one_reservation_in_memory_spends_one_return(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    acct.spend(0.125, label="before")
    with acct.lease(epsilon=0.5, label="batch") as lease:
        assert len(_records(path)) == 3                    # budget, charge, reservation
        size = os.path.getsize(path)
        for _ in range(250):
            lease.spend(0.001, label=MARKER)
        lease.spend(0.05, 1e-9 * 0, rho=0.001)              # rho stated, (eps, delta) charged
        assert os.path.getsize(path) == size                 # nothing written per spend
        assert tuple(lease.spent) == (0.3, 0.0) and tuple(lease.remaining) == (0.2, 0.0)
        assert tuple(acct.spent) == (0.625, 0.0)             # the whole slice, meanwhile
        assert len(lease) == 251 and lease.ledger[-1].rho == 0.001
        # Another process's view while the lease is open: the slice counts as spent.
        assert tuple(dp.Accountant.from_ledger(path).spent) == (0.625, 0.0)
    assert lease.closed and tuple(lease.remaining) == (0.0, 0.0)
    lines = _records(path)
    assert len(lines) == 4 and lines[3].startswith(b"return 3 2e-1 0e-330 425e-3 ")
    assert lease.id.encode() in lines[2] and lease.id.encode() in lines[3]
    assert MARKER.encode() not in open(path, "rb").read()   # in-memory spends stay in memory
    assert tuple(acct.spent) == (0.425, 0.0)
    reread = dp.Accountant.from_ledger(path)
    assert tuple(reread.spent) == (0.425, 0.0) and tuple(reread.remaining) == (0.575, 0.0)
    entries = reread.ledger
    assert [e.charged for e in entries] == [(0.125, 0.0), (0.5, 0.0), (-0.2, 0.0)]
    assert entries[1].label == entries[2].label == "batch"
    lease.close()                                            # again: nothing more
    assert len(_records(path)) == 4


def test_a_fully_spent_lease_writes_no_return(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    with acct.lease(epsilon=0.01) as lease:
        for _ in range(10):
            lease.spend(0.001)
        assert not lease.check(0.001)
    assert len(_records(path)) == 2 and tuple(acct.spent) == (0.01, 0.0)


def test_a_lease_refuses_what_its_slice_cannot_pay_and_charges_nothing(path):
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, ledger=path)
    lease = acct.lease(epsilon=0.1, delta=1e-7)
    lease.spend(0.06, 5e-8)
    before = (lease.spent, len(lease), acct.spent, os.path.getsize(path))
    for eps, dlt in [(0.05, 0.0), (0.01, 6e-8)]:
        assert not lease.check(eps, dlt)
        with pytest.raises(dp.BudgetExceededError, match="this lease's slice") as info:
            lease.spend(eps, dlt)
        assert "remaining (epsilon=0.04" in str(info.value)
    assert (lease.spent, len(lease), acct.spent, os.path.getsize(path)) == before
    with pytest.raises(dp.BudgetExceededError, match="Accountant.lease"):
        acct.lease(epsilon=0.95)                  # 0.1 is reserved: 0.9 remains
    assert (acct.spent, os.path.getsize(path)) == before[2:]
    lease.close()
    with acct.lease(epsilon=0.94):                # the rest came back
        pass


def test_a_mechanism_charges_the_lease(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    rng = dp.ChaCha20(11)
    with acct.lease(epsilon=0.5) as lease:
        values = [dp.laplace_mechanism(10.0, sensitivity=1.0, epsilon=0.1, accountant=lease,
                                       rng=rng) for _ in range(3)]
        noisy = dp.laplace_mechanism(np.zeros(100), sensitivity=1.0, epsilon=0.1,
                                     accountant=lease, rng=rng)
        assert tuple(lease.spent) == (0.4, 0.0)
        assert [e.label for e in lease.ledger] == ["laplace_mechanism"] * 4
        state = rng_state(rng)
        with pytest.raises(dp.BudgetExceededError):
            dp.laplace_mechanism(10.0, sensitivity=1.0, epsilon=0.2, accountant=lease,
                                 rng=rng)
        assert rng_state(rng) == state and tuple(lease.spent) == (0.4, 0.0)
    assert len(set(values)) == 3 and noisy.std() > 0
    assert tuple(dp.Accountant.from_ledger(path).spent) == (0.4, 0.0)


def test_threads_share_a_lease_exactly():
    acct = dp.Accountant(epsilon=1.0)
    lease = acct.lease(epsilon=0.5)
    won = [0] * 4

    def spend(i):
        for _ in range(200):
            try:
                lease.spend(0.001 if _ % 2 else 0.0005 * 2)   # two spellings, one amount
                won[i] += 1
            except dp.BudgetExceededError:
                pass

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(won) == 500 and tuple(lease.spent) == (0.5, 0.0) and len(lease) == 500
    lease.close()
    assert tuple(acct.spent) == (0.5, 0.0)


def test_a_close_racing_spends_gives_back_only_what_was_not_spent():
    acct = dp.Accountant(epsilon=1.0)
    acct.spend(1e-6)                              # the amount is cached: the compiled path
    lease = acct.lease(epsilon=0.5)
    won = [0] * 3
    started = threading.Barrier(4)

    def spend(i):
        started.wait()
        while True:
            try:
                lease.spend(1e-6)
            except RuntimeError:                  # closed
                return
            won[i] += 1

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    started.wait()
    while sum(won) < 2000:
        time.sleep(0.001)
    lease.close()
    for t in threads:
        t.join()
    # Every spend that returned was paid for: what was given back is exactly the rest.
    assert len(lease) == sum(won)
    assert acct.spent[0] == (1 + sum(won)) / 1e6


# -- crashes and processes ----------------------------------------------------------------
def test_sigkill_mid_lease_leaves_the_whole_slice_spent(path):
    dp.Accountant(epsilon=1.0, ledger=path).spend(0.1)

    def body(write):
        acct = dp.Accountant.from_ledger(path)
        lease = acct.lease(epsilon=0.3)
        for _ in range(70):
            lease.spend(0.001)
        write({"spent": lease.spent[0]})
        signal.pause()                                     # killed here, lease open

    pid, reader = _child(body)
    said = json.loads(reader.readline())
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    reader.close()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    acct = dp.Accountant.from_ledger(path)
    assert said["spent"] == 0.07
    assert acct.spent[0] >= 0.1 + said["spent"]              # never understated
    assert tuple(acct.spent) == (0.4, 0.0)                   # the whole slice
    assert len(_records(path)) == 3                          # no return was written
    assert not acct.check(0.61)


def test_eight_processes_with_leases_never_overspend_together(path):
    budget = 1.0
    dp.Accountant(epsilon=budget, ledger=path)

    def body(seed, write):
        rnd = random.Random(seed)
        acct = dp.Accountant.from_ledger(path)
        spends = leases = 0
        slice_ = 0.064
        while slice_ >= 0.001:
            try:
                lease = acct.lease(epsilon=slice_)
            except dp.BudgetExceededError:
                slice_ /= 2                                   # what remains is smaller
                continue
            leases += 1
            with lease:
                for _ in range(rnd.randrange(8, 80)):
                    try:
                        lease.spend(0.001)
                    except dp.BudgetExceededError:
                        break
                    spends += 1                               # a true, completed spend
        write({"spends": spends, "leases": leases})

    children = [_child(lambda write, s=s: body(s, write)) for s in range(8)]
    results = [_result(*c)[0] for c in children]
    true_spends = sum(r["spends"] for r in results)
    assert true_spends <= 1000                                # sum of true spends <= budget
    assert sum(r["leases"] for r in results) >= 16            # they did take turns
    acct = dp.Accountant.from_ledger(path)
    # Every lease closed: the ledger's total is exactly what was truly spent, and it never
    # exceeded the budget at any record.
    assert acct.spent[0] == true_spends / 1000
    totals = [amount_parse(line.split(b" ")[4].decode()) for line in _records(path)[1:]]
    assert max(totals) <= amount_parse("1e0")
    # The last child to stop found less than 0.001 free while the seven others held at
    # most 0.064 each: at least 1 - 0.001 - 7 * 0.064 was truly spent.
    assert true_spends >= 551


# -- what a return must be ------------------------------------------------------------------
def _open_lease_ledger(path):
    """A ledger with a charge, a closed lease (reserved 0.25, used 0.05) and an open one
    (reserved 0.25, used nothing yet); returns (closed id, open id)."""
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, ledger=path)
    acct.spend(0.125, 1e-8, label=MARKER)
    with acct.lease(epsilon=0.25, label=MARKER) as done:
        done.spend(0.05)
    held = acct.lease(epsilon=0.25)
    ids = done.id, held.id
    del held, acct                          # the open one is never returned (as if crashed)
    return ids


def _append_with_key(path, kind, credit, lease_id, unit=None, delta_credit="0e-330"):
    """Append a record through the ledger's own internals (its key, chain and seal), with a
    running total that adds up, as a bug or the key's owner could."""
    led = LedgerFile(path, None)
    led.lock()
    try:
        charges = led.read_new()
        last = charges[-1]
        sign = -1 if kind == RETURN else 1
        total = (amount_parse(last.total_epsilon) + sign * amount_parse(credit),
                 amount_parse(last.total_delta) + sign * amount_parse(delta_credit))
        details = {"epsilon": 0.1, "delta": 0.0, "label": None, "path": [],
                   "unit": unit or lease_id, "lease": lease_id}
        led.append((credit, delta_credit, amount_text(total[0], False),
                    amount_text(total[1], False)), details, kind)
    finally:
        led.unlock()
        led.close()
    return len(_records(path))


def assert_damaged(path, line, what):
    """The whole budget shows as spent, every spend and lease is refused, and the message
    names the line and never the records' contents."""
    acct = dp.Accountant.from_ledger(path)
    size = os.path.getsize(path)
    assert tuple(acct.spent) == (acct.epsilon, acct.delta)
    assert tuple(acct.remaining) == (0.0, 0.0)
    for attempt in (lambda: acct.spend(1e-9), lambda: acct.lease(epsilon=1e-9)):
        with pytest.raises(dp.LedgerDamagedError) as info:
            attempt()
        msg = str(info.value)
        assert f"line {line}: " in msg and what in msg, msg
        assert MARKER not in msg
    assert os.path.getsize(path) == size


@pytest.mark.parametrize("case", ["names no reservation", "returned twice", "more than reserved",
                                  "reserved twice", "delta never reserved"])
def test_a_return_the_ledger_cannot_vouch_for_is_damage(path, case):
    closed, held = _open_lease_ledger(path)
    # A sound return of the open lease is accepted (the same internals, the same key).
    if case == "names no reservation":
        line = _append_with_key(path, RETURN, "1e-1", os.urandom(8).hex())
        what = "names no open lease reservation"
    elif case == "returned twice":
        line = _append_with_key(path, RETURN, "1e-1", closed)
        what = "names no open lease reservation"
    elif case == "more than reserved":
        line = _append_with_key(path, RETURN, "26e-2", held)
        what = "more than its lease reserved"
    elif case == "reserved twice":
        line = _append_with_key(path, "charge", "1e-1", held)
        what = "a lease reserved twice"
    else:
        line = _append_with_key(path, RETURN, "1e-1", held, delta_credit="1e-9")
        what = "more than its lease reserved"
    assert_damaged(path, line, what)


def test_a_return_in_an_advanced_composition_ledger_is_damage(path):
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, composition="advanced", delta_prime=1e-7,
                         ledger=path)
    acct.spend(0.1, 1e-8)
    lease_id = os.urandom(8).hex()
    _append_with_key(path, "charge", "2e-1", lease_id)      # a reservation: just a charge
    assert tuple(dp.Accountant.from_ledger(path).spent) == (0.3, 1e-8)
    line = _append_with_key(path, RETURN, "1e-1", lease_id)
    with pytest.raises(dp.LedgerDamagedError, match=f"line {line}: a lease return in a "
                       "ledger with composition='advanced'"):
        acct.spend(0.01)
    assert tuple(dp.Accountant.from_ledger(path).spent) == (1.0, 1e-6)


def test_a_sound_return_written_by_the_internals_is_accepted(path):
    _, held = _open_lease_ledger(path)
    _append_with_key(path, RETURN, "25e-2", held)             # all of it, once
    assert tuple(dp.Accountant.from_ledger(path).spent) == (0.175, 1e-8)
    line = _append_with_key(path, RETURN, "1e-9", held)        # and never again
    assert_damaged(path, line, "names no open lease reservation")


def test_a_return_without_the_key_fails_its_mac(path):
    _, held = _open_lease_ledger(path)
    lines = _records(path)
    ledger_id = lines[0].split(b"\t")[0].split()[7].decode()
    prev = lines[-1].split(b" ")[7].decode()
    body = f"return {len(lines)} 25e-2 0e-330 175e-3 1e-8 {prev}"
    text = json.dumps({"lease": held})
    mac = hmac.digest(os.urandom(32), f"{ledger_id} {body} {text}".encode(),
                      "sha256")[:16].hex()
    with open(path, "ab") as f:
        f.write(encode(f"{body} {mac} {text}"))
    assert_damaged(path, len(lines) + 1, "fails its MAC")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another uid")
def test_another_user_cannot_forge_a_return_in_a_shared_ledger():
    where = tempfile.mkdtemp(dir="/tmp")
    try:
        os.chmod(where, 0o755)
        path = os.path.join(where, "budget.ledger")
        acct = dp.Accountant(epsilon=1.0, ledger=path, shared_ledger=True)
        lease = acct.lease(epsilon=0.5)
        lease.spend(0.5)                         # all used: nothing will come back
        lease.close()
        os.chmod(path, 0o666)                    # the other user may write the ledger

        def body(write):
            os.setgid(65534)
            os.setuid(65534)
            try:
                open(path + ".dpfast-key", "rb")
                write({"key": "readable"})
            except PermissionError:
                write({"key": "refused"})
            lines = open(path, "rb").read().splitlines()
            ledger_id = lines[0].split(b"\t")[0].split()[7].decode()
            prev = lines[-1].split(b" ")[7].decode()
            body = f"return {len(lines)} 5e-1 0e-330 0e-330 0e-330 {prev}"
            text = json.dumps({"lease": lease.id})
            mac = hmac.digest(os.urandom(32), f"{ledger_id} {body} {text}".encode(),
                              "sha256")[:16].hex()
            with open(path, "ab") as f:
                f.write(encode(f"{body} {mac} {text}"))

        assert _result(*_child(body)) == [{"key": "refused"}]
        with pytest.raises(dp.LedgerDamagedError, match="line 3: the record fails its MAC"):
            acct.spend(0.01)
        reread = dp.Accountant.from_ledger(path, shared_ledger=True)
        assert tuple(reread.spent) == (1.0, 0.0) and not reread.check(1e-9)
    finally:
        shutil.rmtree(where)


def test_a_long_lived_accountant_sees_a_forged_return(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    lease = acct.lease(epsilon=0.5)
    lease.spend(0.25)
    line = _append_with_key(path, RETURN, "5e-1", os.urandom(8).hex())
    with pytest.raises(dp.LedgerDamagedError, match=f"line {line}: a return that names no"):
        acct.spend(0.01)
    assert tuple(acct.spent) == (1.0, 0.0)
    with pytest.raises(dp.LedgerDamagedError):
        lease.close()                             # damage: nothing given back, slice spent
    assert lease.closed and len(_records(path)) == line


def test_another_process_sees_the_return(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    other = dp.Accountant.from_ledger(path)
    with acct.lease(epsilon=0.5) as lease:
        lease.spend(0.1)
        assert tuple(other.spent) == (0.5, 0.0)
    assert tuple(other.spent) == (0.1, 0.0)
    other.spend(0.9)                              # the rest is really back
    assert not acct.check(1e-9)


# -- owned state ----------------------------------------------------------------------------
def test_a_lease_refuses_copies_and_pickles(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    lease = acct.lease(epsilon=0.5)
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps, lambda x: pickle.dumps([x], 2),
                    lambda x: copy.deepcopy({"k": x})):
        with pytest.raises(TypeError, match="A Lease cannot be copied or pickled"):
            attempt(lease)
    lease.spend(0.1)
    assert tuple(lease.spent) == (0.1, 0.0)


def test_a_lease_refuses_a_forked_child(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    lease = acct.lease(epsilon=0.5)
    lease.spend(0.1)
    size = os.path.getsize(path)

    def body(write):
        out = {}
        for name, attempt in [("spend", lambda: lease.spend(0.1)),
                              ("check", lambda: lease.check(0.1)),
                              ("close", lease.close)]:
            try:
                attempt()
                out[name] = "allowed"
            except RuntimeError as exc:
                out[name] = str(exc)
        # The accountant itself (ledger-backed) may still spend in the child.
        acct.spend(0.01)
        write(out)

    out = _result(*_child(body))[0]
    assert all("forked child" in msg for msg in out.values()), out
    assert tuple(lease.spent) == (0.1, 0.0)                  # the parent's lease goes on
    lease.spend(0.1)
    lease.close()
    assert os.path.getsize(path) > size
    assert tuple(dp.Accountant.from_ledger(path).spent) == (0.21, 0.0)


def test_closing_refuses_spends_and_the_accountant_closes_its_leases(path):
    acct = dp.Accountant(epsilon=1.0, ledger=path)
    lease = acct.lease(epsilon=0.5)
    lease.close()
    for attempt in (lambda: lease.spend(0.1), lambda: lease.check(0.1),
                    lambda: dp.laplace_mechanism(1.0, sensitivity=1.0, epsilon=0.1,
                                                 accountant=lease)):
        with pytest.raises(RuntimeError, match="has been closed"):
            attempt()
    other = acct.lease(epsilon=0.5)
    other.spend(0.2)
    acct.close()                                  # gives the open lease's rest back first
    with pytest.raises(RuntimeError, match="has been closed"):
        other.spend(0.1)
    assert tuple(dp.Accountant.from_ledger(path).spent) == (0.2, 0.0)
    with pytest.raises(dp.LedgerError, match="closed"):
        acct.lease(epsilon=0.1)


def test_an_in_memory_accountant_leases_too():
    acct = dp.Accountant(epsilon=1.0)
    with acct.lease(epsilon=0.5) as lease:
        lease.spend(0.2)
        assert tuple(acct.spent) == (0.5, 0.0)
    assert tuple(acct.spent) == (0.2, 0.0) and len(acct) == 2
    with pytest.raises(dp.BudgetExceededError):
        acct.lease(epsilon=0.81)


# -- bad input ------------------------------------------------------------------------------
LEASE_REFUSALS = [
    (dict(epsilon=-1.0), ValueError, "'epsilon'"),
    (dict(epsilon=float("nan")), ValueError, "'epsilon'"),
    (dict(epsilon="0.1"), TypeError, "'epsilon'"),
    (dict(epsilon=0.1, delta=1.0), ValueError, "'delta'"),
    (dict(epsilon=0.1, delta=-1e-9), ValueError, "'delta'"),
    (dict(epsilon=0.1, rho=0.01), ValueError, "'rho'"),
    (dict(rho=0.01), ValueError, "'rho'"),
    (dict(), TypeError, "needs epsilon"),
    (dict(epsilon=0.1, label=3), TypeError, "'label'"),
]
ZCDP_REFUSALS = [
    (dict(epsilon=0.1), ValueError, "'epsilon'"),
    (dict(rho=-0.1), ValueError, "'rho'"),
    (dict(rho=float("inf")), ValueError, "'rho'"),
    (dict(rho="x"), TypeError, "'rho'"),
    (dict(rho=0.1, delta=1e-9), ValueError, "'delta'"),
    (dict(), TypeError, "needs rho"),
]


@pytest.mark.parametrize("kwargs, error, named", LEASE_REFUSALS)
def test_bad_leases_name_the_argument_and_charge_nothing(path, kwargs, error, named):
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, ledger=path)
    acct.spend(0.1)
    size = os.path.getsize(path)
    with spends_nothing(acct, dp.ChaCha20(0)):
        with pytest.raises(error, match=named):
            acct.lease(**kwargs)
    assert os.path.getsize(path) == size


@pytest.mark.parametrize("kwargs, error, named", ZCDP_REFUSALS)
def test_bad_zcdp_leases_name_the_argument_and_charge_nothing(path, kwargs, error, named):
    acct = dp.Accountant(rho=1.0, ledger=path)
    size = os.path.getsize(path)
    with spends_nothing(acct, dp.ChaCha20(0)):
        with pytest.raises(error, match=named):
            acct.lease(**kwargs)
    assert os.path.getsize(path) == size


def test_advanced_composition_refuses_leases():
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, composition="advanced", delta_prime=1e-7)
    with spends_nothing(acct, dp.ChaCha20(0)):
        with pytest.raises(ValueError, match="composition='advanced' cannot lease"):
            acct.lease(epsilon=0.1)


@pytest.mark.parametrize("args, kwargs, error, named", [
    ((-0.1,), {}, ValueError, "'epsilon' parameter of Lease\\.(spend|check)"),
    ((0.1, 1.5), {}, ValueError, "'delta' parameter of Lease\\.(spend|check)"),
    (("a",), {}, TypeError, "'epsilon'"),
    ((), dict(rho=0.01), ValueError, "cannot charge a cost given in rho alone"),
    ((0.1,), dict(rho=-1.0), ValueError, "'rho'"),
    ((), {}, TypeError, "'epsilon'"),
])
def test_bad_spends_from_a_lease_name_the_argument_and_charge_nothing(path, args, kwargs, error,
                                                                    named):
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, ledger=path)
    lease = acct.lease(epsilon=0.5, delta=1e-7)
    lease.spend(0.1)
    with spends_nothing(lease, dp.ChaCha20(0)), spends_nothing(acct, dp.ChaCha20(0)):
        for attempt in (lease.spend, lease.check):
            with pytest.raises(error, match=named):
                attempt(*args, **kwargs)


# -- zCDP and groups -----------------------------------------------------------------------
def test_a_zcdp_accountant_leases_in_rho(path):
    acct = dp.Accountant(rho=1.0, delta=1e-9, ledger=path)
    with acct.lease(rho=0.25) as lease:
        for _ in range(3):
            lease.spend(0.1)                          # pure: 0.005 each, the compiled path
        noisy = dp.noisy_counts(np.arange(10), noise="gaussian", rho=0.02, accountant=lease,
                                rng=5)                # a Gaussian release's exact rho
        assert noisy.shape == (10,) and lease.ledger[-1].rho == 0.02
        with pytest.raises(ValueError, match="delta > 0"):
            lease.spend(0.1, 1e-9)                    # no zCDP cost stated
        assert lease.spent.rho == 0.035 and lease.remaining.rho == 0.215
        assert acct.spent.rho == 0.25
        with pytest.raises(dp.BudgetExceededError, match="remaining rho=0.215"):
            lease.spend(rho=0.3)
    assert acct.spent.rho == 0.035
    reread = dp.Accountant.from_ledger(path)
    assert reread.spent.rho == 0.035 and reread.remaining.rho == 0.965
    assert _records(path)[-1].startswith(b"return 2 215e-3 ")


def test_group_privacy_scales_the_reservation_and_the_return(path):
    acct = dp.Accountant(epsilon=3.0, delta=1e-5, group_size=3, ledger=path)
    with acct.lease(epsilon=0.5, delta=1e-7) as lease:
        assert tuple(acct.spent)[0] == 1.5            # the slice scaled for groups of 3
        lease.spend(0.125, 2e-8)
        lease.spend(0.125, 2e-8)
    # Charged exactly as one group-scaled charge of what was used, never less.
    one = dp.Accountant(epsilon=3.0, delta=1e-5, group_size=3)
    one.spend(0.25, 4e-8)
    assert tuple(acct.spent) == tuple(one.spent)
    assert tuple(dp.Accountant.from_ledger(path).spent) == tuple(one.spent)
    zcdp = dp.Accountant(rho=1.0, group_size=2)
    with zcdp.lease(rho=0.1) as lease:
        lease.spend(rho=0.01)
        assert zcdp.spent.rho == 0.4
    assert zcdp.spent.rho == 0.04
