"""``fastslow simulate``: build a random stack, run a random input and its token-homogeneous reference
trajectory, certify the gate bound (``proofs_check.experiments.simulate``)."""

from __future__ import annotations

from proofs_check.cli.options import (add_device, add_json, add_no_progress, add_seed, ascii_float, ascii_int,
                                      memory_size, scale_preset, seed, table_stream)


def add_parser(sub) -> None:
    p = sub.add_parser("simulate", help="build a random stack, run it and its reference trajectory, certify "
                                        "the gate bound")
    p.add_argument("--T", type=ascii_int, default=64, help="tokens (default 64)")
    p.add_argument("--P", type=ascii_int, default=8, help="block length of the slow path; 0 turns it off (default 8)")
    p.add_argument("--d", type=ascii_int, default=64, help="model width (default 64)")
    p.add_argument("--layers", type=ascii_int, default=12, help="depth L, h = 1/L (default 12)")
    p.add_argument("--heads", type=ascii_int, default=4, help="attention heads, must divide d (default 4)")
    p.add_argument("--kernel", default="causal", help="causal | full | alibi | block (default causal)")
    p.add_argument("--scale", metavar="PRESET", type=scale_preset,
                   help="take T, d, layers and heads from a preset (toy, ci, gpt2-small, gpt2-medium, gpt2-large)")
    p.add_argument("--slow-kernel", default="causal", help="causal (default) | full (v1's unmasked variant)")
    p.add_argument("--gate", type=ascii_float, default=0.0, help="gate amplitude g of every layer (default 0)")
    p.add_argument("--value-scale", type=ascii_float, default=0.0, help="c in W_VO ≈ c·I + noise (default 0)")
    p.add_argument("--decay", type=ascii_float, default=0.0, help="residual damping α ≥ 0 (default 0)")
    p.add_argument("--ln-gain", type=ascii_float, default=1.0, help="LN gains γ ≈ this (default 1)")
    p.add_argument("--weight-scale", type=ascii_float, default=1.0, help="scale of the random weights (default 1)")
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
    from numerics.io import write_json
    from proofs_check.experiments.simulate import format_summary, simulate

    if args.scale:  # the preset's sizes replace --T, --d, --layers, --heads
        from numerics.presets import SIZES

        args.T, args.d, args.layers, args.heads = SIZES[args.scale]
    summary = simulate(T=args.T, P=args.P or None, d=args.d, layers=args.layers, heads=args.heads,
                       kernel=args.kernel, gate=args.gate, seed=seed(args), device=args.device,
                       slow_kernel=args.slow_kernel, value_scale=args.value_scale, decay=args.decay,
                       strict=args.strict, ln_gain=args.ln_gain, weight_scale=args.weight_scale,
                       certificate=args.certificate, max_memory=args.max_memory, progress=not args.no_progress)
    print(format_summary(summary), file=table_stream(args))
    if args.json:
        write_json(args.json, summary)
    return 0
