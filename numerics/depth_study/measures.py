"""The depth study's measures (a) and (b) along held-out text (docs/depth_study.md).

(a) **Step and roughness.**  The per-layer step s_ℓ = ‖X_{ℓ+1} − X_ℓ‖_F/‖X_ℓ‖_F of the residual stream, and the
depth roughness r_ℓ(G) = ‖G_{ℓ+1} − G_ℓ‖_F/‖G_ℓ‖_F of six weight invariants G, each in the residual stream's
basis (shared by every layer) and unchanged by the block's symmetries:

- W_QK = Σ_heads W_Q W_Kᵀ and W_VO = Σ_heads W_V W_O: a change of basis inside a head (W_Q R, W_K R⁻ᵀ;
  W_V Q, Q⁻¹ W_O) or a permutation of the heads leaves them unchanged;
- the LN gains γ₁, γ₂;
- the MLP Gram matrices W₁W₁ᵀ and W₂ᵀW₂: a permutation of the hidden units leaves them unchanged.

If θ_ℓ = θ(ℓ/L) samples a smooth path (Claim 1.1's Euler reading), every smooth function of θ changes by
O(1/L) per layer, so r ∝ 1/L; layers drawn i.i.d. give r = O(1) at every depth.

(b) **2.1's factorisation with each layer's actual pattern.**  Claim 2.1 linearises a layer with the
attention pattern frozen, exactly so at 1x̄ᵀ.  Along text :func:`fixed_pattern_error` holds the layer's
actual pattern A_ℓ(X) fixed, linearises the rest exactly and returns
e_ℓ = ‖(J_ℓ − J_ℓ^{A fixed})V‖/‖(J_ℓ − I)V‖: the share of the layer's update derivative that the pattern's
change carries.  Assumes a pre-LN ``numerics.stacks.stack.Layer`` without slow path and without decay.
"""

from __future__ import annotations

import torch
from torch.func import jvp

#: the six invariants: name -> function of a layer, each a tensor in the residual stream's basis
INVARIANTS = {
    "W_QK": lambda l: torch.einsum("hdk,hek->de", l.attn.W_Q, l.attn.W_K),
    "W_VO": lambda l: l.attn.value_output(),
    "ln1.gamma": lambda l: l.ln1.gamma,
    "ln2.gamma": lambda l: l.ln2.gamma,
    "W1 W1ᵀ": lambda l: l.mlp.W1 @ l.mlp.W1.T,
    "W2ᵀ W2": lambda l: l.mlp.W2.T @ l.mlp.W2,
}


def trajectory(model, tokens: torch.Tensor) -> torch.Tensor:
    """States X_0..X_L (L+1, n, T, d) of the language model's stack on ``tokens`` (n, T), X_0 its embedding."""
    with torch.no_grad():
        return model.stack.trajectory(model.embed[tokens])


def step_profile(states: torch.Tensor) -> list[float]:
    """s_ℓ = ‖X_{ℓ+1} − X_ℓ‖_F/‖X_ℓ‖_F per window (norm over T × d), averaged over the windows; ℓ = 0..L−1."""
    diff = torch.linalg.matrix_norm(states[1:] - states[:-1])
    return (diff / torch.linalg.matrix_norm(states[:-1])).mean(-1).tolist()


def invariants(stack) -> dict[str, list[torch.Tensor]]:
    """Every invariant per layer (float64, detached)."""
    with torch.no_grad():
        return {g: [fn(layer).detach().double() for layer in stack.layers] for g, fn in INVARIANTS.items()}


def roughness(tensors: list[torch.Tensor]) -> list[float]:
    """r_ℓ = ‖G_{ℓ+1} − G_ℓ‖_F/‖G_ℓ‖_F for ℓ = 0..L−2."""
    return [float((b - a).norm() / a.norm()) for a, b in zip(tensors, tensors[1:])]


def stack_roughness(stack) -> dict[str, list[float]]:
    """The roughness profile of every invariant."""
    return {g: roughness(ts) for g, ts in invariants(stack).items()}


def fixed_pattern_layer(layer, pattern: torch.Tensor):
    """The layer as a function of its input Y with the attention pattern fixed at ``pattern``
    (..., heads, T, T): LN₁, values, output, the residual step and the MLP sublayer as in ``Layer.forward``."""
    attn, h = layer.attn, layer.h

    def f(Y):
        z = layer.ln1(Y)
        v = torch.einsum("...td,hdk->...htk", z, attn.W_V)
        out = torch.einsum("...htk,hkd->...td", pattern @ v, attn.W_O)
        if attn.b_O is not None:
            out = out + attn.b_O
        u = Y + h * out
        return u + h * layer.mlp(layer.ln2(u))

    return f


def _check_plain(layer) -> None:
    if getattr(layer, "slow", None) is not None or layer.decay != 0:
        raise ValueError("the fixed-pattern linearisation needs a layer without slow path and without decay")


def fixed_pattern_error(layer, X: torch.Tensor, V: torch.Tensor) -> float:
    """e = ‖(J − J^{A fixed})V‖/‖(J − I)V‖ at the states X (..., T, d), pooled over the probes V (k, ..., T, d)."""
    _check_plain(layer)
    with torch.no_grad():
        pattern = layer.attn.weights(layer.ln1(X))
    frozen = fixed_pattern_layer(layer, pattern)
    Xk = X.expand_as(V).clone()  # the probes ride on a leading batch dimension: one jvp for all of them
    full = jvp(layer, (Xk,), (V,))[1]
    fixed = jvp(frozen, (Xk,), (V,))[1]
    return float((full - fixed).norm() / (full - V).norm())


def fixed_pattern_profile(stack, states: torch.Tensor, probes: int, seed: int = 0) -> list[float]:
    """e_ℓ for ℓ = 0..L−1 at the trajectory's states (L+1, n, T, d), ``probes`` Gaussian probes per layer."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for ell, layer in enumerate(stack.layers):
        X = states[ell]
        V = torch.randn((probes, *X.shape), generator=gen, dtype=torch.float64, device="cpu").to(X)
        with torch.no_grad():
            out.append(fixed_pattern_error(layer, X, V))
    return out
