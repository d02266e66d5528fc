"""Passages of docs/performance.md tied to the records and run-log entries that produced their numbers
(``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the function that regenerates the
values, the pattern); the functions are ``tests/docs_ties_performance.py``'s."""

from __future__ import annotations

import re

import docs_ties_performance as P
from docs_ties import passage

PERF = "docs/performance.md"
ANY = r"[\s\S]*?"


def _scale_rows() -> str:
    """The per-claim table under Scale: what each claim measured at gpt2-small, its wall seconds in the recorded
    run, and the 2026-12-07 run's CPU and wall seconds."""
    measured = {"1.1": "Euler slope {slope11} (i.i.d. control {ctl11})", "1.2": "{err12} ({tol12})",
                "2.1": "{err21} ({tol21})", "2.2": "residual slope {slope22}", "2.3": "{err23} ({tol23})",
                "2.4": "{err24}", "3.1": "{err31} below the bound's tolerance", "3.2": "(a) {err32}", "4.1":
                "slope {slope41} (control {ctl41})", "4.2": "{err42}", "5.1": "certified"}
    note = {"1.2": ": the stack, K_m and the shared jvp passes at 1x̄ᵀ", "2.1": ": the two passes at 1x̄ᵀ + δN",
            "2.4": ": reuses the passes"}
    rows = []
    for cid in P.ROWS:
        k = cid.replace(".", "")
        rows.append(passage(f"| {cid} | {measured[cid]} | {{w{k}}}{note.get(cid, '')} | {{cpu{k}}} | {{wall{k}}} |"))
    return r"\s*".join(rows)


QUOTES: list = [
    (PERF, "scale presets", P.presets,
     passage("`toy` {toy_T}×{toy_d}×{toy_L}, `ci` T = 256, d = 64, L = 6, `gpt2-small` {small_T}×{small_d}×{small_L} "
             "with {small_h} heads, `gpt2-medium` {medium_T}×{medium_d}×{medium_L} / {medium_h}, `gpt2-large` "
             "{large_T}×{large_d}×{large_L} / {large_h};")),
    (PERF, "scale rounding bounds", P.rounding_bounds,
     passage("(float64: {gamma} at gpt2-small) times the polynomial's term-norm ratio κ; float32 uses the "
             "probabilistic bound {four}√n·u (the worst case, {worst32} at gpt2-small,")),
    (PERF, "scale forms' samples", P.scale_table_forms,
     passage("on {modes21} causal modes whose eigenvectors C(i−1, k−1) are representable (k ≤ {k_low} and k ≥ T − "
             "{k_high}; the middle ones overflow)") + ANY
     + passage("nonzero with slope {slope24} (O(δ) attention change") + ANY
     + passage("r_m(λ) ≤ Π ρ̃_ℓ on {modes31} of the T eigenvalues (k log-spaced, λ = 1 and 1/T included: a sample), "
               "value_scale {c31}") + ANY
     + passage("aligned systems of the same size at {gate51} g* expand")),
    (PERF, "gpt2-small scale run", P.scale_gpt2_small,
     passage("load average {lo} at the start (run log `scale-gpt2-small-idle-2026-12-03`,") + ANY
     + passage("in {wall_min} min {wall_sec} s wall** for the whole command ({claims_s} s in the claims; user {user} s "
               "+ system {sys} s = {cpu} CPU-s on the two cores), **peak RSS {rss} GiB** (reached in {peak_claim}), "
               "within the budget of a GPT-2-small run (≤ {budget_min} min, ≤ {budget_gib} GiB,") + ANY
     + _scale_rows()),
    (PERF, "gpt2-small scale run, its record's peak", P.scale_gpt2_small,
     passage("**peak RSS {rss_rec} GiB** (reached in 5.1), within the budget")),
    (PERF, "gpt2-small, the earlier runs", P.scale_gpt2_small_earlier,
     passage("the earlier loaded runs ({early_wall} s wall, {early_rss} GiB; run log") + ANY
     + passage("(a gpt2-small stack is {stack_gib} GiB in float64,") + ANY
     + passage("checks the interpolation: {interp21} in Claim 2.1, {interp31} in Claim 3.1, against a tolerance of "
               "{ten}(d + 4d)u "
               "= {interp_tol})") + ANY
     + passage("(other jobs, load {loaded_lo}–{loaded_hi}), with the release but before the affine blocks, took "
               "{loaded_wall_min} min wall, {loaded_cpu} CPU-s, peak RSS {loaded_rss} GiB (run")),
    (PERF, "jacobian_apply at gpt2-small", P.jacobian_apply,
     passage("at T = 1024, d = 768, L = 12: relative error {err}, tolerance κ·γ = {tol}.")),
    (PERF, "J·V against jvp at GPT-2 width", P.jv_table,
     passage("| {T256} | {jvp256} | {once256} | {apply256} | {total256} | {ratio256} | {load256} |") + r"\s*"
     + passage("| {T1024} | {jvp1024} | {once1024} | {apply1024} | {total1024} | {ratio1024} | {load1024} |") + r"\s*"
     + passage("| {T4096} | {jvp4096} (one layer × {layers}) | {once4096} | {apply4096} | {total4096} | {ratio4096} | "
               "{load4096} |") + ANY
     + passage("over 256…4096): jvp {slope_jvp} (T² d") + ANY + passage("the factorised application {slope_apply} "
               "(O(T d²);")
     + ANY + passage("The T = 4096 jvp peaked at {rss4096} GiB RSS for one layer; the dense `jacrev` baseline ((Td)² "
                     "float64 = {dense_gib} GiB at T = 256)")),
    (PERF, "GPU scale limits", P.gpu_limits,
     passage("float64 (`--device cuda`, {scale_lo}–{scale_hi} s each, JSON per run;")),
    (PERF, "profile of --scale ci", P.profile_ci,
     passage("this 2-core VM at load average {lo}–{hi} with seven other jobs, so the {wall} s wall is load,") + ANY
     + passage("Self CPU {self} s:") + ANY
     + passage("| `aten::bmm` | {bmm_s} s | {bmm_share} % | {bmm_calls} |") + r"\s*"
     + passage("| `aten::_softmax` | {softmax_s} s | {softmax_share} % | {softmax_calls} |") + r"\s*"
     + passage("| `aten::mm` | {mm_s} s | {mm_share} % | {mm_calls} |") + r"\s*"
     + passage("| `aten::_linalg_svd` (from `matrix_norm(ord=2)`) | {svd_s} s | {svd_share} % | {svd_calls} |") + r"\s*"
     + passage("| `aten::mul` / `add` / `div` | {elementwise_s} s | {elementwise_share} % | {elementwise_calls} |")
     + r"\s*" + passage("| `aten::copy_` | {copy_s} s | {copy_share} % | {copy_calls} |") + r"\s*"
     + passage("| `aten::_linalg_eigh` | {eigh_s} s | {eigh_share} % | {eigh_calls} |") + ANY
     + passage("`aten::item` ran {item_calls} times for {item_s} s in all") + ANY
     + passage("is the {svd_calls2} exact spectral norms (`torch.linalg.matrix_norm(..., ord=2)`, an SVD each, "
               "{svd_each} s apiece here)")),
    (PERF, "device factories", P.device_factories,
     passage("tensor factories without `device=` ({calls} calls in 1 file are still pending") + ANY
     + passage("all {claims} on-stack claims it runs pass (Claim 1.1 is left out for its cost, {minutes} min under "
               "load;")),
    (PERF, "1.1's reference on the host", P.dop853,
     passage("DOP853 (SciPy, adaptive, rtol {rtol}, atol {atol} at scale)") + ANY
     + passage("to the device and back, {stages} evaluations per step")),
    (PERF, "CPU-seconds, 2026-12-04", P.cpu_2026_12_04,
     passage("with seven other jobs running (load average {lo}–{hi}, so wall times are not comparable with the idle "
             "{idle_wall_min} min {idle_wall_sec} s above): **{claims_cpu} CPU-s in the claims**, {wall} s wall, peak "
             "RSS {rss} GiB")),
    (PERF, "spectral norms: the profiles", P.spectral_profiles,
     passage("12 heads ({cp_wall} s; run log") + ANY
     + passage("3.1's {calls} calls of `torch.linalg.matrix_norm(ord=2)` (a full SVD per d×d block: {svd_s} s)") + ANY
     + passage("the aligned control: {eig_s} s); then the layer draws (`randn`, {randn_s} s,") + ANY
     + passage("L = 4 gives {tp_wall} s") + ANY
     + passage("`copy_` {share_copy} %, `bmm` {share_bmm} %, `mul` {share_mul} %, `mm` {share_mm} %, `add` "
               "{share_add} %, `sub`/`div` {share_sub} % each")),
    (PERF, "spectral norms: before and after", P.before_after_2026_12_07,
     passage("in one session (from {hour}:{minute} UTC, load {lo}–{hi},") + ANY
     + passage("Claim 3.1 {w31_before} s wall ({c31_before} CPU-s) → {w31_after} s ({c31_after} CPU-s), Claim 5.1 "
               "{w51_before} s "
               "({c51_before} CPU-s) → {w51_after} s ({c51_after} CPU-s)") + ANY
     + passage("(`/usr/bin/time -v`, {all_hour}:{all_minute}–{end_hour}:{end_minute} UTC, load {all_hi} at the start "
               "and {all_lo} at the end,") + ANY
     + passage("**{all_wall_min} min {all_wall_sec} s wall**, user {all_user} s + system {all_sys} s, peak RSS "
               "{all_rss} GiB; in the claims {claims_s} s wall, **{claims_cpu} CPU-s**") + ANY
     + passage("the jvp passes of 1.2 and 2.1 ({jvp_cpu} CPU-s)")),
]


# ---- Summary log and Method: each paragraph's text, its numbers as {name:format} (the precision it is quoted at) --
INTRO = ("Bench numbers from `fastslow bench --quick`, rerun on 2026-12-07 (record `docs/bench/quick.json`, run log "
         "`bench-quick-2026-12-07`: {wall_min:d} min {wall_sec:d} s wall on the shared 2-core AMD EPYC VM at load "
         "average "
         "{lo:.1f}–{hi:.1f}, other helpers running; torch 2.13.0+cpu, no GPU; reproduce with `fastslow bench --quick "
         "--json out/bench.json`). Under load the absolute times are longer than an idle machine's; each ratio is "
         "timed "
         "against its baseline in the same run, so it is the number to read. The other bullets are dated.")
JAC = ("- **Factorised vs dense Jacobian** (the full (Td)×(Td) Jacobian at the reference, T = 32, d = 64, L = 12, 4 "
       "heads, float64, agreement {err:.1e}): **{speedup:.0f}×** faster than `torch.func.jacrev` ({dense:.1f} s vs "
       "{fact_ms:.0f} ms; {speedup64:.0f}× at T = 64 in the full-size section, `docs/bench/jacobian-full.json`); "
       "peak-RSS increment {inc_f:.0f} MB vs {inc_d:.0f} MB.")
GEN = ("- **Generated vs hand-written** mode block `G_layer`, 1024 layers, timed in alternation: ratio "
       "**{gen_ratio:.2f} "
       "at d = 32** (quick) and **{gen64:.2f} at d = 64** (full size, `docs/bench/codegen-full.json`), down from more "
       "than twice the hand-written time once the printer learnt to keep diag(v) a broadcast (also through CSE), to "
       "order matrix chains at stated sizes, and to print outer products and traces of rank-one chains without d×d "
       "temporaries. Generated/sympytorch {sympy:.2f} and generated/`lambdify` {lambdify:.2f} on the LN Jacobian "
       "(d = 4), the largest piece those tools can express.")
TIMINGS = ("- **2026-12-04, fresh clones, idle 2-core VM** (`docs/timings.json`): `.ci/run` on 436a04b {ci_min:d} min "
           "{ci_sec:d} s wall (install, `derive --check`, {tests:,.0f} tests in {suite_min:d} min {suite_sec:d} s, "
           "then "
           "the {linalg:.0f} `linalg` tests under `MKL_CBWR=AVX512` in {lin_min:d} min {lin_sec:d} s); `fastslow "
           "reproduce` on a8901e7 {rep_min:d} min {rep_sec:d} s after a {inst_min:d} min {inst_sec:d} s install (check "
           "{check:.0f} s, grid {grid:.0f} s, scale {scale:.0f} s, figures {figures:.0f} s, report {report:.0f} s). "
           "`fastslow --help`: {help:.2f} s (2026-12-07 at load {help_lo:.1f}–{help_hi:.1f}, run log `cli-help`).")
DERIVE = ("- **derive** (the quick bench): {cold:.0f} s cold, {warm:.0f} s warm, at the bench's load; see Quick start "
          "for the steps of `fastslow reproduce`.")
GPU = ("- GPU run: `bash benchmarks/gpu_check.sh OUT_DIR cuda` (`benchmarks/gpu_check.py`) runs, each step under its "
       "own time limit within an {budget_min:.0f}-minute budget, the ledger at the thorough profile, every on-stack "
       "claim at toy size on the device (`pytest -m cuda tests/test_device_factories.py`), `fastslow bench`, `check "
       "--scale` at gpt2-small, gpt2-medium and gpt2-large in float32 and float64, and `import-hf` + `check --stack` "
       "on a 124M GPT-2 (`GPT2Config()`, random weights) at T = 1024; a failed or timed-out step is recorded and the "
       "next one runs. OUT_DIR/summary.json and summary.txt give per step the exit status, wall and CPU seconds, the "
       "share of host time (CPU seconds per wall second) and the peak GPU memory. The limits ({ledger:d} s ledger, "
       "{tests:d} s device tests, {bench:d} s bench, {scale_lo:d}–{scale_hi:d} s per scale run, {hf:d} s for the GPT-2 "
       "steps) start from the one H200 number on record, `check --scale gpt2-small` {h200:.1f} s against a "
       "{target:.0f} s target (run log `scale-gpt2-small-h200`, transcribed): a step over its limit is a finding, not "
       "a crash. It has not been run on a GPU from this session: none was lent.")
SCALE = ("- **Scale** (`fastslow check --scale gpt2-small --json out/scale.json`; presets toy, ci, gpt2-small, "
         "gpt2-medium, gpt2-large; matrix-free, see [docs/performance.md § Scale](performance.md#scale)): at T = 1024, "
         "d = 768, L = 12, 12 heads, float64, **all {n:d} scale claims verified** with their controls failing as "
         "predicted, in **{wall_min:d} min {wall_sec:d} s wall, peak RSS {rss:.1f} GiB** (budget ≤ {budget_min:.0f} "
         "min, ≤ {budget_gib:.0f} GiB; 2026-12-03, this 2-core VM with every other job paused; {cpu:.0f} CPU-s over "
         "the two cores; per claim {c_lo:.0f}–{c_hi:.0f} s, the largest 5.1's slow-mode certificate); "
         "`jacobian_apply` matches `torch.func.jvp` to **{err:.1e}** (tolerance {tol:.1e}). The recorded run is "
         "`docs/scale/gpt2-small.json`. Under load the same command takes several times longer ({loaded_wall_min:d} "
         "min at load {loaded_lo:.0f}–{loaded_hi:.0f}): the budget is an idle-machine number. `--scale ci` (T = 256, "
         "d = 64, L = 6) runs in CI: {ci_s:.0f} s in the quick bench at load {ci_load:.1f}.")
JV = ("- **Factorised J·V vs `torch.func.jvp`** (d = 768, L = 12, one probe, 2026-12-03 at load {load1024:.1f}–"
      "{load256:.1f}; transcribed, see § Scale): T = 256: jvp {jvp256:.0f} s, factorised {apply256:.1f} s per "
      "application + {once256:.0f} s once for the coefficients K_m; T = 1024: jvp {jvp1024:.0f} s, application "
      "{apply1024:.2f} s + {once1024:.0f} s once (jvp / application = {ratio256:.0f}× and {ratio1024:.0f}×). T = 4096: "
      "one layer's jvp × {layers:d} = {jvp4096:.0f} s, application {apply4096:.1f} s + {once4096:.0f} s once "
      "({ratio4096:.0f}×); growth with T: jvp slope {slope_jvp:.2f}, application {slope_apply:.2f}. The dense "
      "`jacrev` baseline does not fit at these sizes ((Td)² = {dense_gib:.0f} GiB at T = 256).")
FACT = ("Relative error at T = 32: {err:.1e} (tolerance {tol:.0e}). Measured on 2026-12-07 by `fastslow bench --quick` "
        "(T ≤ 32) and by the full-size section alone (T = 64 … 512: `benchmarks.jacobian.run` at full size, record "
        "`docs/bench/jacobian-full.json`, run log `bench-jacobian-full-2026-12-07`, {jf_wall_min:d} min "
        "{jf_wall_sec:d} "
        "s wall at load {jf_lo:.1f}–{jf_hi:.1f}) on the shared 2-core AMD EPYC VM ({mem_gb:.1f} GB, torch 2.13.0+cpu, "
        "{threads:d} torch threads, no GPU), other helpers running: the absolute times are longer than an idle "
        "machine's, the speedups less affected. Of the factorised time, {ff_ms:.0f} ms is the factored form (the "
        "reference "
        "trajectory, 12 layers' weights and the generated coefficient functions), the rest the assembly of the "
        "{out_mb:.0f} MB (T = 32) result, which is why the speedup grows with T. The factorised side is timed with "
        "{fr:.0f} repeats after {fw:.0f} warm-up calls: with one warm-up the first point of a fresh process once "
        "measured several times slower, the first-call costs of the process, not the method. The full run extends the "
        "curve to T = 512: dense times only where jacrev is run (CPU: T ≤ 64; CUDA: T ≤ 128), everything else marked "
        "`missing`, never extrapolated; above (Td)² · 8 B = 1 GiB (T > {t_max:d} at d = 64) the assembled J is not "
        "built and only the factored form (A^m, K_m) is timed (T = 512: {f512_ms:.0f} ms).")
TABLE = ("| T | dense jacrev (s) | factorised, assembled J (s) | speedup |\n| --- | --- | --- | --- |\n"
         "| {T8:d} | {dense8:.3f} | {fact8:.4f} | {speedup8:.0f}× |\n"
         "| {T16:d} | {dense16:.3f} | {fact16:.4f} | {speedup16:.0f}× |\n"
         "| **{T32:d}** | **{dense32:.2f}** | **{fact32:.4f}** | **{speedup32:.0f}×** |\n"
         "| {T64:d} | {dense64:.1f} (full size) | {fact64:.3f} (full size) | {speedup64:.0f}× (full size) |\n"
         "| {T128:d} | missing (jacrev not run: time budget) | {fact128:.3f} (full size) | missing |")
GENM = ("torch (`benchmarks/codegen_speed.py::handwritten_G_layer`), batched over 1024 layers, float64, outputs "
        "agreeing to within {agree:.0e} before anything is timed; the two are timed in alternation (generated, "
        "hand-written, "
        "generated, …; {rq:d} repeats quick, {rf:d} full, after {rw:.0f} warm-ups) so that load from elsewhere falls "
        "on both. **Ratio {gen_ratio:.2f} at d = 32** (quick: {gen_ms:.0f} ms vs {hand_ms:.0f} ms) and **{gen64:.2f} "
        "at d = 64** (full size: {gen64_ms:.0f} ms vs {hand64_ms:.0f} ms; the section alone, run log "
        "`bench-codegen-full-2026-12-07`, load {cf_lo:.1f}–{cf_hi:.1f}).")
REF = ("Before these rules the generated block took more than twice the hand-written time at both sizes. For "
       "reference, on the piece they can express (the LN Jacobian at d = 4 written out entry by entry), generated / "
       "sympytorch = {sympy:.2f} and generated / `lambdify(modules=\"torch\")` = {lambdify:.2f} (< 1: the generated "
       "code is faster); neither tool can express the matrix-level G_ℓ(λ) (sympytorch has no matrix nodes; SymPy's "
       "TorchPrinter cannot print `DiagMatrix`), and the entry-wise expansion of G_ℓ(λ) did not finish in {s300:.0f} "
       "s even at d = 2.")
MEM = ("**Derive, check, memory** (same quick run). Derive: cold {cold:.1f} s, warm {warm:.1f} s (every family, "
       "fresh processes). `fastslow check` quick, first claim of each family: {qid0:.1f} {qs0:.1f} s, {qid1:.1f} "
       "{qs1:.1f} s, {qid2:.1f} {qs2:.1f} s, {qid3:.1f} {qs3:.1f} s, {qid4:.1f} {qs4:.1f} s, {qid5:.1f} {qs5:.1f} s, "
       "{qid6:.1f} {qs6:.1f} s, {qid7:.1f} {qs7:.1f} s, {qid8:.1f} {qs8:.1f} s, {qid9:.1f} {qs9:.1f} s; every claim "
       "(the derive section alone at full size, `docs/bench/derive-full.json`, run log `bench-derive-full-2026-12-07`, "
       "load {df_lo:.1f}–{df_hi:.1f}): {all_s:.0f} s in all, the slowest {slow_id:.1f} ({slow_s:.1f} s). Memory at "
       "T = 32: peak RSS {peak_d:.0f} MB (dense) vs {peak_f:.0f} MB (factorised), ratio {peak_ratio:.2f}; over the "
       "process baseline (interpreter, torch, the stack) {inc_d:.0f} MB vs {inc_f:.0f} MB, ratio {inc_ratio:.1f} (the "
       "factorised increment is mostly the {out_mb:.0f} MB output).")


def _p(template: str) -> str:
    """The passage of a paragraph template (its format specs dropped)."""
    return passage(re.sub(r"\{(\w+):[^}]*\}", r"{\1}", template))


def _bench() -> dict:
    return {**P.quick_bench(), **P.full_sections()}


QUOTES += [
    (PERF, "summary: the quick bench run", P.quick_bench, _p(INTRO)),
    (PERF, "summary: factorised vs dense", _bench, _p(JAC)),
    (PERF, "summary: generated vs hand-written", _bench, _p(GEN)),
    (PERF, "summary: CI and reproduce timings", P.timings, _p(TIMINGS)),
    (PERF, "summary: derive", P.quick_bench, _p(DERIVE)),
    (PERF, "summary: GPU run", P.gpu_limits, _p(GPU)),
    (PERF, "summary: scale", P.scale_summary, _p(SCALE)),
    (PERF, "summary: J·V vs jvp", P.jv_table, _p(JV)),
    (PERF, "method: agreement tolerance", P.quick_bench, passage("The two must agree to {tol} relative")),
    (PERF, "method: the Jacobian curve", _bench, _p(TABLE) + r"\s*" + _p(FACT)),
    (PERF, "method: generated vs hand-written", _bench, _p(GENM)),
    (PERF, "method: reference tools", _bench, _p(REF)),
    (PERF, "method: derive, check, memory", _bench, _p(MEM)),
]

CI = ("* `--scale ci` (T = 256, d = 64, L = 6): {ci_s:.0f} s for all claims, peak RSS {ci_rss:.2f} GiB in the quick "
      "bench of 2026-12-07 (`docs/bench/quick.json`, load {ci_load:.1f} at its end); it is the CI run "
      "(`tests/test_scale.py`). `--scale ci --dtype float32`, rerun 2026-12-07 (`docs/bench/scale-ci-float32.json`, "
      "run log `scale-ci-float32-2026-12-07`, {f32_wall:.0f} s wall at load {f32_lo:.1f}–{f32_hi:.1f}): "
      "{f32_verified:d} of {f32_n:d} claims verified, the largest J·V error {f32_err:.1e} against the probabilistic "
      "tolerance {f32_tol:.0e}.")
SN = ("`python -m benchmarks.spectral_norms --quick`, rerun 2026-12-07 (`docs/bench/spectral-norms-quick.json`, run "
      "log `spectral-norms-quick-2026-12-07`, load {lo:.1f}–{hi:.1f}): at n = {n:d} the SVD takes {svd:.1f}× and the "
      "full `eigvalsh` {eig:.1f}× the time of `top_singular_value`, largest relative difference {diff:.1e} (bound "
      "4·n·u = {bound:.1e}).")

QUOTES += [
    (PERF, "scale: the ci runs", P.ci_runs, _p(CI)),
    (PERF, "spectral norms: the three routes", P.spectral_norms_rerun, _p(SN)),
]

SMOKE = ("`python -m benchmarks.gpu_check OUT --device cpu --smoke` runs the GPU script's steps at toy size on a "
         "CPU (summary with wall, CPU-s, host share, peak RSS and peak GPU memory per step); rerun on 2026-12-07 "
         "(run log `gpu-check-smoke-cpu-2026-12-07`, {wall_min:d} min {wall_sec:d} s wall at load "
         "{lo:.1f}–{hi:.1f}; its summary is `docs/bench/gpu-check-smoke.json`), all {passed:d} of its {n:d} steps "
         "passed "
         "within the {budget:.0f} s budget, in {w0:.1f}, {w1:.1f}, {w2:.1f}, {w3:.1f}, {w4:.1f}, {w5:.1f}, {w6:.1f}, "
         "{w7:.1f}, {w8:.1f}, {w9:.1f}, {w10:.1f} and {w11:.1f} s wall (the ledger, the device tests, bench, the six "
         "scale runs, the three GPT-2 steps).")

QUOTES += [(PERF, "gpu_check smoke run", P.smoke, _p(SMOKE))]
