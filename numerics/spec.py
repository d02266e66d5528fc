"""Stack sources: a :class:`StackSpec` names one stack, and ``build()`` makes it.

Every claim that is a statement about a stack is checked as a function of specs
(``proofs_check.verdicts.on_stack``).  The ledger, the claims × architectures matrix, the scale
presets, the sweeps and trained checkpoints differ only in the specs they hand over.

A spec is a frozen value: the architecture, the sizes, the ``random_stack`` knobs, the
variant's options, the seed, the dtype and the device; or a checkpoint path whose
weights replace the random draw.  ``as_dict()`` / ``from_dict()`` round-trip it through
JSON, so a sweep row or a ledger entry names exactly the stack it was measured on.
:class:`numerics.params.StackSpecModel` is that JSON document's schema (a checkpoint manifest's ``spec``, a
sweep row's stack): every spec is checked against it when it is made.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import torch

from numerics.params import SPEC_DTYPES, StackSpecModel, _validate

DTYPES = {name: getattr(torch, name) for name in SPEC_DTYPES}


@dataclass(frozen=True)
class StackSpec:
    """One stack: ``random_stack(T, d, layers, heads, kernel, P=P, seed=seed, **knobs, arch=arch)``.

    ``knobs`` and ``arch_options`` are stored as sorted tuples of (name, value) pairs so that
    a spec is hashable; pass dicts, read them back with :meth:`knob`.  ``checkpoint`` names a
    trained stack's checkpoint: its weights are loaded over the drawn ones.
    """

    T: int = 6
    d: int = 4
    layers: int = 3
    heads: int = 2
    kernel: str = "causal"
    P: int | None = None
    arch: str = "preln"
    seed: int = 0
    knobs: tuple = field(default_factory=tuple)
    arch_options: tuple = field(default_factory=tuple)
    dtype: str = "float64"
    device: str = "cpu"
    checkpoint: str | None = None

    def __post_init__(self):
        for name in ("knobs", "arch_options"):
            value = getattr(self, name)
            if isinstance(value, dict):
                object.__setattr__(self, name, tuple(sorted(value.items())))
        _validate(StackSpecModel, self.as_dict())

    def knob(self, name: str, default=None):
        return dict(self.knobs).get(name, default)

    def with_(self, **changes) -> "StackSpec":
        """A copy with fields replaced; ``knobs``/``arch_options`` given as dicts update the old ones."""
        for name in ("knobs", "arch_options"):
            if name in changes and isinstance(changes[name], dict):
                changes[name] = {**dict(getattr(self, name)), **changes[name]}
        return replace(self, **changes)

    def build(self):
        """The stack this spec names (a plain ``Stack`` for preln, an ``ArchStack`` otherwise)."""
        from numerics.stack import random_stack

        stack = random_stack(self.T, self.d, self.layers, self.heads, self.kernel, P=self.P, seed=self.seed,
                             dtype=DTYPES[self.dtype], device=self.device, arch=self.arch,
                             arch_options=dict(self.arch_options) or None, **dict(self.knobs))
        if self.checkpoint is not None:
            from numerics.checkpoint import load_weights

            load_weights(stack, self.checkpoint)
        return stack

    def build_arch(self):
        """The stack as an ``ArchStack`` (state, embed, steps, readout), whatever the architecture."""
        from numerics.architectures import ArchStack, wrap

        stack = self.build()
        return stack if isinstance(stack, ArchStack) else wrap(stack)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["knobs"], out["arch_options"] = dict(self.knobs), dict(self.arch_options)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "StackSpec":
        return cls(**data)

    def label(self) -> str:
        """Short human-readable name: arch, kernel, sizes and non-default knobs."""
        extra = "".join(f" {k}={v}" for k, v in self.knobs)
        P = f" P={self.P}" if self.P else ""
        return (f"{self.arch}/{self.kernel} T={self.T} d={self.d} L={self.layers} H={self.heads}{P}"
                f" seed={self.seed}{extra}")
