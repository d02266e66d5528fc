"""``mhc``: n residual streams mixed by Sinkhorn-projected (or unconstrained) matrices, and the
Sinkhorn iteration with its generated tolerance; see ``numerics.stacks.architectures``."""

from __future__ import annotations

import math

import torch
from torch import nn

from numerics.stacks import stack as S
from numerics.stacks.architectures.base import ArchStack, _depth_draws
from numerics.generated import architectures as gen

MIXINGS = ("sinkhorn", "unconstrained")


def sinkhorn(M: torch.Tensor, iters: int) -> torch.Tensor:
    """Sinkhorn–Knopp on a positive matrix: ``iters`` rounds of row- then column-normalisation.

    Columns sum to 1 exactly after each round; row sums converge linearly (see
    ``theory.architectures``: Hilbert-metric contraction rate tanh(Δ(M)/4)² per round).
    """
    S._positive_int(iters, "iters")
    if not bool((M > 0).all()):
        raise ValueError("sinkhorn needs a matrix with positive entries")
    for _ in range(iters):
        M = M / M.sum(-1, keepdim=True)
        M = M / M.sum(-2, keepdim=True)
    return M


def hilbert_diameter(M: torch.Tensor) -> torch.Tensor:
    """Δ(M) = log max_{ijkl} M_ij M_kl / (M_il M_kj), the projective diameter of a positive matrix."""
    logm = torch.log(M)
    if logm.dim() != 2 or logm.shape[0] != logm.shape[1]:
        raise ValueError(f"M has shape {tuple(M.shape)}, expected a square (n, n) matrix")
    cross = (logm[:, :, None, None] + logm[None, None, :, :]       # log M_ij + log M_kl
             - logm[:, None, None, :] - logm.T[None, :, :, None])   # − log M_il − log M_kj
    return cross.amax()


def sinkhorn_tolerance(M: torch.Tensor, iters: int) -> torch.Tensor:
    """Bound on max_i |row sum − 1| of ``sinkhorn(M, iters)`` (theory.architectures, generated).

    Linear convergence at the Birkhoff–Hopf rate κ² = tanh(Δ(M)/4)² per round, from the
    Hilbert distance d₁ of the row sums to 1 after the first round.
    """
    S._positive_int(iters, "iters")
    rate = gen.sinkhorn_rate(hilbert_diameter(M))
    r1 = sinkhorn(M, 1).sum(-1)
    d1 = torch.log(r1.max() / r1.min())
    return gen.sinkhorn_marginal_bound(rate, d1, torch.tensor(float(iters), dtype=M.dtype, device=M.device))


class MHC(ArchStack):
    """n residual streams (feature blocks of the state) mixed by H_ℓ, read by α_ℓ, written by β_ℓ."""

    arch = "mhc"
    CAPABILITIES = frozenset({"mode_block_formula"})
    MODE_BLOCK_FORMULA = "theory.architectures.mhc_mode_block (H ⊗ I + βαᵀ ⊗ (G(λ) − I))"
    OPTIONS = {"streams": 4, "sinkhorn_iters": 20, "mixing": "sinkhorn", "mixing_scale": 1.0}

    @classmethod
    def check_options(cls, options):
        S._positive_int(options["streams"], "streams")
        S._positive_int(options["sinkhorn_iters"], "sinkhorn_iters")
        if options["mixing"] not in MIXINGS:
            raise ValueError(f"mixing={options['mixing']!r} is not one of {', '.join(MIXINGS)}")
        S._finite(options["mixing_scale"], "mixing_scale")

    def __init__(self, config, options, base, gen, dtype, device):
        super().__init__(config, options, base, gen, dtype, device)
        n, L = options["streams"], config.layers
        self.n = n
        logits = _depth_draws((n, n), L, config, gen) * options["mixing_scale"]
        self.mix_logits = nn.Parameter(logits.to(dtype=dtype, device=device))
        self.pre_logits = nn.Parameter(_depth_draws((n,), L, config, gen).to(dtype=dtype, device=device))
        self.post_logits = nn.Parameter(_depth_draws((n,), L, config, gen).to(dtype=dtype, device=device))

    @property
    def features(self):
        return self.n * self.config.d

    def stream_mixing(self) -> torch.Tensor:
        """H_ℓ for every layer, (L, n, n): Sinkhorn-projected (default) or unconstrained."""
        if self.options["mixing"] == "sinkhorn":
            return sinkhorn(torch.exp(self.mix_logits), self.options["sinkhorn_iters"])
        eye = torch.eye(self.n, dtype=self.mix_logits.dtype, device=self.mix_logits.device)
        return eye + self.mix_logits / math.sqrt(self.n)

    def read_weights(self) -> torch.Tensor:
        """α_ℓ = sigmoid(a_ℓ), (L, n)."""
        return torch.sigmoid(self.pre_logits)

    def write_weights(self) -> torch.Tensor:
        """β_ℓ = 2·sigmoid(b_ℓ), (L, n)."""
        return 2.0 * torch.sigmoid(self.post_logits)

    def composite_gain(self) -> torch.Tensor:
        """‖H_{ℓ} ⋯ H_0‖₂ for ℓ = 0..L−1: the residual streams' composite gain over depth."""
        H = self.stream_mixing()
        prod = torch.eye(self.n, dtype=H.dtype, device=H.device)
        gains = []
        for ell in range(H.shape[0]):
            prod = H[ell] @ prod
            gains.append(torch.linalg.matrix_norm(prod, ord=2))
        return torch.stack(gains)

    def embed(self, x):
        return torch.cat([x] * self.n, dim=-1)

    def readout(self, s):
        return s.reshape(*s.shape[:-1], self.n, self.config.d).mean(-2)

    def _mix(self, i, s, apply):
        d, n = self.config.d, self.n
        streams = s.reshape(*s.shape[:-1], n, d)
        alpha, beta, H = self.read_weights()[i], self.write_weights()[i], self.stream_mixing()[i]
        y = torch.einsum("j,...jd->...d", alpha, streams)
        incr = apply(self.base.layers[i], y) - y
        out = torch.einsum("ij,...jd->...id", H, streams) + beta[:, None] * incr.unsqueeze(-2)
        return out.reshape(*s.shape)

    def step(self, i, s):
        return self._mix(i, s, lambda layer, y: layer(y))

    def token_step(self, i, sbar):
        return self._mix(i, sbar, lambda layer, y: layer.token_map(y))
