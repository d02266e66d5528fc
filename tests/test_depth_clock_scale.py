"""Claim 6.4 at pretraining size: the one-mode-at-a-time route against the dense one, and the size
threshold that picks it before anything is allocated."""

import pytest
import torch

from numerics.families import depth_clock_scale as S
from numerics.families import depth_slow_manifold as nds
from numerics.stacks.spec import StackSpec
from numerics.stacks.stack import random_xbar
from proofs_check.claims import depth_slow_manifold as chk
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.verdicts.registry import evaluate

EPS = 2.0**-52


def _relative_tolerance(L, d):
    """The dense route builds each block with the generated G_ℓ(λ), this one as G_ℓ(0) + λ·(G_ℓ(1) − G_ℓ(0))
    from the generated coefficients: per layer they differ by the rounding of dot products of length
    m = 4d (the MLP) and d (the LayerNorm), ≤ (m + d)·u = 5d·u relative for O(1) weights; the L products
    add ≤ L·d·u each route, the norms (SVD vs √λ_max(GᵀG), both backward stable) O(d·u), and r is a
    quotient of two norms: ≤ 2·(6L + 1)·d·u < 10·L·(d + 1)·ε = 20·L·(d + 1)·u, 6.4's own identity
    tolerance."""
    return chk.identity_tolerance(L, d)


@pytest.mark.parametrize("knobs", [{"value_scale": 20.0},
                                   {"activation": "gelu_new", "attn_bias": True, "step": 1.0, "ln_eps": 1e-5}])
def test_one_mode_at_a_time_equals_the_dense_route(monkeypatch, knobs):
    """Every mode, one at a time, equals the dense route's ratios; a subset equals the dense columns it names."""
    L, d = 8, 8
    stack = StackSpec.of(T=6, d=d, layers=L, heads=2, kernel="causal", seed=3, **knobs).build()
    xbar = random_xbar(d, 3)
    lams, r = nds.measured_ratios(stack, xbar)
    monkeypatch.setattr(S, "BLOCK_BYTES_LIMIT", 0)
    for n in (len(lams), 3):
        got_lams, got, modes = S.measured_ratios(stack, xbar, n=n)
        idx = modes["evaluated"]
        assert modes["form"] == "mode subset" and got_lams == [lams[i] for i in idx]
        assert float((got / r[:, idx] - 1).abs().max()) <= _relative_tolerance(L, d)
    assert modes["max_gap"] > 0 and idx[0] == 0 and idx[-1] == len(lams) - 1


def test_a_wrong_mode_is_caught(monkeypatch):
    """Negative control: the same route fed λ/2 for λ misses the dense ratios by far more than the tolerance."""
    stack, xbar = StackSpec(T=6, d=8, layers=8, heads=2, kernel="causal", seed=1, knobs={"value_scale": 20.0}).build(), random_xbar(8, 1)
    lams, r = nds.measured_ratios(stack, xbar)
    wrong = S.mode_ratios(stack, xbar, [v / 2 for v in lams])
    assert float((wrong / r - 1).abs().max()) > 1e3 * _relative_tolerance(8, 8)


def test_size_threshold():
    """The dense route at GPT-2-small size would hold 3·1024·12·768²·8 bytes (the 58 GB that crashed), over
    the limit, so a subset runs; the ledger's stacks and the trained byte GPT-2 (T = 64, d = 64, L = 4) keep
    every mode."""
    assert S.dense_bytes(1023, 12, 768) == 3 * 1024 * 12 * 768 * 768 * 8
    assert not S.uses_all_modes(1023, 12, 768)
    assert S.uses_all_modes(5, 16, 8) and S.uses_all_modes(63, 4, 64)
    # one mode at a time: L·d² numbers per block set, 57 MB at GPT-2-small size
    assert S.dense_bytes(0, 12, 768) / 3 < 64 * 2**20


def test_select_modes():
    idx = S.select_modes(1023)
    assert len(idx) == S.SCALE_MODES and idx == sorted(set(idx))
    assert idx[:4] == [0, 1, 2, 3] and idx[-1] == 1022          # the slowest in a row, the fastest last
    assert S.select_modes(5, 16) == [0, 1, 2, 3, 4]
    assert S.select_modes(20, 16)[-1] == 19 and len(S.select_modes(20, 16)) == 16
    with pytest.raises(ValueError, match="n=0"):
        S.select_modes(5, 0)


def test_spectral_norm_matches_svd():
    G = torch.randn(3, 2, 9, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ref = torch.linalg.matrix_norm(G, ord=2)
    assert float((S.spectral_norm(G) / ref - 1).abs().max()) <= 10 * 9 * EPS


def test_drawn_stack_too_large_is_na_before_building():
    """A drawn stack at GPT-2-small size: n/a with the autograd route's size as the reason, in no time
    (nothing of size (T·d)² is allocated, and the stack is not built)."""
    spec = StackSpec(T=1024, d=768, layers=12, heads=12, kernel="causal", seed=0)
    v = evaluate("6.4", spec, CheckContext(quick=True))
    assert v.status == "n/a" and "(T·d)²" in v.reason and "T·d = 786432" in v.reason
    assert v.seconds < 1.0
