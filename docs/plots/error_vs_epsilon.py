"""Error against epsilon for dpfast's main releases (drawn by the docs build).

Each release is made 20 times at each epsilon on small synthetic data; the plot shows the
root-mean-square error of the released numbers against the true ones. The seeds are fixed
so that the figure is the same at every build: a seed is for reproducible documentation and
tests only, never for a real release.
"""
import numpy as np
import matplotlib.pyplot as plt

import dpfast as dp

EPSILONS = np.geomspace(0.05, 3, 7)
REPEATS = 20
data = np.random.default_rng(0)
cells = data.poisson(50, 256)                               # a histogram of 256 cells
state_of_county = np.repeat(np.arange(8), 8)                # 8 states of 8 counties
counties = data.poisson(200, 64)
salaries = data.uniform(20_000, 120_000, 5_000)


def rmse(release, truth):
    errs = [np.mean((np.asarray(release(seed), float) - truth) ** 2) for seed in range(REPEATS)]
    return float(np.sqrt(np.mean(errs)))


budget = dp.Accountant()                                    # unlimited: a figure, not a release
curves = {
    "noisy_counts (each cell)": lambda eps: rmse(
        lambda s: dp.noisy_counts(cells, epsilon=eps, rng=s, accountant=budget), cells),
    "census_hierarchy (each county, 3 levels)": lambda eps: rmse(
        lambda s: dp.census_hierarchy(counties, [np.zeros(8, int), state_of_county],
                                      epsilon=eps, rng=s, accountant=budget).counts[2],
        counties),
    "tree_mechanism (ranges of 64 cells)": lambda eps: rmse(
        lambda s: dp.tree_mechanism(cells, epsilon=eps, rng=s, accountant=budget).range_sums(
            np.arange(0, 192, 16), np.arange(64, 256, 16)),
        np.array([cells[a:a + 64].sum() for a in range(0, 192, 16)])),
    "mean of 5,000 salaries in [0, 200k]": lambda eps: rmse(
        lambda s: dp.mean(salaries, bounds=(0, 200_000), epsilon=eps, rng=s,
                          accountant=budget), salaries.mean()),
}

fig, ax = plt.subplots()
for label, curve in curves.items():
    ax.loglog(EPSILONS, [curve(e) for e in EPSILONS], marker="o", label=label)
ax.set_xlabel("epsilon")
ax.set_ylabel("RMSE (20 releases per point)")
ax.set_title("Laplace noise: error falls as 1/epsilon (integer noise faster at large epsilon)", fontsize=8)
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=7)
fig.tight_layout()
