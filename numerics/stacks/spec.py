"""Stack sources: a :class:`StackSpec` names one stack, and :func:`build` makes it.

Every claim that is a statement about a stack is checked as a function of specs
(``proofs_check.verdicts.on_stack``).  The ledger, the claims × architectures matrix, the scale
presets, the sweeps and trained checkpoints differ only in the specs they hand over.

A spec is a frozen value: the architecture, the sizes, the knobs, the variant's options, the
seed, the dtype and the device; or a checkpoint path whose weights replace the random draw.
Its fields, types, ranges and defaults are declared once, by
:class:`numerics.stacks.params.StackSpecModel`, and read off it here; ``as_dict()`` / ``from_dict()``
round-trip it through JSON (that model is the document's schema, and every spec is checked
against it when it is made), so a sweep row or a ledger entry names exactly the stack it was
measured on.  :func:`build` is the one constructor of a stack: every random stack is
``build(spec)`` (``numerics.stacks.stack._draw`` draws it).
"""

from __future__ import annotations

from dataclasses import asdict, field, make_dataclass, replace

import torch

from numerics.stacks.params import KNOBS, SHAPE_FIELDS, StackSpecModel, _validate
from numerics.stacks.stack_config import DTYPES  # noqa: F401  (a spec's dtype names, importable from here)
#: the fields stored as sorted (name, value) pairs, so that a spec is hashable
PAIRED = ("knobs", "arch_options")


def _declared_field(name: str, info):
    """A dataclass field from the declaration: its default, as pairs for a dict-valued field."""
    default = info.get_default(call_default_factory=True)
    if name in PAIRED:
        return name, tuple, field(default=())
    return name, info.annotation, field(default=default)


def _store_and_check(spec) -> None:
    """Store dict-valued fields as sorted pairs, then check the spec against the declaration."""
    for name in PAIRED:
        value = getattr(spec, name)
        if isinstance(value, dict):
            object.__setattr__(spec, name, tuple(sorted(value.items())))
    _validate(StackSpecModel, spec.as_dict())


def _spec_fields(model=StackSpecModel):
    """The frozen dataclass of ``model``'s fields (the declaration's), checked when made (``__post_init__``)."""
    return make_dataclass("StackFields", [_declared_field(n, f) for n, f in model.model_fields.items()],
                          frozen=True, namespace={"__post_init__": _store_and_check})


class StackSpec(_spec_fields()):
    """One stack, with the fields of :class:`numerics.stacks.params.StackSpecModel`; ``build(spec)`` makes it.

    ``knobs`` and ``arch_options`` are stored as sorted tuples of (name, value) pairs so that
    a spec is hashable; pass dicts, read them back with :meth:`knob`.  ``checkpoint`` names a
    trained stack's checkpoint: its weights are loaded over the drawn ones.
    """

    @classmethod
    def of(cls, **flat) -> "StackSpec":
        """A spec from flat fields: the knobs (``numerics.stacks.params.KNOBS``) beside the spec's own fields,
        a ``torch.dtype`` or ``torch.device`` in place of its name."""
        knobs = {name: flat.pop(name) for name in KNOBS if name in flat}
        if isinstance(flat.get("dtype"), torch.dtype):
            flat["dtype"] = str(flat["dtype"]).removeprefix("torch.")
        if isinstance(flat.get("device"), torch.device):
            flat["device"] = str(flat["device"])
        if "device" in flat and flat["device"] is None:
            flat["device"] = "cpu"
        if flat.get("arch_options") is None:
            flat.pop("arch_options", None)
        return cls(**flat, knobs={**dict(flat.pop("knobs", ())), **knobs})

    def knob(self, name: str, default=None):
        return dict(self.knobs).get(name, default)

    def flat(self) -> dict:
        """The shape fields and every knob (the unset ones at their declared defaults): the fields of
        the configuration a built stack carries (``numerics.stacks.stack.StackConfig``)."""
        from numerics.stacks.params import StackKnobs

        return {**{name: getattr(self, name) for name in SHAPE_FIELDS},
                **StackKnobs(**dict(self.knobs)).model_dump()}

    def with_(self, **changes) -> "StackSpec":
        """A copy with fields replaced; ``knobs``/``arch_options`` given as dicts update the old ones."""
        for name in PAIRED:
            if name in changes and isinstance(changes[name], dict):
                changes[name] = {**dict(getattr(self, name)), **changes[name]}
        return replace(self, **changes)

    def build(self):
        """``build(self)``."""
        return build(self)

    def build_arch(self):
        """The stack as an ``ArchStack`` (state, embed, steps, readout), whatever the architecture."""
        from numerics.stacks.architectures import ArchStack, wrap

        stack = build(self)
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


def build(spec: StackSpec):
    """The stack ``spec`` names: a plain ``Stack`` for preln, an ``ArchStack`` otherwise.

    Every field is checked before a weight is drawn (``numerics.stacks.params.StackParams``, the
    architecture's options, the memory it needs); the weights are drawn in float64 on the CPU
    from ``spec.seed`` and then moved to the dtype and device, so a spec means the same stack
    everywhere; a checkpoint's weights are then loaded over the draw.
    """
    if not isinstance(spec, StackSpec):
        raise TypeError(f"build takes a StackSpec, not {type(spec).__name__}")
    from numerics.stacks.stack import _draw

    stack = _draw(spec)
    if spec.checkpoint is not None:
        from numerics.storage.checkpoint import load_weights

        load_weights(stack, spec.checkpoint)
    return stack
