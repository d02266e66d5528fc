"""Claims 2.1–2.4: property tests beside their negative controls."""

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from numerics import factorisation as nf
from numerics import random_stack
from numerics.stack import random_xbar
from proofs_check.checks import factorisation as chk


@st.composite
def stacks(draw):
    kernel = draw(st.sampled_from(["causal", "full", "block", "alibi"]))
    T = draw(st.integers(2, 7)) if kernel != "block" else 2 * draw(st.integers(1, 3))
    heads = 1 if kernel == "alibi" else draw(st.sampled_from([1, 2]))
    d = heads * draw(st.integers(2, 4))
    stack = random_stack(T, d, draw(st.integers(1, 4)), heads, kernel, seed=draw(st.integers(0, 10**6)),
                         block_size=2 if kernel == "block" else None,
                         value_scale=draw(st.sampled_from([0.0, 1.0, 5.0])),
                         weight_scale=draw(st.sampled_from([0.5, 1.0, 2.0])),
                         ln_gain=draw(st.sampled_from([0.5, 1.0, 2.0])),
                         decay=draw(st.sampled_from([0.0, 0.5])))
    return stack, random_xbar(d, draw(st.integers(0, 10**6)))


@given(stacks())
def test_blocks_match_autograd(case):
    stack, xbar = case
    off, blk, tol = chk.factorisation_error(stack, xbar)
    # tol = 64 eps cond(S) ‖J‖₂: one float64 similarity transform by S (see chk.factorisation_error)
    assert off <= tol and blk <= tol, (off, blk, tol)


def test_inhomogeneous_reference_breaks_blocks():
    """Negative control: off the reference the off-block mass is linear in δ (slope 1)."""
    deltas = np.logspace(-5, -2, 4)
    masses = chk.control_masses(deltas, "inhomogeneous")
    assert abs(np.polyfit(np.log(deltas), np.log(masses), 1)[0] - 1) <= 0.1
    assert masses[-1] > 1e-4  # far above the float64 floor ~1e-14 at the reference


@pytest.mark.parametrize("kind", chk.CONTROL_KINDS)
def test_violations_slope_one(kind):
    deltas = np.logspace(-5, -2, 4)
    masses = chk.control_masses(deltas, kind)
    slope = np.polyfit(np.log(deltas), np.log(masses), 1)[0]
    assert abs(slope - 1) <= 0.1, slope  # Claim 2.2: residual linear in the violation
    assert chk.control_masses([0.0], kind)[0] < 1e-12  # unbroken condition: block diagonal


def test_polynomial_form():
    err, tol = chk.polynomial_form_error(48, d=8, L=4)
    assert err <= tol, (err, tol)  # tol = 64 (L+1) eps Σ‖A‖^m‖K_m‖


def test_polynomial_form_dense_equals_autograd():
    stack = random_stack(5, 4, 3, 2, "causal", seed=3)
    xbar = random_xbar(4, 1)
    J = nf.stack_jacobian(stack, xbar.expand(5, 4).clone()).detach()
    Jp = nf.polynomial_jacobian(stack.frozen_kernel(), nf.polynomial_coefficients(stack, xbar).detach())
    assert (J - Jp).abs().max() <= 64 * chk.EPS64 * J.abs().max() * 4


def test_eigenbasis_fails_float64():
    """Documented counterexample: the float64 eigen-coordinates are exact-ish at T = 4, useless at T = 32."""
    rows = chk.eigen_coordinate_errors([4, 32])
    assert rows[0]["eigen_error"] < 1e-12
    assert rows[1]["eigen_error"] > 1e-2
    assert rows[1]["cond1_S_exact"] > 1e15  # beyond 1/eps


def test_qk_invisible():
    assert chk.qk_derivative_norm(0.0) <= 1e-13  # rounding of softmax row sums only


def test_qk_visible_off_reference():
    deltas = np.logspace(-4, -1, 4)
    vals = [chk.qk_derivative_norm(float(dl)) for dl in deltas]
    assert abs(np.polyfit(np.log(deltas), np.log(vals), 1)[0] - 1) <= 0.1


def test_mode_blocks_shapes_and_errors():
    stack = random_stack(6, 4, 2, 2, "causal", seed=0)
    lam, G = nf.mode_blocks(stack, random_xbar(4, 0))
    assert lam.shape == (6,) and G.shape == (6, 4, 4)
    assert torch.allclose(lam, 1 / torch.arange(1, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match="xbar"):
        nf.mode_blocks(stack, torch.zeros(5, dtype=torch.float64))
    with pytest.raises(ValueError):
        nf.mode_blocks(random_stack(4, 4, 1, 2, "alibi", seed=0), random_xbar(4, 0))


# ---- ledger power: the checks fail on perturbed generated code and predict their controls' size
import numerics.generated.factorisation as gen_f  # noqa: E402
from proofs_check.ledger import CheckContext, load_checks, run_claim  # noqa: E402
from proofs_check.on_stack import evaluate  # noqa: E402

DECLARED = [("2.1", "G_layer"), ("2.1", "B_layer"), ("2.1", "C_layer"), ("2.1", "ln_jacobian"),
            ("2.3", "G_layer_coefficient_0"), ("2.3", "G_layer_coefficient_1")]


@pytest.mark.parametrize("claim_id,fn", DECLARED)
def test_declared_generated_functions_move(claim_id, fn, monkeypatch):
    """Each generated function a claim declares moves its numbers (output × (1 + 1e-3)) and fails it."""
    load_checks()
    ctx = CheckContext()
    base = run_claim(claim_id, ctx)
    orig = getattr(gen_f, fn)
    monkeypatch.setattr(gen_f, fn, lambda *a: orig(*a) * (1 + 1e-3))
    moved = run_claim(claim_id, ctx)
    assert moved["numeric"]["max_error"] != base["numeric"]["max_error"]
    assert moved["status"] != "verified"  # 1e-3 relative is ≫ 64 eps cond(S) ‖J‖


def test_ledger_2_1_catches_perturbed_generated(monkeypatch):
    """The hand edit of GELU′ inside the generated C_layer (the constant term 1/2 → 0.49): 2.1 must fail."""
    import inspect
    import math
    import textwrap

    src = textwrap.dedent(inspect.getsource(gen_f.C_layer))
    edited = src.replace("(1/2)*torch.erf((1/2)*math.sqrt(2)*x8) + 1/2)", "(1/2)*torch.erf((1/2)*math.sqrt(2)*x8) + 0.49)")
    assert edited != src, "the GELU′ constant was not found in C_layer"
    namespace = {"torch": torch, "math": math}
    exec(edited, namespace)
    monkeypatch.setattr(gen_f, "C_layer", namespace["C_layer"])
    ctx = CheckContext()
    v = evaluate("2.1", chk._factorisation_specs("preln", ctx)[0], ctx)
    assert v.status == "fails" and v.measured["block_err_from_B_C"] > v.measured["tol"]
    load_checks()
    assert run_claim("2.1", ctx)["status"] != "verified"


def test_inhomogeneous_control_predicts_size():
    """2.1's control: off-block mass at 1x̄ᵀ + δZ equals its first-order prediction within 10δ."""
    st = random_stack(6, 8, 4, 2, "causal", seed=0)
    Z = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    mass, predicted = chk.inhomogeneity_control(st, random_xbar(8, 100), Z, 1e-2)
    assert abs(mass / predicted - 1) <= 10 * 1e-2  # O(δ²) remainder, relative O(δ)
    mass, predicted = chk.inhomogeneity_control(st, random_xbar(8, 100), Z, 1e-1)
    assert abs(mass / predicted - 1) <= 10 * 1e-1


def test_eigen_error_predicted_by_inverse_residual():
    """2.3's control: the float64 eigen-coordinate error is (fl(S⁻¹)S − I)·blocks, within a factor 2."""
    for r in chk.eigen_coordinate_errors([4, 16, 32]):
        assert chk.EIGEN_BAND[0] <= r["eigen_error"] / r["predicted_error"] <= chk.EIGEN_BAND[1], r
