"""Saturation depth and block coarse-graining of the linearised stack (THEORY.md §3, Claims 3.1, 3.2).

Mode products.  At the token-homogeneous reference X_ℓ = 1x̄_ℓᵀ the layer Jacobian is
J_ℓ = Σ_m A^m ⊗ K_m (Claim 2.3), so for a right/left eigenvector pair As = λs, uᵀA = λuᵀ,
uᵀs = 1, its block on mode λ is G_ℓ(λ) = (uᵀ ⊗ I) J_ℓ (s ⊗ I): the Jacobian of
x ↦ uᵀ layer(1x̄ᵀ + s xᵀ) at x = 0 (``mode_blocks``, torch.func).  Products and ratios
use the generated code of ``theory/coarse_graining.py``.

Coarse-graining.  Π (pooling), Π⁺ (lift) and Q = Π⁺Π act on the token index of J; the
feature index rides along (J is handled as a (d, d) batch of T×T token operators).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch.func import jacrev

from numerics import kernels as K
from numerics.generated import coarse_graining as gen

EIG_TOL = 1e-8  # eigenvalues of a frozen kernel closer than this are one mode


# ---- modes of the frozen kernel ---------------------------------------------------------
@dataclass
class Mode:
    """One distinct eigenvalue λ of A with a right vector s (As = λs) and left vector u, uᵀs = 1."""

    lam: float
    s: torch.Tensor
    u: torch.Tensor


def _null_space(M: torch.Tensor, k: int) -> torch.Tensor:
    """Orthonormal basis (columns) of the k-dimensional (numerical) null space of M."""
    _, _, Vh = torch.linalg.svd(M)
    return Vh[-k:].transpose(0, 1)


def kernel_modes(A: torch.Tensor) -> tuple[list[Mode], float]:
    """Distinct eigenvalues of the frozen kernel A, persistent (λ = 1) first, and κ = cond(S).

    S stacks an orthonormal basis of every right eigenspace (the mode basis); κ is its
    2-norm condition number (1 for the symmetric full kernel)."""
    T = A.shape[-1]
    eye = torch.eye(T, dtype=A.dtype, device=A.device)
    ev = torch.linalg.eigvals(A).real.sort(descending=True).values.tolist()
    groups: list[list[float]] = []
    for v in ev:
        if groups and abs(groups[-1][0] - v) < EIG_TOL:
            groups[-1].append(v)
        else:
            groups.append([v])
    modes, columns = [], []
    for g in groups:
        lam = sum(g) / len(g)
        right = _null_space(A - lam * eye, len(g))
        left = _null_space((A - lam * eye).transpose(0, 1), len(g))
        s = right[:, 0]
        u = left @ (left.transpose(0, 1) @ s)  # s projected on the left eigenspace: uᵀs > 0
        modes.append(Mode(lam, s, u / (u @ s)))
        columns.append(right)
    if abs(modes[0].lam - 1.0) > EIG_TOL:
        raise ValueError(f"frozen kernel has largest eigenvalue {modes[0].lam}, expected 1")
    kappa = float(torch.linalg.cond(torch.cat(columns, dim=1)))
    return modes, kappa


def mode_blocks(stack, xbar: torch.Tensor, modes: list[Mode]) -> torch.Tensor:
    """G_ℓ(λ) for every layer and mode, shape (L, len(modes), d, d), by torch.func.

    G_ℓ(λ) = (uᵀ ⊗ I) J_ℓ (s ⊗ I) with J_ℓ the layer Jacobian at 1x̄_ℓᵀ (exact by Claim 2.1;
    needs gate 0)."""
    T, d = stack.config.T, stack.config.d
    X0 = torch.ones(T, 1, dtype=xbar.dtype, device=xbar.device) * xbar
    J = layer_jacobians(stack, X0).reshape(-1, T, d, T, d)
    U = torch.stack([m.u for m in modes])
    S = torch.stack([m.s for m in modes])
    return torch.einsum("kt,ltisj,ks->lkij", U, J, S)


def mode_products(blocks: torch.Tensor) -> torch.Tensor:
    """G_{≤ℓ}(λ) for ℓ = 0..L−1 from per-layer blocks (L, modes, d, d) -> (L, modes, d, d)."""
    prods, prev = [], torch.eye(blocks.shape[-1], dtype=blocks.dtype, device=blocks.device)
    for ell in range(blocks.shape[0]):
        prev = gen.mode_product_step(blocks[ell], prev)
        prods.append(prev)
    return torch.stack(prods)


def mode_ratios(products: torch.Tensor) -> torch.Tensor:
    """r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖₂/‖G_{≤ℓ}(1)‖₂ for the decaying modes, shape (L, modes − 1)."""
    norms = torch.linalg.matrix_norm(products, ord=2)
    return gen.mode_ratio(norms[:, 1:], norms[:, :1])


# ---- saturation depth -------------------------------------------------------------------
@dataclass
class SaturationDepth:
    """Measured saturation depth ℓ*(τ) and the computable bound ⌈log(τ/κ)/log ρ⌉ (Claim 3.1).

    ``measured`` is None when r stays above τ at the last layer.  ``bound`` uses the
    persistent-path ratio ρ̃ (``rho``) and is None when ρ̃ ≥ 1.  ``theory_rho`` is THEORY.md's
    ρ = max ‖G_ℓ(λ)‖/σ_min(G_ℓ(1)), which is ≥ 1 for every pre-LN stack (LN₁ kills 1), so
    the bound with it is always vacuous.  A bound ≥ L says nothing inside the stack."""

    tau: float
    layers: int
    lambdas: list[float]
    ratios: torch.Tensor          # (L, decaying modes): r_ℓ(λ)
    measured: int | None
    bound: int | None
    rho: float
    theory_rho: float
    kappa: float
    path_ratios: torch.Tensor     # (L,): ρ̃_ℓ; r_m ≤ Π_{ℓ≤m} ρ̃_ℓ
    reasons: list[str] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        return self.measured is not None

    @property
    def bound_vacuous(self) -> bool:
        """True when the bound says nothing within the stack (ρ̃ ≥ 1 or bound ≥ L)."""
        return self.bound is None or self.bound >= self.layers

    def __str__(self) -> str:
        last = ", ".join(f"λ={lam:.3g}: {r:.3f}" for lam, r in zip(self.lambdas, self.ratios[-1].tolist()))
        meas = (f"measured ℓ* = {self.measured}" if self.measured is not None
                else "no saturation depth (measured)")
        bnd = (f"bound ⌈log(τ/κ)/log ρ̃⌉ = {self.bound}" + (" (vacuous: ≥ L)" if self.bound_vacuous else "")
               if self.bound is not None else "no bound (ρ̃ ≥ 1, vacuous)")
        lines = [f"saturation depth at τ = {self.tau:g} over L = {self.layers} layers: {meas}; {bnd}",
                 f"  ρ̃ = {self.rho:.4f} (persistent path), THEORY ρ = {self.theory_rho:.4f} (≥ 1: vacuous), "
                 f"κ = {self.kappa:.3g}",
                 f"  r at the last layer: {last}"]
        lines += [f"  reason: {r}" for r in self.reasons]
        return "\n".join(lines)


def _check_tau(tau) -> float:
    if not isinstance(tau, (int, float)) or not math.isfinite(tau) or not 0 < tau < 1:
        raise ValueError(f"tol={tau!r} must be a number in (0, 1) (the tolerance τ on r_ℓ(λ))")
    return float(tau)


def saturation_depth(stack, xbar: torch.Tensor, tol: float) -> SaturationDepth:
    """ℓ*(τ) measured from the mode products, and its bound from per-layer data (Claim 3.1).

    ρ̃ = max_{ℓ,λ} ‖G_ℓ(λ)‖ ‖y_ℓ‖/‖y_{ℓ+1}‖ with y_{ℓ+1} = G_ℓ(1) y_ℓ, y₀ the top right singular
    vector of G_0(1); r_m ≤ Π_{ℓ≤m} ρ̃_ℓ ≤ ρ̃^{m+1} (theory/coarse_graining.py)."""
    tau = _check_tau(tol)
    modes, kappa = kernel_modes(stack.frozen_kernel())
    if len(modes) < 2:
        raise ValueError("the frozen kernel has no decaying mode (T = 1?)")
    blocks = mode_blocks(stack, xbar, modes)
    ratios = mode_ratios(mode_products(blocks))
    worst = ratios.max(dim=1).values
    L = blocks.shape[0]
    reasons = []
    measured = None
    if worst[-1] <= tau:
        measured = L - 1
        while measured > 0 and worst[measured - 1] <= tau:
            measured -= 1
    else:
        k = int(ratios[-1].argmax())
        reasons.append(f"r stays above τ: r_{L - 1}(λ={modes[k + 1].lam:.3g}) = {float(worst[-1]):.3f} > "
                       f"τ = {tau:g} at the last layer")
    decaying_norm = torch.linalg.matrix_norm(blocks[:, 1:], ord=2).max(dim=1).values   # (L,)
    theory_rho = float((decaying_norm / torch.linalg.svdvals(blocks[:, 0])[:, -1]).max())
    y = torch.linalg.svd(blocks[0, 0]).Vh[0]
    path = []
    for ell in range(L):
        y_next = blocks[ell, 0] @ y
        path.append(gen.persistent_path_ratio(decaying_norm[ell], y.norm(), y_next.norm()))
        y = y_next / y_next.norm()
    path = torch.stack(path)
    rho = float(path.max())
    bound = None
    if rho < 1:
        t = torch.tensor
        bound = int(gen.saturation_bound(t(tau, dtype=torch.float64), t(kappa, dtype=torch.float64),
                                         t(rho, dtype=torch.float64)))
        if bound >= L:
            reasons.append(f"bound {bound} ≥ L = {L}: vacuous inside the stack")
    else:
        reasons.append(f"ρ̃ = {rho:.4f} ≥ 1: no bound")
    reasons.append(f"THEORY ρ = {theory_rho:.4f} ≥ 1 (LN₁ kills 1, so G_ℓ(λ)1 = G_ℓ(1)1): its bound is vacuous")
    return SaturationDepth(tau=tau, layers=L, lambdas=[m.lam for m in modes[1:]], ratios=ratios,
                           measured=measured, bound=bound, rho=rho, theory_rho=theory_rho,
                           kappa=kappa, path_ratios=path, reasons=reasons)


# ---- block coarse-graining ---------------------------------------------------------------
def pooling(T: int, P: int, dtype=torch.float64, device=None):
    """(Π, Π⁺, Q): pooling I_n ⊗ 1ᵀ/P, lift I_n ⊗ 1, and the block-constant projector Q = Π⁺Π."""
    Pi = K.pool_matrix(T, P, dtype, device)
    Pi_plus = K.lift_matrix(T, P, dtype, device)
    return Pi, Pi_plus, gen.block_projector(Pi_plus, Pi)


def layer_jacobians(stack, X0: torch.Tensor) -> torch.Tensor:
    """Per-layer Jacobians along the trajectory from X0, shape (L, T·d, T·d) (row-major vec)."""
    traj = stack.trajectory(X0).detach()
    Td = X0.numel()
    return torch.stack([jacrev(layer)(traj[ell]).reshape(Td, Td).detach()
                        for ell, layer in enumerate(stack.layers)])


def depth_jacobians(stack, X0: torch.Tensor) -> torch.Tensor:
    """J_{≤ℓ} = J_ℓ ⋯ J_0 for ℓ = 0..L−1 (chain rule, Claim 1.2), shape (L, T·d, T·d)."""
    out, prev = [], None
    for J in layer_jacobians(stack, X0):
        prev = J if prev is None else J @ prev
        out.append(prev)
    return torch.stack(out)


def _token_ops(J: torch.Tensor, T: int, d: int) -> torch.Tensor:
    """(T·d, T·d) -> (d, d, T, T): the token operator of every feature pair."""
    return J.reshape(T, d, T, d).permute(1, 3, 0, 2)


def _from_token_ops(M: torch.Tensor) -> torch.Tensor:
    """(d, d, a, b) -> (a·d, b·d): inverse of ``_token_ops``."""
    d1, d2, a, b = M.shape
    return M.permute(2, 0, 3, 1).reshape(a * d1, b * d2)


def coarse_jacobian(J: torch.Tensor, T: int, d: int, P: int) -> torch.Tensor:
    """J_c = (Π ⊗ I) J (Π⁺ ⊗ I), shape (n·d, n·d)."""
    Pi, Pi_plus, _ = pooling(T, P, J.dtype, J.device)
    return _from_token_ops(gen.coarse_operator(Pi, _token_ops(J, T, d), Pi_plus))


@dataclass
class FactoringResiduals:
    """Relative residuals (spectral norm / ‖J‖₂) of the coarse-graining statements (Claim 3.2)."""

    left: float        # ‖ΠJ(I − Q)‖/‖J‖ = ‖ΠJ − J_cΠ‖/‖J‖   (exact factoring, one-sided)
    dual: float        # ‖JᵀΠ⁺ − Π⁺J_cᵀ‖/‖J‖                  (its dual form)
    two_sided: float   # ‖J − QJQ‖/‖J‖                         (approximate factoring, 3.2b)

    def __str__(self):
        return (f"‖ΠJ(I−Q)‖/‖J‖ = {self.left:.2e}, ‖JᵀΠ⁺ − Π⁺J_cᵀ‖/‖J‖ = {self.dual:.2e}, "
                f"‖J − QJQ‖/‖J‖ = {self.two_sided:.3f}")


def factoring_residuals(J: torch.Tensor, T: int, d: int, P: int) -> FactoringResiduals:
    """The three residuals of Claim 3.2 for one Jacobian J (T·d × T·d)."""
    Pi, Pi_plus, _ = pooling(T, P, J.dtype, J.device)
    ops = _token_ops(J, T, d)
    coarse = gen.coarse_operator(Pi, ops, Pi_plus)                 # (d, d, n, n)
    norm = torch.linalg.matrix_norm(J, ord=2)
    left = _from_token_ops(gen.left_factoring_residual(Pi, ops, Pi_plus))
    # Jᵀ's feature pair (j, i) holds M_ijᵀ: build the dual residual per pair, then swap the pair.
    dual = _from_token_ops(gen.dual_factoring_residual(ops, Pi_plus, coarse).transpose(0, 1))
    two = _from_token_ops(gen.two_sided_residual(ops, Pi_plus, Pi))

    def rel(R):
        return float(torch.linalg.matrix_norm(R, ord=2) / norm)

    return FactoringResiduals(left=rel(left), dual=rel(dual), two_sided=rel(two))
