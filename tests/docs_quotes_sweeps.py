"""Passages tied to their records (``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the
function that regenerates the values, the pattern)."""

from __future__ import annotations

import docs_ties_sweeps as S
from docs_ties import passage

SWEEPS = "docs/sweeps.md"
ANY = r"[\s\S]*?"

QUOTES: list = [
    (SWEEPS, "sweep gallery timings", S.gallery,
     passage("load average {lo}–{hi} from other jobs, the largest resident set of any of its processes ≤ {rss} GiB): "
             "`coarse_graining` {coarse_graining} s, `visibility` {visibility} s, `saturation` {saturation} s, "
             "`gate_margin` {gate_margin} s, `gate_bounds` {gate_bounds} s, `depth_clock` {depth_clock} s")),
    (SWEEPS, "sweep phase diagrams 3.2 and 5.1", S.phase_diagrams,
     passage("over every depth and seed it is at most {f0} at c = 0, {f2} at c = 2, {f5} at c = 5 and {f20} at c = 20,")
     + ANY + passage("(the predicted ℓ*(τ = 0.5) is at most layer {sd} there); the causal kernel's ranges over "
                     "{c_lo}–{c_hi} at every depth")
     + ANY + passage("the measured onset of expansion lies {gm_lo}–{gm_hi}× above the certified g* (median {gm_med}) on "
                     "the {gm_n} certified stacks whose real stack expands below the onset search's cap, of {gm_cert} "
                     "certified")),
    (SWEEPS, "sweep a priori boundaries", S.a_priori,
     passage("at load average {lo}–{hi} from other jobs") + ANY
     + passage("`depth_clock` (6.4, {dc_rows} stacks, {dc_wall} s wall)") + ANY
     + passage("{dc_holds}/{dc_rows2} hold, the predicted ℓ̂* equals the measured saturation depth on {equal} of "
               "{compared} stacks and is otherwise deeper by {by_lo}–{by_hi} layers (causal: mean {causal} layers "
               "measured − predicted; full: {full}), never shallower. `gate_bounds` (5.3, {gb_rows} stacks, {gb_wall} s "
               "wall): {gb_holds} hold, {gb_na} n/a (no certified g*, μ ≤ 0, at ln_gain ≥ {na_gain}), none fails; "
               "onset / g* = {onset_over_g_star_lo}–{onset_over_g_star_hi} (median {onset_over_g_star_med}) and "
               "g⁺ / onset = {g_plus_over_onset_lo}–{g_plus_over_onset_hi} (median {g_plus_over_onset_med})")),
]

QUOTES += [
    (SWEEPS, "sweep throughput", S.throughput,
     passage("claim 3.2 on {stacks} stacks with T = 8, d = 8, 3 layers, P = 4; warm clusters, best of two runs; "
             "2026-12-07, load average {lo}–{hi} from other jobs on the 2 cores): **{rate1} stacks/s with 1 worker, "
             "{rate2} with 2 workers, a scaling efficiency of {eff}**; the cluster's overhead is **{ovh1} ms per task** "
             "with 1 worker and {ovh2} ms with 2 workers") + ANY
     + passage("against {inside} s per task inside `evaluate` on the one worker. The same stacks evaluated serially "
               "in the `bench` process, in the same run, took {serial} s each") + ANY
     + passage("Starting the cluster took {start} s, warming its worker (it imports the claims and evaluates one "
               "stack) {warm1} s, and scaling to two workers and warming the second {warm2} s. The two timed runs "
               "took {r1a} and {r1b} s with 1 worker, {r2a} and {r2b} s with 2 workers")),
]
