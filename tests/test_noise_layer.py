"""The noise layer's structure: one module calls the sampling kernels, and it draws only
under a release's key.

These read the source (with :mod:`ast`, not text search), so a new module that reaches a
sampling kernel directly, or makes keys outside the release path, fails here.
"""
import ast
import pathlib

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native, noise
from refusals import rng_state

SRC = pathlib.Path(dp.__file__).parent

# Every compiled function that draws randomness (the sampling kernels), and what may call it.
SAMPLING_KERNELS = {
    "fill_uniform", "fill_discrete_laplace", "fill_laplace", "uniform_scalar",
    "discrete_laplace_scalar", "laplace_scalar", "fill_discrete_gaussian", "fill_gaussian",
    "noisy_argmax", "noisy_max_score", "noisy_top_k", "exponential_mechanism",
    "bound_keyed",
}
# The noise package's modules that call them: its noise objects and its keyed kernels.
NOISE_LAYER = {"noise/families.py", "noise/kernels.py"}
# Where keys are made: the release path; a key rebuilt from its bytes where a journal resumes
# a release (cells.py) or a task on another process receives it (dask.py, and pieces.py: the
# bounding of a bucket).
KEY_MAKERS = {"_release.py"}
KEY_FROM_BYTES = {"_release.py", "releases/cells.py", "dask/graph.py", "pieces.py"}


def _native_uses():
    """(module path, attribute) for every ``_native.<attribute>`` in the package."""
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "_native"):
                yield path.relative_to(SRC).as_posix(), node.attr
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.endswith("_native"):
                for alias in node.names:
                    yield path.relative_to(SRC).as_posix(), alias.name


def test_only_the_noise_layer_calls_the_sampling_kernels():
    callers = {(mod, name) for mod, name in _native_uses() if name in SAMPLING_KERNELS}
    outside = sorted((m, n) for m, n in callers if m not in NOISE_LAYER)
    assert outside == []
    # ... and it does reach them (the list above is not stale).
    assert len({n for m, n in callers if m in NOISE_LAYER}) >= len(SAMPLING_KERNELS) - 1


def _key_calls():
    """(module path, "Key" or "from_bytes") for every call making a key."""
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            f = node.func
            if f.attr == "Key" and isinstance(f.value, ast.Name) and f.value.id == "_native":
                yield path.relative_to(SRC).as_posix(), "Key"
            if f.attr == "from_bytes" and isinstance(f.value, ast.Attribute) \
                    and f.value.attr == "Key":
                yield path.relative_to(SRC).as_posix(), "from_bytes"


def test_keys_are_made_only_on_the_release_path():
    calls = set(_key_calls())
    assert {m for m, kind in calls if kind == "Key"} <= KEY_MAKERS
    assert {m for m, kind in calls if kind == "from_bytes"} <= KEY_FROM_BYTES


@pytest.mark.parametrize("draw", [
    lambda src: noise.Laplace(1.0, True).fill(src, 1, np.zeros(4, np.int64)),
    lambda src: noise.Laplace(1.0, False).fill(src, 1, np.zeros(4)),
    lambda src: noise.Laplace(1.0, True).scalar(src, 1, 0),
    lambda src: noise.Gaussian(1.0, True).fill(src, 1, np.zeros(4, np.int64)),
    lambda src: noise.Gaussian(1.0, False).scalar(src, 1, 0.0),
    lambda src: noise.noisy_argmax(src, 1, np.zeros(3), _native.NOISE_GUMBEL, 0.0, 1.0),
    lambda src: noise.uniforms(src, 1, np.zeros(3)),
    lambda src: noise.Laplace(1.0, False).scalar_kernel[0](src, 1, 1.0, 2.0**-20, 0.5),
    lambda src: noise.bounded_rows(src, src, 1, np.arange(4, dtype=np.int64), None, None,
                                   4, 1, 1),
], ids=["laplace-int", "laplace-grid", "laplace-scalar", "gaussian-int", "gaussian-scalar",
        "argmax", "uniforms", "laplace-one-number-kernel", "bounding"])
def test_the_noise_layer_refuses_a_generator(draw):
    gen = dp.ChaCha20(7)
    before = rng_state(gen)
    with pytest.raises(TypeError, match="key"):
        draw(gen)
    assert rng_state(gen) == before            # nothing drawn
    draw(_native.Key(dp.ChaCha20(7)))          # a key is accepted


def test_a_key_draws_what_the_generator_it_came_from_drew():
    # The one-call path hands kernels a key drawn after the charge; a kernel given the
    # generator itself takes exactly that key, so outputs did not change.
    a = _native.fill_discrete_laplace(dp.ChaCha20(3), 1, np.zeros(1000, np.int64), 2.0)
    b = noise.Laplace(2.0, True).fill(_native.Key(dp.ChaCha20(3)), 1,
                                      np.zeros(1000, np.int64))
    assert np.array_equal(a, b)


def test_keys_stream_refuses_copies():
    import copy
    import pickle

    from dpfast._release import Keys
    keys = Keys(dp.ChaCha20(1))
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError):
            attempt(keys)
