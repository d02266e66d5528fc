"""The language model the trainer fits (docs/theory.md §0) and its next-token loss.

Token embedding -> an untied stack (``numerics.stacks.stack``) -> final LN -> linear head, trained on
next-token cross-entropy; ``local_causal_bias`` restricts a fast path to the current block
(Claim 7.3's ``fast_kernel="local"``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from numerics.stacks.stack import LayerNorm


class LanguageModel(nn.Module):
    """Embedding (V, d) -> ``stack`` -> LN -> head (d, V) + bias; logits (..., T, V).

    The embedding and head are drawn from ``seed`` (float64, then cast), the stack is given.
    ``freeze_gates`` keeps every slow-path gate at its initial value (requires_grad False).
    """

    def __init__(self, V: int, stack: nn.Module, seed: int, dtype=torch.float32, freeze_gates: bool = False):
        super().__init__()
        d = stack.config.d
        gen = torch.Generator().manual_seed(10_007 * seed + 1)
        self.embed = nn.Parameter(torch.randn(V, d, generator=gen, dtype=torch.float64, device="cpu").to(dtype))
        self.stack = stack
        self.ln_f = LayerNorm(d).to(dtype)
        self.head = nn.Parameter((torch.randn(d, V, generator=gen, dtype=torch.float64, device="cpu") / math.sqrt(d)).to(dtype))  # seeded on the host (a CPU generator)
        self.head_bias = nn.Parameter(torch.zeros(V, dtype=dtype, device=self.embed.device))
        if freeze_gates:
            for g in self.gates():
                g.requires_grad_(False)

    def gates(self) -> list[nn.Parameter]:
        return [layer.gate for layer in self.stack.layers if getattr(layer, "slow", None) is not None]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.ln_f(self.stack(self.embed[tokens])) @ self.head + self.head_bias


def next_token_losses(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """Cross-entropy (batch, T−1) of predicting token t+1 from tokens ≤ t (nats); the first
    token of a sequence is never predicted."""
    logits = model(tokens)[:, :-1]
    target = tokens[:, 1:]
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                       reduction="none").reshape(target.shape)


def next_token_loss(model: nn.Module, tokens: torch.Tensor, positions: slice = slice(None)) -> torch.Tensor:
    """Mean next-token cross-entropy (nats/token) over ``positions`` of the predicted token."""
    return next_token_losses(model, tokens)[:, positions].mean()


def local_causal_bias(T: int, P: int, heads: int, dtype) -> torch.Tensor:
    """Score bias (heads, T, T): token i sees token j iff j ≤ i and both lie in the same block."""
    i = torch.arange(T, device="cpu")  # a host mask; the module's .to(device) moves the bias
    allowed = (i[None, :] <= i[:, None]) & (i[None, :] // P == i[:, None] // P)
    bias = torch.zeros(heads, T, T, dtype=dtype, device="cpu")  # as the mask
    return bias.masked_fill(~allowed, -math.inf)
