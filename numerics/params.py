"""The stack's parameters: one declaration of every knob of ``random_stack``, checked before work.

:class:`StackParams` (pydantic, strict, ``extra="forbid"``) states each argument's type, range,
finiteness and whether the stack's dtype can hold it: a nonzero gate below the dtype's smallest
normal number would be stored as 0 (1e-50 in float32), and any float knob at or above
√(largest finite value) of the dtype overflows the forward pass, because LayerNorm squares the
residual stream.  A refusal is an :class:`InvalidInput` (a ``ValueError``) whose message is one
line naming the parameter, the value and what is allowed.  The application's validation layer
(``proofs_check.validation``) builds its command models on these.
"""

from __future__ import annotations

import math
import numbers
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator, model_validator

#: the seed range: torch.Generator.manual_seed takes 64-bit seeds and simulate uses seed + 1.
SEED_MAX = 2**63 - 1
DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16")
FLOAT_KNOBS = ("gate", "value_scale", "weight_scale", "decay", "ln_gain")
#: the MLP activations of the stack (``numerics.stack.ACTIVATIONS``): exact GELU and GPT-2's tanh form.
ACTIVATION_NAMES = ("gelu", "gelu_new")


class InvalidInput(ValueError):
    """Bad input, refused before any work: one line naming the parameter."""


# -- field types -------------------------------------------------------------------------
def _integral(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError("must be an integer")
    return int(value)


def _positive_int(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError("must be a positive integer")
    return int(value)


def _optional_positive_int(value):
    return None if value is None else _positive_int(value)


def _real(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)


Int = Annotated[int, BeforeValidator(_integral)]
PositiveInt = Annotated[int, BeforeValidator(_positive_int)]
OptionalPositiveInt = Annotated[int | None, BeforeValidator(_optional_positive_int)]
Real = Annotated[float, BeforeValidator(_real)]


def _message(exc: ValidationError, data: dict) -> str:
    """The first pydantic error as one line naming the parameter and its value."""
    err = exc.errors()[0]
    loc = err["loc"]
    name = str(loc[0]) if loc else "input"
    if err["type"] == "value_error":
        text = str(err["ctx"]["error"])
        if text.startswith(("must ", "is ")) and loc:
            value = data.get(loc[0], err.get("input"))
            return f"{name}={value!r} {text}"
        return text
    if err["type"] == "extra_forbidden":
        return f"{name} is not a parameter here"
    value = err.get("input")
    return f"{name}={value!r}: {err['msg'][0].lower()}{err['msg'][1:]}"


def _validate(model: type[BaseModel], data: dict) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(_message(exc, data)) from None


def magnitude_limit(dtype) -> float:
    """√(largest finite value): LayerNorm squares the residual stream, so larger knobs overflow."""
    import torch

    return math.sqrt(torch.finfo(dtype).max)


def check_representable(name: str, value: float, dtype) -> None:
    """Refuse a nonzero value the dtype would store as 0 or a subnormal, or that overflows it."""
    import torch

    info = torch.finfo(dtype)
    limit = magnitude_limit(dtype)
    allowed = f"allowed: 0 or {info.tiny:.3g} ≤ |{name}| < {limit:.3g} in {str(dtype).replace('torch.', '')}"
    if value != 0 and abs(value) < info.tiny:
        stored = float(torch.tensor(value, dtype=torch.float64).to(dtype))
        raise InvalidInput(f"{name}={value!r} cannot be held by the stack's dtype (stored as {stored!r}); "
                           + allowed)
    if abs(value) >= limit:
        raise InvalidInput(f"{name}={value!r} overflows the forward pass (LayerNorm squares the residual "
                           "stream); " + allowed)


# -- the stack --------------------------------------------------------------------------
class StackParams(BaseModel):
    """The arguments of ``random_stack`` (docs/theory.md §0), each checked before a weight is drawn."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, arbitrary_types_allowed=True)

    T: PositiveInt
    d: PositiveInt
    layers: PositiveInt
    heads: PositiveInt
    kernel: str
    P: OptionalPositiveInt = None
    gate: Real = 0.0
    seed: Int = 0
    mlp_ratio: PositiveInt = 4
    weight_path: str | None = None
    slow_kernel: str = "causal"
    block_size: OptionalPositiveInt = None
    value_scale: Real = 0.0
    weight_scale: Real = 1.0
    decay: Real = 0.0
    ln_gain: Real = 1.0
    dtype: Any = None
    step: Annotated[float | None, BeforeValidator(lambda v: None if v is None else _real(v))] = None
    activation: str = "gelu"
    ln_eps: Real = 1e-5
    attn_bias: bool = False

    @field_validator("step", "ln_eps")
    @classmethod
    def _positive_real(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be positive (the depth step h, the LN eps)")
        return value

    @field_validator("activation")
    @classmethod
    def _activation(cls, value: str) -> str:
        if value not in ACTIVATION_NAMES:
            raise ValueError(f"is not one of {', '.join(ACTIVATION_NAMES)}")
        return value

    @field_validator("seed")
    @classmethod
    def _seed(cls, value: int) -> int:
        if not 0 <= value <= SEED_MAX:
            raise ValueError(f"is out of range: a seed is an integer in [0, 2**63 - 1 = {SEED_MAX}]")
        return value

    @field_validator("weight_scale")
    @classmethod
    def _weight_scale(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be positive")
        return value

    @field_validator("decay")
    @classmethod
    def _decay(cls, value: float) -> float:
        if value < 0:
            raise ValueError("must be >= 0 (X' = (1 - h*decay) X + ...)")
        return value

    @field_validator("value_scale")
    @classmethod
    def _value_scale(cls, value: float) -> float:
        if value < 0:
            raise ValueError("must be >= 0 (W_VO ≈ c·I + noise, c ≥ 0)")
        return value

    @field_validator("ln_gain")
    @classmethod
    def _ln_gain(cls, value: float) -> float:
        if value < 0:
            raise ValueError("must be >= 0 (the LN gains are drawn as γ ≈ ln_gain + noise, a scale)")
        return value

    @model_validator(mode="after")
    def _structure(self) -> "StackParams":
        import torch

        from numerics import kernels as K

        if self.d % self.heads:
            raise ValueError(f"heads={self.heads} does not divide d={self.d}")
        K.check_kernel(self.kernel)
        K.check_kernel(self.slow_kernel, name="slow_kernel", allowed=K.SLOW_KERNELS)
        if self.P is not None:
            K.check_divisible(self.T, self.P, "P")
        if self.block_size is not None:
            K.check_divisible(self.T, self.block_size, "block_size")
        if self.kernel == "block" and self.block_size is None and self.P is None:
            raise ValueError("kernel='block' needs block_size or P to define its blocks")
        if self.gate != 0.0 and self.P is None:
            raise ValueError(f"gate={self.gate} needs the slow path: set P (block length)")
        if self.weight_path not in (None, "smooth"):
            raise ValueError(f"weight_path={self.weight_path!r} is not one of None, 'smooth'")
        dtype = self.dtype if self.dtype is not None else torch.float64
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype={dtype!r} must be a floating torch dtype")
        for name in FLOAT_KNOBS:
            check_representable(name, getattr(self, name), dtype)
        return self


def validate_stack(**kwargs) -> StackParams:
    """Check ``random_stack``'s arguments, then that the stack fits in memory."""
    params = _validate(StackParams, kwargs)
    from numerics.memory import check_fits, stack_bytes

    check_fits(stack_bytes(params.T, params.d, params.layers, params.heads, params.P,
                           mlp_ratio=params.mlp_ratio, dtype=params.dtype),
               what=f"a stack with T={params.T} d={params.d} layers={params.layers} heads={params.heads}")
    return params


# -- a stack spec's entries (numerics.spec.StackSpec) ---------------------------------------
#: the fields of a ``StackSpec`` as ``as_dict()`` writes them (a checkpoint manifest's ``spec``)
SPEC_FIELDS = ("T", "d", "layers", "heads", "kernel", "P", "arch", "seed", "knobs", "arch_options",
               "dtype", "device", "checkpoint")
#: the dtypes a spec may name
SPEC_DTYPES = ("float64", "float32")
#: ``random_stack`` keyword arguments a spec may set, beyond the sizes, kernel, arch and seed.
KNOBS = ("gate", "mlp_ratio", "weight_path", "slow_kernel", "block_size", "value_scale",
         "weight_scale", "decay", "ln_gain", "step", "activation", "ln_eps", "attn_bias")


def check_spec_entries(entries: dict) -> None:
    """Refuse (ValueError) a spec dict with an unknown field, an unknown knob or a dtype a spec
    cannot name; the sizes and knob values are ``StackParams``' to check when the stack is built."""
    unknown = sorted(set(entries) - set(SPEC_FIELDS))
    if unknown:
        raise ValueError(f"fields {unknown} are not stack-spec fields (known: {', '.join(SPEC_FIELDS)})")
    knobs = sorted(set(dict(entries.get("knobs") or {})) - set(KNOBS))
    if knobs:
        raise ValueError(f"knobs {knobs} are not random_stack knobs (known: {', '.join(KNOBS)})")
    if entries.get("dtype", "float64") not in SPEC_DTYPES:
        raise ValueError(f"dtype={entries.get('dtype')!r} is not one of {', '.join(SPEC_DTYPES)}")
