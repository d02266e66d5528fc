"""Named scale presets: stack sizes from the toy ledger up to GPT-2 (docs/performance.md, "Scale").

Each preset is a :class:`numerics.stacks.spec.StackSpec` factory: ``preset(name, dtype=..., device=...)``
returns the spec of a random untied pre-LN stack (causal kernel, MLP width 4d) at that size.
The claims' scale forms (``proofs_check.runners.scale``) derive every further stack they need from it
with ``spec.with_(...)`` (another kernel, a slow path, a knob), so a preset fixes T, d, L and
the number of heads, nothing else.

=============  ======  =====  ====  =====
preset         T       d      L     heads
=============  ======  =====  ====  =====
toy            6       4      3     2
ci             256     64     6     4
gpt2-small     1024    768    12    12
gpt2-medium    1024    1024   24    16
gpt2-large     1024    1280   36    20
=============  ======  =====  ====  =====
"""

from __future__ import annotations

from numerics.stacks.spec import DTYPES, StackSpec

#: name -> (T, d, layers, heads); every preset has MLP width 4d (mlp_ratio 4) and the causal kernel.
SIZES: dict[str, tuple[int, int, int, int]] = {
    "toy": (6, 4, 3, 2),
    "ci": (256, 64, 6, 4),
    "gpt2-small": (1024, 768, 12, 12),
    "gpt2-medium": (1024, 1024, 24, 16),
    "gpt2-large": (1024, 1280, 36, 20),
}
PRESET_NAMES = tuple(SIZES)


def check_preset(name: str) -> str:
    if name not in SIZES:
        raise ValueError(f"--scale {name!r} is not a preset (known: {', '.join(PRESET_NAMES)})")
    return name


def preset(name: str, *, dtype: str = "float64", device: str = "cpu", seed: int = 0) -> StackSpec:
    """The spec of preset ``name``: causal kernel, MLP 4d, i.i.d. untied random weights from ``seed``."""
    T, d, layers, heads = SIZES[check_preset(name)]
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not one of {', '.join(DTYPES)}")
    return StackSpec(T=T, d=d, layers=layers, heads=heads, kernel="causal", seed=seed,
                     knobs={"mlp_ratio": 4}, dtype=dtype, device=device)
