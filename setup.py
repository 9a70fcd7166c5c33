"""Build the compiled module only; all metadata lives in pyproject.toml.

One extension, dpfast._native, holds the ChaCha20 generator and every kernel (the design note
at the top of src/dpfast/_native.pyx says why).

Environment switches:
  DPFAST_NO_THREADS=1  build without the thread pool (every call then runs on one thread)
  DPFAST_DEBUG=1       Cython bounds/wraparound checks on, -O0 -g
"""
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

CORE = os.path.join("src", "dpfast", "_core")
DEBUG = os.environ.get("DPFAST_DEBUG", "") not in ("", "0")
THREADS = os.name == "posix" and os.environ.get("DPFAST_NO_THREADS", "") in ("", "0")

# -ffp-contract=off: no fused multiply-add, so every instruction set rounds the same way and a
# seed gives the same samples on every machine (the error analysis also assumes it).
cflags = ["-O0", "-g"] if DEBUG else ["-O3"]
cflags += ["-std=c11", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
           "-Wno-unused-function"]
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if THREADS:
    cflags.append("-pthread")
else:
    macros.append(("DPF_NO_THREADS", "1"))

native = Extension(
    "dpfast._native",
    ["src/dpfast/_native.pyx"]
    + [os.path.join(CORE, f) for f in ("simd.c", "chacha20.c", "driver.c", "sampling.c",
                                       "counting.c", "records.c")],
    include_dirs=[CORE, np.get_include()],
    define_macros=macros,
    extra_compile_args=cflags,
    extra_link_args=["-pthread"] if THREADS else [],
    libraries=["m"] if os.name == "posix" else [],
)

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

setup(ext_modules=cythonize([native], compiler_directives=directives))
