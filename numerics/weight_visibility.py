"""Claim 4.1 as weight perturbations: the invisible subspace of the weights at 1x̄ᵀ (docs/theory.md §4).

The observable is the persistent component x̄_L = wᵀX_L of the stack run from X₀ = 1x̄ᵀ, a function of
all N weights θ.  Its Jacobian J_θ (d × N) has rank ≤ d; its null space is the **invisible** subspace
(N − rank directions, W_Q and W_K among them, Claim 2.4).  At the reference every token-wise weight moves
every token alike, so a weight perturbation in the null space leaves the whole X_L unchanged at first
order: along θ + εδ with δ invisible,

    ‖x̄_L(θ + εδ) − x̄_L(θ)‖ = (ε²/2)‖D²x̄_L[δ, δ]‖ + O(ε³)        (slope 2),

while the top right singular vector moves it by ε σ₁ (slope 1).  Off the reference (token spread s) an
invisible δ acts on X_L at first order in s (:func:`invisible_share`).  Directions are drawn from the
weights other than W_Q, W_K (those are invisible for a reason of their own, Claim 2.4), projected on
the null space and scaled to unit Euclidean norm over all weights.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, jacrev

from numerics.reach import QK, mf_unchecked


class FlatWeights:
    """The stack's weights as one vector θ (N,) and back: ``call(θ, X)`` runs the stack with them."""

    def __init__(self, stack):
        self.stack = stack
        self.names = [n for n, _ in stack.named_parameters()]
        self.shapes = [p.shape for _, p in stack.named_parameters()]
        self.theta = torch.cat([p.detach().reshape(-1) for _, p in stack.named_parameters()])

    def unflatten(self, theta: torch.Tensor) -> dict:
        out, start = {}, 0
        for n, shape in zip(self.names, self.shapes):
            size = shape.numel()
            out[n] = theta[start:start + size].reshape(shape)
            start += size
        return out

    def call(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        return functional_call(self.stack, self.unflatten(theta), (X,))

    def mask(self, exclude=QK) -> torch.Tensor:
        """1 on every weight whose leaf name is not in ``exclude``, 0 on those that are."""
        parts = [torch.full((s.numel(),), float(n.rsplit(".", 1)[-1] not in exclude), dtype=self.theta.dtype)
                 for n, s in zip(self.names, self.shapes)]
        return torch.cat(parts)


def persistent_weight_jacobian(flat: FlatWeights, X0: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """J_θ = ∂(wᵀX_L)/∂θ at X₀, (d, N), by reverse mode."""
    with mf_unchecked(flat.stack):
        return jacrev(lambda th: w @ flat.call(th, X0))(flat.theta).detach()


def directions(flat: FlatWeights, J: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(invisible δ, visible δ, σ₁): δ_inv a Gaussian draw on the weights other than W_Q, W_K projected on
    J's null space, δ_vis J's top right singular vector, both unit norm; rank from σ > σ₁ √eps."""
    U, S, Vh = torch.linalg.svd(J, full_matrices=False)
    rank = int((S > S[0] * torch.finfo(J.dtype).eps ** 0.5).sum())
    row = Vh[:rank]
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(J.shape[1], generator=g, dtype=torch.float64).to(J.dtype) * flat.mask()
    z = z - row.T @ (row @ z)
    z = z - row.T @ (row @ z)        # twice: the projection's rounding is then ≤ eps·‖z‖
    return z / z.norm(), Vh[0], float(S[0])


def persistent_response(flat: FlatWeights, X0: torch.Tensor, w: torch.Tensor, delta: torch.Tensor,
                        eps: float) -> float:
    """‖x̄_L(θ + εδ) − x̄_L(θ)‖ / ‖x̄_L(θ)‖."""
    with torch.no_grad(), mf_unchecked(flat.stack):
        base = w @ flat.call(flat.theta, X0)
        moved = w @ flat.call(flat.theta + eps * delta, X0)
    return float((moved - base).norm() / base.norm())


def invisible_share(flat: FlatWeights, X: torch.Tensor, inv: torch.Tensor, vis: torch.Tensor) -> float:
    """‖∂X_L[δ_inv]‖ / ‖∂X_L[δ_vis]‖ at an input X (forward mode): 0 at the reference, O(s) off it."""
    from torch.func import jvp

    with torch.no_grad(), mf_unchecked(flat.stack):
        d_inv = jvp(lambda th: flat.call(th, X), (flat.theta,), (inv,))[1]
        d_vis = jvp(lambda th: flat.call(th, X), (flat.theta,), (vis,))[1]
    return float(d_inv.norm() / d_vis.norm())
