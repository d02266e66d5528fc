"""Claim 3.1's ratio ρ with the LayerNorm-null direction 1_d quotiented out (docs/theory.md §3).

Both LayerNorm Jacobians kill 1_d (LN is translation invariant): B_ℓ1 = W_VOᵀJ_LN₁1 = 0 and
C_ℓ1 = hJ_MLP J_LN₂1 = 0, so every mode block fixes the line of 1_d with one common factor,

    G_ℓ(λ) 1 = (I + C_ℓ)((1 − hα)1 + hλB_ℓ1) = (1 − hα) 1        for every λ.

That shared direction makes the stated ρ = max ‖G_ℓ(λ)‖/σ_min(G_ℓ(1)) ≥ 1 on every pre-LN stack.
Because span(1) is invariant, each G_ℓ(λ) induces a map on the quotient R^d/span(1) ≅ 1⊥,

    Ḡ_ℓ(λ) = Uᵀ G_ℓ(λ) U     (U an orthonormal basis of 1⊥; Uᵀ applies the projector I − 11ᵀ/d),

and the quotient of a product is the product of the quotients.  The quotient ratio
r̄_m(λ) = ‖Ḡ_{≤m}(λ)‖/‖Ḡ_{≤m}(1)‖ obeys r̄_m ≤ Π_{ℓ≤m} ‖Ḡ_ℓ(λ)‖/σ_min(Ḡ_ℓ(1)) ≤ ρ̄^{m+1} with
ρ̄ = max_{ℓ, λ≠1} ‖Ḡ_ℓ(λ)‖/σ_min(Ḡ_ℓ(1)), the stated bound with the artefact removed.

**It is not enough.**  LN is also scale invariant about the mean, so J_LN₁(x̄_ℓ) kills the radial
direction n_ℓ = x̄_ℓ − mean(x̄_ℓ)1 ⊥ 1 as well, up to LN's ε: J_LN₁ n̂_ℓ = diag(γ₁) n̂_ℓ ε/(σ(v + ε)) with
v the variance of x̄_ℓ and σ = √(v + ε), so B_ℓ n_ℓ ≈ 0, hence G_ℓ(λ)n_ℓ = G_ℓ(1)n_ℓ for every λ and,
with v = Uᵀn̂_ℓ, ‖Ḡ_ℓ(λ)‖ ≥ ‖Ḡ_ℓ(1)v‖ ≥ σ_min(Ḡ_ℓ(1)): ρ̄ ≥ 1 again, at every layer.  n_ℓ changes
from layer to layer ((I + C_ℓ)n_ℓ ≠ n_{ℓ+1}), so no fixed quotient removes it and the per-layer
ratio bound stays vacuous; the persistent-path ratio ρ̃ of ``numerics.families.coarse_graining`` is the usable form.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from numerics.families.coarse_graining import kernel_modes, mode_blocks


def complement_basis(d: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """U (d, d−1): an orthonormal basis of 1_d⊥ (QR of the centring projector's columns)."""
    P = torch.eye(d, dtype=dtype, device=device) - torch.full((d, d), 1.0 / d, dtype=dtype, device=device)
    Q, _ = torch.linalg.qr(P[:, : d - 1])
    return Q


@dataclass
class QuotientSaturation:
    """ρ̄ and the quotient ratios r̄_ℓ(λ) beside the stated ρ and the unquotiented r_ℓ(λ)."""

    lambdas: list[float]
    rho_bar: float                 # max over ℓ and decaying λ of ‖Ḡ_ℓ(λ)‖/σ_min(Ḡ_ℓ(1))
    rho: float                     # the stated ρ, with 1_d kept (≥ 1 on pre-LN stacks)
    ratios_bar: torch.Tensor       # (L, decaying modes): r̄_ℓ(λ)
    bound_products: torch.Tensor   # (L, decaying modes): Π_{ℓ'≤ℓ} ‖Ḡ_ℓ'(λ)‖/σ_min(Ḡ_ℓ'(1)) ≥ r̄_ℓ(λ)
    ratios: torch.Tensor           # (L, decaying modes): r_ℓ(λ), 1_d kept
    invariance_error: float        # max ‖G_ℓ(λ)1 − (1 − hα)1‖/‖1‖ (0 up to rounding)
    radial_error: float            # max ‖(G_ℓ(λ) − G_ℓ(1)) n̂_ℓ‖/‖G_ℓ(1)‖ (0 up to LN's ε)
    radial_bound: float            # its prediction: max h|λ−1|‖I + C_ℓ‖‖W_VO‖ max|γ₁| ε/(σ(v + ε)) / ‖G_ℓ(1)‖
    per_layer_rho_bar: torch.Tensor  # (L,): max over decaying λ of ‖Ḡ_ℓ(λ)‖/σ_min(Ḡ_ℓ(1)), ≥ 1 each
    per_layer_lower: torch.Tensor    # (L,): its predicted floor 1 − b_ℓ‖G_ℓ(1)‖/σ_min(Ḡ_ℓ(1)), b_ℓ the radial bound

    def saturation_depth(self, tau: float) -> int | None:
        """The first layer from which every r̄ stays ≤ τ (None: never)."""
        worst = self.ratios_bar.max(dim=1).values
        ok = worst <= tau
        for ell in range(len(ok)):
            if bool(ok[ell:].all()):
                return ell
        return None


def quotient_saturation(stack, xbar: torch.Tensor) -> QuotientSaturation:
    """Every quantity of :class:`QuotientSaturation` from the generated mode blocks (gate 0)."""
    modes, _ = kernel_modes(stack.frozen_kernel())
    blocks = mode_blocks(stack, xbar, modes).detach()             # (L, modes, d, d); mode 0 is λ = 1
    d = blocks.shape[-1]
    ones = torch.ones(d, dtype=blocks.dtype, device=blocks.device)
    factor = 1.0 - stack.h * stack.config.decay
    invariance = float((blocks @ ones - factor * ones).norm(dim=-1).max() / ones.norm())
    U = complement_basis(d, blocks.dtype, blocks.device)
    qblocks = U.mT @ blocks @ U                                   # (L, modes, d−1, d−1)

    def ratios_of(bl):
        prods, prev = [], torch.eye(bl.shape[-1], dtype=bl.dtype, device=bl.device)
        for ell in range(bl.shape[0]):
            prev = bl[ell] @ prev
            prods.append(prev)
        norms = torch.linalg.matrix_norm(torch.stack(prods), ord=2)
        return norms[:, 1:] / norms[:, :1]

    per_layer = torch.linalg.matrix_norm(qblocks[:, 1:], ord=2) / torch.linalg.svdvals(qblocks[:, 0])[:, -1:]
    stated = torch.linalg.matrix_norm(blocks[:, 1:], ord=2) / torch.linalg.svdvals(blocks[:, 0])[:, -1:]
    xs = stack.reference_trajectory(xbar)[:-1].detach()           # x̄_ℓ, (L, d)
    n = xs - xs.mean(-1, keepdim=True)
    n = n / n.norm(dim=-1, keepdim=True)
    diff = (blocks - blocks[:, :1]) @ n[:, None, :, None]           # (L, modes, d, 1)
    radial = float((diff.norm(dim=(-2, -1)) / torch.linalg.matrix_norm(blocks[:, :1], ord=2)).max())
    from numerics.families.factorisation import layer_B_C
    from numerics.stacks.stack import LN_EPS

    eye = torch.eye(d, dtype=blocks.dtype, device=blocks.device)
    v = xs.var(-1, unbiased=False)
    lam_gap = max(abs(m.lam - 1.0) for m in modes[1:])
    with torch.no_grad():
        _, C = layer_B_C(stack, xbar)
        bound = torch.stack([stack.h * lam_gap * torch.linalg.matrix_norm(eye + C[ell], ord=2)
                             * torch.linalg.matrix_norm(layer.attn.value_output(), ord=2) * layer.ln1.gamma.abs().max()
                             * LN_EPS / (torch.sqrt(v[ell] + LN_EPS) * (v[ell] + LN_EPS))
                             / torch.linalg.matrix_norm(blocks[ell, 0], ord=2) for ell, layer in enumerate(stack.layers)])
    return QuotientSaturation(lambdas=[m.lam for m in modes[1:]], rho_bar=float(per_layer.max()),
                              radial_error=radial, radial_bound=float(bound.max()),
                              per_layer_lower=1 - bound * torch.linalg.matrix_norm(blocks[:, 0], ord=2)
                              / torch.linalg.svdvals(qblocks[:, 0])[:, -1], per_layer_rho_bar=per_layer.max(dim=1).values,
                              rho=float(stated.max()), ratios_bar=ratios_of(qblocks), ratios=ratios_of(blocks),
                              bound_products=torch.cumprod(per_layer, dim=0), invariance_error=invariance)
