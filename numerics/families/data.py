"""Synthetic block data for Claim 7.3: blocks of P tokens from a categorical emission
whose parameter is i.i.d. (ρ = 0) or AR(1)-linked (ρ > 0) across blocks.

The emission parameter of block b is θ_{z_b}, one of M topics (categorical
distributions over V tokens, drawn once per dataset from a symmetric Dirichlet).  The
topic follows the Markov-switching chain "keep z_{b−1} with probability ρ, else redraw
uniformly", whose one-hot indicator is a discrete AR(1):
E[e_{z_b} | z_{b−1}] = ρ e_{z_{b−1}} + (1 − ρ)/M (theory.emissions.topic_transition_expr).
This choice keeps the Bayes-optimal next-token predictor exact (a forward filter over
M topics), so the loss gap Claim 7.2 predicts can be computed, not bounded.

Everything is seeded: the topics by ``seed``, each batch by its own integer seed.
"""

from __future__ import annotations

from dataclasses import dataclass, asdict

import torch


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")


@dataclass(frozen=True)
class TopicBlocks:
    """A block-data source: V tokens, M topics, blocks of P, topic persistence ρ ∈ [0, 1)."""

    V: int = 16
    M: int = 4
    P: int = 8
    rho: float = 0.0
    concentration: float = 0.3
    seed: int = 0

    def __post_init__(self):
        for name in ("V", "M", "P"):
            _check_positive_int(getattr(self, name), name)
        if not (0.0 <= self.rho < 1.0):
            raise ValueError(f"rho={self.rho!r} must lie in [0, 1)")
        if not self.concentration > 0:
            raise ValueError(f"concentration={self.concentration!r} must be positive")
        if not isinstance(self.seed, int):
            raise ValueError(f"seed={self.seed!r} must be an integer")

    def as_dict(self) -> dict:
        return asdict(self)

    def topics(self, dtype=torch.float64) -> torch.Tensor:
        """The M emission distributions θ_z, shape (M, V), rows summing to 1."""
        gen = torch.Generator().manual_seed(self.seed)
        conc = torch.full((self.V,), float(self.concentration), dtype=torch.float64, device="cpu")  # the Dirichlet draw below uses a CPU generator
        # Dirichlet via normalised Gammas, drawn with our generator (torch.distributions has none).
        draws = torch._standard_gamma(conc.expand(self.M, self.V).contiguous(), generator=gen)
        return (draws / draws.sum(-1, keepdim=True)).to(dtype)

    def sample(self, batch: int, T: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens (batch, T) int64 and block topics (batch, T/P) int64 for batch seed ``seed``."""
        _check_positive_int(batch, "batch")
        _check_positive_int(T, "T")
        if T % self.P:
            raise ValueError(f"T={T} is not divisible by P={self.P}")
        n = T // self.P
        gen = torch.Generator().manual_seed(int(seed))
        fresh = torch.randint(self.M, (batch, n), generator=gen, device="cpu")  # seeded on the host (a CPU generator)
        keep = torch.rand(batch, n, generator=gen, dtype=torch.float64, device="cpu") < self.rho  # seeded on the host (a CPU generator)
        z = fresh.clone()
        for b in range(1, n):
            z[:, b] = torch.where(keep[:, b], z[:, b - 1], fresh[:, b])
        probs = self.topics()[z]                                   # (batch, n, V)
        u = torch.rand(batch, n, self.P, generator=gen, dtype=torch.float64, device="cpu")  # seeded on the host (a CPU generator)
        cdf = probs.cumsum(-1)
        cdf[..., -1] = 1.0  # the last bin closes at 1 exactly (u < 1), whatever the rounding
        tokens = (u[..., None] >= cdf[:, :, None, :]).sum(-1)
        return tokens.reshape(batch, T), z
