"""The depth clock of Claim 6.4 (docs/theory.md §6): the decaying bundle against the persistent drift.

At the token-homogeneous reference (gate 0) the decaying modes λ of the frozen kernel shrink,
relative to the persistent mode, by the clock factor q_ℓ(λ) = λ + (1 − λ)(1 − hα)/g_ℓ per layer,
where g_ℓ = σ̃_{ℓ+1}/σ̃_ℓ is the growth of the reference token's feature spread σ̃ = √var x̄
(``numerics.generated.depth_slow_manifold``).  The clock needs the reference trajectory of one
d-vector — no layer Jacobians and no products — and equals the measured mode ratio
r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖/‖G_{≤ℓ}(1)‖ (Claim 3.1's) exactly for the *ideal* layer (W_VO = c·I, γ₁ = γ̄·1,
β₁ = 0, no MLP).  :func:`ideal_path` builds the stacks θ(η) = θ_ideal + η(θ − θ_ideal) between the
ideal layer and a drawn one.
"""

from __future__ import annotations

import copy
import math

import torch

from numerics.families import coarse_graining as ncg
from numerics.generated import depth_slow_manifold as gen
from numerics.stacks.stack import Stack


def reference_spread(stack: Stack, xbar: torch.Tensor) -> torch.Tensor:
    """σ̃_ℓ = √(var x̄_ℓ) (biased variance over features) for ℓ = 0..L, shape (L + 1,)."""
    ref = stack.reference_trajectory(xbar).detach()
    return ((ref - ref.mean(-1, keepdim=True)) ** 2).mean(-1).sqrt()


def _scalar(value, like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(float(value), dtype=like.dtype, device=like.device)


def clock_ratios(stack: Stack, xbar: torch.Tensor, lams) -> torch.Tensor:
    """r̂_ℓ(λ) = Π_{m≤ℓ} q_m(λ) for ℓ = 0..L−1 and every λ in ``lams``: shape (L, K)."""
    sig = reference_spread(stack, xbar)
    growth = (sig[1:] / sig[:-1])[:, None]                          # (L, 1)
    lam = torch.as_tensor(lams, dtype=sig.dtype, device=sig.device)[None, :]
    q = gen.clock_factor(lam, growth, _scalar(stack.h, sig), _scalar(stack.config.decay, sig))
    return torch.cumprod(q, dim=0)


def clock_power_ratios(stack: Stack, xbar: torch.Tensor, lams) -> torch.Tensor:
    """The continuous-depth clock (σ̃_{ℓ+1}/σ̃_0)^{−(1 − λ)}, shape (L, K) (α = 0)."""
    sig = reference_spread(stack, xbar)
    lam = torch.as_tensor(lams, dtype=sig.dtype, device=sig.device)[None, :]
    return gen.clock_power(lam, (sig[1:] / sig[0])[:, None])


def decaying_eigenvalues(stack: Stack) -> list[float]:
    """The distinct eigenvalues λ < 1 of the frozen kernel, descending (no eigenvectors: the mode
    blocks G_ℓ(λ) need only λ, so the causal kernel's ill-conditioned basis never enters)."""
    from numerics.families.factorisation import common_kernel, kernel_eigenvalues

    out: list[float] = []
    for v in kernel_eigenvalues(common_kernel(stack)).tolist():
        if abs(v - 1.0) > ncg.EIG_TOL and all(abs(v - u) > ncg.EIG_TOL for u in out):
            out.append(v)
    return out


def measured_ratios(stack: Stack, xbar: torch.Tensor) -> tuple[list[float], torch.Tensor]:
    """(decaying λ, r_ℓ(λ) (L, K)) from the generated mode blocks G_ℓ(λ) of Claim 2.1, multiplied in
    depth order (Claim 3.1's mode products)."""
    from numerics.families.factorisation import layer_blocks

    lams = decaying_eigenvalues(stack)
    lam = torch.tensor([1.0, *lams], dtype=xbar.dtype, device=xbar.device)
    blocks = layer_blocks(stack, xbar, lam).transpose(0, 1).detach()     # (L, 1 + K, d, d)
    return lams, ncg.mode_ratios(ncg.mode_products(blocks))


def depth_epsilon(lams) -> float:
    """ε = max_λ 1/(1 − λ) over the decaying eigenvalues (the slowest decaying mode λ₂)."""
    lam = torch.as_tensor(lams, dtype=torch.float64, device="cpu")  # a list of floats
    return float(gen.depth_epsilon(lam).max())


def effective_exponent(ratios: torch.Tensor, spread: torch.Tensor) -> float:
    """Least-squares slope of log r_ℓ against log(σ̃_{ℓ+1}/σ̃_0) over the layers (the clock predicts
    −(1 − λ)); ``ratios`` (L,), ``spread`` (L + 1,)."""
    x = torch.log(spread[1:] / spread[0])
    y = torch.log(ratios)
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


def ideal_path(stack: Stack, eta: float) -> Stack:
    """A copy of ``stack`` on θ(η) = θ_ideal + η(θ − θ_ideal): the value path's noise W_V − √c E,
    W_O − √c Eᵀ (c = value_scale, E the head blocks of I, so that W_VO = c·I at η = 0), the LN₁
    gains' spread γ₁ − γ̄ (γ̄ = ln_gain), β₁, an attention output bias b_O and the MLP's output weights W₂, b₂ scaled by η.
    W_Q, W_K, LN₂ and W₁, b₁ are kept (invisible at the reference, or multiplied by W₂ = 0).

    Needs i.i.d. drawn weights (``weight_path=None``): on the smooth path the identity part of
    W_V varies with depth."""
    cfg = stack.config
    if cfg.weight_path is not None:
        raise ValueError(f"weight_path={cfg.weight_path!r}: ideal_path needs i.i.d. drawn layers (weight_path=None)")
    if not math.isfinite(eta) or eta < 0:
        raise ValueError(f"eta={eta!r} must be a finite number ≥ 0")
    out = copy.deepcopy(stack)
    d, heads, dk = cfg.d, cfg.heads, cfg.d_k
    root_c = math.sqrt(cfg.value_scale)
    like = next(out.parameters())
    E = torch.eye(d, dtype=like.dtype, device=like.device).reshape(d, heads, dk).permute(1, 0, 2)
    with torch.no_grad():
        for layer in out.layers:
            a = layer.attn
            a.W_V.copy_(root_c * E + eta * (a.W_V - root_c * E))
            a.W_O.copy_(root_c * E.transpose(1, 2) + eta * (a.W_O - root_c * E.transpose(1, 2)))
            layer.ln1.gamma.copy_(cfg.ln_gain + eta * (layer.ln1.gamma - cfg.ln_gain))
            layer.ln1.beta.mul_(eta)
            if getattr(a, "b_O", None) is not None:      # an attention output bias (GPT-2 form) is non-ideal
                a.b_O.mul_(eta)
            layer.mlp.W2.mul_(eta)
            layer.mlp.b2.mul_(eta)
    return out


def coarse_distance(stack: Stack, X0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The state's distance from the coarse manifold M = {1yᵀ} along the splitting, layer by layer, on the
    real (nonlinear) trajectory from X0 (T, d): s_ℓ = ‖X_ℓ − 1y_ℓᵀ‖_F/(√T ‖y_ℓ − mean y_ℓ‖), y_ℓ = wᵀX_ℓ the
    persistent component (w the left eigenvector of A for λ = 1); and the spread σ̃ of y_ℓ.  Shapes (L + 1,)."""
    from numerics.stacks import kernels as K
    w = K.persistent_left_vector(stack.frozen_kernel().to(X0.dtype))
    with torch.no_grad():
        traj = stack.trajectory(X0)
    y = torch.einsum("t,ltd->ld", w, traj)
    yc = y - y.mean(-1, keepdim=True)
    dist = (traj - y[:, None, :]).flatten(1).norm(dim=1) / (math.sqrt(X0.shape[-2]) * yc.norm(dim=1))
    return dist, (yc ** 2).mean(-1).sqrt()


def clock_distance(stack: Stack, X0: torch.Tensor) -> torch.Tensor:
    """The clock's prediction of s_ℓ/s_0 for ℓ = 1..L (shape (L,)) without layer Jacobians or eigenvectors.

    q_m(λ) is affine in λ, so the clock acts on token space as the matrix q_m(A) = q_m(0)I + (1 − q_m(0))A
    (g_m from the persistent token's own reference trajectory): the decaying content Z_0 = X_0 − 1y_0ᵀ,
    split into the features LN₁ passes (⊥ 1 and ŷ_0) and the two it kills (scaled like λ = 0), evolves as
    Ẑ_ℓ = Π_m q_m(A) Z_0^⊥ + Π_m q_m(0) Z_0^∥, and ŝ_ℓ/s_0 = ‖Ẑ_ℓ‖/‖Z_0‖.  Exact to first order in the
    spread for the ideal layer; the non-normal causal kernel's slow transient comes out of the matrix product."""
    from numerics.stacks import kernels as K
    A = stack.frozen_kernel().to(X0.dtype)
    T, d = X0.shape[-2:]
    y0 = K.persistent_left_vector(A) @ X0
    Z0 = X0 - y0
    sig = reference_spread(stack, y0)
    q0 = gen.clock_factor(torch.zeros((), dtype=sig.dtype, device=sig.device), sig[1:] / sig[:-1], _scalar(stack.h, sig),
                          _scalar(stack.config.decay, sig))
    yh = (y0 - y0.mean()) / (y0 - y0.mean()).norm()
    eye_d, eye_T = torch.eye(d, dtype=X0.dtype, device=X0.device), torch.eye(T, dtype=X0.dtype, device=X0.device)
    passed = Z0 @ (eye_d - torch.ones(d, d, dtype=X0.dtype, device=X0.device) / d - torch.outer(yh, yh))
    killed = Z0 - passed
    M, r0, out = eye_T, torch.ones((), dtype=X0.dtype, device=X0.device), []
    for q in q0:
        M = (q * eye_T + (1 - q) * A) @ M
        r0 = r0 * q
        out.append((M @ passed + r0 * killed).norm() / Z0.norm())
    return torch.stack(out)


def distance_reach(stack: Stack, inputs: torch.Tensor) -> dict:
    """The clock against the real trajectories from ``inputs`` (N, T, d): the measured distance ratio
    s_ℓ/s_0 (``coarse_distance``) and the clock's ŝ_ℓ/s_0 (``clock_distance``) per input, the worst
    |log s_ℓ/s_0 − log ŝ_ℓ/s_0| over layers and inputs, and the initial spreads s_0."""
    meas, pred, s0 = [], [], []
    for X0 in inputs:
        dist, _ = coarse_distance(stack, X0)
        meas.append(dist[1:] / dist[0])
        pred.append(clock_distance(stack, X0))
        s0.append(float(dist[0]))
    meas, pred = torch.stack(meas), torch.stack(pred)
    return {"measured": meas.tolist(), "predicted": pred.tolist(), "initial_distance": s0,
            "max_log_error": float((meas.log() - pred.log()).abs().max())}


def text_inputs(checkpoint: str, T: int, windows: int, dtype=torch.float64) -> torch.Tensor:
    """Real inputs of a trained stack: its checkpoint's embedding (a fastslow language model's ``embed``, or an
    imported GPT-2's wte + wpe) of ``windows`` validation windows of the shipped corpus in the checkpoint's
    tokens (``numerics.text.held_out.text_tokens``: any vocabulary size), shape (windows, T, d)."""
    from numerics.storage import checkpoint as ckpt
    from numerics.text.held_out import text_tokens

    tensors, _ = ckpt.load(checkpoint)
    if "embed" in tensors["model"]:                      # a fastslow-trained language model
        embedding = tensors["model"]["embed"].to(dtype)
        return embedding[text_tokens(T, embedding.shape[0], windows)]
    if "embedding.wte" in tensors.get("outside", {}):    # an imported GPT-2: token plus position embeddings
        from numerics.storage.hf_gpt2 import embed

        outside = {k: v.to(dtype) for k, v in tensors["outside"].items()}
        return embed(outside, text_tokens(T, outside["embedding.wte"].shape[0], windows, gpt2=True))
    raise ckpt.CheckpointError(f"checkpoint {checkpoint}: no embedding to turn text into inputs")


def saturation_depths(measured: torch.Tensor, predicted: torch.Tensor, tau: float) -> tuple[int | None, int | None]:
    """ℓ*(τ) from the measured worst ratio and from the clock's (Claim 3.1's definition)."""
    return (ncg.first_saturated_layer(measured.max(dim=1).values, tau),
            ncg.first_saturated_layer(predicted.max(dim=1).values, tau))


def alibi_stack(slope: float, **kw) -> Stack:
    """A one-head ALiBi stack with score penalty −slope·(i − j): its frozen kernel is triangular with
    eigenvalues λ_k = (1 − e^{−m})/(1 − e^{−m(k+1)}), so λ₂ = 1/(1 + e^{−m}) → 1 as the slope m grows
    (the spectral gap 1 − λ₂ closes)."""
    from numerics.families.factorisation import set_alibi_slopes
    from numerics.stacks.spec import StackSpec

    stack = StackSpec.of(kernel="alibi", heads=1, **kw).build()
    return set_alibi_slopes(stack, [slope])
