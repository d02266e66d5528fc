"""Measure (c) of the depth study: the finite-time singular spectrum of the stack's Jacobian in LN-invariant
coordinates (docs/depth_study.md).

Φ = J_{L−1} ⋯ J_0 is the Jacobian of the whole stack at a held-out window (row-major vec: index t·d + i).
Two kinds of direction are invisible downstream:
- adding c·1 to a token's state passes every layer unchanged (each sublayer reads LN(x), and LN(x + c1) =
  LN(x)), so the per-token mean directions M form an invariant subspace on which Φ is the identity, and the
  final LN ignores them;
- the final LN also ignores a rescaling of each output token, i.e. its centred direction.

The spectrum is that of P_out Φ P_in. P_in projects out M. P_out projects out M and the output tokens'
centred directions. This is the map induced on the quotients, with orthogonal complements as coordinates.
It has rank at most T·d − 2T, and its largest T·d − 2T singular values are returned.

From the spectrum σ₁ ≥ … ≥ σ_n, :func:`gap` returns the largest log-gap g = max_k ln(σ_k/σ_{k+1}) over
k ≤ 0.9 n and its position. Over the depth time t = L·h the decaying bundle then contracts by e^{−g}
relative to the persistent one, so the implied depth-wise ε is L·h/g.
"""

from __future__ import annotations

import math

import torch
from torch.func import jvp, vmap

GAP_RANGE = 0.9  # the gap is searched among the top 90 % of the spectrum (the tail is the rounding floor)


def mean_projector(T: int, d: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """P_in (T·d, T·d): the orthogonal projector off the per-token mean directions e_t ⊗ 1/√d."""
    eye_d = torch.eye(d, dtype=dtype, device=device)
    block = eye_d - torch.full((d, d), 1.0 / d, dtype=dtype, device=device)
    return torch.block_diag(*[block] * T)


def output_projector(Y: torch.Tensor) -> torch.Tensor:
    """P_out (T·d, T·d) at the output Y (T, d): P_in and, per token, off its centred direction ŷ_t."""
    T, d = Y.shape
    Yc = Y - Y.mean(-1, keepdim=True)
    yhat = Yc / torch.linalg.vector_norm(Yc, dim=-1, keepdim=True)
    blocks = [torch.eye(d, dtype=Y.dtype, device=Y.device) - 1.0 / d - torch.outer(y, y) for y in yhat]
    return torch.block_diag(*blocks)


def stack_jacobian_forward(stack, X: torch.Tensor) -> torch.Tensor:
    """Φ (T·d, T·d) at one window X (T, d) by forward mode: the identity's columns pushed through the stack."""
    T, d = X.shape
    basis = torch.eye(T * d, dtype=X.dtype, device=X.device).reshape(T * d, T, d)
    from numerics.stacks.stack import unchecked_inputs

    with unchecked_inputs(stack):
        cols = vmap(lambda v: jvp(stack, (X,), (v,))[1])(basis)
    return cols.reshape(T * d, T * d).T


def quotient_spectrum(stack, X: torch.Tensor, Phi: torch.Tensor | None = None) -> torch.Tensor:
    """The T·d − 2T largest singular values of P_out Φ P_in at the window X (T, d), descending."""
    T, d = X.shape
    if Phi is None:
        Phi = stack_jacobian_forward(stack, X)
    with torch.no_grad():
        Y = stack(X)
    M = output_projector(Y) @ Phi @ mean_projector(T, d, X.dtype, X.device)
    return torch.linalg.svdvals(M)[: T * d - 2 * T]


def gap(sigma: torch.Tensor) -> dict:
    """The largest log-gap g = ln(σ_k/σ_{k+1}) over k ≤ 0.9 n (1-based k), its position k and σ_1, σ_n."""
    logs = torch.log(sigma.clamp_min(torch.finfo(sigma.dtype).tiny))
    top = max(1, int(GAP_RANGE * sigma.numel()))
    gaps = logs[:top] - logs[1:top + 1]
    k = int(torch.argmax(gaps))
    return {"g": float(gaps[k]), "k": k + 1, "sigma_1": float(sigma[0]), "sigma_n": float(sigma[-1])}


def truncated_stack(stack, T: int):
    """The stack rebuilt on the first T tokens: the same weights, the kernel's mask cut to T.  For a causal
    kernel its outputs are the first T rows of the full stack's."""
    from numerics.stacks.spec import StackSpec

    cfg = {**stack.config.as_dict(), "T": T}
    param = next(stack.parameters())
    short = StackSpec.of(dtype=param.dtype, device=param.device, **cfg).build()
    short.requires_grad_(param.requires_grad)  # a measured stack (no gradients) stays one
    state = {k: v for k, v in stack.state_dict().items() if not k.endswith("attn.bias")}
    missing, unexpected = short.load_state_dict(state, strict=False)
    if unexpected or any(not k.endswith("attn.bias") for k in missing):
        raise ValueError(f"the truncated stack does not hold the same weights: {missing + unexpected}")
    return short


def spectrum_summary(stack, windows: torch.Tensor, tokens: int) -> dict:
    """Measure (c) on each window (n, T, d) cut to its first ``tokens`` tokens: the mean log-spectrum over the
    windows and the gap statistics per window and their mean, with ε = L·h/g."""
    short = truncated_stack(stack, tokens)
    logs, per = [], []
    for X in windows[:, :tokens]:
        sigma = quotient_spectrum(short, X)
        logs.append(torch.log(sigma))
        per.append(gap(sigma))
    depth_time = len(stack.layers) * stack.h
    g = sum(p["g"] for p in per) / len(per)
    mean_log = torch.stack(logs).mean(0)
    return {"g": g, "eps": depth_time / g if g > 0 else math.inf, "per_window": per,
            "k": [p["k"] for p in per], "mean_log_sigma": [round(float(x), 4) for x in mean_log],
            "gap_of_mean": gap(torch.exp(mean_log))}
