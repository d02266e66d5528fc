"""Reach of the reference claims off 1x̄ᵀ (numerics/text/reach.py, proofs_check/runners/reach.py) and the depth
roughness of weights (proofs_check/experiments/depth_smoothness.py), each beside its negative control."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from numerics.linearised import matrix_free as mf
from numerics.stacks.spec import StackSpec
from numerics.text import reach as R
from proofs_check.experiments import depth_smoothness as DS
from proofs_check.runners import reach as PR
EPS = float(torch.finfo(torch.float64).eps)
T, D, L, H = 4, 4, 2, 2


@pytest.fixture(scope="module")
def setup():
    st = StackSpec(T=T, d=D, layers=L, heads=H, kernel="causal", seed=3, knobs={"value_scale": 1.0}).build()
    g = torch.Generator().manual_seed(11)
    xbar = torch.randn(D, generator=g, dtype=torch.float64)
    direction = torch.randn(T, D, generator=g, dtype=torch.float64)
    V = mf.probes(2, T, D, seed=5)
    gamma = mf.rounding_tolerance(T, D, L, torch.float64)
    return st, xbar, direction, V, gamma


def test_at_spread_has_the_spread_and_the_mean(setup):
    _, xbar, direction, _, _ = setup
    for s in (0.0, 1e-6, 0.3, 0.9):
        X = R.at_spread(xbar, direction, s)
        # one Frobenius norm and one division in float64: a few ulps of the O(1) ratio
        assert abs(float(R.token_spread(X)) - s) <= 16 * EPS
        assert torch.allclose(R.token_mean(X), xbar, rtol=0, atol=16 * EPS * float(xbar.norm()) * T)
    X = xbar + direction                         # a "real" input: its own spread reproduces it
    back = R.at_spread(R.token_mean(X), X - R.token_mean(X), float(R.token_spread(X)))
    assert torch.allclose(back, X, rtol=0, atol=64 * EPS * float(X.norm()))
    with pytest.raises(ValueError, match="spread"):
        R.at_spread(xbar, direction, 1.0)
    with pytest.raises(ValueError, match="homogeneous"):
        R.centred_direction(xbar.expand(T, D).clone())


def test_tail_stack_continues_the_trajectory(setup):
    st, xbar, direction, _, _ = setup
    X = R.at_spread(xbar, direction, 0.5)
    with torch.no_grad():
        traj = st.trajectory(X)
        for ell in range(L):
            # the same layers in the same order: bit-identical
            assert torch.equal(R.tail_stack(st, ell)(traj[ell]), traj[-1])
    assert len(st.layers) == L                   # the original stack keeps its layers


def test_factorised_form_is_exact_at_the_reference(setup):
    st, xbar, direction, V, gamma = setup
    # the identity of 2.1/2.3 at s = 0: both routes' dot-product rounding γ
    assert R.factorised_error(st, R.at_spread(xbar, direction, 0.0), V) <= gamma


def test_factorised_error_is_first_order_with_the_predicted_coefficient(setup):
    st, xbar, direction, V, gamma = setup
    ex = R.factorised_expansion(st, xbar, direction, V)
    action = mf.JacobianAction(st, xbar)
    check = PR.exponent_check("fact", ex, lambda s: R.factorised_error(st, R.at_spread(xbar, direction, s), V,
                                                                         action), gamma)
    # tolerances from the expansion: κ̄ t(s_max) + s_max² + rounding (exponent), κ̄ t(s_min) + γ/r (coefficient)
    assert check["ok"], check
    assert abs(check["fitted_slope"] - 1) <= check["slope_tolerance"]
    # a plausible mistake, the exponent taken as 2 (a second-order claim), fails by ≈ 1 ≫ tolerance
    wrong = PR.exponent_check("fact", replace(ex, order=2), lambda s: R.factorised_error(
        st, R.at_spread(xbar, direction, s), V, action), gamma)
    assert not wrong["ok"] and abs(wrong["fitted_slope"] - 2) > 0.9


def test_wrong_reference_fails_at_its_predicted_floor(setup):
    st, xbar, direction, V, gamma = setup
    ex = R.factorised_expansion(st, xbar, direction, V)
    ctl = PR.wrong_reference_control(st, xbar, direction, V, ex, gamma, seed=1)
    assert ctl["status"] == "fails-as-predicted", ctl
    # the floor is the two factorised forms' difference: every measured value within the triangle bound of it
    assert all(abs(v - ctl["predicted_floor"]) <= ctl["allowed"] for v in ctl["values"])
    # the floor is resolved (above the band) and the exponent is 0, not 1
    assert abs(ctl["fitted_slope"]) < 0.5 and ctl["predicted_floor"] > ctl["allowed"]


def test_qk_share_is_second_order_on_the_output_first_on_the_jacobian(setup):
    st, xbar, direction, V, gamma = setup
    assert R.qk_share(st, R.at_spread(xbar, direction, 0.0)) <= gamma     # 2.4 at the reference
    for Vq, order in ((None, 2), (V[0], 1)):
        ex = R.qk_expansion(st, xbar, direction, V=Vq)
        assert ex.order == order
        check = PR.exponent_check("qk", ex, lambda s: R.qk_share(st, R.at_spread(xbar, direction, s), 0, Vq), gamma)
        assert check["ok"], check
    # control: the value path's own tangent in the numerator does not vanish at the reference (exponent 0)
    X0 = R.at_spread(xbar, direction, 0.0)
    vo = R.parameter_derivative(st, X0, R.relative_tangents(st, R.VALUE, 1))
    assert float(vo.norm()) > 1e6 * gamma * float(X0.norm())


def test_reach_on_stack_records_every_piece(setup):
    st, xbar, direction, _, _ = setup
    X = torch.stack([R.at_spread(xbar, direction, 0.4), R.at_spread(xbar, direction.flip(0), 0.6)])
    out = PR.reach_on_stack("random", st, X, seed=0)
    assert all(c["ok"] for c in out["checks"]) and out["control"]["status"] == "fails-as-predicted"
    assert abs(out["text_spread"] - 0.4) <= 16 * EPS
    assert [r["layer"] for r in out["layers"]] == list(range(L + 1))
    assert any(row["s"] == out["text_spread"] for row in out["curve"])
    assert "J·V error" in PR.statement([out])


def test_depth_roughness_separates_smooth_paths_from_iid_layers():
    depths = (4, 8, 16)
    cal = DS.calibration(depths, d=8)
    for g in ("W_QK", "W_VO", "W1", "W2"):
        # smooth path: θ_ℓ+1 − θ_ℓ = h θ' + O(h²), so the slope is −1 up to the O(h) term (h ≤ 1/4 here)
        assert abs(cal["smooth"]["slope"][g] + 1) <= 0.25
        # i.i.d. zero-mean layers: r² = ‖a − b‖²/‖a‖² concentrates at 2 (relative spread ~ √(2/N) per pair,
        # N ≥ 64 entries, averaged over ≥ 3 pairs): within 35 %; slope 0 within the same band over a factor 4 in L
        for L_ in depths:
            assert abs(cal["iid"]["by_depth"][str(L_)][g] / DS.IID_RATIO - 1) <= 0.35
        assert abs(cal["iid"]["slope"][g]) <= 0.35 / math.log(4)


def test_invisible_weight_direction_moves_the_persistent_component_at_second_order(setup):
    from numerics.families import weight_visibility as WV
    from numerics.families.visibility import persistent_vector

    st, xbar, direction, _, gamma = setup
    X0 = xbar.expand(T, D).clone()
    flat = WV.FlatWeights(st)
    J = WV.persistent_weight_jacobian(flat, X0, persistent_vector(st))
    inv, vis, sigma1 = WV.directions(flat, J, seed=2)
    # in the null space to the projection's rounding (two Gram–Schmidt passes: ≤ eps σ₁ per pass, d rows)
    assert float((J @ inv).norm()) <= 4 * D * EPS * sigma1
    assert float(inv[flat.mask() == 0].abs().max()) == 0.0       # no W_Q / W_K component
    out = PR.weight_checks(st, xbar, direction, gamma, seed=0)
    inv_row, vis_row = out["checks"]
    assert inv_row["ok"] and inv_row["order"] == 2, inv_row
    assert vis_row["ok"] and vis_row["order"] == 1, vis_row
    # the visible coefficient is σ₁/‖x̄_L‖ from the SVD, a route independent of the expansion
    assert abs(vis_row["predicted_coefficient"] / out["sigma1_rel"] - 1) <= vis_row["coefficient_tolerance"]
    assert out["share_check"]["ok"] and out["share_check"]["order"] == 1
    # control: the visible direction moves x̄_L at first order, so its exponent-2 fit fails by ≈ 1
    assert abs(vis_row["fitted_slope"] - 2) > 0.9


def test_coarse_graining_identity_departs_at_first_order_and_causal_misses_at_the_reference(setup):
    st, xbar, direction, _, _ = setup
    X = torch.stack([R.at_spread(xbar, direction, 0.5)])
    out = PR.coarse_reach(st, X, P=2, seed=0, grid=(0.1, 0.5))
    for kernel in ("full", "block"):
        # ΠJ(I − Q) = 0 at 1x̄ᵀ for these kernels; off it order 1, exponent and c₁ within the expansion's tolerances
        check = out["kernels"][kernel]["check"]
        assert check["ok"] and check["order"] == 1, check
    # control: the causal kernel breaks ΠA(I − Q) = 0, so the residual is nonzero at s = 0, by the factorised amount
    ctl = out["kernels"]["causal"]["control"]
    assert ctl["status"] == "fails-as-predicted", ctl


def _toy_expansion():
    """The six-pass route (``factorised_expansion``) on the stack, direction and probe scale_reach draws for "toy"."""
    from numerics.stacks.presets import preset

    spec = preset("toy")
    g = torch.Generator().manual_seed(1)
    xbar = torch.randn(spec.d, generator=g, dtype=torch.float64)
    direction = torch.randn(spec.T, spec.d, generator=g, dtype=torch.float64)
    return R.factorised_expansion(spec.build(), xbar, direction, mf.probes(1, spec.T, spec.d, seed=2))


def test_scale_route_on_the_toy_preset_agrees_with_the_expansion():
    from proofs_check.runners.reach_scale import scale_reach

    out = scale_reach("toy", probes=1, sweep=(0.5,), progress=False)
    assert out["identity_at_reference"] <= out["identity_tolerance"]          # 2.1/2.3 at s = 0
    ex = _toy_expansion()
    # one triple-nested pass (factorised_taylor) against six separate passes: the same derivatives
    assert abs(out["predicted_coefficient"] / ex.coefficient - 1) <= 1e-12
    assert abs(out["expansion"]["kappa_bar"] / ex.kappa_bar - 1) <= 1e-12
    w, e = out["window"], [r["error"] for r in out["curve"][:2]]
    # the slope's first-order departure plus the rounding floor's effect 2γ/(e(s_min) ln(s_max/s_min))
    floor = out["rounding_tolerance"] / e[0]
    assert abs(out["fitted_slope"] - 1) <= ex.slope_tolerance(w[-1]) + 2 * floor / math.log(w[-1] / w[0])
    assert abs(out["measured_coefficient"] / ex.coefficient - 1) <= ex.kappa_bar * ex.t(w[0]) + floor
    assert out["check"]["ok"]


def test_scale_route_refuses_a_spread_off_by_a_factor(monkeypatch):
    """Inputs built at twice the spread the prediction is for: the coefficient is off by 2, far outside κ̄t."""
    from proofs_check.runners import reach_scale

    at_spread = R.at_spread
    monkeypatch.setattr(R, "at_spread", lambda xbar, direction, s: at_spread(xbar, direction, 2 * s))
    out = reach_scale.scale_reach("toy", probes=1, sweep=(), progress=False)
    assert not out["check"]["ok"]
    assert abs(out["measured_coefficient"] / out["predicted_coefficient"] - 2) <= 0.05


def test_per_token_gate_visibility_off_the_reference():
    st = StackSpec(T=8, d=4, layers=2, heads=2, kernel="causal", seed=3).build()
    g = torch.Generator().manual_seed(12)
    xbar = torch.randn(4, generator=g, dtype=torch.float64)
    X = torch.stack([R.at_spread(xbar, torch.randn(8, 4, generator=g, dtype=torch.float64), 0.5)])
    out = PR.loss_gate_reach(st, X, P=4, seed=0, grid=(0.1,))
    # the factorised prediction of ∂ℓ_t/∂g departs at order 1 with the predicted coefficient
    assert out["check"]["ok"] and out["check"]["order"] == 1, out["check"]
    # block 0 is blind to the gate at every input (causal kernel, one-block shift), later tokens are not
    assert out["block0_exact"] and all(r["later_min"] > 0 for r in out["curve"])
