"""The claims × architectures matrix: every claim on every variant, and its formatting.

Each cell is one of **holds** (measured within its tolerance, with its control failing),
**conditional** (holds under the named condition; the case without it is the evidence),
**fails** (a counterexample shrunk by Hypothesis ``find``: the parameters and seed that
reproduce it), **n/a** (with the reason) or **error** (the evaluation raised: its one-line
summary, no evidence either way; ``fastslow grid`` then exits non-zero) —
``proofs_check.verdicts.vocabulary.StackVerdict``.  The ``preln`` column is the ledger
(``proofs_check.runners.ledger.run_claim``); every other cell is the claim's own evaluation
(``proofs_check.verdicts.on_stack``, registered in the claim's family module) on the variants of
``numerics.stacks.architectures`` at small sizes (T = 4..6, d = 4, float64).  This module holds
only the grid and its formatting.

Sizes are tiny on purpose: every statement checked here is structural (exact identities
up to rounding, or fitted slopes), so T = 4..6 and d = 4 decide it; tolerances are stated
beside each test (float64 rounding × the size of the quantity).
"""

from __future__ import annotations


import torch

from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.tables import text_table
from proofs_check.verdicts.vocabulary import Decision, PaperOutcome, StackVerdict, words

STATUSES = words(StackVerdict)


def _cell(claim, arch, status, condition=None, evidence=None, counterexample=None):
    assert status in STATUSES, status
    return {"claim": claim, "arch": arch, "status": status, "condition": condition,
            "evidence": evidence or {}, "counterexample": counterexample}


def evaluate(claim: str, arch: str, ctx: CheckContext) -> dict:
    """One cell: the claim's own evaluation on ``arch``'s stacks (``proofs_check.verdicts.registry.evaluate_arch``;
    n/a with the registry's reason where the claim is not about an architecture or does not apply to it)."""
    from proofs_check.verdicts.registry import evaluate_arch

    v = evaluate_arch(claim, arch, ctx)
    evidence = dict(v.measured, error=v.error, tolerance=v.tolerance, seconds=round(v.seconds, 2))
    return _cell(claim, arch, v.status, v.condition or v.reason, evidence, v.counterexample)


def preln_cell(entry: dict) -> dict:
    """A ledger entry as a matrix cell: verified → holds (conditional with a finding, or where its measurement in
    the paper's setting shows it failing, absent or vacuous there: it holds only in the check's own setting),
    error → error."""
    cid = entry["id"]
    ev = {"ledger_status": entry["status"], "numeric": entry.get("numeric") and
          {k: entry["numeric"][k] for k in ("cases", "max_error", "tolerance")},
          "control": entry.get("control") and entry["control"]["status"]}
    if entry["status"] == Decision.SKIPPED:
        return _cell(cid, "preln", StackVerdict.NA, "family not implemented", ev)
    if entry["status"] == Decision.ERROR:
        return _cell(cid, "preln", StackVerdict.ERROR, entry.get("detail"), ev)
    if entry["status"] == Decision.VERIFIED:
        shown = entry.get("measurement") or {}
        if shown.get("outcome") in (PaperOutcome.FAILS, PaperOutcome.ABSENT, PaperOutcome.VACUOUS):
            return _cell(cid, "preln", StackVerdict.CONDITIONAL,
                         f"{entry.get('standing')}: {shown.get('short')}; verified only in the check's setting", ev)
        if entry.get("finding"):
            return _cell(cid, "preln", StackVerdict.CONDITIONAL, entry["finding"], ev)
        return _cell(cid, "preln", StackVerdict.HOLDS, None, ev)
    return _cell(cid, "preln", StackVerdict.FAILS, entry.get("finding") or entry.get("detail"), ev,
                 {"reproduce": f"fastslow check --claim {cid}", "seed": 0})


def run_matrix(*, quick: bool = True, only_arch: list[str] | None = None, claims: list[str] | None = None,
               ledger: dict | None = None, device: str = "cpu", progress: bool = False,
               trained: bool | None = None, cache_dir: str | None = None) -> dict:
    """The grid: every claim × every variant (or the selection); preln from the ledger.

    The ``trained`` column (by default when no variant is selected, or when ``only_arch``
    names it) is each on-stack claim on the small pre-LN stack trained on text
    (``proofs_check.experiments.train.default_checkpoint``, trained on first use and cached).
    """
    from numerics.stacks.architectures import ARCHS, check_arch

    if trained is None:
        trained = only_arch is None or "trained" in only_arch
    selected = [a for a in (only_arch or []) if a != "trained"]
    archs = [check_arch(a) for a in selected] if selected else ([] if only_arch else list(ARCHS))
    ids = claims or list(CLAIM_IDS)
    unknown = [c for c in ids if c not in CLAIM_IDS]
    if unknown:
        raise ValueError(f"claims {unknown} are not claims of docs/theory.md")
    ctx = CheckContext(device=device, quick=quick)
    cells = []
    from proofs_check.verdicts.registry import load_checks

    load_checks()
    if "preln" in archs:
        if ledger is None:
            from proofs_check.runners.ledger import run_claim

            entries = {c: run_claim(c, ctx) for c in ids}
        else:
            entries = {e["id"]: e for e in ledger["claims"]}
        cells += [preln_cell(entries[c]) if c in entries else
                  _cell(c, "preln", StackVerdict.NA, "not in the supplied ledger") for c in ids]
    torch.set_num_threads(min(2, torch.get_num_threads()))
    for arch in archs:
        if arch == "preln":
            continue
        for c in ids:
            if progress:
                print(f"  {c} × {arch}", flush=True)
            cells.append(evaluate(c, arch, ctx))
    if trained:
        cells += trained_cells(ids, ctx, cache_dir, progress)
        archs = [*archs, "trained"]
    return {"cells": cells, "options": {"quick": quick, "archs": archs, "claims": ids}}


def trained_cells(ids: list[str], ctx: CheckContext, cache_dir: str | None, progress: bool) -> list[dict]:
    """The ``trained`` column: each claim's on-stack evaluation on the default trained stack."""
    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    from numerics.text.training import default_cache_dir
    from proofs_check.verdicts.registry import get
    from proofs_check.experiments.train import default_checkpoint

    path = default_checkpoint(cache_dir or default_cache_dir(), progress=progress)
    manifest = ckpt.read_manifest(path)
    spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64", "checkpoint": str(path)})
    trained = {"checkpoint": str(path), "step": manifest["step"], "corpus_sha256": manifest["corpus"]["sha256"],
               "validation_loss": manifest["curves"]["eval_loss"][-1]}
    cells = []
    for c in ids:
        if progress:
            print(f"  {c} × trained", flush=True)
        entry = get(c)
        if entry.arch_free:
            cells.append(_cell(c, "trained", StackVerdict.NA, entry.arch_free))
        elif entry.on_stack is None:
            cells.append(_cell(c, "trained", StackVerdict.NA, "no on-stack form: the claim is not a statement about one "
                                                    "given stack"))
        else:
            v = entry.evaluate(spec, ctx)
            evidence = dict(v.measured, error=v.error, tolerance=v.tolerance, seconds=round(v.seconds, 2),
                            trained=trained)
            cells.append(_cell(c, "trained", v.status, v.condition or v.reason, evidence, v.counterexample))
    return cells


# ----------------------------------------------------------------------------- output
SYMBOL = {StackVerdict.HOLDS: "holds", StackVerdict.CONDITIONAL: "cond.", StackVerdict.FAILS: "FAILS",
          StackVerdict.NA: "n/a", StackVerdict.ERROR: "ERROR"}


def exit_code(matrix: dict) -> int:
    """``fastslow grid``'s exit status: 1 when a cell's evaluation raised (error), else 0 (a *fails* cell is a
    finding the grid reports, not a fault of the run)."""
    return 1 if any(c["status"] == StackVerdict.ERROR for c in matrix["cells"]) else 0


def format_table(matrix: dict) -> str:
    archs = matrix["options"]["archs"]
    ids = matrix["options"]["claims"]
    by = {(c["claim"], c["arch"]): c for c in matrix["cells"]}
    rows = [["claim"] + archs] + [[cid] + [SYMBOL[by[(cid, a)]["status"]] if (cid, a) in by else "-"
                                           for a in archs] for cid in ids]
    lines = text_table(rows)
    counts = {s: sum(c["status"] == s for c in matrix["cells"]) for s in STATUSES}
    lines.append("\n" + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return "\n".join(lines)
