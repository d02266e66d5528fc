"""``fastslow bench`` degrades, not dies: a missing optional tool skips what needs it, and the run goes on.

The optional tool is hidden in-process (``sys.modules[name] = None`` makes its import fail as if it were
not installed).  Negative controls: an import failure of a module that is not optional, and any other
exception, are errors of their section (listed in ``machine["section_errors"]``), never a skip.
"""

from __future__ import annotations

import math
import sys

import pytest

from benchmarks import codegen_speed, run as bench


def test_generated_vs_handwritten_runs_without_sympytorch(monkeypatch):
    monkeypatch.setattr(codegen_speed, "BATCH", 8)
    monkeypatch.setattr(codegen_speed, "QUICK_D", 4)
    monkeypatch.setitem(sys.modules, "sympytorch", None)
    result = codegen_speed.run(quick=True, device="cpu")
    assert result["skipped"] == ["skipped: sympytorch not installed"]
    assert result["sympytorch_ratio"] is None and "sympytorch" not in result["reference_seconds"]
    assert math.isfinite(result["lambdify_ratio"]) and math.isfinite(result["ratio"])
    assert result["cannot_express"]["sympytorch_G_layer"] == "skipped: sympytorch not installed"
    table = bench.format_table({"machine": {"cpu": "x", "cores_available": 2, "torch_threads": 2, "device": "cpu",
                                            "torch": "t", "load_average_1min": 0.0},
                                "generated_vs_handwritten": result})
    assert "generated/sympytorch skipped" in table and "skipped: sympytorch not installed" in table


def fake_sections(outcomes):
    def sections(quick, device, note):
        for name, outcome in outcomes.items():
            yield name, outcome
    return sections


def raiser(exc):
    def fn():
        raise exc
    return fn


def test_a_section_missing_an_optional_library_is_skipped_and_the_run_goes_on(monkeypatch, capsys):
    monkeypatch.setattr(bench, "_sections", fake_sections({
        "sweep": raiser(ModuleNotFoundError("No module named 'dask'", name="dask")),
        "reference": raiser(ModuleNotFoundError("No module named 'sympytorch'", name="sympytorch")),
        "after": lambda: {"value": 1.0},
    }))
    results = bench.run_benchmarks(quick=True, device="cpu")
    assert results["sweep"]["skipped"] == "dask not installed"
    assert results["reference"]["skipped"] == "sympytorch not installed"
    assert results["after"]["value"] == 1.0
    assert results["machine"]["section_errors"] == []
    out = capsys.readouterr().out
    assert "sweep: skipped: dask not installed" in out and "reference: skipped: sympytorch not installed" in out


@pytest.mark.parametrize("exc", [ModuleNotFoundError("No module named 'numerics.nope'", name="numerics.nope"),
                                 ModuleNotFoundError("No module named 'torch'", name="torch"),
                                 RuntimeError("a real failure")])
def test_other_failures_are_errors_not_skips(monkeypatch, exc):
    """Negative control: only an optional library's absence is a skip."""
    monkeypatch.setattr(bench, "_sections", fake_sections({"broken": raiser(exc), "after": lambda: {}}))
    results = bench.run_benchmarks(quick=True, device="cpu")
    assert "skipped" not in results["broken"] and results["broken"]["error"].startswith(type(exc).__name__)
    assert results["machine"]["section_errors"] == ["broken"] and "after" in results


def test_headline_ratios_are_read_from_the_same_run():
    results = {"machine": {"device": "cpu"},
               "factorised_vs_dense_jacobian": {"curve": [{"T": 2, "speedup": 3.0}, {"T": 4, "speedup": 5.0},
                                                          {"T": 8, "speedup": None}]},
               "scale": {"jv_vs_jvp": {"rows": [{"T": 32, "jvp_extrapolated": False, "ratio_jvp_over_factorised": 2.0},
                                                {"T": 4096, "jvp_extrapolated": True,
                                                 "ratio_jvp_over_factorised": 9.0}]}}}
    r = bench.ratios(results)
    assert (r["jacrev_over_factorised"], r["jacrev_over_factorised_T"]) == (5.0, 4)
    assert (r["jvp_over_factorised_jv"], r["jvp_over_factorised_jv_T"]) == (2.0, 32)
    assert bench.ratios({"machine": {"device": "cpu"}})["jvp_over_factorised_jv"] is None
