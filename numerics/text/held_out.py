"""A checkpoint's stack on held-out text: the tokens, the embedding that makes X₀ and the readout.

The claims stated at the token-homogeneous reference 1x̄ᵀ are measured on a trained or imported
checkpoint at the states its own text visits.  The text is the shipped corpus's validation split
(``numerics.text.corpus``: bytes of CPython's documentation, never trained on), cut into windows of the
stack's T tokens.  The tokens depend on the checkpoint's vocabulary:

- a checkpoint of ``fastslow train`` reads bytes (vocabulary 256): the bytes themselves;
- a vocabulary of exactly 256 (a byte-level model, GPT-2's code trained on bytes included) reads the bytes;
- an imported GPT-2 with a larger vocabulary (GPT-2's BPE) reads GPT-2's byte-level tokens: ids 0..255 of GPT-2's
  vocabulary are the 256 bytes in the order of its ``bytes_to_unicode`` table (the printable bytes
  '!'..'~', '¡'..'¬', '®'..'ÿ' first, then the others in increasing order), so every byte of the text
  is one token (a valid GPT-2 encoding of the text, without the BPE merges: no tokenizer file is read);
- a smaller vocabulary (a test's tiny GPT-2) reads the bytes folded onto it, byte mod V.

X₀ is the trained embedding (``embed[tokens]``) or GPT-2's ``wte[tokens] + wpe[0..T−1]``; the logits
are the trained ``LN_f`` and head, or GPT-2's ``ln_f`` and tied head (``numerics.storage.hf_gpt2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

#: validation windows measured per checkpoint
WINDOWS = 4


def gpt2_byte_ids() -> torch.Tensor:
    """(256,) int64: GPT-2's token id of each byte value (its ``bytes_to_unicode`` order)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    order = printable + [b for b in range(256) if b not in printable]
    ids = torch.empty(256, dtype=torch.int64, device="cpu")  # a host lookup table (byte -> id)
    ids[torch.tensor(order, device="cpu")] = torch.arange(256, device="cpu")  # host lookup table
    return ids


def text_tokens(T: int, vocab: int, windows: int = WINDOWS, gpt2: bool = False) -> torch.Tensor:
    """``windows`` non-overlapping validation windows (windows, T) of the corpus in the checkpoint's tokens."""
    from numerics.text.corpus import ByteCorpus

    data = ByteCorpus.load().validation_windows(T, windows)
    if gpt2 and vocab > 256:
        return gpt2_byte_ids()[data]
    return data % vocab if vocab < 256 else data


@dataclass
class HeldOut:
    """A checkpoint's stack with its held-out inputs: ``X0`` (windows, T, d) float64, ``tokens``
    (windows, T), ``logits``: X_L (..., T, d) -> (..., T, V), and where the tokens came from."""

    stack: torch.nn.Module
    tokens: torch.Tensor
    X0: torch.Tensor
    logits: Callable
    vocab: int
    tokenisation: str

    def states(self) -> torch.Tensor:
        """X_0 .. X_L of every window: (L+1, windows, T, d)."""
        with torch.no_grad():
            return self.stack.trajectory(self.X0)

    def window(self, w: int) -> "HeldOut":
        """Window ``w`` alone (tokens (1, T), X0 (1, T, d))."""
        return HeldOut(self.stack, self.tokens[w:w + 1], self.X0[w:w + 1], self.logits, self.vocab, self.tokenisation)

    def per_token_losses(self, X_L: torch.Tensor) -> torch.Tensor:
        """ℓ_t = −log softmax(logits(x_{L,t}))[y_{t+1}] for t = 0..T−2 (the next token), (..., T−1)."""
        logp = torch.log_softmax(self.logits(X_L)[..., :-1, :], dim=-1)
        return -logp.gather(-1, self.tokens[..., 1:, None].expand(*logp.shape[:-2], -1, 1))[..., 0]


def load(spec, windows: int = WINDOWS) -> HeldOut:
    """The held-out inputs of the checkpoint ``spec.checkpoint`` (a ``numerics.stacks.spec.StackSpec``), float64."""
    from numerics.storage import checkpoint as ckpt
    from numerics.storage import hf_gpt2
    from numerics.stacks.stack import layer_norm

    tensors, manifest = ckpt.load(spec.checkpoint)
    stack = spec.with_(dtype="float64").build()
    T = stack.config.T
    if "outside" in tensors:                      # an imported GPT-2 (proofs_check.runners.import_hf)
        outside = {k: v.to(torch.float64) for k, v in tensors["outside"].items()}
        vocab = outside["embedding.wte"].shape[0]
        tokens = text_tokens(T, vocab, windows, gpt2=True)
        eps = stack.config.ln_eps
        tokenisation = ("GPT-2 byte-level ids (bytes_to_unicode order)" if vocab > 256 else "bytes" if vocab == 256
                        else f"bytes folded onto the vocabulary of {vocab} (byte mod {vocab})")
        return HeldOut(stack, tokens, hf_gpt2.embed(outside, tokens), lambda X: hf_gpt2.readout(outside, X, eps),
                       vocab, tokenisation)
    model = {k: v.to(torch.float64) for k, v in tensors["model"].items()}
    embed, head, bias = model["embed"], model["head"], model["head_bias"]
    gamma, beta = model["ln_f.gamma"], model["ln_f.beta"]
    vocab = embed.shape[0]
    tokens = text_tokens(T, vocab, windows)

    def logits(X):
        return layer_norm(X, gamma, beta) @ head + bias

    return HeldOut(stack, tokens, embed[tokens], logits, vocab,
                   "bytes" if vocab == 256 else f"bytes folded onto the vocabulary of {vocab}")
