"""Claims 1.1–1.2: Euler convergence with its i.i.d. control; chain rule with the wrong-order control."""

import torch

from numerics import depth_flow as nd
from numerics import random_stack
from numerics.factorisation import stack_jacobian


def test_same_seed_same_path():
    """The smooth path θ(t) is drawn before sampling: layer ℓ of depth L equals θ(ℓ/L) for every L."""
    a = random_stack(4, 4, 4, 1, "causal", seed=3, weight_path="smooth")
    b = random_stack(4, 4, 8, 1, "causal", seed=3, weight_path="smooth")
    for (n, p), (m, q) in zip(a.layers[1].named_parameters(), b.layers[2].named_parameters()):
        assert n == m and torch.equal(p, q)


def test_euler_slope_one():
    depths = [16, 32, 64]
    errs = nd.smooth_stacks_errors(6, 8, depths, rtol=1e-10)
    assert abs(nd.fitted_slope(depths, errs) - 1) <= 0.1  # O(h) global error


def test_iid_weights_slope_half():
    """Negative control: i.i.d. weights average out at rate L^(-1/2), not L^(-1)."""
    depths = [8, 32, 128]
    slope = nd.fitted_slope(depths, nd.iid_drift(6, 8, depths, range(4)))
    assert abs(slope - 0.5) <= 0.1 and abs(slope - 1) > 0.1


def test_scalar_error_constant():
    consts, C = nd.scalar_error_constants(0.5, 1.0, 1.0, [512, 1024])
    assert abs(2 * consts[1] - consts[0] - C) <= 10 / 512**2 * abs(C)  # Richardson: O(h²) remainder


def test_chain_rule():
    st = random_stack(5, 4, 3, 2, "causal", seed=1)
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    J = stack_jacobian(st, X).detach()
    assert nd.relative(nd.depth_ordered_product(nd.layer_jacobians(st, X)), J) <= 1e-12


def test_reversed_order_fails():
    st = random_stack(5, 4, 4, 2, "causal", seed=1)
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    J = stack_jacobian(st, X).detach()
    Js = nd.layer_jacobians(st, X)
    measured = nd.relative(nd.depth_ordered_product(Js, reverse=True), J)
    predicted = float(nd.commutator_prediction(Js, st.h).norm() / J.norm())
    assert measured > 1e-6 and 0.5 <= measured / predicted <= 2.0  # h²Σ[M_i, M_j] + O(h³)


def test_bad_rtol():
    import pytest
    st = random_stack(2, 2, 1, 1, "causal", seed=0, weight_path="smooth")
    with pytest.raises(ValueError, match="rtol"):
        nd.flow_reference(st, torch.zeros(2, 2, dtype=torch.float64), rtol=0.1)
