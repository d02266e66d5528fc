"""Stability margin μ and gate bound g* (docs/theory.md §5; Claims 5.1, 5.2) — numerics.

Every formula comes from ``numerics.generated.stability`` (derived in
``theory/stability.py``).  Four layers of functionality:

* **abstract per-layer systems** — norms a_ℓ = ‖G_ℓ‖, k_ℓ = ‖K_ℓ‖ (batched, last dim = layers):
  ``log_growth`` S(g), ``stability_margin`` μ, ``solve_gate_bound`` g* (batched Newton from
  g = 0, which increases monotonically to the root because S is concave and increasing),
  ``small_h_gate_bound`` μ / mean(k/a) (a proven lower bound on g*), ``gated_product``;
* **certification** — ``certify_gate_bound`` returns a ``GateEnclosure``: μ and g* enclosed
  with ``mpmath.iv`` interval arithmetic at 50 digits (an enclosure [g_lo, g_hi] is proved by
  S(g_lo) < 0 < S(g_hi) on intervals; S increasing makes the root unique), or the
  statement "no certified gate" where μ ≤ 0 cannot be excluded;
* **2×2 exact boundaries** — ``jury_gate_radius`` (discrete G + hgK) and
  ``routh_hurwitz_gate_radius`` (continuous F + gK) from the generated condition polynomials;
* **real stacks** — ``slow_mode_maps`` (per-layer G_ℓ and K_ℓ on the n·d slow, block-mean
  modes at the token-homogeneous reference), ``gate_certificate(stack)``,
  ``gated_layer_jacobians`` and ``expansion_onset`` (the real gated stack, measured).

Reconstruction (docs/theory.md §5): the gated layer map on the slow modes is G_ℓ + h g K_ℓ with
G_ℓ = Π J_ℓ Π⁺ (the fast layer Jacobian at the gate-0 reference, compressed to block means) and
K_ℓ = (1/h) ∂_g Π J_ℓ(g) Π⁺ at g = 0, the derivative of the real gated layer's block-mean
Jacobian in its gate: the slow branch's Jacobian carried through the MLP stage plus the shift of
the MLP's operating point by the slow output (``slow_mode_maps``).  ``gated_layer_jacobians``
(the whole gated layer by autograd, at any gate) and ``expansion_onset`` measure the real stack
against the certificate.

``slow_mode_maps`` and ``gate_certificate`` take ``progress``, a callback ``progress(done, total,
label)`` called as each unit of the work finishes (one layer's map, one spectral norm), so the
caller can show a bar with the time left; numerics imports no progress library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch.func import functional_call

from numerics import kernels as Kn
from numerics.generated import stability as gen

STATUSES = ("certified", "no certified gate", "unconstrained")
EPS64 = float(np.finfo(np.float64).eps)


# -- abstract per-layer systems ------------------------------------------------------------------

def _norm_arrays(a, k=None):
    a = torch.as_tensor(a, dtype=torch.float64) if not torch.is_tensor(a) else a
    if a.dim() < 1 or a.shape[-1] < 1:
        raise ValueError(f"a has shape {tuple(a.shape)}: need (..., layers) with layers >= 1")
    if not torch.isfinite(a).all() or (a <= 0).any():
        raise ValueError("a = ‖G_ℓ‖ must be finite and > 0 for every layer")
    if k is None:
        return a
    k = torch.as_tensor(k, dtype=a.dtype, device=a.device) if not torch.is_tensor(k) else k
    if k.shape[-1] != a.shape[-1]:
        raise ValueError(f"k has {k.shape[-1]} layers, a has {a.shape[-1]}")
    if not torch.isfinite(k).all() or (k < 0).any():
        raise ValueError("k = ‖K_ℓ‖ must be finite and >= 0 for every layer")
    return a, k


def _check_h(h) -> float:
    if not isinstance(h, (int, float)) or not math.isfinite(h) or h <= 0:
        raise ValueError(f"h={h!r} must be a positive number (the depth step 1/L)")
    return float(h)


def _scalar_like(value, ref: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(value, dtype=ref.dtype, device=ref.device)


def log_growth(a, k, h: float, g) -> torch.Tensor:
    """S(g) = Σ_ℓ log(a_ℓ + h g k_ℓ); ``a``, ``k`` (..., layers), ``g`` (...) or scalar, g ≥ 0."""
    a, k = _norm_arrays(a, k)
    h = _check_h(h)
    g = _scalar_like(g, a)
    return gen.layer_log_growth(a, k, _scalar_like(h, a), g[..., None]).sum(-1)


def log_growth_dg(a, k, h: float, g) -> torch.Tensor:
    """S'(g) = Σ_ℓ h k_ℓ / (a_ℓ + h g k_ℓ) ≥ 0."""
    a, k = _norm_arrays(a, k)
    h = _check_h(h)
    g = _scalar_like(g, a)
    return gen.layer_log_growth_dg(a, k, _scalar_like(h, a), g[..., None]).sum(-1)


def stability_margin(a, h: float) -> torch.Tensor:
    """μ = −(1/(Lh)) Σ_ℓ log a_ℓ (positive when the fast maps contract on balance)."""
    a = _norm_arrays(a)
    h = _check_h(h)
    L = a.shape[-1]
    return gen.layer_margin_term(a, _scalar_like(h, a), _scalar_like(L, a)).sum(-1)


def small_h_gate_bound(a, k, h: float) -> torch.Tensor:
    """The closed form g₁ = μ / mean(k/a), the Newton step from 0 (≤ g* by concavity; → μ/mean k
    as a → 1).  NaN where μ ≤ 0; inf where every k_ℓ = 0."""
    a, k = _norm_arrays(a, k)
    mu = stability_margin(a, h)
    q = log_growth_dg(a, k, h, 0.0) / (h * a.shape[-1])  # S'(0)/(hL) = mean(k/a)
    out = gen.small_h_gate_bound(mu, q)
    return torch.where(mu > 0, out, torch.full_like(out, math.nan))


def solve_gate_bound(a, k, h: float, *, rtol: float = 4 * EPS64, max_iter: int = 200) -> torch.Tensor:
    """g* with S(g*) = 0, batched over leading dims.

    Newton from g = 0: S is increasing and concave (theory.stability.monotonicity_steps), so
    every iterate stays below the root and the sequence increases to it (no bracketing
    needed).  NaN where μ ≤ 0 (no root on g ≥ 0: no certified gate); inf where all k_ℓ = 0.
    """
    a, k = _norm_arrays(a, k)
    h = _check_h(h)
    mu = stability_margin(a, h)
    g = torch.zeros_like(mu)
    active = (mu > 0) & (k.sum(-1) > 0)
    for _ in range(max_iter):
        if not active.any():
            break
        S = log_growth(a, k, h, g)
        dS = log_growth_dg(a, k, h, g)
        step = gen.newton_step(g, S, dS) - g
        new = torch.where(active, g + step, g)
        active = active & (step.abs() > rtol * new.abs())
        g = new
    g = torch.where(mu > 0, g, torch.full_like(g, math.nan))
    return torch.where((k.sum(-1) == 0) & (mu > 0), torch.full_like(g, math.inf), g)


def gated_product(G: torch.Tensor, K: torch.Tensor, h: float, g) -> torch.Tensor:
    """Π_ℓ (G_ℓ + h g K_ℓ), depth-ordered (layer 0 acts first); G, K (..., layers, n, n)."""
    if G.shape != K.shape or G.dim() < 3 or G.shape[-1] != G.shape[-2]:
        raise ValueError(f"G {tuple(G.shape)} and K {tuple(K.shape)} must both be (..., layers, n, n)")
    h = _check_h(h)
    g = _scalar_like(g, G)
    out = None
    for l in range(G.shape[-3]):
        M = gen.gated_layer_map(G[..., l, :, :], K[..., l, :, :], _scalar_like(h, G), g)
        out = M if out is None else M @ out
    return out


def spectral_norm(M: torch.Tensor) -> torch.Tensor:
    """Largest singular value over the last two dims: √λ_max(MᵀM) (symmetric eigensolver, a few
    times faster than an SVD; relative accuracy O(n·eps), inside gate_certificate's rel_err)."""
    return torch.linalg.eigvalsh(M.transpose(-1, -2) @ M)[..., -1].clamp_min(0).sqrt()


# -- interval certification ----------------------------------------------------------------------

@dataclass
class GateEnclosure:
    """μ and g* with interval enclosures proved by ``mpmath.iv`` (50 digits).

    ``status``: "certified" (μ_lo > 0 and S(g_lo) < 0 < S(g_hi) on intervals), "no certified
    gate" (μ ≤ 0 cannot be excluded: the fast maps do not contract on balance), or
    "unconstrained" (every k_ℓ = 0: the slow path's linearisation vanishes).
    ``rel_err``: relative error allowed on every input norm (the enclosure holds for all
    norms within it)."""

    layers: int
    h: float
    mu: float
    mu_lo: float
    mu_hi: float
    status: str
    g_star: float = math.nan
    g_lo: float = math.nan
    g_hi: float = math.nan
    g_small_h: float = math.nan
    rel_err: float = 0.0

    @property
    def certified(self) -> bool:
        return self.status == "certified"

    def admits(self, gate: float) -> bool:
        """True when |gate| ≤ g_lo (proved non-expanding) or the gate is unconstrained."""
        return self.status == "unconstrained" or (self.certified and abs(gate) <= self.g_lo)

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def __str__(self) -> str:
        margin = f"stability margin μ = {self.mu:.6g} ∈ [{self.mu_lo:.10g}, {self.mu_hi:.10g}]"
        if self.status == "certified":
            return (f"{margin}; gate bound g* ∈ [{self.g_lo:.10g}, {self.g_hi:.10g}] "
                    f"(interval-certified, mpmath.iv), small-h form μ/mean(k/a) = {self.g_small_h:.6g} ≤ g*")
        if self.status == "unconstrained":
            return f"{margin}; the slow path's linearisation is zero: every gate is non-expanding"
        if self.mu_hi <= 0:
            return (f"the stability margin μ = {self.mu:.3g} is negative, so no gate is certified "
                    f"(the fast maps do not contract on the slow modes; μ ∈ [{self.mu_lo:.10g}, {self.mu_hi:.10g}])")
        return (f"{margin}; the stability margin is not proved positive (its enclosure reaches 0), "
                f"so no gate is certified")


def _iv_sum_log(iv, a_iv, k_iv, h_iv, g):
    total = iv.mpf(0)
    for ai, ki in zip(a_iv, k_iv):
        total += iv.log(ai + h_iv * iv.mpf(g) * ki)
    return total


def certify_gate_bound(a, k, h: float, *, rel_err: float = 0.0, dps: int = 50) -> GateEnclosure:
    """Certify μ and g* for one system (``a``, ``k``: per-layer norms, 1-D).

    Each a_ℓ, k_ℓ is replaced by the interval [x(1 − rel_err), x(1 + rel_err)], h by an
    interval around 1/L-type values, and S(g) is evaluated in ``mpmath.iv``.  The float64
    root from ``solve_gate_bound`` is widened by ε = 1e-12, 1e-11, ... until S(g_lo) < 0 and
    S(g_hi) > 0 hold for every point of the boxes; g_lo, g_hi are float64 numbers, so the
    printed enclosure is exactly the proved one.
    """
    from mpmath import iv

    a, k = _norm_arrays(a, k)
    if a.dim() != 1:
        raise ValueError(f"certify_gate_bound takes one system: a must be 1-D, got {tuple(a.shape)}")
    if not (isinstance(rel_err, (int, float)) and 0 <= rel_err < 0.5):
        raise ValueError(f"rel_err={rel_err!r} must be in [0, 0.5)")
    h = _check_h(h)
    L = a.shape[0]
    mu = float(stability_margin(a, h))
    old = iv.dps
    iv.dps = dps
    try:
        widen = iv.mpf([1 - rel_err, 1 + rel_err])
        a_iv = [iv.mpf(float(x)) * widen for x in a]
        k_iv = [iv.mpf(float(x)) * widen for x in k]
        h_iv = iv.mpf(h)
        mu_iv = -sum((iv.log(x) for x in a_iv), iv.mpf(0)) / (L * h_iv)
        mu_lo, mu_hi = float(mu_iv.a), float(mu_iv.b)
        base = dict(layers=L, h=h, mu=mu, mu_lo=mu_lo, mu_hi=mu_hi, rel_err=rel_err)
        if float(k.max()) == 0.0:
            return GateEnclosure(status="unconstrained" if mu_iv.a > 0 else "no certified gate",
                                 g_star=math.inf if mu_iv.a > 0 else math.nan, **base)
        if not mu_iv.a > 0:
            return GateEnclosure(status="no certified gate", **base)
        g_star = float(solve_gate_bound(a, k, h))
        if not (math.isfinite(g_star) and g_star > 0):
            raise ArithmeticError(f"the float64 root g*={g_star} is not a positive number although the "
                                  f"interval margin is μ ≥ {mu_lo:.6g} > 0: solve_gate_bound disagrees "
                                  "with S(0) = −Lhμ < 0")
        g_small = float(small_h_gate_bound(a, k, h))
        eps = 1e-12
        while eps < 1.0:
            g_lo, g_hi = g_star * (1 - eps), g_star * (1 + eps)
            if _iv_sum_log(iv, a_iv, k_iv, h_iv, g_lo).b < 0 < _iv_sum_log(iv, a_iv, k_iv, h_iv, g_hi).a:
                return GateEnclosure(status="certified", g_star=g_star, g_lo=g_lo, g_hi=g_hi,
                                     g_small_h=g_small, **base)
            eps *= 10
        raise ArithmeticError(f"could not enclose g* ≈ {g_star} (rel_err={rel_err}); the norms may be "
                              "too uncertain")  # pragma: no cover - needs rel_err near 0.5
    finally:
        iv.dps = old


# -- 2×2 systems: exact boundaries -----------------------------------------------------------------

def _smallest_crossing(coeffs: torch.Tensor) -> torch.Tensor:
    """Smallest |g| over the real roots of every condition polynomial c₀ + c₁g + c₂g²
    (``coeffs`` (..., conditions, 3)); inf where no condition ever vanishes."""
    flat = coeffs.detach().cpu().numpy().reshape(-1, coeffs.shape[-2], 3)
    out = np.full(flat.shape[0], np.inf)
    for b, rows in enumerate(flat):
        best = np.inf
        for c in rows:
            scale = np.abs(c).max()
            if scale == 0:
                continue
            c = np.where(np.abs(c) <= 64 * EPS64 * scale, 0.0, c)
            roots = np.polynomial.polynomial.polyroots(np.trim_zeros(c, "b")) if np.any(c[1:]) else []
            for r in np.atleast_1d(roots):
                if abs(r.imag) <= 1e-9 * max(1.0, abs(r.real)):
                    best = min(best, abs(r.real))
        out[b] = best
    return torch.as_tensor(out, dtype=coeffs.dtype).reshape(coeffs.shape[:-2])


def jury_gate_radius(G: torch.Tensor, K: torch.Tensor, h: float) -> torch.Tensor:
    """Exact stability radius in |g| of the 2×2 map G + hgK (ρ < 1 inside): the smallest |g| at
    which a Jury condition vanishes.  Needs G Schur-stable (all conditions > 0 at g = 0)."""
    h = _check_h(h)
    coeffs = gen.jury_coefficients(G, K, _scalar_like(h, G))
    if (coeffs[..., 0] <= 0).any():
        raise ValueError("G is not Schur-stable (a Jury condition fails at g = 0): no stability radius")
    return _smallest_crossing(coeffs)


def routh_hurwitz_gate_radius(F: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """Exact stability radius in |g| of ẋ = (F + gK)x (2×2): the smallest |g| at which a
    Routh–Hurwitz condition (−tr > 0, det > 0) vanishes.  Needs F Hurwitz."""
    coeffs = gen.routh_hurwitz_coefficients(F, K)
    if (coeffs[..., 0] <= 0).any():
        raise ValueError("F is not Hurwitz (a Routh–Hurwitz condition fails at g = 0): no stability radius")
    return _smallest_crossing(coeffs)


def discrete_norm_gate_bound(G: torch.Tensor, K: torch.Tensor, h: float) -> torch.Tensor:
    """The norm bound for the depth-autonomous map G + hgK (any number of equal layers):
    the root of log(‖G‖ + h g ‖K‖) = 0."""
    return solve_gate_bound(spectral_norm(G)[..., None], spectral_norm(K)[..., None], h)


def log_norm(F: torch.Tensor) -> torch.Tensor:
    """Spectral logarithmic norm m(F) = λ_max((F + Fᵀ)/2)."""
    return torch.linalg.eigvalsh(gen.symmetric_part(F))[..., -1]


def continuous_norm_gate_bound(F: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """μ/κ with μ = −m(F), κ = ‖K‖ (NaN where m(F) ≥ 0)."""
    m = log_norm(F)
    out = gen.continuous_gate_bound(m, spectral_norm(K))
    return torch.where(m < 0, out, torch.full_like(out, math.nan))


# -- random systems ------------------------------------------------------------------------------

def _orthogonal(batch: int, n: int, gen_: torch.Generator) -> torch.Tensor:
    Q, R = torch.linalg.qr(torch.randn(batch, n, n, generator=gen_, dtype=torch.float64))
    return Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))[..., None, :]


def random_systems(batch: int, layers: int, dim: int, seed: int, *,
                   norm_range: tuple[float, float] = (0.5, 1.05)) -> tuple[torch.Tensor, torch.Tensor]:
    """Random per-layer systems G, K (batch, layers, dim, dim), float64.

    G_ℓ is a Gaussian matrix rescaled to a spectral norm uniform in ``norm_range`` (so some
    layers expand); K_ℓ is Gaussian / √dim.  No alignment: the bound is generally loose."""
    for name, v in (("batch", batch), ("layers", layers), ("dim", dim)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive integer")
    gen_ = torch.Generator().manual_seed(seed)
    G = torch.randn(batch, layers, dim, dim, generator=gen_, dtype=torch.float64)
    lo, hi = norm_range
    target = lo + (hi - lo) * torch.rand(batch, layers, generator=gen_, dtype=torch.float64)
    G = G * (target / spectral_norm(G))[..., None, None]
    K = torch.randn(batch, layers, dim, dim, generator=gen_, dtype=torch.float64) / math.sqrt(dim)
    return G, K


def aligned_systems(batch: int, layers: int, dim: int, seed: int, *,
                    norm_range: tuple[float, float] = (0.5, 1.05)) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned systems (Claim 5.2): G_ℓ = U diag(a_ℓ) Uᵀ, K_ℓ = U diag(k_ℓ) Uᵀ with one
    orthogonal U per system, positive entries, and a common top direction (entry 0 is the
    largest of both a_ℓ and k_ℓ in every layer)."""
    gen_ = torch.Generator().manual_seed(seed)
    U = _orthogonal(batch, dim, gen_)[:, None]
    lo, hi = norm_range
    top_a = lo + (hi - lo) * torch.rand(batch, layers, 1, generator=gen_, dtype=torch.float64)
    rest_a = top_a * torch.rand(batch, layers, dim - 1, generator=gen_, dtype=torch.float64)
    top_k = 0.5 + torch.rand(batch, layers, 1, generator=gen_, dtype=torch.float64)
    rest_k = top_k * torch.rand(batch, layers, dim - 1, generator=gen_, dtype=torch.float64)
    a = torch.cat([top_a, rest_a], -1)
    k = torch.cat([top_k, rest_k], -1)
    G = U @ torch.diag_embed(a) @ U.transpose(-1, -2)
    K = U @ torch.diag_embed(k) @ U.transpose(-1, -2)
    return G, K


def random_discrete_2x2(batch: int, seed: int, h: float) -> tuple[torch.Tensor, torch.Tensor]:
    """2×2 pairs (G, K) with ‖G‖ uniform in (0.3, 0.95) and Gaussian K (both float64)."""
    G, K = random_systems(batch, 1, 2, seed, norm_range=(0.3, 0.95))
    return G[:, 0], K[:, 0]


def random_continuous_2x2(batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """2×2 pairs (F, K): F Gaussian shifted so that its log-norm is −u, u uniform in (0.1, 1);
    K Gaussian."""
    gen_ = torch.Generator().manual_seed(seed)
    F = torch.randn(batch, 2, 2, generator=gen_, dtype=torch.float64)
    u = 0.1 + 0.9 * torch.rand(batch, generator=gen_, dtype=torch.float64)
    F = F - (log_norm(F) + u)[:, None, None] * torch.eye(2, dtype=torch.float64)
    K = torch.randn(batch, 2, 2, generator=gen_, dtype=torch.float64)
    return F, K


# -- real stacks ---------------------------------------------------------------------------------

def default_reference(stack) -> torch.Tensor:
    """x̄₀ ~ N(0, I_d) drawn from seed ``stack.config.seed`` (what ``gate_certificate`` uses)."""
    p = next(stack.parameters())
    gen_ = torch.Generator().manual_seed(stack.config.seed)
    return torch.randn(stack.config.d, generator=gen_, dtype=torch.float64).to(p.dtype).to(p.device)


def _reference_tokens(stack, xbar: torch.Tensor) -> torch.Tensor:
    """x̄_0 .. x̄_{L−1} at gate 0 (the gate does not enter the token map), (L, d)."""
    states = [xbar]
    with torch.no_grad():
        for layer in stack.layers[:-1]:
            states.append(layer.token_map(states[-1]))
    return torch.stack(states)


def _check_stack(stack):
    cfg = stack.config
    if cfg.P is None:
        raise ValueError("the gate bound needs the slow path: the stack has P=None (set P)")
    if cfg.T // cfg.P < 2:
        raise ValueError(f"T={cfg.T}, P={cfg.P} gives one block: the shifted slow path is identically zero")


#: ``progress(done, total, label)``: told as each unit of a long computation finishes
Progress = Callable[[int, int, str], None]


class _Steps:
    """Counts the finished units of one computation of ``total`` units and tells ``progress``."""

    def __init__(self, total: int, progress: Progress | None):
        self.total, self.done, self.progress = total, 0, progress

    def __call__(self, label: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, label)


def _slow_mode_map_steps(layers: int, method: str) -> int:
    """The units ``slow_mode_maps`` reports: per layer the slow branch and the operating-point shift, and
    the fast maps (per layer by autograd, then the MLP stage; one step from the generated factorisation)."""
    return 2 * layers + (1 if method == "factorisation" else layers + 1)


def _batched_jacobian(f, x0: torch.Tensor) -> torch.Tensor:
    """Jacobian of f at x0 as (out.numel(), x0.numel()) by one reverse pass: f runs on a batch of
    M = out.numel() copies of x0 and the cotangent is the identity, so the batch's input gradients
    are the Jacobian's rows.  (f must act independently on each leading batch entry; plain
    autograd avoids torch.func's one-time import cost, seconds on a loaded machine.)"""
    with torch.enable_grad():
        M = f(x0.detach()[None]).numel()
        xb = x0.detach().expand(M, *x0.shape).clone().requires_grad_(True)
        out = f(xb).reshape(M, M)
        eye = torch.eye(M, dtype=out.dtype, device=out.device)
        # a scalar output with no grad_outputs: autograd then skips a one-time import of torch.fx
        # (≈1.5 s) that an explicit cotangent triggers
        (grad,) = torch.autograd.grad((out * eye).sum(), xb)
    return grad.reshape(M, -1)


def _slow_branch_maps(stack, xs: torch.Tensor, step: _Steps) -> torch.Tensor:
    """Π D slow_ℓ Π⁺ at the reference, by autograd of the layer's own LN₁ and slow attention:
    (L, n·d, n·d), rows/cols row-major (block, feature).

    The slow path is lift ∘ shift ∘ attention ∘ pool.  On block-constant inputs Π⁺e the token-wise
    LN₁ commutes with the lift, pool ∘ Π⁺ = I and Π ∘ lift = I, so its compression to block
    means is e ↦ S_n · SlowAttn(LN₁(x̄ + e)) on n tokens (S_n the one-block shift)."""
    cfg = stack.config
    n, d = cfg.T // cfg.P, cfg.d
    p0 = next(stack.parameters())
    shift = Kn.block_shift_matrix(n, dtype=p0.dtype, device=p0.device)
    zero = torch.zeros(n, d, dtype=p0.dtype, device=p0.device)
    out = []
    for i, (layer, x) in enumerate(zip(stack.layers, xs)):
        out.append(_batched_jacobian(lambda e: shift @ layer.slow.attn(layer.ln1(x + e)), zero))
        step(f"slow branch, layer {i + 1}")
    return torch.stack(out).detach()


def _fast_maps_autograd(stack, xs: torch.Tensor, step: _Steps) -> torch.Tensor:
    """Π J_ℓ Π⁺ with J_ℓ the gate-0 layer Jacobian, by autograd of the whole layer (exact for any
    kernel; a batch of n·d copies of a T-token layer: for small stacks and cross-checks)."""
    cfg = stack.config
    T, P, d = cfg.T, cfg.P, cfg.d
    n = T // P
    p0 = next(stack.parameters())
    Pi = Kn.pool_matrix(T, P, dtype=p0.dtype, device=p0.device)
    Lift = Kn.lift_matrix(T, P, dtype=p0.dtype, device=p0.device)
    zero = torch.zeros(n, d, dtype=p0.dtype, device=p0.device)
    out = []
    for i, (layer, x) in enumerate(zip(stack.layers, xs)):
        params = {k: v.detach() for k, v in layer.named_parameters()}
        params["gate"] = torch.zeros_like(params["gate"])
        out.append(_batched_jacobian(
            lambda e: Pi @ functional_call(layer, params, (x.expand(T, d) + Lift @ e,)), zero))
        step(f"fast map, layer {i + 1}")
    return torch.stack(out).detach()


def _factorisation_coefficients(stack, xs: torch.Tensor):
    """(G_ℓ(0), G_ℓ(1) − G_ℓ(0), C_ℓ), each (L, d, d), from the factorisation family's generated code.

    ``xs`` is the reference trajectory x̄_0 … x̄_{L−1}; the factorisation numerics rebuild it
    from x̄_0 with the stack's own token map.
    """
    from numerics.factorisation import layer_B_C, layer_blocks

    xbar = xs[0].detach()
    blocks = layer_blocks(stack, xbar, torch.tensor([0.0, 1.0], dtype=xbar.dtype, device=xbar.device))
    _, C = layer_B_C(stack, xbar)
    return blocks[0].detach(), (blocks[1] - blocks[0]).detach(), C.detach()


#: The autograd route differentiates n·d copies of a T-token layer; above this many scalar
#: (tokens × slow modes × width) it takes minutes on a CPU.
AUTOGRAD_LIMIT = 2**17


def resolve_method(stack) -> str:
    """"factorisation" when every head shares one frozen kernel and the factorisation family's
    generated code exists, else "autograd"."""
    try:
        stack.frozen_kernel()
        from numerics.generated import factorisation  # noqa: F401  (presence only)
    except (ValueError, ImportError):
        return "autograd"
    return "factorisation"


def slow_mode_maps(stack, xbar: torch.Tensor | None = None, *, method: str = "auto",
                   progress: Progress | None = None):
    """Per-layer maps on the slow (block-mean) modes at the token-homogeneous reference.

    Returns (G, K), each (L, n·d, n·d) in block-mean coordinates (row-major (block, feature)):
    G_ℓ = ΠJ_ℓ(0)Π⁺ the gate-0 layer Jacobian and K_ℓ = (1/h) ∂/∂g ΠJ_ℓ(g)Π⁺ at g = 0, the
    derivative of the real gated layer's block-mean Jacobian in its gate (docs/theory.md §5).

    The layer is u = (1 − hα)X + h·attn(LN₁X) + h g·slow(LN₁X), X' = u + h·MLP(LN₂u), so by the
    product rule, with C(u) = h·D(MLP∘LN₂)(u) and s_b the slow branch's output on block b,

        K_ℓ = (I_n ⊗ (I + C_ℓ)) · ΠD slow_ℓΠ⁺  +  diag_b(DC_ℓ(ū_ℓ)[s_b]) · (I_n ⊗ (I + C_ℓ))⁻¹ G_ℓ:

    the slow branch carried through the MLP stage, plus the shift of the MLP's operating point by
    the slow output (O(h) relative to the first term; block 0 receives no slow output).
    ``method``: "factorisation" assembles G_ℓ = I_n ⊗ G_ℓ(0) + A_c ⊗ (G_ℓ(1) − G_ℓ(0)) from the
    generated blocks of Claim 2.1 (needs one frozen kernel shared by all heads); "autograd"
    differentiates the whole layer (any kernel, slow); "auto" picks the first that applies.
    C_ℓ comes from the generated ``C_layer`` ("factorisation") or from autograd of the layer's own
    MLP and LN₂ at its reference input ū_ℓ ("autograd").  ``gated_layer_jacobians`` is the
    independent route (the whole gated layer by autograd); the ledger compares the two.
    For the causal kernel ΠJΠ⁺ is the Galerkin (compressed) map: the fast layer does not keep
    block-constant states block-constant (Claim 3.2(a)), so products of compressed maps are the
    coarse model's, not the full Jacobian's restriction.
    ``progress(done, total, label)`` is told as each layer's map finishes.
    """
    _check_stack(stack)
    if method not in ("auto", "factorisation", "autograd"):
        raise ValueError(f"method={method!r} is not one of auto, factorisation, autograd")
    if method == "auto":
        method = resolve_method(stack)
    return _slow_mode_maps(stack, xbar, method, _Steps(_slow_mode_map_steps(stack.config.layers, method), progress))


def _slow_mode_maps(stack, xbar: torch.Tensor | None, method: str, step: _Steps):
    """``slow_mode_maps`` with ``method`` resolved, each finished unit counted by ``step``."""
    xs = _reference_states(stack, xbar)
    cfg = stack.config
    n, d = cfg.T // cfg.P, cfg.d
    Ds = _slow_branch_maps(stack, xs, step)
    p0 = next(stack.parameters())
    if method == "factorisation":
        G0, G1, C = _factorisation_coefficients(stack, xs)
        A_c = gen.compressed_kernel(Kn.pool_matrix(cfg.T, cfg.P, dtype=p0.dtype, device=p0.device),
                                    stack.frozen_kernel(),
                                    Kn.lift_matrix(cfg.T, cfg.P, dtype=p0.dtype, device=p0.device))
        G = gen.slow_mode_fast_map(A_c, G0, G1)
        step("fast maps from the generated factorisation")
    else:
        G = _fast_maps_autograd(stack, xs, step)
        C = _mlp_stage_autograd(stack, xs)
        step("MLP stage by autograd")
    factor = gen.mlp_stage_factor(C)  # (L, d, d), column form: acts on each token's feature vector
    L, N = G.shape[0], n * d
    K = torch.einsum("lij,lajbk->laibk", factor, Ds.reshape(-1, n, d, n, d)).reshape(-1, N, N)
    G_u = torch.linalg.solve(factor[:, None], G.reshape(L, n, d, N))  # Π ∂u/∂X Π⁺, (L, n, d, N)
    shift = _mlp_operating_point_shift(stack, xs, step)  # (L, n, d, d)
    K = K + torch.einsum("laij,lajc->laic", shift, G_u).reshape(L, N, N)
    return G.detach(), K.detach()


def _reference_states(stack, xbar: torch.Tensor | None) -> torch.Tensor:
    """x̄_0 … x̄_{L−1}, the inputs of the layers on the gate-0 token-homogeneous reference."""
    if xbar is None:
        xbar = default_reference(stack)
    if xbar.shape != (stack.config.d,):
        raise ValueError(f"xbar has shape {tuple(xbar.shape)}, expected (d={stack.config.d},)")
    return _reference_tokens(stack, xbar)


def _ln2_inputs(stack, xs: torch.Tensor) -> list[torch.Tensor]:
    """ū_ℓ, the input each layer's LN₂ receives on the reference, read off the layer's own token map."""
    out = []
    for layer, x in zip(stack.layers, xs):
        seen = []
        handle = layer.ln2.register_forward_pre_hook(lambda mod, inp: seen.append(inp[0].detach()))
        try:
            with torch.no_grad():
                layer.token_map(x)
        finally:
            handle.remove()
        out.append(seen[0])
    return out


def _mlp_stage_autograd(stack, xs: torch.Tensor) -> torch.Tensor:
    """C_ℓ = h·D(MLP∘LN₂)(ū_ℓ) by autograd of the layer's own MLP and LN₂ at ū_ℓ."""
    return torch.stack([layer.h * _batched_jacobian(lambda u, layer=layer: layer.mlp(layer.ln2(u)), u)
                        for layer, u in zip(stack.layers, _ln2_inputs(stack, xs))]).detach()


def _slow_outputs(stack, xs: torch.Tensor) -> torch.Tensor:
    """s_ℓ,b: the slow branch's output slow(LN₁(1x̄_ℓᵀ)) averaged over block b, (L, n, d), by the
    layer's own SlowPath on T tokens (block 0 receives zero from the one-block shift)."""
    cfg = stack.config
    p0 = next(stack.parameters())
    Pi = Kn.pool_matrix(cfg.T, cfg.P, dtype=p0.dtype, device=p0.device)
    with torch.no_grad():
        return torch.stack([Pi @ layer.slow(layer.ln1(x.expand(cfg.T, cfg.d)))
                            for layer, x in zip(stack.layers, xs)])


def _mlp_operating_point_shift(stack, xs: torch.Tensor, step: _Steps) -> torch.Tensor:
    """DC_ℓ(ū_ℓ)[s_b] = h · ∂/∂t D(MLP∘LN₂)(ū_ℓ + t s_b) at t = 0, (L, n, d, d), by reverse-over-
    reverse autograd of the layer's own MLP and LN₂ (the gate moves LN₂'s input by h g s_b).

    Row i of D²m(ū)[s] is ∂/∂u (Dm(u)s)_i: one pass builds Dm on n·d copies of ū (copy (b, i)
    yields row i), a second differentiates row i · s_b on its own copy."""
    S = _slow_outputs(stack, xs)
    n, d = S.shape[1], S.shape[2]
    out = []
    for i, (layer, u, s) in enumerate(zip(stack.layers, _ln2_inputs(stack, xs), S)):
        eye = torch.eye(d, dtype=u.dtype, device=u.device)
        with torch.enable_grad():
            ub = u.detach().expand(n, d, d).clone().requires_grad_(True)
            m = layer.mlp(layer.ln2(ub))  # (n, d copies, d)
            (J,) = torch.autograd.grad((m * eye).sum(), ub, create_graph=True)  # J[b, i] = ∇m_i
            (H,) = torch.autograd.grad(torch.einsum("bij,bj->", J, s), ub)
        out.append(layer.h * H)
        step(f"MLP operating-point shift, layer {i + 1}")
    return torch.stack(out).detach()


def gated_layer_jacobians(stack, gates, xbar: torch.Tensor | None = None) -> torch.Tensor:
    """ΠJ_ℓ(g)Π⁺ of the real gated layer at its gate-0 reference input 1x̄_ℓᵀ, for every gate g:
    (len(gates), L, n·d, n·d), by autograd of the whole layer with its gate replaced by g.

    The reference inputs are held at the gate-0 trajectory while the gate moves (the certificate
    linearises there).  One reverse pass per layer: a batch of len(gates)·n·d copies of the
    T-token layer, each with its own gate, and the identity as cotangent.
    """
    _check_stack(stack)
    xs = _reference_states(stack, xbar)
    cfg = stack.config
    T, P, d = cfg.T, cfg.P, cfg.d
    n = T // P
    N = n * d
    p0 = next(stack.parameters())
    gates = torch.as_tensor(gates, dtype=p0.dtype).to(p0.device).reshape(-1)
    if not torch.isfinite(gates).all():
        raise ValueError("gates must be finite numbers")
    B = gates.numel() * N
    Pi = Kn.pool_matrix(T, P, dtype=p0.dtype, device=p0.device)
    Lift = Kn.lift_matrix(T, P, dtype=p0.dtype, device=p0.device)
    cotangent = torch.eye(N, dtype=p0.dtype, device=p0.device).repeat(gates.numel(), 1)
    out = []
    for layer, x in zip(stack.layers, xs):
        params = {k: v.detach() for k, v in layer.named_parameters()}
        params["gate"] = gates.repeat_interleave(N).reshape(B, 1, 1)
        with torch.enable_grad():
            E = torch.zeros(B, n, d, dtype=p0.dtype, device=p0.device, requires_grad=True)
            y = Pi @ functional_call(layer, params, (x.expand(T, d) + Lift @ E,))
            (grad,) = torch.autograd.grad((y.reshape(B, N) * cotangent).sum(), E)
        out.append(grad.reshape(gates.numel(), N, N))
    return torch.stack(out, 1).detach()


def product_log_norm(maps: torch.Tensor) -> torch.Tensor:
    """log‖Π_ℓ M_ℓ‖₂ (layer 0 acts first) for maps (..., L, N, N)."""
    prod = maps[..., 0, :, :]
    for l in range(1, maps.shape[-3]):
        prod = maps[..., l, :, :] @ prod
    return torch.log(spectral_norm(prod))


@dataclass
class Onset:
    """Where the real gated stack first expands on the slow modes: the smallest |g| on a search
    grid with log‖Π_ℓ ΠJ_ℓ(g)Π⁺‖ > 0 (per sign of g), refined by bisection-like grids to
    relative width ≤ ``resolution``.  ``onset`` is None when no gate up to ``cap`` expands, or
    when the stack already expands at g = 0 (``expands_at_zero``)."""

    onset: float | None
    onset_plus: float | None
    onset_minus: float | None
    cap: float
    resolution: float
    expands_at_zero: bool
    evaluations: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def expansion_onset(stack, scale: float, *, xbar: torch.Tensor | None = None, cap_factor: float = 64.0,
                    grid: int = 8, rounds: int = 2) -> Onset:
    """Measure the onset of expansion of the real gated stack in |g|, for both signs of g.

    The coarse search runs over gates 0 and scale·2^j, j = 0 … log₂(cap_factor) (``scale``: e.g.
    the certified g*); the first coarse bracket [lo, 2 lo] where log‖Π_ℓ ΠJ_ℓ(g)Π⁺‖ turns positive
    is refined ``rounds`` times on ``grid`` interior points (both signs in one batch), so the
    onset is known to relative width ``resolution`` = 1/(grid + 1)^rounds.  The first crossing is
    reported: a non-monotone norm could dip back below 1 further out.
    """
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale={scale!r} must be a positive number (e.g. the certified g*)")
    stack = at_zero_gate(stack)
    coarse = scale * 2.0 ** torch.arange(0, int(math.log2(cap_factor)) + 1, dtype=torch.float64)
    coarse = torch.cat([torch.zeros(1, dtype=torch.float64), coarse])
    log_norms = product_log_norm(gated_layer_jacobians(stack, torch.cat([coarse, -coarse[1:]]), xbar))
    evaluations = 2 * coarse.numel() - 1
    expands_at_zero = bool(log_norms[0] > 0)
    m = coarse.numel()
    brackets = {}
    for sign, vals in ((1.0, log_norms[:m]), (-1.0, torch.cat([log_norms[:1], log_norms[m:]]))):
        hit = torch.nonzero(vals > 0).flatten()
        if not expands_at_zero and hit.numel():
            j = int(hit[0])
            brackets[sign] = [float(coarse[j - 1]), float(coarse[j])]
    for _ in range(rounds if brackets else 0):
        pts = {sign: torch.linspace(lo, hi, grid + 2, dtype=torch.float64)[1:-1] for sign, (lo, hi) in brackets.items()}
        signed = torch.cat([sign * p for sign, p in pts.items()])
        inner = product_log_norm(gated_layer_jacobians(stack, signed, xbar)).split(grid)
        evaluations += signed.numel()
        for (sign, p), vals in zip(pts.items(), inner):
            first = torch.nonzero(vals > 0).flatten()
            lo, hi = brackets[sign]
            if first.numel():
                i = int(first[0])
                brackets[sign] = [float(p[i - 1]) if i > 0 else lo, float(p[i])]
            else:
                brackets[sign] = [float(p[-1]), hi]
    found = {sign: brackets[sign][1] if sign in brackets else None for sign in (1.0, -1.0)}
    both = [v for v in found.values() if v is not None]
    return Onset(onset=min(both) if both else None, onset_plus=found[1.0], onset_minus=found[-1.0],
                 cap=float(coarse[-1]), resolution=1.0 / (grid + 1) ** rounds,
                 expands_at_zero=expands_at_zero, evaluations=evaluations)


@dataclass
class GateCertificate:
    """The gate bound of a real stack: per-layer slow-mode norms and their certified enclosure."""

    enclosure: GateEnclosure
    a: list[float]
    k: list[float]
    method: str
    slow_modes: int
    kernel: str
    notes: list[str] = field(default_factory=list)
    maps: tuple | None = field(default=None, repr=False)  # (G, K), each (L, N, N); not serialised

    @property
    def status(self) -> str:
        return self.enclosure.status

    def as_dict(self) -> dict:
        return {"enclosure": self.enclosure.as_dict(), "a": self.a, "k": self.k, "method": self.method,
                "slow_modes": self.slow_modes, "kernel": self.kernel, "notes": self.notes}

    def __str__(self) -> str:
        a = np.asarray(self.a)
        return (f"{self.enclosure}\n  per-layer ‖G_ℓ‖ on {self.slow_modes} slow modes in "
                f"[{a.min():.4g}, {a.max():.4g}], ‖K_ℓ‖ in [{min(self.k):.4g}, {max(self.k):.4g}] "
                f"({self.method}, kernel {self.kernel})")


def at_zero_gate(stack):
    """The stack itself when every gate is 0, else a copy with gates 0: the certificate
    linearises G_ℓ + h g K_ℓ at g = 0, where the token-homogeneous reference exists."""
    if all(float(layer.gate.detach()) == 0.0 for layer in stack.layers):
        return stack
    import copy

    zeroed = copy.deepcopy(stack)
    with torch.no_grad():
        for layer in zeroed.layers:
            layer.gate.zero_()
    return zeroed


def gate_certificate(stack, xbar: torch.Tensor | None = None, *, method: str = "auto",
                     progress: Progress | None = None) -> GateCertificate:
    """Certified stability margin and gate bound of a hierarchical stack (P set).

    The norms ‖G_ℓ‖, ‖K_ℓ‖ are float64 spectral norms of (n·d)-square matrices; the enclosure is
    proved for every norm within rel_err = 16·n·d·eps of them (a backward-error bound for the
    assembly and the SVD).  Plain pre-LN stacks usually expand on the slow modes (μ ≤ 0: "no
    certified gate").  Contractive stacks need ``decay`` together with a small LN gain / weight
    scale (e.g. decay=2, ln_gain=0.2, weight_scale=0.5): decay alone shrinks the reference x̄_ℓ,
    and pre-LN's 1/σ(x̄_ℓ) then grows B_ℓ and C_ℓ, so the margin stays negative.
    ``progress(done, total, label)`` is told as each layer's map, each of the 2L spectral norms (most
    of the time at the CLI's sizes) and the enclosure finish.
    """
    cfg = stack.config
    _check_stack(stack)
    stack = at_zero_gate(stack) if cfg.P is not None else stack
    resolved = resolve_method(stack) if method == "auto" else method
    if resolved not in ("factorisation", "autograd"):
        raise ValueError(f"method={method!r} is not one of auto, factorisation, autograd")
    step = _Steps(_slow_mode_map_steps(cfg.layers, resolved) + 2 * cfg.layers + 1, progress)
    G, K = _slow_mode_maps(stack, xbar, resolved, step)
    norms = []
    for name, maps in (("G", G), ("K", K)):  # one map at a time (the same numbers as one batched call on CPU)
        for i, M in enumerate(maps):
            norms.append(spectral_norm(M))
            step(f"spectral norm of {name}_{i + 1}")
    norms = torch.stack(norms).reshape(2, -1).to(torch.float64).cpu()
    a, k = norms[0], norms[1]
    N = G.shape[-1]
    enclosure = certify_gate_bound(a, k, cfg.h, rel_err=16 * N * EPS64)
    step("interval enclosure of μ and g*")
    notes = []
    if cfg.kernel == "causal":
        notes.append("causal kernel: G_ℓ is the compressed (Galerkin) map on block means (Claim 3.2(a) fails "
                     "for causal kernels)")
    return GateCertificate(enclosure=enclosure, a=a.tolist(), k=k.tolist(), method=resolved,
                           slow_modes=N, kernel=cfg.kernel, notes=notes, maps=(G, K))
