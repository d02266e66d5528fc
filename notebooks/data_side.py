# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The data side: exponential-family blocks and the gate (docs/theory.md §7)
#
# "Stability delimits what the architecture may do; the data decides what it will."
# This notebook walks through Claims 7.1–7.3 with the library calls the ledger uses
# (`theory.emissions`, `numerics.families.emissions`, `numerics.families.data`, `numerics.text.training`) and
# regenerates the family's figures through `proofs_check.report.figures.render`.
# Set `FASTSLOW_SMOKE=1` for seconds-sized runs (a demonstration, not evidence).

# %%
import os
from pathlib import Path
from types import SimpleNamespace

import sympy as sp
import torch

torch.set_num_threads(1)
SMOKE = os.environ.get("FASTSLOW_SMOKE") == "1"
OUT = Path(os.environ.get("FASTSLOW_FIGURES_DIR", "out/notebooks/data_side"))  # this notebook's own folder

from theory import emissions as th  # noqa: E402
from numerics.families import emissions as ne  # noqa: E402
from numerics.text import training as tr  # noqa: E402
from numerics.families.data import TopicBlocks  # noqa: E402
from proofs_check.claims.emissions import PRIORS, draw_block  # noqa: E402
from proofs_check.report.figures import render  # noqa: E402

ctx = SimpleNamespace(quick=True, smoke=SMOKE, device="cpu", profile="ci", cache_dir=str(OUT.parent / "cache"))

# %% [markdown]
# ## 7.1 The block mean of T(x) is sufficient
# In natural-parameter form p(x|η) = h(x) exp(ηᵀT(x) − A(η)), a block of P i.i.d. tokens
# has log-likelihood Σ log h(x_i) + P ηᵀ t̄ − P A(η): the data touch η only through
# t̄ = (1/P) Σ T(x_i) (factorisation theorem).  SymPy proves it for symbolic P, for a generic
# family and for the four families, and proves that the posterior from the whole block is
# the conjugate posterior computed from t̄.

# %%
print("generic family, symbolic P:", th.proof_generic_factorisation())
for fam in th.FAMILIES:
    print(f"{fam:12s} natural form: {th.proof_natural_form(fam)}  likelihood ratio = 1: "
          f"{th.proof_likelihood_ratio(fam)}  conjugate posterior from t̄: {th.proof_conjugate_posterior(fam)}")
print("block log-likelihood (Bernoulli):", th.block_loglik("bernoulli", th.x, [th.tbar]))

# %% [markdown]
# Numerically: on a θ-grid, log[prior · Π p(x_i|θ)] minus the conjugate posterior's
# log-density from t̄ is constant (its spread is rounding); the block *maximum* is a
# pooling that is not sufficient, and its posterior is different and wider.

# %%
for fam in ne.SCALAR_FAMILIES:
    tokens = draw_block(fam, 8, 3)
    print(fam, ne.sufficiency_gap(fam, tokens, PRIORS[fam]))
for fam in ("gaussian", "bernoulli"):
    print(fam, "block max:", ne.max_pooling_gap(fam, draw_block(fam, 8, 5), PRIORS[fam]))
render(["posterior_sufficiency"], ctx, OUT)

# %% [markdown]
# ## 7.2 No shared structure: the gate is invisible in the risk
# Gaussian blocks x_{b,i} = μ_b + σε with μ_b a stationary AR(1) chain (variance s²,
# correlation ρ).  The Kalman filter's stationary prior variance solves a Riccati
# equation; at ρ = 0 it is s² and the history lowers the risk by exactly 0.

# %%
vstar = th.stationary_prior_var_expr()
print("v* =", vstar)
print("v*(ρ=0) =", sp.simplify(vstar.subs(th.rho, 0)))
print("risk reduction at ρ = 0:", sp.simplify(th.risk_reduction_expr().subs(th.rho, 0)))
print("dR/dg at g = 0:", sp.factor(th.gate_slope_expr()))

# %% [markdown]
# Monte Carlo against the closed forms, for the independent case and for ρ = 0.9, and the
# gate slope for a nonlinear function of earlier blocks (zero when blocks are independent).

# %%
n_seq = 5_000 if SMOKE else 50_000
for rho in (0.0, 0.9):
    mc = ne.mc_risks(n_seq, 6, 8, 2, rho, 1.0, 2.0, seed=1)
    theory = ne.kalman_risk(rho, 1.0, 2.0, 8, 2, 0) - ne.kalman_risk(rho, 1.0, 2.0, 8, 2, 6)
    print(f"ρ = {rho}: reduction MC {mc['reduction']:.4f} ± {mc['se_reduction']:.4f}, theory {theory:.4f}")
    print("   dR/dg|0 with φ = tanh(previous max):", ne.mc_gate_slope(n_seq, 4, 8, 2, rho, 1.0, 2.0, 2, "prev_max_tanh"))
render(["risk_vs_rho"], ctx, OUT)

# %% [markdown]
# ## 7.3 The experiment in small
# Categorical tokens from M topics; the topic of each block follows a Markov-switching
# chain (keep with probability ρ, else redraw) — a discrete AR(1) whose Bayes filter is
# exact, so the loss gap 7.2 predicts can be computed.  The model's fast path sees only the
# current block, so the gated slow path is the only route to earlier blocks.

# %%
for rho in (0.0, 0.9):
    print(f"ρ = {rho}: Bayes losses", ne.bayes_loss_gap(TopicBlocks(rho=rho), 32, 500, seed=3))

# %% [markdown]
# At g = 0 the slow-path weights get exactly zero gradient; what the data decides is
# ∂R/∂g.  At random initialisation the raw derivative is not zero even for independent
# blocks (the slow feature's mean acts like a bias); its *information part* — the
# derivative minus its value with the earlier blocks swapped for another sequence's — is
# zero in expectation for i.i.d. blocks and not for AR(1) blocks.

# %%
for rho in (0.0, 0.9):
    cfg = tr.TrainConfig(T=32, d=16, layers=2, heads=2, rho=rho, dtype="float64")
    print(f"ρ = {rho}:", tr.gate_gradient_information(cfg, seed=0, n_batches=8 if SMOKE else 30, batch=32))

# %% [markdown]
# Coupled (learnable gate) vs frozen (gate fixed at 0), several seeds, i.i.d. vs AR(1)
# blocks; the decision rule is fixed in `numerics.text.training` (gap vs 2 × pooled seed std;
# gate vs a quarter of the AR(1) gate; gap / Bayes gap in [0.25, 1.5]).

# %%
res = tr.run_experiment(quick=True, cache_dir=ctx.cache_dir, smoke=SMOKE)
for name in ("iid", "ar1"):
    row = res["summary"][name]
    print(f"{name}: coupled {row['coupled']['mean']:.4f} ± {row['coupled']['std']:.4f}, frozen "
          f"{row['frozen']['mean']:.4f} ± {row['frozen']['std']:.4f}, gap {row['gap']:.4f}, "
          f"Bayes gap {row['bayes_gap']:.4f}, gate {row['gate']:.3f}")
print(res["summary"]["verdict"])
render(["training_curves"], ctx, OUT)
