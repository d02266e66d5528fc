"""``fastslow figures [--list] [--only NAME ...] [--out DIR]``: list or render the figures
(``proofs_check.report.figures``)."""

from __future__ import annotations

from pathlib import Path

from proofs_check.cli.options import add_device, add_no_progress, add_out, add_seed, add_size, quick, seed


def add_parser(sub) -> None:
    p = sub.add_parser("figures", help="list or render the figures")
    p.add_argument("--only", action="append", metavar="NAME", help="render this figure (repeatable)")
    add_out(p, "out/figures")
    p.add_argument("--list", action="store_true", help="list figure names and exit")
    p.add_argument("--format", action="append", choices=("png", "pdf"),
                   help="file format (repeatable; default png and pdf)")
    add_device(p)
    add_seed(p)
    add_size(p, "quick")
    add_no_progress(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.progress import silenced
    from proofs_check.report.figures import load_figures, render

    figures = load_figures()
    if args.list:
        for name, fig in sorted(figures.items()):
            print(f"{name:32s} claim {fig.claim:4s} {fig.title}")
        return 0
    from numerics.storage import outdir
    unknown = [n for n in args.only or [] if n not in figures]
    if unknown:  # before the folder is claimed
        raise ValueError(f"--only {', '.join(unknown)}: no such figure (known: {', '.join(sorted(figures))})")
    ctx = CheckContext(device=args.device, quick=quick(args), seed=seed(args))
    # claimed like every output folder: a folder of files figures did not write is refused, before any work;
    # the figures folder of a reproduce run (its figures/) is figures' own kind of output
    with outdir.claim(args.out, "figures", adopt=_reproduce_figures), silenced(args.no_progress):
        written = render(args.only or None, ctx, Path(args.out), formats=args.format or ("png", "pdf"))
    for name, paths in written.items():
        print(f"{name:32s} " + "  ".join(str(p) for p in paths))
    return 0


def _reproduce_figures(folder: Path) -> bool:
    """The ``figures/`` folder inside a ``fastslow reproduce`` output: written by the same renderer."""
    from numerics.storage import outdir
    return folder.name == "figures" and outdir.owner(folder.parent) == "reproduce"
