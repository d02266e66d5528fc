"""Claim 3.1's ρ with the LayerNorm-null direction 1_d quotiented out (numerics/families/saturation_quotient.py)."""

from __future__ import annotations

import pytest
import torch

from numerics.stacks.spec import StackSpec
from numerics.families.coarse_graining import kernel_modes, mode_blocks
from numerics.families.saturation_quotient import complement_basis, quotient_saturation
from numerics.stacks.stack import random_xbar

EPS = float(torch.finfo(torch.float64).eps)


@pytest.mark.parametrize("kernel,c,decay", [("causal", 20.0, 0.0), ("full", 5.0, 0.5)])
def test_quotient_is_well_defined_and_its_bound_holds(kernel, c, decay):
    st = StackSpec(T=6, d=8, layers=6, heads=2, kernel=kernel, seed=1, knobs={"value_scale": c, "decay": decay}).build()
    q = quotient_saturation(st, random_xbar(8, 1))
    # span(1) invariant with the common factor (1 − hα): a d-term sum per entry, ≤ 64 eps of the O(1) blocks
    assert q.invariance_error <= 64 * EPS
    # r̄_m ≤ Π ‖Ḡ_ℓ(λ)‖/σ_min(Ḡ_ℓ(1)) (submultiplicativity), up to the products' rounding
    assert bool((q.ratios_bar <= q.bound_products * (1 + 64 * EPS)).all())
    # the radial direction is killed up to LN's ε, by at most the predicted amount ...
    assert q.radial_error <= q.radial_bound
    # ... so every layer's quotient ratio stays ≥ 1 (up to that ε term): the quotient alone cannot make ρ̄ < 1
    assert bool((q.per_layer_rho_bar >= q.per_layer_lower).all()) and float(q.per_layer_lower.min()) > 1 - 1e-3


def test_control_a_generic_direction_is_not_shared_by_the_modes():
    st = StackSpec(T=6, d=8, layers=6, heads=2, kernel="causal", seed=1, knobs={"value_scale": 20.0}).build()
    xbar = random_xbar(8, 1)
    q = quotient_saturation(st, xbar)
    modes, _ = kernel_modes(st.frozen_kernel())
    blocks = mode_blocks(st, xbar, modes).detach()
    v = complement_basis(8) @ torch.randn(7, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    v = v / v.norm()
    gap = float(((blocks[:, 1:] - blocks[:, :1]) @ v).norm(dim=-1).max() / torch.linalg.matrix_norm(blocks[:, 0], ord=2).max())
    # a direction in 1⊥ other than n̂_ℓ feels h(λ − 1)B_ℓ at first order: orders of magnitude above the ε term
    assert gap > 1e3 * q.radial_bound
