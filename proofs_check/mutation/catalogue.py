"""The catalogue of theory mutants outside the factorisation family (see proofs_check/mutation/hand_written_theory.py).

Each entry names the theory function it replaces and builds the wrong derivation from
the module's own symbols, so that the mistake is exactly the one described.
"""

from __future__ import annotations

import importlib


def _mod(name):
    return importlib.import_module(f"theory.{name}")


def mutants(Mutant) -> list:
    import sympy as sp

    cg, st, sm, em, vis = "coarse_graining", "stability", "slow_manifold", "emissions", "visibility"
    return [
        # ---- 3.x coarse-graining -----------------------------------------------------------
        Mutant("left-residual-lift-for-pool", "3.2", "Π⁺ for Π: the factoring residual written Π⁺ᵀM(I − Q)",
               f"theory.{cg}:left_factoring_residual_expr",
               lambda orig: (lambda op=None: (lambda m, o: m.Pi_plus.T * o - m.Pi_plus.T * o * m.Pi_plus * m.Pi)(
                   _mod(cg), _mod(cg).M if op is None else op))),
        # (Π⁺ᵀ M Πᵀ would be equivalent: Π⁺ᵀ = PΠ and Πᵀ = Π⁺/P.)
        Mutant("coarse-operator-unnormalised", "3.2", "J_c = Π⁺ᵀ M Π⁺: pooling by block sums, not block means",
               f"theory.{cg}:coarse_operator_expr",
               lambda orig: (lambda op=None: (lambda m, o: m.Pi_plus.T * o * m.Pi_plus)(
                   _mod(cg), _mod(cg).M if op is None else op))),
        Mutant("two-sided-one-sided", "3.2", "the two-sided residual M − QMQ written one-sided, M − QM",
               f"theory.{cg}:two_sided_residual_expr",
               lambda orig: (lambda op=None: (lambda m, o: o - m.Pi_plus * m.Pi * o)(
                   _mod(cg), _mod(cg).M if op is None else op))),
        Mutant("saturation-bound-inverted", "3.1", "the saturation bound with log(κ/τ) for log(τ/κ)",
               f"theory.{cg}:saturation_bound_expr",
               lambda orig: (lambda: (lambda m: sp.ceiling(sp.log(m.kappa / m.tau) / sp.log(m.rho)))(_mod(cg)))),
        # ---- 4.x visibility ----------------------------------------------------------------------
        Mutant("response-right-eigenvector", "4.1", "the right eigenvector 1/T used where the left one w belongs",
               f"theory.{vis}:first_order_response_expr",
               lambda orig: (lambda G=None, offset=None, left=None: (lambda m: (
                   (m.G1 if G is None else G) * (m.p if offset is None else offset).T
                   * sp.OneMatrix(m.T, 1) / m.T))(_mod(vis)))),
        Mutant("gate-sensitivity-no-h", "4.2", "∂x̄_L/∂g without the depth step h",
               f"theory.{vis}:gate_sensitivity_expr",
               lambda orig: (lambda: orig() / _mod(vis).h)),
        Mutant("injection-unshifted", "4.2", "the slow output lifted without the one-block shift (s = Π⁺1)",
               f"theory.{vis}:injection_pattern_expr",
               lambda orig: (lambda: (lambda m: m.Pi_plus * sp.OneMatrix(m.n, 1))(_mod(vis)))),
        # ---- 5.x stability -----------------------------------------------------------------------
        Mutant("log-growth-linearised", "5.1", "the stability root with log(a) + g b for log(a + g b)",
               f"theory.{st}:layer_log_growth",
               lambda orig: (lambda: (lambda m: sp.log(m.a) + m.h * m.g * m.k)(_mod(st)))),
        Mutant("margin-sign", "5.1", "the stability margin with the wrong sign, +(1/(Lh)) Σ log‖G_ℓ‖",
               f"theory.{st}:layer_margin_term",
               lambda orig: (lambda: -orig())),
        Mutant("gate-bound-times-mean", "5.1", "g* ≈ μ · mean‖K‖ for μ / mean‖K‖",
               f"theory.{st}:small_h_gate_bound",
               lambda orig: (lambda: (lambda m: m.mu * m.q)(_mod(st)))),
        Mutant("log-norm-half-dropped", "5.1", "the log-norm's symmetric part written F + Fᵀ (the ½ dropped)",
               f"theory.{st}:symmetric_part_expr",
               lambda orig: (lambda F: F + F.T)),
        # ---- 6.x slow manifold -------------------------------------------------------------------
        Mutant("phi1-wrong-order", "6.1", "a slow-manifold term of the wrong order: φ₁ carried with ε² for ε",
               f"theory.{sm}:SlowManifoldExpansion.truncated",
               lambda orig: _phi1_wrong_order(orig)),
        Mutant("pst-from-Q", "6.2", "p_st taken from the nullspace of Q instead of Qᵀ",
               f"theory.{sm}:stationary_distribution",
               lambda orig: (lambda Q: _stationary_from_Q(orig, Q))),
        Mutant("flops-scores-half", "6.3", "attention scores counted but not the mixing (2T²d for 4T²d)",
               f"theory.{sm}:attention_flops",
               lambda orig: (lambda T, d: {"projections": 8 * T * d ** 2, "scores_mixing": 2 * T ** 2 * d})),
        Mutant("clock-rate-squared", "6.4", "the depth clock with λ² for λ: mode λ contracting at rate 1 − λ²",
               "theory.depth_slow_manifold:clock_factor_expr",
               lambda orig: (lambda: (lambda m: m.lam ** 2 + (1 - m.lam ** 2) * (1 - m.h * m.alpha) / m.growth)(
                   _mod("depth_slow_manifold")))),
        Mutant("clock-decay-dropped", "6.4", "the depth clock without the residual decay's factor 1 − hα",
               "theory.depth_slow_manifold:clock_factor_expr",
               lambda orig: (lambda: (lambda m: m.lam + (1 - m.lam) / m.growth)(_mod("depth_slow_manifold")))),
        # ---- 5.3 gate bounds ---------------------------------------------------------------------
        Mutant("det-root-dropped", "5.3", "the determinant bound ‖P‖ ≥ |det P| without the 1/N root",
               "theory.gate_bounds:det_norm_bound_expr",
               lambda orig: (lambda: sp.exp(_mod("gate_bounds").S))),
        # ---- 7.x emissions -----------------------------------------------------------------------
        Mutant("posterior-block-sum", "7.1", "a posterior using the block sum where the block mean belongs",
               f"theory.{em}:gaussian_posterior_mean_expr",
               lambda orig: (lambda tb=None: orig((_mod(em).tbar if tb is None else tb) * _mod(em).P))),
        Mutant("posterior-var-one-token", "7.1", "the posterior variance after one token instead of P",
               f"theory.{em}:gaussian_posterior_var_expr",
               lambda orig: (lambda: (lambda m: 1 / (1 / m.v0 + 1 / m.sigma2))(_mod(em)))),
        Mutant("kalman-wrong-variance", "7.2", "the Kalman prediction with the prior variance v for the posterior one",
               f"theory.{em}:riccati_step_expr",
               lambda orig: (lambda: _mod(em).ar1_predict_var_expr())),
        Mutant("gain-wrong-variance", "7.2", "the current-block gain with σ² and s² swapped",
               f"theory.{em}:current_block_gain_expr",
               lambda orig: (lambda: (lambda m: (m.k / m.s2) / (1 / m.sigma2 + m.k / m.s2))(_mod(em)))),
        Mutant("ar1-rho-not-squared", "7.2", "AR(1) variance propagation with ρ for ρ²",
               f"theory.{em}:ar1_predict_var_expr",
               lambda orig: (lambda: (lambda m: m.rho * m.v + (1 - m.rho) * m.s2)(_mod(em)))),
        Mutant("gated-risk-block-count-off-by-one", "7.2",
               "Var x̄_{b−1} = s² + σ²/(P − 1) in the gated risk R(g) (its g² term off by σ²/(P(P−1)): only the "
               "Monte Carlo rows see it)", f"theory.{em}:gated_risk_expr",
               lambda orig: (lambda: orig().subs(_mod(em).P, _mod(em).P - 1))),
    ]


def _phi1_wrong_order(orig):
    """φ^{(k)} = φ₀ + ε²φ₁ + ε²φ₂ + …: the first-order term summed at the wrong order."""
    def truncated(self, k):
        phi = orig(self, k)
        EPS = _mod("slow_manifold").EPS
        return phi + (EPS ** 2 - EPS) * self.terms[1] if k >= 1 else phi
    return truncated


def _stationary_from_Q(orig, Q):
    """The normalised nullspace of Q (right, not left): 1/n for every generator."""
    import sympy as sp

    result = orig(Q)
    if not result.unique:
        return result
    v = Q.nullspace(simplify=True)[0]
    return type(result)(v / sum(v), 1, True, result.detail)
