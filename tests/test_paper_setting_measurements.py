"""Claims 3.1, 4.1 and 4.2 measured in the paper's setting, GPT-2's block at h = 1 with i.i.d. weights
(proofs_check/claims/paper_setting.py and the claims' measurement functions), each with a control whose
outcome flips.

* 3.1: at h = 1 the two routes to ℓ* (mode products, autograd) agree and the bound has no value inside the stack
  (ρ̃ ≥ 1); control: the full kernel with a value path (c = 10, h = 1/L) reads a bound below L with ℓ* under it.
* 4.1: at 1x̄ᵀ W_Q, W_K's share of the loss change is rounding (an identity); control: the same stack on
  text-like inputs reads a share above 1e6 × rounding, with central differences within O(ε²) of forward mode.
* 4.2: at h = 1 every token after block 0 sees the gate in its loss and block 0 does not (holds); control: the
  full fast kernel feeds the later blocks back into block 0, so the measurement reads *fails*.
"""

from __future__ import annotations

import torch

from numerics.text import held_out
from numerics.linearised import matrix_free as mf
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar
from proofs_check.claims import paper_setting as ps
from proofs_check.claims.coarse_graining.saturation_depth import gpt2_block_rows
from proofs_check.claims.visibility import GATE_TOL, loss_visibility
from proofs_check.verdicts.evidence import CheckContext

CTX = CheckContext(quick=True, seed=0)


def test_saturation_bound_has_no_value_at_gpt2s_step():
    rows = gpt2_block_rows(CTX)
    assert rows and all(r["h"] == 1.0 for r in rows)
    for r in rows:
        assert r["error"] <= 1.0, r                                     # mode products vs autograd, normalised
        assert r["ℓ* (mode products)"] == r["ℓ* (autograd)"], r
        assert r["bound (generated)"] is None or r["bound (generated)"] >= r["L"], r
        assert r["ρ̃"] >= 1.0 and r["stated ρ"] >= 1.0, r


def test_saturation_bound_binds_with_a_contracting_value_path():
    """Control: the measurement is not vacuous by construction (full kernel, κ = 1, c = 10 at h = 1/L)."""
    spec = StackSpec(T=6, d=8, layers=16, heads=2, kernel="full", seed=0, knobs={"value_scale": 10.0})
    (r,) = gpt2_block_rows(CTX, specs=[spec])
    assert r["error"] <= 1.0 and r["ρ̃"] < 1.0
    assert r["bound (generated)"] is not None and r["bound (generated)"] < r["L"], r
    assert r["ℓ* (autograd)"] is not None and r["ℓ* (autograd)"] <= r["bound (generated)"], r


def test_qk_share_is_rounding_at_the_reference_and_not_off_it():
    spec = ps.gpt2_block_specs(CTX, T=8, d=8, layers=3)[0]
    stack = spec.build()
    tol = mf.rounding_tolerance(spec.T, spec.d, spec.layers, torch.float64)
    at_ref = ps.qk_shares_at(stack, random_xbar(spec.d, spec.seed).expand(2, spec.T, spec.d), spec.seed)
    assert at_ref["qk_loss_share"] <= tol, at_ref
    embedding = torch.randn(16, spec.d, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    off = ps.qk_shares_at(stack, embedding[held_out.text_tokens(spec.T, 16, 2)], spec.seed)
    assert off["qk_loss_share"] > 1e6 * tol, off
    # central differences at ε = 1e-4 against forward mode: O(ε²) = 1e-8 times the loss's curvature
    assert off["finite_difference_vs_jvp"] <= ps.QK_ROUTE_TOL
    assert abs(off["qk_loss_share_finite_difference"] - off["qk_loss_share"]) <= 1e-5 * off["qk_loss_share"]


def _gate_rows(kernel: str) -> list[dict]:
    return [loss_visibility(StackSpec(T=8, d=8, layers=3, heads=2, kernel=kernel, P=4, seed=s,
                                      knobs={"value_scale": 1.0, "slow_kernel": "causal", **ps.GPT2_BLOCK}))
            for s in (0, 1)]


def test_gate_is_visible_in_the_loss_at_gpt2s_step():
    shown = ps.gate_visibility_measurement(_gate_rows("causal"), [], GATE_TOL)
    assert shown["outcome"] == "holds" and shown["value"]["h1"] > GATE_TOL, shown


def test_gate_measurement_fails_when_block_zero_moves():
    """Control: with the full fast kernel block 0 attends to the later blocks, which carry the slow output, so
    block 0's loss moves with the gate and the measurement reads fails."""
    rows = _gate_rows("full")
    assert all(r["block0_max"] > 1e6 * GATE_TOL for r in rows), rows
    assert ps.gate_visibility_measurement(rows, [], GATE_TOL)["outcome"] == "fails"
