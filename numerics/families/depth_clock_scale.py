"""Claim 6.4's measured mode ratios at pretraining size: one eigenvalue's d×d maps at a time.

The dense route (``numerics.families.depth_slow_manifold.measured_ratios``) builds the generated mode blocks
G_ℓ(λ) of the persistent mode and of every distinct decaying eigenvalue of the frozen kernel at once,
(1 + K)·L·d² numbers with K = T − 1 for the causal kernel: 58 GB at GPT-2-small size (T = 1024,
d = 768, L = 12).  The ratios r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖₂/‖G_{≤ℓ}(1)‖₂ need nothing across eigenvalues, so
here the blocks are built for one eigenvalue at a time (L·d² numbers alive) from the generated
coefficients of the affine layer block, G_ℓ(λ) = G_ℓ(0) + λ·(G_ℓ(1) − G_ℓ(0)) (Claim 2.3's, computed
once: the λ-independent MLP and LayerNorm Jacobians are most of the work), multiplied in depth order
by the generated product step and normed.  At small sizes this route is held against the dense one,
which builds every block with the generated G_ℓ(λ) itself (``tests/test_depth_clock_scale.py``).

Above :data:`BLOCK_BYTES_LIMIT` the work, not the memory, is the bound (per mode L products and L
norms of d×d matrices), so a chosen set of :data:`SCALE_MODES` decaying modes is evaluated
(:func:`select_modes`): geometrically spaced in the mode index, dense at the slow end (at T = 1024 the
four slowest one after another) — the slowest modes set the saturation depth ℓ* (the clock's factor
q(λ) increases with λ wherever the reference spread grows) and the slowest gives the effective
exponent — down to the fastest.  The other modes are not
evaluated, and the result says which were.

The spectral norm is √λ_max(GᵀG) (the symmetric eigensolver: several times faster than an SVD at
d = 768 on this machine); both are backward stable, so the two routes' norms agree to O(d·u) relative.
"""

from __future__ import annotations

import numpy
import torch

from numerics.families import coarse_graining as ncg
from numerics.generated import coarse_graining as gen

#: Up to this many bytes of mode blocks (and their copies, :func:`dense_bytes`) the dense route runs.
BLOCK_BYTES_LIMIT = 1 << 30
#: Decaying modes evaluated above the limit (at GPT-2-small size: ~3 s each on an idle 2-core machine).
SCALE_MODES = 16
#: Above this many bytes of (T·d)² Jacobians the autograd route of Claim 6.4's drawn stacks does not run.
AUTOGRAD_BYTES_LIMIT = 1 << 31


def dense_bytes(modes: int, layers: int, d: int, itemsize: int = 8) -> int:
    """Bytes of the dense route for ``modes`` distinct decaying eigenvalues: the blocks
    (1 + modes, L, d, d), their depth-major copy and the products, 3·(1 + modes)·L·d²·itemsize."""
    return 3 * (1 + modes) * layers * d * d * itemsize


def autograd_bytes(T: int, d: int, itemsize: int = 8) -> int:
    """Bytes of the dense autograd route (``coarse_graining.dense_modes``): a layer Jacobian, the running
    product and its new value, (T·d)² each, plus the autograd work of one, 4·(T·d)²·itemsize."""
    return 4 * (T * d) ** 2 * itemsize


def uses_all_modes(modes: int, layers: int, d: int) -> bool:
    """Whether the dense route (every decaying mode at once) fits :data:`BLOCK_BYTES_LIMIT`."""
    return dense_bytes(modes, layers, d) <= BLOCK_BYTES_LIMIT


def select_modes(count: int, n: int | None = None) -> list[int]:
    """Indices into ``count`` decaying eigenvalues sorted descending (slowest first): all of them when
    n ≥ count, else n indices, ascending, holding the slowest and the fastest, at 0-based positions
    round(count^{k/(n−1)}) − 1 made distinct by taking the next free index (consecutive at the slow end)."""
    n = SCALE_MODES if n is None else n
    if count < 0 or n < 1:
        raise ValueError(f"count={count!r} must be ≥ 0 and n={n!r} ≥ 1")
    if n >= count:
        return list(range(count))
    if n == 1:
        return [0]
    out: list[int] = []
    for k in range(n):
        idx = max(round(count ** (k / (n - 1))) - 1, out[-1] + 1 if out else 0)
        out.append(min(idx, count - (n - k)))
    return out


def spectral_norm(G: torch.Tensor) -> torch.Tensor:
    """‖G‖₂ = √λ_max(GᵀG) for every matrix of G (..., d, d), one matrix at a time (d² work space).
    The eigenvalues are numpy's (LAPACK syevd): at d = 768 on this machine a third of the CPU time of
    torch's, the cost that dominates a mode."""
    flat = G.reshape(-1, *G.shape[-2:])
    top = [float(numpy.linalg.eigvalsh((g.mT @ g).detach().cpu().numpy())[-1]) for g in flat]
    return torch.tensor(top, dtype=G.dtype, device=G.device).clamp_min(0).sqrt().reshape(G.shape[:-2])


def mode_norms(coefficients: tuple[torch.Tensor, torch.Tensor], lam: float) -> torch.Tensor:
    """‖G_{≤ℓ}(λ)‖₂ for ℓ = 0..L−1 of one eigenvalue λ, from the generated coefficients of the affine
    layer blocks G_ℓ(λ) = G_ℓ(0) + λ·(G_ℓ(1) − G_ℓ(0)) (Claim 2.3's, ``layer_coefficients``) and the
    generated product step of Claim 3.1, with L·d² numbers alive.  Shape (L,)."""
    P0, P1 = coefficients
    products = ncg.mode_products((P0 + lam * P1)[:, None])                 # (L, 1, d, d)
    return spectral_norm(products[:, 0])


def layer_coefficients(stack, xbar: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(G_ℓ(0), G_ℓ(1) − G_ℓ(0)) for every layer, (L, d, d) each: the λ-independent work (the MLP and
    LayerNorm Jacobians) done once for all modes."""
    from numerics.families.factorisation import GENERATED_BY_ACTIVATION, _layer_args
    from numerics.generated import factorisation as fgen

    names = GENERATED_BY_ACTIVATION[stack.config.activation]
    args = _layer_args(stack, xbar)
    return tuple(getattr(fgen, name)(*args).detach() for name in names[2:4])


def mode_ratios(stack, xbar: torch.Tensor, lams, wrap=None) -> torch.Tensor:
    """r_ℓ(λ) = ‖G_{≤ℓ}(λ)‖₂/‖G_{≤ℓ}(1)‖₂ for every λ in ``lams`` (L, K), one eigenvalue at a time;
    ``wrap`` (optional) wraps the list of eigenvalues, e.g. in a progress report."""
    coefficients = layer_coefficients(stack, xbar)
    persistent = mode_norms(coefficients, 1.0)
    cols = [gen.mode_ratio(mode_norms(coefficients, float(lam)), persistent)
            for lam in (lams if wrap is None else wrap(list(lams)))]
    if not cols:
        return torch.empty(len(persistent), 0, dtype=persistent.dtype, device=persistent.device)
    return torch.stack(cols, dim=1)


def measured_ratios(stack, xbar: torch.Tensor, n: int | None = None,
                    wrap=None) -> tuple[list[float], torch.Tensor, dict]:
    """(λ, r (L, K)) as ``depth_slow_manifold.measured_ratios`` gives them where the dense route fits
    :data:`BLOCK_BYTES_LIMIT`, else on the ``n`` (:data:`SCALE_MODES`) modes of :func:`select_modes`, one at a time; and a
    record of the form: ``form`` ("all modes" or "mode subset"), ``decaying_modes`` (K of the kernel),
    ``evaluated`` (their indices, slowest first) and ``max_gap`` (the largest distance from an
    unevaluated eigenvalue to the nearest evaluated one; 0 when all are evaluated).  ``wrap`` as in
    :func:`mode_ratios`."""
    from numerics.families import depth_slow_manifold as nds
    lams = nds.decaying_eigenvalues(stack)
    cfg = stack.config
    if uses_all_modes(len(lams), cfg.layers, cfg.d):
        lams, r = nds.measured_ratios(stack, xbar)
        return lams, r, {"form": "all modes", "decaying_modes": len(lams), "evaluated": list(range(len(lams))),
                         "max_gap": 0.0}
    idx = select_modes(len(lams), SCALE_MODES if n is None else n)
    chosen = [lams[i] for i in idx]
    gap = max((min(abs(v - c) for c in chosen) for v in lams), default=0.0)
    r = mode_ratios(stack, xbar, chosen, wrap)
    return chosen, r, {"form": "mode subset", "decaying_modes": len(lams), "evaluated": idx, "max_gap": gap}
