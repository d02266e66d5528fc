"""Random untied pre-LN Transformer stacks (docs/theory.md §0).

Block ℓ = 0..L-1 with its own weights θ_ℓ and depth step h = 1/L::

    U  = (1 - hα) X + h · Σ_heads softmax(mask ∘ (LN₁(X) W_Q (LN₁(X) W_K)ᵀ / √d_k) + bias) · LN₁(X) W_V W_O
         [+ h · g_ℓ · Lift(Shift(SlowAttn(Pool(LN₁(X)))))]          (hierarchical slow path, when P is set)
    X' = U + h · MLP(LN₂(U)),   MLP(z) = GELU(z W₁ + b₁) W₂ + b₂

The slow path pools LN₁(X) into n = T/P block means (ε = 1/P), attends over them
with its own weights and the slow kernel (``causal`` by default; ``full`` is the v1
paper's unmasked variant, which leaks later blocks into earlier tokens), shifts the
result by one block (block b receives block b-1's output, block 0 receives zero) and
lifts it back to tokens, scaled by the gate g_ℓ (zero-initialised unless ``gate=``).

GPT-2's block (``numerics.storage.hf_gpt2`` imports its checkpoints) is this stack with four
configuration fields set away from their defaults: ``step`` h = 1 instead of 1/L,
``activation="gelu_new"`` (the tanh form of GELU, generated from ``theory/factorisation.py``),
``ln_eps`` (the checkpoint's ``layer_norm_epsilon``) and ``attn_bias=True``, which gives every
attention a query bias b_Q (heads, d_k), added to LN₁(X) W_Q, and an output bias b_O (d), added
to the attention sublayer's output.  Key biases are not represented (softmax ignores a per-query
constant) and value biases fold into b_O (softmax rows sum to 1).  The defaults leave the
stack, its parameters and its random draws as they were.

Knobs for drawing stacks with and without saturation / contraction (docs/theory.md §3, §5):
``value_scale`` c makes W_VO = Σ_h W_V W_O ≈ c·I + noise; ``weight_scale`` scales all
random matrices; ``decay`` α ≥ 0 damps the residual stream; ``ln_gain`` sets the LN
gains γ ≈ ln_gain.  ``weight_path="smooth"`` draws θ_ℓ = θ(ℓh) from a smooth random
path θ(t) (a short cosine series), so that the stack is the explicit Euler scheme of
dX/dt = F(θ(t), X) (Claim 1.1); ``stack.weights_at(t)`` evaluates θ(t) anywhere.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from numerics.stacks import kernels as K
from numerics.stacks.stack_config import (  # noqa: F401  (the stack's configuration, importable from here)
    DTYPES, LN_EPS, VARIANTS, StackConfig, _finite, _positive_int, check_arch, check_input, register_variant,
    resolve_device, unchecked_inputs, validate_config)

WEIGHT_PATHS = (None, "smooth")
PATH_MODES = 4  # cosine modes of the smooth weight path


def layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = LN_EPS) -> torch.Tensor:
    """Token-wise LN(z) = γ ⊙ (z − mean z)/√(var z + eps) + β (biased variance)."""
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def gelu(x: torch.Tensor) -> torch.Tensor:
    """Exact GELU, x Φ(x)."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's tanh form of GELU, generated from its SymPy definition (theory/factorisation.py)."""
    from numerics.generated.factorisation import gelu_tanh

    return gelu_tanh(x)


#: ``StackConfig.activation`` -> the MLP's elementwise nonlinearity.
ACTIVATIONS = {"gelu": gelu, "gelu_new": gelu_new}


class LayerNorm(nn.Module):
    def __init__(self, d: int, eps: float = LN_EPS):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d))
        self.beta = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return layer_norm(x, self.gamma, self.beta, self.eps)


class Attention(nn.Module):
    """Multi-head attention with a fixed kernel: W_Q, W_K, W_V (heads, d, d_k); W_O (heads, d_k, d);
    with ``attn_bias`` also a query bias b_Q (heads, d_k) and an output bias b_O (d)."""

    def __init__(self, d: int, heads: int, bias: torch.Tensor, attn_bias: bool = False):
        super().__init__()
        d_k = d // heads
        self.W_Q = nn.Parameter(torch.zeros(heads, d, d_k))
        self.W_K = nn.Parameter(torch.zeros(heads, d, d_k))
        self.W_V = nn.Parameter(torch.zeros(heads, d, d_k))
        self.W_O = nn.Parameter(torch.zeros(heads, d_k, d))
        self.b_Q = nn.Parameter(torch.zeros(heads, 1, d_k)) if attn_bias else None
        self.b_O = nn.Parameter(torch.zeros(d)) if attn_bias else None
        self.register_buffer("bias", bias)  # (heads, T, T): 0 / -inf mask plus ALiBi

    def weights(self, z: torch.Tensor) -> torch.Tensor:
        """Attention matrices (..., heads, T, T) for normalised tokens z (..., T, d)."""
        q = torch.einsum("...td,hdk->...htk", z, self.W_Q)
        if self.b_Q is not None:
            q = q + self.b_Q
        k = torch.einsum("...td,hdk->...htk", z, self.W_K)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.W_Q.shape[-1]) + self.bias
        return torch.softmax(scores, dim=-1)

    def forward(self, z):
        v = torch.einsum("...td,hdk->...htk", z, self.W_V)
        mixed = self.weights(z) @ v
        out = torch.einsum("...htk,hkd->...td", mixed, self.W_O)
        return out if self.b_O is None else out + self.b_O

    def value_output(self) -> torch.Tensor:
        """W_VO = Σ_heads W_V W_O, (d, d)."""
        return torch.einsum("hdk,hke->de", self.W_V, self.W_O)


class MLP(nn.Module):
    def __init__(self, d: int, width: int, activation: str = "gelu"):
        super().__init__()
        self.activation = ACTIVATIONS[activation]
        self.W1 = nn.Parameter(torch.zeros(d, width))
        self.b1 = nn.Parameter(torch.zeros(width))
        self.W2 = nn.Parameter(torch.zeros(width, d))
        self.b2 = nn.Parameter(torch.zeros(d))

    def forward(self, z):
        return self.activation(z @ self.W1 + self.b1) @ self.W2 + self.b2


class SlowPath(nn.Module):
    """Block-mean pooling -> attention over n = T/P block tokens -> one-block shift -> lift."""

    def __init__(self, d: int, heads: int, T: int, P: int, slow_kernel: str):
        super().__init__()
        self.P = P
        n = T // P
        self.attn = Attention(d, heads, K.score_bias(n, heads, slow_kernel))

    def forward(self, z):
        *batch, T, d = z.shape
        pooled = z.reshape(*batch, T // self.P, self.P, d).mean(-2)
        out = self.attn(pooled)
        shifted = torch.cat([torch.zeros_like(out[..., :1, :]), out[..., :-1, :]], dim=-2)
        return shifted.repeat_interleave(self.P, dim=-2)


class Layer(nn.Module):
    """One untied pre-LN block; ``h`` and ``decay`` are fixed numbers, not parameters."""

    def __init__(self, cfg: StackConfig, bias: torch.Tensor):
        super().__init__()
        self.h, self.decay = cfg.h, cfg.decay
        self.ln1 = LayerNorm(cfg.d, cfg.ln_eps)
        self.attn = Attention(cfg.d, cfg.heads, bias, cfg.attn_bias)
        self.ln2 = LayerNorm(cfg.d, cfg.ln_eps)
        self.mlp = MLP(cfg.d, cfg.mlp_ratio * cfg.d, cfg.activation)
        if cfg.P is not None:
            self.slow = SlowPath(cfg.d, cfg.heads, cfg.T, cfg.P, cfg.slow_kernel)
            # float64, so that the cast to the stack's dtype is the only rounding of the gate
            self.gate = nn.Parameter(torch.tensor(float(cfg.gate), dtype=torch.float64))
        else:
            self.slow = None

    def mixing(self, x):
        """The attention update (fast plus gated slow path) before the step h."""
        z = self.ln1(x)
        update = self.attn(z)
        if self.slow is not None:
            update = update + self.gate * self.slow(z)
        return update

    def forward(self, x):
        u = (1.0 - self.h * self.decay) * x + self.h * self.mixing(x)
        return u + self.h * self.mlp(self.ln2(u))

    def vector_field(self, x):
        """F(θ, X) = −αX + attention(X) + MLP(LN₂(X)): the layer is X + hF up to O(h²)."""
        return -self.decay * x + self.mixing(x) + self.mlp(self.ln2(x))

    def token_map(self, xbar):
        """The layer on a token-homogeneous state 1x̄ᵀ, computed on x̄ alone (..., d).

        A1 = 1 and every value row is equal, so attention returns LN₁(x̄) W_VO (+ b_O) on each token.
        """
        ubar = (1.0 - self.h * self.decay) * xbar + self.h * self.ln1(xbar) @ self.attn.value_output()
        if self.attn.b_O is not None:
            ubar = ubar + self.h * self.attn.b_O
        return ubar + self.h * self.mlp(self.ln2(ubar))


class Stack(nn.Module):
    """An untied stack: ``stack(X)`` maps (..., T, d) -> (..., T, d)."""

    def __init__(self, cfg: StackConfig):
        super().__init__()
        self.config = validate_config(cfg)
        #: check every input for NaN / inf at the entry of the forward pass (switch off in inner loops)
        self.check_inputs = True
        bias = K.score_bias(cfg.T, cfg.heads, cfg.kernel, cfg.block_size or cfg.P)
        self.layers = nn.ModuleList(Layer(cfg, bias) for _ in range(cfg.layers))
        self._path: dict[str, torch.Tensor] | None = None

    @property
    def h(self) -> float:
        return self.config.h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        for layer in self.layers:
            x = layer(x)
        return x

    def trajectory(self, x: torch.Tensor) -> torch.Tensor:
        """All states X_0 .. X_L, shape (layers+1, ..., T, d)."""
        self._check_input(x)
        states = [x]
        for layer in self.layers:
            states.append(layer(states[-1]))
        return torch.stack(states)

    def reference_trajectory(self, xbar: torch.Tensor) -> torch.Tensor:
        """Token-homogeneous reference x̄_0 .. x̄_L, shape (..., layers+1, d), computed on x̄ only.

        Requires every gate to be zero: the slow path's one-block shift feeds block 0
        zero and the others the same value, which breaks homogeneity when g ≠ 0.
        """
        if xbar.shape[-1] != self.config.d:
            raise ValueError(f"xbar has last dimension {xbar.shape[-1]}, expected d={self.config.d}")
        if any(layer.slow is not None and float(layer.gate.detach()) != 0.0 for layer in self.layers):
            raise ValueError("reference_trajectory needs gate=0: a nonzero gate makes the "
                             "slow path's one-block shift break token homogeneity")
        states = [xbar]
        for layer in self.layers:
            states.append(layer.token_map(states[-1]))
        return torch.stack(states, dim=-2)

    def frozen_kernels(self) -> torch.Tensor:
        """Per-head frozen kernels (heads, T, T) of the fast path."""
        return torch.softmax(self.layers[0].attn.bias, dim=-1)

    def frozen_kernel(self) -> torch.Tensor:
        """The common frozen kernel A (T, T); an error when heads disagree (ALiBi, heads > 1)."""
        A = self.frozen_kernels()
        if not torch.allclose(A, A[:1].expand_as(A), rtol=0, atol=0):
            raise ValueError(f"kernel={self.config.kernel!r} gives each head its own frozen kernel; "
                             "use frozen_kernels() for the (heads, T, T) stack")
        return A[0]

    def weights_at(self, t: float) -> dict[str, torch.Tensor]:
        """θ(t) on the smooth weight path, as a parameter dict for one ``Layer``."""
        if self._path is None:
            raise ValueError("weights_at needs weight_path='smooth'")
        c = torch.tensor([math.cos(math.pi * k * t) for k in range(PATH_MODES)],
                         dtype=next(iter(self._path.values())).dtype,
                         device=next(iter(self._path.values())).device)
        return {name: torch.einsum("k,k...->...", c, coef) for name, coef in self._path.items()}

    def check_finite(self) -> None:
        """Raise ValueError naming the first parameter holding NaN or inf."""
        for name, p in self.named_parameters():
            if not torch.isfinite(p).all():
                raise ValueError(f"parameter {name} has non-finite entries (NaN or inf)")

    def _check_input(self, x):
        check_input(x, self.config.T, self.config.d, finite=self.check_inputs)


def _draw_layer_params(layer: Layer, cfg: StackConfig, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """One i.i.d. draw of a layer's weights (float64, CPU), by parameter name."""
    d, dk, heads, s = cfg.d, cfg.d_k, cfg.heads, cfg.weight_scale

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    # c·I split over heads: Σ_h E_h E_hᵀ = I with E_h the d×d_k block of the identity.
    eye_blocks = torch.eye(d, dtype=torch.float64).reshape(d, heads, dk).permute(1, 0, 2)
    root_c = math.sqrt(cfg.value_scale)
    params = {}
    for name, p in layer.named_parameters():
        if name == "gate":
            continue
        leaf = name.rpartition(".")[2]
        if leaf == "gamma":
            value = cfg.ln_gain + 0.1 * randn(d)
        elif leaf in ("beta", "b1", "b2", "b_Q", "b_O"):
            value = 0.1 * randn(*p.shape)
        elif leaf in ("W_Q", "W_K"):
            value = s * randn(heads, d, dk) / math.sqrt(d)
        elif leaf == "W_V":
            value = s * randn(heads, d, dk) / math.sqrt(d) + root_c * eye_blocks
        elif leaf == "W_O":
            value = s * randn(heads, dk, d) / math.sqrt(dk * heads) + root_c * eye_blocks.transpose(1, 2)
        elif leaf == "W1":
            value = s * randn(*p.shape) / math.sqrt(p.shape[0])
        elif leaf == "W2":
            value = s * randn(*p.shape) / math.sqrt(p.shape[0])
        else:  # pragma: no cover - a new parameter must get an explicit distribution
            raise AssertionError(f"no distribution for parameter {name}")
        params[name] = value
    return params


def _draw(spec) -> Stack:
    """Draw the random stack ``spec`` (a ``numerics.stacks.spec.StackSpec``) names (docs/theory.md §0), from its seed.

    Reached through ``numerics.stacks.spec.build`` only.  ``arch`` other than ``"preln"`` hands the spec to
    the variant's builder (``numerics.stacks.architectures``: postln, relu, looped, hrm, mhc, compressed),
    configured by ``arch_options``.

    Every field is checked first (``numerics.stacks.params.validate_stack``: types, ranges, what the
    dtype can hold, and whether the stack fits in the available memory).  Weights are drawn in
    float64 on the CPU from ``torch.Generator().manual_seed(seed)`` and then moved to the
    dtype/device, so a seed means the same stack everywhere.  ``weight_path=None`` draws every
    layer i.i.d.; ``"smooth"`` samples θ_ℓ = θ(ℓh) from θ(t) = Σ_k cos(πkt) Θ_k / (1+k)², with
    Θ_k i.i.d. draws (k < 4).  ``step`` (default 1/L), ``activation``, ``ln_eps`` and
    ``attn_bias`` configure GPT-2's block (module docstring); ``attn_bias`` draws b_Q, b_O like
    the other biases.  The variants take them at their defaults only.
    """
    from numerics.stacks.params import validate_stack

    dtype = DTYPES[spec.dtype]
    cfg = StackConfig(**spec.flat())
    validate_stack(**cfg.as_dict(), dtype=dtype)
    block = ("step", "activation", "ln_eps", "attn_bias")
    changed = [k for k in block if getattr(cfg, k) != getattr(StackConfig, k)]
    if spec.arch != "preln" and changed:
        raise ValueError(f"{changed[0]}={getattr(cfg, changed[0])!r}: arch={spec.arch!r} takes the default "
                         f"{changed[0]} only (the GPT-2 block fields are preln's)")
    if spec.arch != "preln":
        return VARIANTS[check_arch(spec.arch)](spec)
    if spec.arch_options:
        raise ValueError(f"arch_options={dict(spec.arch_options)!r}: arch='preln' takes no options")
    device = resolve_device(spec.device)
    stack = Stack(cfg).to(torch.float64)
    gen = torch.Generator().manual_seed(cfg.seed)
    if cfg.weight_path == "smooth":
        draws = [_draw_layer_params(stack.layers[0], cfg, gen) for _ in range(PATH_MODES)]
        path = {name: torch.stack([draws[k][name] / (1 + k) ** 2 for k in range(PATH_MODES)])
                for name in draws[0]}
        stack._path = {name: coef.to(dtype=dtype, device=device) for name, coef in path.items()}
        per_layer = [stack.weights_at(ell * cfg.h) for ell in range(cfg.layers)]
    else:
        per_layer = [_draw_layer_params(layer, cfg, gen) for layer in stack.layers]
    with torch.no_grad():
        for layer, values in zip(stack.layers, per_layer):
            for name, p in layer.named_parameters():
                if name in values:
                    p.copy_(values[name])  # copy_ converts to the float64 parameter exactly
    stack = stack.to(dtype=dtype, device=device)
    stack.check_finite()
    return stack


def random_xbar(d: int, seed: int = 0) -> torch.Tensor:
    """A seeded float64 reference token x̄ (CPU): the token-homogeneous state is 1x̄ᵀ."""
    return torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64, device="cpu")
