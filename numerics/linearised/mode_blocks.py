"""Claim 2.1's mode blocks and the depth product every family takes of per-layer maps.

``affine_blocks`` is G_ℓ(λ) = (I + C_ℓ)((1 − hα)I + hλB_ℓ) written out in torch from the layer
coefficients B_ℓ, C_ℓ: the hand-written route beside the generated ``G_layer``
(``numerics.families.factorisation.layer_blocks``).  ``depth_product`` is M_{L−1} ⋯ M_0, layer 0 acting
first, the order of the forward pass.
"""

from __future__ import annotations

import torch


def affine_blocks(B: torch.Tensor, C: torch.Tensor, lam: torch.Tensor, h: float, alpha: float) -> torch.Tensor:
    """G_ℓ(λ) for every λ in ``lam`` (K,) and layer: B, C of shape (L, d, d) -> (K, L, d, d)."""
    eye = torch.eye(B.shape[-1], dtype=B.dtype, device=B.device)
    return torch.stack([(eye + C[ell]) @ ((1 - h * alpha) * eye + h * lam[:, None, None] * B[ell])
                        for ell in range(B.shape[0])], dim=1)


def depth_product(maps: torch.Tensor) -> torch.Tensor:
    """M_{L−1} ⋯ M_0 for maps (..., L, N, N): shape (..., N, N)."""
    prod = maps[..., 0, :, :]
    for ell in range(1, maps.shape[-3]):
        prod = maps[..., ell, :, :] @ prod
    return prod
