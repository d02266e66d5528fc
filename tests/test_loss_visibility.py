"""Claim 4.2 in the per-token loss (numerics/families/loss_visibility.py): the gate is invisible in x̄_L = e₁ᵀX_L on
the causal stack but visible in the loss of every token from block 1 on, as the factorised form predicts."""

from __future__ import annotations

import torch

from numerics.families import loss_visibility as LV
from numerics.linearised import matrix_free as mf
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar

T, D, L, P = 8, 4, 3, 4


def _case(kernel):
    st = StackSpec(T=T, d=D, layers=L, heads=2, kernel=kernel, P=P, seed=1, knobs={"value_scale": 1.0}).build()
    xbar = random_xbar(D, 1)
    logits = LV.readout(D, 16, seed=3)
    y = torch.randint(0, 16, (T,), generator=torch.Generator().manual_seed(4))
    return st, xbar, logits, y


def test_causal_gate_visible_in_the_loss_after_block_zero():
    st, xbar, logits, y = _case("causal")
    auto = LV.gate_loss_jacobian(st, xbar.expand(T, D).clone(), logits, y)
    pred = LV.predicted_gate_loss_jacobian(st, xbar, logits, y)
    # two routes of a depth-L chain of d-term sums: 4γ (each route ≤ γ, the final dot product ≤ γ, doubled)
    gamma = mf.rounding_tolerance(T, D, L, torch.float64)
    assert float((auto - pred).abs().max()) <= 4 * gamma * float(auto.abs().max())
    # block 0: exactly zero (shift feeds it zero; the causal kernel never feeds it later tokens)
    assert torch.equal(auto[:P], torch.zeros_like(auto[:P]))
    # every later token's loss sees some gate at first order
    assert bool((auto[P:].abs().max(dim=-1).values > 1e-6 * auto.abs().max()).all())


def test_control_the_full_kernel_lets_block_zero_see_earlier_gates():
    st, xbar, logits, y = _case("full")
    auto = LV.gate_loss_jacobian(st, xbar.expand(T, D).clone(), logits, y)
    pred = LV.predicted_gate_loss_jacobian(st, xbar, logits, y)
    gamma = mf.rounding_tolerance(T, D, L, torch.float64)
    assert float((auto - pred).abs().max()) <= 4 * gamma * float(auto.abs().max())
    # with the full kernel later layers mix block ≥ 1 into block 0: gates of layers < L−1 reach it ...
    assert float(auto[:P, :-1].abs().max()) > 1e-6 * float(auto.abs().max())
    # ... while the last layer's gate, with no later mixing, still cannot (exactly 0)
    assert torch.equal(auto[:P, -1], torch.zeros_like(auto[:P, -1]))
