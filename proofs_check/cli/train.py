"""``fastslow train``: train the stack on the CPython documentation text into a checkpoint folder
(``proofs_check.experiments.train``); ``--experiment 7.3`` runs Claim 7.3 on text instead, both arms
for every seed (``proofs_check.experiments.text_experiment``)."""

from __future__ import annotations

from pathlib import Path

from proofs_check.cli.options import (add_device, add_json, add_no_progress, add_out, add_seed, ascii_int,
                                      check_output_file, seed, table_stream)

ARCHS = ("preln", "hierarchical")  # proofs_check.experiments.train's (tests/test_cli_light.py holds them equal)
DEFAULT_OUT = Path("out") / "checkpoints"


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="train the stack on the CPython documentation text (a checkpoint folder)",
                       description="Train the untied stack (preln, or hierarchical with the gated slow path) on "
                                   "the bytes of pydoc_data.topics; resumable (an existing checkpoint of the same "
                                   "run in --out is continued); writes a checkpoint folder for "
                                   "`fastslow check --stack`.")
    p.add_argument("--arch", choices=ARCHS, default=None,
                   help="preln | hierarchical (default preln; hierarchical with --experiment)")
    p.add_argument("--d", type=ascii_int, default=128, help="model width (default 128)")
    p.add_argument("--layers", type=ascii_int, default=6, help="depth L (default 6)")
    p.add_argument("--heads", type=ascii_int, default=4, help="attention heads, must divide d (default 4)")
    p.add_argument("--T", type=ascii_int, default=256, help="context length in bytes (default 256)")
    p.add_argument("--P", type=ascii_int, default=8, help="block length of the slow path (hierarchical; default 8)")
    p.add_argument("--tokens", type=ascii_int, default=500_000, help="training tokens (default 500000)")
    p.add_argument("--batch", type=ascii_int, default=8, help="windows per step (default 8)")
    p.add_argument("--eval-every", type=ascii_int, default=50, help="validation loss every K steps (default 50)")
    add_seed(p)
    add_device(p)
    add_out(p, None, shown=f"{DEFAULT_OUT.as_posix()}/<config label>")
    p.add_argument("--freeze-gates", action="store_true",
                   help="hierarchical: keep every gate at 0 (the fast-only model at the same compute)")
    add_no_progress(p)
    g = p.add_argument_group("Claim 7.3 on text (--experiment 7.3)")
    g.add_argument("--experiment", choices=("7.3",), default=None,
                   help="train the hierarchical stack with learnt gates and with gates frozen at 0, for each of "
                        "--seeds, from the same weights on the same batches, and report the loss gap and the gates")
    g.add_argument("--seeds", type=ascii_int, nargs="+", default=None, help="the experiment's seeds (default 0 1 2)")
    g.add_argument("--workers", type=ascii_int, default=None, help="the experiment's runs at once (default 1)")
    add_json(g)
    g.add_argument("--figure", metavar="FILE.png", help="write the experiment's figure (loss and gates over steps)")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.experiment:
        return _experiment(args)
    for flag in ("seeds", "workers", "json", "figure"):
        if getattr(args, flag) is not None:
            raise ValueError(f"--{flag} belongs to --experiment 7.3")
    return _train(args)


def _train(args) -> int:
    import torch

    from numerics.text.corpus import ByteCorpus, unigram_entropy
    from proofs_check.experiments.train import TextConfig, train_text

    cfg = TextConfig(arch=args.arch or "preln", d=args.d, layers=args.layers, heads=args.heads, T=args.T, P=args.P,
                     tokens=args.tokens, seed=seed(args), batch=args.batch, eval_every=args.eval_every,
                     freeze_gates=args.freeze_gates)
    out = Path(args.out) if args.out else DEFAULT_OUT / cfg.label()
    manifest = train_text(cfg, out, device=args.device, progress=not args.no_progress)
    curves = manifest["curves"]
    corpus = ByteCorpus.load()
    h_val = unigram_entropy(corpus.validation.to(torch.uint8).numpy().tobytes())
    rate = curves["tokens"] / curves["seconds"] if curves["seconds"] else float("nan")
    print(f"{out}: {manifest['step']} steps, {curves['tokens']} tokens, {rate:.0f} tokens/s on {args.device}; "
          f"validation loss {curves['eval_loss'][0]:.3f} → {curves['eval_loss'][-1]:.3f} nats/byte "
          f"(unigram entropy of the validation text {h_val:.3f})")
    if manifest.get("arch") == "hierarchical":
        print("gates: " + ", ".join(f"{g[-1]:+.4f}" for g in curves["gates"]))
    return 0


def _experiment(args) -> int:
    from numerics.storage.io import write_json
    from proofs_check.experiments.text_experiment import SEEDS, format_result, run as run_experiment, write_figure
    from proofs_check.experiments.train import TextConfig

    if args.arch == "preln":
        raise ValueError("--experiment 7.3 trains --arch hierarchical (with and without its gates), not preln")
    if args.freeze_gates:
        raise ValueError("--freeze-gates cannot go with --experiment 7.3 (it trains both arms)")
    if args.seed is not None:
        raise ValueError("--seed is one run's seed: --experiment 7.3 takes --seeds")
    cfg = TextConfig(arch="hierarchical", d=args.d, layers=args.layers, heads=args.heads, T=args.T, P=args.P,
                     tokens=args.tokens, batch=args.batch, eval_every=args.eval_every)
    if args.figure and Path(args.figure).suffix not in (".png", ".pdf"):
        raise ValueError(f"--figure {args.figure}: give a .png or .pdf file")
    if args.figure:
        check_output_file(args.figure, "--figure")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers={args.workers} must be a positive integer")
    out = Path(args.out) if args.out else DEFAULT_OUT
    result = run_experiment(out, cfg, tuple(args.seeds) if args.seeds else SEEDS, workers=args.workers or 1,
                            progress=not args.no_progress)
    print(format_result(result), file=table_stream(args))
    if args.json:
        write_json(args.json, result)
    if args.figure:
        write_figure(result, args.figure)
    return 0
