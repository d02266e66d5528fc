"""A stack's configuration and the checks every constructor runs before any work.

``StackConfig`` (everything that defines a random stack), ``validate_config``, the registry of
architecture variants (``register_variant``, ``check_arch``), ``check_input`` /
``unchecked_inputs`` (a stack's input X), ``resolve_device``.  ``numerics.stack`` re-exports them.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass

import torch

LN_EPS = 1e-5


@dataclass(frozen=True)
class StackConfig:
    """Everything that defines a random stack; ``random_stack`` validates it."""

    T: int
    d: int
    layers: int
    heads: int
    kernel: str
    P: int | None = None
    gate: float = 0.0
    seed: int = 0
    mlp_ratio: int = 4
    weight_path: str | None = None
    slow_kernel: str = "causal"
    block_size: int | None = None
    value_scale: float = 0.0
    weight_scale: float = 1.0
    decay: float = 0.0
    ln_gain: float = 1.0
    arch: str = "preln"
    step: float | None = None
    activation: str = "gelu"
    ln_eps: float = LN_EPS
    attn_bias: bool = False

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

    The checks are ``numerics.params.StackParams`` (types, ranges, finiteness, what
    ``dtype`` can hold), shared with the CLI; the architecture is checked against the registry.
    """
    from numerics.params import StackParams, _validate

    fields = {k: v for k, v in cfg.as_dict().items() if k != "arch"}
    _validate(StackParams, dict(fields, dtype=dtype))
    check_arch(cfg.arch)
    return cfg


#: arch name -> builder ``f(arch, *, arch_options, dtype, device, **random_stack_kwargs)``.
#: The base stack is "preln"; ``numerics.architectures`` registers the other variants on import.
VARIANTS: dict = {}


def register_variant(arch: str, builder) -> None:
    """Make ``random_stack(..., arch=arch)`` call ``builder``."""
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
