"""The measurements ``check --stack`` makes along held-out text (numerics/text/held_out.py, numerics/text/visited.py,
proofs_check/claims/along_text.py), each against an independent route and a control.

* GPT-2's byte-level token ids are GPT-2's published ones (space 220, newline 198, '!' 0).
* The visited factorised form at a token-homogeneous state (gate 0) is the generated layer maps'
  product (``numerics.linearised.matrix_free.layered_apply``, from ``numerics.generated``) and the stack's jvp, to
  float64 rounding; the control multiplies the same layer forms in the wrong order and misses J·V by
  exactly what the generated route predicts for the wrong order.
* The gate's derivative of the per-token held-out loss (4.2) by autograd equals a central finite
  difference; block 0, which the one-block-shifted slow path never reaches under the causal kernel,
  does not move (control: with the full fast kernel it does).
"""

from __future__ import annotations

import math

import pytest
import torch

from numerics.text import held_out
from numerics.linearised import matrix_free as mf
from numerics.text import visited as VI
from numerics.families.loss_visibility import readout
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar
from proofs_check.claims import along_text

F64 = torch.float64

GPT2_LIKE = dict(step=1.0, activation="gelu_new", attn_bias=True)


def test_gpt2_byte_ids_are_gpt2s_vocabulary():
    ids = held_out.gpt2_byte_ids()
    # GPT-2's encoder.json: "!" is 0, "Ġ" (space) 220, "Ċ" (newline) 198, "Ā" (byte 0) 188, "ÿ" 187
    assert ids[ord("!")] == 0 and ids[32] == 220 and ids[10] == 198 and ids[0] == 188 and ids[255] == 187
    assert sorted(ids.tolist()) == list(range(256))
    toks = held_out.text_tokens(16, 50257, windows=2, gpt2=True)
    assert toks.shape == (2, 16) and int(toks.max()) < 256
    assert int(held_out.text_tokens(16, 40, windows=2).max()) < 40            # folded onto a tiny vocabulary
    assert torch.equal(held_out.text_tokens(16, 256, windows=2, gpt2=True), held_out.text_tokens(16, 256, windows=2))


@pytest.mark.parametrize("knobs", [{}, GPT2_LIKE], ids=["h=1/L", "gpt2-block"])
@pytest.mark.parametrize("seed", [0, 3])
def test_visited_form_is_the_generated_form_at_the_reference(knobs, seed):
    T, d, L = 8, 8, 3
    stack = StackSpec.of(T=T, d=d, layers=L, heads=2, kernel="causal", seed=seed, dtype="float64", **knobs).build()
    xbar = random_xbar(d, seed).to(F64)
    X = xbar.expand(T, d).clone()
    V = mf.probes(3, T, d, seed=seed + 1)
    # float64 rounding of a depth-L stack's J·V (numerics.linearised.matrix_free.rounding_tolerance: n·u over the
    # summed dot-product lengths, times the cancellation allowance)
    tol = mf.rounding_tolerance(T, d, L, F64, stack.config.mlp_ratio)
    forms = VI.layer_forms(stack, X)
    generated = mf.layered_apply(stack, xbar, V)
    assert VI._ratio(VI.stack_form(forms, V) - generated, generated) <= tol
    assert VI.stack_error(stack, X, V)["error"] <= tol
    assert max(VI.layer_errors(stack, X, V)) <= mf.rounding_tolerance(T, d, 1, F64, stack.config.mlp_ratio)
    # control: the same layer forms in the wrong order miss J·V by what the generated route predicts
    wrong = mf.layered_apply(stack, xbar, V, reverse=True)
    predicted_miss = VI._ratio(wrong - generated, generated)
    measured_miss = VI._ratio(VI.stack_form(forms, V, reverse=True) - generated, generated)
    assert predicted_miss > 1e-3
    assert abs(measured_miss - predicted_miss) <= tol * (1 + predicted_miss)


def test_visited_form_departs_at_first_order_off_the_reference():
    """Off 1x̄ᵀ the dropped softmax term and the token-wise Jacobians' spread are both linear in the
    deviation t: e(10t)/e(t) = 10 up to the next order, |ratio/10 − 1| ≤ 20·t_max·κ with κ ≤ 5 for
    these O(1) weights (the second-order term's relative size)."""
    T, d = 8, 8
    stack = StackSpec(T=T, d=d, layers=3, heads=2, kernel="causal", seed=1, dtype="float64").build()
    xbar = random_xbar(d, 1).to(F64)
    Z = torch.randn(T, d, generator=torch.Generator().manual_seed(5), dtype=F64)
    Z = Z - Z.mean(0)
    V = mf.probes(2, T, d, seed=2)
    errs = [VI.stack_error(stack, xbar.expand(T, d) + t * Z, V)["error"] for t in (1e-5, 1e-4)]
    assert abs(errs[1] / errs[0] / 10 - 1) <= 20 * 1e-4 * 5


def _hierarchical(kernel: str, seed: int = 0):
    T, d, P = 8, 8, 4
    stack = StackSpec(T=T, d=d, layers=2, heads=2, kernel=kernel, P=P, seed=seed, dtype="float64", knobs={"gate": 0.3}).build()
    logits = readout(d, 40, seed + 11)
    tokens = held_out.text_tokens(T, 40, windows=2)
    X0 = torch.randn(40, d, generator=torch.Generator().manual_seed(seed + 3), dtype=F64)[tokens]
    return held_out.HeldOut(stack, tokens, X0, logits, 40, "test"), P


@pytest.mark.parametrize("seed", [0, 1])
def test_gate_loss_derivative_matches_finite_differences(seed):
    h, P = _hierarchical("causal", seed)
    stack = h.stack
    D = along_text.gate_loss_derivatives(h, stack, 0)                       # (T−1, L)
    eps = 1e-5
    for ell, layer in enumerate(stack.layers):
        g0 = float(layer.gate.detach())
        vals = []
        for g in (g0 + eps, g0 - eps):
            with torch.no_grad():
                layer.gate.fill_(g)
                vals.append(h.window(0).per_token_losses(stack(h.X0[0])[None])[0])
        with torch.no_grad():
            layer.gate.fill_(g0)
        fd = (vals[0] - vals[1]) / (2 * eps)
        # central difference: truncation eps²·|ℓ'''|/6 ≲ 1e-10·|ℓ'''|, rounding u·|ℓ|/eps ≈ 1e-10 (|ℓ| ≈ 4)
        assert float((fd - D[:, ell]).abs().max()) <= 1e-7 * (1 + float(D[:, ell].abs().max()))
    floor = mf.rounding_tolerance(8, 8, 2, F64) * float(D.abs().max())
    assert float(D[:P].abs().max()) <= floor                # block 0 never sees the slow path
    assert float(D[P:].abs().max()) > 1e6 * floor           # the later blocks do


def test_gate_reaches_block_zero_under_the_full_kernel():
    """Control: with the full fast kernel block 0's tokens attend to later blocks, which carry the slow
    path's output, so the gate moves block 0's loss at first order, far above rounding."""
    h, P = _hierarchical("full")
    D = along_text.gate_loss_derivatives(h, h.stack, 0)
    floor = mf.rounding_tolerance(8, 8, 2, F64) * float(D.abs().max())
    assert float(D[:P].abs().max()) > 1e6 * floor
    assert math.isfinite(float(D.abs().max()))


def test_kernel_commutators_vanish_at_the_reference_and_not_on_text():
    """2.2(c) at 1x̄ᵀ every visited kernel is the frozen causal kernel, so every commutator is rounding
    (T·u relative for T×T products of entries ≤ 1); at a spread state the heads' kernels differ."""
    T, d = 8, 8
    stack = StackSpec(T=T, d=d, layers=2, heads=2, kernel="causal", seed=0, dtype="float64").build()
    xbar = random_xbar(d, 0).to(F64)
    at_ref = VI.kernel_commutators(stack, xbar.expand(T, d).clone(), 16, 0)
    assert at_ref and max(at_ref) <= 4 * T * torch.finfo(F64).eps
    Z = torch.randn(T, d, generator=torch.Generator().manual_seed(1), dtype=F64)
    assert max(VI.kernel_commutators(stack, xbar.expand(T, d) + Z, 16, 0)) > 1e-3


@pytest.mark.parametrize("kernel", ["full", "block"])
def test_pooled_leak_is_exact_at_the_reference_for_kernels_that_keep_ker_pi(kernel):
    """3.2(a): ΠJ(I − Q) = 0 at 1x̄ᵀ for the full and block kernels (to the rounding of J·V); the causal
    kernel leaks there by exactly ‖ΠJ_fact(I − Q)V‖/‖J_fact V‖, J_fact the generated polynomial form
    (``numerics.linearised.matrix_free.JacobianAction``): the control, predicted without autograd."""
    from numerics.families.coarse_graining import pooling

    T, d, L, P = 8, 8, 3, 4
    V = mf.probes(2, T, d, seed=3)
    xbar = random_xbar(d, 2).to(F64)
    X = xbar.expand(T, d).clone()
    stack = StackSpec(T=T, d=d, layers=L, heads=2, kernel=kernel, seed=2, dtype="float64", knobs={"block_size": P}).build()
    tol = mf.rounding_tolerance(T, d, L, F64, stack.config.mlp_ratio)
    assert VI.pooled_leak(stack, X, V, P) <= tol
    causal = StackSpec(T=T, d=d, layers=L, heads=2, kernel="causal", seed=2, dtype="float64").build()
    Pi, _, Q = pooling(T, P, F64)
    action = mf.JacobianAction(causal, xbar)
    predicted = VI._ratio(Pi @ action(V - Q @ V), action(V))
    assert predicted > 1e-2
    assert abs(VI.pooled_leak(causal, X, V, P) - predicted) <= tol * (1 + predicted)


def test_depth_roughness_of_iid_layers_is_sqrt2():
    """1.1 on weights: independently drawn layers change by √2 per layer (‖a − b‖² = ‖a‖² + ‖b‖² for
    independent zero-mean draws of equal size; relative fluctuation ≈ 1/√(#entries) ≲ 0.1 at d = 16), far above
    the step h = 1/L, so the Euler reading is conditional; a smooth weight path changes by far less."""
    from numerics.stacks.spec import StackSpec

    spec = StackSpec(T=4, d=16, layers=8, heads=2, kernel="causal", seed=0)
    v = along_text.depth_roughness(spec)
    assert v.status == "conditional" and v.tolerance == pytest.approx(1 / 8)
    for g, r in v.measured["roughness"].items():
        assert abs(r - math.sqrt(2)) <= 0.15, (g, r)
    smooth = along_text.depth_roughness(spec.with_(knobs={"weight_path": "smooth"}))
    assert smooth.error < 0.5 * v.error
