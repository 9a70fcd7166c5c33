"""``dpfast bench`` and :mod:`dpfast.benchmarks` in quick mode: every case runs and reports sane,
positive numbers. No timing thresholds: CI machines are too noisy for them."""
import json
import math
import sys

import numpy as np
import pytest

from dpfast.benchmarks import core, suite
from dpfast.cli import main


@pytest.fixture(scope="module")
def report():
    # One quick run shared by the checks below keeps the file to a few seconds.
    return suite.run(quick=True, threads=[1, 2], include_libraries=False)


def test_every_family_runs(report):
    assert {r["family"] for r in report.results} == set(suite.FAMILIES)
    for family, base in suite.BASELINES.items():
        assert any(r["name"] == base and r["impl"] == "numpy" for r in report.results), family
        assert any(r["family"] == family and r["impl"] == "dpfast" for r in report.results)


def test_numbers_are_sane(report):
    for r in report.results:
        ns, eps = r["median_ns_per_element"], r["elements_per_s"]
        assert math.isfinite(ns) and ns > 0, r
        assert math.isfinite(eps) and eps > 0, r
        assert eps * ns == pytest.approx(1e9, rel=1e-9)
        lo, hi = r["spread_ns_per_element"]
        assert 0 < lo <= ns <= hi
        assert r["n"] == suite.QUICK_SIZE
        assert r["threads"] >= 1
        if r["impl"] == "numpy":
            assert r["baseline"] is None and r["ratio_vs_baseline"] is None
        elif r["family"] != "floor":
            assert r["baseline"] == suite.BASELINES[r["family"]]
            assert math.isfinite(r["ratio_vs_baseline"]) and r["ratio_vs_baseline"] > 0


def test_dpfast_cases_at_each_thread_count(report):
    for name in ("dp.laplace", "dp.exponential_mechanism", "dp.report_noisy_max gumbel"):
        assert sorted(r["threads"] for r in report.results if r["name"] == name) == [1, 2]


def test_results_sorted_by_family(report):
    order = [suite.FAMILIES.index(r["family"]) for r in report.results]
    assert order == sorted(order)


def test_machine_info(report):
    m = report.machine
    assert m["cores"] >= 1 and m["default_threads"] >= 1
    for key in ("cpu", "numpy", "numpy_simd", "simd"):
        assert isinstance(m[key], str) and m[key]
    assert isinstance(m["threads_available"], bool)


def test_text_and_markdown(report):
    text = report.to_text()
    assert "Machine:" in text and "dp.laplace" in text and suite.FLOOR_NAME in text
    md = report.to_markdown().splitlines()
    rows = [line for line in md if line.startswith("| ")]
    assert len(rows) == len(report.results) + 1          # header + one row per case


def test_json_round_trip(report, tmp_path):
    path = tmp_path / "bench.json"
    report.to_json(path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(report.to_dict()))
    data = json.loads(path.read_text())
    assert set(data) >= {"machine", "results", "scaling", "settings"}
    assert len(data["results"]) == len(report.results)


def test_only_filters():
    r = suite.run(quick=True, threads=1, only=["laplace", "keystream"],
                  include_libraries=False)
    assert {x["family"] for x in r.results} == {"laplace", "keystream"}
    with pytest.raises(ValueError, match="unknown benchmark family"):
        suite.run(quick=True, only=["nope"])


def test_case_accepts_tuples_and_keywords():
    c = suite.Case(name="x", family="laplace", impl="library", threads=1, n=10,
                   fn=lambda: None, baseline=suite.BASELINES["laplace"], extrapolated=True)
    assert suite.Case(*tuple(c)) == c
    assert suite.Case(**c._asdict()) == c


def test_library_cases_measured_against_numpy(monkeypatch):
    gen = np.random.default_rng(0)

    class Fake:
        @staticmethod
        def cases(size):
            return [suite.Case(name="fake lib laplace", family="laplace", impl="library",
                               threads=1, n=size // 10, fn=lambda: gen.laplace(size=size // 10),
                               baseline=suite.BASELINES["laplace"], extrapolated=True)]

    monkeypatch.setattr(suite, "libraries", Fake)
    r = suite.run(quick=True, threads=1, only=["laplace"])
    lib = [x for x in r.results if x["impl"] == "library"]
    assert len(lib) == 1 and lib[0]["extrapolated"] and lib[0]["ratio_vs_baseline"] > 0
    assert "fake lib laplace*" in r.to_text()


def test_broken_library_module_is_a_note(monkeypatch):
    class Broken:
        @staticmethod
        def cases(size):
            raise RuntimeError("boom")

    monkeypatch.setattr(suite, "libraries", Broken)
    r = suite.run(quick=True, threads=1, only=["keystream"])
    assert any("boom" in n for n in r.notes)


def test_scaling_fit_quick_sizes():
    rows, fits = suite.scaling(suite.QUICK_SCALING_SIZES, threads=(1, 2), repeat=2)
    assert len(rows) == 2 * 2 * len(suite.QUICK_SCALING_SIZES)
    for r in rows:
        assert r["seconds_per_call"] > 0 and r["ns_per_element"] > 0
    assert {(f["family"], f["threads"]) for f in fits} == {
        (f, t) for f in suite.SCALING_FAMILIES for t in (1, 2)}
    for f in fits:
        assert f["overhead_s"] >= 0 and f["per_element_ns"] >= 0
        assert math.isfinite(f["overhead_s"]) and math.isfinite(f["per_element_ns"])


def test_fit_recovers_a_line():
    n = np.array([1e3, 1e4, 1e5, 1e6])
    overhead, per = core.fit_overhead(n, 2e-5 + n * 3e-9)
    assert overhead == pytest.approx(2e-5, rel=1e-6)
    assert per == pytest.approx(3e-9, rel=1e-6)
    # Noise that would make the unconstrained overhead negative is clipped to 0.
    overhead, per = core.fit_overhead(n, n * 3e-9 * np.array([1.3, 1.0, 1.0, 1.0]))
    assert overhead >= 0 and per > 0


def test_cli_quick(capsys, tmp_path):
    path = tmp_path / "out.json"
    assert main(["bench", "--quick", "--threads", "1", "--no-libraries", "--only",
                 "laplace", "exponential_mechanism", "--scaling", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Machine:" in out and "dp.laplace" in out
    assert "faster than" in out or "slower than" in out
    assert "fixed overhead per call" in out and "cost per element" in out
    data = json.loads(path.read_text())
    assert {r["family"] for r in data["results"]} == {"laplace", "exponential_mechanism"}
    assert data["scaling"] and data["fits"] and data["settings"]["quick"] is True


def test_cli_markdown(capsys):
    assert main(["bench", "--quick", "--threads", "1", "--only", "keystream",
                 "--markdown", "--no-libraries"]) == 0
    assert "| dp.ChaCha20.random_raw | 1 |" in capsys.readouterr().out


def test_cli_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "ratios.png"
    assert main(["bench", "--quick", "--threads", "1", "--only", "laplace", "noisy_max",
                 "--no-libraries", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(png) in capsys.readouterr().out


def test_cli_plot_without_matplotlib(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    png = tmp_path / "ratios.png"
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--quick", "--plot", str(png)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""                    # nothing measured or printed first
    assert "matplotlib" in captured.err and "pip install matplotlib" in captured.err
    assert not png.exists()


def test_cli_rejects_bad_options(capsys, tmp_path):
    for argv in (["bench", "--size", "0"], ["bench", "--only", "nope"],
                 ["bench", "--quick", "--plot", str(tmp_path / "x.jpg")],
                 ["bench", "--quick", "--json", str(tmp_path / "missing" / "x.json")]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert capsys.readouterr().out == ""


def test_time_calls_interleaves_after_one_warm_up():
    calls = []
    times = core.time_calls([lambda: calls.append("a"), lambda: calls.append("b")], 3)
    assert calls == ["a", "b"] * 4                     # warm-up round, then 3 timed rounds
    assert [len(t) for t in times] == [3, 3]
    assert all(t >= 0 for ts in times for t in ts)
    with pytest.raises(ValueError, match="repeat"):
        core.time_calls([lambda: None], 0)


def test_cases_are_interleaved_with_their_baseline_only():
    calls = []

    def case(name, family, impl, baseline):
        return suite.Case(name, family, impl, 1, 10, lambda: calls.append(name), baseline)

    todo = [case("np A", "a", "numpy", None), case("dp A", "a", "dpfast", "np A"),
            case("np B", "b", "numpy", None), case("dp A2", "a", "dpfast", "np A"),
            case("dp B", "b", "dpfast", "np B"), case("floor", "floor", "dpfast", None)]
    times = suite._measure(todo, 2)
    assert [len(t) for t in times] == [2] * len(todo)
    a, b = ["np A", "dp A", "dp A2"], ["np B", "dp B"]
    assert calls == a * 3 + b * 3 + ["floor"] * 3     # warm-up + 2 rounds, group by group


@pytest.mark.parametrize("family, baseline", [("discrete_laplace", "numpy Generator.laplace"),
                                              ("discrete_gaussian", "numpy Generator.normal")])
def test_only_a_family_still_runs_its_baseline(family, baseline):
    report = suite.run(quick=True, threads=1, only=family, include_libraries=False)
    names = [r["name"] for r in report.results]
    assert baseline in names
    assert all(r["ratio_vs_baseline"] > 0 for r in report.results if r["impl"] == "dpfast")


def test_cli_interactive_quick(capsys, tmp_path):
    path = tmp_path / "interactive.json"
    assert main(["bench", "--interactive", "--quick", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "dp.AboveThreshold, arrays of 10^6 queries" in out
    assert "Python loop over numpy Generator.laplace" in out
    assert "M samples/s" in out and "answers per second" in out
    data = json.loads(path.read_text())
    assert {r["case"] for r in data["auditor"]} == {"laplace", "above_threshold",
                                                    "svt_no_halting"}
    assert [r["violated"] for r in data["auditor"]] == [False, False, True]
    assert data["pmw"]["answered"] > 0


def test_cli_audit(capsys):
    assert main(["audit", "laplace", "above_threshold", "--samples", "200000",
                 "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "not contradicted" in out and "M samples/s" in out
    assert main(["audit", "svt_no_threshold_noise", "--samples", "2000000", "--seed", "1"]) == 1
    assert "VIOLATED" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["audit", "svt_fine"])
    assert info.value.code == 2


def test_peer_synthesizer_that_cannot_run_is_reported_not_waited_for():
    # Without smartnoise-synth the child fails at its import: reported at once as failed.
    pytest.importorskip("pandas")
    import importlib.util
    if importlib.util.find_spec("snsynth") is not None:
        pytest.skip("smartnoise-synth is installed: this checks the failure path")
    from dpfast.benchmarks import linear
    seconds, answers, outcome = linear.smartnoise("mwem", {}, 1.0, 2, timeout=60)
    assert answers is None and outcome == "failed" and seconds < 30


def test_budgets_benchmark_runs_small(tmp_path):
    # `dpfast bench --budgets` at tiny sizes: every part runs, checks its own results, and the
    # Markdown shows each figure beside its baseline (timings are not asserted).
    from dpfast.benchmarks import budgets
    report = {"machine": budgets.machine_info(),
              "gaussian_counts": budgets.gaussian_counts(10**4, 2, 1),
              "opendp": budgets.versus_opendp(1000, 30.0, 1),
              "gaussian_mechanism": budgets.gaussian_mechanism(10**4, 0, 500),
              "hierarchy": budgets.hierarchy(10**4, 1),
              "leases": budgets.leases(200, (50,), 5, 1, str(tmp_path))}
    assert [r["case"] for r in report["gaussian_counts"]["rows"]][0].startswith("discrete Lap")
    assert report["gaussian_counts"]["rows"][0]["vs_laplace"] == 1.0
    assert report["hierarchy"]["children_sum"] and report["hierarchy"]["non_negative_integers"]
    assert report["leases"]["reread_agrees"]
    assert list(tmp_path.iterdir()) == []                     # its ledger removed
    # The noise's own sigma against the analytic one: within 1.001 at both points.
    g = report["gaussian_mechanism"]
    assert 1.0 <= g["sigma_over_sigma"] <= 1.001 and 1.0 <= g["scalar_sigma_over_sigma"] <= 1.001
    text = budgets.to_markdown(report)
    assert "vs discrete Laplace" in text and "(baseline)" in text
    assert "computed, not sampled" in text


def test_graphical_tables_print_failed_and_stopped_peers():
    # A peer that failed, or was stopped, has no errors and perhaps no seconds: the tables
    # still print (a formatting error once lost a whole run's figures).
    from dpfast.benchmarks import linear
    ours = {"epsilon": 1.0, "delta": 1e-9, "method": "dp.marginals(method='aim')", "runs": 3,
            "l1_2way": 0.037, "l1_2way_sd": 0.001, "l1_3way": 0.094, "seconds": 2.5,
            "model_cells": 40140}
    failed = {"epsilon": 1.0, "delta": 1e-9, "method": "private-pgm MST", "runs": 0,
              "l1_2way": None, "l1_2way_sd": None, "l1_3way": None, "seconds": None,
              "outcome": "failed", "timeout": 600.0}
    stopped = {**failed, "outcome": "timeout", "seconds": 600.0}
    text = "\n".join(linear.graphical_markdown([ours, failed, stopped]))
    assert "0.0370 +- 0.0010" in text and "| failed | failed |" in text
    assert "did not finish in 600 s" in text
    wide = [{"columns": 14, "domain": 10**14, "epsilon": 1.0, "delta": 1e-9, "method": m,
             "runs": 0, "l1_2way": None, "seconds": s, "outcome": o, "timeout": 600.0}
            for m, s, o in [("a", None, "failed"), ("b", 600.0, "timeout")]]
    text = "\n".join(linear.wide_markdown(wide))
    assert "| a | 0 | failed |  |" in text and "did not finish in 600 s" in text
