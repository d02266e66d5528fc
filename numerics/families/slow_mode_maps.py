"""The per-layer maps G_ℓ, K_ℓ of a real hierarchical stack on its slow (block-mean) modes
(docs/theory.md §5; Claim 5.1), at the gate-0 token-homogeneous reference.

G_ℓ = Π J_ℓ Π⁺ is the fast layer Jacobian at the gate-0 reference, compressed to block means;
K_ℓ = (1/h) ∂_g Π J_ℓ(g) Π⁺ at g = 0 is the derivative of the real gated layer's block-mean
Jacobian in its gate: the slow branch's Jacobian carried through the MLP stage plus the shift of
the MLP's operating point by the slow output (``slow_mode_maps``).  ``gated_layer_jacobians``
(the whole gated layer by autograd, at any gate) is the independent route.

``slow_mode_maps`` takes ``progress``, a callback ``progress(done, total, label)`` called as each
unit of the work finishes (one layer's map), so the caller can show a bar with the time left;
numerics imports no progress library.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.func import functional_call

from numerics.stacks import kernels as Kn
from numerics.generated import stability as gen


def default_reference(stack) -> torch.Tensor:
    """x̄₀ ~ N(0, I_d) drawn from seed ``stack.config.seed`` (what ``gate_certificate`` uses)."""
    p = next(stack.parameters())
    gen_ = torch.Generator().manual_seed(stack.config.seed)
    return torch.randn(stack.config.d, generator=gen_, dtype=torch.float64, device="cpu").to(p.dtype).to(p.device)


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
    from numerics.families.factorisation import affine_parts, layer_B_C

    xbar = xs[0].detach()
    G0, slope = affine_parts(stack, xbar)
    _, C = layer_B_C(stack, xbar)
    return G0, slope, C.detach()


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
    gates = torch.as_tensor(gates, dtype=p0.dtype, device=p0.device).reshape(-1)
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
