"""The stability margin μ of Claims 5.1 and 5.3 on given weights (numerics/families/trained_margin.py,
proofs_check/claims/paper_setting.py), each fact against an independent route and a control.

* The mean direction: an undamped pre-LN layer maps a shift along 1_d of every token to itself (LN subtracts
  it), at the reference and at any visited state; residual decay α scales it by exactly 1 − hα (the control:
  the gain moves by the predicted −hα).
* μ ≤ μ⁺: on hierarchical stacks the certificate's slow-mode norms ‖ΠJ_ℓΠ⁺‖ (``slow_mode_maps``, its own
  route) are at least the homogeneous modes' ‖G_ℓ‖ for every kernel, and ΠJ_ℓΠ⁺(1_n ⊗ v) = 1_n ⊗ G_ℓv; on the
  suite's contractive stacks μ⁺ ≥ μ > 0 (control: the measurement reads positive where a gate is certified).
* On the committed trained byte GPT-2 (h = 1): ‖G_ℓ‖ by autograd against Richardson-bounded central
  differences, μ⁺ < 0; the control gives the same weights decay α and sees every gain fall to 1 − α.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, strategies as st

from numerics.families import stability as ns
from numerics.families import trained_margin as tm
from numerics.families.slow_mode_maps import default_reference
from numerics.stacks.spec import StackSpec
from proofs_check.claims import paper_setting as ps

F64 = torch.float64
EPS = torch.finfo(F64).eps


def _stack(kernel: str, seed: int, **knobs):
    return ns.at_zero_gate(StackSpec(T=8, d=8, layers=3, heads=2, kernel=kernel, P=4, seed=seed, knobs=knobs).build())


@given(seed=st.integers(0, 10_000), decay=st.sampled_from([0.0, 0.3, 0.7]),
       kernel=st.sampled_from(["causal", "full", "block"]), ln_gain=st.floats(0.2, 3.0))
@example(seed=0, decay=0.0, kernel="causal", ln_gain=1.0)
def test_mean_direction_keeps_gain_one_minus_h_alpha(seed, decay, kernel, ln_gain):
    stack = _stack(kernel, seed, step=1.0, decay=decay, ln_gain=ln_gain)
    xbar = default_reference(stack)
    m = tm.margin_on(stack, xbar)
    X = torch.randn(8, 8, generator=torch.Generator().manual_seed(seed + 1), dtype=F64)   # an off-reference state
    want = 1.0 - stack.h * decay
    tol = ps.mean_gain_tol(8)      # LN's mean subtraction cancels the shift to a few operations' rounding
    gains = m.mean_gains + tm.visited_mean_gains(stack, X)
    assert max(abs(g - want) for g in gains) <= tol, (seed, gains, want)
    if decay == 0.0:               # ‖G_ℓ‖ ≥ |gain| = 1, so μ⁺ ≤ 0 (to the norm's rounding) for any weights
        assert m.mu_upper <= 10 * 8 * EPS and min(m.norms) >= 1 - 10 * 8 * EPS
    else:                          # control: the gain falls by exactly hα (0.3 or 0.7 at h = 1)
        assert max(abs(g - 1.0) for g in gains) >= stack.h * decay - tol


@pytest.mark.parametrize("kernel", ["causal", "full", "block"])
def test_margin_bound_is_above_the_certificates_margin(kernel):
    stack = _stack(kernel, 4, step=1.0)
    xbar = default_reference(stack)
    G, _ = ns.slow_mode_maps(stack, xbar)                       # (L, n·d, n·d), block-mean coordinates
    Gh = tm.homogeneous_maps(stack, xbar)                       # (L, d, d) by jacrev of the token map
    n, d = G.shape[-1] // 8, 8
    v = torch.randn(d, generator=torch.Generator().manual_seed(5), dtype=F64)
    for ell in range(G.shape[0]):
        # ΠJΠ⁺(1_n ⊗ v) = 1_n ⊗ G_ℓ v: two routes through one layer, float64 rounding × ‖J‖ (≤ 1e-12 at d = 8)
        image = (G[ell] @ v.repeat(n)).reshape(n, d)
        assert float((image - Gh[ell] @ v).abs().max()) <= 1e-12 * float(G[ell].abs().max()) * float(v.abs().max()) * d
    slow = torch.linalg.matrix_norm(G, ord=2)
    homogeneous = torch.linalg.matrix_norm(Gh, ord=2)
    assert bool((slow >= homogeneous * (1 - 10 * G.shape[-1] * EPS)).all()), (slow, homogeneous)
    mu = float(-torch.log(slow).sum() / (len(slow) * stack.h))
    assert mu <= tm.margin_on(stack, xbar).mu_upper + 1e-12 <= 1e-12


def test_contractive_stacks_read_a_positive_margin():
    """Control: on the suite's contractive stacks (decay α = 2, LN gain 0.2, weight scale 0.5) the certificate
    finds μ > 0, and μ⁺ is above it, so a positive margin is not hidden by the bound."""
    stack = _stack("causal", 2, decay=2.0, ln_gain=0.2, weight_scale=0.5)
    xbar = default_reference(stack)
    e = ns.gate_certificate(stack, xbar).enclosure
    m = tm.margin_on(stack, xbar)
    assert e.mu_lo > 0 and m.mu_upper >= e.mu_hi - 1e-12
    assert max(abs(g - (1 - stack.h * 2.0)) for g in m.mean_gains) <= ps.mean_gain_tol(8)


@pytest.fixture(scope="module")
def trained():
    h = ps.load_gpt2()
    return h.stack, h.X0


def test_trained_gpt2_margin_is_negative_and_its_routes_agree(trained):
    stack, X0 = trained
    r = ps.margin_record(stack, X0)
    assert ps.margin_routes_agree(r), (r["norm_route_ratio"], r["mean_gain_ratio"])
    assert r["h"] == 1.0 and r["decay"] == 0.0 and r["mu_upper"] < -0.1, r["mu_upper"]   # measured ≈ −1.87


def test_trained_gpt2_with_decay_loses_the_unit_gain(trained):
    """Control: the same trained weights with residual decay α = 0.25 (h = 1): every mean-direction gain falls
    to 0.75, at the reference, by central differences and along the text, and the routes still agree."""
    stack, X0 = trained
    for layer in stack.layers:
        layer.decay = 0.25
    try:
        r = ps.margin_record(stack, X0)
    finally:
        for layer in stack.layers:
            layer.decay = 0.0
    assert r["predicted_mean_gain"] == 0.75 and ps.margin_routes_agree(r)
    assert max(abs(g - 0.75) for g in r["mean_gains"] + r["visited_mean_gains"]) <= ps.mean_gain_tol(r["d"])
