"""Where the numbers docs/sweeps.md quotes come from: the run log's entries of the timed sweeps (docs/runs.json),
the digests ``proofs_check.sweep.digest`` wrote from those sweeps' Parquet rows (one JSON per spec under
docs/sweeps/), and the record ``benchmarks.sweep.run`` wrote (docs/sweeps/bench-sweep.json).

Each function returns the values of one passage of ``tests/docs_quotes_sweeps.py``'s ``QUOTES``, by the names its
template gives them (numbers, or ("≤", v), as in ``tests/docs_ties.py``).
"""

from __future__ import annotations

from docs_ties import _record, run

#: the shipped specs whose gallery the doc times, in the doc's order
GALLERY = ("coarse_graining", "visibility", "saturation", "gate_margin", "gate_bounds", "depth_clock")


def _run_id(prefix: str, name: str) -> str:
    return f"{prefix}-{name.replace('_', '-')}"


def _digest(name: str) -> dict:
    return _record(f"docs/sweeps/{name}.json")


def gallery() -> dict:
    """Each figure sweep's wall time; the load range over all six (lowest low, highest high); the largest peak
    resident set of any of them, as the tightest bound."""
    runs = {name: run(_run_id("sweep-figure", name)) for name in GALLERY}
    out = {name: r["wall"] for name, r in runs.items()}
    out.update(lo=min(r["lo"] for r in runs.values()), hi=max(r["hi"] for r in runs.values()),
               rss=("≤", max(r["rss"] for r in runs.values())))
    return out


def phase_diagrams() -> dict:
    """3.2's residuals (the full kernel's largest at each c, as bounds; the causal kernel's range) and 5.1's
    onset / g* from the coarse_graining and gate_margin digests."""
    cg, gm = _digest("coarse_graining"), _digest("gate_margin")
    full, causal = cg["two_sided_max"]["full"], cg["two_sided_range"]["causal"]
    out = {f"f{c}": ("≤", full[c]) for c in ("0", "2", "5", "20")}     # "at most": the tightest bound
    out.update(sd=max(hi for c, (_, hi) in cg["saturation_depth"]["full"].items() if float(c) >= 2),
               c_lo=causal[0], c_hi=causal[1])
    lo, med, hi = gm["onset_over_g_star"]
    out.update(gm_lo=lo, gm_med=med, gm_hi=hi, gm_n=gm["with_onset"], gm_cert=gm["certified"])
    return out


def a_priori() -> dict:
    """The one-worker full-grid runs of depth_clock and gate_bounds (run log) and their digests."""
    dc, gb = _digest("depth_clock"), _digest("gate_bounds")
    assert "fails" not in dc["counts"] and "fails" not in gb["counts"], "the doc says none fails"
    assert dc["shallower"] == 0, "the doc says the clock's ℓ̂* is never shallower"
    r_dc, r_gb = run("sweep-full-depth-clock"), run("sweep-full-gate-bounds")
    out = {"lo": min(r_dc["lo"], r_gb["lo"]), "hi": max(r_dc["hi"], r_gb["hi"]),
           "dc_rows": dc["rows"], "dc_wall": r_dc["wall"], "dc_holds": dc["counts"]["holds"], "dc_rows2": dc["rows"],
           "equal": dc["equal"], "compared": dc["compared"], "by_lo": dc["deeper_by"][0], "by_hi": dc["deeper_by"][1],
           "causal": dc["mean_difference"]["causal"], "full": dc["mean_difference"]["full"],
           "gb_rows": gb["rows"], "gb_wall": r_gb["wall"], "gb_holds": gb["counts"]["holds"], "gb_na": gb["counts"]["n/a"],
           "na_gain": gb["na_ln_gain"]}
    for key in ("onset_over_g_star", "g_plus_over_onset"):
        lo, med, hi = gb[key]
        out.update({f"{key}_lo": lo, f"{key}_med": med, f"{key}_hi": hi})
    return out


def throughput() -> dict:
    """``benchmarks.sweep.run``'s record (docs/sweeps/bench-sweep.json) and its run-log entry (the load while it
    ran); the time inside ``evaluate`` per task is the one-worker sweep's evaluate seconds over its stacks."""
    b = _record("docs/sweeps/bench-sweep.json")
    one, two = b["one_worker"], b["two_workers"]
    r = run("bench-sweep")
    return {"stacks": b["config"]["stacks"], "lo": r["lo"], "hi": r["hi"], "rate1": one["stacks_per_second"],
            "rate2": two["stacks_per_second"], "eff": b["scaling_efficiency"],
            "ovh1": 1e3 * one["overhead_seconds_per_task"], "ovh2": 1e3 * two["overhead_seconds_per_task"],
            "inside": one["evaluate_seconds"] / one["stacks"], "serial": b["serial_seconds_per_stack"],
            "start": b["cluster_start_seconds"], "warm1": one["warm_up_seconds"], "warm2": two["warm_up_seconds"],
            "r1a": one["repeats"][0], "r1b": one["repeats"][1], "r2a": two["repeats"][0], "r2b": two["repeats"][1]}
