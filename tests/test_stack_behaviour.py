"""numerics/stacks/stack.py by its behaviour: each validation refuses with the parameter named, the attention biases
b_Q and b_O enter the output by the amount derived, the defaults are those the module docstring states.

Each expected value is derived here from the definitions (module docstring of numerics/stacks/stack.py, docs/theory.md
§0), never read back from the code under test.  Tolerances: float64 sums of ≤ d + T terms of O(1) size,
64·(d + T)·u ≈ 1e-13 relative (stated beside each assertion).
"""

from __future__ import annotations

import math

import pytest
import torch

from numerics.stacks import stack as S
from numerics.stacks.spec import StackSpec

U = 2.0 ** -53


def _spec(T=6, d=4, layers=2, heads=2, kernel="causal", **fields):
    return StackSpec.of(T=T, d=d, layers=layers, heads=heads, kernel=kernel, **fields)


def _tiny(**kw):
    return _spec(**kw).build()


# ---- validation: refused, with the parameter named ------------------------------------------------------
@pytest.mark.parametrize("value", [0, -3, 1.5, True, "2"])
def test_positive_int_refuses_and_names(value):
    with pytest.raises(ValueError, match=r"^loops=.* must be a positive integer$"):
        S._positive_int(value, "loops")


@pytest.mark.parametrize("value", [1, 2, 17])
def test_positive_int_accepts_one_and_up(value):
    assert S._positive_int(value, "loops") is None


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "1.0", None])
def test_finite_refuses_and_names(value):
    with pytest.raises(ValueError, match=r"^mixing_scale=.* must be a finite number$"):
        S._finite(value, "mixing_scale")


@pytest.mark.parametrize("value", [0, -2.5, 1e300])
def test_finite_accepts_finite_numbers(value):
    assert S._finite(value, "mixing_scale") is None


def test_unknown_arch_is_refused_with_the_known_ones_listed():
    with pytest.raises(ValueError) as err:
        S.check_arch("transformer-xl")
    message = str(err.value)
    assert message.startswith("arch='transformer-xl' is not one of preln, ")
    assert all(name in message.split("is not one of ")[1].split(", ") for name in ("preln", *S.VARIANTS))


def test_register_variant_makes_build_call_the_builder(monkeypatch):
    calls = []
    monkeypatch.setitem(S.VARIANTS, "probe-arch", None)
    S.register_variant("probe-arch", lambda spec: calls.append((spec.arch, spec.T)) or "built")
    assert S.VARIANTS["probe-arch"] is not None
    assert _tiny(arch="probe-arch") == "built" and calls == [("probe-arch", 6)]


def test_validate_config_checks_against_the_dtype():
    """A value float16 cannot hold (value_scale = 1e-30 is stored as 0) is refused only when dtype is given."""
    cfg = S.StackConfig(T=6, d=4, layers=2, heads=2, kernel="causal", value_scale=1e-30)
    assert S.validate_config(cfg) is cfg
    with pytest.raises(ValueError, match="value_scale=1e-30 cannot be held"):
        S.validate_config(cfg, dtype=torch.float16)


@pytest.mark.parametrize("field, value", [("mlp_ratio", 0), ("weight_path", "rough"), ("value_scale", math.nan),
                                          ("decay", math.inf), ("ln_gain", math.nan), ("slow_kernel", "sideways"),
                                          ("block_size", 0), ("weight_scale", math.inf), ("step", 0.0),
                                          ("activation", "swish"), ("ln_eps", -1.0), ("attn_bias", "yes")])
def test_build_refuses_each_field_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        _tiny(**{field: value})


@pytest.mark.parametrize("field, value", [("seed", -1), ("gate", math.nan), ("mlp_ratio", 0), ("weight_path", "rough"),
                                          ("slow_kernel", "sideways"), ("block_size", 0), ("value_scale", math.inf),
                                          ("weight_scale", math.nan), ("decay", math.inf), ("ln_gain", math.nan),
                                          ("step", 0.0), ("activation", "swish"), ("ln_eps", -1.0),
                                          ("attn_bias", "yes")])
def test_build_refuses_before_building_anything(monkeypatch, field, value):
    """Every argument is checked before any work: with the Stack constructor replaced by a tripwire, a bad value of
    each field is refused by the spec's or the draw's own validation (naming it), never after a stack was started."""
    def tripwire(cfg):
        raise AssertionError(f"a Stack was built before {field}={value!r} was refused")

    monkeypatch.setattr(S, "Stack", tripwire)
    with pytest.raises(ValueError, match=field):
        _tiny(**{field: value}, **({"P": 2} if field == "gate" else {}))


def test_build_refuses_a_dtype_it_cannot_hold():
    with pytest.raises(ValueError, match="dtype"):
        _tiny(dtype=torch.int64)
    with pytest.raises(ValueError, match="dtype='float16' is not one of float64, float32"):
        _tiny(dtype=torch.float16)
    with pytest.raises(ValueError, match="value_scale=1e-50 cannot be held"):   # below float32's subnormals
        _tiny(dtype=torch.float32, value_scale=1e-50)


@pytest.mark.parametrize("field, value", [("step", 1.0), ("activation", "gelu_new"), ("ln_eps", 1e-6),
                                          ("attn_bias", True)])
def test_variants_refuse_the_gpt2_fields_by_name(field, value):
    with pytest.raises(ValueError, match=rf"^{field}=.*arch='postln' takes the default {field} only"):
        _tiny(arch="postln", **{field: value})


def test_preln_refuses_arch_options():
    with pytest.raises(ValueError, match=r"^arch_options=\{'loops': 2\}: arch='preln' takes no options"):
        _tiny(arch_options={"loops": 2})


# ---- inputs -----------------------------------------------------------------------------------------------
def test_check_input_names_shape_and_first_bad_index():
    with pytest.raises(ValueError, match=r"^input has shape \(6, 3\), expected \(\.\.\., T=6, d=4\)$"):
        S.check_input(torch.zeros(6, 3), 6, 4)
    x = torch.zeros(2, 6, 4, dtype=torch.float64)
    x[1, 3, 2], x[1, 5, 0] = math.inf, math.nan
    with pytest.raises(ValueError) as err:
        S.check_input(x, 6, 4)
    assert str(err.value) == "input X has a non-finite entry at index (1, 3, 2) (inf); inputs must be finite"
    with pytest.raises(ValueError, match=r"^layer input has a non-finite entry at index \(0, 0\) \(nan\)"):
        S.check_input(torch.full((6, 4), math.nan), 6, 4, name="layer input")
    S.check_input(x, 6, 4, finite=False)                      # the caller took the check off
    S.check_input(torch.zeros(6, 4, dtype=torch.int64), 6, 4)  # integers cannot be non-finite


def test_stack_checks_its_inputs_by_default_and_unchecked_inputs_restores():
    st = _tiny()
    x = torch.zeros(6, 4, dtype=torch.float64)
    x[2, 1] = math.nan
    assert st.check_inputs is True
    for run in (st, st.trajectory):
        with pytest.raises(ValueError, match=r"input X has a non-finite entry at index \(2, 1\)"):
            run(x)
    with S.unchecked_inputs(st):
        assert st.check_inputs is False
        assert torch.isnan(st(x)).any()                        # NaN passes through, unrefused
    assert st.check_inputs is True


def test_check_finite_names_the_parameter():
    st = _tiny()
    with torch.no_grad():
        st.layers[1].mlp.W2[0, 0] = math.nan
    with pytest.raises(ValueError, match=r"^parameter layers\.1\.mlp\.W2 has non-finite entries"):
        st.check_finite()


def test_reference_trajectory_refusals_name_their_cause():
    with pytest.raises(ValueError, match=r"xbar has last dimension 3, expected d=4"):
        _tiny().reference_trajectory(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="reference_trajectory needs gate=0"):
        _tiny(P=2, gate=0.1).reference_trajectory(torch.zeros(4, dtype=torch.float64))


def test_weights_at_needs_the_smooth_path():
    with pytest.raises(ValueError, match="weights_at needs weight_path='smooth'"):
        _tiny().weights_at(0.5)


def test_resolve_device():
    assert S.resolve_device(None) == torch.device("cpu")
    assert S.resolve_device("cpu") == torch.device("cpu")
    assert S.resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda' was requested but CUDA is not available"):
            S.resolve_device("cuda")


# ---- the attention biases b_Q, b_O --------------------------------------------------------------------
def _attention_by_hand(attn, z):
    """softmax((z W_Q + b_Q)(z W_K)ᵀ/√d_k + bias) z W_V W_O + b_O, per head, written from the definition."""
    heads, d, dk = attn.W_Q.shape
    out = torch.zeros_like(z)
    for h in range(heads):
        q = z @ attn.W_Q[h] + (attn.b_Q[h, 0] if attn.b_Q is not None else 0.0)
        k = z @ attn.W_K[h]
        w = torch.softmax(q @ k.T / math.sqrt(dk) + attn.bias[h], dim=-1)
        out = out + w @ z @ attn.W_V[h] @ attn.W_O[h]
    return out + (attn.b_O if attn.b_O is not None else 0.0)


def test_attention_biases_enter_as_derived():
    """b_Q shifts every query (changing the weights); b_O adds to every token's output, exactly b_O."""
    st = _tiny(attn_bias=True, seed=3)
    attn = st.layers[0].attn
    assert attn.b_Q.shape == (2, 1, 2) and attn.b_O.shape == (4,)
    z = torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = attn(z)
        assert torch.allclose(full, _attention_by_hand(attn, z), rtol=0, atol=64 * 10 * U)
        b_O = attn.b_O.clone()
        attn.b_O.zero_()
        assert torch.allclose(full - attn(z), b_O.expand(6, 4), rtol=0, atol=64 * 10 * U)   # exactly b_O
        w_with = attn.weights(z)
        attn.b_Q.zero_()
        moved = float((w_with - attn.weights(z)).abs().max())
    assert moved > 1e-3      # b_Q ~ 0.1·N(0, 1) moves the softmax at O(0.1 · ‖z W_K‖/√d_k)


def test_b_q_is_invisible_only_through_the_keys():
    """A per-query constant added to the *scores* cancels in softmax; b_Q is added to the queries and is not
    such a constant (it multiplies the keys): with equal key rows it cancels, with distinct ones it does not."""
    st = _tiny(attn_bias=True, seed=4)
    attn = st.layers[0].attn
    z_same = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).expand(6, 4)
    with torch.no_grad():
        w_same = attn.weights(z_same)
        attn.b_Q.zero_()
        assert torch.allclose(w_same, attn.weights(z_same), rtol=0, atol=64 * U)


def test_token_map_carries_b_o_by_h():
    """On 1x̄ᵀ attention returns LN₁(x̄)W_VO + b_O on each token, so the layer's token map moves by h·b_O at
    the attention step, then through the MLP: token_map equals the full layer on 1x̄ᵀ (b_O included)."""
    st = _tiny(attn_bias=True, seed=5)
    xbar = torch.randn(4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    layer = st.layers[0]
    with torch.no_grad():
        full = layer(xbar.expand(6, 4).clone())
        assert torch.allclose(layer.token_map(xbar).expand(6, 4), full, rtol=0, atol=64 * 10 * U)
        ubar = (1 - layer.h * layer.decay) * xbar + layer.h * (layer.ln1(xbar) @ layer.attn.value_output()
                                                               + layer.attn.b_O)
        by_hand = ubar + layer.h * layer.mlp(layer.ln2(ubar))
        assert torch.allclose(layer.token_map(xbar), by_hand, rtol=0, atol=64 * 10 * U)
        assert float(layer.attn.b_O.abs().max()) > 1e-2      # b_O is drawn (0.1·N(0, 1)), not zero


def test_without_attn_bias_there_are_no_biases():
    attn = _tiny().layers[0].attn
    assert attn.b_Q is None and attn.b_O is None
    assert "b_Q" not in dict(attn.named_parameters()) and "b_O" not in dict(attn.named_parameters())


# ---- defaults (numerics/stacks/stack.py's docstring, docs/theory.md §0) ----------------------------------------
def test_config_defaults_are_the_documented_ones():
    cfg = S.StackConfig(T=6, d=4, layers=3, heads=2, kernel="causal")
    assert (cfg.P, cfg.gate, cfg.seed, cfg.mlp_ratio, cfg.weight_path, cfg.slow_kernel, cfg.block_size) == \
        (None, 0.0, 0, 4, None, "causal", None)
    assert (cfg.value_scale, cfg.weight_scale, cfg.decay, cfg.ln_gain, cfg.arch) == (0.0, 1.0, 0.0, 1.0, "preln")
    assert (cfg.step, cfg.activation, cfg.ln_eps, cfg.attn_bias) == (None, "gelu", 1e-5, False)
    assert cfg.h == 1 / 3 and cfg.d_k == 4 // 2 and S.LN_EPS == 1e-5 and S.PATH_MODES == 4
    assert S.StackConfig(T=6, d=4, layers=3, heads=2, kernel="causal", step=1.0).h == 1.0


def test_built_stack_has_the_default_pieces():
    st = _tiny(P=2)
    layer = st.layers[0]
    assert layer.ln1.eps == 1e-5 and layer.ln2.eps == 1e-5
    assert layer.mlp.activation is S.gelu and layer.mlp.W1.shape == (4, 16)
    assert layer.gate.dtype == torch.float64 and float(layer.gate.detach()) == 0.0
    assert S.MLP(4, 8).activation is S.gelu                   # the MLP's own default activation
    assert S.LayerNorm(4).eps == 1e-5


def test_gate_is_held_in_float64_before_the_cast():
    """The gate is created in float64, so in a float64 stack g = 0.1 is the double 0.1 (a float32 gate would hold
    0.10000000149…, 1.5e-9 away), and in a float32 stack the cast to the stack's dtype is its only rounding."""
    st = _tiny(P=2, gate=0.1)
    assert all(float(layer.gate.detach()) == 0.1 for layer in st.layers)
    st32 = _tiny(P=2, gate=0.1, dtype=torch.float32)
    assert all(layer.gate.dtype == torch.float32 and float(layer.gate.detach()) == float(torch.tensor(0.1,
               dtype=torch.float32)) for layer in st32.layers)


def test_ln_eps_and_activation_reach_the_forward_pass():
    """ln_eps enters LN as √(var + eps): a constant-row input maps to β exactly for any eps, a unit-variance row
    to γ·(z − mean)/√(1 + eps) + β; gelu_new is GPT-2's tanh GELU (0.5x(1 + tanh(√(2/π)(x + 0.044715x³))))."""
    z = torch.tensor([[-1.0, 1.0, -1.0, 1.0]], dtype=torch.float64)       # mean 0, biased variance 1
    ln = S.LayerNorm(4, eps=0.21).double()
    assert torch.allclose(ln(z), z / math.sqrt(1.21), rtol=0, atol=8 * U)
    st = _tiny(ln_eps=0.21, activation="gelu_new")
    assert st.layers[1].ln2.eps == 0.21 and st.layers[0].mlp.activation is S.gelu_new
    x = torch.linspace(-3, 3, 13, dtype=torch.float64)
    tanh_form = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert torch.allclose(S.gelu_new(x), tanh_form, rtol=0, atol=16 * U)
    erf_form = 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    assert torch.allclose(S.gelu(x), erf_form, rtol=0, atol=16 * U)
    assert float((S.gelu_new(x) - S.gelu(x)).abs().max()) > 1e-4       # the two forms differ (≈ 2e-4 at |x| ≈ 2)


def test_default_draws_follow_the_documented_distributions():
    """At d = 64, heads 4, ratio 4, weight_scale 1: W_Q, W_K, W_V ~ N(0, 1/d), W_O ~ N(0, 1/(d_k·heads)),
    W1 ~ N(0, 1/d), W2 ~ N(0, 1/(4d)), biases (b1, b2, β, b_Q, b_O) ~ N(0, 0.01), γ ~ ln_gain + N(0, 0.01).
    The sample std of n draws is within 6/√(2n) relative of σ (its standard error is σ/√(2n)), the mean within
    6σ/√n of 0 (n ≥ 64: b_Q has heads·d_k = 64 entries)."""
    st = _tiny(T=8, d=64, layers=2, heads=4, attn_bias=True, ln_gain=0.7, weight_scale=1.3, seed=11)
    layer = st.layers[1]
    expected = {"attn.W_Q": 1.3 / 8, "attn.W_K": 1.3 / 8, "attn.W_V": 1.3 / 8, "attn.W_O": 1.3 / 8,
                "mlp.W1": 1.3 / 8, "mlp.W2": 1.3 / 16, "mlp.b1": 0.1, "mlp.b2": 0.1, "ln1.beta": 0.1,
                "attn.b_Q": 0.1, "attn.b_O": 0.1}
    params = dict(layer.named_parameters())
    for name, sigma in expected.items():
        p = params[name].detach().flatten()
        assert abs(float(p.std()) / sigma - 1) < 6 / math.sqrt(2 * p.numel()), name
        assert abs(float(p.mean())) < 6 * sigma / math.sqrt(p.numel()), name
    gamma = params["ln2.gamma"].detach()
    assert abs(float(gamma.mean()) - 0.7) < 6 * 0.1 / 8 and abs(float(gamma.std()) / 0.1 - 1) < 6 / math.sqrt(128)


def test_value_scale_puts_c_times_identity_in_w_vo():
    """W_VO = Σ_h (W_V)_h (W_O)_h ≈ c·I: with weight_scale → small the noise vanishes and W_VO → c·I."""
    st = _tiny(T=6, d=8, layers=1, heads=2, value_scale=2.5, weight_scale=1e-6)
    W_VO = st.layers[0].attn.value_output().detach()
    assert torch.allclose(W_VO, 2.5 * torch.eye(8, dtype=torch.float64), rtol=0, atol=1e-4)


def test_smooth_path_layers_are_the_path_at_lh():
    """θ_ℓ = θ(ℓh) with θ(t) = Σ_k cos(πkt) Θ_k/(1 + k)², k < 4: the layers equal weights_at(ℓ/L), and θ(1) − θ(0)
    = −2(Θ_1/4 + Θ_3/16) differs from 0 (the path moves)."""
    st = _tiny(weight_path="smooth", seed=7)
    for ell, layer in enumerate(st.layers):
        at = st.weights_at(ell * st.h)
        for name, p in layer.named_parameters():
            if name in at:
                assert torch.allclose(p.detach(), at[name], rtol=0, atol=16 * U), (ell, name)
    assert float((st.weights_at(1.0)["attn.W_Q"] - st.weights_at(0.0)["attn.W_Q"]).abs().max()) > 1e-3


def test_frozen_kernel_refuses_heads_that_disagree():
    with pytest.raises(ValueError, match=r"kernel='alibi' gives each head its own frozen kernel"):
        _tiny(layers=1, kernel="alibi").frozen_kernel()


# ---- devices: the spec's device reaches every tensor; host draws stay on the host -------------------------
def test_the_specs_device_reaches_every_parameter_and_buffer(monkeypatch):
    """A stack is drawn on the CPU and then moved to the spec's device.  The meta device (no data, present in
    every torch build) stands in for a second device on a CPU-only machine; its values cannot be read, so the
    finiteness check of the draw is set aside (it reads every value) and only placement is asserted."""
    monkeypatch.setattr(S.Stack, "check_finite", lambda self: None)
    st = _tiny(P=2, device="meta")
    placed = {t.device.type for t in [*st.parameters(), *st.buffers()]}
    assert placed == {"meta"}
    monkeypatch.undo()
    assert {t.device.type for t in [*_tiny(P=2).parameters(), *_tiny(P=2).buffers()]} == {"cpu"}   # control


def test_weights_at_evaluates_on_the_paths_device_whatever_the_default():
    """θ(t) = Σ_k cos(πkt) Θ_k is formed on the device the path's coefficients live on, not on torch's default
    device: under a meta default device the weights are still the CPU values θ(t) of the path."""
    st = _tiny(weight_path="smooth")
    expected = st.weights_at(0.3)
    with torch.device("meta"):
        moved = st.weights_at(0.3)
    assert {v.device.type for v in moved.values()} == {"cpu"}
    for name, value in expected.items():
        assert torch.equal(moved[name], value)   # the same operations on the same host values


def test_random_xbar_is_drawn_on_the_host_whatever_the_default_device():
    """The seeded reference token is a host draw (the same x̄ for a seed on any machine), even when torch's
    default device is another one (meta here)."""
    expected = S.random_xbar(4, seed=3)
    with torch.device("meta"):
        x = S.random_xbar(4, seed=3)
    assert x.device.type == "cpu" and x.dtype == torch.float64
    assert torch.equal(x, expected)
