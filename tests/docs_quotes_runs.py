"""Passages tied to their records (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the
function that regenerates the values, the pattern): the run provenance of docs/real_models.md and docs/reach.md
(``tests/docs_ties_runs.py``)."""

from __future__ import annotations

import docs_ties_runs as T
from docs_ties import passage

MODELS = "docs/real_models.md"
REACH = "docs/reach.md"
ANY = r"[\s\S]*?"
#: A number the passage passes over (tied by another passage).
OTHER = r"[0-9.]+"

QUOTES: list = [
    (MODELS, "byte GPT-2 along text, its run", T.bytes_along_text_run,
     passage("Gaussian probes: {wall} s wall, {cpu} CPU-s, peak RSS {rss} GiB, on the shared 2-core AMD EPYC VM at "
             "load average {lo}–{hi} ({year}-{month}-{day} {hour}:{minute}, other sessions running; run log "
             "`gpt2-bytes-along-text`).")),
    (MODELS, "GPT-2-small along text, its run", T.small_along_text_run,
     passage("took **{wall_min} min {wall_sec} s** wall, {cpu} CPU-s ({user} user + {sys} system), peak RSS "
             "**{rss} GiB**, on the same VM at load average {lo}–{hi} (2026-12-04 {hour}:{minute}–{end_hour}:"
             "{end_minute}; `import-hf` before it {i_wall_min} min {i_wall_sec} s, {i_rss} GiB; run log")),
    (MODELS, "byte GPT-2 at T = 4, 3.1's ρ̃", T.bytes_dense_rho,
     passage("| 3.1 | n/a (needs a saturating variant) | conditional: ρ̃ = {rho} ≥ 1, the bound is vacuous |")),
    (MODELS, "byte GPT-2 depth smoothness, its run", T.smoothness_run,
     passage("`docs/trained/gpt2-bytes-depth-smoothness.json`; {wall} s wall at load {lo}–{hi}, {year}-{month}-{day}, "
             "run log `gpt2-bytes-depth-smoothness`):")),
    (MODELS, "GPT-2-small table, its runs", T.small_table,
     passage("| idle (load < 1), 2026-12-04 {ii_hour}:{ii_minute} | `import-hf` | **{ii_wall} s** | {ii_cpu} s | "
             "**{ii_rss} GiB** | hidden states match transformers to {agree} (bound") + ANY
     + passage("; {gb} GB checkpoint; the agreement remeasured 2026-12-07, "
               "`docs/bench/hf-gpt2-small-import.json` |")
     + r"\s*" + passage("| idle (load < 1), 2026-12-04 {ci_hour}:{ci_minute} | `check --stack` | **{ci_wall_min} min "
                        "{ci_wall_sec} s** | {ci_cpu} s | **{ci_rss} GiB** |") + ANY
     + passage("| loaded (load {il_lo}–{il_hi}), 2026-12-03 | `import-hf` | {il_wall_min} min {il_wall_sec} s | "
               "{il_cpu} s | {il_rss} GiB | as above |") + r"\s*"
     + passage("| loaded (load {cl_lo}–{cl_hi}), 2026-12-03 | `check --stack` | {cl_minutes} min | {cl_cpu} s | "
               "{cl_rss} GiB |") + ANY
     + passage("≤ 8 GiB): import {import_s} s, check {check_min} min {check_sec} s, before")),
    (MODELS, "GPT-2-small, 6.4 alone, its run", T.claim_6_4_run,
     passage("(`check --stack … --claim 6.4`, load {lo}–{hi}) it took {wall_min} min {wall_sec} s wall, {cpu} CPU-s "
             "({user} user + {sys} system, including loading the {gb} GB checkpoint), peak RSS {rss} GiB (run log "
             "`hf-gpt2-small-claim-6-4`, transcribed).") + ANY
     + passage("whether the whole check then stays inside the {budget}-minute budget is not measured")),
    (MODELS, "tiny GPT-2 benchmark, its run", T.tiny_run,
     passage("claims 1.2 and 6.4; {cpu} CPU-s, {wall} s wall at load {lo}–{hi} on {year}-{month}-{day}, run log "
             "`hf-gpt2-tiny`)")),
    (REACH, "reach entry, its run", T.reach_small_run,
     passage("rerun {year}-{month}-{day} {hour}:{minute} on the shared 2-core machine at load {lo}–{hi}: {wall} s "
             "wall, {cpu} CPU-s, peak RSS {rss} GiB for the whole entry")),
    (REACH, "reach entry, coefficients' digits", T.reach_small_digits,
     passage("coefficients to {digits} digits, e.g.") + ANY + passage("predicted for 2.1/2.3); {claim} at the "
                                                                      "reference: slopes")),
    (REACH, "ci preset, the quoted spreads", T.reach_ci_spreads,
     passage("% at s = {s_a} and") + r"\s+" + OTHER + r"\s+" + passage("% at s = {s_b} (recorded with the")),
    (REACH, "GPT-2-small reach, its runs", T.reach_gpt2_small_cost,
     passage("Cost, measured on 2026-12-04 on the shared 2-core machine at load {lo}–{hi}, one thread: {minutes} min "
             "wall ({user} s user + {sys} s system CPU; the process got {share} % of a core),") + ANY
     + passage("peak RSS {gb} GB (run log `reach-gpt2-small`, transcribed). A single jvp timed alone at load "
               "{j_lo}–{j_hi} with two threads took {j_wall} s wall (the forward pass {f_wall} s; run log")),
    (REACH, "4.1's off-reference control, its spread", T.weight_control_spread,
     passage("the weight check measured at a spread of {spread} (`tests/test_ledger_power.py`)")),
]
