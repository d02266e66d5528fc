"""Benchmark: the whole stack's Jacobian at the token-homogeneous reference, factorised vs dense.

The compared object is the same on both sides: the (Td)×(Td) matrix
J = ∂ vec(X_L) / ∂ vec(X_0) (row-major vec) at X_0 = 1x̄ᵀ, float64.

* **dense**: ``numerics.linearised.jacobians.stack_jacobian`` (``torch.func.jacrev``) of the stack (the best of a few chunk sizes), i.e. Td
  vector-Jacobian products through all L layers.
* **factorised** (Claim 2.3, no eigenvectors): ``numerics.families.factorisation.polynomial_coefficients``
  (the reference trajectory x̄_ℓ token-wise, each layer's affine mode map G_ℓ(λ) from the
  generated coefficient functions, G(λ) = G_{L−1}(λ)⋯G_0(λ) = Σ_m λ^m K_m multiplied out),
  then the assembly J = Σ_m A^m ⊗ K_m with the frozen kernel A as one (T², L+1) × (L+1, d²)
  product and one permute (``numerics.families.factorisation.polynomial_jacobian`` spells it as L+1
  Kronecker products, each a (Td)² temporary; the result is the same matrix).
  Its cost is O(L² d³ + L T³ + L T² d²) against the dense O(T d · L · T d²)-and-more.

Both are checked against each other (relative Frobenius error ≤ 1e-10) before any time is
reported.  Valid for gate 0 (or no slow path) and a kernel common to every head (causal).
"""

from __future__ import annotations

import math
import statistics

import torch

from benchmarks.timing import median_time, time_once
from numerics.stacks.spec import StackSpec
from numerics.linearised.jacobians import stack_jacobian
from numerics.linearised.matrix_free import reference_state

HEADLINE = {"T": 32, "d": 64, "layers": 12, "heads": 4, "kernel": "causal", "dtype": "float64"}
RELATIVE_TOLERANCE = 1e-10  # float64 rounding × the depth/width of the products (observed ~1e-15)
ASSEMBLED_LIMIT_BYTES = 2**30  # an assembled (Td)×(Td) float64 J above this is not built (peak ≈ 2×: GEMM + permute)
QUICK_CURVE = (8, 16, 32, 64)
FULL_CURVE = (8, 16, 32, 64, 128, 256, 512)


def benchmark_stack(T: int, d: int, layers: int, heads: int, device: str, seed: int = 0):
    """A random causal stack (no slow path) with frozen parameters, and a reference token x̄."""
    stack = StackSpec.of(T=T, d=d, layers=layers, heads=heads, kernel="causal", seed=seed, dtype="float64", device=device).build()
    for p in stack.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed + 1)
    xbar = torch.randn(d, generator=gen, dtype=torch.float64).to(device)
    return stack, xbar


# ---- factorised ----------------------------------------------------------------------------
def factored_form(stack, xbar: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(A^0..A^L (L+1, T, T), K_0..K_L (L+1, d, d)): the Jacobian in its polynomial form
    (``numerics.families.factorisation``: generated G_ℓ(λ) coefficients multiplied out in depth order)."""
    from numerics.families import factorisation
    K = factorisation.polynomial_coefficients(stack, xbar)
    return kernel_powers(factorisation.common_kernel(stack).to(K.dtype), K.shape[0] - 1), K


def kernel_powers(A: torch.Tensor, degree: int) -> torch.Tensor:
    """A^0 .. A^degree, shape (degree+1, T, T)."""
    powers = [torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)]
    for _ in range(degree):
        powers.append(A @ powers[-1])
    return torch.stack(powers)


def assemble(powers: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """J = Σ_m A^m ⊗ K_m as the (Td)×(Td) matrix (row-major vec), written in place by one
    batched product: block row (t, i) is Σ_m (A^m)[t, :]ᵀ K_m[i, :], a (T × M)(M × d) product,
    so J[t, i, s, j] is produced in its final layout (no transposing copy of the Td × Td result)."""
    M, T, _ = powers.shape
    d = K.shape[-1]
    return (powers.permute(1, 2, 0)[:, None] @ K.permute(1, 0, 2)[None]).reshape(T * d, T * d)


def factorised_jacobian(stack, xbar: torch.Tensor) -> torch.Tensor:
    """The stack's Jacobian at 1x̄ᵀ through the factorisation, shape (Td, Td)."""
    powers, K = factored_form(stack, xbar)
    return assemble(powers, K)


def relative_error(J: torch.Tensor, J_ref: torch.Tensor) -> float:
    """‖J − J_ref‖_F / ‖J_ref‖_F."""
    return float(torch.linalg.norm(J - J_ref) / torch.linalg.norm(J_ref))


# ---- the benchmark -------------------------------------------------------------------------
def _assembled_fits(T: int, d: int) -> bool:
    return (T * d) ** 2 * 8 <= ASSEMBLED_LIMIT_BYTES


def _best_dense(stack, xbar, device, chunks, repeats) -> tuple[dict, int, torch.Tensor]:
    """Time every chunk size once, then the best one until it has ``repeats`` runs (median)."""
    by_chunk, best, J = {}, None, None
    for chunk in chunks:
        seconds, out = time_once(lambda: stack_jacobian(stack, reference_state(stack, xbar), chunk), device)
        by_chunk[chunk] = [seconds]
        if best is None or seconds < by_chunk[best][0]:
            best, J = chunk, out
    for _ in range(repeats - 1):
        seconds, J = time_once(lambda: stack_jacobian(stack, reference_state(stack, xbar), best), device)
        by_chunk[best].append(seconds)
    runs = by_chunk[best]
    return ({"median": statistics.median(runs), "runs": runs,
             "by_chunk": {str(c): min(v) for c, v in by_chunk.items()}}, best, J)


def _warm_up(device: str) -> None:
    """One tiny run of both paths so that first-call costs (vmap, allocator) are not timed."""
    stack, xbar = benchmark_stack(4, 8, 2, 2, device)
    stack_jacobian(stack, reference_state(stack, xbar), 8)
    factorised_jacobian(stack, xbar)


def measure(T: int, d: int, layers: int, heads: int, device: str, *, chunks, repeats: int,
            dense: bool = True) -> dict:
    """One point: factorised (and, when ``dense``, jacrev) timings, accuracy and speedup."""
    stack, xbar = benchmark_stack(T, d, layers, heads, device)
    row = {"T": T, "d": d, "layers": layers, "heads": heads,
           "compared": "assembled (Td)x(Td) Jacobian" if _assembled_fits(T, d)
           else "factored form (A^m, K_m) only: the assembled J exceeds the memory limit"}
    # the factorised side costs milliseconds: many repeats after a generous warm-up, so that the
    # first-call costs of a fresh process (thread pool, allocator, page faults) are not timed
    fact_repeats, fact_warmup = max(repeats, 11), 3
    row["factored_form_seconds"] = median_time(lambda: factored_form(stack, xbar), device,
                                               repeats=fact_repeats, warmup=fact_warmup)["median"]
    if not _assembled_fits(T, d):
        row.update(factorised_seconds=None, dense_seconds=None, speedup=None, relative_error=None,
                   missing="assembled J > %.0f GiB" % (ASSEMBLED_LIMIT_BYTES / 2**30))
        return row
    fact = median_time(lambda: factorised_jacobian(stack, xbar), device, repeats=fact_repeats,
                       warmup=fact_warmup)
    row["factorised_seconds"] = fact["median"]
    if not dense:
        row.update(dense_seconds=None, speedup=None, relative_error=None,
                   missing="dense jacrev not run at this size (time budget)")
        return row
    dense_t, best, J_dense = _best_dense(stack, xbar, device, chunks, repeats)
    J_fact = factorised_jacobian(stack, xbar)
    err = relative_error(J_fact, J_dense)
    if not err <= RELATIVE_TOLERANCE:
        raise AssertionError(f"factorised and dense Jacobians differ at T={T}: relative error "
                             f"{err:.2e} > {RELATIVE_TOLERANCE:.0e}; no timing is reported")
    row.update(dense_seconds=dense_t["median"], dense_runs=dense_t["runs"], best_chunk_size=best,
               dense_seconds_by_chunk=dense_t["by_chunk"], factorised_runs=fact["runs"],
               speedup=dense_t["median"] / fact["median"], relative_error=err)
    return row


def run(quick: bool, device: str, progress=None) -> dict:
    """The ``factorised_vs_dense_jacobian`` section: the headline point and the curve over T."""
    _warm_up(device)
    cfg = HEADLINE
    chunks = (64,) if quick else (32, 64, 128, 256)  # quick: the best chunk of the full search on CPU
    repeats = 3 if quick else 5
    head = measure(cfg["T"], cfg["d"], cfg["layers"], cfg["heads"], device, chunks=chunks,
                   repeats=repeats)
    if progress:
        progress(f"T={cfg['T']} speedup {head['speedup']:.0f}x")
    curve_T = QUICK_CURVE if quick else FULL_CURVE
    # jacrev beyond these T costs minutes per run (quick: T=64 alone would take most of its budget)
    dense_limit = 32 if quick else 64 if device == "cpu" else 128
    curve = []
    for T in curve_T:
        if T == cfg["T"]:
            point = head
        else:
            point = measure(T, cfg["d"], cfg["layers"], cfg["heads"], device,
                            chunks=(head["best_chunk_size"],), repeats=1 if T >= 64 else repeats,
                            dense=T <= dense_limit)
        curve.append({k: point.get(k) for k in ("T", "speedup", "dense_seconds", "factorised_seconds",
                                                "factored_form_seconds", "relative_error", "compared",
                                                "missing") if k in point})
        if progress:
            progress(f"curve T={T}")
    return {
        "speedup": head["speedup"],
        "dense_seconds": head["dense_seconds"],
        "factorised_seconds": head["factorised_seconds"],
        "relative_error": head["relative_error"],
        "tolerance": RELATIVE_TOLERANCE,
        "compared_quantity": "the assembled (Td)x(Td) float64 Jacobian d vec(X_L)/d vec(X_0) "
                             "(row-major vec) at X_0 = 1 xbar^T, produced in full by both methods",
        "dense_method": "torch.func.jacrev of the stack, best chunk size of " + str(list(chunks)),
        "factorised_method": "numerics.families.factorisation.polynomial_coefficients (generated G_l(lambda) "
                             "coefficients multiplied out), J = sum_m A^m kron K_m assembled by one GEMM",
        "config": {**cfg, "best_chunk_size": head["best_chunk_size"], "repeats": repeats,
                   "dense_seconds_by_chunk": head["dense_seconds_by_chunk"],
                   "dense_runs": head["dense_runs"], "factorised_runs": head["factorised_runs"],
                   "factored_form_seconds": head["factored_form_seconds"]},
        "curve": curve,
    }


# ---- memory cases (run by benchmarks.timing.measure_memory in a fresh process) ----------------
def memory_case(kind: str, T: int, d: int, layers: int, heads: int, chunk_size: int, device: str):
    """A zero-argument callable computing one Jacobian (``kind``: dense | factorised)."""
    if kind not in ("dense", "factorised"):
        raise ValueError(f"kind={kind!r} must be 'dense' or 'factorised'")
    stack, xbar = benchmark_stack(T, d, layers, heads, device)
    if kind == "dense":
        return lambda: stack_jacobian(stack, reference_state(stack, xbar), chunk_size)
    return lambda: factorised_jacobian(stack, xbar)


def run_memory(quick: bool, device: str, chunk_size: int = 64) -> dict:
    """Peak RSS (and CUDA peak) of the dense vs factorised Jacobian, each in a fresh process."""
    from benchmarks.timing import measure_memory

    cfg = {k: HEADLINE[k] for k in ("T", "d", "layers", "heads")}
    out = {}
    for kind in ("dense", "factorised"):
        out[kind] = measure_memory("benchmarks.jacobian:memory_case",
                                   {"kind": kind, **cfg, "chunk_size": chunk_size}, device=device)
    result = {
        "dense_peak_rss_mb": out["dense"]["peak_rss_mb"],
        "factorised_peak_rss_mb": out["factorised"]["peak_rss_mb"],
        "ratio": out["dense"]["peak_rss_mb"] / out["factorised"]["peak_rss_mb"],
        "dense_increment_mb": out["dense"]["increment_mb"],
        "factorised_increment_mb": out["factorised"]["increment_mb"],
        "increment_ratio": (out["dense"]["increment_mb"] / out["factorised"]["increment_mb"]
                            if out["factorised"]["increment_mb"] > 0 else math.inf),
        "baseline_rss_mb": {k: v["baseline_rss_mb"] for k, v in out.items()},
        "output_mb": (cfg["T"] * cfg["d"]) ** 2 * 8 / 2**20,
        "config": {**cfg, "chunk_size": chunk_size},
        "definition": "peak RSS of a fresh process that builds the stack and computes one Jacobian; "
                      "increment = peak minus the peak before the Jacobian (interpreter, torch, stack)",
    }
    if device != "cpu":
        result["dense_cuda_peak_mb"] = out["dense"]["cuda_peak_mb"]
        result["factorised_cuda_peak_mb"] = out["factorised"]["cuda_peak_mb"]
    return result
