"""Passages of docs/reach.md tied to the records that produced their numbers (``tests/test_docs_numbers.py``'s
``QUOTES``, same shape: doc, passage name, the function that regenerates the values, the pattern)."""

from __future__ import annotations

import math
import statistics

import docs_ties as D
from docs_ties import passage

REACH = "docs/reach.md"


def _small() -> dict:
    """docs/reach/reach-small.json's stacks by name."""
    return {s["stack"]: s for s in D._record("docs/reach/reach-small.json")["stacks"]}


def first_order_law() -> dict:
    """The window's first-order budget (the runner's constant) and the predicted orders the toy record's checks
    were made against: 2.4's Q/K share of ∂output, 4.1's invisible weight direction at 1x̄ᵀ."""
    from proofs_check.runners.reach import FIRST_ORDER_BUDGET

    trained = _small()["trained"]
    (qk,) = [c for c in trained["checks"] if c["quantity"] == "2.4 Q/K share of ∂output"]
    (inv,) = [c for c in trained["weights_at_reference"]["checks"] if c["quantity"].startswith("4.1 invisible")]
    return {"budget": FIRST_ORDER_BUDGET, "qk_order": qk["order"], "inv_order": inv["order"]}


def toy_measurement() -> dict:
    """reach-small.json: the trained stack's provenance, its windows (one text spread each), the runner's probes;
    the last layer's and the whole stack's errors; 3.2(a)'s causal control at s = 0."""
    from proofs_check.runners.reach import PROBES

    rec = D._record("docs/reach/reach-small.json")
    trained = _small()["trained"]
    causal = rec["coarse_graining"]["kernels"]["causal"]["control"]
    return {"loss": trained["provenance"]["validation_loss"], "windows": len(trained["text_spreads"]), "probes": PROBES,
            "last": 100 * trained["layers"][-2]["tail_error_mean"],
            "first": 100 * trained["text_error_mean"], "miss": causal["measured_at_reference"],
            "pred": causal["predicted_at_reference"]}


def ci_window() -> dict:
    """docs/reach/reach-ci.json's fixed window."""
    w = D._record("docs/reach/reach-ci.json")["window"]
    return {"w_lo": min(w), "w_hi": max(w)}


def gpt2_small_reach() -> dict:
    """docs/reach/gpt2-small.json: κ̄t at the window's top (t = s·(t/s)/√(1 − s²), the record's t/s), its sweep
    point below the text spread, the error at the text spread, t there, the prediction's and the points' wall
    times, the score tensor's size (heads × T × T of its spec); and the text spread and error of the imported
    byte GPT-2 (docs/trained/gpt2-bytes-reach.json)."""
    g = D._record("docs/reach/gpt2-small.json")
    b = D._record("docs/trained/gpt2-bytes-reach.json")
    e = g["expansion"]

    def t(s):
        return e["t_per_s"] * s / math.sqrt(1 - s * s)

    sweep = sorted(c["s"] for c in g["curve"] if c["s"] not in g["window"])
    at = {c["s"]: c for c in g["curve"]}
    byte_text = next(c for c in b["curve"] if c["s"] == b["text_spread"])
    ph = g["phase_seconds"]
    return {"budget": e["kappa_bar"] * t(max(g["window"])), "s01": sweep[0], "spread": b["text_spread"],
            "within": 100 * at[g["text_spread"]]["error"], "s_over": b["text_spread"], "t": t(g["text_spread"]) / 1e3,
            "bytes_err": 100 * byte_text["factorised_error"], "pred_min": ph["prediction"] / 60,
            "per_point": (ph["window"] + ph["sweep"]) / len(g["curve"]), "heads": g["spec"]["heads"],
            "T1": g["spec"]["T"], "T2": g["spec"]["T"]}


def quotient_c20() -> dict:
    """ρ and ρ̄ of Claim 3.1's c = 20 causal d = 16 stack (seed 0), the saturation quotient rerun here; ρ is also
    the ledger's stated ρ of that row (the same stack)."""
    from numerics.families.saturation_quotient import quotient_saturation
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar

    spec = StackSpec(T=6, d=16, layers=16, heads=2, kernel="causal", seed=0, knobs={"value_scale": 20.0})
    stack = spec.build()
    q = quotient_saturation(stack, random_xbar(spec.d, spec.seed).to(dtype=next(stack.parameters()).dtype))
    (row,) = D._rows("3.1", kernel="causal", d=16, c=20.0, seed=0)
    assert abs(q.rho - row["stated ρ"]) < 1e-4, (q.rho, row["stated ρ"])   # the ledger rounds ρ to 4 decimals
    return {"rho": q.rho, "rho_bar": q.rho_bar}


def weight_control() -> dict:
    """4.1's off-reference control: the spread's first-order budget (the check's constant) and the tolerance of
    each stack's relative error, recovered from the ledger's error and error/tolerance (their mean)."""
    from proofs_check.claims.visibility import CONTROL_BUDGET

    moved = [r for r in D._claim("4.1")["numeric"]["table"] if "rel. err / tol" in r]
    tol = [abs(r["off 1x̄ᵀ: Δ(J·v) at s_c"] / r["c₁s_c (predicted)"] - 1) / r["rel. err / tol"] for r in moved]
    return {"budget": CONTROL_BUDGET, "tol": statistics.fmean(tol)}


def along_text_settings() -> dict:
    """`check --stack` along text: the corpus's vocabulary, the commutator pairs and 3.1's work limit (the
    check's constants), and what the byte GPT-2's record measured with (τ, P, the finite-difference step)."""
    from numerics.text.corpus import VOCAB
    from proofs_check.claims.along_text import BOUND_WORK, COMMUTATOR_PAIRS

    m = {c["id"]: c["verdict"]["measured"] for c in D._record("docs/trained/gpt2-bytes-along-text.json")["claims"]}
    return {"vocab": VOCAB, "pairs": COMMUTATOR_PAIRS, "tau": m["3.1"]["tau"], "work": BOUND_WORK, "P": m["3.2"]["P"],
            "eps": m["4.1"]["fd_step"]}


QUOTES: list = [
    (REACH, "the first-order law", first_order_law,
     passage("window of two decades whose top keeps κ̄t ≤ {budget} and compares") + r"[\s\S]*?"
     + passage("| 2.4: Q/K share of ∂X_L | 0 | **{qk_order}** |") + r"[\s\S]*?"
     + passage("| — | {inv_order} / 1 |")),
    (REACH, "the toy stacks' provenance and errors", toy_measurement,
     passage("(196 steps, validation {loss} nats/byte), and its random initialisation with its initial embedding; "
             "{windows} validation windows, {probes} Gaussian probes.")
     + r"[\s\S]*?" + passage("better ({last} % error for the last layer) than the first ({first} % for the whole stack)")
     + r"[\s\S]*?" + passage("the causal kernel misses at s = 0 by {miss}, its factorised prediction")),
    (REACH, "the ci preset's window", ci_window, passage("the earlier fixed window {w_lo}…{w_hi} and")),
    (REACH, "GPT-2 small's window, text spread and cost", gpt2_small_reach,
     passage("window whose top keeps κ̄t = {budget}: s =") + r"[\s\S]*?"
     + passage("| e({s01}) |") + r"[\s\S]*?"
     + passage("{spread} is the spread of the shipped text under the imported GPT-2's embedding") + r"[\s\S]*?"
     + passage("predicts J·V to within {within} % at the spread text produces") + r"[\s\S]*?"
     + passage("overshoots at s = {s_over}, where t = {t}·10³") + r"[\s\S]*?"
     + passage("the same error is {bytes_err} % (docs/real_models.md)") + r"[\s\S]*?"
     + passage("of which {pred_min} min for the triple-nested prediction and ≈ {per_point} s wall per jvp")
     + r"[\s\S]*?" + passage("bias over the {heads} × {T1} × {T2} scores)")),
    (REACH, "the quotient at c = 20", quotient_c20, passage("c = 20 causal: {rho}, {rho_bar}):")),
    (REACH, "4.1's weight control", weight_control,
     passage("where κ̄t = {budget}, changes J·v") + r"[\s\S]*?" + passage("(tolerance ≈ {tol}) — the control")),
    (REACH, "check --stack along text", along_text_settings,
     passage("a byte-level vocabulary of {vocab},") + r"[\s\S]*?"
     + passage("relative commutators ({pairs} seeded pairs") + r"[\s\S]*?"
     + passage("over q₀, and its ℓ*({tau})") + r"[\s\S]*?" + passage("(built up to T·L·d³ = {work})") + r"[\s\S]*?"
     + passage("(blocks of P, {P} without a slow path)") + r"[\s\S]*?"
     + passage("central finite differences (ε = {eps})")),
]
