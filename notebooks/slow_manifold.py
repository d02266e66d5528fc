# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Fast–slow along tokens: slow manifolds, the master equation, the P² cost (docs/theory.md §6)
#
# With ε = 1/P the token-rate variable x and the block-rate variable y obey
# ε ẋ = f(x, y), ẏ = g(x, y).  This notebook walks through Claims 6.1–6.3 with the
# same library calls the ledger uses (`theory.slow_manifold`, `numerics.families.slow_manifold`,
# `numerics.families.cost`) and regenerates the family's figures.
# Set `FASTSLOW_SMOKE=1` for quick sizes.

# %%
import os
from pathlib import Path

import sympy as sp
import torch

torch.set_num_threads(1)
SMOKE = os.environ.get("FASTSLOW_SMOKE") == "1"
OUT = Path(os.environ.get("FASTSLOW_FIGURES_DIR", "out/notebooks/slow_manifold"))  # this notebook's own folder

from theory import slow_manifold as th  # noqa: E402
from numerics.families import slow_manifold as nm  # noqa: E402
from numerics.families import cost  # noqa: E402
# %% [markdown]
# ## 6.1 The invariance equation, order by order
# Michaelis–Menten in the standard nondimensional form: s slow, c fast.  The solver
# finds φ₀ from f(φ₀, s) = 0 and then solves a linear equation per order.  φ₀ and φ₁
# are the published Heineken–Tsuchiya–Aris terms; Tikhonov's conditions are derived
# (Routh–Hurwitz minors of f_x along φ₀) and checked.

# %%
mm = th.expand_slow_manifold(th.michaelis_menten(), 2)
for j, term in enumerate(mm.terms):
    print(f"phi_{j} =", sp.simplify(term[0]))
print(mm.tikhonov.summary())
print("matches published:", th.michaelis_menten_matches_published())

# %% [markdown]
# The linear system ε ẋ = −ax + by, ẏ = cx + dy has a closed-form invariant line; the
# expansion reproduces its Taylor series (with a = b = 1, c = −1, d = 0 the
# coefficients are the Catalan numbers).

# %%
print("linear: expansion = Taylor series of the exact manifold:", th.linear_series_matches_exact(3))
a, b, c, d = th.LINEAR_PARAMS
print(sp.series(th.linear_exact_manifold().subs({a: 1, b: 1, c: -1, d: 0}), th.EPS, 0, 6))

# %% [markdown]
# The control: a repelling branch.  The code names the violated condition.

# %%
print(th.expand_slow_manifold(th.repelling_control(), 2).tikhonov.summary())

# %% [markdown]
# ### Simulation: dist(x, φ^(k)(y)) = O(ε^(k+1)) after the boundary layer
# The token recurrence (exact per-token propagator) for the linearised block model;
# Radau for Michaelis–Menten.  Fit range P = 16 … 256 (see `numerics/families/slow_manifold.py`
# for the error estimates behind it).

# %%
block = nm.convergence("block", Ps=nm.FIT_PS, recurrence=True)
print({k: round(v, 3) for k, v in block["slopes"].items()})
mm_conv = nm.convergence("michaelis_menten", Ps=(16, 256) if SMOKE else nm.FIT_PS,
                         fit_Ps=(16, 256) if SMOKE else nm.FIT_PS)
print({k: round(v, 3) for k, v in mm_conv["slopes"].items()})

# %% [markdown]
# ## 6.2 The master equation: φ₀ = p_st(y)

# %%
Q = th.three_state_generator()
print(th.stationary_distribution(Q).p)
print(th.stationary_distribution(th.reducible_generator()).detail)

# %% [markdown]
# ## 6.3 Cost: exact FLOPs on the real modules vs the generated model

# %%
print(th.cost_model()["ratio_attention"])
print(cost.flop_comparison(256, 16, 32, 4))

# %% [markdown]
# ## Figures

# %%
from proofs_check.report.figures import render  # noqa: E402
from proofs_check.verdicts.evidence import CheckContext# noqa: E402

names = ["slow_manifold_trajectories", "stationary_distribution", "slow_path_cost"]
if not SMOKE:
    names.append("slow_manifold_convergence")
written = render(names, CheckContext(quick=SMOKE), OUT)
for name, paths in written.items():
    print(name, [str(p) for p in paths])
