"""Cost of the fast path vs the slow path (Claim 6.3): exact matmul FLOPs and CPU timings.

The FLOP model is derived in ``theory/slow_manifold.py`` (``cost_model``) and
generated; here it is evaluated, compared with torch's own count on the real
modules (``numerics.stacks.stack.Attention`` over T tokens, ``numerics.stacks.stack.SlowPath`` over
n = T/P block tokens), and the modules are timed.  FLOPs follow FlopCounterMode's
convention: 2·m·k·n per (m×k)(k×n) product, elementwise work not counted.
"""

from __future__ import annotations

import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from numerics.generated import slow_manifold as gen
from numerics.stacks.spec import StackSpec


def _positive(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")


def paths(T: int, P: int, d: int, heads: int, seed: int = 0, device=None, dtype=torch.float64):
    """(fast Attention, SlowPath) of one random hierarchical layer (docs/theory.md §0)."""
    for name, v in (("T", T), ("P", P), ("d", d), ("heads", heads)):
        _positive(v, name)
    layer = StackSpec.of(T=T, d=d, layers=1, heads=heads, kernel="causal", P=P, seed=seed, device=device, dtype=dtype).build().layers[0]
    return layer.attn, layer.slow


def counted_flops(module: torch.nn.Module, x: torch.Tensor) -> int:
    """torch's FlopCounterMode total for one forward pass of ``module`` on ``x``."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        module(x)
    return int(counter.get_total_flops())


def model_flops(T: int, P: int, d: int) -> dict[str, float]:
    """The generated FLOP model at (T, P, d): fast/slow totals and their parts, and the ratios."""
    t, p, dd = (torch.tensor(float(v), dtype=torch.float64, device="cpu") for v in (T, P, d))  # a FLOP model: CPU scalars
    out = {"fast_attention": gen.flops_fast_attention(t, dd), "slow_attention": gen.flops_slow_attention(t, p, dd),
           "fast_scores_mixing": gen.flops_fast_scores_mixing(t, dd),
           "slow_scores_mixing": gen.flops_slow_scores_mixing(t, p, dd),
           "fast_projections": gen.flops_fast_projections(t, dd),
           "slow_projections": gen.flops_slow_projections(t, p, dd),
           "ratio_attention": gen.flops_ratio_attention(t, p, dd)}
    return {k: float(v) for k, v in out.items()}


def counted_parts(module_at, T: int, P: int, x_dtype=torch.float64) -> dict[str, int]:
    """Counted FLOPs of a real attention module split into its projections (linear in the token
    count) and its scores + mixing (quadratic): ``module_at(T')`` returns the module for T' tokens;
    counts at T and at T/2 (2T when T/2 is not a multiple of P) solve c(T) = a·T + b·T² exactly."""
    T2 = T // 2 if (T // 2) % P == 0 and T // 2 >= P else 2 * T
    counts = {}
    for t in (T, T2):
        module, d = module_at(t)
        counts[t] = counted_flops(module, torch.zeros(t, d, dtype=x_dtype, device=next(module.parameters()).device))
    r = T2 / T
    quadratic = (counts[T2] - r * counts[T]) / (r * r - r)  # b·T²
    quadratic = int(round(quadratic))
    return {"total": counts[T], "scores_mixing": quadratic, "projections": counts[T] - quadratic}


def compare_parts(fast_at, slow_at, T: int, P: int, d: int) -> dict:
    """Counted FLOPs of a fast and a slow attention module (``fast_at(T')``/``slow_at(T')`` build
    them for T' tokens) against the generated model, in total and by part (projections; scores
    and mixing).  ``error`` is the largest integer mismatch (0 expected), ``ratio_error`` the
    relative error of the whole-attention ratio."""
    fast = counted_parts(lambda t: (fast_at(t), d), T, P)
    slow = counted_parts(lambda t: (slow_at(t), d), T, P)
    model = model_flops(T, P, d)
    row = {"T": T, "P": P, "d": d}
    for path, counted in (("fast", fast), ("slow", slow)):
        row[f"counted_{path}"], row[f"model_{path}"] = counted["total"], model[f"{path}_attention"]
        for part in ("scores_mixing", "projections"):
            row[f"counted_{path}_{part}"] = counted[part]
            row[f"model_{path}_{part}"] = model[f"{path}_{part}"]
    row["error"] = max(abs(row[f"counted_{key}"] - row[f"model_{key}"]) for key in
                       ("fast", "slow", "fast_scores_mixing", "slow_scores_mixing",
                        "fast_projections", "slow_projections"))
    row["ratio"] = fast["total"] / slow["total"]
    row["model_ratio"] = model["ratio_attention"]
    row["ratio_error"] = abs(row["ratio"] / row["model_ratio"] - 1)
    # None where the slow part counts nothing (d = 1: torch's einsum runs projections uncounted)
    row["ratio_scores_mixing"] = fast["scores_mixing"] / slow["scores_mixing"] if slow["scores_mixing"] else None
    row["ratio_projections"] = fast["projections"] / slow["projections"] if slow["projections"] else None
    return row


def flop_comparison(T: int, P: int, d: int, heads: int, seed: int = 0) -> dict:
    """``compare_parts`` on one random hierarchical layer's Attention and SlowPath."""
    for name, v in (("T", T), ("P", P), ("d", d), ("heads", heads)):
        _positive(v, name)
    built = {}

    def paths_at(t):  # one layer per token count, shared by both paths
        if t not in built:
            built[t] = paths(t, P, d, heads, seed)
        return built[t]

    row = compare_parts(lambda t: paths_at(t)[0], lambda t: paths_at(t)[1], T, P, d)
    return {**row, "heads": heads}


def time_module(module: torch.nn.Module, x: torch.Tensor, repeats: int = 20) -> float:
    """Best-of-``repeats`` wall time (s) of one forward pass, after two warm-up calls.

    The minimum, not the median: on a shared CPU the other processes only ever add time.
    """
    _positive(repeats, "repeats")
    times = []
    with torch.no_grad():
        module(x)
        module(x)
        for _ in range(repeats):
            if x.is_cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            module(x)
            if x.is_cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    return min(times)


def timing_ratio(T: int, P: int, d: int, heads: int, repeats: int = 20, device=None,
                 dtype=torch.float32, seed: int = 0) -> dict:
    """Measured time(fast attention on T tokens) / time(slow path on T/P block tokens), one run."""
    fast, slow = paths(T, P, d, heads, seed, device=device, dtype=dtype)
    x = torch.randn(T, d, generator=torch.Generator().manual_seed(seed), device="cpu").to(device=fast.W_Q.device, dtype=dtype)
    t_fast, t_slow = time_module(fast, x, repeats), time_module(slow, x, repeats)
    return {"T": T, "P": P, "d": d, "heads": heads, "t_fast": t_fast, "t_slow": t_slow,
            "ratio": t_fast / t_slow}


def cost_sweep(quick: bool, device=None) -> dict:
    """Fast/slow ratios vs P in one run: counted and modelled FLOPs (total and parts), CPU/GPU time.

    quick: T = 512, d = 32, P = 2 … 32, best of 5; else T = 2048, d = 64, P = 2 … 64, best of 20.
    """
    T, d, heads = (512, 32, 4) if quick else (2048, 64, 4)
    Ps = (2, 4, 8, 16, 32) if quick else (2, 4, 8, 16, 32, 64)
    repeats = 5 if quick else 20
    rows = []
    for P in Ps:
        flops = flop_comparison(T, P, d, heads)
        model = model_flops(T, P, d)
        timing = timing_ratio(T, P, d, heads, repeats=repeats, device=device)
        rows.append({"P": P, "flop_ratio_counted": flops["ratio"], "flop_ratio_model": flops["model_ratio"],
                     "flop_model_error": flops["error"],
                     "flop_ratio_scores_mixing": model["fast_scores_mixing"] / model["slow_scores_mixing"],
                     "flop_ratio_projections": model["fast_projections"] / model["slow_projections"],
                     "t_fast_s": timing["t_fast"], "t_slow_s": timing["t_slow"], "time_ratio": timing["ratio"]})
    return {"T": T, "d": d, "heads": heads, "device": str(device or "cpu"),
            "threads": torch.get_num_threads(), "repeats": repeats, "rows": rows}
