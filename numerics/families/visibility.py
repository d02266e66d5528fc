"""Visible and invisible parameter directions of the persistent component (docs/theory.md §4, Claims 4.1, 4.2).

Observables: the persistent component x̄_L = wᵀX_L of the stack's output from X_0 = 1x̄ᵀ + p
(p a token-dependent input offset, zero at the reference) and the fast path's attention
matrices along the reference trajectory from 1x̄ᵀ (the frozen kernels, at gate 0).  Their Jacobian with
respect to every parameter and the offset (torch.func) is split by SVD at its largest
spectral gap into a visible (row space) and an invisible (null space) subspace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.func import functional_call, jacrev

from numerics.stacks import kernels as K
from numerics.generated import visibility as gen
from numerics.linearised.jacobians import stack_jacobian

OFFSET = "input.offset"


def persistent_vector(stack) -> torch.Tensor:
    """w: left eigenvector of the fast frozen kernel for λ = 1, wᵀ1 = 1 (e₁ causal, 1/T full);
    ``kernels.persistent_left_vector`` of ``stack.frozen_kernel()``."""
    return K.persistent_left_vector(stack.frozen_kernel())


def homogeneous(stack, xbar: torch.Tensor) -> torch.Tensor:
    """The token-homogeneous state 1x̄ᵀ, (T, d)."""
    if xbar.shape != (stack.config.d,):
        raise ValueError(f"xbar has shape {tuple(xbar.shape)}, expected (d={stack.config.d},)")
    return torch.ones(stack.config.T, 1, dtype=xbar.dtype, device=xbar.device) * xbar


class _Observables(nn.Module):
    """(wᵀX_L from 1x̄ᵀ + offset, the attention matrices along the reference from 1x̄ᵀ) as one
    flat vector, for functional_call.  The kernels are read at the reference (offset 0):
    they are the frozen kernels there, whatever the parameters."""

    def __init__(self, stack):
        super().__init__()
        self.stack = stack

    def forward(self, offset, X0, w):
        X, kernels = X0, []
        for layer in self.stack.layers:
            kernels.append(layer.attn.weights(layer.ln1(X)).reshape(-1))
            X = layer(X)
        return torch.cat([w @ self.stack(X0 + offset)] + kernels)


@dataclass
class Visibility:
    """SVD of the visibility Jacobian (rows: x̄_L then kernel entries; columns: parameters)."""

    singular_values: torch.Tensor
    rank: int                     # visible dimension, at the largest gap
    gap: float                    # σ_r / max(σ_{r+1}, σ_1·ε_machine)
    parameters: int               # total parameter count (incl. the input offset)
    groups: dict                  # group -> {"size", "max_abs", "rank"}
    jacobian: torch.Tensor

    @property
    def visible_dim(self) -> int:
        return self.rank

    @property
    def invisible_dim(self) -> int:
        return self.parameters - self.rank

    def __str__(self):
        head = (f"visibility Jacobian {tuple(self.jacobian.shape)}: visible dim {self.visible_dim}, "
                f"invisible dim {self.invisible_dim}, gap σ_r/σ_(r+1) = {self.gap:.2e} "
                f"(σ_r = {float(self.singular_values[self.rank - 1]):.3e})")
        rows = [f"  {g:22s} size {v['size']:5d}  max|∂| {v['max_abs']:.2e}  rank {v['rank']}"
                for g, v in self.groups.items()]
        return "\n".join([head] + rows)


def _group(name: str) -> str:
    """layers.3.attn.W_Q -> attn.W_Q (parameter kind, pooled over layers)."""
    parts = name.split(".")
    return ".".join(parts[2:]) if parts[0] == "layers" else name


def _spectral_split(sv: torch.Tensor) -> tuple[int, float]:
    floor = float(sv[0]) * torch.finfo(sv.dtype).eps
    padded = torch.cat([sv, sv.new_zeros(1)]).clamp_min(floor)
    ratios = padded[:-1] / padded[1:]
    r = int(ratios.argmax()) + 1
    return r, float(ratios[r - 1])


def visibility(stack, xbar: torch.Tensor) -> Visibility:
    """Jacobian of (x̄_L, frozen kernels) w.r.t. all parameters and the input offset, at 1x̄ᵀ.

    Works at any gate: with g ≠ 0 the trajectory from 1x̄ᵀ is inhomogeneous and the
    observable is still wᵀX_L (w of the fast kernel)."""
    obs = _Observables(stack)
    params = {f"stack.{k}": v.detach() for k, v in stack.named_parameters()}
    X0 = homogeneous(stack, xbar)
    w = persistent_vector(stack)

    def f(params, offset):
        return functional_call(obs, params, (offset, X0, w))

    jp, jo = jacrev(f, argnums=(0, 1))(params, torch.zeros_like(X0))
    cols, names = [], []
    for k, v in jp.items():
        cols.append(v.reshape(v.shape[0], -1))
        names.append((_group(k[len("stack."):]), cols[-1].shape[1]))
    cols.append(jo.reshape(jo.shape[0], -1))
    names.append((OFFSET, cols[-1].shape[1]))
    J = torch.cat(cols, dim=1).detach()
    sv = torch.linalg.svdvals(J)
    rank, gap = _spectral_split(sv)
    thresh = float(sv[0]) * math.sqrt(torch.finfo(J.dtype).eps)
    groups, start = {}, 0
    for g, size in names:
        block = J[:, start:start + size]
        start += size
        entry = groups.setdefault(g, {"size": 0, "cols": []})
        entry["size"] += size
        entry["cols"].append(block)
    for g, entry in groups.items():
        block = torch.cat(entry.pop("cols"), dim=1)
        entry["max_abs"] = float(block.abs().max())
        entry["rank"] = int((torch.linalg.svdvals(block) > thresh).sum())
    return Visibility(singular_values=sv, rank=rank, gap=gap, parameters=J.shape[1],
                      groups=groups, jacobian=J)


# ---- responses to input offsets (Claim 4.1) ----------------------------------------------
def decaying_offset(stack, seed: int) -> torch.Tensor:
    """A random offset p on the decaying bundle: p − 1(wᵀp), so that wᵀp = 0."""
    p = _random_offset(stack, seed)
    w = persistent_vector(stack)
    return p - torch.ones_like(w)[:, None] * (w @ p)


def mean_carrying_offset(stack, seed: int) -> torch.Tensor:
    """A random offset with a persistent part (wᵀp ≠ 0): the control."""
    return _random_offset(stack, seed)


def _random_offset(stack, seed):
    cfg = stack.config
    gen_ = torch.Generator().manual_seed(seed)
    p = torch.randn(cfg.T, cfg.d, generator=gen_, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator), moved below
    p = p / torch.linalg.matrix_norm(p)
    dtype = next(stack.parameters()).dtype
    return p.to(dtype=dtype, device=next(stack.parameters()).device)


def persistent_response(stack, xbar: torch.Tensor, p: torch.Tensor, deltas) -> torch.Tensor:
    """‖wᵀ(stack(1x̄ᵀ + δp) − stack(1x̄ᵀ))‖ for each δ."""
    w = persistent_vector(stack)
    X0 = homogeneous(stack, xbar)
    with torch.no_grad():
        base = w @ stack(X0)
        return torch.stack([torch.linalg.vector_norm(w @ stack(X0 + float(dl) * p) - base)
                            for dl in deltas])


def central_response(stack, xbar: torch.Tensor, p: torch.Tensor, delta: float) -> torch.Tensor:
    """wᵀ(stack(1x̄ᵀ + δp) − stack(1x̄ᵀ − δp))/(2δ): the first-order move of x̄_L measured on the real
    stack, with O(δ²) truncation and ε‖X_L‖/δ rounding, shape (d,)."""
    w = persistent_vector(stack)
    X0 = homogeneous(stack, xbar)
    with torch.no_grad():
        return (w @ stack(X0 + delta * p) - w @ stack(X0 - delta * p)) / (2 * delta)


def first_order_prediction(stack, xbar: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Δx̄_L/δ → G_{≤L}(1) pᵀw (generated), G_{≤L}(1) = ∂x̄_L/∂x̄_0 of the reference (column, (d, 1))."""
    G1 = stack_jacobian(lambda x: stack.reference_trajectory(x)[-1], xbar)
    return gen.first_order_response(G1, p, persistent_vector(stack)[:, None])


# ---- the gate and the slow path (Claim 4.2) ------------------------------------------------
def _slow_layers(stack):
    if stack.config.P is None:
        raise ValueError("the stack has no slow path: draw it with P (block length) set")
    return stack.layers


def gate_jacobian(stack, X0: torch.Tensor) -> torch.Tensor:
    """∂(wᵀX_L)/∂g_ℓ for every layer, by autograd, shape (L, d)."""
    layers = _slow_layers(stack)
    names = [f"layers.{i}.gate" for i in range(len(layers))]
    params = {k: v.detach() for k, v in stack.named_parameters()}
    w = persistent_vector(stack)

    def f(*gates):
        return w @ functional_call(stack, {**params, **dict(zip(names, gates))}, (X0,))

    gates = tuple(params[k] for k in names)
    return torch.stack(jacrev(f, argnums=tuple(range(len(names))))(*gates), dim=0).detach()


def gate_sensitivity_prediction(stack, xbar: torch.Tensor) -> torch.Tensor:
    """h (wᵀs) D_ℓ W_slowᵀ LN₁(x̄_ℓ) for every layer (generated), at gate 0; shape (L, d).

    D_ℓ = ∂x̄_L/∂ū_ℓ: the MLP sublayer of layer ℓ, then the later layers' token maps."""
    layers = _slow_layers(stack)
    cfg = stack.config
    traj = stack.reference_trajectory(xbar).detach()
    w = persistent_vector(stack)[:, None]
    lift = K.lift_matrix(cfg.T, cfg.P, xbar.dtype, xbar.device)
    shift = K.block_shift_matrix(cfg.T // cfg.P, xbar.dtype, xbar.device)
    s = gen.injection_pattern(lift, shift)
    out = []
    for ell, layer in enumerate(layers):
        def after(u, ell=ell, layer=layer):
            x = u + layer.h * layer.mlp(layer.ln2(u))  # the MLP sublayer of Layer.forward
            for later in layers[ell + 1:]:
                x = later.token_map(x)
            return x
        z = layer.ln1(traj[ell]).detach()
        u = (1.0 - layer.h * layer.decay) * traj[ell] + layer.h * z @ layer.attn.value_output()
        if layer.attn.b_O is not None:  # the output bias is constant over tokens: it moves ū only
            u = u + layer.h * layer.attn.b_O
        D = jacrev(after)(u.detach()).detach()
        h = torch.tensor(layer.h, dtype=xbar.dtype, device=xbar.device)
        out.append(gen.gate_sensitivity(h, D, layer.slow.attn.value_output().detach(),
                                        z[:, None], w, s)[:, 0])
    return torch.stack(out)


@dataclass
class SlowWeightVisibility:
    """Jacobian of wᵀX_L w.r.t. the slow path's W_V, W_O (all layers): its singular values and rank."""

    singular_values: torch.Tensor
    rank: int
    d: int

    @property
    def full_rank(self) -> bool:
        return self.rank == self.d

    def __str__(self):
        sv = self.singular_values
        return (f"slow W_V/W_O Jacobian: rank {self.rank} of {self.d} "
                f"(σ_max {float(sv[0]):.3e}, σ_min {float(sv[-1]):.3e})")


def slow_weight_visibility(stack, X0: torch.Tensor) -> SlowWeightVisibility:
    """Rank of ∂(wᵀX_L)/∂(slow W_V, W_O) over all layers.

    Singular values count when above √ε (1.5e-8 in float64) times the largest singular value
    of the same Jacobian w.r.t. the fast path's W_V, W_O (a visible group of the same shape
    and scale), so rounding noise of a structurally zero Jacobian is not counted as rank."""
    _slow_layers(stack)
    params = {k: v.detach() for k, v in stack.named_parameters()}
    slow = [k for k in params if ".slow.attn.W_V" in k or ".slow.attn.W_O" in k]
    fast = [k for k in params if k.endswith(".attn.W_V") or k.endswith(".attn.W_O")]
    fast = [k for k in fast if k not in slow]
    w = persistent_vector(stack)

    def f(sub):
        return w @ functional_call(stack, {**params, **sub}, (X0,))

    jac = jacrev(f)({k: params[k] for k in slow + fast})

    def matrix(keys):
        return torch.cat([jac[k].reshape(jac[k].shape[0], -1) for k in keys], dim=1).detach()

    sv = torch.linalg.svdvals(matrix(slow))
    scale = float(torch.linalg.svdvals(matrix(fast))[0])
    rank = int((sv > scale * math.sqrt(torch.finfo(sv.dtype).eps)).sum())
    return SlowWeightVisibility(singular_values=sv, rank=rank, d=sv.shape[0])
