"""docs/theory.md §6: slow-manifold expansion (6.1), master equation (6.2), the slow path's cost (6.3).

Each property test sits beside a negative control that breaks the claim's condition.
"""

from functools import cache

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, strategies as st

from numerics.families import cost
from numerics.families import slow_manifold as nm
from numerics.fitting import loglog_fit
from numerics.generated import slow_manifold as gen
from theory import slow_manifold as th
from generated_patch import scale_generated

SLOPE_TOL = 0.15  # docs/theory.md §6: fitted slope k+1 ± 0.15


# --------------------------------------------------------------------------- 6.1 symbolic

def test_linear_expansion_is_taylor_series_of_exact_manifold():
    assert th.linear_series_matches_exact(3)


@given(a=st.integers(1, 5), b=st.integers(1, 5), c=st.integers(-4, 4), d=st.integers(-4, 4))
def test_solver_on_random_linear_systems(a, b, c, d):
    """φ^(2) of ε ẋ = −ax + by, ẏ = cx + dy equals the Taylor polynomial of its exact invariant line."""
    syms = th.LINEAR_PARAMS
    system = th.linear_system()
    system.params = dict(zip(syms, (a, b, c, d)))
    phi = th.expand_slow_manifold(system.at_params(), 2).truncated(2)[0]
    # Taylor series of the exact line with symbolic a, b, c, d (SymPy's series of a numeric
    # √(perfect square) can hang), then the numbers: an independent route to the same polynomial.
    series = _linear_exact_series().subs(dict(zip(syms, (a, b, c, d))))
    assert sp.simplify(phi - series * system.y[0]) == 0


@cache
def _linear_exact_series():
    return sp.series(th.linear_exact_manifold(), th.EPS, 0, 3).removeO()


def test_wrong_first_order_term_fails_invariance():
    """Control: flipping the sign of φ₁ leaves an O(ε) invariance residual."""
    expn = th.expand_slow_manifold(th.michaelis_menten(), 1)
    expn.terms[1] = -expn.terms[1]
    assert not th.residual_order_ok(expn)
    assert th.residual_order_ok(th.expand_slow_manifold(th.michaelis_menten(), 3))


def test_michaelis_menten_published_terms():
    assert th.michaelis_menten_matches_published()
    s = sp.Symbol("s", positive=True)
    K, lam = sp.symbols("K lambda", positive=True)
    phi1 = th.expand_slow_manifold(th.michaelis_menten(), 1).terms[1][0]
    assert sp.simplify(phi1 - K * lam * s / (s + K) ** 3) != 0  # a misprinted power is detected


def test_newton_route_matches_explicit_symbolically_and_numerically():
    assert th.implicit_matches_explicit(th.michaelis_menten(), 2)
    s = torch.linspace(0.05, 2.0, 17, dtype=torch.float64)
    c = torch.zeros_like(s)
    for _ in range(30):  # Newton converges quadratically; 30 steps is ample from c = 0
        c = gen.michaelis_menten_newton_step(c, s)[..., 0, 0]
    eps = torch.tensor(0.1, dtype=torch.float64)
    phi0 = gen.michaelis_menten_phi0(s, eps)[..., 0, 0]
    phi1 = (gen.michaelis_menten_phi1(s, eps) - gen.michaelis_menten_phi0(s, eps))[..., 0, 0] / eps
    assert torch.allclose(c, phi0, rtol=0, atol=1e-14)  # float64 rounding of s/(s+K), O(1) values
    assert torch.allclose(gen.michaelis_menten_phi1_implicit(c, s)[..., 0, 0], phi1, rtol=0, atol=1e-13)


def test_tikhonov_reports_the_violated_condition():
    assert th.expand_slow_manifold(th.block_model(), 1).tikhonov.holds
    for system in (th.repelling_control(), th.block_model(sp.Matrix([[1, 0], [0, -1]]))):
        report = th.expand_slow_manifold(system, 1).tikhonov
        assert not report.holds
        assert report.violated.name.startswith("attracting")
        assert "violated" in report.summary()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="order"):
        th.expand_slow_manifold(th.linear_system(), -1)
    with pytest.raises(ValueError, match="branch"):
        th.expand_slow_manifold(th.FastSlowSystem("cubic", th.repelling_control().x, th.repelling_control().y,
                                                  th.repelling_control().f, th.repelling_control().g), 1)
    with pytest.raises(ValueError, match="system"):
        nm.simulate("nope", 0.1)
    with pytest.raises(ValueError, match="eps"):
        nm.simulate("linear", 1.5)
    with pytest.raises(ValueError, match="P="):
        nm.token_recurrence("block", 1)
    with pytest.raises(ValueError, match="linear system"):
        nm.token_recurrence("michaelis_menten", 8)


# --------------------------------------------------------------------------- 6.1 numeric

def test_slopes_radau():
    """Michaelis–Menten under Radau: slopes k+1 (k = 0, 1, 2) and 1 for the reduced flow."""
    conv = nm.convergence("michaelis_menten", Ps=(16, 64, 256), fit_Ps=(16, 64, 256))
    for key, slope in conv["slopes"].items():
        expected = 1 if key == "reduced" else int(key[-1]) + 1
        assert abs(slope - expected) <= SLOPE_TOL, (key, slope)


@pytest.mark.parametrize("system", nm.LINEAR_SYSTEMS)
def test_slopes_token_recurrence(system):
    conv = nm.convergence(system, Ps=nm.FIT_PS, recurrence=True)
    for key, slope in conv["slopes"].items():
        expected = 1 if key == "reduced" else int(key[-1]) + 1
        assert abs(slope - expected) <= SLOPE_TOL, (key, slope)


def test_radau_matches_token_recurrence():
    # Radau's global error ≈ rtol × (number of steps ≈ 100) ≈ 1e-8 at worst on O(1) states.
    assert nm.radau_vs_recurrence("block", 16) <= 1e-8


def test_repelling_control():
    """Control: f_x = +1 on φ₀ = y; the trajectory settles on the attracting branch x = y + 1, so
    dist(x, φ^(k)(y)) is the gap max_t |φ^(2)_att − φ^(k)_rep| ≈ 1 + 0.3ε (to ε³), not O(ε^(k+1))."""
    from proofs_check.claims.slow_manifold import _repelling_control
    from proofs_check.verdicts.evidence import CheckContext

    control, rows = _repelling_control(CheckContext())
    assert control.status == "fails-as-predicted", control.detail
    for r in rows:
        assert abs(r["measured"] - r["predicted"]) <= r["band"], r
        if r["quantity"].startswith("dist"):
            assert 1.0 < r["predicted"] < 1.0 + 0.5 / r["P"]  # 1 + ε(y+1)/4 + O(ε²), y + 1 ≤ 1.22
    # the attracting branch's own expansion is the published form: φ₁ = (y + 1)/4
    from proofs_check.claims.slow_manifold import _attracting_control_branch

    system, att = _attracting_control_branch()
    assert sp.simplify(att.terms[1][0] - (system.y[0] + 1) / 4) == 0 and att.tikhonov.holds


def test_ledger_6_1_fails_when_radau_and_recurrence_disagree(monkeypatch):
    """The Radau-vs-recurrence agreement is enforced by the ledger (it once read 1.3 unnoticed)."""
    import proofs_check.claims.slow_manifold  # noqa: F401  (registers 6.1)
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.runners.ledger import run_claim

    monkeypatch.setattr(nm, "radau_vs_recurrence", lambda system, P: 1.3)
    entry = run_claim("6.1", CheckContext())
    assert entry["status"] != "verified"
    failed = [st for st in entry["symbolic"]["list"] if not st["proved"]]
    assert len(failed) == 1 and "Radau and the exact token recurrence" in failed[0]["name"]


# --------------------------------------------------------------------------- 6.2

def test_two_state_and_tree_formula():
    Q2, _ = th.two_state_generator()
    p = th.stationary_distribution(Q2).p
    assert sp.simplify(Q2.T * p) == sp.zeros(2, 1) and sp.simplify(sum(p) - 1) == 0
    Q3, q = th.three_state_symbolic_generator()
    assert sp.simplify(th.stationary_distribution(Q3).p - th.markov_tree_formula(q)) == sp.zeros(3, 1)


@cache
def _chain3():
    Q = th.three_state_generator()
    return Q, th.stationary_distribution(Q).p


@given(y1=st.floats(-3, 3), y2=st.floats(-3, 3))
def test_stationary_mpmath(y1, y2):
    """Generated p_st(y) vs the symbolic one at 50 digits; the 50-digit residual of Q(y)ᵀp."""
    Q, p = _chain3()
    with mpmath.workdps(50):
        sub = {th.CHAIN_Y[0]: sp.Float(y1, 50), th.CHAIN_Y[1]: sp.Float(y2, 50)}
        exact = p.subs(sub).evalf(50)
        assert float((Q.T.subs(sub).evalf(50) * exact).norm()) <= 1e-45  # 50 digits, O(10) rates
    got = nm.stationary(np.array([[y1, y2]]))[0]
    # float64: a few roundings of O(1) quotients of sums of exponentials (e^6 at most) -> 1e-14
    assert np.max(np.abs(got - np.array([float(v) for v in exact]))) <= 1e-14


def test_chain_converges_to_stationary_distribution():
    rows = [nm.stationary_distance(nm.simulate("chain3", 1.0 / P)) for P in (16, 128)]
    assert abs(loglog_fit([1 / 16, 1 / 128], rows).slope - 1) <= SLOPE_TOL


def test_reducible_control():
    res = th.stationary_distribution(th.reducible_generator())
    assert not res.unique and res.nullity == 2 and "irreducibility" in res.detail
    a = nm.simulate("chain3_reducible", 1 / 16)
    b = nm.simulate("chain3_reducible", 1 / 16, x0=(0, 0, 1)).x[-1]
    # the limit depends on x(0): class {1, 2}'s own p_A(y) = (1, e^{y1})/(1 + e^{y1}) against state 3
    y1 = a.y[-1, 0]
    predicted = np.linalg.norm(np.array([1, np.exp(y1), 0]) / (1 + np.exp(y1)) - np.array([0, 0, 1]))
    assert abs(np.linalg.norm(a.x[-1] - b) - predicted) <= 1 / 16  # O(ε) distance to the class manifold
    from proofs_check.claims.slow_manifold import _reducible_control

    assert _reducible_control().status == "fails-as-predicted"


def test_ledger_6_2_fails_on_a_wrong_stationary_distribution(monkeypatch):
    """The generated-vs-mpmath p_st error is enforced by the ledger: a p_st off by 1e-6 fails it."""
    import proofs_check.claims.slow_manifold  # noqa: F401  (registers 6.2)
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.runners.ledger import run_claim

    real = nm.stationary
    monkeypatch.setattr(nm, "stationary", lambda y: real(y) * (1 + 1e-6))
    entry = run_claim("6.2", CheckContext())
    assert entry["status"] != "verified"
    failed = [st for st in entry["symbolic"]["list"] if not st["proved"]]
    assert len(failed) == 1 and "generated p_st" in failed[0]["name"]


def test_generator_input_is_checked():
    with pytest.raises(ValueError, match="rows must sum to 0"):
        th.stationary_distribution(sp.Matrix([[1, 0], [0, 1]]))


# --------------------------------------------------------------------------- 6.3

@given(n=st.integers(1, 6), P=st.integers(1, 8), dk=st.integers(1, 6), heads=st.integers(1, 3))
def test_flops_exact(n, P, dk, heads):
    """FlopCounterMode on the real modules equals the generated model exactly (integers), for d ≥ 2."""
    if dk * heads == 1:
        return  # d = 1 is the stated exception, tested below
    row = cost.flop_comparison(n * P, P, dk * heads, heads)
    assert row["error"] == 0


def test_flops_width_one_exception():
    """At d = 1 torch's einsum runs the four projections as elementwise products, which
    FlopCounterMode does not count: the counted total is the model's minus exactly 8T."""
    row = cost.flop_comparison(6, 2, 1, 1)
    assert row["model_fast"] - row["counted_fast"] == 8 * 6
    assert row["model_slow"] - row["counted_slow"] == 8 * 3


def test_whole_attention_ratio_is_not_p_squared_when_projections_dominate():
    """Control: T = 64, d = 256: the whole-module ratio grows like P (slope ≈ 1), only scores go like P²."""
    Ps = (2, 4, 8, 16)
    ratios = [cost.flop_comparison(64, p, 256, 4)["ratio"] for p in Ps]
    slope = loglog_fit(Ps, ratios).slope
    assert slope < 1.5
    model = cost.model_flops(64, 4, 256)
    assert model["fast_scores_mixing"] / model["slow_scores_mixing"] == 16.0
    assert model["fast_projections"] / model["slow_projections"] == 4.0


def test_flop_parts_match_the_model():
    """Projections and scores + mixing, separated by counting at two token counts, equal the
    generated parts exactly; the control breaks the split's premise (d = 1: uncounted projections)."""
    row = cost.flop_comparison(64, 4, 16, 2)
    for part in ("fast_scores_mixing", "slow_scores_mixing", "fast_projections", "slow_projections"):
        assert row[f"counted_{part}"] == row[f"model_{part}"]
    assert row["ratio_scores_mixing"] == 16 and row["ratio_projections"] == 4
    low = cost.flop_comparison(6, 2, 1, 1)
    assert row["error"] == 0 and low["model_fast_projections"] - low["counted_fast_projections"] == 8 * 6


def test_compressed_branch_fails_6_3_by_the_predicted_ratio():
    """The compressed variant keeps queries per token: its scores + mixing fall by P, not P²."""
    from numerics.stacks.spec import StackSpec
    from proofs_check.claims.slow_manifold import evaluate_6_3
    from proofs_check.verdicts.evidence import CheckContext

    spec = StackSpec(T=16, d=8, layers=1, heads=2, kernel="causal", P=4, arch="compressed")
    v = evaluate_6_3(spec, CheckContext())
    assert v.status == "fails" and v.measured["ratio_scores_mixing"] == 4 and v.predicted["ratio_scores_mixing"] == 16
    ok = evaluate_6_3(spec.with_(arch="postln"), CheckContext())
    assert ok.status == "holds" and ok.measured["ratio_scores_mixing"] == 16


def _declared(claim_id: str) -> list[str]:
    import proofs_check.claims.slow_manifold  # noqa: F401
    from proofs_check.verdicts.registry import CLAIMS

    return list(CLAIMS[claim_id].generated)


def _ledger_numbers(claim_id: str):
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.runners.ledger import run_claim

    entry = run_claim(claim_id, CheckContext())
    return entry["numeric"]["max_error"], repr(entry["numeric"]["table"])


def _control_rows():
    """6.1's control rows, which the ledger appends verbatim to 6.1's table."""
    from proofs_check.claims.slow_manifold import _repelling_control
    from proofs_check.verdicts.evidence import CheckContext

    return repr(_repelling_control(CheckContext())[1])


@pytest.fixture(scope="module")
def manifold_baseline():
    return {"6.1-control": _control_rows(), "6.2": _ledger_numbers("6.2"), "6.3": _ledger_numbers("6.3")}


@pytest.mark.parametrize("claim_id, fn", [("6.1-control", f) for f in _declared("6.1") if ".control_" in f]
                         + [(c, f) for c in ("6.2", "6.3") for f in _declared(c)])
def test_declared_generated_functions_move_the_ledger(claim_id, fn, monkeypatch, manifold_baseline):
    """Each declared generated function moves its claim's max_error or table when scaled by 1 + 1e-3
    (6.1's control functions through the control rows of 6.1's table; 6.1's 18 system functions are
    left to the suite-wide test: one 6.1 run each is ≈ 10 s)."""
    scale_generated(monkeypatch, fn)
    now = _control_rows() if claim_id == "6.1-control" else _ledger_numbers(claim_id)
    assert now != manifold_baseline[claim_id]
