"""The report's sections on the runs beside the claims: claims on trained weights (the matrix's ``trained``
column, ``proofs_check.runners.trained_findings``), the reach of the reference claims at real inputs
(``proofs_check.runners.reach``) and the depth smoothness of trained weights
(``proofs_check.experiments.depth_smoothness``).  Each takes the ledger's entry for its run (None when the
run is absent) and returns markdown lines; the runs themselves know nothing of the report.
"""

from __future__ import annotations

from proofs_check.report.document import figure_md
from proofs_check.tables import markdown_table, md_escape


def trained_section(entry: dict | None) -> list[str]:
    """The report's section: the trained stack, the finding, each conditional / failing / n/a claim with
    its condition or reason, and the trained-vs-random figures."""
    from proofs_check.report.figures import load_figures
    from proofs_check.runners.trained_findings import FIGURES

    lines = ["", "## Claims on trained weights", ""]
    if entry is None:
        return lines + ["The matrix ran without its `trained` column."]
    s = entry["stack"] or {}
    if s:
        lines += [f"Stack: the matrix's `trained` column, checkpoint `{s['checkpoint']}` ({s['step']} steps, "
                  f"validation loss {s['validation_loss']:.3f} nats/byte against the unigram entropy "
                  f"{entry['unigram_entropy']:.3f}; corpus sha256 {s['corpus_sha256'][:12]}…).", ""]
    lines += [f"**Finding.** {md_escape(entry['statement'])}", ""]
    for label, group in (("holds only if", entry["conditional"]), ("fails", entry["fail"]),
                         ("n/a", entry["not_applicable"])):
        lines += [f"- {cid} {label}: {md_escape(str(why or '—'))}" for cid, why in sorted(group.items())]
    titles = {n: f.title for n, f in load_figures().items()}
    lines.append("")
    for name in FIGURES:
        lines += figure_md(name, titles.get(name))
    return lines


def reach_section(entry: dict | None) -> list[str]:
    """The report's section: the statement, one table row per stack and check, the figure."""
    lines = ["", "## Reach of the reference claims at real inputs", ""]
    if entry is None:
        return lines + ["Not measured in this run."]
    lines += [md_escape(entry["statement"]), ""]
    lines += markdown_table(("stack", "quantity", "fitted slope", "predicted", "coefficient (measured / predicted)", "ok"),
                            [(s["stack"], c["quantity"], f"{c['fitted_slope']:.4f}",
                              f"{c['order']} ± {c['slope_tolerance']:.1e}",
                              f"{c['coefficient']:.4g} / {c['predicted_coefficient']:.4g}", "yes" if c["ok"] else "NO")
                             for s in entry["stacks"] for c in s["checks"] + s["weights_at_reference"]["checks"]])
    lines += ["", md_escape("3.1 with the LayerNorm-null direction 1_d quotiented out (span(1) is invariant): " + "; ".join(
        f"{s['stack']}: ρ = {q['rho']:.3f}, ρ̄ = {q['rho_bar']:.3f} (every layer ≥ {q['per_layer_rho_bar_min']:.3f})"
        for s in entry["stacks"] for q in [s["saturation_quotient"]]) + ". The quotient stays ≥ 1 because LN₁ also "
        "kills the radial direction x̄_ℓ − mean(x̄_ℓ) up to its ε (measured ≤ predicted: " + ", ".join(
        f"{s['saturation_quotient']['radial_error']:.1e} ≤ {s['saturation_quotient']['radial_bound']:.1e}"
        for s in entry["stacks"]) + "), and that direction changes with the layer.")]
    cg = entry.get("coarse_graining")
    if cg:
        at_text = {k: next(r["residual"] for r in row["curve"] if r["s"] == cg["text_spread"])
                   for k, row in cg["kernels"].items()}
        lines += ["", md_escape(
            f"3.2(a) off the reference (random stack, blocks of P = {cg['P']}, text direction): the identity "
            "ΠJ(I − Q) = 0 departs at order 1 (" + ", ".join(
                f"{k}: slope {row['check']['fitted_slope']:.4f}, c₁ {row['check']['coefficient']:.3g} / predicted "
                f"{row['check']['predicted_coefficient']:.3g}" for k, row in cg["kernels"].items() if "check" in row)
            + f"); at the text spread s = {cg['text_spread']:.2f} the relative residual is " + ", ".join(
                f"{100 * v:.0f} % ({k})" for k, v in at_text.items()) + "; control: the causal kernel misses at s = 0 "
            f"by {cg['kernels']['causal']['control']['measured_at_reference']:.3g} (factorised prediction "
            f"{cg['kernels']['causal']['control']['predicted_at_reference']:.3g}).")]
    lv = entry.get("loss_visibility")
    if lv:
        text = next(r for r in lv["curve"] if r["s"] == lv["text_spread"])
        lines += ["", md_escape(
            f"4.2 in the per-token loss (random hierarchical causal stack, blocks of P = {lv['P']}): the gate "
            f"derivatives ∂ℓ_t/∂g predicted at 1x̄ᵀ depart at order 1 (slope {lv['check']['fitted_slope']:.4f}, c₁ "
            f"{lv['check']['coefficient']:.3g} / predicted {lv['check']['predicted_coefficient']:.3g}); at the text "
            f"spread s = {lv['text_spread']:.2f} the prediction is off by {100 * text['prediction_error']:.0f} %. "
            + ("Block 0's loss stays exactly blind to the gate at every spread measured"
               if lv["block0_exact"] else "Block 0's loss sees the gate off the reference")
            + f"; every later token sees it (smallest {text['later_min']:.3g} at the text spread).")]
    lines += ["", "Control (factorised form at a reference moved by 10 %): " + "; ".join(
        f"{s['stack']}: floor {s['control']['predicted_floor']:.3g} predicted, slope {s['control']['fitted_slope']:.2f}, "
        f"{s['control']['status']}" for s in entry["stacks"]), ""]
    return lines + figure_md("reach_factorised", "Reach of 2.1/2.3 and 2.4 off the reference")


def depth_smoothness_section(entry: dict | None) -> list[str]:
    """The report's paragraph and figure (nothing when no run is recorded)."""
    if entry is None:
        return []
    return (["", "## Depth smoothness of trained weights (Claim 1.1's premise)", "", md_escape(entry["statement"]), ""]
            + figure_md("depth_roughness", "Layer-to-layer change of trained weights against depth"))
