"""The contract of ``numerics.stacks.stack`` beyond the forward pass (tests/test_stack.py covers that).

* validation: every bad knob raises a ValueError whose *whole* message names the parameter;
* ``build(spec)``: a spec's unset knobs are ``StackConfig``'s defaults, every knob reaches the
  config (on the pre-LN route; the spec itself reaches the variant's builder on the others), and it
  draws every parameter family from the distribution that ``_draw_layer_params`` documents
  (in float64 on the CPU from ``torch.Generator().manual_seed(seed)``, then cast);
* the smooth weight path θ(t) = Σ_k cos(πkt) Θ_k / (1+k)² and ``weights_at``;
* ``resolve_device``, ``random_xbar``, ``StackConfig.as_dict``, ``Layer.vector_field``,
  ``reference_trajectory`` / ``frozen_kernel`` / ``weights_at`` errors and shapes.

Statistical tolerances.  For n i.i.d. N(μ, σ²) entries the sample mean has standard error
σ/√n and the sample standard deviation σ/√(2n) (to leading order); every distribution
check allows 6 standard errors (a false failure has probability ~2e-9 per check, and the
seeds are fixed, so the tests are deterministic).  The mistakes these checks exist to
catch (a scale off by √d, √heads, 2 or 11, a missing factor (1+k)², all heads equal) are
tens of standard errors away.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch
from torch import nn

from numerics.stacks import stack as S
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import StackConfig, random_xbar, resolve_device

F64 = torch.float64
SE = 6.0  # standard errors allowed by every statistical check (see the module docstring)


def raises_exactly(message: str):
    """pytest.raises(ValueError) matching the whole message, literally."""
    return pytest.raises(ValueError, match="^" + re.escape(message) + "$")


def base(**override):
    return dict(T=8, d=8, layers=2, heads=2, kernel="causal") | override


# ----------------------------------------------------------------------------- validation
BAD = [
    (dict(layers=True), "layers=True must be a positive integer"),
    (dict(layers=1.5), "layers=1.5 must be a positive integer"),
    (dict(layers=0), "layers=0 must be a positive integer"),
    (dict(T=True), "T=True must be a positive integer"),
    (dict(d=2.0), "d=2.0 must be a positive integer"),
    (dict(heads=-1), "heads=-1 must be a positive integer"),
    (dict(mlp_ratio=False), "mlp_ratio=False must be a positive integer"),
    (dict(heads=3), "heads=3 does not divide d=8"),
    (dict(slow_kernel="alibi", P=4), "slow_kernel='alibi' is not one of causal, full"),
    (dict(T=10, P=4), "T=10 is not divisible by P=4: blocks of 4 tokens need T = n*4"),
    (dict(block_size=3), "T=8 is not divisible by block_size=3: blocks of 3 tokens need T = n*3"),
    (dict(block_size=0), "block_size=0 must be a positive integer"),
    (dict(kernel="block", block_size=3), "T=8 is not divisible by block_size=3: blocks of 3 tokens need T = n*3"),
    (dict(kernel="block"), "kernel='block' needs block_size or P to define its blocks"),
    (dict(weight_scale=0.0), "weight_scale=0.0 must be positive"),
    (dict(weight_scale=-2.0), "weight_scale=-2.0 must be positive"),
    (dict(value_scale=-1.0), "value_scale=-1.0 must be >= 0 (W_VO ≈ c·I + noise, c ≥ 0)"),
    (dict(decay=-0.5), "decay=-0.5 must be >= 0 (X' = (1 - h*decay) X + ...)"),
    (dict(seed=1.5), "seed=1.5 must be an integer"),
    (dict(dtype=torch.int64), "dtype='int64' is not one of float64, float32"),
    (dict(dtype="float16"), "dtype='float16' is not one of float64, float32"),
    (dict(arch_options={"k": 2}), "arch_options={'k': 2}: arch='preln' takes no options"),
]


# ASCII ids (mutmut re-selects tests by node id; pytest escapes non-ASCII ids, which then match nothing).
@pytest.mark.parametrize("override,message", BAD, ids=[f"{i}-{'-'.join(o)}" for i, (o, _) in enumerate(BAD)])
def test_bad_knob_raises_the_whole_message(override, message):
    with raises_exactly(message):
        StackSpec.of(**base(**override)).build()


def test_boundary_values_are_accepted():
    """The boundaries of the checks above are valid: weight_scale > 0 tiny, value_scale = decay = 0,
    one layer, one head, T = P, a block kernel defined by block_size alone or by P alone."""
    StackSpec.of(**base(weight_scale=1e-300, value_scale=0.0, decay=0.0)).build()
    StackSpec.of(**base(layers=1, heads=1, mlp_ratio=1)).build()
    StackSpec.of(**base(P=8, gate=0.1)).build()
    for extra in (dict(block_size=2), dict(P=2)):
        stack = StackSpec.of(**base(kernel="block", **extra)).build()
        # blocks of 2: token 0 sees tokens 0 and 1 (full within its block), nothing later.
        A = stack.frozen_kernel()
        assert torch.equal(A[0], torch.tensor([0.5, 0.5, 0, 0, 0, 0, 0, 0], dtype=F64))


def test_validate_config_returns_the_config_unchanged():
    cfg = StackConfig(T=8, d=8, layers=2, heads=2, kernel="block", block_size=4)
    assert S.validate_config(cfg) is cfg


# ----------------------------------------------------------------------------- the configuration
NON_DEFAULT = dict(T=8, d=8, layers=3, heads=4, kernel="block", P=4, gate=0.5, seed=7, mlp_ratio=2,
                   weight_path="smooth", slow_kernel="full", block_size=2, value_scale=2.0,
                   weight_scale=0.5, decay=0.3, ln_gain=1.5)


def test_defaults_are_the_config_defaults():
    """A spec's unset fields are StackConfig's defaults (seed 0, mlp_ratio 4, no value
    scale, unit weight scale, no decay, unit LN gain, float64 on the CPU)."""
    stack = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal").build()
    assert stack.config == StackConfig(T=4, d=8, layers=2, heads=2, kernel="causal")
    assert stack.layers[0].mlp.W1.shape == (8, 4 * 8)
    assert all(p.dtype == F64 and p.device.type == "cpu" for p in stack.parameters())
    same = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", seed=0).build()
    assert all(torch.equal(p, q) for p, q in zip(stack.parameters(), same.parameters()))


#: GPT-2's block fields (numerics.storage.hf_gpt2), away from their defaults.
GPT2_BLOCK = dict(step=1.0, activation="gelu_new", ln_eps=1e-6, attn_bias=True)
BLOCK_DEFAULTS = dict(step=None, activation="gelu", ln_eps=1e-5, attn_bias=False)


def test_preln_route_puts_every_knob_in_the_config():
    stack = StackSpec.of(**NON_DEFAULT).build()
    assert stack.config == StackConfig(**NON_DEFAULT)
    assert stack.config.as_dict() == NON_DEFAULT | {"arch": "preln"} | BLOCK_DEFAULTS


def test_preln_route_puts_the_gpt2_block_fields_in_the_config():
    """step, activation, ln_eps and attn_bias reach the config and the modules; h is the step."""
    stack = StackSpec.of(**NON_DEFAULT, **GPT2_BLOCK).build()
    assert stack.config == StackConfig(**NON_DEFAULT, **GPT2_BLOCK)
    layer = stack.layers[0]
    assert stack.h == layer.h == 1.0 and layer.ln1.eps == layer.ln2.eps == 1e-6
    assert layer.attn.b_Q.shape == (4, 1, 2) and layer.attn.b_O.shape == (8,)
    assert layer.attn.b_Q.abs().min() > 0 and layer.attn.b_O.abs().min() > 0  # drawn like the other biases
    assert StackSpec.of(**NON_DEFAULT).build().layers[0].attn.b_Q is None


def test_gpt2_block_fields_at_their_defaults_leave_the_draws_unchanged():
    """Passing the defaults explicitly draws the very same stack (no new parameter, same stream)."""
    a = StackSpec.of(**NON_DEFAULT).build()
    b = StackSpec.of(**NON_DEFAULT, **BLOCK_DEFAULTS).build()
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_every_accepted_activation_is_one_the_stack_has():
    from numerics.stacks.params import ACTIVATION_NAMES

    assert set(ACTIVATION_NAMES) == set(S.ACTIVATIONS)


def test_variants_refuse_the_gpt2_block_fields():
    with pytest.raises(ValueError, match="step=1.0: arch='postln' takes the default step only"):
        StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", arch="postln", knobs={"step": 1.0}).build()


def test_other_arch_hands_the_spec_to_its_builder(monkeypatch):
    """build(spec) with arch != 'preln' hands the spec itself (every knob, its dtype, device and
    arch_options) to the builder registered for the arch (numerics.stacks.architectures.base.build)."""
    seen = []

    def spy(spec):
        seen.append(spec)
        return "built"

    monkeypatch.setitem(S.VARIANTS, "looped", spy)
    spec = StackSpec.of(arch="looped", arch_options={"loops": 5}, dtype="float32", device="cpu", **NON_DEFAULT)
    assert spec.build() == "built"
    assert seen == [spec]
    assert spec.flat() == NON_DEFAULT | {"arch": "looped"} | BLOCK_DEFAULTS


@pytest.mark.parametrize("arch,options", [("postln", None), ("looped", {"loops": 5}), ("hrm", {"k": 3})])
def test_other_arch_keeps_every_knob(arch, options):
    """End to end: the variant's config holds every non-default knob, its options, its dtype."""
    stack = StackSpec.of(arch=arch, arch_options=options, dtype="float32", **NON_DEFAULT).build()
    assert stack.config == StackConfig(**NON_DEFAULT, arch=arch)
    for name, value in (options or {}).items():
        assert stack.options[name] == value
    assert {p.dtype for p in stack.parameters()} == {torch.float32}


def test_as_dict_is_the_field_dict_and_round_trips():
    cfg = StackConfig(**NON_DEFAULT)
    d = cfg.as_dict()
    assert d == {f.name: getattr(cfg, f.name) for f in dataclasses.fields(StackConfig)}
    assert StackConfig(**d) == cfg
    assert cfg.h == 1 / 3 and cfg.d_k == 2


# ----------------------------------------------------------------------------- parameter distributions
D, HEADS, DK, RATIO, SCALE = 64, 4, 16, 4, 0.5


def _stack(**kw):
    # P=2 adds the slow path's attention, drawn like the fast one; heads=4 so that d_k·heads = d ≠ d_k/heads.
    return StackSpec.of(**dict(T=4, d=D, layers=2, heads=HEADS, kernel="causal", P=2, seed=11,
                                weight_scale=SCALE, mlp_ratio=RATIO) | kw).build()


def _family(stack, leaf):
    return [p.detach() for name, p in stack.layers.named_parameters() if name.rsplit(".", 1)[-1] == leaf]


def assert_normal(x, mean, std):
    """Sample mean and std of the entries of x against N(mean, std²), 6 standard errors each."""
    x = x.reshape(-1)
    n = x.numel()
    m, s = float(x.mean()), float(x.std())
    assert abs(m - mean) < SE * std / math.sqrt(n), (m, mean, std, n)
    assert abs(s / std - 1) < SE / math.sqrt(2 * n), (s, std, n)


def assert_heads_independent(W):
    """Entries of head 0 and head 1 are uncorrelated: |r| < 6/√n (SE of r at ρ = 0 is 1/√n)."""
    a, b = W[0].reshape(-1), W[1].reshape(-1)
    r = float(torch.corrcoef(torch.stack([a, b]))[0, 1])
    assert abs(r) < SE / math.sqrt(a.numel()), r


def test_shapes_of_every_parameter():
    stack = _stack()
    layer = stack.layers[0]
    for attn in (layer.attn, layer.slow.attn):
        assert attn.W_Q.shape == attn.W_K.shape == attn.W_V.shape == (HEADS, D, DK)
        assert attn.W_O.shape == (HEADS, DK, D)
    assert layer.mlp.W1.shape == (D, RATIO * D) and layer.mlp.b1.shape == (RATIO * D,)
    assert layer.mlp.W2.shape == (RATIO * D, D) and layer.mlp.b2.shape == (D,)
    assert layer.ln1.gamma.shape == layer.ln2.beta.shape == (D,)
    assert layer.gate.shape == () and float(layer.gate.detach()) == 0.0


def test_layer_norm_gains_and_all_biases():
    """γ = ln_gain + 0.1·N(0, 1); β, b₁, b₂ = 0.1·N(0, 1)."""
    stack = _stack(ln_gain=1.7)
    assert_normal(torch.cat(_family(stack, "gamma")), 1.7, 0.1)
    for leaf in ("beta", "b1", "b2"):
        assert_normal(torch.cat(_family(stack, leaf)), 0.0, 0.1)


def test_attention_weights():
    """W_Q, W_K, W_V: s·N/√d; W_O: s·N/√(d_k·heads); every head drawn independently."""
    stack = _stack()
    for leaf in ("W_Q", "W_K", "W_V"):
        ws = _family(stack, leaf)
        assert_normal(torch.stack(ws), 0.0, SCALE / math.sqrt(D))
        assert_heads_independent(ws[0])
    ws = _family(stack, "W_O")
    assert_normal(torch.stack(ws), 0.0, SCALE / math.sqrt(DK * HEADS))
    assert_heads_independent(ws[0])


def test_value_scale_adds_root_c_identity_blocks():
    """value_scale c: W_V = noise + √c E_h, W_O = noise + √c E_hᵀ (E_h the h-th d×d_k identity block),
    so Σ_h W_V W_O ≈ c·I; the noise keeps its distribution and heads stay independent."""
    c = 2.0
    stack = _stack(value_scale=c)
    eye = torch.eye(D, dtype=F64).reshape(D, HEADS, DK).permute(1, 0, 2)
    for leaf, E, std in (("W_V", eye, SCALE / math.sqrt(D)), ("W_O", eye.transpose(1, 2), SCALE / math.sqrt(D))):
        ws = torch.stack(_family(stack, leaf))
        on = E.expand_as(ws).bool()
        assert_normal(ws[on], math.sqrt(c), std)
        assert_normal(ws[~on], 0.0, std)
        assert_heads_independent(ws[0] - math.sqrt(c) * E)


def test_value_scale_without_noise_is_exactly_c_identity():
    """With noise far below float64 resolution (weight_scale 1e-20), W_VO = Σ_h W_V W_O = c·I up to
    the rounding of √c·√c (≤ 2 ulp of c = 4.4e-16); √c computed in float32 would be off by ~1e-7."""
    c = 2.0
    stack = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", knobs={"value_scale": c, "weight_scale": 1e-20}).build()
    for layer in stack.layers:
        W = layer.attn.value_output()
        assert torch.allclose(W, c * torch.eye(8, dtype=F64), rtol=0, atol=1e-15)
        assert torch.equal(layer.attn.W_V[layer.attn.W_V.abs() > 1e-10],
                           torch.full((8,), math.sqrt(c), dtype=F64))


def test_mlp_weights():
    """W₁ (d, r·d) and W₂ (r·d, d): s·N/√fan_in with fan_in their first dimension."""
    stack = _stack()
    assert_normal(torch.stack(_family(stack, "W1")), 0.0, SCALE / math.sqrt(D))
    assert_normal(torch.stack(_family(stack, "W2")), 0.0, SCALE / math.sqrt(RATIO * D))


def test_parameters_are_drawn_in_float64():
    """Drawn in float64: almost no entry is a float32 number (the chance is ~2^-29 per entry),
    whereas a float32 draw cast up would be float32-exact everywhere."""
    stack = _stack(value_scale=2.0)
    for name, p in stack.layers.named_parameters():
        if name.endswith("gate"):
            continue
        assert not torch.equal(p, p.float().double()), name
        exact = (p == p.float().double()).double().mean()
        assert exact < 0.01, (name, exact)


def test_float32_stack_is_the_float64_draw_rounded():
    s64 = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", P=2, seed=3, knobs={"value_scale": 1.5}).build()
    s32 = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", P=2, seed=3, dtype="float32", knobs={"value_scale": 1.5}).build()
    for (n64, p64), (n32, p32) in zip(s64.named_parameters(), s32.named_parameters()):
        assert n64 == n32 and p32.dtype == torch.float32
        assert torch.equal(p32, p64.float()), n64
    b64 = dict(s64.named_buffers(remove_duplicate=False))
    for name, b32 in s32.named_buffers(remove_duplicate=False):
        assert b32.dtype == torch.float32 and torch.equal(b32, b64[name].float()), name


def _expected_layer_draw(names_shapes, gen, T, d, heads, value_scale=0.0, weight_scale=1.0, ln_gain=1.0):
    """The documented draw, written out: float64 normals from ``gen`` in parameter order."""
    dk, s = d // heads, weight_scale
    E = torch.zeros(heads, d, dk, dtype=F64)
    for h in range(heads):
        for j in range(dk):
            E[h, h * dk + j, j] = 1.0
    out = {}
    for name, shape in names_shapes:
        leaf = name.split(".")[-1]
        if leaf == "gate":
            continue
        z = torch.randn(*shape, generator=gen, dtype=F64)
        if leaf == "gamma":
            out[name] = ln_gain + 0.1 * z
        elif leaf in ("beta", "b1", "b2"):
            out[name] = 0.1 * z
        elif leaf in ("W_Q", "W_K"):
            out[name] = s * z / math.sqrt(d)
        elif leaf == "W_V":
            out[name] = s * z / math.sqrt(d) + math.sqrt(value_scale) * E
        elif leaf == "W_O":
            out[name] = s * z / math.sqrt(d) + math.sqrt(value_scale) * E.transpose(1, 2)
        else:
            out[name] = s * z / math.sqrt(shape[0])
    return out


def test_draw_is_pinned_to_the_seed():
    """A seed means the same stack everywhere (cached results depend on it): the i.i.d. draw is
    layer by layer, parameter by parameter in registration order, from Generator().manual_seed(seed)."""
    kw = dict(value_scale=0.7, weight_scale=1.3, ln_gain=0.9)
    stack = StackSpec.of(T=4, d=8, layers=2, heads=2, kernel="causal", P=2, seed=5, **kw).build()
    gen = torch.Generator().manual_seed(5)
    for layer in stack.layers:
        named = list(layer.named_parameters())
        expected = _expected_layer_draw([(n, p.shape) for n, p in named], gen, 4, 8, 2, **kw)
        for name, p in named:
            if name != "gate":
                assert torch.equal(p, expected[name]), name


def test_a_parameter_without_a_distribution_is_an_error():
    stack = StackSpec(T=4, d=8, layers=1, heads=2, kernel="causal").build()
    layer = stack.layers[0]
    layer.extra = nn.Parameter(torch.zeros(3, dtype=F64))
    with pytest.raises(AssertionError, match="^no distribution for parameter extra$"):
        S._draw_layer_params(layer, stack.config, torch.Generator().manual_seed(0))


# ----------------------------------------------------------------------------- the smooth weight path
TS = torch.tensor([0.0, 1 / 3, 2 / 3, 1.0], dtype=F64)


def _modes(stack):
    """Θ_k/(1+k)² recovered from θ(t) at 4 depths: θ(t_j) = Σ_k cos(πk t_j) M_k, a 4×4 solve."""
    C = torch.cos(math.pi * TS[:, None] * torch.arange(4, dtype=F64)[None, :])
    thetas = [stack.weights_at(float(t)) for t in TS]
    return {name: torch.linalg.solve(C, torch.stack([th[name].reshape(-1) for th in thetas]))
            for name in thetas[0]}


def test_smooth_path_modes_decay_like_one_over_one_plus_k_squared():
    """θ(t) = Σ_k cos(πkt) Θ_k/(1+k)²: mode k of W₁ has std s/√d/(1+k)², of γ mean ln_gain/(1+k)²."""
    stack = _stack(weight_path="smooth", ln_gain=1.7)
    modes = _modes(stack)
    for k in range(4):
        f = (1 + k) ** 2
        assert_normal(modes["mlp.W1"][k], 0.0, SCALE / math.sqrt(D) / f)
        assert_normal(modes["mlp.W2"][k], 0.0, SCALE / math.sqrt(RATIO * D) / f)
        assert_normal(modes["attn.W_O"][k], 0.0, SCALE / math.sqrt(D) / f)
        gammas = torch.cat([modes["ln1.gamma"][k], modes["ln2.gamma"][k]])
        assert_normal(gammas, 1.7 / f, 0.1 / f)
    # the 4 modes are independent draws
    r = torch.corrcoef(modes["mlp.W1"])
    assert (r - torch.eye(4, dtype=F64)).abs().max() < SE / math.sqrt(modes["mlp.W1"].shape[1])


def test_smooth_path_layers_sample_theta_at_l_times_h():
    stack = StackSpec(T=4, d=8, layers=3, heads=2, kernel="causal", P=2, seed=2, knobs={"weight_path": "smooth"}).build()
    for ell, layer in enumerate(stack.layers):
        theta = stack.weights_at(ell / 3)
        for name, p in layer.named_parameters():
            if name != "gate":
                assert torch.equal(p, theta[name]), (ell, name)


def test_one_layer_smooth_stack_is_theta_at_zero():
    stack = StackSpec(T=4, d=8, layers=1, heads=2, kernel="causal", seed=2, knobs={"weight_path": "smooth"}).build()
    theta = stack.weights_at(0.0)
    assert set(theta) == {n for n, _ in stack.layers[0].named_parameters()}
    for name, p in stack.layers[0].named_parameters():
        assert torch.equal(p, theta[name]), name


def test_weights_at_keeps_the_stack_dtype():
    s32 = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", seed=2, dtype="float32", knobs={"weight_path": "smooth"}).build()
    theta = s32.weights_at(0.25)
    assert {v.dtype for v in theta.values()} == {torch.float32}
    assert {v.device for v in theta.values()} == {next(s32.parameters()).device}
    assert {p.dtype for p in s32.parameters()} == {torch.float32}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_stack_and_path_live_on_the_device():
    stack = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", seed=2, device="cuda", knobs={"weight_path": "smooth"}).build()
    assert {p.device.type for p in stack.parameters()} == {"cuda"}
    assert {v.device.type for v in stack.weights_at(0.5).values()} == {"cuda"}
    cpu = StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal", seed=2, knobs={"weight_path": "smooth"}).build()
    # θ(ℓh) is a 4-term float64 sum of O(1) values, summed on the GPU in its own order: a few ulp.
    for p, q in zip(stack.parameters(), cpu.parameters()):
        assert torch.allclose(p.cpu(), q, rtol=0, atol=1e-14)


def test_weights_at_needs_the_smooth_path():
    with raises_exactly("weights_at needs weight_path='smooth'"):
        StackSpec(T=4, d=8, layers=2, heads=2, kernel="causal").build().weights_at(0.5)


# ----------------------------------------------------------------------------- devices
def test_resolve_device(monkeypatch):
    assert resolve_device(None) == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    with raises_exactly("device='cuda' was requested but CUDA is not available on this machine"):
        resolve_device("cuda")
    with raises_exactly("device='cuda' was requested but CUDA is not available on this machine"):
        resolve_device("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda") == torch.device("cuda")
    assert resolve_device("cpu") == torch.device("cpu")


def test_random_xbar_is_seeded_float64():
    x = random_xbar(5)
    assert x.dtype == F64 and x.shape == (5,)
    assert torch.equal(x, random_xbar(5, seed=0))
    assert torch.equal(random_xbar(5, seed=3), random_xbar(5, seed=3))
    assert torch.equal(random_xbar(5, seed=3),
                       torch.randn(5, generator=torch.Generator().manual_seed(3), dtype=F64))
    assert not torch.equal(random_xbar(5, seed=3), random_xbar(5, seed=4))


# ----------------------------------------------------------------------------- layer and stack methods
def test_vector_field_is_the_small_step_limit_of_the_layer():
    """Layer = X + hF(θ, X) + O(h²): (layer(X) − X)/h − F = h·∂MLP·(…) is O(h), so it shrinks
    tenfold when h does (float64 rounding of the difference quotient is ~1e-16/h ≤ 1e-11 here)."""
    stack = StackSpec(T=8, d=8, layers=2, heads=2, kernel="causal", P=4, seed=4, knobs={"gate": 0.7, "decay": 0.8, "value_scale": 1.0}).build()
    layer = stack.layers[1]
    X = torch.randn(2, 8, 8, dtype=F64, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        F = layer.vector_field(X)
        errs = []
        for h in (1e-3, 1e-4, 1e-5):
            layer.h = h
            errs.append(float(((layer(X) - X) / h - F).abs().max()))
    assert F.shape == X.shape
    assert errs[0] < 1e-1 and 7 < errs[0] / errs[1] < 13 and 7 < errs[1] / errs[2] < 13, errs


def test_reference_trajectory_shape_is_batch_first():
    """x̄ of shape (..., d) gives (..., layers+1, d); each batch entry is its own trajectory."""
    stack = StackSpec(T=4, d=8, layers=3, heads=2, kernel="causal", seed=1).build()
    xbar = torch.randn(2, 8, dtype=F64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = stack.reference_trajectory(xbar)
        assert ref.shape == (2, 4, 8)
        for b in range(2):
            assert torch.equal(ref[b, 0], xbar[b])
            assert torch.allclose(ref[b], stack.reference_trajectory(xbar[b]), rtol=0, atol=1e-14)


def test_reference_trajectory_needs_gate_zero():
    stack = StackSpec(T=8, d=8, layers=2, heads=2, kernel="causal", P=4, knobs={"gate": 0.5}).build()
    with raises_exactly("reference_trajectory needs gate=0: a nonzero gate makes the "
                        "slow path's one-block shift break token homogeneity"):
        stack.reference_trajectory(torch.zeros(8, dtype=F64))


def test_frozen_kernel_message_and_exact_agreement():
    alibi = StackSpec(T=5, d=4, layers=1, heads=2, kernel="alibi").build()
    with raises_exactly("kernel='alibi' gives each head its own frozen kernel; "
                        "use frozen_kernels() for the (heads, T, T) stack"):
        alibi.frozen_kernel()
    # "heads disagree" is exact: a 1e-9 change of one head's bias (kernel change ~2e-10, below
    # allclose's default rtol and atol) already makes the common kernel undefined.
    stack = StackSpec(T=5, d=4, layers=1, heads=2, kernel="causal").build()
    with torch.no_grad():
        stack.layers[0].attn.bias[1, 4, 0] += 1e-9
    with pytest.raises(ValueError, match="gives each head its own frozen kernel"):
        stack.frozen_kernel()


def test_the_declared_spec_fields_are_the_spec_dataclass_fields():
    """numerics.stacks.params.StackSpecModel is a spec's schema (checkpoint manifests, sweep rows): it must name
    exactly StackSpec's fields, or a manifest check would accept or refuse the wrong ones."""
    from dataclasses import fields

    from numerics.stacks.params import StackSpecModel, _validate
    from numerics.stacks.spec import StackSpec

    assert [f.name for f in fields(StackSpec)] == list(StackSpecModel.model_fields)
    with pytest.raises(ValueError, match="colour is not a parameter here"):
        _validate(StackSpecModel, {**StackSpec().as_dict(), "colour": 1})


# ------------------------------------------------------------------ one declaration of the knobs
def _simulate_parser():
    from proofs_check.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command" or getattr(a, "choices", None))
    return sub.choices["simulate"].populate()   # simulate's knob options are added when it is used


def test_a_new_knob_gets_its_simulate_option_from_the_declaration():
    """Control: a model with one more knob yields one more option, typed and defaulted from its field."""
    import argparse

    from pydantic import Field

    from numerics.stacks.params import StackKnobs
    from proofs_check.cli.simulate import add_knob_flags

    class MoreKnobs(StackKnobs):
        temperature: float = Field(2.5, description="a throwaway knob")

    p = argparse.ArgumentParser()
    add_knob_flags(p, MoreKnobs)
    args = p.parse_args(["--temperature", "0.5", "--attn-bias", "--block-size", "4"])
    assert (args.temperature, args.attn_bias, args.block_size, args.gate) == (0.5, True, 4, 0.0)
    assert p.parse_args([]).temperature == 2.5
    base = argparse.ArgumentParser()
    add_knob_flags(base)
    with pytest.raises(SystemExit):
        base.parse_args(["--temperature", "0.5"])


def test_a_sweep_rows_simulate_command_rebuilds_its_knobs():
    """The worst case's ``fastslow simulate`` line, parsed by simulate's own options, gives back every
    knob of the row: the knobs simulate had no option for (step, activation, attn_bias, ...) included."""
    import shlex

    from numerics.stacks.params import KNOBS, StackKnobs
    from proofs_check.cli.simulate import spec_of
    from proofs_check.sweep.summary import simulate_command

    row = {"arch": "preln", "T": 8, "P": 4.0, "d": 8, "layers": 2, "heads": 2, "kernel": "causal", "seed": 3,
           **{k: f.default for k, f in StackKnobs.model_fields.items()},
           "gate": 0.25, "step": 1.0, "activation": "gelu_new", "attn_bias": True, "ln_eps": 1e-6,
           "block_size": 2.0, "weight_path": "smooth", "mlp_ratio": 2}
    line = simulate_command(row)
    args = _simulate_parser().parse_args(shlex.split(line)[2:])
    spec = spec_of(args)
    assert {k: spec.flat()[k] for k in KNOBS} == {k: (int(row[k]) if k == "block_size" else row[k]) for k in KNOBS}
    assert (spec.T, spec.P, spec.seed) == (8, 4, 3)
    assert simulate_command({**row, "arch": "mhc"}) is None
