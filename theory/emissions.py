"""Data side: exponential-family blocks (docs/theory.md §7, claims 7.1–7.3).

Tokens in block b are i.i.d. from an exponential family in natural-parameter form,
p(x | η_b) = h(x) exp(η_bᵀ T(x) − A(η_b)).

Claim 7.1 (sufficiency).  The block mean t̄ = (1/P) Σ_i T(x_i) is sufficient for η_b
(factorisation theorem): the block log-likelihood is Σ log h(x_i) + P ηᵀt̄ − P A(η), so
two blocks with equal t̄ have a likelihood ratio free of η, and the posterior from the
whole block equals the conjugate posterior computed from t̄ alone.  Proved here for
symbolic block length P (SymPy ``Sum`` over i = 1..P) for a generic family and for
the Gaussian (known variance), Bernoulli, Poisson and categorical (K = 3) families.
Control: the block *maximum* is not sufficient; its likelihood is derived here
(order statistics) so that the check can measure how far its posterior moves.

Claim 7.2 (no shared structure).  Gaussian blocks x_{b,i} = μ_b + σ ε, with μ_b a
stationary AR(1) chain of variance s² and correlation ρ.  The predictive risk of the
next token given k tokens of the current block and a prior variance v is
σ² + 1/(1/v + k/σ²); the Kalman (Riccati) recursion over complete blocks gives the
prior variance from the history; its stationary point is derived in closed form.  At
ρ = 0 the history leaves the prior at s², and the risk reduction is 0 identically.
For the gated predictor ŷ_g = m_cur + g·x̄_{b−1} the risk R(g) is derived from the
covariances; dR/dg at g = 0 is −2ρ s² (1 − λ_k), zero exactly when ρ = 0.

Claim 7.3 data (categorical).  M topics θ_1..θ_M (categorical over V tokens); the
block topic z_b follows the Markov-switching chain "keep z_{b−1} with probability ρ,
else redraw uniformly": its one-hot indicator is a discrete AR(1),
E[e_{z_b} | z_{b−1}] = ρ e_{z_{b−1}} + (1 − ρ)/M.  The exact forward filter gives the
Bayes-optimal next-token loss; at ρ = 0 the transition forgets its input exactly.
"""

from __future__ import annotations

import sympy as sp
from sympy import (Function, IndexedBase, KroneckerDelta, Matrix, MatrixSymbol, Sum, Symbol,
                   diff, erf, exp, log, loggamma, pi, simplify, sqrt)

FAMILY = "emissions"
FAMILIES = ("gaussian", "bernoulli", "poisson", "categorical")
CATEGORICAL_K = 3

# ---------------------------------------------------------------- symbols
P = Symbol("P", integer=True, positive=True)       # block length
k = Symbol("k", integer=True, nonnegative=True)    # tokens of the current block seen so far
i = Symbol("i", integer=True, positive=True)
x = IndexedBase("x")                               # block 1
y = IndexedBase("y")                               # block 2
tbar = Symbol("tbar", real=True)                   # block mean of T(x)
eta = Symbol("eta", real=True)
sigma2 = Symbol("sigma2", positive=True)           # token noise variance (Gaussian)
s2 = Symbol("s2", positive=True)                   # stationary variance of the block mean μ_b
v = Symbol("v", positive=True)                     # a prior variance
rho = Symbol("rho", real=True)
g = Symbol("g", real=True)
mu, m0, v0 = Symbol("mu", real=True), Symbol("m0", real=True), Symbol("v0", positive=True)
p_ = Symbol("p", positive=True)                    # Bernoulli mean
lam = Symbol("lam", positive=True)                 # Poisson mean
a, b = Symbol("a", positive=True), Symbol("b", positive=True)
xs = Symbol("x", real=True)                        # one token
mmax = Symbol("m", real=True)                      # a block maximum
q, M = Symbol("q", nonnegative=True), Symbol("M", integer=True, positive=True)
lag = Symbol("lag", integer=True, nonnegative=True)


# ---------------------------------------------------------------- 7.1 families
def family(name: str) -> dict:
    """Natural-parameter form of one family: η(θ), T, A(η), log h, the token log-pdf in
    the mean parameter θ, and the conjugate prior / posterior (log-density and update).

    Scalar families have one natural parameter; the categorical family has K = 3,
    η_k = log θ_k with θ_3 = 1 − θ_1 − θ_2, T(x)_k = [x = k], A = log Σ_k e^{η_k}.
    """
    if name == "gaussian":
        return dict(theta=[mu], eta=[mu / sigma2], T=[lambda t: t],
                    A=lambda e: sigma2 * e[0] ** 2 / 2,
                    logh=lambda t: -t ** 2 / (2 * sigma2) - log(2 * pi * sigma2) / 2,
                    token_logpdf=-(xs - mu) ** 2 / (2 * sigma2) - log(2 * pi * sigma2) / 2,
                    prior_logpdf=normal_logpdf(mu, m0, v0),
                    posterior_logpdf=lambda tb: normal_logpdf(
                        mu, gaussian_posterior_mean_expr(tb), gaussian_posterior_var_expr()))
    if name == "bernoulli":
        return dict(theta=[p_], eta=[log(p_ / (1 - p_))], T=[lambda t: t],
                    A=lambda e: log(1 + exp(e[0])), logh=lambda t: sp.Integer(0),
                    token_logpdf=xs * log(p_) + (1 - xs) * log(1 - p_),
                    prior_logpdf=beta_logpdf(p_, a, b),
                    posterior_logpdf=lambda tb: beta_logpdf(p_, a + P * tb, b + P * (1 - tb)))
    if name == "poisson":
        return dict(theta=[lam], eta=[log(lam)], T=[lambda t: t], A=lambda e: exp(e[0]),
                    logh=lambda t: -loggamma(t + 1),
                    token_logpdf=xs * log(lam) - lam - loggamma(xs + 1),
                    prior_logpdf=gamma_logpdf(lam, a, b),
                    posterior_logpdf=lambda tb: gamma_logpdf(lam, a + P * tb, b + P))
    if name == "categorical":
        th = sp.symbols("theta1:3", positive=True)
        theta = [th[0], th[1], 1 - th[0] - th[1]]
        alpha = sp.symbols("alpha1:4", positive=True)
        return dict(theta=list(th), eta=[log(t) for t in theta],
                    T=[(lambda t, kk=kk: KroneckerDelta(t, kk)) for kk in range(CATEGORICAL_K)],
                    A=lambda e: log(sum(exp(ek) for ek in e)), logh=lambda t: sp.Integer(0),
                    token_logpdf=None,  # log θ_x: a table lookup, checked through T and A
                    prior_logpdf=dirichlet_logpdf(theta, alpha),
                    posterior_logpdf=lambda tb: dirichlet_logpdf(
                        theta, [al + P * t for al, t in zip(alpha, tb)]))
    raise ValueError(f"family={name!r} is not one of {', '.join(FAMILIES)}")


def normal_logpdf(t, m, var):
    return -(t - m) ** 2 / (2 * var) - log(2 * pi * var) / 2


def beta_logpdf(t, a_, b_):
    return (a_ - 1) * log(t) + (b_ - 1) * log(1 - t) - loggamma(a_) - loggamma(b_) + loggamma(a_ + b_)


def gamma_logpdf(t, shape, rate):
    return shape * log(rate) - loggamma(shape) + (shape - 1) * log(t) - rate * t


def dirichlet_logpdf(theta, alpha):
    return (loggamma(sum(alpha)) - sum(loggamma(al) for al in alpha)
            + sum((al - 1) * log(t) for al, t in zip(alpha, theta)))


def gaussian_posterior_var_expr():
    return 1 / (1 / v0 + P / sigma2)


def gaussian_posterior_mean_expr(tb=tbar):
    return gaussian_posterior_var_expr() * (m0 / v0 + P * tb / sigma2)


def block_loglik(name: str, block, tbars) -> sp.Expr:
    """Σ_i log h(x_i) + η·Σ_i T(x_i) − P A(η), with Σ_i T(x_i) replaced by P t̄ (symbolic P)."""
    fam = family(name)
    eta_ = fam["eta"]
    loglik = Sum(fam["logh"](block[i]), (i, 1, P)) - P * fam["A"](eta_)
    for e, tb in zip(eta_, tbars):
        loglik += e * P * tb  # = η_k Σ_i T_k(block_i) on the event t̄_k(block) = tb
    return loglik


def _tbars(name):
    if name == "categorical":
        return list(sp.symbols("pbar1:4", nonnegative=True))
    return [tbar]


def proof_natural_form(name: str) -> bool:
    """h(x) exp(ηT(x) − A(η)) is the family's token density in its mean parameter θ."""
    fam = family(name)
    if fam["token_logpdf"] is None:  # categorical: A(η(θ)) = log Σθ_k = 0 and ηᵀT(k) = log θ_k
        ok = simplify(fam["A"](fam["eta"])) == 0
        for kk in range(CATEGORICAL_K):
            nat = sum(e * T_k(kk) for e, T_k in zip(fam["eta"], fam["T"]))
            ok = ok and simplify(exp(nat) - [*fam["theta"], 1 - sum(fam["theta"])][kk]) == 0
        return bool(ok)
    nat = fam["logh"](xs) + fam["eta"][0] * fam["T"][0](xs) - fam["A"](fam["eta"])
    density_ratio = exp(nat - fam["token_logpdf"])
    return simplify(sp.expand_log(sp.factor(sp.together(density_ratio)), force=True)) == 1


def proof_sum_of_T(name: str) -> bool:
    """The explicit block log-density Σ_i log p(u_i | θ) (mean-parameter form) minus
    P η t̄ − P A(η) with t̄ = Σ_i u_i / P is free of θ, for P = 1..6 written out: the
    data enter only through Σ_i T(u_i).  (Scalar families; categorical via ``proof_natural_form``.)"""
    fam = family(name)
    if fam["token_logpdf"] is None:
        raise ValueError(f"family={name!r}: T is a table lookup, use proof_natural_form")
    ok = True
    for Pn in range(1, 7):
        toks = sp.symbols(f"u0:{Pn}", real=True)
        full = sum(fam["token_logpdf"].subs(xs, t) for t in toks)
        stat = fam["eta"][0] * sum(toks) - Pn * fam["A"](fam["eta"])
        ok = ok and all(simplify(sp.expand_log(diff(full - stat, th), force=True)) == 0
                        for th in fam["theta"])
    return bool(ok)


def proof_likelihood_ratio(name: str) -> bool:
    """Factorisation theorem, symbolic P: for two blocks with equal t̄ the likelihood
    ratio divided by Π h(x_i)/Π h(y_i) simplifies to 1 (so it is free of η)."""
    tbs = _tbars(name)
    fam = family(name)
    ratio = exp(block_loglik(name, x, tbs) - block_loglik(name, y, tbs)
                - Sum(fam["logh"](x[i]), (i, 1, P)) + Sum(fam["logh"](y[i]), (i, 1, P)))
    return simplify(ratio) == 1


def proof_generic_factorisation() -> bool:
    """The same for a generic family (undefined h, T, A): d/dη log[L(x|η)/L(y|η)] = 0."""
    h_, T_, A_ = Function("h"), Function("T"), Function("A")
    sum_T = Symbol("S", real=True)  # Σ_i T(x_i) = Σ_i T(y_i) = S = P t̄
    ll_x = Sum(log(h_(x[i])), (i, 1, P)) + eta * sum_T - P * A_(eta)
    ll_y = Sum(log(h_(y[i])), (i, 1, P)) + eta * sum_T - P * A_(eta)
    return simplify(diff(ll_x - ll_y, eta)) == 0


def proof_conjugate_posterior(name: str) -> bool:
    """log prior(θ) + block log-likelihood − log conjugate posterior(θ | t̄) is free of θ:
    the normalised posterior from the whole block *is* the conjugate posterior from t̄."""
    fam = family(name)
    tbs = _tbars(name)
    if name == "categorical":
        # Σ_k p̄_k = 1: eliminate p̄_3
        sub = {tbs[2]: 1 - tbs[0] - tbs[1]}
        post = fam["posterior_logpdf"](tbs)
    else:
        sub = {}
        post = fam["posterior_logpdf"](tbs[0])
    resid = fam["prior_logpdf"] + block_loglik(name, x, tbs) - post
    resid = resid.subs(sub)
    return all(simplify(sp.expand_log(diff(resid, th), force=True)) == 0 for th in fam["theta"])


# ---------------------------------------------------------------- 7.1 control: block maximum
def gaussian_max_loglik_expr():
    """log density of max(x_1..x_P) for N(μ, σ²) tokens: d/dm Φ((m−μ)/σ)^P."""
    z = (mmax - mu) / sqrt(sigma2)
    cdf = (1 + erf(z / sqrt(2))) / 2
    return log(diff(cdf ** P, mmax))


def bernoulli_max_loglik_expr():
    """log P(max = m | p), m ∈ {0, 1}: P(max = 0) = (1 − p)^P."""
    p0 = (1 - p_) ** P
    return mmax * log(1 - p0) + (1 - mmax) * log(p0)


def proof_max_not_sufficient() -> bool:
    """The block max's log-likelihood is not of the form c(m) + η m P − P A(η): its
    second η-derivative depends on m (for the Bernoulli family at P = 2)."""
    e = Symbol("e", real=True)
    ll = bernoulli_max_loglik_expr().subs(p_, exp(e) / (1 + exp(e))).subs(P, 2)
    d2 = simplify(diff(ll, e, 2))
    return simplify(d2.subs(mmax, 0) - d2.subs(mmax, 1)) != 0


# ---------------------------------------------------------------- 7.2 Gaussian AR(1) blocks
def predictive_risk_expr():
    """E[(y − E[y | data])²] for the next token, k current tokens, prior variance v of μ_b."""
    return sigma2 + 1 / (1 / v + k / sigma2)


def riccati_step_expr():
    """Prior variance of μ_{b+1} from the prior variance v of μ_b after a full block of P
    tokens (conjugate update, then the AR(1) prediction ρ² v_post + (1 − ρ²) s²)."""
    v_post = 1 / (1 / v + P / sigma2)
    return ar1_predict_var_expr().subs(v, v_post)


def ar1_predict_var_expr():
    return rho ** 2 * v + (1 - rho ** 2) * s2


def stationary_prior_var_expr():
    """Positive fixed point v* of the Riccati map (the Kalman filter's steady-state prior)."""
    roots = sp.solve(sp.Eq(v, riccati_step_expr()), v)
    probe = {rho: sp.Rational(1, 2), s2: 1, sigma2: 1, P: 4}
    pos = [r for r in roots if r.subs(probe).evalf() > 0]
    if len(pos) != 1:
        raise ArithmeticError(f"expected one positive Riccati root, got {roots}")
    return sp.simplify(pos[0])


def proof_riccati_fixed_point() -> bool:
    """v* satisfies v = Riccati(v): the numerator of v − Riccati(v) vanishes at v*."""
    num = sp.numer(sp.together(v - riccati_step_expr()))
    return sp.expand(num.subs(v, stationary_prior_var_expr())) == 0


def risk_reduction_expr():
    """Risk given the current block alone minus risk given the whole (stationary) history."""
    r = predictive_risk_expr()
    return r.subs(v, s2) - r.subs(v, stationary_prior_var_expr())


def proof_no_reduction_when_independent() -> bool:
    """ρ = 0: the stationary prior variance is s² and the risk reduction is exactly 0."""
    return (simplify(stationary_prior_var_expr().subs(rho, 0) - s2) == 0
            and simplify(risk_reduction_expr().subs(rho, 0)) == 0)


def current_block_gain_expr():
    """λ_k: posterior mean of μ_b from k current tokens (prior mean 0, variance s²) is λ_k x̄."""
    return (k / sigma2) / (1 / s2 + k / sigma2)


def gated_risk_expr():
    """R(g) = E[(y − λ_k x̄_cur − g x̄_{b−1})²] from the stationary covariances:
    Var y = s² + σ², Cov(y, x̄_cur) = s², Var x̄_cur = s² + σ²/k, Cov(·, x̄_{b−1}) = ρ s²,
    Var x̄_{b−1} = s² + σ²/P.  Written with k ≥ 1 (λ_0 = 0 makes the x̄_cur terms vanish)."""
    lam_k = current_block_gain_expr()
    var_y, cov_y_cur, var_cur = s2 + sigma2, s2, s2 + sigma2 / k
    cov_prev = rho * s2
    var_prev = s2 + sigma2 / P
    return (var_y - 2 * lam_k * cov_y_cur + lam_k ** 2 * var_cur
            - 2 * g * (cov_prev - lam_k * cov_prev) + g ** 2 * var_prev)


def gate_slope_expr():
    """dR/dg at g = 0 for the gated predictor."""
    return diff(gated_risk_expr(), g).subs(g, 0)


def proof_gated_risk_consistent() -> bool:
    """R(0) equals the current-block predictive risk σ² + 1/(1/s² + k/σ²)."""
    return simplify(gated_risk_expr().subs(g, 0) - predictive_risk_expr().subs(v, s2)) == 0


def proof_gate_flat_when_independent() -> bool:
    """dR/dg at g = 0 is −2ρ s²(1 − λ_k): zero at ρ = 0, and the minimiser g* = 0 there."""
    slope = gate_slope_expr()
    closed = -2 * rho * s2 * (1 - current_block_gain_expr())
    g_star = sp.solve(diff(gated_risk_expr(), g), g)[0]
    return (simplify(slope - closed) == 0 and simplify(slope.subs(rho, 0)) == 0
            and simplify(g_star.subs(rho, 0)) == 0)


def ar1_token_cov_expr():
    """Cov(x_{b,i}, x_{b',j}) = s² ρ^|b−b'| (+ σ² on the diagonal, added by the caller's identity)."""
    return s2 * rho ** lag


# ---------------------------------------------------------------- 7.3 categorical topics
def topic_transition_expr():
    """Prior probability of topic z for the next block given filter probability q of z."""
    return rho * q + (1 - rho) / M


def proof_topic_chain_forgets_at_zero() -> bool:
    """ρ = 0: the next block's topic prior is 1/M whatever the filter says (d/dq = 0);
    the chain keeps the uniform distribution stationary for every ρ."""
    t = topic_transition_expr()
    return simplify(diff(t.subs(rho, 0), q)) == 0 and simplify(t.subs(q, 1 / M) - 1 / M) == 0


# ---------------------------------------------------------------- code generation
def generated_functions():
    from theory.codegen import GenFunction

    th1, th2 = sp.symbols("theta1:3", positive=True)
    al = sp.symbols("alpha1:4", positive=True)
    Sxx = MatrixSymbol("Sxx", Symbol("n", integer=True, positive=True),
                       Symbol("n", integer=True, positive=True))
    sxy = MatrixSymbol("sxy", Symbol("n", integer=True, positive=True), 1)
    syy = Symbol("syy", positive=True)
    return [
        GenFunction("gaussian_token_loglik", (xs, mu, sigma2), family("gaussian")["token_logpdf"], "7.1",
                    "log N(x; μ, σ²)."),
        GenFunction("bernoulli_token_loglik", (xs, p_), family("bernoulli")["token_logpdf"], "7.1",
                    "log p^x (1−p)^(1−x)."),
        GenFunction("poisson_token_loglik", (xs, lam), family("poisson")["token_logpdf"], "7.1",
                    "log Poisson(x; λ)."),
        GenFunction("normal_logpdf", (mu, m0, v0), normal_logpdf(mu, m0, v0), "7.1",
                    "log N(μ; m, v) (prior / posterior of the Gaussian mean)."),
        GenFunction("beta_logpdf", (p_, a, b), beta_logpdf(p_, a, b), "7.1", "log Beta(p; a, b)."),
        GenFunction("gamma_logpdf", (lam, a, b), gamma_logpdf(lam, a, b), "7.1",
                    "log Gamma(λ; shape a, rate b)."),
        GenFunction("dirichlet3_logpdf", (th1, th2, *al),
                    dirichlet_logpdf([th1, th2, 1 - th1 - th2], al), "7.1",
                    "log Dirichlet(θ1, θ2, 1−θ1−θ2; α1, α2, α3)."),
        GenFunction("gaussian_posterior_mean", (m0, v0, sigma2, P, tbar), gaussian_posterior_mean_expr(),
                    "7.1", "Posterior mean of μ from the block mean t̄ of P tokens (prior N(m0, v0))."),
        GenFunction("gaussian_posterior_var", (v0, sigma2, P), gaussian_posterior_var_expr(), "7.1",
                    "Posterior variance of μ after P tokens."),
        GenFunction("conjugate_count_update", (a, P, tbar), a + P * tbar, "7.1",
                    "Beta/Gamma shape and Dirichlet concentration after P tokens of block mean t̄: a + P t̄."),
        GenFunction("gaussian_max_loglik", (mmax, mu, sigma2, P), gaussian_max_loglik_expr(), "7.1",
                    "log density of the block maximum of P Gaussian tokens (control)."),
        GenFunction("bernoulli_max_loglik", (mmax, p_, P), bernoulli_max_loglik_expr(), "7.1",
                    "log P(block max = m | p) for P Bernoulli tokens (control)."),
        GenFunction("predictive_risk", (v, sigma2, k), predictive_risk_expr(), "7.2",
                    "Next-token risk σ² + 1/(1/v + k/σ²) given prior variance v and k current tokens."),
        GenFunction("riccati_step", (v, rho, s2, sigma2, P), riccati_step_expr(), "7.2",
                    "Kalman prior variance of the next block's mean after a full block."),
        GenFunction("ar1_predict_var", (v, rho, s2), ar1_predict_var_expr(), "7.2",
                    "AR(1) prediction of the variance: ρ² v + (1 − ρ²) s²."),
        GenFunction("stationary_prior_var", (rho, s2, sigma2, P), stationary_prior_var_expr(), "7.2",
                    "Steady-state Kalman prior variance (positive Riccati fixed point)."),
        GenFunction("risk_reduction", (rho, s2, sigma2, P, k), risk_reduction_expr(), "7.2",
                    "Risk(current block only) − risk(current block + stationary history)."),
        GenFunction("gated_risk", (g, rho, s2, sigma2, P, k), gated_risk_expr(), "7.2",
                    "R(g) of ŷ = λ_k x̄_cur + g x̄_{b−1} (k ≥ 1)."),
        GenFunction("gate_slope", (rho, s2, sigma2, P, k), gate_slope_expr(), "7.2",
                    "dR/dg at g = 0 (k ≥ 1)."),
        GenFunction("current_block_gain", (s2, sigma2, k), current_block_gain_expr(), "7.2",
                    "λ_k = (k/σ²)/(1/s² + k/σ²)."),
        GenFunction("ar1_token_cov", (s2, rho, lag), ar1_token_cov_expr(), "7.2",
                    "Cross-token covariance s² ρ^lag (lag in blocks)."),
        GenFunction("conditional_gaussian_risk", (syy, sxy, Sxx),
                    sp.Matrix([[syy]]) - sxy.T * sp.Inverse(Sxx) * sxy, "7.2",
                    "Var(y | x) = Σ_yy − Σ_yx Σ_xx⁻¹ Σ_xy (conditional-Gaussian formula)."),
        GenFunction("topic_transition", (q, rho, M), topic_transition_expr(), "7.3",
                    "Markov-switching topic chain: ρ q + (1 − ρ)/M."),
    ]

