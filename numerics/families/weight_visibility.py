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

W_Q and W_K are invisible beyond first order: at 1x̄ᵀ every score row is constant over its keys for any
W_Q, W_K, so the attention is the frozen kernel and X_L and its Jacobian J do not change at all under a
finite perturbation of them (:func:`weight_change`, zero to rounding; :func:`rounding_condition` gives the
condition factor of that rounding).  Off the reference they do, the output at order 2 and J·V at order 1 in
the token spread, predicted at 1x̄ᵀ by :func:`action_change_expansion`.
"""

from __future__ import annotations

import torch
from torch.func import functional_call, jacrev

from numerics.text.reach import QK, mf_unchecked


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
        parts = [torch.full((s.numel(),), float(n.rsplit(".", 1)[-1] not in exclude), dtype=self.theta.dtype, device=self.theta.device)
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
    z = torch.randn(J.shape[1], generator=g, dtype=torch.float64, device="cpu").to(J) * flat.mask()
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


# ---- W_Q, W_K as finite weight perturbations (Claim 4.1's own check) ---------------------------
def perturbed_parameters(stack, leaves, seed: int, eps: float = 1.0) -> dict[str, torch.Tensor]:
    """The stack's parameters with every weight whose leaf name is in ``leaves`` moved by ε times a Gaussian
    draw of the weight's own Frobenius norm (``numerics.text.reach.relative_tangents``; ε = 1: a unit relative
    perturbation of each matrix)."""
    from numerics.text.reach import relative_tangents

    base = {n: p.detach() for n, p in stack.named_parameters()}
    return {**base, **{n: base[n] + eps * d for n, d in relative_tangents(stack, leaves, seed).items()}}


def _forward(stack, params: dict):
    return lambda x: functional_call(stack, params, (x,))


def weight_change(stack, X: torch.Tensor, v: torch.Tensor, moved: dict) -> tuple[float, float]:
    """(‖X_L(θ') − X_L(θ)‖/‖X_L(θ)‖, ‖J_θ'(X)v − J_θ(X)v‖/‖J_θ(X)v‖) at input X, θ' = ``moved``, probe v (T, d)."""
    from torch.func import jvp

    f0 = _forward(stack, {n: p.detach() for n, p in stack.named_parameters()})
    f1 = _forward(stack, moved)
    with torch.no_grad(), mf_unchecked(stack):
        (y0, j0), (y1, j1) = jvp(f0, (X,), (v,)), jvp(f1, (X,), (v,))
    return float((y1 - y0).norm() / y0.norm()), float((j1 - j0).norm() / j0.norm())


def action_change_expansion(stack, xbar: torch.Tensor, direction: torch.Tensor, v: torch.Tensor, moved: dict):
    """J·V's change of :func:`weight_change` along X = 1x̄ᵀ + tÊ, predicted at 1x̄ᵀ (``numerics.text.reach.Expansion``,
    order 1: the moved scores vary over keys at O(t), and J's softmax term meets them with no further factor
    of the deviations; the output's own change is order 2).  It vanishes identically at t = 0 for any size of
    the Q/K perturbation.  One doubly nested jvp along Ê of x ↦ (J_θ'(x)v − J_θ(x)v, J_θ(x)v) gives n₁, n₂,
    d₀, d₁ together."""
    from torch.func import jvp

    from numerics.text.reach import Expansion, centred_direction

    f0 = _forward(stack, {n: p.detach() for n, p in stack.named_parameters()})
    f1 = _forward(stack, moved)
    X0 = xbar.expand(direction.shape[-2], -1).clone()
    Ehat = centred_direction(direction).to(X0.dtype)

    def change_and_action(x):
        j0 = jvp(f0, (x,), (v,))[1]
        return jvp(f1, (x,), (v,))[1] - j0, j0

    def first(x):
        return jvp(change_and_action, (x,), (Ehat,))

    with torch.no_grad(), mf_unchecked(stack):
        ((_, d0), (n1, d1)), (_, (n2, _)) = jvp(first, (X0,), (Ehat,))
    return Expansion(1, n1, n2, d0, d1, float(X0.shape[-2]) ** 0.5 * float(xbar.norm()))


def rounding_condition(stack, X: torch.Tensor, v: torch.Tensor) -> tuple[float, float]:
    """(κ_X, κ_JV): how much the rounding committed in one layer can grow by the stack's end, relative to the
    result.  Layer k rounds X_{k+1} (and the tangent E_{k+1} = J_{≤k}v) to within γ_k of its own norm; the
    layers after it carry that error by their Jacobian J_{>k} at X_{k+1} (first order in the rounding), so
    κ = max_k ‖J_{>k}‖₂ ‖Y_{k+1}‖/‖Y_L‖ for Y = X and Y = E (‖J_{>L−1}‖ = 1).  ‖J_{>k}‖₂ from the dense
    (Td × Td) Jacobian of the tail stack: for the ledger's small stacks (T·d ≤ 1024)."""
    from torch.func import jacfwd, jvp

    from numerics.text.reach import tail_stack

    T, d = X.shape[-2:]
    if T * d > 1024:
        raise ValueError(f"T·d = {T * d} > 1024: the dense tail Jacobians of rounding_condition are for small stacks")
    with torch.no_grad(), mf_unchecked(stack):
        states, tangents = [X.detach()], [v]
        for layer in stack.layers:
            y, e = jvp(layer, (states[-1],), (tangents[-1],))
            states.append(y)
            tangents.append(e)
    L = len(stack.layers)
    kx = ke = 1.0
    for k in range(L - 1):
        tail = tail_stack(stack, k + 1)
        with torch.no_grad(), mf_unchecked(tail):
            J = jacfwd(tail)(states[k + 1]).reshape(T * d, T * d)
        norm = float(torch.linalg.matrix_norm(J, ord=2))
        kx = max(kx, norm * float(states[k + 1].norm() / states[L].norm()))
        ke = max(ke, norm * float(tangents[k + 1].norm() / tangents[L].norm()))
    return kx, ke
