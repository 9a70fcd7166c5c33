"""Functions run in other processes by the multi-process tests (importable by spawned and
forkserver children: they must live in a module, not in a test function)."""
import dpfast as dp


def spend_from_ledger(path, epsilon):
    """Open the ledger and spend once: True if charged, False if refused."""
    acct = dp.Accountant.from_ledger(path)
    try:
        acct.spend(epsilon)
    except dp.BudgetExceededError:
        return False
    return True


def release_with(acct, epsilon):
    """One release charged to a (pickled) accountant: True if charged, False if refused."""
    try:
        dp.laplace_mechanism(5, sensitivity=1, epsilon=epsilon, accountant=acct)
    except dp.BudgetExceededError:
        return False
    return True


def draw(rng):
    """Noise from the generator as this process sees it."""
    return dp.laplace(1.0, 16, rng=rng).tobytes()


def spend_forever(path):
    """Spend 1e-6 at a time until killed."""
    acct = dp.Accountant.from_ledger(path)
    while True:
        acct.spend(1e-6, label="stress")


def try_release(acct, queue):
    """Report to the queue the name of the error a release charged to acct raises."""
    try:
        dp.laplace_mechanism(5, sensitivity=1, epsilon=1.0, accountant=acct)
        queue.put("charged")
    except Exception as exc:              # reported, not raised, so the parent sees it
        queue.put(f"{type(exc).__name__}: {exc}")


def release_file_in_place(path, seed, ledger=None):
    """Release the .npy table at path in place (its journal beside it), saying "ready" on
    standard output just before the release starts; the caller may kill us at any point."""
    import sys

    import numpy as np
    table = np.lib.format.open_memmap(path, mode="r+")
    acct = dp.Accountant() if ledger is None else dp.Accountant.from_ledger(ledger)
    print("ready", flush=True)
    dp.noisy_counts(table, epsilon=1.0, out=table, rng=seed, accountant=acct,
                    progress=False)
    sys.stdout.write("done\n")
