"""A stack's configuration and the checks every constructor runs before any work.

``StackConfig`` (a built stack's flat configuration, read off ``numerics.stacks.params.StackSpecModel``), ``validate_config``, the registry of
architecture variants (``register_variant``, ``check_arch``), ``check_input`` /
``unchecked_inputs`` (a stack's input X), ``resolve_device``.  ``numerics.stacks.stack`` re-exports them.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, field, make_dataclass

import torch

from numerics.stacks.params import SPEC_DTYPES, StackKnobs

#: a spec's dtype names -> torch dtypes
DTYPES = {name: getattr(torch, name) for name in SPEC_DTYPES}
#: the LayerNorm eps of the base stack: the ``ln_eps`` knob's declared default
LN_EPS = StackKnobs.model_fields["ln_eps"].default


def _config_fields(knobs=StackKnobs):
    """The flat configuration's fields, read off the declaration: the spec's shape fields, then the knobs."""
    from numerics.stacks.params import SHAPE_FIELDS, StackSpecModel

    declared = {**{n: StackSpecModel.model_fields[n] for n in SHAPE_FIELDS}, **knobs.model_fields}
    return make_dataclass("ConfigFields", [(n, f.annotation, field(default=f.get_default()))
                                           for n, f in declared.items()], frozen=True)


class StackConfig(_config_fields()):
    """A built stack's flat configuration (``stack.config``): the shape fields of its spec
    (``numerics.stacks.params.SHAPE_FIELDS``) and every knob, each at its declared default unless set.
    ``numerics.stacks.spec.StackSpec.flat()`` makes one; the spec is what a stack is built from."""

    @property
    def h(self) -> float:
        """The depth step: ``step`` when set (GPT-2: 1), else 1/L."""
        return 1.0 / self.layers if self.step is None else self.step

    @property
    def d_k(self) -> int:
        return self.d // self.heads

    def as_dict(self) -> dict:
        return asdict(self)


def _positive_int(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer")


def _finite(value, name: str) -> None:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be a finite number")


def validate_config(cfg: StackConfig, dtype=None) -> StackConfig:
    """Raise ValueError naming the offending parameter; never fixes anything silently.

    The checks are ``numerics.stacks.params.StackParams`` (types, ranges, finiteness, what
    ``dtype`` can hold), shared with the CLI; the architecture is checked against the registry.
    """
    from numerics.stacks.params import StackParams, _validate

    _validate(StackParams, dict(cfg.as_dict(), dtype=dtype))
    check_arch(cfg.arch)
    return cfg


#: arch name -> builder ``f(spec)`` of the variant a ``numerics.stacks.spec.StackSpec`` names.
#: The base stack is "preln"; ``numerics.stacks.architectures`` registers the other variants on import.
VARIANTS: dict = {}


def register_variant(arch: str, builder) -> None:
    """Make ``build(spec)`` of a spec with ``arch=arch`` call ``builder(spec)``."""
    VARIANTS[arch] = builder


def check_arch(arch: str) -> str:
    known = ("preln", *VARIANTS)
    if arch not in known:
        raise ValueError(f"arch={arch!r} is not one of {', '.join(known)}")
    return arch


def check_input(x: torch.Tensor, T: int, d: int, *, finite: bool = True, name: str = "input X") -> None:
    """Raise ValueError for an input of the wrong shape, or (``finite``) with a NaN or inf entry.

    The error names the tensor and the first bad index.  The causal mask is additive, so one
    non-finite token would reach every row through NaN + (-inf) = NaN in the scores: such
    inputs are refused, like non-finite weights (``Stack.check_finite``).
    """
    if x.dim() < 2 or x.shape[-2:] != (T, d):
        raise ValueError(f"input has shape {tuple(x.shape)}, expected (..., T={T}, d={d})")
    if not (finite and x.is_floating_point()):
        return
    try:
        bad = not bool(torch.isfinite(x).all())
    except RuntimeError:  # under torch.func.vmap a value cannot be inspected; the batch's caller owns it
        return
    if bad:
        index = tuple(int(i) for i in (~torch.isfinite(x)).nonzero()[0])
        raise ValueError(f"{name} has a non-finite entry at index {index} ({float(x[index])}); "
                         "inputs must be finite")


@contextlib.contextmanager
def unchecked_inputs(stack):
    """Within the block, ``stack`` skips the finiteness check of its inputs (for inner loops)."""
    base = getattr(stack, "base", stack)
    previous = base.check_inputs
    base.check_inputs = False
    try:
        yield stack
    finally:
        base.check_inputs = previous


def resolve_device(device) -> torch.device:
    """``None`` -> CPU; "auto" -> CUDA when available else CPU; "cuda" without CUDA is an error."""
    if device is None:
        return torch.device("cpu")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but CUDA is not available on this machine")
    return device
