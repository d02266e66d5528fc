"""Stability margin μ and gate bound g* (docs/theory.md §5; Claims 5.1, 5.2) — numerics.

Every formula comes from ``numerics.generated.stability`` (derived in
``theory/stability.py``).  Four layers of functionality, in three modules; this one is their
public face (everything below is importable from ``numerics.families.stability``):

* **abstract per-layer systems, their certification and the 2×2 exact boundaries** — ``log_growth`` S(g),
  ``stability_margin`` μ, ``solve_gate_bound`` g*, ``certify_gate_bound`` (a ``GateEnclosure``),
  ``jury_gate_radius``, ``routh_hurwitz_gate_radius``: ``numerics/families/layer_systems.py``, whose
  docstring states each;
* **real stacks** (the maps: ``numerics/families/slow_mode_maps.py``; the certificate and the onset: here) — ``slow_mode_maps`` (per-layer G_ℓ and K_ℓ on the n·d slow, block-mean
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

import numpy as np
import torch

from numerics.families.layer_systems import (  # noqa: F401  (the public face of the stability numerics)
    GateEnclosure, aligned_systems, certify_gate_bound, continuous_norm_gate_bound, discrete_norm_gate_bound,
    gated_product, jury_gate_radius, log_growth, log_norm, random_continuous_2x2,
    random_discrete_2x2, random_systems, routh_hurwitz_gate_radius, small_h_gate_bound, solve_gate_bound,
    spectral_norm, stability_margin, top_singular_value)
from numerics.linearised.mode_blocks import depth_product
from numerics.precision import EPS64
from numerics.families.slow_mode_maps import (  # noqa: F401
    AUTOGRAD_LIMIT, Progress, _check_stack, _slow_mode_map_steps, _slow_mode_maps, _Steps, default_reference,
    gated_layer_jacobians, resolve_method, slow_mode_maps)
from numerics.generated import stability as gen  # noqa: F401


def product_log_norm(maps: torch.Tensor) -> torch.Tensor:
    """log‖Π_ℓ M_ℓ‖₂ (layer 0 acts first) for maps (..., L, N, N)."""
    return torch.log(spectral_norm(depth_product(maps)))


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
    device = next(stack.parameters()).device
    coarse = scale * 2.0 ** torch.arange(0, int(math.log2(cap_factor)) + 1, dtype=torch.float64, device=device)
    coarse = torch.cat([torch.zeros(1, dtype=torch.float64, device=device), coarse])
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
        pts = {sign: torch.linspace(lo, hi, grid + 2, dtype=torch.float64, device=device)[1:-1]
               for sign, (lo, hi) in brackets.items()}
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
