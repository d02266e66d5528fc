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
