"""`dpfast aggregate`: per-key statistics of a CSV or Parquet file, run as a real process on
real files. The output is dp.group_by(...).agg(...) of the same records with the same seed,
number for number; --plan charges nothing and reads no record; bad input is refused by
option (never showing a value) before any charge; the ledger is charged once per run, and a
run killed with SIGKILL at any point leaves the charge in the ledger and the output absent
or complete, never half-written."""
import csv
import fcntl
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpfast as dp
from dpfast import cli
from dpfast.cli import readers

# A value of the records that no message may show.
SECRET = "SECRET7731"


def table(n=600, seed=0):
    """People (user 0..79) with several rows each, in four departments ("NA" is a name)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "user": rng.integers(0, 80, n),
        "dept": rng.choice(["a", "b", "c", "NA"], n, p=[0.5, 0.3, 0.15, 0.05]),
        "region": rng.integers(1, 4, n),
        "salary": rng.integers(0, 1000, n),
        "extra": ["x"] * n,
    })


@pytest.fixture
def people_csv(tmp_path):
    path = tmp_path / "people.csv"
    table().to_csv(path, index=False)
    return path


@pytest.fixture
def people_parquet(tmp_path):
    path = tmp_path / "people.parquet"
    pq.write_table(pa.Table.from_pandas(table(), preserve_index=False), path,
                   row_group_size=100)
    return path


def command(*argv):
    return [sys.executable, "-m", "dpfast", "aggregate", *map(str, argv)]


def dpfast(*argv):
    """(exit code, stdout, stderr) of `dpfast aggregate ...` in a new process."""
    proc = subprocess.run(command(*argv), capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def run(capsys, *argv):
    """(exit code, stdout, stderr) of `dpfast aggregate ...` in this process (a process
    each costs a second here: the runs that need no process of their own run in this one)."""
    try:
        code = cli.main(["aggregate", *map(str, argv)])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read_out(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def same_numbers(rows, expected, by):
    """The CSV ``rows`` hold exactly the frame ``expected`` (keys as text)."""
    assert rows[0] == [by, *expected.columns]
    assert [r[0] for r in rows[1:]] == [str(k) for k in expected.index]
    for r, (_, want) in zip(rows[1:], expected.iterrows()):
        for text, name in zip(r[1:], expected.columns):
            if name == "count":
                assert int(text) == want[name]
            else:
                assert float(text) == want[name], name      # exact: written with repr


# -- the release is dp.group_by's ------------------------------------------------------------
def test_csv_release_is_group_bys_with_the_same_seed(people_csv, tmp_path):
    out = tmp_path / "depts.csv"
    code, stdout, err = dpfast(
        people_csv, "--by", "dept", "--privacy-unit", "user", "--max-groups", 2,
        "--max-rows", 3, "--mean", "salary:0:1000", "--count", "--std", "salary:0:1000",
        "--sum", "salary:0:1000", "--epsilon", 8, "--delta", 1e-6, "--seed", 11,
        "--out", out)
    assert code == 0, err
    assert stdout == "" and "privacy unit: user" in err.splitlines()
    # The CSV's keys and people are text, exactly as written ("NA" is a department).
    frame = pd.read_csv(people_csv, dtype={"dept": str, "user": str}, keep_default_na=False)
    want = dp.group_by(frame, "dept", privacy_unit="user", max_groups=2, max_rows=3).agg(
        mean_salary=("salary", "mean"), count="count", std_salary=("salary", "std"),
        sum_salary=("salary", "sum"), bounds={"salary": (0, 1000)}, epsilon=8,
        delta=1e-6, accountant=dp.Accountant(epsilon=10, delta=1e-3), rng=11)
    assert len(want) >= 2                  # keys with many people are released
    same_numbers(read_out(out), want, "dept")
    assert f"{len(want)} key(s) (keys selected privately)" in err


def test_parquet_release_with_public_keys_of_any_type(people_parquet, capsys):
    # Integer keys, one of them (7) in no record: every public key appears.
    code, stdout, err = run(capsys, 
        people_parquet, "--by", "region", "--keys", "1,2,3,7", "--count", "--variance",
        "salary:0:1000", "--noise", "gaussian", "--epsilon", 1, "--delta", 1e-6,
        "--seed", 5)
    assert code == 0, err
    assert "no --privacy-unit: each row is a person" in err.splitlines()
    frame = pd.read_parquet(people_parquet)
    want = dp.group_by(frame, "region", keys=[1, 2, 3, 7]).agg(
        count="count", variance_salary=("salary", "variance"),
        bounds={"salary": (0, 1000)}, noise="gaussian", epsilon=1, delta=1e-6,
        accountant=dp.Accountant(epsilon=10, delta=1e-3), rng=5)
    rows = list(csv.reader(stdout.splitlines()))
    assert [r[0] for r in rows[1:]] == ["1", "2", "3", "7"]
    same_numbers(rows, want, "region")


def test_a_large_parquet_file_is_read_in_batches_with_a_progress_bar(people_parquet,
                                                                     tmp_path, capsys,
                                                                     monkeypatch):
    # The thresholds lowered so that 600 rows are "large": six batches of 100 rows.
    monkeypatch.setattr(readers, "AGG_PROGRESS_ROWS", 10)
    monkeypatch.setattr(readers, "AGG_BATCH_ROWS", 100)
    out = tmp_path / "out.csv"
    code = cli.main(["aggregate", str(people_parquet), "--by", "dept", "--privacy-unit",
                     "user", "--count", "--mean", "salary:0:1000", "--epsilon", "3",
                     "--delta", "1e-6", "--seed", "2", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0
    assert "dpfast aggregate: 100%" in err and "600/600" in err      # tqdm's bar
    want = dp.group_by(pd.read_parquet(people_parquet), "dept", privacy_unit="user").agg(
        count="count", mean_salary=("salary", "mean"), bounds={"salary": (0, 1000)},
        epsilon=3, delta=1e-6, accountant=dp.Accountant(epsilon=10, delta=1e-3), rng=2)
    same_numbers(read_out(out), want, "dept")


# -- the plan ---------------------------------------------------------------------------------
def test_plan_charges_nothing_and_reads_no_record(tmp_path, capsys):
    # Records that a read would refuse (a non-number, a missing key): the plan never sees them.
    path = tmp_path / "people.csv"
    path.write_text(f"user,dept,salary\n1,a,{SECRET}\n2,,5\n")
    ledger = tmp_path / "budget.ledger"
    dp.Accountant(epsilon=2, delta=1e-5, ledger=str(ledger))
    before = ledger.read_bytes()
    out = tmp_path / "depts.csv"
    code, stdout, err = run(capsys, path, "--by", "dept", "--privacy-unit", "user",
                               "--max-groups", 2, "--count", "--mean", "salary:0:100",
                               "--epsilon", 1, "--delta", 1e-6, "--plan", "--ledger", ledger,
                               "--out", out)
    assert code == 0, err
    lines = stdout.splitlines()
    assert "nothing charged" in lines[0]
    # The library's plan for the same release, line for line.
    want = dp.group_by(pd.DataFrame({"user": [], "dept": [], "salary": []}), "dept",
                       privacy_unit="user", max_groups=2).plan(
        count="count", mean_salary=("salary", "mean"), bounds={"salary": (0, 100)},
        epsilon=1, delta=1e-6)
    assert len(want) == 3 and want["measurement"].iloc[0].startswith("key selection")
    for (_, row), line in zip(want.iterrows(), lines[2:]):
        assert line.strip().startswith(row["measurement"])
        for name, value in row.items():
            if name.startswith("people for") and pd.notna(value):
                assert f" {int(value)} " in f" {line} "          # selection thresholds
        if pd.notna(row["std"]):                                  # the noise's std, last
            assert float(line.split()[-1]) == pytest.approx(row["std"], rel=1e-5)
    assert "epsilon = 0, delta = 0 spent of 2, 1e-05" in stdout
    assert ledger.read_bytes() == before and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.ledger",
                                                         "budget.ledger.dpfast-key",
                                                         "people.csv"]


# -- bad input: refused by option, nothing charged, no value shown --------------------------
BAD = {
    "lo >= hi": ("user,dept,salary\n1,a,5\n", ["--mean", "salary:5:1"],
                 r"--mean must be COL:LO:HI.*LO must be < HI"),
    "bounds not numbers": ("user,dept,salary\n1,a,5\n", ["--sum", "salary:low:high"],
                           r"--sum must be COL:LO:HI.*must be numbers"),
    "bounds missing": ("user,dept,salary\n1,a,5\n", ["--std", "salary:10"],
                       r"--std must be COL:LO:HI"),
    "infinite bound": ("user,dept,salary\n1,a,5\n", ["--sum", "salary:0:inf"],
                       r"--sum must be COL:LO:HI.*finite"),
    "two bounds for one column": ("user,dept,salary\n1,a,5\n",
                                  ["--sum", "salary:0:10", "--mean", "salary:0:20"],
                                  r"--mean 'salary:0:20': column 'salary' is given other "
                                  r"bounds"),
    "no statistic": ("user,dept,salary\n1,a,5\n", [], r"at least one statistic"),
    "missing --by": ("user,dept,salary\n1,a,5\n", ["--count", "--by", "nope"],
                     r"--by 'nope' is not a column of"),
    "missing value column": ("user,dept,salary\n1,a,5\n", ["--mean", "wage:0:9"],
                             r"--mean 'wage' is not a column of"),
    "missing --privacy-unit": ("user,dept,salary\n1,a,5\n",
                               ["--count", "--privacy-unit", "person"],
                               r"--privacy-unit 'person' is not a column of"),
    "NaN value": (f"user,dept,salary\n1,a,5\n2,{SECRET},nan\n", ["--mean", "salary:0:9"],
                  r"--mean 'salary': the value at record 2 of .* is NaN"),
    "infinite value": (f"user,dept,salary\n1,{SECRET},5\n2,a,-inf\n", ["--sum", "salary:0:9"],
                       r"--sum 'salary': the value at record 2 of .* is infinite"),
    "empty value": (f"user,dept,salary\n1,{SECRET},5\n2,a,\n", ["--sum", "salary:0:9"],
                    r"--sum 'salary': the value at record 2 of .* is missing"),
    "value not a number": (f"user,dept,salary\n1,a,5\n2,a,{SECRET}\n",
                           ["--mean", "salary:0:9"],
                           r"a value of column 'salary' is not a number"),
    "null key": (f"user,dept,salary\n{SECRET},a,5\n2,,5\n", ["--count"],
                 r"--by 'dept': record 2 of .* has no key"),
    "null person": (f"user,dept,salary\n1,{SECRET},5\n,a,5\n",
                    ["--count", "--privacy-unit", "user"],
                    r"--privacy-unit 'user': record 2 of .* has no person"),
    "max-groups 0": ("user,dept,salary\n1,a,5\n",
                     ["--count", "--privacy-unit", "user", "--max-groups", "0"],
                     r"argument --max-groups: must be >= 1"),
    "max-rows 0": ("user,dept,salary\n1,a,5\n",
                   ["--count", "--privacy-unit", "user", "--max-rows", "0"],
                   r"argument --max-rows: must be >= 1"),
    "bounds without a privacy unit": ("user,dept,salary\n1,a,5\n",
                                      ["--count", "--max-rows", "3"],
                                      r"--max-groups and --max-rows .* need --privacy-unit"),
    "private keys without delta": ("user,dept,salary\n1,a,5\n",
                                   ["--count", "--delta", "0"],
                                   r"argument --delta: delta must be in \(0, 1\)"),
    "selection under the count rule": ("user,dept,salary\n1,a,5\n",
                                       ["--mean", "salary:0:9", "--selection", "0.3"],
                                       r"--selection sets the key selection's share"),
    "selection with --selection-rule count": ("user,dept,salary\n1,a,5\n",
                                              ["--count", "--selection", "0.3",
                                               "--selection-rule", "count"],
                                              r"--selection .* the count rule"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_refused_by_option_before_any_charge(case, tmp_path, capsys):
    text, options, pattern = BAD[case]
    path = tmp_path / "people.csv"
    path.write_text(text)
    ledger = tmp_path / "budget.ledger"
    dp.Accountant(epsilon=5, delta=1e-4, ledger=str(ledger))
    before = ledger.read_bytes()
    out = tmp_path / "out.csv"
    argv = ["aggregate", str(path), "--by", "dept", *options, "--epsilon", "1",
            "--delta", "1e-6", "--ledger", str(ledger), "--out", str(out), "--seed", "1"]
    if "--by" in options:                 # the case names its own --by
        argv[2:4] = []
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    captured = capsys.readouterr()
    assert exit_.value.code == 2 and captured.out == ""
    import re
    assert re.search(pattern, captured.err), captured.err
    assert SECRET not in captured.err and "Traceback" not in captured.err
    assert ledger.read_bytes() == before            # nothing charged
    assert dp.Accountant.from_ledger(str(ledger)).spent == (0.0, 0.0)
    assert not out.exists() and not list(tmp_path.glob(".out.csv.*"))


def test_nulls_and_nan_in_a_parquet_file_are_refused_by_record(tmp_path, capsys):
    path = tmp_path / "people.parquet"
    ledger = tmp_path / "budget.ledger"
    dp.Accountant(epsilon=5, ledger=str(ledger))
    before = ledger.read_bytes()
    common = ["--count", "--sum", "salary:0:9", "--keys", "a,b", "--epsilon", 1, "--ledger",
              ledger]
    pq.write_table(pa.table({"dept": ["a", None, "b"], "salary": [1.0, 2.0, 3.0],
                             "user": [SECRET, "x", "y"]}), path)
    code, out, err = run(capsys, path, "--by", "dept", *common)
    assert code == 2 and "--by 'dept': record 2 of" in err and "has no key" in err
    pq.write_table(pa.table({"dept": ["a", SECRET, "b"], "salary": [1.0, 2.0, np.nan]}), path)
    code, out, err = run(capsys, path, "--by", "dept", *common)
    assert code == 2 and "--sum 'salary': the value at record 3 of" in err and "NaN" in err
    pq.write_table(pa.table({"dept": ["a", "b"], "salary": [SECRET, "1"]}), path)
    code, out, err = run(capsys, path, "--by", "dept", *common)
    assert code == 2 and "--sum 'salary': the column holds string, not numbers" in err
    assert SECRET not in err and ledger.read_bytes() == before


# -- files --------------------------------------------------------------------------------------
def test_an_existing_output_is_replaced_only_with_force_and_never_the_input(people_csv,
                                                                          tmp_path, capsys):
    out = tmp_path / "out.csv"
    out.write_text("old\n")
    argv = ["aggregate", str(people_csv), "--by", "dept", "--count", "--keys", "a,b",
            "--epsilon", "1", "--seed", "1"]
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--out", str(out)])
    assert exit_.value.code == 2 and "exists: pass --force" in capsys.readouterr().err
    assert out.read_text() == "old\n"
    assert cli.main([*argv, "--out", str(out), "--force"]) == 0
    assert [r[0] for r in read_out(out)] == ["dept", "a", "b"]
    data = people_csv.read_bytes()
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--out", str(people_csv), "--force"])
    assert exit_.value.code == 2 and "is the input file" in capsys.readouterr().err
    assert people_csv.read_bytes() == data


# -- the ledger ---------------------------------------------------------------------------------
def test_a_ledger_is_charged_once_per_run_and_refuses_what_it_cannot_cover(people_csv,
                                                                         tmp_path, capsys):
    ledger, out = tmp_path / "budget.ledger", tmp_path / "depts.csv"
    argv = [people_csv, "--by", "dept", "--privacy-unit", "user", "--keys", "a,b,c,NA",
            "--count", "--mean", "salary:0:1000", "--noise", "gaussian", "--epsilon", 1,
            "--delta", 1e-6, "--out", out, "--force", "--ledger", ledger]
    code, _, err = run(capsys, *argv, "--budget", 2.5, "--budget-delta", 1e-5)
    assert code == 0, err
    assert f"Ledger {ledger}: epsilon = 1, delta = 1e-06 spent of 2.5, 1e-05" in err
    first = out.read_bytes()
    code, _, err = run(capsys, *argv)              # the ledger exists: no --budget
    assert code == 0, err
    assert dp.Accountant.from_ledger(str(ledger)).spent == (2.0, 2e-6)
    assert out.read_bytes() != first               # a new release (OS-keyed noise)
    second = out.read_bytes()
    code, _, err = run(capsys, *argv)              # 0.5 left: refused, nothing charged
    assert code == 2 and "Traceback" not in err, err
    assert dp.Accountant.from_ledger(str(ledger)).spent == (2.0, 2e-6)
    assert out.read_bytes() == second


def test_a_new_ledger_needs_a_delta_budget_for_a_release_with_delta(people_csv, tmp_path,
                                                                   capsys):
    ledger = tmp_path / "budget.ledger"
    code, _, err = run(capsys, people_csv, "--by", "dept", "--count", "--epsilon", 1, "--delta",
                          1e-6, "--ledger", ledger, "--budget", 3)
    assert code == 2 and "--budget-delta" in err
    assert not ledger.exists()


def killed(argv, tmp_path, ledger, when):
    """Start `dpfast aggregate argv`, SIGKILL it at ``when`` and return its exit status.

    "before the charge": the ledger's lock is held here, so the run, once its temporary
    output exists, cannot get past the charge; it is killed while it waits. "after the
    charge": it is stopped as soon as the ledger has grown by its charge (the charge is one
    write), then killed somewhere between the charge and its end."""
    size = ledger.stat().st_size
    lock = os.open(ledger, os.O_RDONLY)
    try:
        if when == "before the charge":
            fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.Popen(command(*argv), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while proc.poll() is None:
            if when == "before the charge" and list(tmp_path.glob(".depts.csv.*.tmp")):
                time.sleep(0.2)             # on its way to the lock, or waiting for it
                break
            if when == "after the charge" and ledger.stat().st_size > size:
                break
            assert time.monotonic() < deadline, "the run never reached the point"
            time.sleep(0.0002)
        proc.send_signal(signal.SIGSTOP)
        proc.send_signal(signal.SIGKILL)
        return proc.wait(timeout=60)
    finally:
        os.close(lock)


@pytest.mark.parametrize("when", ["before the charge", "after the charge"])
def test_sigkill_then_rerun_never_releases_without_a_charge(when, tmp_path, capsys):
    # 3000 public keys: a release long enough to be caught between its charge and its end.
    n = 30000
    rng = np.random.default_rng(1)
    path = tmp_path / "people.parquet"
    pq.write_table(pa.table({"user": rng.integers(0, 5000, n), "dept": rng.integers(0, 3000, n),
                             "salary": rng.uniform(0, 100, n)}), path)
    ledger, out = tmp_path / "budget.ledger", tmp_path / "depts.csv"
    dp.Accountant(epsilon=10, delta=1e-4, ledger=str(ledger))
    keys = ",".join(map(str, range(3000)))
    argv = [path, "--by", "dept", "--privacy-unit", "user", "--keys", keys, "--count",
            "--mean", "salary:0:100", "--epsilon", 1, "--seed", 4, "--out", out,
            "--ledger", ledger]
    status = killed(argv, tmp_path, ledger, when)
    spent = dp.Accountant.from_ledger(str(ledger)).spent
    if when == "before the charge":
        assert status == -signal.SIGKILL and spent == (0.0, 0.0) and not out.exists()
    else:           # killed, or (rarely, on a busy machine) finished before the kill landed
        assert status in (-signal.SIGKILL, 0) and spent == (1.0, 0.0)
    # Never a release without its charge: an output exists only once the ledger holds it.
    assert not out.exists() or spent == (1.0, 0.0)
    partial = out.read_bytes() if out.exists() else None
    code, _, err = run(capsys, *argv, "--force")
    assert code == 0, err
    after = dp.Accountant.from_ledger(str(ledger)).spent
    assert after == (spent[0] + 1.0, 0.0)   # the rerun paid for its own release
    rows = read_out(out)
    assert len(rows) == 3001 and rows[-1][0] == "2999"
    # The killed run's output, if it got that far, was the complete release (same seed).
    assert partial is None or partial == out.read_bytes()
