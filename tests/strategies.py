"""Hypothesis strategies for stacks, as values: sizes biased toward small ones, reaching T = 32, d = 32.

A draw is a :class:`numerics.stacks.spec.StackSpec` (so a failing example prints the exact stack and
reproduces with ``spec.build()``), plus the known hard cases as explicit specs for ``@example``.

Size bias: T and d are drawn from three bands (small, medium, large) with Hypothesis' ``one_of``,
which shrinks toward the first band; with ``max_examples = 10`` about a third of the draws reach
the upper bands, so a CI run sees T, d in 17..32 while most examples stay cheap.
"""

from __future__ import annotations

from hypothesis import strategies as st

from numerics.stacks.spec import StackSpec

KERNELS = ("causal", "full", "block", "alibi")


def banded(lo: int, mid: int, hi: int, top: int) -> st.SearchStrategy[int]:
    """An integer in [lo, top], from three bands [lo, mid], (mid, hi], (hi, top]; shrinks toward lo."""
    return st.one_of(st.integers(lo, mid), st.integers(mid + 1, hi), st.integers(hi + 1, top))


@st.composite
def stack_specs(draw, kernels=KERNELS, max_T: int = 32, max_d: int = 32, max_layers: int = 4,
                decay=(0.0, 0.5)) -> StackSpec:
    """A random preln stack at a token-homogeneous-friendly size (T ≤ max_T, d ≤ max_d)."""
    kernel = draw(st.sampled_from(kernels))
    heads = 1 if kernel == "alibi" else draw(st.sampled_from([1, 2]))
    T = draw(banded(2, 8, 16, max_T))
    if kernel == "block":
        T = max(2, T - T % 2)
    d = heads * max(2, draw(banded(2, 8, 16, max_d)) // heads)
    knobs = {"value_scale": draw(st.sampled_from([0.0, 1.0, 5.0])),
             "weight_scale": draw(st.sampled_from([0.5, 1.0, 2.0])),
             "ln_gain": draw(st.sampled_from([0.5, 1.0, 2.0])),
             "decay": draw(st.sampled_from(list(decay)))}
    if kernel == "block":
        knobs["block_size"] = 2
    return StackSpec(T=T, d=d, layers=draw(st.integers(1, max_layers)), heads=heads, kernel=kernel,
                     seed=draw(st.integers(0, 10**6)), knobs=knobs)


#: Known hard cases: the causal eigenbasis is ill-conditioned past T ≈ 24 (cond S ~ 4^T), ALiBi's
#: kernel has distinct per-head slopes (one head keeps it a single frozen kernel), and the block
#: kernel has repeated eigenvalues within a block.
HARD_CASES = (
    StackSpec(T=24, d=8, layers=3, heads=2, kernel="causal", seed=1),
    StackSpec(T=32, d=8, layers=2, heads=1, kernel="causal", seed=2),
    StackSpec(T=16, d=8, layers=3, heads=1, kernel="alibi", seed=3, knobs={"decay": 0.5}),
    StackSpec(T=16, d=8, layers=3, heads=2, kernel="block", seed=4, knobs={"block_size": 4}),
)
