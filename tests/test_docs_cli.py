"""Docstring examples run as doctests; the CLI and the embedded data work as documented."""
import doctest
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpfast as dp
from dpfast import cli

ROOT = Path(__file__).resolve().parents[1]
# Every module of the package: its docstrings' examples (methods' included) run.
MODULES = sorted(m.name for m in pkgutil.walk_packages(dp.__path__, "dpfast.")
                 if not m.name.endswith("__main__"))
# Modules whose examples are the documentation of a public API (an example must be there).
DOCUMENTED = ["dpfast._native", "dpfast.accounting.accountant", "dpfast.accounting.leases",
              "dpfast.samplers", "dpfast.rng", "dpfast.auditing",
              "dpfast.mechanisms.laplace", "dpfast.mechanisms.gaussian",
              "dpfast.mechanisms.selection", "dpfast.mechanisms.randomized_response",
              "dpfast.releases.histograms", "dpfast.releases.record_tables",
              "dpfast.releases.postprocess", "dpfast.datasets", "dpfast.groupby.grouping",
              "dpfast.dask.arrays", "dpfast.dask.histograms", "dpfast.dask.tables",
              "dpfast.dask.groupby", "dpfast.records.moments", "dpfast.records.order_statistics",
              "dpfast.linear.tree", "dpfast.linear.hierarchy", "dpfast.linear.contingency",
              "dpfast.linear.multiplicative_weights", "dpfast.linear.small_database"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0 or name not in DOCUMENTED, f"{name} has no examples"


def test_every_public_function_has_a_numpydoc_docstring():
    for name in dp.__all__:
        obj = getattr(dp, name)
        doc = inspect.getdoc(obj) or ""
        assert len(doc) > 40, name


@pytest.mark.parametrize("stub, module", [("_native.pyi", "dpfast._native")])
def test_type_stubs_match_compiled_modules(stub, module):
    text = (ROOT / "src" / "dpfast" / stub).read_text()
    declared = set(re.findall(r"^(?:def|class) (\w+)", text, flags=re.M))
    mod = importlib.import_module(module)
    public = {n for n, v in vars(mod).items()
              if not n.startswith("_") and (inspect.isroutine(v) or inspect.isclass(v))
              and getattr(v, "__module__", module) == module}
    assert declared == public
    for cls, body in re.findall(r"^class (\w+).*?:\n((?:    .*\n|\n)+)", text, flags=re.M):
        methods = set(re.findall(r"^    def (\w+)", body, flags=re.M))
        assert methods <= set(dir(getattr(mod, cls))), cls


def test_demo_output(capsys):
    assert cli.main(["demo", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "over 50" in out
    assert out.count("DEMO ONLY") == 3 and "6,460" in out
    assert "epsilon = 3 of 3" in out              # three releases at the default epsilon 1
    assert "+/- 3 of the true count" in out       # 95% interval of discrete Laplace(1)
    # Reproducible with a seed.
    cli.main(["demo", "--seed", "3"])
    assert capsys.readouterr().out == out


def test_demo_rejects_bad_epsilon():
    with pytest.raises(SystemExit):
        cli.main(["demo", "--epsilon", "-1"])


def test_console_script_runs():
    proc = subprocess.run([sys.executable, "-m", "dpfast", "info"], capture_output=True,
                          text=True, check=True)
    assert "instruction set (keystream and samplers)" in proc.stdout


def test_demo_interval_matches_the_pmf():
    # The demo's one-count interval is the 95% quantile of |K|, K discrete Laplace(scale).
    for scale in (1.0, 10.0, 1000.0):
        j = dp.max_error_bound(1, epsilon=1 / scale)
        a = np.exp(-1 / scale)
        tail = lambda k: 2 * a**k / (1 + a)       # P[|K| >= k]
        assert tail(j + 1) <= 0.05 < tail(j)


def test_readme_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "README has no python example"
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    noisy, mean_income, remaining = capsys.readouterr().out.split(" ", 2)
    int(noisy)                                   # integer data -> integer release
    g = dp.laplace_granularity(100.0 / 0.5)
    assert float(mean_income) / g == round(float(mean_income) / g)
    assert remaining.strip() == "(0.0, 0.0)"
    assert namespace["noise"].shape == (10**7,)


def test_readme_table_example_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)                      # the snippet writes cells.npy
    namespace = {"np": np, "dp": dp}
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    assert namespace["counts"].shape == (8,) and (namespace["table"] >= 0).all()
    assert namespace["bound"] == dp.max_error_bound(8, epsilon=1.0)
    released = np.load("cells.npy")
    assert released.dtype == np.int32 and released.shape == (10**7,)
    assert (released != 7).mean() > 0.5                 # noised in place


def test_readme_shell_examples_run(tmp_path, monkeypatch, capsys):
    import shlex
    text = (ROOT / "README.md").read_text()
    block = re.findall(r"```sh\n(.*?)```", text, flags=re.S)[1].strip().splitlines()
    monkeypatch.chdir(tmp_path)
    for line in block:
        argv = shlex.split(line)
        if argv[0] == "python":
            subprocess.run([sys.executable, *argv[1:]], check=True)
        else:
            assert argv[0] == "dpfast" and cli.main(argv[1:]) == 0, line
    assert len(np.loadtxt("ages.csv", delimiter=",", skiprows=1)) == 8
    # The ledger example: a second run spends the rest, a third is refused.
    last = shlex.split(block[-1])[1:]
    assert cli.main(last) == 0
    with pytest.raises(SystemExit):
        cli.main(last)
    assert "budget" in capsys.readouterr().err
    assert dp.Accountant.from_ledger("budget.ledger").spent == (1.0, 0.0)


def test_readme_opens_with_the_two_ci_commands():
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)```", text, flags=re.S).group(1).strip().splitlines()
    assert len(first) == 2
    assert first[0].endswith("dpfast demo") and "pytest tests" in first[1]
    assert text.index("```sh") < text.index("## ")


@pytest.mark.parametrize("argv", [["demo", "--epsilon", "1e-13"], ["demo", "--seed", "-1"],
                                  ["demo", "--epsilon", "1e308"]])
def test_demo_bad_arguments_give_a_message_not_a_traceback(argv, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err


def test_readme_zcdp_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
              if 'composition="zcdp"' in b]
    assert len(blocks) == 1
    namespace = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    first, second = capsys.readouterr().out.strip().splitlines()
    rho, eps, left = map(float, first.split())
    acct = namespace["acct"]
    assert rho == 0.012 and eps <= 1.0 and left == acct.rho - 0.012
    records, spent = second.split()
    assert int(records) == 4 and float(spent) == 0.012 + 1000 * 1e-6 / 2
    assert len(namespace["tables"]) == 6


def test_readme_selection_example_runs():
    namespace = run_readme_block("dp.report_noisy_max(")
    assert namespace["best"] in range(4) and namespace["pick"] in range(4)
    assert namespace["name"] in ("football", "basketball", "hockey", "curling")
    assert len(set(namespace["top2"].tolist())) == 2
    assert namespace["gap"] == dp.exponential_mechanism_utility_gap(4, epsilon=1.0,
                                                                   monotonic=True)


def test_readme_gaussian_example_runs(capsys):
    namespace = run_readme_block("dp.gaussian_sigma(")
    assert capsys.readouterr().out.strip() == "(1.5, 1e-06)"
    assert 0.0 <= namespace["variance"]
    assert namespace["released"].dtype == np.float64


def test_readme_performance_table_shows_every_mechanism():
    from dpfast.benchmarks import suite as bench
    text = (ROOT / "README.md").read_text()
    start = text.index("**1. Throughput against numpy**")
    table = text[start:text.index("\n## ", start)]
    names = {c.name for c in bench.cases(1000, [1], None) if c.impl == "dpfast"}
    missing = [n for n in names if f"| {n} |" not in table]
    assert not missing, missing


def run_readme_block(marker, **names):
    """Run the README's Python example that contains ``marker``; its namespace."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S)
                 if marker in b)
    namespace = {"np": np, "dp": dp, **names}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace


def test_readme_linear_queries_example_runs():
    namespace = run_readme_block("dp.tree_mechanism(")
    rel, geo = namespace["rel"], namespace["geo"]
    assert rel.estimate.shape == (100,)
    assert geo.counts[0][0] == geo.counts[1].sum() == geo.counts[2].sum()
    assert namespace["w"].sensitivity == 50 * 51


def test_readme_marginals_example_runs():
    from dpfast.datasets import load_adult
    namespace = run_readme_block("dp.marginals(", load_adult=load_adult)
    assert namespace["table"].shape == (2, 5)
    assert len(namespace["tables"]) == 3 and namespace["small"].database.sum() == namespace["small"].m
    assert namespace["synth"].synthetic.shape == (64,)


def test_readme_streams_example_runs():
    namespace = run_readme_block("dp.Sparse(")
    assert namespace["answers"].shape == (3,)
    assert namespace["result"].epsilon_lower_bound < 1.0 and not namespace["result"].violated
    assert namespace["above"].dtype == bool


def test_readme_graphical_example_runs():
    namespace = run_readme_block('method="aim"')
    rel, fake = namespace["rel"], namespace["fake"]
    assert len(rel) == 6 and rel.model.marginal((0, 1, 2)).shape == (16, 7, 6)
    assert list(fake.columns) == ["education", "marital-status", "relationship", "sex"]
    assert abs(len(fake) - 32561) < 2000


def test_readme_records_example_runs(capsys):
    pd = pytest.importorskip("pandas")
    namespace = run_readme_block("dp.group_by(")
    table, acct = namespace["table"], namespace["acct"]
    assert isinstance(table, pd.DataFrame)
    assert set(table.index) <= {"sales", "ops", "research"}
    assert list(table.columns) == ["n", "total", "avg", "med"]
    assert "measurement" in capsys.readouterr().out          # the plan: printed, not spent
    assert acct.spent.epsilon == pytest.approx(2.0)
