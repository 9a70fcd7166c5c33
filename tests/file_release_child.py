"""Run in a child process by tests/test_file_guarantees.py: one in-place release of a .npy
file, as a user's script would make it, to be killed at any point.

    python file_release_child.py PATH SEED BLOCK [fill]

``BLOCK``: the release's block size in cells (a multiple of the kernels' chunk; small blocks
give many points to kill at in a small file). ``fill``: first write 7 into every cell, as the
README's snippet does (fresh true counts on every run). Prints "ready" just before the
release starts.
"""
import sys

import numpy as np

import dpfast as dp
from dpfast.releases import histograms


def say(word):
    print(word, flush=True)


def main(path, seed, block, fill=False, tell=say):
    histograms.BLOCK = block
    cells = np.lib.format.open_memmap(path, mode="r+")
    if fill:
        cells[:] = 7
    tell("ready")
    dp.noisy_counts(cells, epsilon=1.0, out=cells, rng=seed, accountant=dp.Accountant(),
                    progress=False)
    tell("done")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), len(sys.argv) > 4)
