"""The instruction sets this CPU runs (the ``impl`` fixture of conftest.py runs a test on
each of them: the keystream and every sampler switch together; outputs must not change)."""
from dpfast import _native


def available_impls():
    impls = [name for name in ("avx512", "avx2", "scalar") if _native.set_simd_impl(name)]
    _native.set_simd_impl("auto")
    return impls


IMPLS = available_impls()
