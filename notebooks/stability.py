# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The gate's stability margin (docs/theory.md §5, reconstruction)
#
# Linearised with the gate g, layer ℓ acts on the slow (block-mean) modes as G_ℓ + h g K_ℓ.
# With a_ℓ = ‖G_ℓ‖, k_ℓ = ‖K_ℓ‖ the gated product is bounded by exp S(|g|),
# S(g) = Σ_ℓ log(a_ℓ + h g k_ℓ).  The **stability margin** is μ = −(1/(Lh)) Σ log a_ℓ and the
# **gate bound** g* is the root of S. This notebook walks through Claims 5.1 and 5.2 with the
# library calls the ledger uses (`theory.stability`, `numerics.families.stability`) and regenerates the
# figures through `proofs_check.report.figures.render`.  `FASTSLOW_SMOKE=1` gives seconds-sized runs.

# %%
import os
from pathlib import Path

import torch

torch.set_num_threads(1)
SMOKE = os.environ.get("FASTSLOW_SMOKE") == "1"
OUT = Path(os.environ.get("FASTSLOW_FIGURES_DIR", "out/notebooks/stability"))  # this notebook's own folder

from theory import stability as th  # noqa: E402
from numerics.stacks.spec import StackSpec  # noqa: E402
from numerics.families import stability as ns  # noqa: E402
from proofs_check.report.figures import render  # noqa: E402
from proofs_check.verdicts.evidence import CheckContext# noqa: E402

ctx = CheckContext(quick=True)

# %% [markdown]
# ## The derivation: S is increasing and concave, so g* is unique; the closed form undershoots
# SymPy proves the per-layer facts (derivative ≥ 0, second derivative ≤ 0, unbounded), that the
# Newton step from 0 is μ/mean(k/a) for every L, and the continuous-depth limit μ/κ.

# %%
print(th.monotonicity_steps())
print("closed form = Newton step from 0:", th.closed_form_identity())
print("continuous depth:", th.continuous_limit())
print("per-layer term and derivative:", th.layer_log_growth(), "|", th.layer_log_growth_dg())

# %% [markdown]
# ## Claim 5.1 on random per-layer systems, with an interval certificate

# %%
layers = 8
G, K = ns.random_systems(64 if SMOKE else 1000, layers, 4, seed=0)
h = 1 / layers
a, k = ns.spectral_norm(G), ns.spectral_norm(K)
g_star = ns.solve_gate_bound(a, k, h)
ok = torch.isfinite(g_star)
worst = torch.log(ns.spectral_norm(ns.gated_product(G[ok], K[ok], h, 0.999 * g_star[ok]))).max()
print(f"{int(ok.sum())} systems with μ > 0; max log‖Π‖ at 0.999 g*: {float(worst):.3e} (≤ 0)")
print(ns.certify_gate_bound(a[ok][0], k[ok][0], h))

# %% [markdown]
# ## A real hierarchical stack
# Plain pre-LN stacks expand on the slow modes: no certified gate.  Decay together with a small
# LN gain and weight scale gives a contractive stack (decay alone shrinks x̄_ℓ, and pre-LN's
# 1/σ(x̄_ℓ) then makes the maps expand).

# %%
plain = StackSpec(T=8, d=8, layers=6, heads=2, kernel="causal", P=4, seed=1).build()
print(ns.gate_certificate(plain))
contractive = StackSpec(T=8, d=8, layers=6, heads=2, kernel="causal", P=4, seed=1, knobs={"decay": 2.0, "ln_gain": 0.2, "weight_scale": 0.5}).build()
cert = ns.gate_certificate(contractive)
print(cert)

# %% [markdown]
# ## Claim 5.2: aligned systems are exact; 2×2 systems against Jury / Routh–Hurwitz

# %%
Ga, Ka = ns.aligned_systems(8, layers, 3, seed=1)
ga = ns.solve_gate_bound(ns.spectral_norm(Ga), ns.spectral_norm(Ka), h)
for f in (0.99, 1.01):
    print(f, torch.log(ns.spectral_norm(ns.gated_product(Ga, Ka, h, f * ga))))
G2, K2 = ns.random_discrete_2x2(200, 0, 1 / 12)
ratio = ns.discrete_norm_gate_bound(G2, K2, 1 / 12) / ns.jury_gate_radius(G2, K2, 1 / 12)
print("median g*_norm / g*_Jury on random 2×2 draws:", float(ratio.median()))

# %% [markdown]
# ## Figures

# %%
written = render(["stability_region", "bound_conservativeness"], ctx, OUT)
print(written)
