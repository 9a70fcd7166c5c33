"""The rule every mechanism keeps: bad input is refused before the budget is charged or the
generator advances. Shared by the test files that check it."""
import math
from contextlib import contextmanager

import pytest


def rng_state(g):
    """Where a dpfast.ChaCha20 stands in its stream: block counter and buffer position."""
    return g.state["state"]["counter"], g.state["buffer_pos"]


@contextmanager
def spends_nothing(accountant, rng):
    """On leaving the block, assert that the accountant (its total and ledger) and the
    generator are as they were on entering it. Put ``pytest.raises`` inside it."""
    spent, entries, state = accountant.spent, len(accountant), rng_state(rng)
    yield
    assert accountant.spent == spent and len(accountant) == entries
    assert rng_state(rng) == state


# The privacy keywords of a counting release (noise=, epsilon=, delta=, rho=) that must be
# refused before anything is charged or drawn, with the exception each raises: shared by
# the Gaussian tests of every counting release (each adds its own).
GAUSSIAN_BAD_KEYWORDS = [
    ({"noise": "gaussian", "rho": 0.0}, ValueError),
    ({"noise": "gaussian", "rho": -0.5}, ValueError),
    ({"noise": "gaussian", "rho": math.nan}, ValueError),
    ({"noise": "gaussian", "rho": math.inf}, ValueError),
    ({"noise": "gaussian", "rho": "0.5"}, TypeError),
    ({"noise": "laplace", "epsilon": 1.0, "rho": 0.5}, ValueError),
    ({"rho": 0.5}, ValueError),                                 # rho with the default (Laplace)
    ({"noise": "gaussian"}, ValueError),                        # neither rho nor epsilon/delta
    ({"noise": "gaussian", "epsilon": 1.0}, ValueError),        # no delta
    ({"noise": "gaussian", "delta": 1e-6}, ValueError),         # delta without epsilon
    ({"noise": "gaussian", "epsilon": 1.0, "delta": 0.0}, ValueError),
    ({"noise": "gaussian", "epsilon": 1.0, "delta": 1.0}, ValueError),
    ({"noise": "gaussian", "epsilon": 1.0, "delta": -1e-6}, ValueError),
    ({"noise": "gaussian", "rho": 0.5, "epsilon": 1.0}, ValueError),
    ({"noise": "gaussian", "rho": 0.5, "epsilon": 1.0, "delta": 1e-6}, ValueError),
    ({"noise": "normal", "epsilon": 1.0}, ValueError),
    ({"noise": 1, "epsilon": 1.0}, TypeError),
    ({"noise": None, "rho": 0.5}, TypeError),
    ({"epsilon": 1.0, "delta": 1e-6}, ValueError),              # delta > 0 under Laplace
    ({}, ValueError),                                           # Laplace without epsilon
]


def refuses_all(release, cases, accountant, rng):
    """``release(accountant=..., rng=..., **kwargs)`` raises each case's exception, spending
    and drawing nothing (``cases``: (kwargs, exception) pairs)."""
    for kwargs, error in cases:
        with spends_nothing(accountant, rng), pytest.raises(error):
            release(accountant=accountant, rng=rng, **kwargs)
