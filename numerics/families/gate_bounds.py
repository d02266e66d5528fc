"""The a priori upper gate bound of Claim 5.3 (docs/theory.md §5): where the slow path provably expands.

S(g) = Σ_ℓ log|det(G_ℓ + hgK_ℓ)| from per-layer data only (log|det G_ℓ| and the eigenvalues of
G_ℓ⁻¹K_ℓ, through the generated ``log_abs_factor``); every g with S(g) > 0 has
‖Π_ℓ(G_ℓ + hgK_ℓ)‖ ≥ exp(S/N) > 1.  ``upper_gate_bound`` is the smallest such |g| per sign, and
``linear_onset`` the measured first |g| where the product's norm exceeds 1 (it multiplies the layers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.generated import gate_bounds as gen
from numerics.linearised.mode_blocks import depth_product

#: the coarse search doubles |g| from ``scale`` up to ``scale · 2^CAP_DOUBLINGS`` (products: the onset) or
#: ``scale · 2^DET_DOUBLINGS`` (S(g) costs no products: g⁺)
CAP_DOUBLINGS = 12
DET_DOUBLINGS = 30
#: bisection steps on a bracket: relative width 2^-40 ≈ 1e-12
BISECTIONS = 40


@dataclass
class LayerSpectra:
    """Per-layer data of S(g): log|det G_ℓ| (L,) and the eigenvalues μ of G_ℓ⁻¹K_ℓ (L, N), complex."""

    log_det: torch.Tensor
    mu: torch.Tensor
    h: float

    @property
    def modes(self) -> int:
        return self.mu.shape[-1]


def layer_spectra(G: torch.Tensor, K: torch.Tensor, h: float) -> LayerSpectra:
    """(L, N, N) maps -> the per-layer data of S(g); ValueError when some G_ℓ is singular."""
    sign, log_det = torch.linalg.slogdet(G)
    if bool((sign == 0).any()) or not bool(torch.isfinite(log_det).all()):
        raise ValueError("some G_ℓ is singular: log|det G_ℓ| = −∞ and S(g) has no finite value at g = 0")
    mu = torch.linalg.eigvals(torch.linalg.solve(G, K))
    return LayerSpectra(log_det=log_det, mu=mu, h=float(h))


def log_det_growth(sp: LayerSpectra, g) -> torch.Tensor:
    """S(g) for a tensor of gates g (...,): Σ_ℓ log|det G_ℓ| + Σ_{ℓ,i} log|1 + hgμ_{ℓ,i}|."""
    g = torch.as_tensor(g, dtype=sp.log_det.dtype, device=sp.log_det.device)
    h = torch.tensor(sp.h, dtype=sp.log_det.dtype, device=sp.log_det.device)
    terms = gen.log_abs_factor(sp.mu.real, sp.mu.imag, h, g[..., None, None])
    return sp.log_det.sum() + terms.sum((-1, -2))


def norm_lower_bound(sp: LayerSpectra, g) -> torch.Tensor:
    """exp(S(g)/N) ≤ ρ(Π(G_ℓ + hgK_ℓ)) ≤ ‖Π(G_ℓ + hgK_ℓ)‖₂."""
    S = log_det_growth(sp, g)
    return gen.det_norm_bound(S, torch.tensor(float(sp.modes), dtype=S.dtype, device=S.device))


def product_log_norm(G: torch.Tensor, K: torch.Tensor, h: float, g) -> torch.Tensor:
    """log‖Π_ℓ(G_ℓ + hgK_ℓ)‖₂ (layer 0 first) for a tensor of gates g (...,)."""
    g = torch.as_tensor(g, dtype=G.dtype, device=G.device)
    M = G + h * g[..., None, None, None] * K                   # (..., L, N, N)
    return torch.log(torch.linalg.matrix_norm(depth_product(M), ord=2))


def first_crossing(f, scale: float, sign: float, doublings: int = CAP_DOUBLINGS) -> float | None:
    """The smallest |g| = x > 0 (g = sign·x) on the doubling grid scale·2^j, j ≤ ``doublings``, where
    f(g) > 0, refined by bisection between the last grid point with f ≤ 0 and the first with f > 0."""
    xs = scale * 2.0 ** torch.arange(0, doublings + 1, dtype=torch.float64, device="cpu")  # a grid of gates: f takes floats
    xs = torch.cat([torch.zeros(1, dtype=torch.float64, device="cpu"), xs])  # the grid's host floats, as above
    vals = f(sign * xs)
    if bool(vals[0] > 0):
        return 0.0
    hit = torch.nonzero(vals > 0).flatten()
    if hit.numel() == 0:
        return None
    lo, hi = float(xs[int(hit[0]) - 1]), float(xs[int(hit[0])])
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        if float(f(torch.tensor([sign * mid], dtype=torch.float64, device="cpu"))[0]) > 0:  # as the grid xs
            hi = mid
        else:
            lo = mid
    return hi


def upper_gate_bound(sp: LayerSpectra, scale: float) -> dict:
    """g⁺ per sign: the smallest |g| with S(g) > 0 (None: none up to scale·2^DET_DOUBLINGS)."""
    return {s: first_crossing(lambda g: log_det_growth(sp, g), scale, s, DET_DOUBLINGS) for s in (1.0, -1.0)}


def linear_onset(G: torch.Tensor, K: torch.Tensor, h: float, scale: float) -> dict:
    """The measured onset per sign: the smallest |g| with log‖Π(G_ℓ + hgK_ℓ)‖ > 0 (first crossing)."""
    return {s: first_crossing(lambda g: product_log_norm(G, K, h, g), scale, s) for s in (1.0, -1.0)}


def diagonal_systems(a: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """G_ℓ = diag(a_ℓ), K_ℓ = diag(k_ℓ) from (L, N) positive rates: S(g) is the sum of the per-direction
    Σ_ℓ log(a_ℓi + hgk_ℓi), the product norm their maximum."""
    return torch.diag_embed(a), torch.diag_embed(k)


def smallest(found: dict) -> float | None:
    both = [v for v in found.values() if v is not None]
    return min(both) if both else None


def is_finite_positive(x) -> bool:
    return x is not None and math.isfinite(x) and x > 0
