"""Where the numbers of docs/ARCHITECTURE.md, docs/cli.md and docs/report/README.md come from: a constant the
tests hold the code to, the committed screenshots' size, the behaviour of ``--seed``'s parser (probed, not read),
and the run log."""

from __future__ import annotations

import re
from pathlib import Path

from docs_ties import run

ROOT = Path(__file__).resolve().parents[1]


def module_lines() -> dict:
    """The longest module the import test allows (tests/test_imports.py's MAX_LINES)."""
    from test_imports import MAX_LINES

    return {"lines": MAX_LINES}


def report_width() -> dict:
    """The width of the committed screenshots (docs/report/*.png), read from each PNG's IHDR chunk: all equal."""
    import struct

    widths = {struct.unpack(">I", p.read_bytes()[16:20])[0] for p in (ROOT / "docs" / "report").glob("*.png")}
    assert len(widths) == 1, f"the screenshots differ in width: {widths}"
    return {"width": widths.pop()}


def seed_bound() -> dict:
    """The smallest seed ``--seed`` refuses, found by probing its parser: N with N − 1 accepted and N refused, as
    2**e − 1."""
    import argparse

    from proofs_check.validation import seed_value

    def accepted(n: int) -> bool:
        try:
            seed_value(str(n))
            return True
        except argparse.ArgumentTypeError:
            return False

    lo, hi = 0, 2**70                  # accepted(lo), not accepted(hi): bisect to the boundary
    assert accepted(lo) and not accepted(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if accepted(mid) else (lo, mid)
    exponent = (hi + 1).bit_length() - 1
    assert hi == 2**exponent - 1, f"--seed's first refused value {hi} is not 2**e − 1"
    return {"base": 2, "exp": exponent}


def help_and_threads() -> dict:
    """``fastslow --help`` and the spinning-threads comparison, from the run log."""
    out = run("cli-help", "help_")
    ids = [f"threads-{command}-{policy}" for command in ("simulate", "check-1-1") for policy in ("active", "passive")]
    for i in ids:
        out.update(run(i, i.removeprefix("threads-").replace("-", "_") + "_"))
    # the load range the four runs spanned together
    out["lo"] = min(out[i.removeprefix("threads-").replace("-", "_") + "_lo"] for i in ids)
    out["hi"] = max(out[i.removeprefix("threads-").replace("-", "_") + "_hi"] for i in ids)
    return out
