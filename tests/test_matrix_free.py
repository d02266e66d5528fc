"""Matrix-free Jacobian actions (numerics.linearised.matrix_free) against autograd of the real stack."""

import math

import pytest
import torch
from hypothesis import example, given, strategies as st

from numerics.linearised import matrix_free as mf
from numerics.stacks.spec import StackSpec
from numerics.linearised.jacobians import stack_jacobian
from numerics.stacks.stack import random_xbar


def build(T, d, layers, heads, kernel, seed, decay, value_scale=0.0, dtype=torch.float64):
    return StackSpec.of(T=T, d=d, layers=layers, heads=heads, kernel=kernel, seed=seed, dtype=dtype, decay=decay, value_scale=value_scale, block_size=2 if kernel == "block" else None).build()


@st.composite
def cases(draw):
    kernel = draw(st.sampled_from(["causal", "full", "block", "alibi"]))
    T = 2 * draw(st.integers(1, 5)) if kernel == "block" else draw(st.integers(1, 10))
    heads = 1 if kernel == "alibi" else draw(st.sampled_from([1, 2]))   # ALiBi: one head has one kernel
    d = heads * draw(st.integers(1, 4))
    return (T, d, draw(st.integers(1, 5)), heads, kernel, draw(st.integers(0, 10**6)),
            draw(st.sampled_from([0.0, 0.5, 2.0])), draw(st.sampled_from([0.0, 1.0, 20.0])))


def dense_products(J, V):
    T, d = V.shape[-2:]
    flat = V.reshape(-1, T * d)
    return (flat @ J.mT).reshape(V.shape), (flat @ J).reshape(V.shape)


@given(cases())
@example((16, 4, 4, 2, "causal", 0, 0.0, 20.0))    # causal T = 16: eigenbasis cond ≈ 1e7, the polynomial form needs none
@example((1, 2, 1, 1, "causal", 1, 0.0, 0.0))      # one token, one layer: J = K_0 + K_1
@example((8, 4, 5, 2, "full", 2, 2.0, 0.0))        # strong decay: (1 − hα) far from 1
@example((6, 3, 3, 1, "alibi", 3, 0.5, 1.0))       # ALiBi with one head (a common kernel), odd d
@example((10, 8, 2, 2, "block", 4, 0.0, 20.0))     # block-causal kernel, strong value path
def test_apply_matches_dense_autograd_jacobian(case):
    T, d, L, heads, kernel, seed, decay, c = case
    stack = build(T, d, L, heads, kernel, seed, decay, c)
    xbar = random_xbar(d, seed + 1)
    J = stack_jacobian(stack, mf.reference_state(stack, xbar))
    V = mf.probes(3, T, d, seed=seed)
    act = mf.JacobianAction(stack, xbar)
    forward, kappa = act.apply(V)
    backward, kappa_t = act.apply(V, transpose=True)
    want, want_t = dense_products(J, V)
    # both routes round dot products of length ≤ L(2T + 11d): γ, times the polynomial's term-norm ratio κ
    gamma = mf.rounding_tolerance(T, d, L, torch.float64)
    assert (mf.relative_errors(forward, want) <= kappa * gamma).all(), (mf.relative_errors(forward, want), kappa * gamma)
    assert (mf.relative_errors(backward, want_t) <= kappa_t * gamma).all()
    assert torch.allclose(mf.jacobian_apply(stack, xbar, V), forward, rtol=0, atol=0)
    # the layered (depth-ordered) form is the same operator
    assert (mf.relative_errors(mf.layered_apply(stack, xbar, V), want) <= kappa * gamma).all()


def test_reversed_layer_order_is_wrong_by_the_commutator():
    """Control of the layered form: multiplying the layers in reverse order misses J·V at O(h²[M_i, M_j])."""
    stack = build(6, 4, 4, 2, "causal", 0, 0.0, 1.0)
    xbar = random_xbar(4, 1)
    V = mf.probes(2, 6, 4, seed=0)
    J = stack_jacobian(stack, mf.reference_state(stack, xbar))
    want, _ = dense_products(J, V)
    rev = mf.layered_apply(stack, xbar, V, reverse=True)
    Js = [stack_jacobian(layer, mf.reference_state(stack, x)) for layer, x in
          zip(stack.layers, stack.reference_trajectory(xbar)[:-1])]
    J_rev = Js[0]
    for Jl in Js[1:]:
        J_rev = J_rev @ Jl
    rev_dense, _ = dense_products(J_rev, V)
    err = mf.relative_errors(rev, want)
    assert (err > 1e-3).all(), err                                    # wrong, not rounding
    assert (mf.relative_errors(rev, rev_dense) <= 1e-13).all()          # and wrong by exactly the dense amount


def test_matches_jvp_and_vjp_at_ci_size():
    """T = 256, d = 64, L = 6 (the `ci` preset): J·V and Jᵀ·W against torch.func.jvp / vjp of the stack."""
    stack = build(256, 64, 6, 4, "causal", 0, 0.0)
    xbar = random_xbar(64, 1)
    X = mf.reference_state(stack, xbar)
    V = mf.probes(2, 256, 64, seed=3)
    act = mf.JacobianAction(stack, xbar)
    pred, kappa = act.apply(V)
    pred_t, kappa_t = act.apply(V, transpose=True)
    gamma = mf.rounding_tolerance(256, 64, 6, torch.float64)     # 6·(512 + 704)·2⁻⁵³ ≈ 8e-13
    assert (mf.relative_errors(pred, mf.stack_jvp(stack, X, V)) <= kappa * gamma).all()
    assert (mf.relative_errors(pred_t, mf.stack_vjp(stack, X, V)) <= kappa_t * gamma).all()
    # ‖J‖₂ by power iteration through the action is the dense-free estimate; it only increases
    sigma, change = mf.operator_norm(act, lambda y: act(y, transpose=True), (256, 64), iters=10)
    ratio = float(torch.linalg.matrix_norm(pred[0])) / float(torch.linalg.matrix_norm(V[0]))
    assert sigma >= ratio * (1 - 1e-12) and change < 1e-2


def test_float32_tolerance():
    """float32 stack: the same comparison with u = 2⁻²⁴ (γ ≈ 1e-4 at T = 64, d = 16, L = 4)."""
    stack = build(64, 16, 4, 2, "causal", 0, 0.0, dtype=torch.float32)
    xbar = random_xbar(16, 1).float()
    V = mf.probes(2, 64, 16, seed=3, dtype=torch.float32)
    pred, kappa = mf.JacobianAction(stack, xbar).apply(V)
    ref = mf.stack_jvp(stack, mf.reference_state(stack, xbar), V)
    gamma = mf.rounding_tolerance(64, 16, 4, torch.float32)
    err = mf.relative_errors(pred, ref)
    assert (err <= kappa * gamma).all(), (err, kappa * gamma)
    assert (err > mf.rounding_tolerance(64, 16, 4, torch.float64)).any()   # float32 really rounds coarser


def test_inhomogeneous_reference_disagrees_by_first_order_amount():
    """Negative control: at 1x̄ᵀ + δN the factorised J·V misses the jvp by δ‖D²F[N, V]‖ + O(δ²);
    the coefficient comes from forward-over-forward autograd at the reference (independent of the
    factorisation), and the relative remainder is O(δ) (halves when δ halves)."""
    stack = build(12, 8, 3, 2, "causal", 5, 0.0, 1.0)
    xbar = random_xbar(8, 2)
    X0 = mf.reference_state(stack, xbar)
    V = mf.probes(1, 12, 8, seed=4)[0]
    N = mf.probes(1, 12, 8, seed=5)[0]
    pred = mf.jacobian_apply(stack, xbar, V)

    def jv(X):
        return torch.func.jvp(stack, (X,), (V,))[1]

    c1 = float(torch.linalg.matrix_norm(torch.func.jvp(jv, (X0,), (N,))[1].detach()))
    rel = []
    for delta in (1e-3, 5e-4):
        e = float(torch.linalg.matrix_norm(jv(X0 + delta * N).detach() - pred))
        rel.append(abs(e / (delta * c1) - 1))
    assert c1 > 0
    assert rel[0] <= 1e-2, rel                          # first order: remainder O(δ) = O(1e-3)·O(1)
    assert 1.6 <= rel[0] / rel[1] <= 2.4, rel           # and it halves with δ (slope 1 of the relative remainder)


def test_causal_eigenvectors_and_samples():
    T = 40
    A = torch.tril(torch.ones(T, T, dtype=torch.float64)) / torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    for k in (1, 2, 7, T - 1, T):
        s = mf.causal_eigenvector(T, k)
        assert float((A @ s - s / k).abs().max()) <= 8 * T * 2.0**-53      # T-term row sums
    lams = mf.sampled_causal_eigenvalues(1024, 16)
    assert len(lams) == 16 and lams[0] == 1.0 and lams[-1] == 1 / 1024
    ks = mf.representable_causal_modes(1024, 16)
    assert len(ks) == 16 and 1 in ks and 1024 in ks
    with pytest.raises(ValueError, match="k=0"):
        mf.causal_eigenvector(T, 0)


def test_bad_shapes_are_named():
    stack = build(4, 4, 2, 2, "causal", 0, 0.0)
    with pytest.raises(ValueError, match="V has shape"):
        mf.jacobian_apply(stack, random_xbar(4, 0), torch.zeros(3, 4))
    with pytest.raises(ValueError, match="unit roundoff"):
        mf.unit_roundoff(torch.float16)
    assert math.isfinite(mf.rounding_tolerance(1024, 768, 12, torch.float64))
