"""The stability margin μ of Claims 5.1 and 5.3 on given weights (trained or imported), with or without a
slow path (docs/theory.md §5).

The gate bound g* exists only where μ = −(1/(Lh)) Σ_ℓ log a_ℓ > 0, a_ℓ = ‖ΠJ_ℓΠ⁺‖₂ the norm of the gate-0
layer Jacobian on the slow (block-mean) modes at the token-homogeneous reference.  Two exact facts bound μ
on any weights, for every block length P:

1. **homogeneous modes.**  At 1x̄_ℓᵀ every row-stochastic kernel keeps a token-constant perturbation
   token-constant, so ΠJ_ℓΠ⁺(1_n ⊗ v) = 1_n ⊗ G_ℓ v with G_ℓ = ∂(token map)/∂x̄ at x̄_ℓ (Π the block mean,
   Π⁺ the repetition).  Hence a_ℓ ≥ ‖G_ℓ‖₂ and μ ≤ μ⁺ = −(1/(Lh)) Σ_ℓ log‖G_ℓ‖₂, whatever P.
2. **the mean direction.**  Layer norm subtracts each token's feature mean, LN(x + t·1_d) = LN(x), and both
   branches read the state through it, so a layer X' = (1 − hα)X + h·attn(LN₁X) + h·MLP(LN₂u) maps a shift
   of any token along 1_d to (1 − hα) times itself, at every state, not only at the reference:
   J_ℓ(X)(e_t ⊗ 1_d) = (1 − hα)(e_t ⊗ 1_d).  Undamped (α = 0, GPT-2's block), a_ℓ ≥ 1 on every layer and
   μ ≤ 0 for any weights: the bound (5.1) and the bracket built on it (5.3) cannot bind.

``margin_on`` measures μ⁺, the per-layer norms ‖G_ℓ‖₂ (autograd) and the mean direction's gain; the
independent routes are central differences of the token map (``finite_difference_gains``) and, along
visited states, the layer's jvp (``visited_mean_gains``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch.func import jacrev, jvp

#: central-difference step for the token map's gains (relative to ‖x̄‖ ≈ √d): truncation ε²·|f'''|/6 ≈ 1e-9,
#: rounding eps·‖f‖/ε ≈ 1e-11
FD_STEP = 1e-4


@dataclass
class Margin:
    """μ⁺ = −(1/(Lh)) Σ log‖G_ℓ‖₂ (an upper bound on the margin μ for every block length), the norms
    ‖G_ℓ‖₂, the mean direction's gains ‖G_ℓ 1_d‖/‖1_d‖ (predicted 1 − hα), h, α and L."""

    mu_upper: float
    norms: list[float]
    mean_gains: list[float]
    h: float
    decay: float

    @property
    def layers(self) -> int:
        return len(self.norms)

    @property
    def predicted_mean_gain(self) -> float:
        return 1.0 - self.h * self.decay

    @property
    def certifiable(self) -> bool:
        """Whether a gate could be certified on these weights (μ⁺ > 0 is necessary)."""
        return self.mu_upper > 0

    def as_dict(self) -> dict:
        return {**asdict(self), "layers": self.layers, "predicted_mean_gain": self.predicted_mean_gain}


def reference_states(stack, xbar: torch.Tensor) -> torch.Tensor:
    """x̄_0 … x̄_{L−1} along the token map at the gate-0 homogeneous reference, (L, d)."""
    states = [xbar]
    with torch.no_grad():
        for layer in stack.layers[:-1]:
            states.append(layer.token_map(states[-1]))
    return torch.stack(states)


def homogeneous_maps(stack, xbar: torch.Tensor) -> torch.Tensor:
    """G_ℓ = ∂(token map ℓ)/∂x̄ at x̄_ℓ by reverse-mode autograd, (L, d, d)."""
    xs = reference_states(stack, xbar)
    return torch.stack([jacrev(layer.token_map)(x).detach() for layer, x in zip(stack.layers, xs)])


def _ones_unit(d: int, like: torch.Tensor) -> torch.Tensor:
    return torch.ones(d, dtype=like.dtype, device=like.device) / math.sqrt(d)


def margin_on(stack, xbar: torch.Tensor) -> Margin:
    """The margin's upper bound μ⁺ and the mean direction's gains on ``stack`` at the reference from x̄₀."""
    G = homogeneous_maps(stack, xbar)
    norms = torch.linalg.matrix_norm(G, ord=2)
    one = _ones_unit(G.shape[-1], G)
    gains = torch.linalg.vector_norm(G @ one, dim=-1)
    h = float(stack.h)
    mu = float(-torch.log(norms).sum() / (len(norms) * h))
    return Margin(mu, [float(a) for a in norms], [float(g) for g in gains], h, float(stack.layers[0].decay))


def finite_difference_gains(stack, xbar: torch.Tensor, step: float = FD_STEP) -> dict:
    """The independent route: D_ε(v) = ‖(f_ℓ(x̄_ℓ + εv) − f_ℓ(x̄_ℓ − εv))/(2ε)‖ for v the top right singular
    vector of the autograd G_ℓ (→ ‖G_ℓ‖₂) and v = 1_d/√d (→ the mean direction's gain), per layer, with the
    error bound of each: truncation (ε²/6)|f‴| estimated by Richardson, |D_2ε − D_ε|/3, plus rounding
    eps·‖f_ℓ(x̄_ℓ)‖/ε (the mean direction is exactly linear, f(x + t1_d) = f(x) + t(1 − hα)1_d: rounding only)."""
    xs = reference_states(stack, xbar)
    G = homogeneous_maps(stack, xbar)
    top = torch.linalg.svd(G).Vh[:, 0, :]
    one = _ones_unit(G.shape[-1], G)
    eps = torch.finfo(G.dtype).eps
    out = {"norms": [], "mean_gains": [], "norm_error_bound": [], "mean_gain_error_bound": []}
    with torch.no_grad():
        for layer, x, v in zip(stack.layers, xs, top):
            rounding = eps * float(layer.token_map(x).norm()) / step
            for key, bound, u in (("norms", "norm_error_bound", v), ("mean_gains", "mean_gain_error_bound", one)):
                D = [float(((layer.token_map(x + s * u) - layer.token_map(x - s * u)) / (2 * s)).norm())
                     for s in (step, 2 * step)]
                out[key].append(D[0])
                out[bound].append((abs(D[1] - D[0]) / 3 if key == "norms" else 0.0) + rounding)
    return out


def visited_mean_gains(stack, X: torch.Tensor) -> list[float]:
    """‖J_ℓ(X_ℓ) V‖/‖V‖ at the states X_ℓ the stack visits from X (T, d), V = every token shifted along 1_d
    (a sum of the e_t ⊗ 1_d), by each layer's jvp: (1 − hα) exactly by the mean-direction fact, per layer."""
    from numerics.stacks.stack import unchecked_inputs

    V = torch.ones_like(X) / math.sqrt(X.numel())
    gains = []
    with unchecked_inputs(stack), torch.no_grad():
        for layer in stack.layers:
            Y, JV = jvp(layer, (X,), (V,))
            gains.append(float(JV.norm()))
            X = Y
    return gains
