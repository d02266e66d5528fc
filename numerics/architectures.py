"""Architecture variants of the stack, built from the base modules of numerics/stack.py.

Every variant is an :class:`ArchStack`: a *state* S of shape (..., T, F) (tokens are rows),
an ``embed`` X -> S, a list of ``n_steps`` step maps S -> S, and a ``readout`` S -> X, so that
``stack(X)`` maps (..., T, d) -> (..., T, d) like the base :class:`~numerics.stack.Stack`.
Features F per token:

* ``preln``  (F = d): the base stack, wrapped (``random_stack(arch="preln")`` still returns
  the plain :class:`Stack`; :func:`build` wraps it for the generic claims code).
* ``postln`` (F = d): LN after the residual add, U = LN₁((1−hα)X + h·Attn(X)),
  X' = LN₂(U + h·MLP(U)); attention sees the raw state (no pre-norm).
* ``relu``   (F = d): the pre-LN stack with MLP(z) = ReLU(zW₁ + b₁)W₂ + b₂.  Non-smooth: the
  stack is differentiable off the *kink set* {X : some pre-activation (LN₂(U)W₁ + b₁)_tj = 0},
  a finite union of hypersurfaces (Lebesgue-null), so its linearisation exists almost
  everywhere and is then the preln one with GELU' replaced by the step function 1[z > 0].
* ``looped`` (F = d, or 2d with injection): one layer, weights tied across depth, applied
  ``loops`` times (default ``layers``) with step h = 1/layers.  Optional Parcae-style diagonal
  decay injection (``injection=True``): x ← exp(−Δa) ⊙ x + Δ·eB + (layer(x) − x), a > 0, Δ > 0,
  e the input embedding, carried in the state as S = [x | e] so that every step is a map of
  the state alone.  The linear part exp(−Δa) has spectral radius exp(−Δ·min a) < 1.
* ``hrm``    (F = 2d): two modules, fast L and slow H (Hierarchical Reasoning Model); state
  [z_L | z_H], embed z_L = 0, z_H = X; each of the ``layers`` cycles runs k L-steps
  z_L ← z_L + (L(z_L + z_H) − (z_L + z_H)) with step 1/(layers·k), then one H-step
  z_H ← z_H + (H(z_H + z_L) − (z_H + z_L)) with step 1/layers; readout z_H.
* ``mhc``    (F = n·d): n residual streams (manifold-constrained hyper-connections).  Layer ℓ
  reads y = Σ_i α_i S_i, and writes S'_i = Σ_j H_ij S_j + β_i (layer(y) − y), with
  α = sigmoid(a_ℓ), β = 2·sigmoid(b_ℓ) and H = Sinkhorn(exp(M_ℓ)) after a fixed number of
  iterations (doubly stochastic up to the Sinkhorn tolerance), or ``mixing="unconstrained"``
  H = I + M_ℓ/√n (hyper-connections without the manifold constraint).  Embed: every stream
  is X; readout: the stream mean.
* ``compressed`` (F = d): causal attention plus attention over block-compressed keys/values
  (MiniMax / DeepSeek-V4 style): each token t queries the block means of LN₁(X) of the
  blocks that are complete at t ((b+1)P − 1 ≤ t); tokens before the first complete block
  receive zero.  Scaled by ``compress_gate`` (default 1) and added to the fast update.

Weights come from ``random_stack``'s distributions and seed; the extra parameters of a
variant (the mixing logits, the injection, the compressed branch) come from a second
generator seeded with ``seed + EXTRA_SEED_OFFSET``, i.i.d. per layer or on the smooth path.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import nn

from numerics import kernels as K
from numerics import stack as S
from numerics.generated import architectures as gen

ARCHS = ("preln", "postln", "relu", "looped", "hrm", "mhc", "compressed")
MIXINGS = ("sinkhorn", "unconstrained")
EXTRA_SEED_OFFSET = 1_000_003

#: arch -> {option: default}; ``random_stack(..., arch=NAME, arch_options={...})``.
ARCH_OPTIONS: dict[str, dict] = {
    "preln": {},
    "postln": {},
    "relu": {},
    "looped": {"loops": None, "injection": False, "injection_delta": 0.5, "injection_rate": 1.0},
    "hrm": {"k": 2},
    "mhc": {"streams": 4, "sinkhorn_iters": 20, "mixing": "sinkhorn", "mixing_scale": 1.0},
    "compressed": {"compress_gate": 1.0},
}


def check_arch(arch: str) -> str:
    if arch not in ARCHS:
        raise ValueError(f"arch={arch!r} is not one of {', '.join(ARCHS)}")
    return arch


def wrap(stack: S.Stack) -> "PreLN":
    """The plain pre-LN stack as an :class:`ArchStack` (state = tokens, one step per layer)."""
    return PreLN(stack.config, {}, stack)


def resolve_options(arch: str, options: dict | None) -> dict:
    """Defaults of ``arch`` updated by ``options``; an unknown or bad option is a ValueError."""
    check_arch(arch)
    options = dict(options or {})
    unknown = sorted(set(options) - set(ARCH_OPTIONS[arch]))
    if unknown:
        known = ", ".join(ARCH_OPTIONS[arch]) or "none"
        raise ValueError(f"arch_options {unknown} are not options of arch={arch!r} (known: {known})")
    out = {**ARCH_OPTIONS[arch], **options}
    if arch == "looped":
        if out["loops"] is not None:
            S._positive_int(out["loops"], "loops")
        for name in ("injection_delta", "injection_rate"):
            S._finite(out[name], name)
            if out[name] <= 0:
                raise ValueError(f"{name}={out[name]} must be > 0 (Parcae: A, Δ > 0)")
    if arch == "hrm":
        S._positive_int(out["k"], "k")
    if arch == "mhc":
        S._positive_int(out["streams"], "streams")
        S._positive_int(out["sinkhorn_iters"], "sinkhorn_iters")
        if out["mixing"] not in MIXINGS:
            raise ValueError(f"mixing={out['mixing']!r} is not one of {', '.join(MIXINGS)}")
        S._finite(out["mixing_scale"], "mixing_scale")
    if arch == "compressed":
        S._finite(out["compress_gate"], "compress_gate")
    return out


# ----------------------------------------------------------------------------- Sinkhorn
def sinkhorn(M: torch.Tensor, iters: int) -> torch.Tensor:
    """Sinkhorn–Knopp on a positive matrix: ``iters`` rounds of row- then column-normalisation.

    Columns sum to 1 exactly after each round; row sums converge linearly (see
    ``theory.architectures``: Hilbert-metric contraction rate tanh(Δ(M)/4)² per round).
    """
    S._positive_int(iters, "iters")
    if not bool((M > 0).all()):
        raise ValueError("sinkhorn needs a matrix with positive entries")
    for _ in range(iters):
        M = M / M.sum(-1, keepdim=True)
        M = M / M.sum(-2, keepdim=True)
    return M


def hilbert_diameter(M: torch.Tensor) -> torch.Tensor:
    """Δ(M) = log max_{ijkl} M_ij M_kl / (M_il M_kj), the projective diameter of a positive matrix."""
    logm = torch.log(M)
    if logm.dim() != 2 or logm.shape[0] != logm.shape[1]:
        raise ValueError(f"M has shape {tuple(M.shape)}, expected a square (n, n) matrix")
    cross = (logm[:, :, None, None] + logm[None, None, :, :]       # log M_ij + log M_kl
             - logm[:, None, None, :] - logm.T[None, :, :, None])   # − log M_il − log M_kj
    return cross.amax()


def sinkhorn_tolerance(M: torch.Tensor, iters: int) -> torch.Tensor:
    """Bound on max_i |row sum − 1| of ``sinkhorn(M, iters)`` (theory.architectures, generated).

    Linear convergence at the Birkhoff–Hopf rate κ² = tanh(Δ(M)/4)² per round, from the
    Hilbert distance d₁ of the row sums to 1 after the first round.
    """
    S._positive_int(iters, "iters")
    rate = gen.sinkhorn_rate(hilbert_diameter(M))
    r1 = sinkhorn(M, 1).sum(-1)
    d1 = torch.log(r1.max() / r1.min())
    return gen.sinkhorn_marginal_bound(rate, d1, torch.tensor(float(iters), dtype=M.dtype))


def relu_mlp_forward(mlp: S.MLP, z: torch.Tensor) -> torch.Tensor:
    return torch.relu(z @ mlp.W1 + mlp.b1) @ mlp.W2 + mlp.b2


class ReluMLP(S.MLP):
    """MLP(z) = ReLU(zW₁ + b₁)W₂ + b₂ (same parameters and names as ``stack.MLP``)."""

    def forward(self, z):
        return relu_mlp_forward(self, z)


# ----------------------------------------------------------------------------- base class
class ArchStack(nn.Module):
    """A variant: state (..., T, F), ``embed``, ``n_steps`` maps ``step(i, S)``, ``readout``."""

    arch = "preln"

    def __init__(self, config: S.StackConfig, options: dict, base: S.Stack):
        super().__init__()
        self.config = config
        self.options = options
        self.base = base

    # -- interface --------------------------------------------------------------
    @property
    def h(self) -> float:
        return self.config.h

    @property
    def features(self) -> int:
        return self.config.d

    @property
    def n_steps(self) -> int:
        return len(self.base.layers)

    def embed(self, x):
        return x

    def readout(self, s):
        return s

    def step(self, i: int, s):
        return self.base.layers[i](s)

    def token_step(self, i: int, sbar):
        """``step`` on a token-homogeneous state 1s̄ᵀ, computed on s̄ (..., F) alone."""
        return self.base.layers[i].token_map(sbar)

    def attention_degree(self) -> int:
        """How many times the token kernel is applied: the degree of G(λ) in λ (Claim 2.3)."""
        return self.n_steps

    # -- derived ----------------------------------------------------------------
    def forward(self, x):
        self._check_input(x)
        s = self.embed(x)
        for i in range(self.n_steps):
            s = self.step(i, s)
        return self.readout(s)

    def trajectory(self, x):
        """States S_0 .. S_n, shape (n_steps+1, ..., T, F)."""
        self._check_input(x)
        states = [self.embed(x)]
        for i in range(self.n_steps):
            states.append(self.step(i, states[-1]))
        return torch.stack(states)

    def reference_trajectory(self, xbar):
        """Token-homogeneous reference s̄_0 .. s̄_n, shape (..., n_steps+1, F), computed on s̄ only."""
        self._check_reference()
        if xbar.shape[-1] != self.config.d:
            raise ValueError(f"xbar has last dimension {xbar.shape[-1]}, expected d={self.config.d}")
        states = [self.embed(xbar.unsqueeze(-2)).squeeze(-2)]
        for i in range(self.n_steps):
            states.append(self.token_step(i, states[-1]))
        return torch.stack(states, dim=-2)

    def frozen_kernels(self):
        return self.base.frozen_kernels()

    def frozen_kernel(self):
        """The common token kernel A (T, T) at a token-homogeneous state."""
        return self.base.frozen_kernel()

    def _check_reference(self):
        if any(layer.slow is not None and float(layer.gate.detach()) != 0.0 for layer in self.base.layers):
            raise ValueError(f"arch={self.arch!r}: reference_trajectory needs gate=0 (the slow path's "
                             "one-block shift breaks token homogeneity)")

    def _check_input(self, x):
        S.check_input(x, self.config.T, self.config.d, finite=self.base.check_inputs)


class PreLN(ArchStack):
    arch = "preln"


class PostLN(ArchStack):
    """Post-LN: U = LN₁((1−hα)X + h·(Attn(X) + g·Slow(X))), X' = LN₂(U + h·MLP(U))."""

    arch = "postln"

    def step(self, i, s):
        layer = self.base.layers[i]
        update = layer.attn(s)
        if layer.slow is not None:
            update = update + layer.gate * layer.slow(s)
        u = layer.ln1((1.0 - layer.h * layer.decay) * s + layer.h * update)
        return layer.ln2(u + layer.h * layer.mlp(u))

    def token_step(self, i, sbar):
        layer = self.base.layers[i]
        u = layer.ln1((1.0 - layer.h * layer.decay) * sbar + layer.h * sbar @ layer.attn.value_output())
        return layer.ln2(u + layer.h * layer.mlp(u))


class ReLU(ArchStack):
    """Pre-LN with a ReLU MLP; differentiable off the kink set (see the module docstring)."""

    arch = "relu"

    def __init__(self, config, options, base):
        super().__init__(config, options, base)
        for layer in base.layers:
            relu = ReluMLP(config.d, config.mlp_ratio * config.d).to(layer.mlp.W1)
            relu.load_state_dict(layer.mlp.state_dict())
            layer.mlp = relu

    def kink_distance(self, x) -> torch.Tensor:
        """min |pre-activation| over the whole forward pass: the distance (in pre-activation) to the kink set."""
        self._check_input(x)
        best = torch.tensor(math.inf, dtype=x.dtype)
        for layer in self.base.layers:
            u = (1.0 - layer.h * layer.decay) * x + layer.h * layer.mixing(x)
            pre = layer.ln2(u) @ layer.mlp.W1 + layer.mlp.b1
            best = torch.minimum(best, pre.abs().min())
            x = layer(x)
        return best


class Looped(ArchStack):
    """One tied layer applied ``loops`` times; optional Parcae diagonal decay injection (state [x | e])."""

    arch = "looped"

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base)
        self.loops = options["loops"] or config.layers
        self.injection = bool(options["injection"])
        d = config.d
        rand = lambda *shape: torch.randn(*shape, generator=gen, dtype=torch.float64)  # noqa: E731
        # a > 0: rate·(1 + U(0,1)); Δ > 0; B ~ N(0, 1/d) — Parcae's A = −exp(·) < 0 written as −a.
        a = options["injection_rate"] * (1.0 + torch.rand(d, generator=gen, dtype=torch.float64))
        self.inj_a = nn.Parameter(a.to(dtype=dtype, device=device))
        self.inj_delta = nn.Parameter(torch.tensor(float(options["injection_delta"]), dtype=dtype, device=device))
        self.inj_B = nn.Parameter((rand(d, d) / math.sqrt(d)).to(dtype=dtype, device=device))

    @property
    def layer(self):
        return self.base.layers[0]

    @property
    def features(self):
        return 2 * self.config.d if self.injection else self.config.d

    @property
    def n_steps(self):
        return self.loops

    def decay_factors(self) -> torch.Tensor:
        """exp(−Δa), the diagonal of the injection's linear part (spectral radius exp(−Δ min a))."""
        return torch.exp(-self.inj_delta * self.inj_a)

    def embed(self, x):
        return torch.cat([x, x], dim=-1) if self.injection else x

    def readout(self, s):
        return s[..., : self.config.d] if self.injection else s

    def _inject(self, x, e, stepped):
        return self.decay_factors() * x + self.inj_delta * e @ self.inj_B + (stepped - x)

    def step(self, i, s):
        if not self.injection:
            return self.layer(s)
        d = self.config.d
        x, e = s[..., :d], s[..., d:]
        return torch.cat([self._inject(x, e, self.layer(x)), e], dim=-1)

    def token_step(self, i, sbar):
        if not self.injection:
            return self.layer.token_map(sbar)
        d = self.config.d
        x, e = sbar[..., :d], sbar[..., d:]
        return torch.cat([self._inject(x, e, self.layer.token_map(x)), e], dim=-1)

    def with_loops(self, loops: int) -> "Looped":
        """The same tied weights, run for ``loops`` steps (depth at test time)."""
        S._positive_int(loops, "loops")
        self.loops = loops
        return self


class HRM(ArchStack):
    """Fast module L (k steps per cycle, step 1/(layers·k)) and slow module H (one step per cycle)."""

    arch = "hrm"

    def __init__(self, config, options, base):
        super().__init__(config, options, base)
        self.k = options["k"]
        base.layers[0].h = 1.0 / (config.layers * self.k)  # L
        base.layers[1].h = 1.0 / config.layers  # H

    @property
    def features(self):
        return 2 * self.config.d

    @property
    def n_steps(self):
        return self.config.layers * (self.k + 1)

    def is_fast_step(self, i: int) -> bool:
        return i % (self.k + 1) < self.k

    def embed(self, x):
        return torch.cat([torch.zeros_like(x), x], dim=-1)

    def readout(self, s):
        return s[..., self.config.d:]

    def _substep(self, i, s, apply):
        d = self.config.d
        zl, zh = s[..., :d], s[..., d:]
        y = zl + zh
        if self.is_fast_step(i):
            return torch.cat([zl + apply(self.base.layers[0], y) - y, zh], dim=-1)
        return torch.cat([zl, zh + apply(self.base.layers[1], y) - y], dim=-1)

    def step(self, i, s):
        return self._substep(i, s, lambda layer, y: layer(y))

    def token_step(self, i, sbar):
        return self._substep(i, sbar, lambda layer, y: layer.token_map(y))


class MHC(ArchStack):
    """n residual streams (feature blocks of the state) mixed by H_ℓ, read by α_ℓ, written by β_ℓ."""

    arch = "mhc"

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base)
        n, L = options["streams"], config.layers
        self.n = n
        logits = _depth_draws((n, n), L, config, gen) * options["mixing_scale"]
        self.mix_logits = nn.Parameter(logits.to(dtype=dtype, device=device))
        self.pre_logits = nn.Parameter(_depth_draws((n,), L, config, gen).to(dtype=dtype, device=device))
        self.post_logits = nn.Parameter(_depth_draws((n,), L, config, gen).to(dtype=dtype, device=device))

    @property
    def features(self):
        return self.n * self.config.d

    def stream_mixing(self) -> torch.Tensor:
        """H_ℓ for every layer, (L, n, n): Sinkhorn-projected (default) or unconstrained."""
        if self.options["mixing"] == "sinkhorn":
            return sinkhorn(torch.exp(self.mix_logits), self.options["sinkhorn_iters"])
        eye = torch.eye(self.n, dtype=self.mix_logits.dtype, device=self.mix_logits.device)
        return eye + self.mix_logits / math.sqrt(self.n)

    def read_weights(self) -> torch.Tensor:
        """α_ℓ = sigmoid(a_ℓ), (L, n)."""
        return torch.sigmoid(self.pre_logits)

    def write_weights(self) -> torch.Tensor:
        """β_ℓ = 2·sigmoid(b_ℓ), (L, n)."""
        return 2.0 * torch.sigmoid(self.post_logits)

    def composite_gain(self) -> torch.Tensor:
        """‖H_{ℓ} ⋯ H_0‖₂ for ℓ = 0..L−1: the residual streams' composite gain over depth."""
        H = self.stream_mixing()
        prod = torch.eye(self.n, dtype=H.dtype, device=H.device)
        gains = []
        for ell in range(H.shape[0]):
            prod = H[ell] @ prod
            gains.append(torch.linalg.matrix_norm(prod, ord=2))
        return torch.stack(gains)

    def embed(self, x):
        return torch.cat([x] * self.n, dim=-1)

    def readout(self, s):
        return s.reshape(*s.shape[:-1], self.n, self.config.d).mean(-2)

    def _mix(self, i, s, apply):
        d, n = self.config.d, self.n
        streams = s.reshape(*s.shape[:-1], n, d)
        alpha, beta, H = self.read_weights()[i], self.write_weights()[i], self.stream_mixing()[i]
        y = torch.einsum("j,...jd->...d", alpha, streams)
        incr = apply(self.base.layers[i], y) - y
        out = torch.einsum("ij,...jd->...id", H, streams) + beta[:, None] * incr.unsqueeze(-2)
        return out.reshape(*s.shape)

    def step(self, i, s):
        return self._mix(i, s, lambda layer, y: layer(y))

    def token_step(self, i, sbar):
        return self._mix(i, sbar, lambda layer, y: layer.token_map(y))


class CompressedAttention(nn.Module):
    """Token queries against block-mean (compressed) keys/values of complete blocks only.

    Token t may see block b when (b+1)P − 1 ≤ t; a token that sees no block gets zero.
    The weights live in an ``stack.Attention`` (same names and shapes).
    """

    def __init__(self, d: int, heads: int, T: int, P: int):
        super().__init__()
        self.P = P
        self.attn = S.Attention(d, heads, torch.zeros(heads, 1, 1))
        t = torch.arange(T)[:, None]
        b = torch.arange(T // P)[None, :]
        self.register_buffer("visible", (b + 1) * P - 1 <= t)  # (T, n)

    def kernel_mask(self):
        return self.visible

    def forward(self, z):
        *batch, T, d = z.shape
        pooled = z.reshape(*batch, T // self.P, self.P, d).mean(-2)
        a = self.attn
        q = torch.einsum("...td,hdk->...htk", z, a.W_Q)
        k = torch.einsum("...nd,hdk->...hnk", pooled, a.W_K)
        v = torch.einsum("...nd,hdk->...hnk", pooled, a.W_V)
        scores = q @ k.transpose(-1, -2) / math.sqrt(a.W_Q.shape[-1])
        any_visible = self.visible.any(-1, keepdim=True)  # (T, 1)
        # rows with no visible block get a finite dummy score and are zeroed after the softmax
        scores = scores.masked_fill(~self.visible, -math.inf).masked_fill(~any_visible, 0.0)
        weights = torch.softmax(scores, dim=-1) * any_visible
        return torch.einsum("...htk,hkd->...td", weights @ v, a.W_O)

    def frozen_kernel(self) -> torch.Tensor:
        """(T, n): uniform over visible blocks at a homogeneous state; zero rows before block 0 completes."""
        m = self.visible.to(torch.float64)
        return m / m.sum(-1, keepdim=True).clamp_min(1.0)


class Compressed(ArchStack):
    """Pre-LN layers whose attention update is Attn(z) + g_c · CompressedAttn(z), z = LN₁(X)."""

    arch = "compressed"

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base)
        self.compress_gate = float(options["compress_gate"])
        self.compress = nn.ModuleList(CompressedAttention(config.d, config.heads, config.T, config.P)
                                      for _ in base.layers)
        draws = {name: _depth_draws(shape, config.layers, config, gen) * scale
                 for name, shape, scale in _attention_shapes(config)}
        with torch.no_grad():
            for ell, branch in enumerate(self.compress):
                for name, value in draws.items():
                    getattr(branch.attn, name).copy_(value[ell])
        self.compress.to(dtype=dtype, device=device)

    def step(self, i, s):
        layer = self.base.layers[i]
        z = layer.ln1(s)
        u = (1.0 - layer.h * layer.decay) * s + layer.h * (layer.attn(z) + self.compress_gate * self.compress[i](z))
        return u + layer.h * layer.mlp(layer.ln2(u))

    def attention_degree(self):
        return self.n_steps

    def _check_reference(self):
        if self.compress_gate != 0.0:
            raise ValueError("arch='compressed' with compress_gate≠0 has no token-homogeneous reference: "
                             "tokens before the first complete block see no compressed keys, so the "
                             "compressed kernel's rows do not all sum to 1 (A_c Π 1 ≠ 1)")


# ----------------------------------------------------------------------------- construction
def _depth_draws(shape, layers, cfg, gen) -> torch.Tensor:
    """(layers, *shape) standard normal draws: i.i.d. per layer, or on the smooth cosine path."""
    if cfg.weight_path == "smooth":
        modes = [torch.randn(*shape, generator=gen, dtype=torch.float64) / (1 + k) ** 2
                 for k in range(S.PATH_MODES)]
        return torch.stack([sum(math.cos(math.pi * k * ell * cfg.h) * modes[k] for k in range(S.PATH_MODES))
                            for ell in range(layers)])
    return torch.randn(layers, *shape, generator=gen, dtype=torch.float64)


def _attention_shapes(cfg):
    d, dk, heads, s = cfg.d, cfg.d_k, cfg.heads, cfg.weight_scale
    return [("W_Q", (heads, d, dk), s / math.sqrt(d)), ("W_K", (heads, d, dk), s / math.sqrt(d)),
            ("W_V", (heads, d, dk), s / math.sqrt(d)), ("W_O", (heads, dk, d), s / math.sqrt(dk * heads))]


def build(arch: str = "preln", *, arch_options: dict | None = None, dtype=torch.float64, device=None,
          **stack_kwargs) -> ArchStack:
    """Draw a variant (an :class:`ArchStack`) from ``random_stack``'s keyword arguments.

    ``arch="preln"`` wraps the plain stack.  ``compressed`` uses ``P`` as its compression
    block (no hierarchical slow path); ``hrm`` draws two layers (L, H) and runs ``layers``
    cycles; ``looped`` draws one layer.
    """
    check_arch(arch)
    options = resolve_options(arch, arch_options)
    kw = dict(stack_kwargs)
    for name in ("T", "d", "layers", "heads", "kernel"):
        if name not in kw:
            raise ValueError(f"build(arch={arch!r}) needs {name}")
    layers = kw["layers"]
    S._positive_int(layers, "layers")
    device = S.resolve_device(device)
    if arch == "compressed":
        if kw.get("P") is None:
            raise ValueError("arch='compressed' needs P (the compression block length)")
        if kw.get("gate", 0.0) != 0.0:
            raise ValueError("arch='compressed' has no hierarchical slow path: use "
                             "arch_options={'compress_gate': g} instead of gate")
        P = kw["P"]
        K.check_divisible(kw["T"], P, "P")
        base = S.random_stack(**{**kw, "P": None}, dtype=dtype, device=device)
        config = replace(base.config, P=P, arch=arch)
    elif arch == "hrm":
        base = S.random_stack(**{**kw, "layers": 2}, dtype=dtype, device=device)
        config = replace(base.config, layers=layers, arch=arch)
    elif arch == "looped":
        base = S.random_stack(**{**kw, "layers": 1}, dtype=dtype, device=device)
        base.layers[0].h = 1.0 / layers
        config = replace(base.config, layers=layers, arch=arch)
    else:
        base = S.random_stack(**kw, dtype=dtype, device=device)
        config = replace(base.config, arch=arch)
    gen = torch.Generator().manual_seed(config.seed + EXTRA_SEED_OFFSET)
    if arch == "preln":
        return PreLN(config, options, base)
    if arch == "postln":
        return PostLN(config, options, base)
    if arch == "relu":
        return ReLU(config, options, base)
    if arch == "looped":
        return Looped(config, options, base, gen, dtype, device)
    if arch == "hrm":
        return HRM(config, options, base)
    if arch == "mhc":
        return MHC(config, options, base, gen, dtype, device)
    return Compressed(config, options, base, gen, dtype, device)


for _arch in ARCHS[1:]:
    S.register_variant(_arch, build)
