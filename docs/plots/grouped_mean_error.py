"""Grouped-mean error against group size (dp.group_by(...).agg(avg=(col, "mean"))).

Departments of 10 to 10,000 people, each person with 1 to 8 payslips (at most 5 kept);
10 releases at epsilon = 1 with public keys. The relative error of a department's mean
falls as one over its size. Seeds fixed for the documentation only.
"""
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt

import dpfast as dp

SIZES = np.array([10, 30, 100, 300, 1_000, 3_000, 10_000])
data = np.random.default_rng(0)
dept_of_person = np.repeat(np.arange(SIZES.size), SIZES)
rows = data.integers(1, 9, dept_of_person.size)
person = np.repeat(np.arange(dept_of_person.size), rows)
frame = pd.DataFrame({"user_id": person, "dept": dept_of_person[person],
                      "salary": data.lognormal(10.8, 0.4, person.size).clip(0, 300_000)})
truth = frame.groupby("dept")["salary"].mean().to_numpy()

depts = dp.group_by(frame, "dept", privacy_unit="user_id", max_groups=1, max_rows=5,
                    keys=list(range(SIZES.size)))
budget = dp.Accountant()                                    # unlimited: a figure, not a release
errors = np.array([
    np.abs(depts.agg(avg=("salary", "mean"), bounds={"salary": (0, 300_000)}, epsilon=1.0,
                     accountant=budget, rng=seed)["avg"].to_numpy() / truth - 1)
    for seed in range(10)])

fig, ax = plt.subplots()
ax.loglog(SIZES, errors.mean(axis=0), marker="o", label="mean relative error, 10 releases")
ax.loglog(SIZES, errors.max(axis=0), marker="v", ls=":", label="worst of the 10")
ax.set_xlabel("people in the department")
ax.set_ylabel("relative error of the department's mean")
ax.set_title("Grouped mean, epsilon = 1, salaries in [0, 300k], 5 rows a person")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
