"""numerics.families.layer_systems.top_singular_value: ‖M‖₂ from the largest eigenvalue of MᵀM alone.

Independent route: torch's SVD (``matrix_norm(ord=2)``).  Both compute σ_max to O(n·u) relative error (the
eigenvalue of the symmetric MᵀM to n·u·‖M‖², its square root halves the relative error); the assertion allows
4·n·u.  Negative control: the smallest eigenvalue (an index off by the spectrum's length) misses by the
condition number's worth, far outside it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings, strategies as st
from scipy.linalg import eigh

from numerics.families.layer_systems import spectral_norm, top_singular_value

U64 = float(torch.finfo(torch.float64).eps) / 2


def _matrix(n: int, seed: int, batch: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, n, n, generator=g, dtype=torch.float64, device="cpu") / n ** 0.5


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 96), seed=st.integers(0, 2**16), batch=st.integers(1, 3))
@example(n=768, seed=0, batch=1)          # the scale forms' size (gpt2-small's d)
@example(n=2, seed=1, batch=1)
def test_matches_the_svd_within_n_u(n, seed, batch):
    M = _matrix(n, seed, batch)
    svd = torch.linalg.matrix_norm(M, ord=2)
    top = top_singular_value(M)
    tol = 4 * n * U64                     # O(n·u) relative, both routes
    assert top.shape == svd.shape
    assert torch.all((top - svd).abs() <= tol * svd), ((top - svd).abs() / svd).max()
    assert torch.all((top - spectral_norm(M)).abs() <= tol * svd)


def test_control_the_smallest_eigenvalue_is_refused():
    """An off-by-the-spectrum index (σ_min in place of σ_max) misses by σ_max − σ_min ≫ 4·n·u·σ_max."""
    M = _matrix(64, 3, 1)[0]
    S = (M.T @ M).numpy()
    smallest = float(np.sqrt(max(eigh(S, eigvals_only=True, subset_by_index=[0, 0])[0], 0.0)))
    svd = float(torch.linalg.matrix_norm(M, ord=2))
    assert abs(smallest - svd) > 1e6 * 4 * 64 * U64 * svd      # the control's miss, predicted ≈ σ_max
    assert abs(float(top_singular_value(M)) - svd) <= 4 * 64 * U64 * svd


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_stays_on_the_device():
    M = _matrix(32, 0, 2).cuda()
    assert top_singular_value(M).device == M.device
