"""Cell-addressed noise (dpfast.releases.cells): any split of a release into pieces, in any
order, gives the same bits as the release made at once by dpfast.noisy_counts with the same
seed. No Dask needed."""
import numpy as np
import pytest

import dpfast as dp
from dpfast.noise import real_laplace
from dpfast.releases.cells import CHUNK, noisy_cells, noisy_cells_at, release_key


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_pieces_equal_the_whole_release(dtype):
    x = (np.random.default_rng(0).poisson(6, 3 * CHUNK + 123) * 1.5).astype(dtype)
    want = dp.noisy_counts(x, epsilon=0.7, accountant=dp.Accountant(), rng=31)
    key = release_key("noisy_counts", dp.Accountant(), 0.7, 31)
    rng = np.random.default_rng(1)
    cuts = np.unique(np.concatenate(([0, x.size], rng.integers(0, x.size, 9),
                                     [CHUNK, CHUNK - 1, 2 * CHUNK + 1])))
    # Real counts: the release's noise is on the grid of a table whose every cell a record
    # may change (the rounding budget), which the pieces are given.
    noise = 1 / 0.7 if dtype != np.float64 else real_laplace(1 / 0.7, 1.0, x.size)
    got = np.concatenate([noisy_cells(key, int(a), x[a:b], noise)
                          for a, b in zip(cuts[:-1], cuts[1:])])
    assert np.array_equal(got, want)


def test_cells_given_by_index_in_any_order():
    x = np.random.default_rng(2).poisson(4, 200_000)
    want = dp.noisy_counts(x, epsilon=1.0, accountant=dp.Accountant(), rng=32)
    key = release_key("noisy_counts", dp.Accountant(), 1.0, 32)
    order = np.random.default_rng(3).permutation(x.size)
    for part in np.array_split(order, 5):                     # shuffled partitions
        assert np.array_equal(noisy_cells_at(key, part, x[part], 1.0), want[part])
    with pytest.raises(ValueError, match="twice"):
        noisy_cells_at(key, np.array([3, 4, 3]), np.array([1, 1, 1]), 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        noisy_cells_at(key, np.array([-1]), np.array([1]), 1.0)


def test_release_key_charges_first_and_refuses_nothing_drawn():
    acct, gen = dp.Accountant(epsilon=1.0), dp.ChaCha20(5)
    key = release_key("noisy_counts", acct, 0.6, gen)
    assert len(key) == 32 and acct.spent == (0.6, 0.0)
    state = gen.state["state"]["counter"], gen.state["buffer_pos"]
    with pytest.raises(dp.BudgetExceededError):
        release_key("noisy_counts", acct, 0.6, gen)
    assert (gen.state["state"]["counter"], gen.state["buffer_pos"]) == state
    assert release_key("x", dp.Accountant(), 1.0, None) != release_key("x", dp.Accountant(),
                                                                        1.0, None)
