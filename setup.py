"""Build the compiled modules only; all metadata lives in pyproject.toml.

Environment switches:
  DPFAST_NO_OPENMP=1  build without OpenMP (kernels then run on one thread)
  DPFAST_DEBUG=1      Cython bounds/wraparound checks on, -O0 -g
"""
import os
import sys
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE = os.path.join("src", "dpfast", "_core")
DEBUG = os.environ.get("DPFAST_DEBUG", "") not in ("", "0")


def _compiler_accepts(compiler, flag):
    """Compile and link a tiny OpenMP program with `flag`; False if anything fails."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n")
        try:
            objs = compiler.compile([src], output_dir=tmp, extra_postargs=[flag])
            compiler.link_executable(objs, os.path.join(tmp, "probe"), extra_postargs=[flag])
        except Exception:
            return False
    return True


class BuildExt(build_ext):
    """Adds OpenMP flags when the compiler supports them (and they are not switched off)."""

    def build_extensions(self):
        use_omp = os.environ.get("DPFAST_NO_OPENMP", "") in ("", "0")
        if use_omp and not _compiler_accepts(self.compiler, "-fopenmp"):
            print("dpfast: compiler has no OpenMP; building single-threaded kernels",
                  file=sys.stderr)
            use_omp = False
        for ext in self.extensions:
            if use_omp:
                ext.extra_compile_args.append("-fopenmp")
                ext.extra_link_args.append("-fopenmp")
        super().build_extensions()


# -ffp-contract=off: no fused multiply-add, so every instruction set rounds the same way and a
# seed gives the same samples on every machine (the error analysis also assumes it).
cflags = ["-O0", "-g"] if DEBUG else ["-O3"]
cflags += ["-std=c11", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
           "-Wno-unused-function"]


def make_ext(name, sources):
    return Extension(
        name,
        sources,
        include_dirs=[CORE, np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=list(cflags),
        extra_link_args=[],
        libraries=["m"] if os.name == "posix" else [],
    )


extensions = [
    make_ext("dpfast._chacha", ["src/dpfast/_chacha.pyx", f"{CORE}/chacha20.c"]),
    make_ext("dpfast._sampling",
             ["src/dpfast/_sampling.pyx", f"{CORE}/chacha20.c", f"{CORE}/sampling.c"]),
    make_ext("dpfast._counting", ["src/dpfast/_counting.pyx", f"{CORE}/counting.c"]),
]

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

setup(
    ext_modules=cythonize(extensions, compiler_directives=directives),
    cmdclass={"build_ext": BuildExt},
)
