"""Passages of docs/trained/text-7.3-power.md and docs/verification_power.md tied to the records and recomputations
that produced their numbers (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the
function that regenerates the values, the pattern).  The values come from ``tests/docs_ties_power.py``."""

from __future__ import annotations

import docs_ties_power as P
from docs_ties import passage

POWER = "docs/trained/text-7.3-power.md"

QUOTES: list = [
    (POWER, "7.3 power: the pilot", P.pilot,
     passage("averaged over the {windows} validation windows, seeds {s0}, {s1}, {s2}:") + r"[\s\S]*?"
     + passage("| {t0} | +{g0} |") + r"\s*" + passage("| {t1} | +{g1} |") + r"\s*" + passage("| {t2} | +{g2} |")
     + r"\s*" + passage("mean Δ̄ = +{mean}, sample sd s_Δ = {sd} (n − 1 = {dof} dof), Cohen's d_z = Δ̄ / s_Δ = {dz}, "
                        "paired t = Δ̄ / (s_Δ/√3) = {t} on {dof2} dof, two-sided p = {p}. The ledger called it \"neutral\" "
                        "because its rule's critical value uses t_{{q}, {qdof}} = {crit} (plus the validation-window "
                        "noise): with {dof3} dof a {level} % interval is wide")),
    (POWER, "7.3 power: the analysis", P.power_analysis,
     passage("## Power analysis (paired t-test, α = 0.01 two-sided, power {target})") + r"[\s\S]*?"
     + passage("The seeds needed are the smallest n with power(n) ≥ {target2}, at the pilot's observed d_z = {dz} "
               "(observed gap {gap} and observed sd of the paired differences {sd}):")
     + r"\s*" + passage("| n | t_{{q}, n−1} | power |") + r"\s*\|---\|---\|---\|\s*"
     + passage("| {n3} | {c3} | {p3} |") + r"\s*" + passage("| {n4} | {c4} | {p4} |") + r"\s*"
     + passage("| **{n5}** | **{c5}** | **{p5}** |") + r"\s*" + passage("| {n6} | {c6} | {p6} |") + r"\s*"
     + passage("**n = {n_best} seeds.**") + r"[\s\S]*?"
     + passage("(its sd on {dof} dof), and an effect estimated from a pilot that looked interesting is biased upwards, "
               "so power {target3} at the observed d_z is optimistic. Sensitivity (same α and power): d_z = {d0} needs "
               "n = {m0}, d_z = {d1} needs {m1}, d_z = {d2} needs {m2}; with σ_Δ at the upper one-sided {conf} % "
               "confidence bound of the pilot's sd ({sd_up}, d_z = {dz_up}) n = {n_up}. The rerun uses n = {n_best2} "
               "because that is what the stated analysis gives and what fits the CPU time before the deadline "
               "(~{minutes} CPU-minutes per seed for both arms,")),
    (POWER, "7.3 power: the outcome", P.outcome,
     passage("started 2026-12-03 {h0}:{m0} UTC from commit b6f344d, which contains this file, and finished {h1}:{m1} "
             "UTC) gave per-seed gaps +{g0}, +{g1}, +{g2}, +{g3}, +{g4} nats/byte: mean +{mean}, sd {sd}, Cohen's "
             "d_z = {dz}, {level} % interval [+{lo}, +{hi}], t = {t} on {dof} dof, two-sided p = {p} < {alpha}.")
     + r"[\s\S]*?" + passage("The earlier rule gives [+{old_lo}, +{old_hi}], also helps. Descriptively, the pooled 8 "
                              "seeds (pilot and rerun) have mean +{pooled} with")),
]

VP = "docs/verification_power.md"
QUOTES += [
    (VP, "mutant catalogues", P.mutant_catalogues,
     passage("applies deliberate mistakes to the SymPy derivations ({theory} theory mutants:") + r"[\s\S]*?"
     + passage("(`proofs_check/mutation/hand_written_source.py`, {source} one-line mistakes")),
    (VP, "code mutants, the full run", P.code_mutants_full,
     passage("load {all_lo}–{all_hi}; {all_wall_min} min wall for the whole run with its theory and source mutants, "
             "the code step {code_wall_min} min; the survivors: [equivalent_mutants.md](equivalent_mutants.md)): "
             "**code {killed}/{total} = {score}**: `numerics/stacks/kernels.py` {k_killed}/{k_total} = {k_score}, "
             "`numerics/generated/factorisation.py` {f_killed}/{f_total} = {f_score}, `slow_manifold.py` "
             "{s_killed}/{s_total} = {s_score}, `stability.py` {b_killed}/{b_total} = {b_score}, the other generated "
             "modules {others}; outside `numerics/stacks/stack.py` every survivor ({equivalent}) is equivalent.")),
    (VP, "7.2's Monte Carlo size", P.monte_carlo_size,
     passage("δ = σ²/(P(P−1)) = {delta} at P = {P}, sd(φ²) = √2·c, z = {z} (the check's critical value), power "
             "{power} → **{n} sequences**")),
    (VP, "adjoint probes' bound", P.adjoint_bound, passage("probe pair; above min({c}/√(T·d), 1 − 10⁻⁶)")),
    (VP, "cross-checks in the ledger", P.cross_checks,
     passage("toy preset in the committed ledger (docs/ledger.json, `--profile ci`): {mf_lo}–{mf_hi} s wall per claim.")
     + r"[\s\S]*?" + passage("Unmutated, in the committed ledger (docs/ledger.json): {claims} claims, errors up to {err} "
                              "against tolerances from {tol} (worst ratio {ratio};")
     + r"[\s\S]*?" + passage("enclosures coincide); {skip0} and {skip1} have no number here with a dense twin")
     + r"[\s\S]*?" + passage("Cost: {sec_lo}–{sec_hi} s wall per claim")),
    (VP, "GPT-2 mapping", P.gpt2_mapping,
     passage("two built-in tiny GPT-2 checkpoints (d = {d}, {heads} heads, L = {L}, `layer_norm_epsilon` = {eps}, every "
             "bias nonzero;") + r"[\s\S]*?"
     + passage("gap ≤ {gap} against tolerance 2n·u = {tol}; a wrong config key for ε, the other GELU form or b_V left "
               "unfolded miss by at least {miss}")),
    (VP, "seeds audited", P.seed_offsets,
     passage("each have their own offset (x̄ +{xbar}, ‖J‖₂'s start +0, 3.2's operator +{op}, mode probe +{mode}, "
             "(W_Q, W_K) tangent +{qk}, gate direction +{gate}, probes +{probes} + k, the adjoint pair "
             "+{adj0}/+{adj1}, 5.1's aligned systems +{aligned});")
     + r"[\s\S]*?" + passage("evaluate at the same state X (seed + {fd}: one quantity, two routes);")
     + r"[\s\S]*?" + passage("reuses its value tangents (seed + {tangent}) for the same derivative; 4.1's dense check "
                              "draws the decaying offset and its mean-carrying control from one seed (+{dec}: a paired "
                              "control, p_mean = p_dec + 1(wᵀp); the scale form uses +{sdec} and +{smean}).")
     + r"[\s\S]*?" + passage("Claim 5.1 ({b51} abstract systems) and Claim 5.2 ({b52} aligned systems)")),
    (VP, "code mutants in stack.py", P.code_mutants_stack,
     passage("on the current code (2026-12-07 {hour}:{minute} UTC, commit b60a6a6, idle 2-core VM, load {lo}–{hi}, "
             "{wall} s; docs/equivalent_mutants.md): **{killed}/{total} = {score}**: {survivors} survivors, "
             "{equivalent} equivalent (E1 {e1}, E9 {e9}) and {device} device-only (D), none open;")
     + r"[\s\S]*?" + passage("The equivalents-excluded score is {killed2}/{excluded}.")
     + r"[\s\S]*?" + passage("- **E1, {e1b}**:") + r"[\s\S]*?" + passage("- **D, {db}**:")),
]

QUOTES += [
    (VP, "theory and source mutants", P.theory_source_mutants,
     passage("(`fastslow mutate --theory-only`, then `--source-only`, `--workers 2`, under `nice -n 10` on the 2-core VM "
             "shared with other jobs; theory {t_wall_min} min {t_wall_sec} s wall, {t_cpu} CPU-s at load {t_lo}–{t_hi}, "
             "source {s_wall_min} min {s_wall_sec} s wall, {s_cpu} CPU-s at load {s_lo}–{s_hi};")
     + r"[\s\S]*?" + passage("**theory {t_killed}/{t_total} = {t_score}**; {timeouts} of them (the LN Jacobian without "
                              "mean removal, C without h) are counted as killed because a symbolic step ran past its "
                              "time limit of {limit} s (a refusal with its reason, weaker evidence than a failing number); "
                              "the other {others} fail a number, a symbolic step or a cross-check. **Source mutants: "
                              "{s_ledger}/{s_total} killed by the ledger, {s_test} by a test only, {s_survived} "
                              "survived.**")),
    (VP, "two kills of the rerun", P.mutant_details,
     passage("now refused (the theory run above: numeric error {err} > tolerance {tol}).") + r"[\s\S]*?"
     + passage("in the source run above Claim 2.3's ledger check found ‖J‖₂ {scale} against the dense {dense})")),
]
