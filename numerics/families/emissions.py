"""Numerics of docs/theory.md §7: conjugate posteriors (7.1), Gaussian AR(1) risks and Monte
Carlo (7.2), and the exact Bayes-optimal next-token losses of the topic data (7.3).

Every formula comes from ``numerics.generated.emissions`` (derived in theory/emissions.py);
this module only arranges grids, recursions and simulations around them.  float64.
"""

from __future__ import annotations

import math

import torch

from numerics.generated import emissions as gen

F64 = torch.float64
SCALAR_FAMILIES = ("gaussian", "bernoulli", "poisson")


def _t(value) -> torch.Tensor:
    return torch.as_tensor(value, dtype=F64, device="cpu")  # the emission model's Monte Carlo runs on the host (no stack)


# ---------------------------------------------------------------- 7.1 posteriors on a grid
def token_loglik(family: str, tokens: torch.Tensor, theta: torch.Tensor, sigma2: float = 1.0) -> torch.Tensor:
    """Σ_i log p(x_i | θ) for a block ``tokens`` (P,) at every grid point ``theta`` (G,)."""
    x = tokens[:, None]
    if family == "gaussian":
        ll = gen.gaussian_token_loglik(x, theta, _t(sigma2))
    elif family == "bernoulli":
        ll = gen.bernoulli_token_loglik(x, theta)
    elif family == "poisson":
        ll = gen.poisson_token_loglik(x, theta)
    else:
        raise ValueError(f"family={family!r} is not one of {', '.join(SCALAR_FAMILIES)}")
    return ll.sum(0)


def prior_logpdf(family: str, theta: torch.Tensor, prior: dict) -> torch.Tensor:
    if family == "gaussian":
        return gen.normal_logpdf(theta, _t(prior["m0"]), _t(prior["v0"]))
    if family == "bernoulli":
        return gen.beta_logpdf(theta, _t(prior["a"]), _t(prior["b"]))
    if family == "poisson":
        return gen.gamma_logpdf(theta, _t(prior["a"]), _t(prior["b"]))
    raise ValueError(f"family={family!r} is not one of {', '.join(SCALAR_FAMILIES)}")


def conjugate_posterior_logpdf(family: str, theta: torch.Tensor, tbar: float, P: int, prior: dict,
                               sigma2: float = 1.0) -> torch.Tensor:
    """The conjugate posterior's log-density at ``theta`` computed from the block mean t̄ alone."""
    tb, Pn = _t(tbar), _t(P)
    if family == "gaussian":
        mean = gen.gaussian_posterior_mean(_t(prior["m0"]), _t(prior["v0"]), _t(sigma2), Pn, tb)
        var = gen.gaussian_posterior_var(_t(prior["v0"]), _t(sigma2), Pn)
        return gen.normal_logpdf(theta, mean, var)
    if family == "bernoulli":
        a = gen.conjugate_count_update(_t(prior["a"]), Pn, tb)
        b = gen.conjugate_count_update(_t(prior["b"]), Pn, 1 - tb)
        return gen.beta_logpdf(theta, a, b)
    if family == "poisson":
        shape = gen.conjugate_count_update(_t(prior["a"]), Pn, tb)
        rate = gen.conjugate_count_update(_t(prior["b"]), Pn, _t(1.0))
        return gen.gamma_logpdf(theta, shape, rate)
    raise ValueError(f"family={family!r} is not one of {', '.join(SCALAR_FAMILIES)}")


def block_max_loglik(family: str, block_max: float, theta: torch.Tensor, P: int,
                     sigma2: float = 1.0) -> torch.Tensor:
    """log p(max_i x_i = m | θ) — the likelihood of a non-sufficient pooling (the control)."""
    m, Pn = _t(block_max), _t(P)
    if family == "gaussian":
        return gen.gaussian_max_loglik(m, theta, _t(sigma2), Pn)
    if family == "bernoulli":
        return gen.bernoulli_max_loglik(m, theta, Pn)
    raise ValueError(f"family={family!r}: block-max control implemented for gaussian, bernoulli")


def normalise_on_grid(logp: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Density on a uniform grid (trapezoid rule), from an unnormalised log-density."""
    w = torch.exp(logp - logp.max())
    return w / torch.trapezoid(w, grid)


def total_variation(logp: torch.Tensor, logq: torch.Tensor, grid: torch.Tensor) -> float:
    """½ ∫ |p − q| of the two grid-normalised densities."""
    return 0.5 * float(torch.trapezoid((normalise_on_grid(logp, grid) - normalise_on_grid(logq, grid)).abs(), grid))


def grid_for(family: str, n: int = 2001) -> torch.Tensor:
    if family == "gaussian":
        return torch.linspace(-6.0, 6.0, n, dtype=F64, device="cpu")  # host grid (emission model)
    if family == "bernoulli":
        return torch.linspace(1e-4, 1 - 1e-4, n, dtype=F64, device="cpu")  # host grid (emission model)
    if family == "poisson":
        return torch.linspace(1e-3, 15.0, n, dtype=F64, device="cpu")  # host grid (emission model)
    raise ValueError(f"family={family!r} is not one of {', '.join(SCALAR_FAMILIES)}")


def sufficiency_gap(family: str, tokens: torch.Tensor, prior: dict, sigma2: float = 1.0) -> dict:
    """Compare the posterior from the whole block with the conjugate posterior from t̄.

    ``spread``: max − min over the grid of log[prior·Π p(x_i|θ)] − log posterior(θ | t̄);
    zero up to rounding iff the two normalised posteriors agree (their ratio is constant).
    ``tv_mean``: TV distance of the normalised densities; ``scale``: the largest |log term|
    (the rounding unit of the spread).
    """
    theta = grid_for(family)
    full = prior_logpdf(family, theta, prior) + token_loglik(family, tokens, theta, sigma2)
    post = conjugate_posterior_logpdf(family, theta, float(tokens.mean()), tokens.numel(), prior, sigma2)
    resid = full - post
    return {"spread": float(resid.max() - resid.min()), "tv_mean": total_variation(full, post, theta),
            "scale": float(torch.maximum(full.abs().max(), post.abs().max()))}


def max_pooling_gap(family: str, tokens: torch.Tensor, prior: dict, sigma2: float = 1.0) -> dict:
    """Control: TV distance between the full-block posterior and the posterior from the block
    max, and the ratio of their posterior variances (information lost by the pooling)."""
    theta = grid_for(family)
    full = prior_logpdf(family, theta, prior) + token_loglik(family, tokens, theta, sigma2)
    pooled = prior_logpdf(family, theta, prior) + block_max_loglik(family, float(tokens.max()), theta,
                                                                    tokens.numel(), sigma2)

    def var(logp):
        p = normalise_on_grid(logp, theta)
        m = torch.trapezoid(p * theta, theta)
        return float(torch.trapezoid(p * (theta - m) ** 2, theta))

    return {"tv_max": total_variation(full, pooled, theta), "var_ratio": var(pooled) / var(full)}


def categorical_sufficiency_gap(tokens: torch.Tensor, alpha: tuple[float, float, float], n: int = 300) -> dict:
    """K = 3: Dirichlet prior × Π θ_{x_i} on a simplex grid vs Dirichlet(α + P p̄) from counts/P."""
    if tokens.min() < 0 or tokens.max() > 2:
        raise ValueError("tokens must lie in {0, 1, 2} for the K = 3 categorical family")
    u = torch.linspace(1e-3, 1 - 1e-3, n, dtype=F64, device="cpu")  # host grid (emission model)
    t1, t2 = torch.meshgrid(u, u, indexing="ij")
    inside = (t1 + t2) < 1 - 1e-3
    t1, t2 = t1[inside], t2[inside]
    theta = torch.stack([t1, t2, 1 - t1 - t2])                      # (3, G)
    al = [_t(v) for v in alpha]
    full = gen.dirichlet3_logpdf(t1, t2, *al) + torch.log(theta[tokens]).sum(0)
    P = tokens.numel()
    pbar = torch.bincount(tokens, minlength=3).to(F64) / P
    post_alpha = [gen.conjugate_count_update(al[j], _t(P), pbar[j]) for j in range(3)]
    post = gen.dirichlet3_logpdf(t1, t2, *post_alpha)
    resid = full - post
    return {"spread": float(resid.max() - resid.min()),
            "scale": float(torch.maximum(full.abs().max(), post.abs().max()))}


# ---------------------------------------------------------------- 7.2 Gaussian AR(1) blocks
def kalman_prior_var(rho: float, s2: float, sigma2: float, P: int, n_prev: int) -> torch.Tensor:
    """Prior variance of μ_b after n_prev complete earlier blocks (Riccati iterates from s²)."""
    v = _t(s2)
    for _ in range(n_prev):
        v = gen.riccati_step(v, _t(rho), _t(s2), _t(sigma2), _t(P))
    return v


def kalman_risk(rho, s2, sigma2, P, k, n_prev) -> float:
    """Bayes risk of the next token given n_prev earlier blocks and k current tokens."""
    return float(gen.predictive_risk(kalman_prior_var(rho, s2, sigma2, P, n_prev), _t(sigma2), _t(k)))


def conditional_gaussian_risk(rho, s2, sigma2, P, k, n_prev) -> float:
    """The same risk from the joint Gaussian of all tokens (Schur complement), no recursion."""
    blocks = torch.cat([torch.arange(n_prev, device="cpu").repeat_interleave(P), torch.full((k + 1,), n_prev, device="cpu")])  # host: block indices of the covariance
    lag = (blocks[:, None] - blocks[None, :]).abs().to(F64)
    cov = gen.ar1_token_cov(_t(s2), _t(rho), lag) + sigma2 * torch.eye(len(blocks), dtype=F64, device="cpu")  # host (emission model)
    Sxx, sxy, syy = cov[:-1, :-1], cov[:-1, -1:], cov[-1, -1]
    if Sxx.shape[0] == 0:
        return float(syy)
    return float(gen.conditional_gaussian_risk(syy, sxy, Sxx)[0, 0])


def simulate_gaussian_blocks(n_seq: int, n_blocks: int, P: int, rho: float, s2: float, sigma2: float,
                             seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """μ_b stationary AR(1) (variance s², correlation ρ) and tokens x_{b,i} = μ_b + σ ε: (n_seq, n_blocks, P)."""
    g = torch.Generator().manual_seed(seed)
    mu = torch.empty(n_seq, n_blocks, dtype=F64, device="cpu")  # host (emission model)
    mu[:, 0] = math.sqrt(s2) * torch.randn(n_seq, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator)
    innov = math.sqrt((1 - rho ** 2) * s2) * torch.randn(n_seq, n_blocks, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator)
    for b in range(1, n_blocks):
        mu[:, b] = rho * mu[:, b - 1] + innov[:, b]
    x = mu[..., None] + math.sqrt(sigma2) * torch.randn(n_seq, n_blocks, P, generator=g, dtype=F64, device="cpu")  # seeded on the host (a CPU generator)
    return mu, x


def kalman_predictions(x: torch.Tensor, k: int, rho: float, s2: float, sigma2: float) -> dict:
    """Predict token k (0-based) of the last block: from the current block alone and from the
    whole history (Kalman filter: conjugate update per block, AR(1) prediction between)."""
    n_seq, n_blocks, P = x.shape
    R, S2, SIG = _t(rho), _t(s2), _t(sigma2)
    m, v = torch.zeros(n_seq, dtype=F64, device="cpu"), S2.expand(n_seq)  # host (emission model)
    for b in range(n_blocks - 1):
        xb = x[:, b].mean(-1)
        m_post = gen.gaussian_posterior_mean(m, v, SIG, _t(P), xb)
        v_post = gen.gaussian_posterior_var(v, SIG, _t(P))
        m, v = R * m_post, gen.ar1_predict_var(v_post, R, S2)
    cur = x[:, -1, :k].mean(-1) if k > 0 else torch.zeros(n_seq, dtype=F64, device="cpu")  # host (emission model)
    pred_hist = gen.gaussian_posterior_mean(m, v, SIG, _t(k), cur)
    pred_cur = gen.gaussian_posterior_mean(torch.zeros_like(m), S2.expand(n_seq), SIG, _t(k), cur)
    return {"y": x[:, -1, k], "hist": pred_hist, "cur": pred_cur}


def mc_risks(n_seq: int, n_prev: int, P: int, k: int, rho: float, s2: float, sigma2: float, seed: int) -> dict:
    """Monte Carlo risks (means and standard errors) of both predictors and their paired difference."""
    _, x = simulate_gaussian_blocks(n_seq, n_prev + 1, P, rho, s2, sigma2, seed)
    pr = kalman_predictions(x, k, rho, s2, sigma2)
    e_hist = (pr["y"] - pr["hist"]) ** 2
    e_cur = (pr["y"] - pr["cur"]) ** 2
    diff = e_cur - e_hist
    se = lambda t: float(t.std() / math.sqrt(t.numel()))
    return {"risk_hist": float(e_hist.mean()), "se_hist": se(e_hist),
            "risk_cur": float(e_cur.mean()), "se_cur": se(e_cur),
            "reduction": float(diff.mean()), "se_reduction": se(diff)}


def gate_features(x: torch.Tensor, kind: str) -> torch.Tensor:
    """φ(earlier blocks) for the gated predictor: ``prev_mean`` (x̄_{b−1}), ``prev_max_tanh``
    (a nonlinear function, tanh of the previous block's max), ``history_mean`` (all earlier)."""
    if kind == "prev_mean":
        return x[:, -2].mean(-1)
    if kind == "prev_max_tanh":
        return torch.tanh(x[:, -2].max(-1).values)
    if kind == "history_mean":
        return x[:, :-1].mean((-1, -2))
    raise ValueError(f"kind={kind!r} is not one of prev_mean, prev_max_tanh, history_mean")


def mc_gate_slope(n_seq: int, n_prev: int, P: int, k: int, rho: float, s2: float, sigma2: float,
                  seed: int, kind: str = "prev_mean") -> dict:
    """dR/dg at g = 0 of ŷ_g = (current-block posterior mean) + g φ: −2 E[(y − m_cur) φ] ± SE."""
    if n_prev < 1:
        raise ValueError(f"n_prev={n_prev} must be >= 1: the gate needs an earlier block")
    _, x = simulate_gaussian_blocks(n_seq, n_prev + 1, P, rho, s2, sigma2, seed)
    pr = kalman_predictions(x, k, rho, s2, sigma2)
    terms = -2 * (pr["y"] - pr["cur"]) * gate_features(x, kind)
    return {"slope": float(terms.mean()), "se": float(terms.std() / math.sqrt(n_seq))}


def mc_gated_risk(g_values, n_seq, n_prev, P, k, rho, s2, sigma2, seed) -> list[dict]:
    """R(g) = E[(y − m_cur − g x̄_{b−1})²] by Monte Carlo at each g (same draws for all g)."""
    _, x = simulate_gaussian_blocks(n_seq, n_prev + 1, P, rho, s2, sigma2, seed)
    pr = kalman_predictions(x, k, rho, s2, sigma2)
    phi = gate_features(x, "prev_mean")
    out = []
    for gv in g_values:
        e = (pr["y"] - pr["cur"] - gv * phi) ** 2
        out.append({"g": float(gv), "risk": float(e.mean()), "se": float(e.std() / math.sqrt(n_seq))})
    return out


def mc_gated_risk_coefficients(n_seq, n_prev, P, k, rho, s2, sigma2, seed) -> dict:
    """R(g) = a − 2g·b + g²·c by Monte Carlo: a = E[e²], b = E[e·φ], c = E[φ²] with e = y − m_cur and
    φ = x̄_{b−1}, each with its standard error (one set of draws)."""
    _, x = simulate_gaussian_blocks(n_seq, n_prev + 1, P, rho, s2, sigma2, seed)
    pr = kalman_predictions(x, k, rho, s2, sigma2)
    e, phi = pr["y"] - pr["cur"], gate_features(x, "prev_mean")
    out = {}
    for name, terms in (("a", e * e), ("b", e * phi), ("c", phi * phi)):
        out[name], out[f"se_{name}"] = float(terms.mean()), float(terms.std() / math.sqrt(n_seq))
    return out


def mc_sample_size(delta: float, sd: float, z_crit: float, power: float) -> int:
    """The number of i.i.d. draws (standard deviation ``sd``) with which |mean − theory|/SE ≤ ``z_crit``
    refuses a theory off by ``delta`` with probability ``power``: n = ⌈((z_crit + z_β)·sd/δ)²⌉, z_β = Φ⁻¹(power)
    (the far tail, P(z < −z_crit − …), is negligible)."""
    from statistics import NormalDist

    if delta <= 0 or sd <= 0 or not 0.5 <= power < 1:
        raise ValueError(f"delta={delta}, sd={sd} must be > 0 and power={power} in [0.5, 1)")
    return math.ceil(((z_crit + NormalDist().inv_cdf(power)) * sd / delta) ** 2)


def gated_risk_power(s2: float, sigma2: float, P: int, k: int, rhos, z_crit: float, power: float) -> dict:
    """The Monte Carlo size at which 7.2's R(g) = a − 2g·b + g²·c is checked: the smallest error the check
    must detect is one count off by one (P → P − 1 or k → k − 1) in any coefficient, at any ρ of ``rhos``
    where it changes it.  The coefficients, written from the stationary covariances (independently of the
    generated code): a = σ² + s²σ²/(σ² + k s²) (λ_k = k s²/(σ² + k s²)), b = ρ s²(1 − λ_k), c = s² + σ²/P;
    e = y − m_cur and φ = x̄_{b−1} are jointly Gaussian and centred, so sd(e²) = √2·a, sd(φ²) = √2·c,
    sd(eφ) = √(ac + b²) (Isserlis).  Returns {rows: per (coefficient, ρ, count) δ, sd, n; n: the largest}."""
    def coeffs(P_, k_, rho):
        lam = k_ * s2 / (sigma2 + k_ * s2)
        return {"a": sigma2 + s2 * sigma2 / (sigma2 + k_ * s2), "b": rho * s2 * (1 - lam), "c": s2 + sigma2 / P_}

    rows = []
    for rho in rhos:
        base = coeffs(P, k, rho)
        sd = {"a": math.sqrt(2) * base["a"], "c": math.sqrt(2) * base["c"],
              "b": math.sqrt(base["a"] * base["c"] + base["b"] ** 2)}
        for count, moved in (("P − 1", coeffs(P - 1, k, rho)), ("k − 1", coeffs(P, k - 1, rho))):
            for name in "abc":
                delta = abs(moved[name] - base[name])
                if delta > 1e-12 * max(1.0, abs(base[name])):   # the count enters this coefficient
                    rows.append({"coefficient": name, "rho": rho, "count": count, "delta": delta, "sd": sd[name],
                                 "n": mc_sample_size(delta, sd[name], z_crit, power)})
    return {"rows": rows, "n": max(r["n"] for r in rows), "binding": max(rows, key=lambda r: r["n"])}


# ---------------------------------------------------------------- 7.3 categorical topic blocks
def topic_filter_losses(tokens: torch.Tensor, topics: torch.Tensor, P: int, rho: float) -> dict:
    """Exact next-token log-losses (batch, T−1) of two Bayes predictors for topic-block data,
    for the predicted tokens 1..T−1 (token 0 is never predicted, as in training).

    ``hist``: the forward filter over the Markov-switching topic chain (all earlier tokens).
    ``local``: what a model whose fast path sees only the block of the predicting position
    can know: within a block, the filter restarted at the uniform prior at the block's start;
    for the first token of block b, the filter of block b−1 pushed through one transition.
    Bayes' rule within a block; between blocks the generated ``topic_transition``.
    """
    batch, T = tokens.shape
    M = topics.shape[0]
    R, Mt = _t(rho), _t(M)
    lik = topics.T[tokens]                                  # (batch, T, M): θ_z(x_t)
    uniform = torch.full((batch, M), 1.0 / M, dtype=F64, device="cpu")  # host (emission model)
    out = {name: torch.empty(batch, T - 1, dtype=F64, device="cpu") for name in ("hist", "local")}  # host (emission model)
    q_hist, q_local = uniform.clone(), uniform.clone()
    for t in range(T):
        if t > 0 and t % P == 0:
            q_hist = gen.topic_transition(q_hist, R, Mt)
            prior_local = gen.topic_transition(q_local, R, Mt)  # the previous block, seen whole
            q_local = uniform.clone()
        else:
            prior_local = q_local
        for name, prior in (("hist", q_hist), ("local", prior_local)):
            if t > 0:
                out[name][:, t - 1] = -torch.log((prior * lik[:, t]).sum(-1))  # p(x_t | past)
        q_hist = q_hist * lik[:, t] / (q_hist * lik[:, t]).sum(-1, keepdim=True)
        q_local = q_local * lik[:, t] / (q_local * lik[:, t]).sum(-1, keepdim=True)
    return out


def bayes_loss_gap(data, T: int, n_seq: int, seed: int) -> dict:
    """Mean Bayes-optimal next-token loss (nats/token) without (``local``) and with (``hist``)
    the cross-block channel, and their paired gap with its Monte Carlo standard error."""
    tokens, _ = data.sample(n_seq, T, seed)
    losses = topic_filter_losses(tokens, data.topics(), data.P, data.rho)
    per_seq_gap = (losses["local"] - losses["hist"]).mean(-1)
    return {"loss_local": float(losses["local"].mean()), "loss_hist": float(losses["hist"].mean()),
            "gap": float(per_seq_gap.mean()), "se_gap": float(per_seq_gap.std() / math.sqrt(n_seq))}
