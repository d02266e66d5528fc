"""Central differences as a route to J·V without autograd (numerics/linearised/finite_differences.py), Claim 1.2."""

from __future__ import annotations

import torch

from numerics.families import depth_flow as nd
from numerics.linearised import finite_differences as FD
from numerics.linearised.jacobians import layer_jacobians
from numerics.linearised import matrix_free as mf
from numerics.stacks.spec import StackSpec


def _case(seed=0):
    st = StackSpec(T=4, d=4, layers=3, heads=2, kernel="causal", seed=seed).build()
    g = torch.Generator().manual_seed(seed + 1)
    X = torch.randn(4, 4, generator=g, dtype=torch.float64)
    V = torch.randn(4, 4, generator=g, dtype=torch.float64)
    return st, X, V


def test_chain_product_matches_central_differences_within_the_bound():
    st, X, V = _case()
    out = FD.chain_rule_against_differences(st, X, V)
    # ‖D_h − ΠJ V‖ ≤ (h²/6)‖D³f[V,V,V]‖ + γ‖f‖/h at h*, the O(h⁴) remainder h*² ≈ 1e-9 smaller
    assert out["ratio"] <= 1.0
    # truncation slope 2 at h ≥ 10 h*, where rounding is ≤ 1/500 of the h² term
    assert abs(out["slope_h"] - 2.0) <= 0.01
    # control: the reversed product misses by the commutator term, orders of magnitude above the bound
    assert out["reversed_ratio"] > 1e3


def test_a_first_order_slip_in_the_jacobian_is_caught():
    st, X, V = _case(1)
    Js = layer_jacobians(st, X)
    JV = (nd.depth_ordered_product(Js) @ V.reshape(-1)).reshape(4, 4)
    gamma = mf.rounding_tolerance(4, 4, 3, torch.float64)
    good = FD.check_against(st, X, V, JV, gamma)
    # a relative slip of 1e-6 in J·V is ≈ 1e-6‖JV‖ ≫ the bound (≈ γ^{2/3}‖f‖^{2/3}‖D³f‖^{1/3} ~ 1e-9)
    bad = FD.check_against(st, X, V, JV * (1 + 1e-6), gamma)
    assert good["ratio"] <= 1.0 < bad["ratio"]
    # the bound's step balances its two terms: truncation = half the rounding term at h*
    h, b3, fn = good["h"], good["third_norm"], good["f_norm"]
    assert abs((h * h / 6 * b3) / (gamma * fn / h) - 0.5) <= 1e-12
