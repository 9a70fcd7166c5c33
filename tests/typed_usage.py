"""The public API as a user's strictly typed code sees it: ``mypy --strict`` checks this file
with the package (pyproject.toml's [tool.mypy] files), so a public type that stops saying what
an object is (a lease's accountant typed as an internal protocol, say) fails the type check.
Never run; only type-checked."""
from __future__ import annotations

import numpy as np

import dpfast as dp


def uses(path: str) -> tuple[float, float]:
    acct = dp.Accountant(epsilon=1.0, delta=1e-6, ledger=path)
    with acct.lease(epsilon=0.5) as lease:
        owner: dp.Accountant = lease.accountant
        owner.spend(0.1)
        remaining: tuple[float, float] = lease.remaining
        dp.laplace_mechanism(3.0, sensitivity=1.0, epsilon=0.01, accountant=lease)
    counts = dp.noisy_counts(np.zeros(4, dtype=np.int64), epsilon=0.1, accountant=acct)
    assert counts.shape == (4,) and remaining[0] >= 0
    spent = acct.spent
    return spent.epsilon, spent.delta
