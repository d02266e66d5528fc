"""The byte corpus from pydoc_data.topics: fixed text, fixed split, seeded windows."""

import hashlib
import math
from collections import Counter

import pytest
import torch

from numerics.text import corpus as C
def test_corpus_is_the_sorted_topics_as_bytes_with_a_fixed_split():
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[k] for k in sorted(topics))
    data = text.encode("utf-8")
    assert len(text) > 400_000  # the documentation ships with CPython: no download
    c = C.ByteCorpus.load()
    assert c.sha256 == hashlib.sha256(data).hexdigest() == C.corpus_sha256()
    cut = int(len(data) * 0.9)
    assert bytes(c.train.to(torch.uint8).tolist()) == data[:cut]
    assert bytes(c.validation.to(torch.uint8).tolist()) == data[cut:]


def test_unigram_entropy_against_a_counter():
    data = C.corpus_bytes()[:50_000]
    counts = Counter(data)
    expected = -sum(n / len(data) * math.log(n / len(data)) for n in counts.values())
    assert abs(C.unigram_entropy(data) - expected) <= 1e-12 * expected  # float64 sum of ≤ 256 terms
    assert C.unigram_entropy(b"aaaa") == 0.0  # control: one symbol carries no information
    assert abs(C.unigram_entropy(bytes(range(256))) - math.log(256)) < 1e-12


def test_windows_are_seeded_slices_of_their_split():
    c = C.ByteCorpus.load()
    a = c.windows("train", 4, 32, seed=5)
    assert torch.equal(a, c.windows("train", 4, 32, seed=5))
    assert not torch.equal(a, c.windows("train", 4, 32, seed=6))
    joined = bytes(c.train.to(torch.uint8).tolist())
    for row in a:
        assert bytes(row.to(torch.uint8).tolist()) in joined
    v = c.validation_windows(64, 10)
    assert v.shape == (10, 64) and torch.equal(v.reshape(-1), c.validation[:640])
    with pytest.raises(ValueError, match="T=.*longer than the validation split"):
        c.windows("validation", 1, len(c.validation) + 1, seed=0)
