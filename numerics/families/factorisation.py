"""Claims 2.1–2.4 numerics: mode blocks of the linearised stack along the frozen kernel.

At the token-homogeneous reference X_ℓ = 1x̄_ℓᵀ the stack's Jacobian (row-major vec,
tokens are rows) is block diagonal in the basis S ⊗ I_d, A = SΛS⁻¹ the frozen kernel:
block k is G(λ_k) = G_{L−1}(λ_k) ⋯ G_0(λ_k), G_ℓ(λ) = (I + C_ℓ)((1 − hα) I + hλ B_ℓ),
all evaluated by the generated code (``numerics.generated.factorisation``).  Equivalently
J = Σ_m A^m ⊗ K_m with G(λ) = Σ_m λ^m K_m, which needs no eigenvectors (Claim 2.3).

The MLP's activation (exact GELU or GPT-2's gelu_new) selects the generated functions derived
for it, and an attention output bias b_O enters ū (``ubar``); b_Q does not enter at all
(at 1x̄ᵀ it shifts every query of a head by the same vector, Claim 2.4).

Assumptions: gate 0 (or no slow path) and one frozen kernel shared by all heads.
"""

from __future__ import annotations

import torch
from torch import nn

from numerics.generated import factorisation as gen
from numerics.linearised.mode_blocks import depth_product
from numerics.stacks.stack import Stack

#: activation -> (C_layer, G_layer, G_layer_coefficient_0, G_layer_coefficient_1) names in the generated code.
GENERATED_BY_ACTIVATION = {
    "gelu": ("C_layer", "G_layer", "G_layer_coefficient_0", "G_layer_coefficient_1"),
    "gelu_new": ("C_layer_gelu_tanh", "G_layer_gelu_tanh", "G_layer_coefficient_0_gelu_tanh",
                 "G_layer_coefficient_1_gelu_tanh"),
}


def _generated(stack: Stack, index: int):
    """The generated function ``index`` of GENERATED_BY_ACTIVATION for the stack's activation (looked
    up on the module at call time, so a patched generated function is the one used)."""
    return getattr(gen, GENERATED_BY_ACTIVATION[stack.config.activation][index])

EIGEN_GROUP_TOL = 1e-9  # eigenvalues closer than this are one (repeated) eigenvalue


def layer_weights(stack: Stack) -> dict[str, torch.Tensor]:
    """Every layer's weights stacked over depth, in the column shapes the generated code takes:
    gamma1, beta1, gamma2, beta2 (L, d, 1); W_VO (L, d, d) row convention; W1 (L, d, m);
    b1 (L, m, 1); W2 (L, m, d); b_O (L, d, 1), zero for a stack without attention biases."""
    def stacked(fn):
        return torch.stack([fn(layer) for layer in stack.layers])

    return {
        "gamma1": stacked(lambda l: l.ln1.gamma[:, None]),
        "beta1": stacked(lambda l: l.ln1.beta[:, None]),
        "W_VO": stacked(lambda l: l.attn.value_output()),
        "gamma2": stacked(lambda l: l.ln2.gamma[:, None]),
        "beta2": stacked(lambda l: l.ln2.beta[:, None]),
        "W1": stacked(lambda l: l.mlp.W1),
        "b1": stacked(lambda l: l.mlp.b1[:, None]),
        "W2": stacked(lambda l: l.mlp.W2),
        "b_O": stacked(lambda l: (torch.zeros_like(l.ln1.beta) if l.attn.b_O is None else l.attn.b_O)[:, None]),
    }


def _check_reference(stack: Stack, xbar: torch.Tensor) -> None:
    d = stack.config.d
    if xbar.shape != (d,):
        raise ValueError(f"xbar has shape {tuple(xbar.shape)}, expected (d={d},)")


def reference_tokens(stack: Stack, xbar: torch.Tensor, w: dict | None = None):
    """(x̄_ℓ, ū_ℓ) for ℓ = 0..L−1 as columns (L, d, 1): x̄_ℓ from the stack's own token map,
    ū_ℓ = (1 − hα) x̄_ℓ + h (W_VOᵀ LN₁(x̄_ℓ) + b_O) from the generated ``ubar``."""
    _check_reference(stack, xbar)
    w = layer_weights(stack) if w is None else w
    xs = stack.reference_trajectory(xbar)[:-1, :, None]
    h, alpha, eps = _scalars(stack, xbar)
    us = gen.ubar(xs, w["gamma1"], w["beta1"], w["W_VO"], w["b_O"], h, alpha, eps)
    return xs, us


def _scalars(stack: Stack, like: torch.Tensor):
    def t(v):
        return torch.tensor(float(v), dtype=like.dtype, device=like.device)
    return t(stack.h), t(stack.config.decay), t(stack.config.ln_eps)


def _layer_args(stack: Stack, xbar: torch.Tensor):
    w = layer_weights(stack)
    xs, us = reference_tokens(stack, xbar, w)
    h, alpha, eps = _scalars(stack, xbar)
    return (xs, us, w["gamma1"], w["W_VO"], w["gamma2"], w["beta2"], w["W1"], w["b1"], w["W2"],
            h, alpha, eps)


def layer_B_C(stack: Stack, xbar: torch.Tensor):
    """Per-layer B_ℓ = W_VOᵀ J_LN₁(x̄_ℓ) and C_ℓ = h J_MLP∘LN₂(ū_ℓ), each (L, d, d)."""
    w = layer_weights(stack)
    xs, us = reference_tokens(stack, xbar, w)
    h, _, eps = _scalars(stack, xbar)
    B = gen.B_layer(xs, w["gamma1"], w["W_VO"], eps)
    C = _generated(stack, 0)(us, w["gamma2"], w["beta2"], w["W1"], w["b1"], w["W2"], h, eps)
    return B, C


def layer_blocks(stack: Stack, xbar: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """G_ℓ(λ) for every λ in ``lam`` (K,) and layer: shape (K, L, d, d)."""
    lam = torch.as_tensor(lam, dtype=xbar.dtype, device=xbar.device)
    if lam.dim() != 1:
        raise ValueError(f"lam has shape {tuple(lam.shape)}, expected (K,)")
    return _generated(stack, 1)(*_layer_args(stack, xbar), lam[:, None])


def affine_parts(stack: Stack, xbar: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(G_ℓ(0), G_ℓ(1) − G_ℓ(0)), each (L, d, d), from the generated blocks: G_ℓ(λ) is affine in λ, so
    G_ℓ(0) + λ(G_ℓ(1) − G_ℓ(0)) gives every mode from two evaluations of the MLP stage."""
    ends = layer_blocks(stack, xbar, torch.tensor([0.0, 1.0], dtype=xbar.dtype, device=xbar.device)).detach()
    return ends[0], ends[1] - ends[0]


def stack_blocks(stack: Stack, xbar: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """G(λ) = G_{L−1}(λ) ⋯ G_0(λ) for every λ: shape (K, d, d)."""
    return depth_product(layer_blocks(stack, xbar, lam))


def common_kernel(stack: Stack) -> torch.Tensor:
    """The frozen kernel A (T, T) shared by every head; ValueError where heads disagree."""
    if any(l.slow is not None and float(l.gate) != 0.0 for l in stack.layers):
        raise ValueError("the factorisation needs gate=0: the slow path's shift breaks homogeneity")
    return stack.frozen_kernel()


def kernel_eigenvalues(A: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of a frozen kernel, real and in descending order (diagonal if triangular)."""
    if torch.equal(A, torch.tril(A)) or torch.equal(A, torch.triu(A)):
        lam = torch.diagonal(A).clone()
    else:
        ev = torch.linalg.eigvals(A)
        if ev.imag.abs().max() > 1e-10 * max(1.0, float(A.abs().max())):
            raise ValueError("the kernel has complex eigenvalues; the mode blocks need a real spectrum")
        lam = ev.real.to(A.dtype)
    return torch.sort(lam, descending=True).values


def eigenbasis(A: torch.Tensor):
    """(λ (T,), S (T, T)) with A S = S diag(λ): one orthonormal basis (SVD null space) per
    eigenspace, so repeated eigenvalues (full, block kernels) get a well-conditioned S."""
    lam = kernel_eigenvalues(A)
    T = A.shape[-1]
    eye = torch.eye(T, dtype=A.dtype, device=A.device)
    cols, k = [], 0
    while k < T:
        mult = int(((lam - lam[k]).abs() <= EIGEN_GROUP_TOL).sum())
        _, _, Vh = torch.linalg.svd(A - lam[k] * eye)
        cols.append(Vh[-mult:].transpose(0, 1))
        k += mult
    S = torch.cat(cols, dim=1)
    if S.shape[1] != T:
        raise ValueError("could not build an eigenbasis: eigenvalue multiplicities do not add up to T")
    return lam, S


def mode_blocks(stack: Stack, xbar: torch.Tensor):
    """(eigenvalues (T,), blocks (T, d, d)): block k is the whole stack's map on mode k's
    coordinates in the basis S ⊗ I (A = SΛS⁻¹, same eigenvalue order as ``eigenbasis``)."""
    _check_reference(stack, xbar)
    lam = kernel_eigenvalues(common_kernel(stack).to(xbar.dtype))
    return lam, stack_blocks(stack, xbar, lam)


def polynomial_coefficients(stack: Stack, xbar: torch.Tensor) -> torch.Tensor:
    """K_0..K_L (L+1, d, d) with G(λ) = Σ_m λ^m K_m, multiplying out the affine layers
    G_ℓ(λ) = G_ℓ(0) + λ (G_ℓ(1) − G_ℓ(0)) in depth order."""
    args = _layer_args(stack, xbar)
    P0 = _generated(stack, 2)(*args)
    P1 = _generated(stack, 3)(*args)
    L, d = P0.shape[0], P0.shape[-1]
    K = torch.zeros(L + 1, d, d, dtype=P0.dtype, device=P0.device)
    K[0] = torch.eye(d, dtype=P0.dtype, device=P0.device)
    for ell in range(L):  # after ℓ layers only K_0..K_ℓ are nonzero: update that prefix
        top = K[: ell + 1].clone()
        K[: ell + 1] = P0[ell] @ top
        K[1: ell + 2] += P1[ell] @ top
    return K


def apply_polynomial_jacobian(A: torch.Tensor, K: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """(Σ_m A^m ⊗ K_m) vec E, returned as a (..., T, d) state: Σ_m A^m E K_mᵀ."""
    out = torch.zeros_like(E)
    AmE = E
    for m in range(K.shape[0]):
        out = out + AmE @ K[m].transpose(-1, -2)
        AmE = A @ AmE
    return out


def polynomial_jacobian(A: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """The dense J = Σ_m A^m ⊗ K_m, (T d, T d)."""
    J, Am = 0, torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
    for m in range(K.shape[0]):
        J = J + torch.kron(Am, K[m])
        Am = A @ Am
    return J


def to_mode_coordinates(J: torch.Tensor, S: torch.Tensor, d: int) -> torch.Tensor:
    """(S⁻¹ ⊗ I) J (S ⊗ I) without forming the Kronecker products."""
    T = S.shape[0]
    J4 = J.reshape(T, d, T, d)
    Sinv = torch.linalg.inv(S)
    return torch.einsum("ki,iajb,jl->kalb", Sinv, J4, S).reshape(T * d, T * d)


def diagonal_blocks(Jt: torch.Tensor, T: int, d: int) -> torch.Tensor:
    """The T diagonal d×d blocks of a (T d, T d) matrix: (T, d, d)."""
    J4 = Jt.reshape(T, d, T, d)
    idx = torch.arange(T, device=Jt.device)
    return J4[idx, :, idx, :]


def off_block_mass(Jt: torch.Tensor, T: int, d: int) -> float:
    """‖Jt − blockdiag(Jt)‖_F / ‖Jt‖_F: how far the transformed Jacobian is from block diagonal."""
    J4 = Jt.reshape(T, d, T, d).clone()
    idx = torch.arange(T, device=Jt.device)
    J4[idx, :, idx, :] = 0
    return float(J4.detach().norm() / Jt.detach().norm())


# ---- violations of Claim 2.2's conditions (negative controls) --------------------------
def shift_mixer(T: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """M = shift − I with M1 = 0: (M U)_t = U_{t−1} − U_t (t ≥ 1), 0 for t = 0 (causal)."""
    M = torch.diag(torch.ones(T - 1, dtype=dtype, device=device), -1) - torch.eye(T, dtype=dtype, device=device)
    M[0, 0] = 0
    return M


class TokenMixedStack(nn.Module):
    """The stack with a causal token-mixing sublayer U ↦ U + δ M U inserted before each MLP
    (violates condition (b), token-wise sublayers).  M1 = 0 keeps 1x̄ᵀ a reference."""

    def __init__(self, stack: Stack, delta: float, mixer: torch.Tensor | None = None):
        super().__init__()
        self.stack, self.delta = stack, float(delta)
        T = stack.config.T
        gamma = stack.layers[0].ln1.gamma
        self.register_buffer("mixer", shift_mixer(T, gamma.dtype, gamma.device) if mixer is None else mixer)

    def forward(self, x):
        for layer in self.stack.layers:
            u = (1.0 - layer.h * layer.decay) * x + layer.h * layer.mixing(x)
            u = u + self.delta * (self.mixer @ u)
            x = u + layer.h * layer.mlp(layer.ln2(u))
        return x


def set_alibi_slopes(stack: Stack, slopes) -> Stack:
    """Replace every layer's ALiBi score bias by per-head ``slopes`` (violates condition (c)
    when they differ).  Needs kernel='alibi' and len(slopes) == heads; returns the stack."""
    cfg = stack.config
    if cfg.kernel != "alibi":
        raise ValueError(f"kernel={cfg.kernel!r}: set_alibi_slopes needs kernel='alibi'")
    if len(slopes) != cfg.heads:
        raise ValueError(f"slopes has {len(slopes)} entries, expected heads={cfg.heads}")
    old = stack.layers[0].attn.bias
    T = cfg.T
    i = torch.arange(T, dtype=old.dtype, device=old.device)
    dist = i[:, None] - i[None, :]
    s = torch.tensor([float(v) for v in slopes], dtype=old.dtype, device=old.device)
    bias = (-s[:, None, None] * dist).masked_fill(dist < 0, float("-inf"))
    for layer in stack.layers:
        layer.attn.bias = bias.clone()
    return stack
