"""Claim 5.3: g* ≤ g_on ≤ g⁺, the determinant bound, each property beside its negative control."""

import math

import pytest
import torch
from hypothesis import given, strategies as st

from numerics.families import gate_bounds as ngb
from numerics.families import stability as ns
from numerics.stacks.spec import StackSpec
from proofs_check.claims import gate_bounds as chk
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.verdicts.registry import evaluate

U = 2.0**-53


@given(seed=st.integers(0, 200), layers=st.integers(2, 6), dim=st.integers(2, 4))
def test_sandwich_on_random_systems(seed, layers, dim):
    """Random contractive systems with a certified g*: g* ≤ onset ≤ g⁺ (bisections to 2^-40: relative 1e-9), and
    the determinant bound log‖Π(G + hgK)‖ ≥ S(g)/N wherever S > 0 (10·L·N·κ·u)."""
    G, K = ns.random_systems(1, layers, dim, seed)
    G, K = G[0], K[0]
    h = 1 / layers
    a, k = ns.spectral_norm(G), ns.spectral_norm(K)
    g_star = float(ns.solve_gate_bound(a, k, h))
    if not math.isfinite(g_star):
        return                                      # no margin: 5.1 certifies nothing, nothing to sandwich
    spectra = ngb.layer_spectra(G, K, h)
    up = ngb.upper_gate_bound(spectra, g_star)[1.0]
    on = ngb.linear_onset(G, K, h, g_star)[1.0]
    if on is None or up is None:
        return
    assert g_star <= on * (1 + 1e-9) and on <= up * (1 + 1e-9)
    gates = torch.tensor([up * (1 + 1e-6), 2 * up], dtype=torch.float64)
    tol = chk.bound_tolerance(layers, dim, float(torch.linalg.cond(G).max()))
    assert bool((ngb.product_log_norm(G, K, h, gates) >= torch.log(ngb.norm_lower_bound(spectra, gates)) - tol).all())


def test_diagonal_control():
    """Diagonal rates (0.95, 0.70, 0.50): onset = the smallest per-direction root, g⁺ = the root of the sum (sympy),
    loose by the predicted factor; scalar system: g* = onset = g⁺."""
    ok, detail, numbers = chk.diagonal_control()
    assert ok, detail
    assert numbers["onset"] == pytest.approx(min(numbers["roots"]), rel=1e-9)   # two bisections to 2^-40
    assert numbers["g_plus"] > 1.5 * numbers["onset"]
    assert numbers["scalar"] == pytest.approx([numbers["roots"][0]] * 3, rel=1e-9)


def test_det_bound_equals_norm_for_scalar_maps():
    """G_ℓ = a_ℓI, K_ℓ = k_ℓI: ‖Π(G + hgK)‖ = exp(S/N) exactly (the bound is an equality), to L·N·u."""
    a = torch.tensor([0.9, 0.8, 0.95], dtype=torch.float64)
    k = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    G, K = ngb.diagonal_systems(a[:, None].expand(3, 4).clone(), k[:, None].expand(3, 4).clone())
    spectra = ngb.layer_spectra(G, K, 1 / 3)
    g = torch.tensor([0.0, 0.3, 1.0, 5.0], dtype=torch.float64)
    diff = ngb.product_log_norm(G, K, 1 / 3, g) - torch.log(ngb.norm_lower_bound(spectra, g))
    assert float(diff.abs().max()) <= 10 * 3 * 4 * U


def test_singular_layer_refused():
    G = torch.zeros(2, 3, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="singular"):
        ngb.layer_spectra(G, G, 0.5)


def test_ledger_catches_a_missing_root(monkeypatch):
    """A determinant bound that forgets the 1/N root (‖P‖ ≥ |det P|, false for N ≥ 2) over-claims: on a stack the
    product's norm lies below it at the gates where S > 0, and the verdict fails."""
    real = ngb.norm_lower_bound
    monkeypatch.setattr(ngb, "norm_lower_bound", lambda sp, g: real(sp, g) ** sp.modes)
    spec = chk.specs_5_3("preln", CheckContext())[0]
    v = evaluate("5.3", spec, CheckContext())
    assert v.status == "fails"
    assert max(v.measured["errors"][k] for k in v.measured["errors"] if "below exp" in k) > 1e6


def test_not_applicable_without_a_slow_path():
    assert evaluate("5.3", StackSpec(T=4, d=4, layers=2), CheckContext()).status == "n/a"
