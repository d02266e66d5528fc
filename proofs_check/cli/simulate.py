"""``fastslow simulate``: build a random stack, run a random input and its token-homogeneous reference
trajectory, certify the gate bound (``proofs_check.experiments.simulate``)."""

from __future__ import annotations

import argparse

from proofs_check.cli.options import (add_device, add_json, add_no_progress, add_seed, ascii_float, ascii_int,
                                      memory_size, scale_preset, seed, table_stream)

#: how an option of each JSON Schema type parses its text
PARSERS = {"integer": ascii_int, "number": ascii_float, "string": str}


def add_knob_flags(p, model=None) -> None:
    """One option per knob of ``model`` (default ``numerics.stacks.params.StackKnobs``: the one declaration of the
    stack's knobs), named by ``knob_flag``, typed by the knob's schema type, with its default and
    description; a boolean knob is ``--name`` / ``--no-name``."""
    from numerics.stacks.params import StackKnobs, knob_flag, knob_kinds

    model = StackKnobs if model is None else model
    for name, kind in knob_kinds(model).items():
        info = model.model_fields[name]
        text = f"{info.description or name.replace('_', ' ')} (default {info.default})"
        if kind == "boolean":
            p.add_argument(knob_flag(name), dest=name, action=argparse.BooleanOptionalAction, default=info.default,
                           help=text)
        else:
            p.add_argument(knob_flag(name), dest=name, type=PARSERS[kind], default=info.default, help=text)


#: the spec fields ``fastslow simulate`` takes as options (with the knobs and --seed, --device), and the
#: defaults it gives them: a stack of the size the README's example runs
SHAPE_DEFAULTS = {"T": 64, "P": 8, "d": 64, "layers": 12, "heads": 4, "kernel": "causal"}


def add_shape_flags(p) -> None:
    """One option per spec shape field of :data:`SHAPE_DEFAULTS`, typed and described by the declaration
    (``numerics.stacks.params.StackSpecModel``); ``--P 0`` turns the slow path off."""
    from numerics.stacks.params import StackSpecModel, knob_kinds

    kinds = knob_kinds(StackSpecModel)
    for name, default in SHAPE_DEFAULTS.items():
        info = StackSpecModel.model_fields[name]
        extra = "; 0 turns it off" if name == "P" else ""
        p.add_argument(f"--{name}", dest=name, type=PARSERS[kinds[name]], default=default,
                       help=f"{info.description}{extra} (default {default})")


def spec_of(args):
    """The ``numerics.stacks.spec.StackSpec`` the parsed options name: its shape fields, the knobs set away from
    their defaults, the seed and the device."""
    from numerics.stacks.params import KNOBS, StackKnobs
    from numerics.stacks.spec import StackSpec

    shape = {name: getattr(args, name) for name in SHAPE_DEFAULTS}
    shape["P"] = shape["P"] or None
    knobs = {name: getattr(args, name) for name in KNOBS
             if getattr(args, name) != StackKnobs.model_fields[name].default}
    return StackSpec(**shape, knobs=knobs, seed=seed(args), device=args.device)


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="build a random stack, run it and its reference trajectory, certify "
                                        "the gate bound")
    p.defer(add_shape_flags) if hasattr(p, "defer") else add_shape_flags(p)
    p.add_argument("--scale", metavar="PRESET", type=scale_preset,
                   help="take T, d, layers and heads from a preset (toy, ci, gpt2-small, gpt2-medium, gpt2-large)")
    p.defer(add_knob_flags) if hasattr(p, "defer") else add_knob_flags(p)  # numerics.stacks.params loads for simulate only
    p.add_argument("--strict", action="store_true",
                   help="error (exit 2) when --gate exceeds the certified gate bound g* (default: a warning)")
    p.add_argument("--no-certificate", dest="certificate", action="store_false",
                   help="skip the gate certificate (μ and g*, Claim 5.1), most of the run at the default sizes "
                        "(timed as 'certificate' in the summary)")
    add_seed(p)
    p.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                   help="refuse a run whose estimated memory exceeds SIZE (e.g. 2G; default: the available memory)")
    add_device(p)
    add_json(p)
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from numerics.storage.io import write_json
    from proofs_check.experiments.simulate import format_summary, simulate

    if args.scale:  # the preset's sizes replace --T, --d, --layers, --heads
        from numerics.stacks.presets import SIZES

        args.T, args.d, args.layers, args.heads = SIZES[args.scale]
    summary = simulate(spec_of(args), strict=args.strict, certificate=args.certificate,
                       max_memory=args.max_memory, progress=not args.no_progress)
    print(format_summary(summary), file=table_stream(args))
    if args.json:
        write_json(args.json, summary)
    return 0
