"""``dpfast info`` and ``dpfast audit``: the commands that examine dpfast itself, its compiled
kernels and the privacy its mechanisms really spend."""
import argparse
import time
from typing import TextIO

from .. import __version__, _native
from ..rng import default_threads

__all__ = ["info", "audit"]


def info(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``dpfast info``: the version, the instruction set and the threads; exit code 0."""
    print(f"dpfast {__version__}", file=out)
    print(f"instruction set (keystream and samplers): {_native.simd_impl()}", file=out)
    print(f"threads: {'yes' if _native.have_threads() else 'no (kernels run on one thread)'}",
          file=out)
    print(f"default threads: {default_threads()} (OMP_NUM_THREADS or usable CPUs)", file=out)
    return 0


def audit(args: argparse.Namespace, out: TextIO) -> int:
    """Audit each case; 1 if any claim is contradicted (for the broken variants, expected)."""
    from ..auditing import CASES, run_case
    names = args.cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise ValueError(f"unknown audit case(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(CASES)}")
    violated = False
    for name in names:
        t0 = time.perf_counter()
        result = run_case(name, samples=args.samples, confidence=args.confidence,
                          rng=args.seed)
        seconds = time.perf_counter() - t0
        violated |= result.violated
        print(f"{name}: {CASES[name].about}\n  {result}\n  {seconds:.1f} s, "
              f"{result.samples / seconds / 1e6:.1f} M samples/s", file=out)
    return 1 if violated else 0
