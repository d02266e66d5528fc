"""One stack value, declared once (``numerics.stacks.params.StackSpecModel``, its knobs ``StackKnobs``).

Each place that names a stack's fields is read off that declaration; each test below proves one
derivation by comparing field sets, defaults and ranges with the declaration itself (never with a
list copied from the derived code), and the controls show that a field added to a declaration
appears in what is derived from it.  ``build(spec)`` is the only constructor: the gate (and every
other field) reaches the layers through spec → build → layer and nowhere else.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import pickle
import re
from pathlib import Path

import pyarrow as pa
import pytest
import torch
from pydantic import Field

from numerics.stacks import stack as S
from numerics.stacks.params import (KNOBS, SHAPE_FIELDS, StackKnobs, StackParams, StackSpecModel, knob_flag,
                             knob_kinds)
from numerics.stacks.spec import StackSpec, _spec_fields, build
from numerics.stacks.stack_config import StackConfig, _config_fields

ROOT = Path(__file__).resolve().parents[1]
PAIRED = {"knobs": StackKnobs(), "arch_options": {}}


def _declared_default(name, info):
    return info.get_default(call_default_factory=True)


# ---------------------------------------------------------------- StackSpec
def test_spec_fields_and_defaults_are_the_declaration_s():
    """StackSpec has the declaration's fields, in its order, with its defaults (the dict-valued
    fields stored as pairs: () is the empty StackKnobs / options)."""
    assert [f.name for f in dataclasses.fields(StackSpec)] == list(StackSpecModel.model_fields)
    for f in dataclasses.fields(StackSpec):
        declared = _declared_default(f.name, StackSpecModel.model_fields[f.name])
        if f.name in PAIRED:
            assert f.default == () and declared == PAIRED[f.name]
        else:
            assert f.default == declared, f.name
    document = StackSpecModel.model_validate(StackSpec().as_dict())  # the defaults make a valid document
    assert document.knobs == StackKnobs() and document.model_fields_set == set(StackSpecModel.model_fields)


def test_spec_ranges_are_the_declaration_s():
    """A value the declaration refuses is refused by StackSpec, with the declaration's message."""
    from numerics.stacks.params import InvalidInput, _validate

    for field, value in (("T", 0), ("heads", 1.5), ("seed", -1), ("dtype", "float16"), ("P", 0)):
        with pytest.raises(InvalidInput) as declared:
            _validate(StackSpecModel, {**StackSpec().as_dict(), field: value})
        with pytest.raises(InvalidInput) as spec:
            StackSpec(**{field: value})
        assert str(spec.value) == str(declared.value)
        assert str(spec.value).startswith(f"{field}=")


def test_spec_is_a_hashable_value_that_round_trips():
    a = StackSpec(T=8, d=8, layers=2, heads=2, P=4, knobs={"gate": 0.25, "decay": 0.1}, arch_options={})
    b = StackSpec(T=8, d=8, layers=2, heads=2, P=4, knobs={"decay": 0.1, "gate": 0.25})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert StackSpec.from_dict(json.loads(json.dumps(a.as_dict()))) == a
    assert pickle.loads(pickle.dumps(a)) == a
    assert a.with_(knobs={"gate": 0.5}).knobs == (("decay", 0.1), ("gate", 0.5))
    assert a.label() == "preln/causal T=8 d=8 L=2 H=2 P=4 seed=0 decay=0.1 gate=0.25"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.T = 4  # type: ignore[misc]


def test_a_field_added_to_the_declaration_is_a_spec_field():
    """Control: a declaration with one more field derives a dataclass with that field and default."""
    class More(StackSpecModel):
        temperature: float = Field(2.5)

    names = [f.name for f in dataclasses.fields(_spec_fields(More))]
    assert names == [*StackSpecModel.model_fields, "temperature"]
    assert dataclasses.fields(_spec_fields(More))[-1].default == 2.5


# ---------------------------------------------------------------- StackConfig, StackParams
def test_config_fields_are_the_shape_fields_then_the_knobs():
    fields = {f.name: f.default for f in dataclasses.fields(StackConfig)}
    assert list(fields) == [*SHAPE_FIELDS, *KNOBS]
    assert set(SHAPE_FIELDS) <= set(StackSpecModel.model_fields)
    for name in SHAPE_FIELDS:
        assert fields[name] == StackSpecModel.model_fields[name].default, name
    for name in KNOBS:
        assert fields[name] == StackKnobs.model_fields[name].default, name
    spec = StackSpec(T=8, d=8, layers=2, heads=2, P=4, knobs={"gate": 0.25})
    assert build(spec).config == StackConfig(**spec.flat())


def test_a_knob_added_to_the_declaration_is_a_config_field():
    class MoreKnobs(StackKnobs):
        temperature: float = Field(2.5)

    assert [f.name for f in dataclasses.fields(_config_fields(MoreKnobs))][-1] == "temperature"


def test_the_checks_before_a_draw_have_the_declaration_s_fields_and_ranges():
    """StackParams is the shape fields and the knobs, with their JSON Schema (types, bounds, defaults),
    plus the torch dtype the flat checks need."""
    assert set(StackParams.model_fields) == {*SHAPE_FIELDS, *KNOBS, "dtype"}
    params = StackParams.model_json_schema()["properties"]
    spec = StackSpecModel.model_json_schema()["properties"]
    knobs = StackKnobs.model_json_schema()["properties"]
    for name in SHAPE_FIELDS:
        assert params[name] == spec[name], name
    for name in KNOBS:
        assert params[name] == knobs[name], name


# ---------------------------------------------------------------- one constructor
def test_build_is_the_only_constructor():
    """numerics.stacks.stack draws from a spec only (``_draw(spec)``); no keyword-argument constructor is left,
    and no module calls one."""
    assert not hasattr(S, "random_stack")
    assert list(inspect.signature(S._draw).parameters) == ["spec"]
    with pytest.raises(TypeError, match="build takes a StackSpec"):
        build({"T": 8})
    pattern = re.compile(r"\brandom_stack\(")
    callers = [str(p.relative_to(ROOT)) for folder in ("numerics", "proofs_check", "benchmarks", "notebooks", "tests")
               for p in (ROOT / folder).rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))
               and p.name != "test_stack_value.py"]
    assert callers == []


@pytest.mark.parametrize("arch", ["preln", "postln", "looped", "hrm", "mhc", "compressed"])
def test_a_spec_means_the_same_stack(arch):
    """The spec read back from its JSON builds the very same weights (the seed's draw, bitwise)."""
    spec = StackSpec(T=8, d=4, layers=2, heads=2, P=4, arch=arch, seed=5,
                     knobs={} if arch == "compressed" else {"gate": 0.5, "value_scale": 1.0})
    again = StackSpec.from_dict(json.loads(json.dumps(spec.as_dict())))
    a, b = build(spec), build(again)
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    other = build(spec.with_(seed=6))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), other.parameters()))  # control


# ---------------------------------------------------------------- the gate's one path
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_gate_goes_spec_to_build_to_every_layer(dtype):
    """The spec's gate is every layer's g_ℓ, rounded once to the stack's dtype (float64: exactly)."""
    gate = 0.1
    stack = build(StackSpec(T=8, d=4, layers=3, heads=2, P=4, dtype=dtype, knobs={"gate": gate}))
    expected = torch.tensor(gate, dtype=torch.float64).to(getattr(torch, dtype))
    assert [layer.gate.dtype for layer in stack.layers] == [expected.dtype] * 3
    assert all(torch.equal(layer.gate.detach(), expected) for layer in stack.layers)
    assert stack.config.gate == gate
    closed = build(StackSpec(T=8, d=4, layers=3, heads=2, P=4, dtype=dtype))
    assert all(float(layer.gate) == 0.0 for layer in closed.layers)  # control: the default is closed


def test_a_gate_without_the_slow_path_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^gate=0.5 needs the slow path: set P \(block length\)$"):
        build(StackSpec(T=8, d=4, layers=2, heads=2, knobs={"gate": 0.5}))


def _simulate_parser():
    from proofs_check.cli import build_parser

    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and "simulate" in a.choices)
    return sub.choices["simulate"].populate()


def test_simulate_s_gate_is_the_spec_s_gate():
    """``fastslow simulate --gate g`` names the spec whose layers carry g: the one path, from the CLI."""
    from proofs_check.cli.simulate import spec_of

    args = _simulate_parser().parse_args(["--T", "8", "--P", "4", "--d", "4", "--layers", "2", "--heads", "2",
                                          "--gate", "0.25", "--seed", "3"])
    spec = spec_of(args)
    assert spec == StackSpec(T=8, P=4, d=4, layers=2, heads=2, seed=3, knobs={"gate": 0.25})
    assert all(float(layer.gate) == 0.25 for layer in build(spec).layers)


# ---------------------------------------------------------------- the simulate options, the sweeps
def test_simulate_s_options_are_the_declared_fields():
    """Every stack option of ``fastslow simulate`` is a declared field, typed by the declaration; the
    fields without an option are the architecture and its options (simulate certifies the pre-LN stack),
    the dtype (float64, the verification dtype) and the checkpoint (a random draw)."""
    from proofs_check.cli.simulate import PARSERS, SHAPE_DEFAULTS

    actions = {a.dest: a for a in _simulate_parser()._actions}
    stack_options = {dest for dest in actions if dest in StackSpecModel.model_fields or dest in KNOBS}
    assert stack_options == {*SHAPE_DEFAULTS, *KNOBS, "seed", "device"}
    unset = set(StackSpecModel.model_fields) - stack_options - {"knobs"}
    assert unset == {"arch", "arch_options", "dtype", "checkpoint"}
    kinds = {**knob_kinds(StackSpecModel), **knob_kinds()}
    for name in [*SHAPE_DEFAULTS, *KNOBS]:
        flag = knob_flag(name) if name in KNOBS else f"--{name}"
        assert flag in actions[name].option_strings, name
        if kinds[name] != "boolean":
            assert actions[name].type is PARSERS[kinds[name]], name


def test_sweep_axes_and_parquet_columns_are_the_declared_fields():
    """A sweep's axes are the declaration's scalar fields (but the seed, device and checkpoint) and the
    knobs; its Parquet stack columns are every scalar field and knob, typed by the declaration."""
    from proofs_check.sweep import spec as sweep_spec
    from proofs_check.sweep import store

    scalar = knob_kinds(StackSpecModel)
    assert set(scalar) == set(StackSpecModel.model_fields) - {"knobs", "arch_options"}
    assert set(sweep_spec.SIZE_AXES) == set(scalar) - {"seed", "device", "checkpoint"}
    assert sweep_spec.AXES == sweep_spec.SIZE_AXES + KNOBS
    parquet = {"integer": pa.int64(), "number": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}
    declared = {**scalar, **knob_kinds()}
    assert {k: store.FIXED[k] for k in declared} == {k: parquet[kind] for k, kind in declared.items()}
    assert store.FIXED["arch_options"] == pa.string()  # the one dict-valued field, stored as JSON
