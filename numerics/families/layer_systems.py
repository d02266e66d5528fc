"""Stability margin μ and gate bound g* of abstract per-layer systems (docs/theory.md §5; Claims 5.1, 5.2).

Every formula comes from ``numerics.generated.stability`` (derived in ``theory/stability.py``):

* **per-layer systems** — norms a_ℓ = ‖G_ℓ‖, k_ℓ = ‖K_ℓ‖ (batched, last dim = layers):
  ``log_growth`` S(g), ``stability_margin`` μ, ``solve_gate_bound`` g* (batched Newton from
  g = 0, which increases monotonically to the root because S is concave and increasing),
  ``small_h_gate_bound`` μ / mean(k/a) (a proven lower bound on g*), ``gated_product``;
* **certification** — ``certify_gate_bound`` returns a ``GateEnclosure``: μ and g* enclosed
  with ``mpmath.iv`` interval arithmetic at 50 digits (an enclosure [g_lo, g_hi] is proved by
  S(g_lo) < 0 < S(g_hi) on intervals; S increasing makes the root unique), or the
  statement "no certified gate" where μ ≤ 0 cannot be excluded;
* **2×2 exact boundaries** — ``jury_gate_radius`` (discrete G + hgK) and
  ``routh_hurwitz_gate_radius`` (continuous F + gK) from the generated condition polynomials;
* **random systems** — the draws the property tests and the ledger's controls run on.

A real stack's maps G_ℓ, K_ℓ are ``numerics.families.slow_mode_maps``; its certificate is
``numerics.families.stability.gate_certificate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from numerics.generated import stability as gen
from numerics.precision import EPS64



# -- abstract per-layer systems ------------------------------------------------------------------

def _norm_arrays(a, k=None):
    a = torch.as_tensor(a, dtype=torch.float64, device="cpu") if not torch.is_tensor(a) else a  # host: Python floats (a tensor keeps its device)
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


def top_singular_value(M: torch.Tensor) -> torch.Tensor:
    """‖M‖₂ over the last two dims, √λ_max(MᵀM) as :func:`spectral_norm`, with LAPACK's ?syevr asked for
    the largest eigenvalue alone (SciPy).  The same MᵀM and the same O(n·eps) relative accuracy; it skips
    the rest of the spectrum, which at n = 768–1536 makes it 3–20× faster than ``eigvalsh`` on a CPU (the
    scale forms' norms).  On another device it is :func:`spectral_norm` there (no round trip to the host)."""
    if M.device.type != "cpu":
        return spectral_norm(M)
    from scipy.linalg import eigh

    S = (M.transpose(-1, -2) @ M).detach()
    n = S.shape[-1]
    top = [eigh(s, eigvals_only=True, subset_by_index=[n - 1, n - 1], driver="evr", check_finite=False)[0]
           for s in S.reshape(-1, n, n).numpy()]
    return torch.tensor(np.array(top), dtype=S.dtype, device=S.device).reshape(S.shape[:-2]).clamp_min(0).sqrt()


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
    return torch.as_tensor(out, dtype=coeffs.dtype, device=coeffs.device).reshape(coeffs.shape[:-2])


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
    Q, R = torch.linalg.qr(torch.randn(batch, n, n, generator=gen_, dtype=torch.float64, device="cpu"))  # seeded on the host (a CPU generator)
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
    G = torch.randn(batch, layers, dim, dim, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    lo, hi = norm_range
    target = lo + (hi - lo) * torch.rand(batch, layers, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    G = G * (target / spectral_norm(G))[..., None, None]
    K = torch.randn(batch, layers, dim, dim, generator=gen_, dtype=torch.float64, device="cpu") / math.sqrt(dim)  # seeded on the host (a CPU generator)
    return G, K


def aligned_systems(batch: int, layers: int, dim: int, seed: int, *,
                    norm_range: tuple[float, float] = (0.5, 1.05)) -> tuple[torch.Tensor, torch.Tensor]:
    """Aligned systems (Claim 5.2): G_ℓ = U diag(a_ℓ) Uᵀ, K_ℓ = U diag(k_ℓ) Uᵀ with one
    orthogonal U per system, positive entries, and a common top direction (entry 0 is the
    largest of both a_ℓ and k_ℓ in every layer)."""
    gen_ = torch.Generator().manual_seed(seed)
    U = _orthogonal(batch, dim, gen_)[:, None]
    lo, hi = norm_range
    top_a = lo + (hi - lo) * torch.rand(batch, layers, 1, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    rest_a = top_a * torch.rand(batch, layers, dim - 1, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    top_k = 0.5 + torch.rand(batch, layers, 1, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    rest_k = top_k * torch.rand(batch, layers, dim - 1, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    a = torch.cat([top_a, rest_a], -1)
    k = torch.cat([top_k, rest_k], -1)
    # U diag(a) as U's columns scaled by a (row-major, as the matmul returns it): the same numbers, half the work
    G = (U * a[..., None, :]).contiguous() @ U.transpose(-1, -2)
    K = (U * k[..., None, :]).contiguous() @ U.transpose(-1, -2)
    return G, K


def random_discrete_2x2(batch: int, seed: int, h: float) -> tuple[torch.Tensor, torch.Tensor]:
    """2×2 pairs (G, K) with ‖G‖ uniform in (0.3, 0.95) and Gaussian K (both float64)."""
    G, K = random_systems(batch, 1, 2, seed, norm_range=(0.3, 0.95))
    return G[:, 0], K[:, 0]


def random_continuous_2x2(batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """2×2 pairs (F, K): F Gaussian shifted so that its log-norm is −u, u uniform in (0.1, 1);
    K Gaussian."""
    gen_ = torch.Generator().manual_seed(seed)
    F = torch.randn(batch, 2, 2, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    u = 0.1 + 0.9 * torch.rand(batch, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    F = F - (log_norm(F) + u)[:, None, None] * torch.eye(2, dtype=torch.float64, device=F.device)
    K = torch.randn(batch, 2, 2, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
    return F, K
