"""The stack's parameters: one declaration of every field of a stack, checked before work.

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

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model, model_validator

#: seeds lie in [0, SEED_MAX): simulate also draws with seed + 1, which must stay a signed 64-bit integer.
SEED_MAX = 2**63 - 1
DTYPE_NAMES = ("float64", "float32", "float16", "bfloat16")
FLOAT_KNOBS = ("gate", "value_scale", "weight_scale", "decay", "ln_gain")
#: the MLP activations of the stack (``numerics.stacks.stack.ACTIVATIONS``): exact GELU and GPT-2's tanh form.
ACTIVATION_NAMES = ("gelu", "gelu_new")


class InvalidInput(ValueError):
    """Bad input, refused before any work: one line naming the parameter."""


# -- field types: each refuses with a "must ..." phrase naming what is allowed, and states the same
# -- bound as a Field constraint, so that the published JSON Schema carries it -----------------
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


def _seed(value):
    value = _integral(value)
    if not 0 <= value < SEED_MAX:
        raise ValueError(f"is out of range: a seed is an integer in [0, 2**63 - 1 = {SEED_MAX})")
    return value


def bounded(low: float, *, strict: bool = False, why: str = "", optional: bool = False):
    """A finite real ≥ ``low`` (> ``low`` when ``strict``); ``why`` says what the bound means."""
    def check(value):
        if optional and value is None:
            return None
        value = _real(value)
        if value < low or (strict and value == low):
            relation = "positive" if strict and low == 0 else (f"> {low:g}" if strict else f">= {low:g}")
            raise ValueError(f"must be {relation}" + (f" ({why})" if why else ""))
        return value

    number = Annotated[float, Field(gt=low) if strict else Field(ge=low)]
    return Annotated[number | None if optional else number, BeforeValidator(check)]


def one_of(names: tuple, optional: bool = False):
    """A string from ``names`` (or None when ``optional``), refused with the list."""
    def check(value):
        if optional and value is None:
            return None
        if value not in names:
            raise ValueError(f"is not one of {', '.join(map(str, names))}")
        return value

    kind = str | None if optional else str
    return Annotated[kind, BeforeValidator(check), Field(json_schema_extra={"enum": [*names, *([None] * optional)]})]


Int = Annotated[int, BeforeValidator(_integral)]
PositiveInt = Annotated[Annotated[int, Field(ge=1)], BeforeValidator(_positive_int)]
OptionalPositiveInt = Annotated[Annotated[int, Field(ge=1)] | None, BeforeValidator(_optional_positive_int)]
Real = Annotated[float, BeforeValidator(_real)]
Seed = Annotated[Annotated[int, Field(ge=0, le=SEED_MAX)], BeforeValidator(_seed)]


def _where(loc) -> str:
    return ".".join(str(part) for part in loc)


def _message(exc: ValidationError, data: dict) -> str:
    """The first pydantic error as one line naming the parameter (dotted when nested) and its value."""
    err = exc.errors()[0]
    loc = err["loc"]
    if len(loc) == 2 and loc[0] == "knobs":  # a knob is named by its own name, as on the command line
        loc, data = loc[1:], data.get("knobs") or {}
    name = _where(loc) if loc else "input"
    if err["type"] == "value_error":
        text = str(err["ctx"]["error"])
        if text.startswith(("must ", "is ")) and loc:
            value = data.get(loc[0], err.get("input")) if len(loc) == 1 else err.get("input")
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
        stored = float(torch.tensor(value, dtype=torch.float64, device="cpu").to(dtype))  # host: a Python float's value in dtype
        raise InvalidInput(f"{name}={value!r} cannot be held by the stack's dtype (stored as {stored!r}); "
                           + allowed)
    if abs(value) >= limit:
        raise InvalidInput(f"{name}={value!r} overflows the forward pass (LayerNorm squares the residual "
                           "stream); " + allowed)


# -- the stack --------------------------------------------------------------------------
WeightPath = one_of(("smooth",), optional=True)
Activation = one_of(ACTIVATION_NAMES)
ValueScale = bounded(0, why="W_VO ≈ c·I + noise, c ≥ 0")
WeightScale = bounded(0, strict=True)
Decay = bounded(0, why="X' = (1 - h*decay) X + ...")
LnGain = bounded(0, why="the LN gains are drawn as γ ≈ ln_gain + noise, a scale")
Step = bounded(0, strict=True, why="the depth step h, the LN eps", optional=True)
LnEps = bounded(0, strict=True, why="the depth step h, the LN eps")


class StackKnobs(BaseModel):
    """The knobs of a stack beyond its sizes, kernel and seed (docs/theory.md §0): each one's
    type, range and default.  A spec's ``knobs`` (``StackSpecModel``) and a sweep's
    axes name these and only these (:data:`KNOBS`)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    gate: Real = Field(0.0, description="the slow path's gate g (needs P)")
    mlp_ratio: PositiveInt = Field(4, description="the MLP's width over d")
    weight_path: WeightPath = Field(
        None, description="None: i.i.d. layers; 'smooth': θ_ℓ = θ(ℓh) on a smooth path")
    slow_kernel: str = Field("causal", description="the slow path's kernel: causal or full (numerics.stacks.kernels)")
    block_size: OptionalPositiveInt = Field(None, description="the block kernel's block length (divides T)")
    value_scale: ValueScale = 0.0
    weight_scale: WeightScale = Field(1.0, description="the scale of the weights' noise")
    decay: Decay = 0.0
    ln_gain: LnGain = 1.0
    step: Step = Field(
        None, description="the depth step h (default 1/L; GPT-2: 1)")
    activation: Activation = Field("gelu", description="the MLP's activation")
    ln_eps: LnEps = 1e-5
    attn_bias: bool = Field(False, description="draw the attention biases b_Q, b_O (GPT-2's block)")


#: the spec fields that are the stack's sizes, kernel, block length, architecture and seed: with the knobs,
#: a stack's flat configuration (``numerics.stacks.stack.StackConfig``, ``StackParams``)
SHAPE_FIELDS = ("T", "d", "layers", "heads", "kernel", "P", "arch", "seed")


def _flat_fields(model: type[BaseModel], names: tuple) -> dict:
    """``create_model`` arguments: ``model``'s fields ``names``, with their types, ranges and defaults."""
    return {name: (model.model_fields[name].annotation, model.model_fields[name]) for name in names}


class _FlatChecks(BaseModel):
    """The checks that need several fields at once, run on the flat configuration with its dtype."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, arbitrary_types_allowed=True)

    @model_validator(mode="after")
    def _structure(self):
        import torch

        from numerics.stacks import kernels as K
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
        dtype = self.dtype if self.dtype is not None else torch.float64
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype={dtype!r} must be a floating torch dtype")
        for name in FLOAT_KNOBS:
            check_representable(name, getattr(self, name), dtype)
        return self


# -- what a stack spec (numerics.stacks.spec.StackSpec) may name --------------------------------------
#: the dtypes a spec may name
SPEC_DTYPES = ("float64", "float32")
#: the knobs a spec may set (``StackSpec.knobs``), beyond the sizes, kernel, arch and seed.
KNOBS = tuple(StackKnobs.model_fields)


#: the JSON Schema types of a scalar field
SCALAR_KINDS = ("integer", "number", "string", "boolean")


def knob_kinds(model: type[BaseModel] = StackKnobs) -> dict[str, str]:
    """Each knob's JSON Schema type (integer, number, string or boolean; None allowed or not), read off
    the declaration: what a command-line option parses and a Parquet column stores."""
    out = {}
    for name, prop in model.model_json_schema()["properties"].items():
        kinds = [p["type"] for p in prop.get("anyOf", [prop]) if p.get("type") in SCALAR_KINDS]
        if kinds:  # a scalar field (a nested model or a dict has no option or column of its own)
            out[name] = kinds[0]
    return out


def knob_flag(name: str) -> str:
    """The command-line option of knob ``name``: ``value_scale`` -> ``--value-scale``."""
    return "--" + name.replace("_", "-")


SpecDtype = one_of(SPEC_DTYPES)


class StackSpecModel(BaseModel):
    """The declaration of a stack (docs/theory.md §0): every field, its type, range and default.

    Everything else is read off it: ``numerics.stacks.spec.StackSpec`` (the frozen value every stack is
    built from, and this model is its JSON document: a checkpoint manifest's ``spec``, a sweep
    row's stack), the flat configuration ``numerics.stacks.stack.StackConfig`` a built stack carries,
    :class:`StackParams` (the checks run before a weight is drawn), ``fastslow simulate``'s flags
    and the sweeps' axes and Parquet columns.  The knobs are :class:`StackKnobs` (only the ones set
    are stored); the structural checks that need several fields at once (heads dividing d, T
    divisible by P, what the dtype can hold) are ``StackParams``' when the stack is built, and
    ``arch_options`` are the architecture's to check (``numerics.stacks.architectures.resolve_options``).
    """

    model_config = ConfigDict(strict=True, extra="forbid", json_schema_extra=lambda schema: schema.update(
        required=list(schema["properties"])))

    T: PositiveInt = Field(6, description="tokens")
    d: PositiveInt = Field(4, description="the residual width")
    layers: PositiveInt = Field(3, description="the depth L")
    heads: PositiveInt = Field(2, description="attention heads (divides d)")
    kernel: str = Field("causal", description="the fast path's kernel (numerics.stacks.kernels.KERNELS)")
    P: OptionalPositiveInt = Field(None, description="the slow path's block length (None: no slow path)")
    arch: str = Field("preln", description="the architecture: preln or a variant of numerics.stacks.architectures")
    seed: Seed = Field(0, description="the seed of the weights' draw")
    knobs: StackKnobs = Field(StackKnobs(), description="the knobs set, the others at their defaults")
    arch_options: dict[str, Any] = Field({}, description="the variant's options")
    dtype: SpecDtype = Field("float64", description="the stack's dtype")
    device: str = Field("cpu", description="cpu, cuda or auto (cuda when available)")
    checkpoint: str | None = Field(None, description="a trained checkpoint whose weights replace the random draw")

    @model_validator(mode="before")
    @classmethod
    def _names_every_field(cls, data):
        """A document names every field: the defaults are the spec's to fill, not a reader's."""
        if isinstance(data, dict):
            missing = [name for name in cls.model_fields if name not in data]
            if missing:
                raise ValueError(f"field {missing[0]!r} is missing: a stack document names every field")
        return data


#: The checks of a stack's flat configuration (its shape fields, knobs and torch dtype), run before a
#: weight is drawn: the declaration's shape fields on top of the knobs, plus the multi-field checks.
StackParams = create_model(
    "StackParams", __base__=_FlatChecks, __module__=__name__,
    **_flat_fields(StackSpecModel, SHAPE_FIELDS), **_flat_fields(StackKnobs, KNOBS),
    dtype=(Any, Field(None, description="the stack's torch dtype (None: float64)")))


def validate_stack(**kwargs) -> StackParams:
    """Check a stack's flat configuration (sizes, knobs, seed, torch dtype), then that it fits in memory."""
    params = _validate(StackParams, kwargs)
    from numerics.stacks.memory import check_fits, stack_bytes

    check_fits(stack_bytes(params.T, params.d, params.layers, params.heads, params.P,
                           mlp_ratio=params.mlp_ratio, dtype=params.dtype),
               what=f"a stack with T={params.T} d={params.d} layers={params.layers} heads={params.heads}")
    return params
