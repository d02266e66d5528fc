"""Where the numbers of ``docs_quotes_theory_trained``'s passages come from: the ledger, the records
``fastslow check --stack DIR --claim 6.4 --json`` wrote for the trained stacks (docs/trained/*-6.4.json), the run
log (docs/runs.json), the claims' own stack settings, and quantities recomputed here.

Each function returns the values of one passage by the names its template gives them, in the form
``tests/test_docs_numbers.py``'s ``agrees`` compares: a number, or ("≤", v) for a bound quoted as the tightest at
its precision.
"""

from __future__ import annotations

import json
import statistics

import docs_ties as D


# ------------------------------------------------------------------------------------------ docs/theory.md
def eigen_coordinates_2_3() -> dict:
    """Claim 2.3's control in the ledger: the relative off-block error of the factorisation in the float64
    eigensolver's basis of the causal kernel at T = 16, 24, 32, each within the control's band of its first-order
    rounding prediction (the doc says first-order rounding predicts each)."""
    rows = {r["T"]: r for r in D._claim("2.3")["numeric"]["table"] if "eigen_error" in r}
    for r in rows.values():
        assert 0.5 < r["eigen_error"] / r["predicted_error"] < 2.0, r     # the control's ratio band
    return {f"e{T}": rows[T]["eigen_error"] for T in (16, 24, 32)}


def value_scale_3_2() -> dict:
    """3.2 (b)'s stacks as the claim draws them (its registered specs): the value scale c of the 12-layer
    stacks, W_VO ≈ c·I."""
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts.registry import get, load_checks

    load_checks()
    deep = [s for s in get("3.2").specs("preln", CheckContext()) if s.layers == 12]
    (c,) = {s.knob("value_scale") for s in deep}
    return {"c": c}


def _verdict_6_4(path: str) -> tuple[dict, dict]:
    rec = D._record(path)
    (claim,) = rec["claims"]
    assert claim["id"] == "6.4" and claim["status"] == "conditional", claim["status"]
    return rec["stack"], claim["verdict"]["measured"]["reach"]


def clock_on_trained_6_4() -> dict:
    """6.4 on two trained stacks, from the records ``fastslow check --stack DIR --claim 6.4 --json`` wrote.

    The grid's stack (docs/trained/small-6.4.json, checked to be ``SMALL``'s training): the clock's largest
    log-miss of r at the reference and of the text trajectories' distance from {1yᵀ}.  The byte GPT-2 imported
    at its full context (docs/trained/gpt2-bytes-6.4.json, checked to be docs/trained/gpt2-bytes's config):
    r_L and the clock's r̂_L over every decaying mode; the distance ratio s_ℓ/s_0 averaged over the validation
    windows, its range over the layers, and the clock's prediction at the last layer averaged likewise."""
    from proofs_check.experiments.train import SMALL

    small, rs = _verdict_6_4("docs/trained/small-6.4.json")
    assert {k: small["config"][k] for k in SMALL.as_dict()} == SMALL.as_dict() and small["trained"], small["config"]
    gpt, rg = _verdict_6_4("docs/trained/gpt2-bytes-6.4.json")
    hf = json.loads((D.ROOT / "docs/trained/gpt2-bytes/config.json").read_text())
    assert all(gpt["config"][k] == hf[k] for k in ("n_embd", "n_layer", "n_head", "n_positions")) and gpt["imported"]
    modes = rg["modes"]
    assert len(modes["evaluated"]) == modes["decaying_modes"], modes    # every decaying mode, not a subset
    real = rg["real_inputs"]
    by_layer = [statistics.fmean(col) for col in zip(*real["measured"])]
    return {"sT": small["spec"]["T"], "sd": small["spec"]["d"], "sL": small["spec"]["layers"],
            "miss": rs["max_log_error"], "real": ("≤", rs["real_inputs"]["max_log_error"]),
            "gd": gpt["spec"]["d"], "gL": gpt["spec"]["layers"], "gT": gpt["spec"]["T"],
            "r_lo": min(rg["r_last"]), "r_hi": max(rg["r_last"]), "modes": modes["decaying_modes"],
            "k_lo": min(rg["rhat_last"]), "k_hi": max(rg["rhat_last"]), "windows": len(real["measured"]),
            "s_lo": min(by_layer), "s_hi": max(by_layer), "layers": len(by_layer),
            "s_clock": statistics.fmean(p[-1] for p in real["predicted"])}


# ----------------------------------------------------------------------------------------- docs/trained.md
def mass_floor_factor() -> dict:
    """The factor k of 2.2's refusal "a mass floor above k eps cond(S)", measured on the check's own grid builder
    (``conditions.violation_deltas``) by bisection: the off-block mass at δ = 0 is set to k·eps·cond(S) (float64's
    machine epsilon, taken from numpy here) and the builder either refuses the unbroken stack or builds a grid."""
    from unittest import mock

    import numpy as np

    from proofs_check.claims.factorisation import conditions as C

    eps, cond = float(np.finfo(np.float64).eps), 1e3

    def refused(k: float) -> bool:
        with mock.patch.object(C, "violated", return_value=()), \
                mock.patch.object(C, "_off_block_mass", return_value=(k * eps * cond, cond)), \
                mock.patch.object(C, "control_masses", return_value=[C.LINEAR_MASS / 2]):
            return not C.violation_deltas("inhomogeneous", None, 3)[2]

    lo, hi = 1.0, 1e4
    assert not refused(lo) and refused(hi)
    while hi / lo > 1 + 1e-9:
        mid = (lo * hi) ** 0.5
        lo, hi = (lo, mid) if refused(mid) else (mid, hi)
    return {"k": hi}


def visibility_gap() -> dict:
    """The visibility figure's gap σ₈/max(σ₉, σ₁·eps) for the trained stack and its initialisation, from the
    visible spectrum ``docs_quotes_trained.visibility_spectrum`` remeasures (d rows by jacrev, so σ₉ = 0 on
    that route and the gap is σ₈/(σ₁·eps), eps float64's machine epsilon from numpy)."""
    import numpy as np

    import docs_quotes_trained

    v = docs_quotes_trained.visibility_spectrum()
    eps = float(np.finfo(np.float64).eps)
    return {"trained": v["trained_min"] / v["trained_max"] / eps, "random": v["random_min"] / v["random_max"] / eps}


def _entry(run_id: str, prefix: str, *flags: str) -> dict:
    """``docs_ties.run`` of one run-log entry, after checking that the entry ran the command the doc describes
    (each of ``flags`` is in its command line)."""
    from proofs_check.runlog import load

    command = load()[run_id].command
    assert all(f in command for f in flags), (run_id, command, flags)
    return D.run(run_id, prefix)


def small_train() -> dict:
    """The grid's stack trained from an empty folder (run log ``grid-small-train``)."""
    return _entry("grid-small-train", "", "OMP_NUM_THREADS=1", "default_checkpoint")


def trained_timings() -> dict:
    """docs/trained.md's measured runs: the CI smoke run's sizes, Claim 7.3's check from an empty cache (quick
    and full), the default checkpoint (run log entries)."""
    out = _entry("ci-smoke-train", "smoke_", "--d 32 --layers 2", "--T 64", "--tokens 80000", "OMP_NUM_THREADS=1")
    out.update(_entry("claim-73-check-quick", "q_", "FASTSLOW_CACHE", "--claim 7.3"))
    out.update(_entry("claim-73-check-full", "f_", "FASTSLOW_CACHE", "--claim 7.3 --full"))
    out.update(_entry("train-default-checkpoint", "t_", "OMP_NUM_THREADS=1", "fastslow train --out"))
    out["t_share"] = 100 * out["t_cpu"] / out["t_wall"]
    return out


def runs_7_3() -> dict:
    """Claim 7.3's runs on text: the powered rerun and the pilot's rerun (transcribed run-log entries); the nice
    level the powered rerun ran at, read from its command."""
    from proofs_check.runlog import load

    (nice,) = D._parse(load()["text-7-3-powered-rerun"].command, r"nice -n ([0-9]+)")
    return {**_entry("text-7-3-powered-rerun", "p_", "--experiment 7.3", "--seeds 3 4 5 6 7"), "nice": nice,
            **_entry("text-73-pilot-rerun", "r_", "--experiment 7.3", "--workers 2")}


def train_peak() -> dict:
    """docs/reliability.md: the peak RSS of `train` at its largest batch example (run log ``train-batch-20000``),
    in GB."""
    out = _entry("train-batch-20000", "", "--batch 20000 --T 16 --d 32 --layers 2")
    return {"gb": out["rss"] * 2**30 / 1e9}


def default_checkpoint() -> dict:
    """The default checkpoint's record (docs/trained/default-checkpoint-1.1.json, ``check --stack --claim 1.1`` on
    the folder ``fastslow train`` wrote with its defaults, checked here against ``TextConfig()``): its steps, final
    validation loss and Claim 1.1's per-layer change of the four weight groups; the validation text's unigram
    entropy counted here from its bytes."""
    import docs_quotes_trained
    from proofs_check.experiments.train import TextConfig

    rec = D._record("docs/trained/default-checkpoint-1.1.json")
    stack = rec["stack"]
    assert {k: stack["config"][k] for k in TextConfig().as_dict()} == TextConfig().as_dict() and stack["trained"]
    (claim,) = rec["claims"]
    rough = claim["verdict"]["measured"]["roughness"]
    return {"steps": stack["step"], "loss": stack["final_validation_loss"], "entropy": docs_quotes_trained._entropy(),
            "r_lo": min(rough.values()), "r_hi": max(rough.values())}
