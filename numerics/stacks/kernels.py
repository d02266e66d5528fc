"""Attention kernels (docs/theory.md §0, §2): masks, biases, frozen kernels, block pooling.

A *kernel* is the token-mixing pattern of one attention path: which token may see
which (the mask) plus an additive score bias (ALiBi).  At a token-homogeneous state
every score row is constant, so the attention matrix reduces to the **frozen
kernel** ``softmax(mask, bias)`` — independent of W_Q, W_K and of the state.

Conventions: tokens are rows, T tokens, blocks of P tokens (T = nP).
"""

from __future__ import annotations

import math

import torch

KERNELS = ("causal", "full", "alibi", "block")
SLOW_KERNELS = ("causal", "full")


def check_kernel(kernel: str, *, name: str = "kernel", allowed=KERNELS) -> str:
    """Return ``kernel`` if known, else raise a ValueError naming the parameter."""
    if kernel not in allowed:
        raise ValueError(f"{name}={kernel!r} is not one of {', '.join(allowed)}")
    return kernel


def alibi_slopes(heads: int) -> list[float]:
    """Per-head ALiBi slopes m_h = 2^(-8(h+1)/heads) (Press et al.); distinct for heads > 1."""
    return [2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)]


def allowed_mask(T: int, kernel: str, block_size: int | None = None, device=None) -> torch.Tensor:
    """Boolean (T, T) mask: entry (i, j) is True when token i may attend to token j.

    ``causal``/``alibi``: j <= i.  ``full``: all.  ``block``: block-causal — full
    within a block and to every earlier block (needs ``block_size``).
    """
    check_kernel(kernel)
    i = torch.arange(T, device=device)
    if kernel == "full":
        return torch.ones(T, T, dtype=torch.bool, device=device)
    if kernel == "block":
        if block_size is None:
            raise ValueError("kernel='block' needs block_size (or P) to define its blocks")
        check_divisible(T, block_size, "block_size")
        b = i // block_size
        return b[None, :] <= b[:, None]
    return i[None, :] <= i[:, None]


def score_bias(T: int, heads: int, kernel: str, block_size: int | None = None,
               dtype=torch.float64, device=None) -> torch.Tensor:
    """Additive score bias (heads, T, T): -inf where masked, -m_h (i - j) for ALiBi, else 0.

    ALiBi is computed in float64 from integer distances and rounded once to ``dtype`` (in
    bfloat16, positions past 256 are not representable, so i − j must not be formed there)."""
    mask = allowed_mask(T, kernel, block_size, device)
    bias = torch.zeros(heads, T, T, dtype=dtype, device=device)
    if kernel == "alibi":
        i = torch.arange(T, device=device)
        slopes = torch.tensor(alibi_slopes(heads), dtype=torch.float64, device=device)
        bias = (-slopes[:, None, None] * (i[:, None] - i[None, :])).to(dtype)
    return bias.masked_fill(~mask, -math.inf)


def frozen_kernels(T: int, heads: int, kernel: str, block_size: int | None = None,
                   dtype=torch.float64, device=None) -> torch.Tensor:
    """The frozen kernels A_h = softmax(bias_h) row-wise, shape (heads, T, T).

    At a token-homogeneous state the scores q_i·k_j are the same for all (i, j), so
    they cancel in the softmax and only the mask/bias remain.  Rows sum to 1, so A1 = 1.
    """
    return torch.softmax(score_bias(T, heads, kernel, block_size, dtype, device), dim=-1)


def check_divisible(T: int, P: int, name: str = "P") -> None:
    if not isinstance(P, int) or P < 1:
        raise ValueError(f"{name}={P!r} must be a positive integer")
    if T % P:
        raise ValueError(f"T={T} is not divisible by {name}={P}: blocks of {P} tokens need T = n*{P}")


def pool_matrix(T: int, P: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """Block-mean pooling Π = I_n ⊗ 1ᵀ/P, shape (n, T)."""
    check_divisible(T, P)
    n = T // P
    return torch.kron(torch.eye(n, dtype=dtype, device=device),
                      torch.full((1, P), 1.0 / P, dtype=dtype, device=device))


def lift_matrix(T: int, P: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """Lift Π⁺ = I_n ⊗ 1, shape (T, n): each block token receives its block's value."""
    check_divisible(T, P)
    n = T // P
    return torch.kron(torch.eye(n, dtype=dtype, device=device),
                      torch.ones(P, 1, dtype=dtype, device=device))


def block_shift_matrix(n: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """One-block shift (n, n): block b receives block b-1's value; block 0 receives zero
    (n = 1: the 1×1 zero matrix, which ``torch.diag`` of an empty subdiagonal already is)."""
    return torch.diag(torch.ones(n - 1, dtype=dtype, device=device), -1)


def persistent_left_vector(A: torch.Tensor) -> torch.Tensor:
    """Left eigenvector w of a row-stochastic kernel A for λ = 1 with wᵀ1 = 1 (the persistent
    component wᵀX).

    Causal kernel: w = e₁ (the first token, an attention sink); full: w = 1/T.
    Solved as a square system: the rows of Aᵀ − I sum to zero (A1 = 1), so with a simple
    eigenvalue 1 any T − 1 of them are independent, and the last one is replaced by the
    normalisation 1ᵀw = 1 (1 is not in range(A − I), since wᵀ1 ≠ 0).  An LU solve is
    bit-reproducible from call to call; the least-squares driver ``gelsy`` is not (its result
    depends on the memory alignment of its work arrays).
    """
    if A.dim() != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be one square (T, T) kernel, got shape {tuple(A.shape)}")
    M = A.mT.clone()
    M.diagonal().sub_(1.0)
    M[-1] = 1.0
    rhs = torch.zeros_like(M[:, :1])
    rhs[-1] = 1.0
    return torch.linalg.solve(M, rhs)[:, 0]
