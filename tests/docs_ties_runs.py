"""Where the run provenance docs/real_models.md and docs/reach.md quote comes from: entries of the run log
(docs/runs.json, timed reruns or transcribed runs), and the few measurements beside them that a committed record
holds or that are recomputed here.

Each function returns the values of one passage of ``tests/docs_quotes_runs.py``'s ``QUOTES``, by the names its
template gives them (numbers, as in ``tests/docs_ties.py``).  A transcribed entry holds the numbers the doc stated
when the run happened; where that doc gave only the total CPU time (``/usr/bin/time``'s user + system, not split),
the entry holds it as ``cpu_total_s`` and ``run`` reads it as ``cpu``.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import re
import tempfile
from pathlib import Path

from docs_ties import ROOT, _record, run

GB, GIB = 1e9, 2.0 ** 30
FLOAT64_BYTES = 8


def _entry(run_id: str):
    from proofs_check.runlog import load

    return load()[run_id]


def _date(run_id: str, prefix: str = "") -> dict:
    """The UTC start date of a run log entry (year, month, day)."""
    s = _entry(run_id).start
    return {prefix + "year": s.year, prefix + "month": s.month, prefix + "day": s.day}


def _end(run_id: str, prefix: str = "") -> dict:
    """The UTC end of a run log entry (start + wall), rounded to the minute."""
    r = _entry(run_id)
    end = r.start + dt.timedelta(seconds=r.wall_s)
    end = (end + dt.timedelta(seconds=30)).replace(second=0, microsecond=0)
    return {prefix + "end_hour": end.hour, prefix + "end_minute": end.minute}


def _small_checkpoint_gb() -> float:
    """The imported GPT-2-small checkpoint's size in GB: its parameter count (recomputed from the along-text
    record's config) in float64."""
    import docs_ties_real_models as R

    c = _record("docs/scale/hf-gpt2-small-along-text.json")["stack"]["config"]
    return R.gpt2_small_parameters(c["vocab_size"], c["n_positions"], c["n_embd"], c["n_layer"]) * FLOAT64_BYTES / GB


def bytes_along_text_run() -> dict:
    """The byte GPT-2's `check --stack` along held-out text at T = 64, rerun and timed (run log
    ``gpt2-bytes-along-text``)."""
    return {**run("gpt2-bytes-along-text"), **_date("gpt2-bytes-along-text")}


def small_along_text_run() -> dict:
    """GPT-2-small's `check --stack` along held-out text and the `import-hf` before it (transcribed entries), the
    check's end from its start and wall time."""
    return {**run("hf-gpt2-small-along-text"), **_end("hf-gpt2-small-along-text"),
            **run("hf-gpt2-small-import-along-text", "i_")}


def bytes_dense_rho() -> dict:
    """3.1's ρ̃ at 1x̄ᵀ on the byte GPT-2 imported at T = 4 (the dense column), recomputed here: the import
    (``import_hf``, without its transformers comparison) and 3.1's along-text check, which builds the bound's
    persistent-path ratio at the text's token mean (a few seconds)."""
    from numerics.stacks.spec import StackSpec
    from numerics.storage import checkpoint as ckpt
    from proofs_check.claims.along_text import saturation
    from proofs_check.runners.import_hf import import_hf

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bytes-T4"
        import_hf(ROOT / "docs/trained/gpt2-bytes", out, T=4, verify=False)
        spec = StackSpec.from_dict({**ckpt.read_manifest(out)["spec"], "dtype": "float64", "checkpoint": str(out)})
        verdict = saturation(spec)
    return {"rho": verdict.predicted["rho_tilde"]}


def smoothness_run() -> dict:
    """benchmarks/hf_gpt2_smoothness.py on the byte GPT-2, rerun and timed (run log
    ``gpt2-bytes-depth-smoothness``)."""
    return {**run("gpt2-bytes-depth-smoothness"), **_date("gpt2-bytes-depth-smoothness")}


def small_table() -> dict:
    """The GPT-2-small table's first four rows (transcribed entries), the float64 checkpoint's size, the import's
    agreement with transformers as remeasured by ``benchmarks.hf_gpt2_small`` (docs/bench/hf-gpt2-small-import.json),
    and the idle import and check the prose after the table repeats."""
    out = {**run("hf-gpt2-small-import-idle", "ii_"), **run("hf-gpt2-small-check-idle", "ci_"),
           **run("hf-gpt2-small-import-loaded", "il_"), **run("hf-gpt2-small-check-loaded", "cl_")}
    out["cl_minutes"] = _entry("hf-gpt2-small-check-loaded").wall_s / 60
    out["gb"] = _small_checkpoint_gb()
    out["agree"] = _record("docs/bench/hf-gpt2-small-import.json")["hf_agreement"]["max_relative_error"]
    out.update({"import_s": out["ii_wall"], "check_min": out["ci_wall_min"], "check_sec": out["ci_wall_sec"]})
    return out


def claim_6_4_run() -> dict:
    """Claim 6.4 alone at GPT-2-small size (transcribed entry ``hf-gpt2-small-claim-6-4``), the checkpoint it
    loads, and the benchmark's wall budget in minutes (its pre-registered default)."""
    import inspect

    from benchmarks.hf_gpt2_small import run as bench

    budget = inspect.signature(bench).parameters["budget_seconds"].default / 60
    return {**run("hf-gpt2-small-claim-6-4"), "gb": _small_checkpoint_gb(), "budget": budget}


def tiny_run() -> dict:
    """The tiny GPT-2 benchmark as tests/test_hf_gpt2_small.py runs it (claims 1.2 and 6.4), timed (run log
    ``hf-gpt2-tiny``)."""
    return {**run("hf-gpt2-tiny"), **_date("hf-gpt2-tiny")}


def reach_small_run() -> dict:
    """The ledger's reach entry, rerun with a fresh cache and timed (run log ``reach-small``)."""
    return {**run("reach-small"), **_date("reach-small")}


def reach_small_digits() -> dict:
    """The digits to which the trained toy stack's measured coefficients equal their predictions at 1x̄ᵀ
    (docs/reach/reach-small.json): k = ⌊−log₁₀ max |c − ĉ|/|ĉ|⌋ over its checks and its weight checks at the
    reference; and the claim the weight checks belong to, read off their quantity labels ("4.1 …")."""
    trained = next(s for s in _record("docs/reach/reach-small.json")["stacks"] if s["stack"] == "trained")
    checks = trained["checks"] + trained["weights_at_reference"]["checks"]
    worst = max(abs(c["coefficient"] - c["predicted_coefficient"]) / abs(c["predicted_coefficient"]) for c in checks)
    (claim,) = {c["quantity"].split()[0] for c in trained["weights_at_reference"]["checks"]}
    return {"digits": math.floor(-math.log10(worst)), "claim": float(claim)}


def reach_ci_spreads() -> dict:
    """The spreads at which docs/reach.md quotes the ci preset's error are points of docs/reach/reach-ci.json's
    sweep: each quoted s is held to the record's nearest sweep point (a spread the record does not hold fails)."""
    doc = (ROOT / "docs/reach.md").read_text()
    (quoted,) = re.findall(r"% at s = ([0-9.]+) and [0-9.]+ % at s = ([0-9.]+) \(recorded with the", doc)
    sweep = [c["s"] for c in _record("docs/reach/reach-ci.json")["curve"]]
    near = [min(sweep, key=lambda s: abs(s - float(q))) for q in quoted]
    return {"s_a": near[0], "s_b": near[1]}


def reach_gpt2_small_cost() -> dict:
    """The GPT-2-small reach run (transcribed ``reach-gpt2-small``): wall in minutes, CPU, the share of one core
    (CPU seconds over wall seconds), peak RSS in GB; the single jvp and forward pass timed beside it."""
    r = _entry("reach-gpt2-small")
    return {**run("reach-gpt2-small"), "minutes": r.wall_s / 60, "share": 100 * r.cpu_s / r.wall_s,
            "gb": r.peak_rss_gib * GIB / GB, **run("reach-gpt2-small-jvp", "j_"),
            **run("reach-gpt2-small-forward", "f_")}


def weight_control_spread() -> dict:
    """The spread at which tests/test_ledger_power.py measures 4.1's weight check off the reference: the spread
    argument of its ``at_spread`` call, read from the test's source."""
    tree = ast.parse((ROOT / "tests/test_ledger_power.py").read_text())
    (test,) = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and f.name == "test_4_1_refuses_a_weight_check_measured_off_the_reference"]
    (call,) = [c for c in ast.walk(test) if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "at_spread"]
    return {"spread": ast.literal_eval(call.args[2])}
