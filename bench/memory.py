"""Extra memory of releases on large inputs: no input-sized copies.

    python bench/memory.py [--n 100000000] [--only NAME ...] [--json FILE]

Each case runs in a fresh Python process: the input (n elements of the stated dtype) is built
and touched, the process's peak resident set is reset (/proc/self/clear_refs), the release is
made once, and the extra memory is the new peak (VmHWM) minus the resident set just before
the call. An input-sized copy of 10^8 elements would show as 100-800 MiB; the floor is the
output (a few KiB here) plus the kernels' per-thread buffers.
"""
import argparse
import json
import subprocess
import sys

N = 10**8

# name -> (dtype, make the input of n elements as `x`, the release)
CASES = {
    "histogram int8": ("int8", "x = (np.arange(n) % 100).astype(np.int8)",
                       "dp.histogram(x, 100, range=(0, 100), epsilon=1.0, accountant=acct)"),
    "histogram uint8": ("uint8", "x = (np.arange(n) % 100).astype(np.uint8)",
                        "dp.histogram(x, 100, range=(0, 100), epsilon=1.0, accountant=acct)"),
    "histogram int16": ("int16", "x = (np.arange(n) % 1000).astype(np.int16)",
                        "dp.histogram(x, 1000, range=(0, 1000), epsilon=1.0, accountant=acct)"),
    "histogram uint16": ("uint16", "x = (np.arange(n) % 1000).astype(np.uint16)",
                         "dp.histogram(x, 1000, range=(0, 1000), epsilon=1.0, "
                         "accountant=acct)"),
    "report_noisy_max int64": ("int64", "x = np.arange(n, dtype=np.int64) % 977",
                               "dp.report_noisy_max(x, epsilon=1.0, accountant=acct)"),
    "report_noisy_max float32": ("float32", "x = (np.arange(n) % 977).astype(np.float32)",
                                 "dp.report_noisy_max(x, epsilon=1.0, accountant=acct)"),
    "exponential_mechanism int64": ("int64", "x = np.arange(n, dtype=np.int64) % 977",
                                    "dp.exponential_mechanism(x, epsilon=1.0, accountant=acct)"),
    "exponential_mechanism float32": ("float32",
                                      "x = (np.arange(n) % 977).astype(np.float32)",
                                      "dp.exponential_mechanism(x, epsilon=1.0, "
                                      "accountant=acct)"),
    "permute_and_flip int64": ("int64", "x = np.arange(n, dtype=np.int64) % 977",
                               "dp.permute_and_flip(x, epsilon=1.0, accountant=acct)"),
    "permute_and_flip float32": ("float32", "x = (np.arange(n) % 977).astype(np.float32)",
                                 "dp.permute_and_flip(x, epsilon=1.0, accountant=acct)"),
    "top_k (k = 10) float64": ("float64", "x = np.arange(n, dtype=np.float64) % 977",
                               "dp.top_k(x, 10, epsilon=1.0, accountant=acct)"),
    "top_k (k = 10) int64": ("int64", "x = np.arange(n, dtype=np.int64) % 977",
                             "dp.top_k(x, 10, epsilon=1.0, accountant=acct)"),
}

CHILD = """
import json, sys
import numpy as np
import dpfast as dp

def kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])

n = {n}
acct = dp.Accountant()
{make}
x.sum()                                    # touch every page of the input
dp.noisy_counts(np.arange(10), epsilon=1.0, accountant=acct)   # load and warm the kernels
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                           # reset the peak resident set to the current one
before = kib("VmRSS")
{call}
after = kib("VmHWM")
print(json.dumps({{"input_mib": x.nbytes / 2**20, "extra_mib": (after - before) / 1024}}))
"""


def measure(name, n):
    _, make, call = CASES[name]
    code = CHILD.format(n=n, make=make, call=call)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=N, help="elements per input (default 1e8)")
    parser.add_argument("--only", nargs="+", choices=sorted(CASES), metavar="NAME",
                        help="run only these cases")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)

    from dpfast.benchmarks import machine_info, machine_line
    print(f"Machine: {machine_line(machine_info())}")
    print(f"n = {args.n:,} elements per input; extra = peak resident memory during the call "
          "minus resident memory before it\n")
    print("| case | input dtype | input MiB | extra MiB |\n|---|---|---:|---:|")
    results = []
    for name in args.only or CASES:
        r = measure(name, args.n)
        results.append({"case": name, "dtype": CASES[name][0], **r})
        print(f"| {name} | {CASES[name][0]} | {r['input_mib']:.0f} | {r['extra_mib']:.1f} |",
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
