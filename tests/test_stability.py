"""Claims 5.1 and 5.2: stability margin μ, gate bound g*, tightness, exact 2×2 boundaries.

Each property test sits beside a negative control that breaks the condition and checks the
predicted failure.  Tolerances: a product of L maps of size n in float64 has relative error
≲ L·n·eps per norm; we allow 10× that on log-norms (``TOL``).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st
from mpmath import mp

from numerics.families import slow_mode_maps as smm
from numerics.families import stability as ns
from numerics.stacks.spec import StackSpec
from theory import stability as th
from generated_patch import scale_generated

EPS = 2.0**-52
CONTRACTIVE = dict(decay=2.0, ln_gain=0.2, weight_scale=0.5)


def tol(layers: int, dim: int) -> float:
    return 10 * layers * dim * EPS  # rounding of an L-fold product of n×n maps, per log-norm


# -- derivations -----------------------------------------------------------------------------------

def test_symbolic_derivations_hold():
    assert all(th.monotonicity_steps().values())
    assert th.closed_form_identity() and th.closed_form_is_lower_bound()
    assert all(th.continuous_limit().values())
    assert th.compression_identity()
    assert th.aligned_product_norm_identity()
    assert all(th.boundary_checks().values())


# -- solver and certificate ---------------------------------------------------------------------

@given(seed=st.integers(0, 10_000), layers=st.integers(1, 12))
def test_solver_finds_the_root_and_closed_form_is_below(seed, layers):
    G, K = ns.random_systems(16, layers, 3, seed)
    a, k = ns.spectral_norm(G), ns.spectral_norm(K)
    h = 1.0 / layers
    g = ns.solve_gate_bound(a, k, h)
    mu = ns.stability_margin(a, h)
    assert torch.equal(torch.isfinite(g), mu > 0)  # a root exactly when μ > 0
    ok = torch.isfinite(g)
    # S(g*) = 0 to rounding: |S| ≤ L·eps·(1 + |log a|) summed, ≤ 10·L·eps here
    assert ns.log_growth(a[ok], k[ok], h, g[ok]).abs().max() <= 10 * layers * EPS if ok.any() else True
    g1 = ns.small_h_gate_bound(a, k, h)
    assert (g1[ok] <= g[ok] * (1 + 1e-14)).all()  # concavity: the Newton step from 0 undershoots


def test_interval_enclosure_contains_root():
    G, K = ns.random_systems(1, 7, 3, 5, norm_range=(0.5, 0.9))
    a, k = ns.spectral_norm(G)[0], ns.spectral_norm(K)[0]
    h = 1 / 7
    enc = ns.certify_gate_bound(a, k, h)
    assert enc.certified and enc.g_lo < enc.g_hi
    mp.dps = 50
    root = mp.findroot(lambda g: sum(mp.log(mp.mpf(float(x)) + mp.mpf(h) * g * mp.mpf(float(y)))
                                     for x, y in zip(a, k)), enc.g_star)
    assert enc.g_lo <= root <= enc.g_hi
    # control: an enclosure moved off the root does not prove (S has the same sign at both ends)
    from mpmath import iv
    iv.dps = 50
    S = lambda g: sum(iv.log(iv.mpf(float(x)) + iv.mpf(h) * iv.mpf(g) * iv.mpf(float(y))) for x, y in zip(a, k))
    assert not (S(enc.g_lo * 1.01).b < 0 < S(enc.g_hi * 1.02).a)


def test_no_margin_means_no_certified_gate():
    a = torch.tensor([1.2, 0.9, 1.1], dtype=torch.float64)  # Σ log a > 0: μ < 0
    k = torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64)
    enc = ns.certify_gate_bound(a, k, 1 / 3)
    assert enc.status == "no certified gate" and math.isnan(enc.g_star)
    assert "is negative, so no gate is certified" in str(enc) and not enc.admits(0.01)
    assert math.isnan(float(ns.solve_gate_bound(a, k, 1 / 3)))
    zero = ns.certify_gate_bound(torch.tensor([0.5, 0.5], dtype=torch.float64), torch.zeros(2, dtype=torch.float64), 0.5)
    assert zero.status == "unconstrained" and zero.admits(1e6)


@pytest.mark.parametrize("bad, match", [
    (dict(a=[0.0, 1.0], k=[1.0, 1.0], h=0.5), "a = ‖G_ℓ‖"),
    (dict(a=[0.5, 0.5], k=[-1.0, 1.0], h=0.5), "k = ‖K_ℓ‖"),
    (dict(a=[0.5, 0.5], k=[1.0, 1.0], h=0.0), "h=0.0"),
    (dict(a=[0.5, 0.5], k=[1.0], h=0.5), "k has 1 layers"),
])
def test_bad_input_names_the_parameter(bad, match):
    with pytest.raises(ValueError, match=match):
        ns.solve_gate_bound(bad["a"], bad["k"], bad["h"])


# -- Claim 5.1 -------------------------------------------------------------------------------------

@given(seed=st.integers(0, 10_000), layers=st.integers(2, 10), dim=st.integers(2, 5),
       frac=st.floats(-0.999, 0.999))
def test_below_bound_never_expands(seed, layers, dim, frac):
    G, K = ns.random_systems(32, layers, dim, seed)
    h = 1.0 / layers
    a, k = ns.spectral_norm(G), ns.spectral_norm(K)
    g = ns.solve_gate_bound(a, k, h)
    ok = torch.isfinite(g)
    if not ok.any():
        return
    log_norm = torch.log(ns.spectral_norm(ns.gated_product(G[ok], K[ok], h, frac * g[ok])))
    assert (log_norm <= tol(layers, dim)).all()
    # and the bound S(|g|) dominates the measured log-norm
    assert (log_norm <= ns.log_growth(a[ok], k[ok], h, abs(frac) * g[ok]) + tol(layers, dim)).all()


@given(seed=st.integers(0, 10_000), layers=st.integers(2, 10), dim=st.integers(2, 5),
       delta=st.floats(0.01, 0.5))
def test_past_bound_expands_by_predicted_amount(seed, layers, dim, delta):
    """Negative control of 5.1: aligned systems past g* expand, by exactly exp S(g)."""
    G, K = ns.aligned_systems(16, layers, dim, seed)
    h = 1.0 / layers
    a, k = ns.spectral_norm(G), ns.spectral_norm(K)
    g = ns.solve_gate_bound(a, k, h)
    ok = torch.isfinite(g)
    gp = g[ok] * (1 + delta)
    measured = torch.log(ns.spectral_norm(ns.gated_product(G[ok], K[ok], h, gp)))
    predicted = ns.log_growth(a[ok], k[ok], h, gp)
    assert (predicted > 0).all() and (measured > 0).all()
    assert (measured - predicted).abs().max() <= tol(layers, dim)


# -- Claim 5.2 -------------------------------------------------------------------------------------

@given(seed=st.integers(0, 10_000), layers=st.integers(2, 10), dim=st.integers(2, 5))
def test_aligned_bound_is_exact(seed, layers, dim):
    G, K = ns.aligned_systems(16, layers, dim, seed)
    h = 1.0 / layers
    g = ns.solve_gate_bound(ns.spectral_norm(G), ns.spectral_norm(K), h)
    ok = torch.isfinite(g)
    below = torch.log(ns.spectral_norm(ns.gated_product(G[ok], K[ok], h, g[ok] * (1 - 1e-3))))
    above = torch.log(ns.spectral_norm(ns.gated_product(G[ok], K[ok], h, g[ok] * (1 + 1e-3))))
    assert (below < 0).all() and (above > 0).all()


def _radius_by_bisection(M_of_g, hi: float, stable) -> float:
    """Independent check: bisection on eigenvalues for the first loss of stability in |g|."""
    lo_ok = 0.0
    for _ in range(200):
        mid = 0.5 * (lo_ok + hi)
        if stable(M_of_g(mid)) and stable(M_of_g(-mid)):
            lo_ok = mid
        else:
            hi = mid
    return lo_ok


@given(seed=st.integers(0, 10_000))
def test_jury_radius_matches_spectral_radius(seed):
    h = 1 / 12
    G, K = ns.random_discrete_2x2(4, seed, h)
    radius = ns.jury_gate_radius(G, K, h)
    for i in range(4):
        r = float(radius[i])
        if not math.isfinite(r):
            continue
        schur = lambda M: bool(torch.linalg.eigvals(M).abs().max() < 1)
        # bisection from the scan's first unstable point; the region in |g| is an interval
        # around 0, so the first Jury root and the bisection agree to the root's conditioning
        grid = [r * f for f in (0.5, 0.9, 0.99)]
        assert all(schur(G[i] + h * s * g * K[i]) for g in grid for s in (1, -1))
        assert not all(schur(G[i] + h * s * r * 1.01 * K[i]) for s in (1, -1))
        b = _radius_by_bisection(lambda g: G[i] + h * g * K[i], r * 1.01, schur)
        assert abs(b - r) <= 1e-8 * r  # polynomial root vs eigenvalue bisection: cond ~ 1e3·eps


@given(seed=st.integers(0, 10_000))
def test_routh_hurwitz_radius_matches_eigenvalues(seed):
    F, K = ns.random_continuous_2x2(4, seed)
    radius = ns.routh_hurwitz_gate_radius(F, K)
    hurwitz = lambda M: bool(torch.linalg.eigvals(M).real.max() < 0)
    for i in range(4):
        r = float(radius[i])
        if math.isfinite(r):
            b = _radius_by_bisection(lambda g: F[i] + g * K[i], r * 1.01, hurwitz)
            assert abs(b - r) <= 1e-8 * r


def test_aligned_2x2_norm_bound_equals_exact_boundary():
    h = 1 / 12
    G, K = ns.aligned_systems(64, 1, 2, 3, norm_range=(0.3, 0.95))
    ratio = ns.discrete_norm_gate_bound(G[:, 0], K[:, 0], h) / ns.jury_gate_radius(G[:, 0], K[:, 0], h)
    assert (ratio - 1).abs().max() <= 1e-9  # root of a quadratic: cond ~ 1e3·eps, 1e-9 leaves room


def test_misaligned_bound_is_conservative():
    """Negative control of 5.2: without alignment the norm bound is strictly inside the exact
    region — ratio < 1 as Jury / Routh–Hurwitz predict, never > 1."""
    h = 1 / 12
    G, K = ns.random_discrete_2x2(200, 11, h)
    rd = ns.discrete_norm_gate_bound(G, K, h) / ns.jury_gate_radius(G, K, h)
    F, Kc = ns.random_continuous_2x2(200, 12)
    rc = ns.continuous_norm_gate_bound(F, Kc) / ns.routh_hurwitz_gate_radius(F, Kc)
    assert (rd <= 1 + 1e-9).all() and (rc <= 1 + 1e-9).all()
    assert float(rd.median()) < 0.9 and float(rc.median()) < 0.9
    # past the norm bound a conservative system stays stable, exactly where Jury says it does
    g = ns.discrete_norm_gate_bound(G, K, h) * 1.05
    stable = torch.linalg.eigvals(G + h * g[:, None, None] * K).abs().max(-1).values < 1
    assert torch.equal(stable, rd < 1 / 1.05)


# -- real stacks -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", ["full", "causal"])
def test_contractive_stack_is_certified_and_never_expands(kernel):
    stack = StackSpec.of(T=8, d=8, layers=6, heads=2, kernel=kernel, P=4, seed=1, **CONTRACTIVE).build()
    cert = ns.gate_certificate(stack)
    assert cert.status == "certified", str(cert)
    G, K = ns.slow_mode_maps(stack)
    e = cert.enclosure
    for f in (-0.999, 0.5, 0.999):
        assert float(torch.log(ns.spectral_norm(ns.gated_product(G, K, stack.h, f * e.g_lo)))) <= tol(6, 16)
    assert "gate bound g*" in str(cert)


def test_plain_stack_has_no_certified_gate():
    """Control: a plain pre-LN stack (no decay) expands on the slow modes."""
    stack = StackSpec(T=8, d=8, layers=6, heads=2, kernel="causal", P=4, seed=1).build()
    cert = ns.gate_certificate(stack)
    assert cert.status == "no certified gate" and cert.enclosure.mu < 0
    assert max(cert.a) > 1


def test_slow_mode_maps_match_whole_layer_autograd():
    """The generated assembly I ⊗ G(0) + A_c ⊗ (G(1) − G(0)) equals the compressed Jacobian of the
    whole layer (autograd), to rounding (entries O(1), n·d = 16: 1e-12 is 1e3·eps·‖J‖)."""
    pytest.importorskip("numerics.generated.factorisation")
    for kernel in ("full", "causal", "block"):
        stack = StackSpec.of(T=8, d=8, layers=3, heads=2, kernel=kernel, P=4, seed=4, **CONTRACTIVE).build()
        Gf, Kf = ns.slow_mode_maps(stack, method="factorisation")
        Ga, Ka = ns.slow_mode_maps(stack, method="autograd")
        assert (Gf - Ga).abs().max() <= 1e-12 and (Kf - Ka).abs().max() <= 1e-12


def test_stack_without_slow_path_is_an_error():
    with pytest.raises(ValueError, match="P=None"):
        ns.gate_certificate(StackSpec(T=8, d=8, layers=2, heads=2, kernel="causal").build())


# -- CLI (item 5) ----------------------------------------------------------------------------------

SMALL = ["simulate", "--device", "cpu", "--T", "8", "--d", "8", "--P", "4", "--layers", "6", "--heads", "2",
         "--decay", "2", "--ln-gain", "0.2", "--weight-scale", "0.5", "--seed", "1"]


def test_simulate_prints_certified_bound_and_warns_past_it(capsys):
    from proofs_check.cli import main

    assert main(SMALL + ["--gate", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "gate bound g* ∈" in out and "warning" not in out
    assert main(SMALL + ["--gate", "50"]) == 0
    out = capsys.readouterr().out
    assert "warning --gate 50.0 exceeds the certified gate bound g*" in out and "μ ∈" in out


def test_simulate_strict_fails_past_the_bound(capsys):
    from proofs_check.cli import main

    assert main(SMALL + ["--gate", "50", "--strict"]) == 2
    err = capsys.readouterr().err
    assert "--gate 50.0" in err and "g*" in err and "--strict" in err


def test_simulate_warns_when_no_gate_is_certified(capsys):
    from proofs_check.cli import main

    plain = ["simulate", "--device", "cpu", "--T", "8", "--d", "8", "--P", "4", "--layers", "6", "--heads", "2",
             "--seed", "1"]
    assert main(plain + ["--gate", "0.1"]) == 0
    assert "is negative, so no gate is certified" in capsys.readouterr().out
    assert main(plain + ["--gate", "0.1", "--strict"]) == 2


def test_simulate_times_the_certificate_and_can_skip_it(capsys):
    from proofs_check.cli import main
    from proofs_check.experiments.simulate import simulate

    out = simulate(StackSpec(T=8, P=4, d=8, layers=6, heads=2, kernel="causal", seed=1, device="cpu"))
    s = out["seconds"]
    # the parts account for the total: build + forward + certificate ≤ total (the rest is bookkeeping)
    assert s["certificate"] > 0 and s["build"] + s["forward"] + s["certificate"] <= s["total"] + 1e-9
    assert main(["simulate", "--device", "cpu", "--T", "8", "--d", "8", "--P", "4", "--layers", "6",
                 "--heads", "2", "--no-certificate"]) == 0
    printed = capsys.readouterr().out
    assert "gate bound not computed (--no-certificate)" in printed and "certificate 0.000s" in printed


# -- the certificate against the real gated stack (ledger power) ------------------------------------

def _contractive_spec(kernel="full", seed=1):
    from numerics.stacks.spec import StackSpec

    return StackSpec(T=8, d=8, layers=6, heads=2, kernel=kernel, P=4, seed=seed, knobs=CONTRACTIVE)


@pytest.mark.parametrize("kernel", ["full", "causal"])
def test_slow_branch_map_is_the_real_layers_gate_derivative(kernel):
    """K_ℓ equals (1/h)∂_g ΠJ_ℓ(g)Π⁺ of the real gated layer (central difference, ε = 1e-4:
    truncation ~ε² and rounding eps/(εh) give ≲ 1e-10; 1e-7 as in the ledger).  Control: without
    the MLP operating-point term the map is off by exactly that term's size, O(h) ≈ 1e-2."""
    from proofs_check.claims.stability.gate_bound import FD_STEP, K_TOL

    stack = _contractive_spec(kernel).build()
    G, K = ns.slow_mode_maps(stack)
    J = ns.gated_layer_jacobians(stack, [0.0, FD_STEP, -FD_STEP])
    K_fd = (J[1] - J[2]) / (2 * FD_STEP * stack.h)
    scale = float(K_fd.abs().max())
    assert float((K - K_fd).abs().max()) / scale <= K_TOL
    assert float((G - J[0]).abs().max()) <= 1e-12 * float(J[0].abs().max())
    xs = smm._reference_states(stack, None)
    factor = torch.eye(8, dtype=torch.float64) + smm._mlp_stage_autograd(stack, xs)
    G_u = torch.linalg.solve(factor[:, None], G.reshape(6, 2, 8, 16))
    omitted = torch.einsum("laij,lajc->laic", smm._mlp_operating_point_shift(stack, xs, smm._Steps(len(stack.layers), None)), G_u).reshape(6, 16, 16)
    model_err = float((K - omitted - K_fd).abs().max()) / scale
    assert 1e-3 <= model_err <= 1e-1  # O(h) at h = 1/6
    assert abs(model_err - float(omitted.abs().max()) / scale) <= K_TOL + 1e-3 * model_err


def test_evaluate_5_1_reports_the_documented_keys():
    from proofs_check.claims.stability.gate_bound import evaluate_5_1
    from proofs_check.verdicts.evidence import CheckContext

    v = evaluate_5_1(_contractive_spec(), CheckContext())
    assert v.status == "holds", v.reason
    for key in ("mu", "mu_lo", "mu_hi", "g_star", "g_star_lo", "g_star_hi", "g_small_h", "certificate"):
        assert key in v.predicted
    for key in ("onset", "onset_plus", "onset_minus", "onset_cap", "onset_resolution", "expands_at_zero",
                "log_norm_below", "G_route_error", "K_route_error", "norms_G", "norms_K"):
        assert key in v.measured
    assert v.measured["onset"] >= v.predicted["g_star_lo"]
    plain = evaluate_5_1(_contractive_spec().with_(knobs={"decay": 0.0, "ln_gain": 1.0, "weight_scale": 1.0}),
                         CheckContext())
    assert plain.status == "conditional" and "is negative, so no gate is certified" in plain.condition
    assert evaluate_5_1(_contractive_spec().with_(P=None), CheckContext()).status == "n/a"


def test_expansion_onset_brackets_the_real_crossing():
    """Just below the reported onset the real gated product does not expand; at it, it does."""
    stack = _contractive_spec().build()
    cert = ns.gate_certificate(stack)
    onset = ns.expansion_onset(stack, cert.enclosure.g_star)
    assert onset.onset is not None and onset.onset > cert.enclosure.g_hi
    sign = 1.0 if onset.onset == onset.onset_plus else -1.0
    g = sign * onset.onset
    logs = ns.product_log_norm(ns.gated_layer_jacobians(stack, [g * (1 - 2 * onset.resolution), g]))
    assert float(logs[0]) <= 0 < float(logs[1])


def test_ledger_5_1_fails_on_a_broken_slow_branch_map(monkeypatch):
    """The first-order model without the MLP's operating-point shift (the old K_ℓ) is caught by the
    ledger itself: K_route_error ≈ that term's size (≥ 1e-3 ≫ K_TOL)."""
    import proofs_check.claims.stability.gate_bound  # noqa: F401  (registers 5.1)
    from proofs_check.claims.stability.gate_bound import K_TOL, evaluate_5_1
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.runners.ledger import run_claim

    monkeypatch.setattr(smm, "_mlp_operating_point_shift",
                        lambda stack, xs, step: torch.zeros(len(stack.layers), 2, 8, 8, dtype=torch.float64))
    v = evaluate_5_1(_contractive_spec(), CheckContext())
    assert v.status == "fails" and v.measured["K_route_error"] >= 1e3 * K_TOL
    assert v.counterexample == _contractive_spec().as_dict()
    assert run_claim("5.1", CheckContext())["status"] != "verified"


def test_ledger_5_1_fails_when_the_certificate_overstates_g_star(monkeypatch):
    """A certificate 20× too optimistic (past the measured onset, ≈ 8 g*) is caught by the direct
    measurement on the real gated stack at ±0.99 g_lo."""
    from proofs_check.claims.stability.gate_bound import evaluate_5_1
    from proofs_check.verdicts.evidence import CheckContext

    real = ns.certify_gate_bound

    def optimistic(*args, **kwargs):
        e = real(*args, **kwargs)
        e.g_star, e.g_lo, e.g_hi = 20 * e.g_star, 20 * e.g_lo, 20 * e.g_hi
        return e

    monkeypatch.setattr(ns, "certify_gate_bound", optimistic)
    v = evaluate_5_1(_contractive_spec(), CheckContext())
    assert v.status == "fails" and v.measured["log_norm_below"] > 0
    assert v.measured["onset"] < v.predicted["g_star_lo"]


def _ledger_numbers(claim_id: str):
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.runners.ledger import run_claim

    entry = run_claim(claim_id, CheckContext())
    return entry["numeric"]["max_error"], repr(entry["numeric"]["table"])


def _declared(claim_id: str) -> list[str]:
    from proofs_check.verdicts.registry import CLAIMS, load_checks

    load_checks()

    return list(CLAIMS[claim_id].generated)


@pytest.fixture(scope="module")
def stability_baseline():
    return {cid: _ledger_numbers(cid) for cid in ("5.1", "5.2")}


@pytest.mark.parametrize("claim_id, fn", [(c, f) for c in ("5.1", "5.2") for f in _declared(c)])
def test_declared_generated_functions_move_the_ledger(claim_id, fn, monkeypatch, stability_baseline):
    """Each generated function a claim declares moves its max_error or table when scaled by 1 + 1e-3."""
    scale_generated(monkeypatch, fn)
    assert _ledger_numbers(claim_id) != stability_baseline[claim_id]
