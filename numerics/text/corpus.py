"""A text corpus that needs no download: the English documentation shipped with CPython.

``pydoc_data.topics`` holds the reference manual's topic pages (about 465k characters in
Python 3.11).  The corpus is their UTF-8 bytes, topics in sorted order separated by a
blank line; tokens are bytes (vocabulary 256).  The split is fixed: the first
``1 − VALIDATION_FRACTION`` of the bytes train, the rest validate.  The text differs
between Python versions, so every checkpoint records the corpus's sha256.

Batches are windows of T bytes at offsets drawn from a generator seeded by the caller.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import torch

VOCAB = 256
VALIDATION_FRACTION = 0.1


@lru_cache(maxsize=1)
def corpus_text() -> str:
    """The documentation text: every ``pydoc_data.topics`` page, in sorted key order."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def corpus_bytes() -> bytes:
    return corpus_text().encode("utf-8")


def corpus_sha256() -> str:
    return hashlib.sha256(corpus_bytes()).hexdigest()


def unigram_entropy(data: bytes) -> float:
    """Entropy (nats/token) of the byte frequencies of ``data``: the loss of the best predictor
    that ignores context."""
    counts = torch.bincount(torch.frombuffer(bytearray(data), dtype=torch.uint8).long(), minlength=VOCAB)
    p = counts[counts > 0].double() / len(data)
    return float(-(p * p.log()).sum())


@dataclass(frozen=True)
class ByteCorpus:
    """The corpus as two int64 token tensors, ``train`` and ``validation``."""

    train: torch.Tensor
    validation: torch.Tensor
    sha256: str

    @classmethod
    def load(cls) -> "ByteCorpus":
        data = corpus_bytes()
        tokens = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
        cut = int(len(tokens) * (1 - VALIDATION_FRACTION))
        return cls(tokens[:cut], tokens[cut:], hashlib.sha256(data).hexdigest())

    def windows(self, split: str, batch: int, T: int, seed: int) -> torch.Tensor:
        """``batch`` windows (batch, T) of split ``train``/``validation`` at seeded offsets."""
        tokens = {"train": self.train, "validation": self.validation}[split]
        if T > len(tokens):
            raise ValueError(f"T={T} is longer than the {split} split ({len(tokens)} tokens)")
        gen = torch.Generator().manual_seed(int(seed))
        starts = torch.randint(len(tokens) - T + 1, (batch,), generator=gen, device="cpu")  # seeded on the host (a CPU generator); indexes the host token array
        return tokens[starts[:, None] + torch.arange(T, device=tokens.device)]

    def validation_windows(self, T: int, max_windows: int) -> torch.Tensor:
        """Non-overlapping validation windows (at most ``max_windows``), the same for every run."""
        n = min(max_windows, len(self.validation) // T)
        return self.validation[: n * T].reshape(n, T)
