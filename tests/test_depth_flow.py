"""Claims 1.1–1.2: Euler convergence with its i.i.d. control; chain rule with the wrong-order control."""

import pytest
import torch

from numerics.families import depth_flow as nd
from numerics.stacks.spec import StackSpec
from numerics.fitting import loglog_fit
from numerics.linearised.jacobians import layer_jacobians, stack_jacobian


def test_same_seed_same_path():
    """The smooth path θ(t) is drawn before sampling: layer ℓ of depth L equals θ(ℓ/L) for every L."""
    a = StackSpec(T=4, d=4, layers=4, heads=1, kernel="causal", seed=3, knobs={"weight_path": "smooth"}).build()
    b = StackSpec(T=4, d=4, layers=8, heads=1, kernel="causal", seed=3, knobs={"weight_path": "smooth"}).build()
    for (n, p), (m, q) in zip(a.layers[1].named_parameters(), b.layers[2].named_parameters()):
        assert n == m and torch.equal(p, q)


def test_euler_slope_one():
    depths = [16, 32, 64]
    errs = nd.smooth_stacks_errors(6, 8, depths, rtol=1e-10)
    assert abs(-loglog_fit(depths, errs).slope - 1) <= 0.1  # O(h) global error


def test_iid_weights_slope_half():
    """Negative control: i.i.d. weights average out at rate L^(-1/2), not L^(-1)."""
    depths = [8, 32, 128]
    slope = -loglog_fit(depths, nd.iid_drift(6, 8, depths, range(4))).slope
    assert abs(slope - 0.5) <= 0.1 and abs(slope - 1) > 0.1


def test_scalar_error_constant():
    consts, C = nd.scalar_error_constants(0.5, 1.0, 1.0, [512, 1024])
    assert abs(2 * consts[1] - consts[0] - C) <= 10 / 512**2 * abs(C)  # Richardson: O(h²) remainder


def test_chain_rule():
    st = StackSpec(T=5, d=4, layers=3, heads=2, kernel="causal", seed=1).build()
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    J = stack_jacobian(st, X).detach()
    assert nd.relative(nd.depth_ordered_product(layer_jacobians(st, X)), J) <= 1e-12


def test_reversed_order_fails():
    st = StackSpec(T=5, d=4, layers=4, heads=2, kernel="causal", seed=1).build()
    X = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    J = stack_jacobian(st, X).detach()
    Js = layer_jacobians(st, X)
    measured = nd.relative(nd.depth_ordered_product(Js, reverse=True), J)
    predicted = float(nd.commutator_prediction(Js, st.h).norm() / J.norm())
    assert measured > 1e-6 and 0.5 <= measured / predicted <= 2.0  # h²Σ[M_i, M_j] + O(h³)


def test_bad_rtol():
    import pytest
    st = StackSpec(T=2, d=2, layers=1, heads=1, kernel="causal", seed=0, knobs={"weight_path": "smooth"}).build()
    with pytest.raises(ValueError, match="rtol"):
        nd.flow_reference(st, torch.zeros(2, 2, dtype=torch.float64), rtol=0.1)


# ---- ledger power: the check itself fails on a broken stack or a perturbed generated function
import numerics.generated.depth_flow as gen_df  # noqa: E402
from numerics.stacks.stack import Layer  # noqa: E402
from proofs_check.claims.depth_flow import euler_scheme  # noqa: E402
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.verdicts.registry import load_checks
from proofs_check.runners.ledger import run_claim# noqa: E402
from proofs_check.verdicts.on_stack import matrix_spec  # noqa: E402
from proofs_check.verdicts.registry import evaluate  # noqa: E402


def test_error_constant_matches_richardson():
    """The derived constant E(1) against the stack's own Richardson limit (quick depths 8..64)."""
    ctx = CheckContext()
    v = evaluate("1.1", euler_scheme._euler_specs("preln", ctx)[0], ctx)
    assert v.status == "holds", v
    # R₂ − C = O(h³); the tolerance is twice its estimate from the last two R₂ (measured ≈ 0.4 of it)
    assert v.measured["C_rel_error"] <= v.measured["C_rel_tolerance"]


def test_finite_difference_directions_match_jvp():
    """The central differences inside error_constant_reference against torch.func.jvp (forward mode)."""
    st = StackSpec(T=4, d=4, layers=1, heads=1, kernel="causal", seed=2, knobs={"weight_path": "smooth"}).build()
    X = torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    V = torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        f = lambda x: nd.vector_field_at(st, 0.3, x)  # noqa: E731
        u, n = nd._unit(V)
        fd = (f(X + nd.FD_X * u) - f(X - nd.FD_X * u)) / (2 * nd.FD_X) * n
    exact = torch.func.jvp(f, (X,), (V,))[1]
    assert (fd - exact).norm() <= 1e-8 * exact.norm()  # FD_X²/6·|F‴| + eps|F|/FD_X ≲ 1e-9


def _mlp_reads_x(self, x):
    """A plausible slip: the MLP reads LN₂(X) instead of LN₂(U) (still O(h), slope 1, wrong constant)."""
    u = (1.0 - self.h * self.decay) * x + self.h * self.mixing(x)
    return u + self.h * self.mlp(self.ln2(x))


def test_ledger_catches_wrong_sublayer_input(monkeypatch):
    """The slope stays 1 but the constant moves by ≈ 40 %: the ledger entry must fail."""
    ctx = CheckContext()
    spec = euler_scheme._euler_specs("preln", ctx)[0]
    monkeypatch.setattr(Layer, "forward", _mlp_reads_x)
    v = evaluate("1.1", spec, ctx)
    assert abs(v.measured["slope"] - 1) <= euler_scheme.SLOPE_TOL  # the order alone would pass
    assert v.status == "fails" and v.measured["C_rel_error"] > 0.1
    load_checks()
    assert run_claim("1.1", ctx)["status"] != "verified"


def test_ledger_catches_wrong_step_size(monkeypatch):
    """Attention with step 2h: still first order, different ODE; slope or constant must flag it."""
    def forward(self, x):
        u = (1.0 - self.h * self.decay) * x + 2 * self.h * self.mixing(x)
        return u + self.h * self.mlp(self.ln2(u))

    ctx = CheckContext()
    monkeypatch.setattr(Layer, "forward", forward)
    assert evaluate("1.1", euler_scheme._euler_specs("preln", ctx)[0], ctx).status == "fails"


def test_iid_drift_prediction_size():
    """The control predicts the drift's size σ_F/√L, not only its slope."""
    depths = [8, 32, 128]
    drift = nd.iid_drift(6, 8, depths, range(4))
    for L, m in zip(depths, drift):
        r = m / nd.iid_drift_prediction(6, 8, 64, L)
        assert euler_scheme.IID_BAND[0] <= r <= euler_scheme.IID_BAND[1], (L, r)  # 4-seed spread and O(h) drift of X_ℓ


@pytest.mark.parametrize("fn", ["shifted_defect", "euler_error_constant", "scalar_rate"])
def test_declared_generated_functions_move_1_1(fn, monkeypatch):
    """Each generated function 1.1 declares moves its numbers (output × (1 + 1e-3))."""
    load_checks()
    ctx = CheckContext()
    base = run_claim("1.1", ctx)
    orig = getattr(gen_df, fn)
    monkeypatch.setattr(gen_df, fn, lambda *a: orig(*a) * (1 + 1e-3))
    moved = run_claim("1.1", ctx)
    assert moved["numeric"]["max_error"] != base["numeric"]["max_error"]
    assert moved["status"] != "verified"  # a 1e-3 error is far above each part's tolerance


def test_relu_chain_rule_no_grad_warning():
    """The relu variant's kink distance is read from a detached forward pass (no requires_grad scalar)."""
    import warnings

    ctx = CheckContext()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        v = evaluate("1.2", matrix_spec("relu", ctx), ctx)
    assert v.status == "conditional" and v.measured["kink_distance"] > 0


def test_paper_forward_sees_a_wrong_step_in_one_layer_by_the_predicted_amount():
    """The stack against the paper's layer written with torch's reference ops: equal to rounding, and
    a last layer stepping h(1 + δ) instead of h moves the output by δh ∂_h X' + O(δ²), with
    X' = u + h M(u), u = (1 − hα)x + h a: ∂_h X' = (a − αx) + M(u) + h M'(u)(a − αx)."""
    stack = StackSpec(T=6, d=8, layers=4, heads=2, kernel="causal", seed=1, knobs={"value_scale": 1.0}).build()
    X = torch.randn(6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    layer, h, alpha = stack.layers[-1], stack.h, stack.config.decay
    with torch.no_grad():
        x = stack.trajectory(X)[-2]
        out = stack(X)
        assert float((out - nd.paper_forward(stack, X)).norm() / out.norm()) <= 1e-12
        a = layer.mixing(x)
        u = (1 - h * alpha) * x + h * a
    mlp = lambda z: layer.mlp(layer.ln2(z))  # noqa: E731
    M, dM = torch.func.jvp(mlp, (u,), (a - alpha * x,))
    predicted = (a - alpha * x + M + h * dM).detach()
    delta = 1e-6
    with torch.no_grad():
        layer.h = h * (1 + delta)
        moved = stack(X) - nd.paper_forward(stack, X)
    predicted = delta * h * predicted
    # first order in δ: the remainder is O(δ²h²), ≪ 1e-3 of the O(δ) move
    assert float((moved - predicted).norm()) <= 1e-3 * float(predicted.norm())


def test_ledger_1_1_catches_attention_without_its_score_scale(monkeypatch):
    """A mistake injected in the stack (scores without 1/√d_k) keeps the Euler slope and constant of
    the mutated stack, but not the paper's layer: the ledger entry must fail."""
    from numerics.stacks.stack import Attention

    def weights(self, z):
        q = torch.einsum("...td,hdk->...htk", z, self.W_Q)
        k = torch.einsum("...td,hdk->...htk", z, self.W_K)
        return torch.softmax(q @ k.transpose(-1, -2) + self.bias, dim=-1)

    ctx = CheckContext()
    monkeypatch.setattr(Attention, "weights", weights)
    v = evaluate("1.1", euler_scheme._euler_specs("preln", ctx)[0], ctx)
    assert v.status == "fails" and v.measured["paper_layer_rel_error"] > 1e-6
