"""The factorisation of Claims 2.1/2.3 at the states a stack visits, with the kernels it visits.

At the reference 1x̄ᵀ every attention matrix is the frozen kernel and the layer Jacobian is exactly
E ↦ ((1 − hα)E + h A E B_ℓᵀ)(I + C_ℓ)ᵀ (docs/theory.md §2).  At a real state X_ℓ (a window of text
after ℓ layers) the layer's attention matrices are A_{ℓ,k}(X_ℓ) = softmax(scores of LN₁(X_ℓ)), one per
head k.  The **visited factorised form** keeps the form's two approximations and nothing else:

* the kernel is frozen at the visited A_{ℓ,k}(X_ℓ) (the derivative of the softmax is dropped), and
* the token-wise maps are linearised once, at the token mean: B_{ℓ,k} = (W_V W_O)_kᵀ J_LN₁(x̄_ℓ),
  C_ℓ = h J_{MLP∘LN₂}(ū_ℓ), x̄_ℓ and ū_ℓ the token means of X_ℓ and of the attention update's output U_ℓ;

    Ĵ_ℓ E = ((1 − hα)E + h Σ_k A_{ℓ,k} E B_{ℓ,k}ᵀ + h g_ℓ Lift·Shift·(A^slow_{ℓ,k} Π E B^slow_{ℓ,k}ᵀ))(I + C_ℓ)ᵀ,

the slow path (hierarchical stacks, gate g_ℓ) entering the same way with its own visited kernel over
the pooled block tokens.  On a token-homogeneous state with gate 0 this is the exact Jacobian (Claim
2.1: the softmax term meets equal value rows, every token's LN and MLP Jacobian is the mean's), so the
relative error ‖Ĵ V − J V‖/‖J V‖ (J V by ``torch.func.jvp`` of the real layer, the independent route)
measures exactly how far the visited states are from the factorisation: the softmax derivative's
share plus the spread of the token-wise Jacobians.  For the whole stack the layers' forms multiply in
depth order (the polynomial form of Claim 2.3 is this product when every A is the one frozen kernel).
"""

from __future__ import annotations

import torch
from torch.func import jacrev

from numerics.linearised import matrix_free as mf
def plain(stack):
    """The pre-LN ``Stack`` behind a ``PreLN`` wrapper (or the stack itself)."""
    return getattr(stack, "base", stack)


def visited_kernels(layer, X: torch.Tensor) -> torch.Tensor:
    """The attention matrices A_{ℓ,k}(X) (heads, T, T) of ``layer`` at state X (T, d)."""
    with torch.no_grad():
        return layer.attn.weights(layer.ln1(X))


class LayerForm:
    """Ĵ_ℓ of one layer at the visited state X (T, d), applied to tangents (..., T, d)."""

    def __init__(self, layer, X: torch.Tensor):
        with torch.no_grad():
            z = layer.ln1(X)
            self.A = layer.attn.weights(z)                                   # (heads, T, T)
            xbar = X.mean(-2)
            U = (1.0 - layer.h * layer.decay) * X + layer.h * layer.mixing(X)
            ubar = U.mean(-2)
        self.J1 = jacrev(layer.ln1)(xbar).detach()                            # (d, d)
        self.C = (layer.h * jacrev(lambda u: layer.mlp(layer.ln2(u)))(ubar)).detach()
        self.layer = layer
        self.slow = None
        if getattr(layer, "slow", None) is not None:
            P = layer.slow.P
            pooled = z.reshape(z.shape[-2] // P, P, -1).mean(-2)
            with torch.no_grad():
                self.slow = layer.slow.attn.weights(pooled)                   # (heads, n, n)

    @staticmethod
    def _attend(attn, A: torch.Tensor, Ez: torch.Tensor) -> torch.Tensor:
        """Σ_k A_k (E_z W_V,k) W_O,k with the kernels frozen."""
        v = torch.einsum("...td,hdk->...htk", Ez, attn.W_V)
        return torch.einsum("...htk,hkd->...td", A @ v, attn.W_O)

    def __call__(self, E: torch.Tensor) -> torch.Tensor:
        layer = self.layer
        with torch.no_grad():
            Ez = E @ self.J1.mT
            update = self._attend(layer.attn, self.A, Ez)
            if self.slow is not None:
                P = layer.slow.P
                pooled = Ez.reshape(*Ez.shape[:-2], Ez.shape[-2] // P, P, Ez.shape[-1]).mean(-2)
                out = self._attend(layer.slow.attn, self.slow, pooled)
                shifted = torch.cat([torch.zeros_like(out[..., :1, :]), out[..., :-1, :]], dim=-2)
                update = update + layer.gate.to(E.dtype) * shifted.repeat_interleave(P, dim=-2)
            Eu = (1.0 - layer.h * layer.decay) * E + layer.h * update
            return Eu + Eu @ self.C.mT


def layer_forms(stack, X: torch.Tensor) -> list[LayerForm]:
    """Every layer's visited form along the trajectory from X (T, d)."""
    base = plain(stack)
    with torch.no_grad():
        states = base.trajectory(X)
    return [LayerForm(layer, states[ell]) for ell, layer in enumerate(base.layers)]


def stack_form(forms: list[LayerForm], V: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """Ĵ V = Ĵ_{L−1} ⋯ Ĵ_0 V; ``reverse`` multiplies them in the wrong order (the chain rule's control)."""
    E = V
    for form in (reversed(forms) if reverse else forms):
        E = form(E)
    return E


def stack_error(stack, X: torch.Tensor, V: torch.Tensor) -> dict:
    """Claim 2.3 along X: e = ‖Ĵ V − J V‖/‖J V‖ pooled over the probes V (k, T, d), J V by jvp of the stack."""
    base = plain(stack)
    with _unchecked(base):
        exact = mf.stack_jvp(base, X, V)
    approx = stack_form(layer_forms(base, X), V)
    return {"error": _ratio(approx - exact, exact)}


def layer_errors(stack, X: torch.Tensor, V: torch.Tensor) -> list[float]:
    """Claim 2.1 along X: per layer ℓ, ‖Ĵ_ℓ V − J_ℓ(X_ℓ) V‖/‖J_ℓ(X_ℓ) V‖, J_ℓ by jvp of layer ℓ alone."""
    base = plain(stack)
    with torch.no_grad():
        states = base.trajectory(X)
    out = []
    for ell, layer in enumerate(base.layers):
        exact = mf.stack_jvp(layer, states[ell], V)
        out.append(_ratio(LayerForm(layer, states[ell])(V) - exact, exact))
    return out


def kernel_commutators(stack, X: torch.Tensor, pairs: int, seed: int) -> list[float]:
    """Claim 2.2(c) at the visited states of X: ‖A_iA_j − A_jA_i‖_F/(‖A_i‖_F‖A_j‖_F) for ``pairs`` seeded pairs
    (i ≠ j) of the attention matrices of every layer and head along the trajectory from X (0 when every
    kernel is the one frozen kernel, as at 1x̄ᵀ)."""
    base = plain(stack)
    with torch.no_grad():
        states = base.trajectory(X)
    kernels = torch.cat([visited_kernels(layer, states[ell]) for ell, layer in enumerate(base.layers)])
    g = torch.Generator().manual_seed(seed)
    drawn = torch.randint(kernels.shape[0], (pairs, 2), generator=g, device="cpu").tolist()  # host: indices read back as Python ints
    return [float((kernels[i] @ kernels[j] - kernels[j] @ kernels[i]).norm() / (kernels[i].norm() * kernels[j].norm()))
            for i, j in drawn if i != j]


def pooled_leak(stack, X: torch.Tensor, V: torch.Tensor, P: int) -> float:
    """Claim 3.2(a) at the state X: ‖Π J(X)(I − Q)V‖/‖J(X)V‖ pooled over the probes V (k, T, d), J V by jvp of
    the stack, Π the pooling of blocks of P and Q = Π⁺Π (0 at 1x̄ᵀ for kernels that leave ker Π invariant)."""
    from numerics.families.coarse_graining import pooling

    base = plain(stack)
    Pi, _, Q = pooling(V.shape[-2], P, V.dtype, V.device)
    with _unchecked(base):
        return _ratio(Pi @ mf.stack_jvp(base, X, V - Q @ V), mf.stack_jvp(base, X, V))


def _ratio(num: torch.Tensor, den: torch.Tensor) -> float:
    return float(num.norm() / den.norm().clamp_min(torch.finfo(den.dtype).tiny))


def _unchecked(stack):
    from numerics.stacks.stack import unchecked_inputs

    return unchecked_inputs(stack)
