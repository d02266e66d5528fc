"""The ledger refuses plausible mistakes by itself (``fastslow check`` alone, not a test file):

- a saturation depth ℓ* search off by one (3.1 reads ℓ* off its definition too);
- a wrong transpose in the matrix-free Jᵀ (2.3, and the scale forms that apply Jᵀ, check it against vjp
  and the adjoint identity);
- a tolerance derived at the wrong order (each rounding tolerance states its derivation; the ledger
  recomputes it);
- a dropped ½ in the log-norm's symmetric part (5.1 checks the log-norm numerically; 5.2 fails by a number,
  not an exception) and a declared generated function its check never calls;
- a mistake a matrix-free form shares with its own guard (a squared operator norm, 5.1's certificate with the
  wrong step or its maps swapped): the form's numbers are compared with the dense form's at the toy size;
- a symbolic step that never finishes (a per-step time limit: refused with its reason, in any thread).

Each mistake is applied by monkeypatching, and each test has its negative control: the unmutated code passes
the same check.
"""

from __future__ import annotations

import math
import threading
import time

import pytest
import torch

from numerics.stacks.spec import StackSpec
from proofs_check.verdicts.registry import CLAIMS, load_checks
from proofs_check.verdicts.evidence import CheckContext, Derivation, NumericResult
from proofs_check.runners.ledger import run_claim

load_checks()

U = 2.0**-53


# ---- 1. the saturation depth ----------------------------------------------------------------
def test_depth_by_definition_on_hand_made_ratios():
    from proofs_check.claims.coarse_graining.saturation_depth import depth_by_definition

    # r dips below τ = 0.5 at layer 1 but rises above it at layer 2: ℓ* is the last crossing, 3
    assert depth_by_definition(torch.tensor([0.9, 0.4, 0.6, 0.3, 0.2]), 0.5) == 3
    assert depth_by_definition(torch.tensor([0.9, 0.6]), 0.5) is None         # never below τ at the end
    assert depth_by_definition(torch.tensor([0.1, 0.2, 0.5]), 0.5) == 0       # ≤ τ from the first layer on


def test_ledger_3_1_refuses_an_off_by_one_saturation_search(monkeypatch):
    """Every ℓ* one layer too shallow (which also eases ℓ* ≤ bound): the search now disagrees with the
    definition on every stack with ℓ* ≥ 1, by exactly one layer, and 3.1 fails."""
    import numerics.families.coarse_graining as ncg

    search = ncg.first_saturated_layer

    def off_by_one(worst, tau):
        ell = search(worst, tau)
        return None if ell is None else max(ell - 1, 0)

    monkeypatch.setattr(ncg, "first_saturated_layer", off_by_one)
    entry = run_claim("3.1", CheckContext())
    assert entry["status"] == "failed" and math.isinf(entry["numeric"]["max_error"])
    rows = [r for r in entry["numeric"]["table"] if r.get("ℓ* (definition)") is not None]
    moved = [r for r in rows if r["ℓ* (definition)"] >= 1]
    assert moved and all(r["ℓ* (autograd)"] == r["ℓ* (definition)"] - 1 for r in moved)
    assert all(r["ℓ* (autograd)"] == 0 for r in rows if r["ℓ* (definition)"] == 0)


# ---- 2. the matrix-free transpose ------------------------------------------------------------
def _transpose_dropped(monkeypatch):
    from numerics.linearised import matrix_free as mf
    apply = mf.KernelAction.__call__
    monkeypatch.setattr(mf.KernelAction, "__call__", lambda self, E, transpose=False: apply(self, E, False))


def test_adjoint_errors_measure_a_wrong_transpose(monkeypatch):
    """On one small causal stack: within γ unmutated; A for Aᵀ in Jᵀ is an O(1) error both ways."""
    from numerics.linearised import matrix_free as mf
    from numerics.stacks.spec import StackSpec
    from numerics.stacks.stack import random_xbar

    st, xbar = StackSpec(T=8, d=4, layers=3, heads=2, kernel="causal", seed=0).build(), random_xbar(4, 0)
    U_, V_ = mf.probes(3, 8, 4, seed=1), mf.probes(3, 8, 4, seed=2)
    X = mf.reference_state(st, xbar)
    gamma = mf.rounding_tolerance(8, 4, 3, torch.float64)
    good = mf.adjoint_errors(mf.JacobianAction(st, xbar), st, X, U_, V_)
    assert good["vjp"] <= gamma and good["adjoint"] <= gamma + 8 * 4 * U   # rounding: γ and γ + T·d·u
    _transpose_dropped(monkeypatch)
    bad = mf.adjoint_errors(mf.JacobianAction(st, xbar), st, X, U_, V_)
    assert bad["vjp"] > 1e-3 and bad["adjoint"] > 1e-4


def test_ledger_2_3_refuses_a_wrong_transpose(monkeypatch):
    _transpose_dropped(monkeypatch)
    entry = run_claim("2.3", CheckContext())
    assert entry["status"] == "failed" and entry["numeric"]["max_error"] > 1e6   # O(0.1) over γ ≈ 2e-13
    rows = [r for r in entry["numeric"]["table"] if "Jᵀ vs vjp / γ" in r]
    assert len(rows) == 2 and all(r["Jᵀ vs vjp / γ"] > 1e6 for r in rows)


def test_adjoint_identity_needs_independent_probes(monkeypatch):
    """V = U (one seed reused): ⟨U, J·U⟩ = ⟨J·U, U⟩, so Jᵀ computed as J passes the identity (error at
    rounding level); the probe cosine (exactly 1) is above the dependence bound and the identity is refused
    (inf).  Independent seeds: cosine ≈ 1/√(T·d) ≈ 0.18, below the bound, and the identity measures the error."""
    from numerics.linearised import matrix_free as mf
    from numerics.stacks.stack import random_xbar

    st, xbar = StackSpec(T=8, d=4, layers=3, heads=2, kernel="causal", seed=0).build(), random_xbar(4, 0)
    U_, V_ = mf.probes(3, 8, 4, seed=1), mf.probes(3, 8, 4, seed=2)
    X = mf.reference_state(st, xbar)
    good = mf.adjoint_errors(mf.JacobianAction(st, xbar), st, X, U_, V_)
    assert good["probe_cosine"] < good["cosine_bound"] and math.isfinite(good["adjoint"])
    same = mf.adjoint_errors(mf.JacobianAction(st, xbar), st, X, U_, U_.clone())
    assert same["probe_cosine"] > 1 - 1e-12 and same["adjoint"] == math.inf
    apply = mf.JacobianAction.apply        # Jᵀ computed as J (both transposes dropped)
    monkeypatch.setattr(mf.JacobianAction, "apply", lambda self, V, transpose=False: apply(self, V, False))
    monkeypatch.setattr(mf, "dependence_bound", lambda n: math.inf)        # the guard switched off
    blind = mf.adjoint_errors(mf.JacobianAction(st, xbar), st, X, U_, U_.clone())
    assert blind["adjoint"] <= mf.rounding_tolerance(8, 4, 3, torch.float64) + 8 * 4 * U   # passes: why the guard


def test_dependence_bound_is_not_reached_by_independent_probes():
    """Independent seeds over 200 pairs at n = T·d = 32 and 4096: every cosine below the bound (false-alarm
    probability ≈ 2e-9 per pair); the bound is below 1 for n > 36 and just below 1 at small n."""
    from numerics.linearised import matrix_free as mf
    for T, d in ((8, 4), (64, 64)):
        cos = [mf.probe_cosine(mf.probes(1, T, d, seed=2 * s), mf.probes(1, T, d, seed=2 * s + 1)) for s in range(200)]
        assert max(cos) < mf.dependence_bound(T * d)
    assert mf.dependence_bound(4096) == 6 / 64 and mf.dependence_bound(16) == 1 - 1e-6


def test_ledger_2_3_refuses_reused_probe_seeds(monkeypatch):
    """Every probe drawn from one seed (U = V): 2.3's adjoint rows are refused (inf) by the ledger alone,
    while its Jᵀ-vs-vjp rows are unchanged (the other guard)."""
    from numerics.linearised import matrix_free as mf
    draw = mf.probes
    monkeypatch.setattr(mf, "probes", lambda k, T, d, *, seed, **kw: draw(k, T, d, seed=0, **kw))
    entry = run_claim("2.3", CheckContext())
    assert entry["status"] == "failed" and math.isinf(entry["numeric"]["max_error"])
    rows = [r for r in entry["numeric"]["table"] if "adjoint / tol" in r]
    assert rows and all(math.isinf(r["adjoint / tol"]) and r["Jᵀ vs vjp / γ"] <= 1 for r in rows)


@pytest.mark.parametrize("claim_id", ["2.3", "3.2"])
def test_scale_forms_refuse_a_wrong_transpose(monkeypatch, claim_id):
    """check --scale: the forms whose power iterations apply Jᵀ verify unmutated and fail without Aᵀ."""
    from proofs_check.verdicts.scale_run import ScaleRun
    from proofs_check.runners.scale import run_scale_claim

    good = run_scale_claim(claim_id, ScaleRun("toy"))
    assert good["status"] == "verified", good.get("detail")
    _transpose_dropped(monkeypatch)
    bad = run_scale_claim(claim_id, ScaleRun("toy"))
    assert bad["status"] == "failed" and bad["numeric"]["max_error"] > 1e6 * bad["numeric"]["tolerance"]


# ---- 3. tolerances and their derivations ------------------------------------------------------
def test_derivation_recomputes_and_refuses_the_wrong_order():
    n, u = 168, U
    good = Derivation("γ", n * u, u, n)
    assert good.problem() is None
    assert "does not match" in Derivation("γ", math.sqrt(n * u), u, n).problem()   # √γ for γ
    assert "order 0.5" in Derivation("γ", math.sqrt(n) * u ** 0.5, u, n, order=0.5).problem()
    assert Derivation("4√n·u", 4 * math.sqrt(n) * u, u, n, model="probabilistic").problem() is None
    assert "does not match" in Derivation("κγ", 2.0 * n * u, u, n, kappa=3.0).problem()
    result = NumericResult(cases=1, max_error=0.0, tolerance=1.0, derivations=[Derivation("γ", 2 * n * u, u, n)])
    assert not result.ok                                  # the error is within, the tolerance is not derived


def test_scale_tolerance_at_the_wrong_order_is_refused(monkeypatch):
    """γ replaced by √γ (10⁶ times looser at the toy size): every form stating γ refuses its verdict."""
    import proofs_check.verdicts.scale_run as scale_run
    from proofs_check.verdicts.registry import load_checks
    from proofs_check.runners.scale import run_scale_claim

    load_checks()
    good = run_scale_claim("2.4", scale_run.ScaleRun("toy"))
    assert good["status"] == "verified" and all(d["problem"] is None for d in good["derivations"])
    init = scale_run.ScaleRun.__post_init__

    def sqrt_gamma(self):
        init(self)
        self.gamma = math.sqrt(self.gamma)

    monkeypatch.setattr(scale_run.ScaleRun, "__post_init__", sqrt_gamma)
    bad = run_scale_claim("2.4", scale_run.ScaleRun("toy"))
    assert bad["status"] == "failed" and "does not match its stated derivation" in bad["detail"]
    assert bad["numeric"]["max_error"] <= bad["numeric"]["tolerance"]   # refused although the error is within


def test_a_scale_tolerance_without_derivation_is_refused(monkeypatch):
    from proofs_check.verdicts.registry import CLAIMS, load_checks
    from proofs_check.verdicts.scale_run import ScaleRun
    from proofs_check.runners.scale import run_scale_claim

    load_checks()
    form = CLAIMS["2.4"].matrix_free

    def underived(run):
        result = form(run)
        result.numeric.derivations = []
        return result

    monkeypatch.setattr(CLAIMS["2.4"], "matrix_free", underived)
    entry = run_scale_claim("2.4", ScaleRun("toy"))
    assert entry["status"] == "failed" and "carries no derivation" in entry["detail"]


# ---- 4. generated functions: exercised, and failing by a number ---------------------------------
def _half_dropped(monkeypatch):
    from numerics.generated import stability as gen

    monkeypatch.setattr(gen, "symmetric_part", lambda F: F + F.mT)


def test_5_1_refuses_a_log_norm_without_its_half(monkeypatch):
    """m(F) doubled: the generated log-norm misses numpy's by |m(F)|/‖F‖ = O(0.1–1) ≫ 10·n·u."""
    _half_dropped(monkeypatch)
    entry = run_claim("5.1", CheckContext())
    assert entry["status"] == "failed" and "traceback" not in entry
    assert entry["generated_calls"]["numerics.generated.stability.symmetric_part"] > 0   # 5.1 now uses it
    row = next(r for r in entry["numeric"]["table"] if r.get("part", "").startswith("continuous depth"))
    assert row["log_norm_vs_numpy / tol"] > 1e12


def test_5_2_fails_by_a_number_on_a_log_norm_without_its_half(monkeypatch):
    """The aligned continuous bound μ/κ doubles: |(μ/κ)/g*_RH − 1| = 1 (predicted exactly), and the control
    reports the non-Hurwitz draws instead of raising."""
    _half_dropped(monkeypatch)
    entry = run_claim("5.2", CheckContext())
    assert entry["status"] == "failed" and "traceback" not in entry
    cont = next(r for r in entry["numeric"]["table"] if r["part"] == "2×2 aligned continuous")
    assert abs(cont["max |(μ/κ)/g*_RH − 1|"] - 1.0) <= 1e-9
    assert entry["control"]["status"] == "did-not-fail" and "not Hurwitz" in entry["control"]["detail"]


def test_every_declared_generated_function_of_5_2_is_called():
    entry = run_claim("5.2", CheckContext())
    assert entry["status"] == "verified", entry.get("detail")
    assert all(n > 0 for n in entry["generated_calls"].values()), entry["generated_calls"]
    assert "numerics.generated.stability.symmetric_part" in entry["generated_calls"]


def test_a_declared_generated_function_never_called_is_refused(monkeypatch):
    """5.2 declaring a formula its check does not use (the MLP stage factor of 5.1's stacks): refused, named."""
    unused = "numerics.generated.stability.mlp_stage_factor"
    monkeypatch.setattr(CLAIMS["5.2"], "generated", [*CLAIMS["5.2"].generated, unused])
    entry = run_claim("5.2", CheckContext())
    assert entry["status"] == "failed" and entry["generated_calls"][unused] == 0
    assert f"declared generated function {unused} was never called" in entry["detail"]


# ---- 6. 4.1 as weight perturbations ----------------------------------------------------------------
def _weight_rows(entry):
    return [r for r in entry["numeric"]["table"] if "Δ(J·v) (rel.)" in r]


def test_4_1_refuses_w_v_perturbed_instead_of_w_q_w_k(monkeypatch):
    """The value weights moved in W_Q, W_K's place: X_L and J·v change at O(1), ≫ 2γκ ≈ 1e-13, and 4.1 fails."""
    from numerics.families import weight_visibility as WV
    perturbed = WV.perturbed_parameters
    monkeypatch.setattr(WV, "perturbed_parameters", lambda st, leaves, seed, eps=1.0: perturbed(st, ("W_V",), seed, eps))
    entry = run_claim("4.1", CheckContext())
    assert entry["status"] == "failed"
    assert all(r["Δ(J·v) (rel.)"] > 1e6 * r["2γκ"] for r in _weight_rows(entry))


def test_4_1_refuses_a_weight_check_measured_off_the_reference(monkeypatch):
    """The weight change measured at a state of spread ≈ 1e-4 instead of 1x̄ᵀ: J·v moves at first order, c₁·1e-4
    ≫ 2γκ, and 4.1 fails; the unmutated check passes (the ledger's own run, test_visibility)."""
    from numerics.families import weight_visibility as WV
    from numerics.text.reach import at_spread, centred_direction, token_mean

    change = WV.weight_change
    g = torch.Generator().manual_seed(0)

    def off(st, X, v, moved):
        return change(st, at_spread(token_mean(X), centred_direction(torch.randn(X.shape, generator=g,
                                                                                 dtype=X.dtype)), 1e-4), v, moved)

    monkeypatch.setattr(WV, "weight_change", off)
    entry = run_claim("4.1", CheckContext())
    assert entry["status"] == "failed"
    assert all(r["Δ(J·v) (rel.)"] > 1e3 * r["2γκ"] for r in _weight_rows(entry))


# ---- 7. Monte Carlo rows sized by power -------------------------------------------------------------
def test_7_2_sample_size_is_the_power_calculation():
    """n from ((z + z_β)·sd/δ)² for the binding row (P − 1 in c = s² + σ²/P): δ = σ²/(P(P−1)) = 1/28,
    sd = √2·(1 + 2/8), z = 3.5, z_β = Φ⁻¹(0.99) = 2.3263: n = ⌈(5.8263·1.7678·28)²⌉ = 83,169 (by hand)."""
    from numerics.families import emissions as ne
    design = ne.gated_risk_power(1.0, 2.0, 8, 2, (0.0, 0.5, 0.9), 3.5, 0.99)
    assert design["binding"]["coefficient"] == "c" and abs(design["binding"]["delta"] - 1 / 28) < 1e-15
    assert abs(design["n"] - (5.8263479 * math.sqrt(2) * 1.25 * 28) ** 2) < 2


def test_ledger_7_2_refuses_a_block_count_off_by_one_in_the_gated_risk(monkeypatch):
    """σ²/(P − 1) for σ²/P in Var x̄_{b−1} (R(g) moves by g²·σ²/(P(P−1)) = 0.036 g²): within the Monte Carlo
    noise of R(g) at 40,000 sequences, refused by the g² coefficient at the power-sized n (z ≈ 5.8 predicted,
    > 3.5 at each of the three ρ with probability 0.99)."""
    from numerics.generated import emissions as gen

    gated = gen.gated_risk
    monkeypatch.setattr(gen, "gated_risk", lambda g, rho, s2, sigma2, P, k: gated(g, rho, s2, sigma2, P - 1, k))
    entry = run_claim("7.2", CheckContext())
    assert entry["status"] == "failed"
    rows = [r for r in entry["numeric"]["table"] if r["kind"] == "mc-gated-risk-coefficient[c]"]
    assert len(rows) == 3 and all(r["z"] > 3.5 for r in rows)
    assert all(abs(r["theory"] - r["mc"] - 1 / 28) < 4 * r["se"] for r in rows)   # moved by the predicted δ


# ---- 8. cross-checks of the default ledger: the GPT-2 mapping, the matrix-free forms at --scale toy -----------
def _knobs_with_wrong_eps_key(monkeypatch):
    from numerics.storage import hf_gpt2 as hf
    knobs = hf.stack_knobs
    monkeypatch.setattr(hf, "stack_knobs", lambda config: {**knobs(config),
                                                            "ln_eps": float(config.get("layer_norm_eps", 1e-5))})


@pytest.mark.parametrize("mistake", ["eps-key", "activation", "bias-fold"])
def test_gpt2_mapping_check_refuses_a_mapping_mistake(monkeypatch, mistake):
    """ε read from a wrong config key (so 1e-5, not the config's 0.05), gelu_new mapped to the erf GELU, b_V not
    folded into b_O: each moves the imported states by ≥ 9e-5 relative (the controls' gaps), ≫ 2n·u ≈ 5e-14."""
    from numerics.storage import hf_gpt2 as hf
    from proofs_check.claims.hf_mapping import mapping_check

    assert mapping_check()["status"] == "verified"
    if mistake == "eps-key":
        _knobs_with_wrong_eps_key(monkeypatch)
    elif mistake == "activation":
        monkeypatch.setitem(hf.ACTIVATIONS, "gelu_new", "gelu")
    else:
        weights = hf.layer_weights

        def unfolded(tensors, ell, heads):
            out = weights(tensors, ell, heads)
            return {**out, "attn.b_O": tensors[f"h.{ell}.attn.c_proj.bias"]}

        monkeypatch.setattr(hf, "layer_weights", unfolded)
    bad = mapping_check()
    assert bad["status"] == "failed" and bad["max_error"] > 1e6


def test_ledger_2_1_refuses_a_wrong_epsilon_key(monkeypatch):
    """fastslow check alone: 2.1's entry carries the GPT-2 mapping cross-check, which refuses the wrong ε key."""
    _knobs_with_wrong_eps_key(monkeypatch)
    entry = run_claim("2.1", CheckContext())
    assert entry["status"] == "failed" and "cross-check GPT-2 mapping" in entry["detail"]
    assert [c["status"] for c in entry["cross_checks"] if c["name"].startswith("GPT-2")] == ["failed"]


def test_ledger_2_3_refuses_a_reused_seed_in_the_scale_forms(monkeypatch):
    """The scale forms' adjoint check with V drawn from U's seed: only --scale toy saw it before; now 2.3's
    default ledger entry runs its matrix-free form at the toy preset and is refused."""
    from proofs_check.verdicts.scale_run import ScaleRun

    probe = ScaleRun.probe
    monkeypatch.setattr(ScaleRun, "probe", lambda self, k=1, seed=0: probe(self, k, seed=21 if seed == 22 else seed))
    entry = run_claim("2.3", CheckContext())
    assert entry["status"] == "failed" and "cross-check matrix-free form at --scale toy is failed" in entry["detail"]


def test_a_raising_toy_form_makes_the_entry_an_error_not_failed(monkeypatch):
    """A matrix-free form that raises is no evidence either way: 2.4's entry is an error naming it."""
    def raising(run):
        raise RuntimeError("boom")

    monkeypatch.setattr(CLAIMS["2.4"], "matrix_free", raising)
    entry = run_claim("2.4", CheckContext())
    assert entry["status"] == "error" and "cross-check matrix-free form at --scale toy raised" in entry["detail"]
    assert "boom" in entry["detail"]



# ---- 4b. the matrix-free forms against the dense forms, number by number ----------------------------------
_FORMS = ["1.2", "2.1", "2.2", "2.3", "2.4", "3.2", "4.2", "5.1"]


@pytest.mark.parametrize("claim_id", _FORMS)
def test_toy_forms_agree_with_the_dense_forms_number_by_number(claim_id):
    """Negative control of the tests below: unmutated, every number a toy form computed is within its
    derived tolerance of the dense route's (errors ~1e-15 against tolerances ~1e-13)."""
    from proofs_check.runners.scale import run_scale_claim
    from proofs_check.runners.scale_dense import scale_vs_dense
    from proofs_check.verdicts.scale_run import ScaleRun

    run = ScaleRun("toy")
    entry = run_scale_claim(claim_id, run)
    record = scale_vs_dense(claim_id, run, entry)
    assert entry["status"] == "verified" and record["status"] == "verified", record["detail"]
    assert record["rows"] and record["max_error"] <= 1.0


def _operator_norm_squared(monkeypatch):
    """Source mutant ``scale-operator-norm-squared``: the power iteration reports σ² as ‖M‖₂."""
    from numerics.linearised import matrix_free as mf
    norm = mf.operator_norm
    monkeypatch.setattr(mf, "operator_norm", lambda *a, **k: (lambda r: (r[0] * r[0], r[1]))(norm(*a, **k)))


@pytest.mark.parametrize("claim_id", ["2.3", "3.2"])
def test_ledger_refuses_a_squared_operator_norm_the_form_itself_accepts(monkeypatch, claim_id):
    """3.2 reads a ratio of two such norms and 2.3 a lower bound: the form stays verified (self-consistent),
    and the ledger refuses the claim because ‖J‖₂ exceeds the dense SVD's (32.7 against 5.72 at the toy
    preset; tolerance (2γ + T·d·u)·‖|J|‖₂ ≈ 2e-13)."""
    _operator_norm_squared(monkeypatch)
    entry = run_claim(claim_id, CheckContext())
    records = {c["name"]: c for c in entry["cross_checks"]}
    assert records["matrix-free form at --scale toy"]["status"] == "verified"
    dense = records["scale form vs dense form at --scale toy"]
    assert dense["status"] == "failed" and "‖J‖₂" in dense["detail"]
    assert entry["status"] == "failed" and "cross-check scale form vs dense form" in entry["detail"]


@pytest.mark.parametrize("mistake", ["step-halved", "maps-swapped"])
def test_ledger_5_1_refuses_a_certificate_the_form_itself_accepts(monkeypatch, mistake):
    """Source mutants ``scale-gate-certificate-step-halved`` (μ and g* doubled: an unsafe bound) and
    ``…-maps-swapped`` (‖G_ℓ‖ and ‖K_ℓ‖ in the wrong order): the form's guard tests the gated product below
    its own g* and stays verified; the dense certificate's enclosures do not overlap the form's."""
    import types

    import proofs_check.claims.stability.matrix_free as form
    from numerics.families import stability as ns
    certify = ns.certify_gate_bound
    wrong = {"step-halved": lambda a, k, h, **kw: certify(a, k, h / 2, **kw),
             "maps-swapped": lambda a, k, h, **kw: certify(k, a, h, **kw)}[mistake]
    proxy = types.SimpleNamespace(**{n: getattr(ns, n) for n in dir(ns) if not n.startswith("__")})
    proxy.certify_gate_bound = wrong            # the form's own call only: the dense certificate is untouched
    monkeypatch.setattr(form, "ns", proxy)
    entry = run_claim("5.1", CheckContext())
    records = {c["name"]: c for c in entry["cross_checks"]}
    assert records["matrix-free form at --scale toy"]["status"] == "verified"
    dense = records["scale form vs dense form at --scale toy"]
    assert dense["status"] == "failed" and "g* enclosure" in dense["detail"]
    rows = {r["quantity"]: r for r in dense["rows"]}
    assert rows["g* enclosure"]["error"] > 0.1 * rows["g* enclosure"]["dense"]   # disjoint by far, not by rounding
    assert entry["status"] == "failed" and "cross-check scale form vs dense form" in entry["detail"]

# ---- 5. time limits -------------------------------------------------------------------------------
def _hang(*args, **kwargs):
    while True:
        try:
            time.sleep(0.01)
        except Exception:   # SymPy-style broad handlers must not swallow the time limit
            pass


def test_a_hanging_symbolic_step_is_refused_not_awaited(monkeypatch):
    from theory import stability as th

    original = th.aligned_product_norm_identity
    monkeypatch.setattr(th, "aligned_product_norm_identity", _hang)
    start = time.perf_counter()
    entry = run_claim("5.2", CheckContext(step_seconds=1.0))
    assert time.perf_counter() - start < 30      # the step stops at 1 s (plus the check's other steps)
    assert entry["status"] == "failed" and "traceback" not in entry
    assert entry["detail"] == ("refused: symbolic step theory.stability.aligned_product_norm_identity did not "
                               "finish within 1 s")
    assert entry["symbolic"]["list"][0]["method"] == "timeout"
    monkeypatch.undo()
    assert th.aligned_product_norm_identity is original   # the limit's wrappers are gone after the check


def test_a_hanging_simplify_in_a_worker_thread_is_refused(monkeypatch):
    """Off the main thread (a Dask worker's task thread, where signal.alarm cannot be used)."""
    import sympy

    monkeypatch.setattr(sympy, "simplify", _hang)
    out = {}
    worker = threading.Thread(target=lambda: out.update(entry=run_claim("5.2", CheckContext(step_seconds=1.0))))
    worker.start()
    worker.join(60)
    assert not worker.is_alive()
    entry = out["entry"]
    assert entry["status"] == "failed" and entry["detail"].endswith("did not finish within 1 s")


def test_a_step_within_its_limit_is_not_interrupted():
    from proofs_check.timeouts import StepTimeout, deadline

    with deadline(2.0, "quick step"):
        time.sleep(0.05)
    time.sleep(0.1)        # nothing is delivered after the block ended
    with pytest.raises(StepTimeout, match="slow step did not finish within 0.2 s"):
        with deadline(0.2, "slow step"):
            _hang()


def test_a_mutant_past_its_time_limit_is_refused(monkeypatch):
    """fastslow mutate: a theory mutant whose ledger run exceeds the limit is killed, with the reason."""
    from proofs_check.mutation import hand_written_theory as mutants
    monkeypatch.setattr(mutants, "MUTANT_SECONDS", 0.5)   # less than the interpreter's start
    result = mutants.run_one("log-norm-half-dropped", run_tests=False)
    assert result["killed_by"] == "refused: the ledger check of 5.1 did not finish within 0.5 s (timeout)"
