"""Passages of docs/performance.md tied to the records and run-log entries that produced their numbers
(``tests/test_docs_numbers.py``'s ``QUOTES``, same shape: doc, passage name, the function that regenerates the
values, the pattern); the functions are ``tests/docs_ties_performance.py``'s."""

from __future__ import annotations

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
     + passage("checks the interpolation: {interp21} in 2.1, {interp31} in 3.1, against a tolerance of {ten}(d + 4d)u "
               "= {interp_tol})") + ANY
     + passage("(other jobs, load {loaded_lo}–{loaded_hi}), with the release but before the affine blocks, took "
               "{loaded_wall_min} min wall, {loaded_cpu} CPU-s, peak RSS {loaded_rss} GiB (run")),
    (PERF, "jacobian_apply at gpt2-small", P.jacobian_apply,
     passage("at T = 1024, d = 768, L = 12: relative error {err}, tolerance κ·γ = {tol}.")),
    (PERF, "J·V against jvp at GPT-2 width", P.jv_table,
     passage("| 256 | {jvp256} | {once256} | {apply256} | {total256} | {ratio256} | {load256} |") + r"\s*"
     + passage("| 1024 | {jvp1024} | {once1024} | {apply1024} | {total1024} | {ratio1024} | {load1024} |") + r"\s*"
     + passage("| 4096 | {jvp4096} (one layer × {layers}) | {once4096} | {apply4096} | {total4096} | {ratio4096} | "
               "{load4096} |") + ANY
     + passage("over 256…4096): jvp {slope_jvp} (T² d") + ANY + passage("the factorised application {slope_apply} (O(T d²);")
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
     + passage("all {claims} on-stack claims it runs pass (1.1 is left out for its cost, {minutes} min under load;")),
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
     + passage("3.1 {w31_before} s wall ({c31_before} CPU-s) → {w31_after} s ({c31_after} CPU-s), 5.1 {w51_before} s "
               "({c51_before} CPU-s) → {w51_after} s ({c51_after} CPU-s)") + ANY
     + passage("(`/usr/bin/time -v`, {all_hour}:{all_minute}–{end_hour}:{end_minute} UTC, load {all_hi} at the start "
               "and {all_lo} at the end,") + ANY
     + passage("**{all_wall_min} min {all_wall_sec} s wall**, user {all_user} s + system {all_sys} s, peak RSS "
               "{all_rss} GiB; in the claims {claims_s} s wall, **{claims_cpu} CPU-s**") + ANY
     + passage("the jvp passes of 1.2 and 2.1 ({jvp_cpu} CPU-s)")),
]
