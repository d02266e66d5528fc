"""Passages tied to their records (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the
function that regenerates the values, the pattern): docs/theory.md's numbers measured on trained stacks and in the
ledger's controls, docs/trained.md's runs, docs/reliability.md's measured peak; the values come from
``docs_ties_theory_trained``."""

from __future__ import annotations

import docs_ties_theory_trained as V
from docs_ties import passage

THEORY = "docs/theory.md"
TRAINED = "docs/trained.md"
RELIABILITY = "docs/reliability.md"
ORBIT = r"\{1yᵀ\}"          # the literal set {1yᵀ}, which a template would read as a number's name


def text(template: str) -> str:
    """``passage`` of a template that may also name the set {1yᵀ} literally."""
    return ORBIT.join(passage(part) for part in template.split("{1yᵀ}"))


QUOTES: list = [
    (THEORY, "2.3 float64 eigen-coordinates", V.eigen_coordinates_2_3,
     passage("the relative off-block error of the factorisation in that basis is {e16} at T = 16, {e24} at T = 24 "
             "and {e32} at T = 32 (the ledger's control")),
    (THEORY, "3.2 (b) value scale", V.value_scale_3_2, passage("d = 8, 12 layers, W_VO ≈ {c}·I)")),
    (THEORY, "6.4 on trained stacks", V.clock_on_trained_6_4,
     text("(the grid's, T = {sT}, d = {sd}, {sL} layers; `docs/trained/small-6.4.json`) the clock misses log r at "
             "the reference by {miss} (its spread grows through the MLP, not a value path), yet predicts the distance "
             "of the text trajectories from {1yᵀ} within {real} in log.")
     + r"\s*" + text("On the GPT-2 trained on the bytes (`docs/trained/gpt2-bytes`, d = {gd}, {gL} layers, T = {gT}, "
                        "imported with `fastslow import-hf`; `docs/trained/gpt2-bytes-6.4.json`, rerun 2026-12-07) the "
                        "decaying bundle does not contract: r_L ≈ {r_lo}–{r_hi} over its {modes} decaying modes at the "
                        "reference where the clock predicts {k_lo}–{k_hi}, and the distance of validation-text "
                        "trajectories from {1yᵀ}, averaged over {windows} windows, stays at {s_lo}–{s_hi} of its start "
                        "through the {layers} layers where the clock predicts {s_clock} at the last")),
    (TRAINED, "2.2's refusal threshold", V.mass_floor_factor, passage("A mass floor above {k} eps cond(S)")),
    (TRAINED, "the grid's stack trains", V.small_train,
     passage("It trains in {wall} s wall on first use ({cpu} CPU-s, one thread, load {lo}, 2026-12-07; run log "
             "`grid-small-train`)")),
    (TRAINED, "7.3's runs", V.runs_7_3,
     passage("{p_wall_min} min wall at nice {nice} on the shared VM; run log `text-7-3-powered-rerun`)") + r"[\s\S]*?"
     + passage("in {r_wall_min} min {r_wall_sec} s wall (run log `text-73-pilot-rerun`)")),
    (TRAINED, "the visibility gap", V.visibility_gap,
     passage("The gap σ₈/max(σ₉, σ₁·eps) is {trained} after training and {random} before")),
    (RELIABILITY, "train's measured peak", V.train_peak,
     passage("a measured peak RSS of {gb} GB, the interpreter's included, at")),
    (TRAINED, "trained.md's timed runs", V.trained_timings,
     passage("reaches a validation loss of") + r"[\s\S]*?"
     + passage("in {smoke_wall} s wall ({smoke_cpu} CPU-s, load {smoke_lo}–{smoke_hi}). `fastslow check --claim 7.3` "
               "from an empty cache: {q_cpu} s of CPU ({q_wall_min} min {q_wall_sec} s wall at load {q_lo}–{q_hi}); "
               "`--full` (the size `reproduce` runs): {f_cpu} s of CPU ({f_wall_min} min {f_wall_sec} s wall at load "
               "{f_lo}–{f_hi}).") + r"[\s\S]*?"
     + passage("trained in **{t_wall_min} min {t_wall_sec} s wall** ({t_user} s user + {t_sys} s system CPU, peak RSS "
               "{t_rss} GiB) at load {t_lo}–{t_hi}, the process getting {t_share} % of a core (run log "
               "`train-default-checkpoint`)")),
    (TRAINED, "the default checkpoint", V.default_checkpoint,
     passage("Its final validation loss is {loss} nats/byte after {steps} steps, against the validation text's "
             "unigram entropy {entropy}, and its W_QK, W_VO, W1, W2 change by {r_lo}–{r_hi} per layer")),
]
