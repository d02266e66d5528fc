"""The ledger: run one claim's check under its limits and record its entry, with the status the rule decides.

A check that raises is an *error* with the exception's one-line summary (``detail``) and its traceback:
no evidence either way, never *failed*.  A check whose symbolic step runs past its time limit, that
never calls a generated function it declares, or whose tolerance does not match its stated
derivation, is refused (*failed*), whatever its numbers.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict

from proofs_check.verdicts.evidence import CheckContext, decide
from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.on_stack import raising
from proofs_check.verdicts.registry import CLAIMS
from proofs_check.verdicts.vocabulary import Decision, one_line


def run_claim(claim_id: str, ctx: CheckContext) -> dict:
    """Run one claim's check and return its ledger entry (JSON-ready)."""
    if claim_id not in CLAIM_IDS:
        raise ValueError(f"--claim {claim_id!r} is not a claim of docs/theory.md ({', '.join(CLAIM_IDS)})")
    entry = CLAIMS.get(claim_id)
    if entry is None or entry.check is None:
        return {"id": claim_id, "family": CLAIM_IDS[claim_id], "title": "(not implemented)",
                "status": Decision.SKIPPED, "reconstruction": False,
                "symbolic": {"steps": 0, "proved": 0}, "numeric": None, "control": None,
                "tests": [], "figure": None, "seconds": 0.0, "detail": "no check registered"}
    from proofs_check.runners.exercised import count_calls, never_called
    from proofs_check.timeouts import StepTimeout, limit_symbolic_steps

    start = time.perf_counter()
    record = entry.record()
    try:
        with count_calls(entry.generated) as calls, limit_symbolic_steps(ctx.step_seconds), raising():
            result = entry.check(ctx)
    except StepTimeout as exc:  # a symbolic step past its time limit is refused, not awaited
        step = {"name": str(exc), "proved": False, "method": "timeout", "detail": str(exc)}
        record.update(status=Decision.FAILED, symbolic={"steps": 1, "proved": 0, "list": [step]}, numeric=None,
                      control=None, detail=f"refused: {exc}", seconds=time.perf_counter() - start)
        return record
    except Exception as exc:  # a crashing check is no evidence either way: an error, with its traceback kept
        record.update(status=Decision.ERROR, symbolic={"steps": 0, "proved": 0}, numeric=None,
                      control=None, detail=f"check raised {one_line(exc)}",
                      traceback=traceback.format_exc(), seconds=time.perf_counter() - start)
        return record
    refusals = [f"declared generated function {q} was never called by the check" for q in never_called(calls)]
    refusals += result.numeric.derivation_problems()
    from proofs_check.runners import cross_checks as X

    crossed = X.cross_checks(claim_id, ctx)   # the matrix-free form at --scale toy, the GPT-2 mapping
    refusals += X.refusals(crossed)
    status = decide(result)
    record.update(
        status=Decision.FAILED if refusals else status,
        generated_calls=calls,
        derivations=[d.as_dict() for d in result.numeric.derivations],
        symbolic={"steps": len(result.symbolic), "proved": sum(s.proved for s in result.symbolic),
                  "list": [asdict(s) for s in result.symbolic]},
        numeric={"cases": result.numeric.cases, "max_error": result.numeric.max_error,
                 "tolerance": result.numeric.tolerance, "detail": result.numeric.detail,
                 "table": result.numeric.table},
        control={"status": result.control.status, "detail": result.control.detail},
        notes=result.notes, finding=result.finding, paper_setting=result.paper_setting,
        measurement=result.measurement,
        **({"cross_checks": crossed} if crossed else {}),
        seconds=time.perf_counter() - start,
    )
    if refusals:
        record["detail"] = "refused: " + "; ".join(refusals)
    if X.errors(crossed):   # a cross-check that raised is no evidence either way: an error, as a raising check
        record.update(status=Decision.ERROR, detail="; ".join(X.errors(crossed)))
    return record
