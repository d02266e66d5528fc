"""Numbers quoted in docs/ are regenerated here and compared with the quote.

Each entry of ``QUOTES`` ties one passage of a doc (a regular expression that must match exactly once, one
group per quoted number) to the computation or record that produced it.  A quoted number written with k decimals
must equal the regenerated value rounded to k decimals (|quoted − value| ≤ ½·10⁻ᵏ, plus 1e-12 for the decimal
representation); a bound "≤ x" must hold and be the value rounded up to x's last digit (the tightest bound at that
precision); a number in scientific notation is compared at its mantissa's precision; a rounding-level number
("≲") must bound the value within a decade.  A changed computation (a depth off by one moves 6.4's causal exponent
from −0.484 to −0.379) or an edited number fails here, naming the doc, the passage and both numbers.  Where each
value comes from is in ``tests/docs_ties.py``; which numbers of the docs are tied, generated, definitional or still
untied is ``tests/docs_inventory.py``'s, checked by ``test_every_quoted_number_is_generated_tied_or_listed``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import docs_quotes_house
import docs_quotes_mutants
import docs_quotes_performance
import docs_quotes_power
import docs_quotes_reach
import docs_quotes_real_models
import docs_quotes_runs
import docs_quotes_sweeps
import docs_quotes_theory_trained
import docs_quotes_trained
import docs_ties as D
from docs_ties import passage

ROOT = Path(__file__).resolve().parents[1]


def _reach_6_4() -> dict:
    """6.4's reference values: the drawn stacks of its ledger check (seed 0, c = 20, T = 6, d = 8, 16 layers)."""
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar
    from proofs_check.claims.depth_slow_manifold import reach, synthetic_inputs

    out = {}
    for kernel in ("causal", "full"):
        spec = StackSpec(T=6, d=8, layers=16, heads=2, kernel=kernel, seed=0, knobs={"value_scale": 20.0})
        xbar = random_xbar(8, 0)
        out[kernel] = reach(spec.build(), xbar, synthetic_inputs(6, 0, xbar))
    c, f = out["causal"], out["full"]
    return {"exp_causal": c["exponent"], "pred_causal": c["predicted_exponent"], "exp_full": f["exponent"],
            "pred_full": f["predicted_exponent"], "miss_causal": ("≤", c["max_log_error"]),
            "miss_full": ("≤", f["max_log_error"]), "depth": c["saturation_depth"], "clock_depth": c["clock_saturation_depth"],
            "real": ("≤", max(c["real_inputs"]["max_log_error"], f["real_inputs"]["max_log_error"]))}


def _alibi_control() -> dict:
    lam2 = 1 / (1 + math.exp(-3))          # a one-head ALiBi kernel with slope 3: λ₂ = 1/(1 + e^{−3})
    return {"lam2": lam2, "eps": 1 / (1 - lam2)}


def _text_7_3() -> dict:
    s = json.loads((ROOT / "docs/trained/text-7.3.json").read_text())["summary"]
    pt = s["paired_t"]
    seeds = json.loads((ROOT / "docs/trained/text-7.3.json").read_text())["seeds"]
    return {"lower": sum(g > 0 for g in s["gap_per_seed"]), "seeds": len(seeds), "level": 100 * (1 - pt["alpha"]),
            "gap": pt["mean"], "dz": pt["d_z"], "lo": pt["interval"][0], "hi": pt["interval"][1], "t": pt["t"],
            "dof": pt["dof"], "p": pt["p"], "old_lo": s["interval"][0], "old_hi": s["interval"][1]}


def _capacity_7_3() -> dict:
    """The capacity control's record (docs/trained/text-7.3-capacity.json): its pre-registered test, the
    descriptive frozen-vs-capacity test, the slow path's share and the layers its rule opens."""
    s = json.loads((ROOT / "docs/trained/text-7.3-capacity.json").read_text())["summary"]
    pt, fc = s["cap_vs_coupled"], s["frozen_vs_capacity_descriptive"]["test"]
    opened = s["g1_open_layers"]["coupled"]
    return {"gap": pt["mean"], "n": pt["n"], "level": 100 * (1 - pt["alpha"]), "lo": pt["interval"][0],
            "hi": pt["interval"][1], "p": pt["p"], "fc": fc["mean"], "n_fc": fc["n"], "p_fc": fc["p"],
            "rho0": s["slow_share"]["coupled"][0][0], "rho_cap": max(s["slow_share_max_over_seeds"]["capacity"]),
            "rho_min": s["rho_min"], "l0": opened[0], "l1": opened[1], "l2": opened[2], "both": len(s["seeds_both"]),
            "seed": s["seeds_both"][0]}


_CAPACITY = ("loss(capacity) − loss(coupled) = +{gap} nats/byte over {n} seeds, {level} % interval [+{lo}, +{hi}], "
             "p = {p}: *helps*; loss(frozen) − loss(capacity) = +{fc} (descriptive, {n_fc} seeds, p = {p_fc}).")


N = r"(−?[0-9]+(?:\.[0-9]+)?)"
QUOTES = [
    ("docs/theory.md", "6.4 reference values", _reach_6_4,
     rf"measured exponent of r_ℓ\(λ₂\) against σ̃_ℓ/σ̃_0 (?P<exp_causal>{N[1:-1]})\s+\(causal, predicted "
     rf"(?P<pred_causal>{N[1:-1]})\) and (?P<exp_full>{N[1:-1]}) \(full, (?P<pred_full>{N[1:-1]})\); the clock misses "
     rf"log r by ≤ (?P<miss_causal>{N[1:-1]}) \(causal\) and\s+≤ (?P<miss_full>{N[1:-1]}) \(full\), ℓ\* "
     rf"(?P<depth>{N[1:-1]}) measured vs (?P<clock_depth>{N[1:-1]}) from the clock \(causal\); at real inputs with "
     rf"relative\s+spread 0.3 and 1 the distance from \{{1yᵀ\}} within (?P<real>{N[1:-1]}) in log"),
    ("docs/theory.md", "6.4 ALiBi control", _alibi_control,
     rf"λ₂ = 1/\(1 \+ e\^{{−3}}\) = (?P<lam2>{N[1:-1]}), ε = (?P<eps>{N[1:-1]})\)"),
    ("docs/theory.md", "7.3 on text, powered rerun", _text_7_3,
     rf"mean gap \+(?P<gap>{N[1:-1]}) nats/byte \(coupled lower in (?P<lower>{N[1:-1]}) of (?P<seeds>{N[1:-1]}) seeds\), "
     rf"Cohen's d_z = (?P<dz>{N[1:-1]}),\s+(?P<level>{N[1:-1]}) % interval \[\+(?P<lo>{N[1:-1]}), \+(?P<hi>{N[1:-1]})\], t = (?P<t>{N[1:-1]}) on (?P<dof>{N[1:-1]}) dof, "
     rf"p = (?P<p>{N[1:-1]}): the coupled arm \*helps\*, unlike the\s+paper's neutral report \(the earlier rule "
     rf"agrees: \[\+(?P<old_lo>{N[1:-1]}), \+(?P<old_hi>{N[1:-1]})\], helps\)"),
]

THEORY = "docs/theory.md"
QUOTES += [
    (THEORY, "1.1 reference values", D.euler_1_1,
     passage("errors at t = 1 of {e8}, {e16}, {e32}, {e64} at L = 8, 16, 32, 64, fitted slope {slope} over 16 … 64 (L = 8 "
             "is pre-asymptotic); the i.i.d. control's displacement falls with slope {ctl}")),
    (THEORY, "1.2 tolerance", D.autograd_1_2, passage("autograd of the whole stack to {tol} relative")),
    (THEORY, "2.1 reference values", D.blocks_2_1,
     passage("off-block entries ≤ {off}, each block equal to the formula within {block} (rounding")),
    (THEORY, "2.3 Pascal conditioning", D.pascal_2_3,
     passage("(about {c4} at T = 4, {c8} at T = 8, {c16} at T = 16, {c32} at T = 32 for unit-norm eigenvectors, "
             "exactly; the basis a float64 eigensolver returns measures {f32} at T = 32)")),
    (THEORY, "§3 mode ratios", D.modes_3,
     passage("drops from about {c0_mean} at c = 0 to {c20_lo}–{c20_hi} at c = 20")
     + r"[\s\S]*?" + passage("c = 0 → {c0_half}, {c0_third}, {c0_sixth}; c = 5 → {c5_half}, {c5_third}, {c5_sixth}; "
                              "c = 20 → {c20_half}, {c20_third}, {c20_sixth})")),
    (THEORY, "3.2 (a) residuals", D.pooling_3_2,
     passage("(relative residual about {a_lo}–{a_hi})") + r"[\s\S]*?"
     + passage("3 layers: ≤ {exact} (full and block, rounding), {causal} (causal)") + r"[\s\S]*?"
     + passage("‖J − QJQ‖/‖J‖ stays near {b_causal} at every depth")),
    (THEORY, "3.2 (b) residuals", D.two_sided_3_2,
     passage("(T = 8, P = 4, d = 8, 12 layers, W_VO ≈ 20·I): {full_d1}, {full_d4}, {full_d12} (full), {block_d1}, "
             "{block_d4}, {block_d12} (block), {causal_d1}, {causal_d4}, {causal_d12} (causal); with W_VO ≈ 0 (c = 0, "
             "2 heads, seed 0) {c0_lo}–{c0_hi} for all three")),
    (THEORY, "5.2 conservativeness", D.tightness_5_2, passage("it reaches about {median} of the exact boundary")),
    (THEORY, "5.3 tightness and control", D.onset_5_3,
     passage("onset/g* = {og_lo}–{og_hi} (the real stack's onset within {real} % of the linear model's), g⁺/onset = "
             "{go_lo}–{go_hi}:") + r"[\s\S]*?"
     + passage("rates a = ({a1}, {a2}, {a3}): the onset is the smallest per-direction root ({onset}), g⁺ the root of "
               "their sum ({gplus}), both from sympy's nsolve, so the bound is loose by exactly {loose};")),
    (THEORY, "6.4 ε and the a-priori ℓ*", D.clock_6_4,
     passage("ε = 1/(1 − λ₂) ≥ 1 — {eps_causal} for the causal kernel, {eps_full} for the full one.") + r"[\s\S]*?"
     + passage("it equals the mode products' ℓ* on {same} and is one layer deeper on {deeper} (never shallower);")
     + r"[\s\S]*?" + passage("ℓ*/L = {m0}, {m1}, {m2}, {m3} at L = 16 … 128 (clock: {k0}, {k1}, {k2}, {k3}), "
                              "converging at first order in h (Richardson limits {rich_m} and {rich_k}).")
     + r"[\s\S]*?" + passage("no saturation depth; r_L(λ₂) = {alibi_r} stays above")),
    (THEORY, "7.3 pilot and power", D.pilot_7_3,
     passage("gave +{gap} nats/byte in favour of the coupled arm in every seed, paired t = {t} on {dof} dof (p = {p}),")
     + r"[\s\S]*?" + passage("paired t-test, α = {alpha} two-sided, power {power} at the pilot's d_z = {dz}, "
                              "noncentral t) asks for n = {n} seeds; the rerun used five fresh seeds, {s_lo}–{s_hi}.")
     + r"[\s\S]*?" + passage("(|g₀| ≈ {g_lo}–{g_hi})")),
    (THEORY, "7.3 capacity control", _capacity_7_3,
     passage(_CAPACITY) + r"[\s\S]*?"
     + passage("ρ₀ = {rho0} in the coupled arm (seed {seed}) against at most {rho_cap} in the capacity arm; by the rule "
               "ρ_ℓ ≥ {rho_min} the slow path opens in layers {l0}, {l1}, {l2} of the coupled arm and in none of the "
               "capacity arm (seeds with both arms: {both};")),
    ("docs/trained.md", "7.3 capacity control", _capacity_7_3,
     passage(_CAPACITY) + r"\s+" + passage("ρ₀ = {rho0} in the coupled arm (seed {seed}) against at most {rho_cap} in "
                                           "the capacity arm.")),
    (THEORY, "8.1 decision rule", D.rule_8_1,
     passage("supported if both are ≤ {euler} and refuted if the step's is ≥ {step} or the roughness's ≥ {rough}")),
]

REL = "docs/reliability.md"
QUOTES += [
    (REL, "refusals", D.refusals,
     passage("Python's `int()` would read {arabic})") + r"[\s\S]*?"
     + passage("√(largest finite value) ({big64} in float64, {big32} in float32)") + r"[\s\S]*?"
     + passage("`simulate --T 1000000`: {simulate} PiB estimated") + r"[\s\S]*?"
     + passage("names its {rlimit} GiB and `RLIMIT_AS`") + r"[\s\S]*?"
     + passage("where the estimate is now {train} GB)") + r"[\s\S]*?" + passage("local workers ({worker} MiB each")
     + r"[\s\S]*?" + passage("size cap ({cap} MiB") + r"[\s\S]*?" + passage("manifest version {version})")),
]

QUOTES += [
    ("docs/testing.md", "Hypothesis profiles", D.hypothesis_profiles,
     passage("Hypothesis profile `ci`: {ci} derandomised examples per property") + r"[\s\S]*?"
     + passage("`thorough` is the same with {thorough} examples")),
]

REACH = "docs/reach.md"
QUOTES += [
    (REACH, "reach on the toy stacks", D.reach_small,
     passage("(trained stack: slopes {slope0}, {slope1}, {slope2}, {slope3}, tolerance ≈ {tol}; coefficients to 4 "
             "digits, e.g. c₁ = {c1} measured against {c1p} predicted for 2.1/2.3); 4.1 at the reference: slopes "
             "{ref_inv} and {ref_vis}; 3.2(a): slopes {cg_full} (full) and {cg_block} (block).")
     + r"[\s\S]*?" + passage("s₀ = {s0} under the trained stack's embedding (windows {w_lo}–{w_hi}) and {s0_rnd} under "
                              "the random one's.")
     + r"[\s\S]*?" + passage("| random (initialisation) | {r_whole} % (mean over windows {r_mean} %, max {r_max} %) | "
                              "{r_last} % (s = {r_last_s}) | {r_qk} % | {r_qkj} % | {r_inv} % |")
     + r"\s*" + passage("| trained | {t_whole} % (mean over windows {t_mean} %, max {t_max} %) | {t_last} % (s = "
                        "{t_last_s}) | {t_qk} % | {t_qkj} % | {t_inv} % |")
     + r"[\s\S]*?" + passage("({sp0} → {sp1} → {sp2} → {sp3} on text; the random stack stays at {rs_lo}–{rs_hi})")
     + r"[\s\S]*?" + passage("stays nearly invisible ({inv} %). 3.2(a)'s identity (full and block kernels, random "
                              "weights) is off by {cg_lo}–{cg_hi} % at s = {cg_s}. Control: the factorised form built at "
                              "a reference moved by {shift} % levels at the floor predicted from two factorised forms "
                              "({floor} on the trained stack) with slope {ctl_slope}, not 1;")
     + r"[\s\S]*?" + passage("depart at order 1 (slope {lv_slope}, c₁ {lv_c} against {lv_cp} predicted) and are off by "
                              "{lv_text} % at the text spread;")
     + r"[\s\S]*?" + passage("`docs/reach/reach-ci.json`, {ci_sec} s): slope {ci_slope}, c₁ {ci_c} measured against "
                              "{ci_cp} predicted, e = {ci_05} % at s = 0.5 and {ci_09} % at s = 0.9")),
    (REACH, "reach on GPT-2 small", D.reach_gpt2_small,
     passage("gives c₁ = {c1} and κ̄ = {kbar} (t/s = {tps}).") + r"[\s\S]*?"
     + passage("keeps κ̄t = 0.01: s = {w_lo} and {w_hi}.") + r"[\s\S]*?"
     + passage("| J_fact V against jvp at s = 0 | {id} | 0 | {id_tol} (γκ) |") + r"\s*"
     + passage("| slope of e(s) on the window | {slope} | 1 | ± {slope_tol} (κ̄t(s_max) + s_max² + rounding) |") + r"\s*"
     + passage("| coefficient e(s_min)/s_min | {coef} | {coefp} (rel. diff. {rel}) | ± {coef_tol} (κ̄t(s_min) + γ/e) |")
     + r"\s*" + passage("| e(0.1) | {e01} % | {e01p} % (c₁s) | — |") + r"\s*"
     + passage("| e({s_text}), the text spread | {e_text} % | {e_text1} % (c₁s); {e_text2} % to second order | — |")),
]

QUOTES += [
    (REACH, "reconstruction artefacts", D.reach_artefacts,
     passage("optimal h* (error {fd} of the bound), truncation slope {fd_slope} at") + r"[\s\S]*?"
     + passage("for every λ (to {inv})") + r"[\s\S]*?"
     + passage("(trained: ρ = {rho_t}, ρ̄ = {rhob_t}; random: {rho_r}, {rhob_r}; c = 20 causal: {rho_c20},")
     + r"[\s\S]*?" + passage("‖(G_ℓ(λ) − G_ℓ(1))n̂_ℓ‖/‖G_ℓ(1)‖ = {radial}, predicted ≤ {radial_bound})")
     + r"[\s\S]*?" + passage("has dimension N − {visible} of N = {N};")
     + r"[\s\S]*?" + passage("change X_L by ≤ {dx} and J·v by ≤ {djv} (relative)") + r"[\s\S]*?"
     + passage("against the tolerance 2γκ ≈ {gk} (γ") + r"[\s\S]*?"
     + passage("predicted at 1x̄ᵀ to {off_lo}–{off_hi} (tolerance") + r"[\s\S]*?"
     + passage("nonzero for every later token (smallest {smallest}), equal to the factorised prediction") + r"[\s\S]*?"
     + passage("(I + C_ℓ)ᵀ])_t to {fact}.")),
    (REACH, "depth smoothness", D.depth_smoothness,
     passage("(the estimator gives slope {sm_lo} to {sm_hi} on `weight_path=\"smooth\"` stacks over L = 2…16); i.i.d. "
             "layers give √2 = {sqrt2}, slope 0. **Trained weights stay i.i.d.-rough:** at L = 16, W_QK {r_W_QK}, "
             "W_VO {r_W_VO}, W1 {r_W1}, W2 {r_W2}, depth slopes {s_W_QK}, {s_W_VO}, {s_W1}, {s_W2}; the training updates "
             "alone are as rough ({u_lo}–{u_hi}, slopes {us_lo} to {us_hi}),") + r"[\s\S]*?"
     + passage("Validation losses {v2}, {v4}, {v8}, {v16} nats/byte.")),
]

QUOTES += [
    ("docs/trained.md", "trained stacks", D.trained_stacks,
     passage("cond(S) of the causal eigenbasis is {c6} at T = 6 but {c16} at T = 16") + r"[\s\S]*?"
     + passage("It learns from context: validation loss {small_loss} nats/byte against the unigram entropy {entropy}")
     + r"[\s\S]*?" + passage("against the validation text's unigram entropy {entropy2}") + r"[\s\S]*?"
     + passage("(W_QK {r_W_QK}, W_VO {r_W_VO}, W1 {r_W1}, W2 {r_W2} at L = 16; slopes in L between {s_lo} and {s_hi}")),
]

MODELS = "docs/real_models.md"
QUOTES += [
    (MODELS, "byte GPT-2 along held-out text", D.along_text_bytes,
     passage("The text's states have token spread {sp_lo}–{sp_hi} at every layer (mean {sp_mean}).") + r"[\s\S]*?"
     + passage("| 1.1 | depth roughness W_QK {qk}, W_VO {vo}, W1 {w1}, W2 {w2} | h = 1 (i.i.d. layers: {iid}) |")
     + r"[\s\S]*?" + passage("| 2.1 | visited factorised layer vs its jvp: {e0} %, {e1} %, {e2} %, {e3} % (layers 0–3, worst "
                              "window) | {tol21} |")
     + r"[\s\S]*?" + passage("| 2.2 | spread {sp22}; visited kernels' commutator up to {comm} | {tol22} |")
     + r"[\s\S]*?" + passage("| 2.3 | whole stack: {s23_lo}–{s23_hi} % over the 4 windows | {tol23} |")
     + r"[\s\S]*?" + passage("| 2.4 | W_Q, W_K's share of ∂output: {qk_lo}–{qk_hi} % | {tol24} |")
     + r"[\s\S]*?" + passage("| 3.1 | q_ℓ/q₀ = {q0}, {q1}, {q2}, {q3}: the decaying bundle grows, no ℓ*(0.5); at 1x̄ᵀ ρ̃ = "
                              "{rho}, no bound |")
     + r"[\s\S]*?" + passage("| 3.2 | ‖ΠJ(I − Q)V‖/‖JV‖ = {r32_lo}–{r32_hi} % (P = {P}) | {tol32} |")
     + r"[\s\S]*?" + passage("| 4.1 | W_Q, W_K's share of the per-token loss change {l41} % (finite differences {l41fd} %, "
                              "agreeing to {fd}) | {tol41} |")),
    (MODELS, "GPT-2-small along held-out text", D.along_text_small,
     passage("The text's spread falls from {sp0} (embedding) to {spL} (layer 12).") + r"[\s\S]*?"
     + passage("| 1.1 | depth roughness {rough} for W_QK, W_VO, W1, W2") + r"[\s\S]*?"
     + passage("| 2.1 | visited factorised layer vs its jvp: {e0} % at layer 0, {e1} %, {e2} %, … falling to {eL} % at "
               "layer 11 |")
     + r"[\s\S]*?" + passage("| 2.2 | spread {sp22} (mean over layers); visited kernels' commutator up to {comm} |")
     + r"[\s\S]*?" + passage("| 2.3 | whole stack: {s23} % (the layers'")
     + r"[\s\S]*?" + passage("| 2.4 | W_Q, W_K's share of ∂output {qk} % |")
     + r"[\s\S]*?" + passage("| 3.1 | q_ℓ/q₀ = {q1} after layer 0, {qL} after layer 12: ℓ*(0.5) = 0 along the text; the "
                              "reference bound is not built at this size (T·L·d³ = {cost}) |")
     + r"[\s\S]*?" + passage("| 3.2 | ‖ΠJ(I − Q)V‖/‖JV‖ = {r32} % (P = 8) |")
     + r"[\s\S]*?" + passage("| 4.1 | W_Q, W_K's share of the per-token loss change {l41} % (finite differences agree to "
                              "{fd}) |")),
]

QUOTES += [
    (MODELS, "byte GPT-2 trained here", D.gpt2_bytes,
     passage("(GPT-2's own code, dropout 0; {params} parameters)") + r"[\s\S]*?"
     + passage("= {tokens}M tokens, on one thread under `nice -n 10`: **{secs} s** wall on the shared 2-core VM ({tps}k "
               "tokens/s;")
     + r"[\s\S]*?" + passage("Validation loss **{loss} nats/byte** on 256 held-out windows, against the unigram entropy "
                              "of the training bytes, {entropy} nats/byte")
     + r"[\s\S]*?" + passage("hidden states to {hf_free} and {hf_dense} (bounds {tol_free}, {tol_dense}).")
     + r"[\s\S]*?" + passage("validation loss on 64 windows is {imp} nats/byte, transformers' {hf}, largest logit "
                              "difference {logit}.")
     + r"[\s\S]*?" + passage("| 1.2 | holds {f12} / {f12t} | holds {d12} / {d12t} |") + r"\s*"
     + passage("| 2.1 | holds {f21} / {f21t} | holds {d21} / {d21t} |") + r"\s*"
     + passage("| 2.2 | holds {f22} / {f22t} | holds {d22} / {d22t} |") + r"\s*"
     + passage("| 2.3 | holds {f23} / {f23t} | holds {d23} / {d23t} |") + r"\s*"
     + passage("| 2.4 | holds {f24} / {f24t} | holds {d24} / {d24t} |")
     + r"[\s\S]*?" + passage("| 4.1 | n/a (needs a slow-path variant) | holds {d41} / {d41t} |")
     + r"[\s\S]*?" + passage("`check --stack` took {sec_free} s (T = 64) and {sec_dense} s (T = 4, dense;")
     + r"[\s\S]*?" + passage("log r by up to {r64} (T = 64) and {r4} (T = 4) at the reference, and the distance from the "
                              "coarse manifold on 8 validation windows by up to {d64} and {d4} in log")
     + r"[\s\S]*?" + passage("`docs/trained/gpt2-bytes-reach.json`, {reach_sec} s) hold their expansions off 1x̄ᵀ as "
                              "predicted: the factorised J·V error grows with slope {sl0} (coefficient {c0}, predicted "
                              "{c0p}), 2.4's Q/K share of ∂output with slope {sl1} and of ∂(J·V) with slope {sl2}, 4.1's "
                              "invisible-direction share with slope {sl3};")
     + r"[\s\S]*?" + passage("the factorised form's error is {e001} % at spread 0.01 and {e_text} % at the "
                              "text's own spread {s_text}, where W_Q, W_K carry {qk} % of ∂output.")
     + r"[\s\S]*?" + passage("is W_QK {m_W_QK}, W_VO {m_W_VO}, W1 {m_W1}, W2 {m_W2} (W_Q {m_W_Q}, W_K {m_W_K}, W_V {m_W_V}, "
                              "W_O {m_W_O}), against {init_lo}–{init_hi} for its own initialisation (rebuilt from the "
                              "training seed; i.i.d. √2 = {sqrt2}) and {upd_lo}–{upd_hi} for the training update θ − θ_init "
                              "alone; the LayerNorm gains {ln} (1 at initialisation")),
]

# more passages, one module a doc or two (each a list QUOTES of the same shape)
QUOTES += docs_quotes_trained.QUOTES + docs_quotes_reach.QUOTES + docs_quotes_real_models.QUOTES
QUOTES += docs_quotes_sweeps.QUOTES + docs_quotes_runs.QUOTES + docs_quotes_theory_trained.QUOTES
QUOTES += docs_quotes_power.QUOTES + docs_quotes_house.QUOTES + docs_quotes_mutants.QUOTES
QUOTES += docs_quotes_performance.QUOTES


def tied_spans(doc: str, text: str) -> list[tuple[int, int]]:
    """The character spans of every quoted number a passage of ``QUOTES`` ties in ``doc``."""
    return [m.span(g) for d, _, _, pattern in QUOTES if d == doc
            for m in re.finditer(pattern, text) for g in m.groupdict()]


def _as_float(text: str) -> float:
    return float(text.replace("−", "-").replace(",", ""))


def agrees(quoted: str, value) -> bool:
    """The quote is the value at the quote's precision (see the module docstring)."""
    mantissa, _, exponent = quoted.lstrip("+").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    scale = 10.0 ** int(_as_float(exponent)) if exponent else 1.0
    half = 0.5 * 10.0 ** -decimals * scale + 1e-12 * scale
    q = _as_float(quoted.lstrip("+"))
    if isinstance(value, tuple) and value[0] == "≲":   # rounding level: a bound within a decade
        return value[1] <= q <= 10 * value[1]
    if isinstance(value, tuple):           # ("≤", v): a bound, the tightest at the quote's precision
        v = value[1]
        return v <= q + 1e-12 * scale and q - v < 2 * half
    return abs(q - value) <= half


@pytest.mark.parametrize("doc, passage, compute, pattern", QUOTES, ids=[q[1] for q in QUOTES])
def test_quoted_numbers_are_regenerated(doc, passage, compute, pattern):
    text = (ROOT / doc).read_text()
    matches = list(re.finditer(pattern, text))
    assert len(matches) == 1, f"{doc}: the passage '{passage}' occurs {len(matches)} times (expected once)"
    values = compute()
    wrong = {k: (q, values[k]) for k, q in matches[0].groupdict().items() if not agrees(q, values[k])}
    assert not wrong, f"{doc}, {passage}: quoted vs regenerated {wrong}"


def test_agreement_rule_refuses_the_off_by_one_exponent():
    """The negative control: 6.4's causal exponent moved by a depth off by one (−0.379) is not the quoted −0.484,
    nor is a value one rounding unit away; a bound quoted looser than its value's rounding is refused."""
    assert agrees("−0.484", -0.48388) and not agrees("−0.484", -0.379) and not agrees("−0.484", -0.4855)
    assert agrees("0.19", ("≤", 0.185)) and not agrees("0.19", ("≤", 0.1912)) and not agrees("0.30", ("≤", 0.185))


def test_agreement_rule_refuses_the_stale_conditioning_and_rounding_quotes():
    """The negative control for scientific notation and rounding-level bounds: the float64 basis's cond(S) at
    T = 32 (5.07e14) is not the exact 3.75e14 quoted as 4e14, and the old block error (1e-15 against 7.3e-15) is
    refused, as is a bound looser than a decade."""
    assert agrees("4e14", 3.748e14) and agrees("2e1", 18.17) and not agrees("4e14", 5.07e14)
    assert agrees("1e-14", ("≲", 7.3e-15)) and not agrees("1e-15", ("≲", 7.3e-15))
    assert not agrees("1e-12", ("≲", 2.5e-14))


def test_generated_docs_are_fresh():
    """docs/claims.md's table is ``fastslow check --summary``'s from docs/ledger.json, README's sections are
    their records' (class (a) of the inventory)."""
    from proofs_check import headline as H

    for doc in ("docs/claims.md", "README.md"):
        assert H.main(["--check", str(ROOT / doc)]) == 0, doc


def test_every_quoted_number_is_generated_tied_or_listed():
    """The class is closed: a number in a scanned doc that no generated section, tie or definitional rule covers
    must be on the untied list (a new one fails), and every listed one must still be there (the list shrinks)."""
    from docs_inventory import flat, inventory, load_untied

    found, listed = flat(inventory(tied_spans)), flat(load_untied())
    new, gone = found - listed, listed - found
    assert not new, ("numbers quoted without a tie (tie each in QUOTES, or give a definitional one a rule in "
                     f"tests/docs_inventory.py): {sorted(new)[:20]}")
    assert not gone, ("listed as untied but no longer found (tied or removed; rewrite the list with "
                      f"`python tests/docs_inventory.py --write`): {sorted(gone)[:20]}")


def test_control_an_edited_or_added_number_is_caught():
    """The negative control: a number added to a doc's prose is new to the inventory; one inside a tied passage
    or a definitional setting is not."""
    from docs_inventory import untied

    base = "## S\n\nThe spread is 0.83 at T = 16.\n"
    assert [k for _, k in untied("x.md", base, [])] == ["The spread is ⟦0.83⟧"]
    assert untied("x.md", base, [(base.index("0.83"), base.index("0.83") + 4)]) == []
    added = base + "It falls to 0.47 after training.\n"
    assert [k for _, k in untied("x.md", added, [])][-1] == "It falls to ⟦0.47⟧"
