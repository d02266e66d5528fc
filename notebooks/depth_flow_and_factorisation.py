# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Depth flow and factorisation along the frozen kernel (docs/theory.md §1–§2)
#
# 1. **Claim 1.1** — an untied stack whose weights follow a smooth path θ(t) is the explicit
#    Euler scheme of dX/dt = F(θ(t), X): the error at t = 1 halves when L doubles. With i.i.d.
#    weights the stack only averages, at rate L^(−1/2).
# 2. **Claim 2.1** — at a token-homogeneous state 1x̄ᵀ the Jacobian is block diagonal in the
#    eigenbasis of the frozen kernel A, with blocks G(λ) = Π_ℓ (I + C_ℓ)((1−hα)I + hλB_ℓ).
# 3. **Claim 2.2** — breaking homogeneity, token-wise sublayers or commuting kernels by δ leaks
#    off-block mass ∝ δ.
# 4. **Claim 2.3** — J = Σ A^m ⊗ K_m needs no eigenvectors; the causal eigenbasis (the Pascal
#    matrix) is too ill-conditioned for float64 past T ≈ 24.
# Set `FASTSLOW_SMOKE=1` for quick sizes.

# %%
import os
from pathlib import Path

import torch

from numerics.families import depth_flow as nd
from numerics.families import factorisation as nf
from numerics.fitting import loglog_fit
from numerics.stacks.stack import random_xbar
from numerics.stacks.spec import StackSpec
from proofs_check.claims.factorisation import conditions, frozen_kernel, polynomial_form
from proofs_check.report.figures import render
from proofs_check.verdicts.evidence import CheckContext

torch.set_num_threads(1)
SMOKE = os.environ.get("FASTSLOW_SMOKE") == "1"
ctx = CheckContext(quick=True)
out_dir = Path(os.environ.get("FASTSLOW_FIGURES_DIR", "out/notebooks/depth_flow_and_factorisation"))  # this notebook's own folder

# %% [markdown]
# ## Euler convergence (Claim 1.1)
# Same seed ⇒ same weight path θ(t) for every depth L; the reference is a DOP853 solve.

# %%
depths = [8, 16, 32] if SMOKE else [8, 16, 32, 64, 128]
errs = nd.smooth_stacks_errors(6, 8, depths, rtol=1e-10)
print("errors", [f"{e:.3g}" for e in errs], "slope", round(-loglog_fit(depths[1:], errs[1:]).slope, 3))
consts, C = nd.scalar_error_constants(0.5, 1.0, 1.0, [512, 1024])
print("scalar test system: derived C =", C, " Richardson estimate =", 2 * consts[1] - consts[0])

# %% [markdown]
# ## Mode blocks (Claim 2.1)

# %%
stack = StackSpec(T=6, d=8, layers=4, heads=2, kernel="causal", seed=0, knobs={"value_scale": 1.0}).build()
xbar = random_xbar(8, 100)
lam, G = nf.mode_blocks(stack, xbar)
off, blk, tol = frozen_kernel.factorisation_error(stack, xbar)
print("eigenvalues", lam.tolist())
print(f"max off-block {off:.1e}, max block error {blk:.1e}, tolerance {tol:.1e}")

# %% [markdown]
# ## Violations (Claim 2.2) and the polynomial form (Claim 2.3)

# %%
for kind in conditions.CONTROL_KINDS:
    print(kind, [f"{m:.2e}" for m in conditions.control_masses([1e-4, 1e-3], kind)])
err, tol = polynomial_form.polynomial_form_error(16 if SMOKE else 64, d=8 if SMOKE else 16, L=4 if SMOKE else 8)
print(f"polynomial form: error {err:.2e} <= tolerance {tol:.2e}")
for row in polynomial_form.eigen_coordinate_errors([4, 16, 32]):
    print(row)

# %% [markdown]
# ## Figures (the same renderers as `fastslow figures`)

# %%
names = ["block_diagonality", "eigenbasis_conditioning"] if SMOKE else [
    "block_diagonality", "factorisation_controls", "eigenbasis_conditioning", "euler_convergence"]
for name, paths in render(names, ctx, out_dir).items():
    print(name, [str(p) for p in paths])
