"""No two processes, and no two copies, draw the same noise from a generator keyed from the
OS, however they got it: fork, a spawned child, pickle or copy into a pool worker. Seeded
generators stay reproducible through all of these."""
import copy
import multiprocessing
import os
import pickle

import numpy as np
import pytest

import dpfast as dp
import processes

START_METHODS = [m for m in ("fork", "forkserver", "spawn")
                 if m in multiprocessing.get_all_start_methods()]
FORKS = 20


def _in_forked_child(draw):
    """What ``draw()`` returns in a forked child (bytes), the child leaving at once."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write_fd, draw())
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 1 << 16):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    return data


def _generators():
    """Each OS-keyed way of holding a generator, as (name, draw function)."""
    spawned = dp.ChaCha20().spawn(1)[0]
    grandchild = dp.ChaCha20().spawn(2)[1].spawn(1)[0]
    wrapped = np.random.Generator(dp.ChaCha20().spawn(1)[0])
    return {
        "spawned child": lambda: processes.draw(spawned),
        "spawned grandchild": lambda: processes.draw(grandchild),
        "numpy Generator over a spawned child": lambda: processes.draw(wrapped),
        "process default (rng=None)": lambda: processes.draw(None),
        "dp.default_rng()": (lambda g: lambda: processes.draw(g))(dp.default_rng()),
    }


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.parametrize("name", list(_generators()))
def test_parent_and_forked_child_never_draw_the_same_noise(name):
    draw = _generators()[name]
    draw()                                 # buffered keystream the child must not replay
    seen = set()
    for _ in range(FORKS):
        child = _in_forked_child(draw)
        mine = draw()
        assert child != mine
        seen.update((child, mine))
    assert len(seen) == 2 * FORKS


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_seeded_generators_are_the_same_in_a_forked_child():
    g = dp.ChaCha20(seed=5).spawn(1)[0]
    child = _in_forked_child(lambda: processes.draw(g))
    assert child == processes.draw(g)


def test_a_copy_of_an_os_keyed_generator_draws_its_own_noise():
    parent = dp.ChaCha20()
    originals = [parent, parent.spawn(1)[0], np.random.Generator(dp.ChaCha20())]
    for g in originals:
        copies = [pickle.loads(pickle.dumps(g)), copy.copy(g), copy.deepcopy(g)]
        draws = {processes.draw(c) for c in copies} | {processes.draw(g)}
        assert len(draws) == 4
        bit = getattr(g, "bit_generator", g)
        assert bit.os_keyed and all(getattr(c, "bit_generator", c).os_keyed for c in copies)


def test_a_copy_of_a_seeded_generator_repeats_it():
    for g in [dp.ChaCha20(seed=3), dp.ChaCha20(seed=3).spawn(2)[1],
              dp.ChaCha20(key=bytes(range(32))), np.random.Generator(dp.ChaCha20(3))]:
        processes.draw(g)
        # (copy.copy of a numpy Generator shares its bit generator: numpy's rule.)
        copies = [pickle.loads(pickle.dumps(g)), copy.deepcopy(g)]
        if isinstance(g, dp.ChaCha20):
            copies.append(copy.copy(g))
        draws = [processes.draw(c) for c in copies]
        assert draws == [processes.draw(g)] * len(copies)
        assert not getattr(g, "bit_generator", g).os_keyed


def test_setting_state_makes_a_generator_reproducible():
    g = dp.ChaCha20()
    clone = dp.ChaCha20()
    clone.state = g.state
    assert not clone.os_keyed
    assert processes.draw(clone) == processes.draw(g)


@pytest.mark.parametrize("method", START_METHODS)
def test_pool_workers_sent_one_os_keyed_generator_draw_different_noise(method):
    parent = dp.ChaCha20()
    sent = [parent, *parent.spawn(2), np.random.Generator(dp.ChaCha20().spawn(1)[0])]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        draws = pool.map(processes.draw, sent * 4)
    mine = [processes.draw(g) for g in sent]
    assert len(set(draws) | set(mine)) == len(draws) + len(mine)


@pytest.mark.parametrize("method", START_METHODS)
def test_pool_workers_sent_a_seeded_generator_repeat_it(method):
    g = dp.ChaCha20(seed=17).spawn(1)[0]
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(2) as pool:
        draws = pool.map(processes.draw, [g] * 4)
    assert draws == [processes.draw(g)] * 4
