"""The rule every mechanism keeps: bad input is refused before the budget is charged or the
generator advances. Shared by the test files that check it."""
from contextlib import contextmanager


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
