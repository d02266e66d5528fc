"""Cross-checks the default ledger runs beside a claim's own check; a failed one refuses the claim.

- **The claim's matrix-free form at the toy preset.**  ``check --scale`` runs each claim's matrix-free form
  (``registry.matrix_free``) at GPT-2 sizes, and ``Claim.evaluate`` runs it on every stack above
  ``dense_features``; the default ledger checks the dense form.  So that a mistake in a matrix-free form
  (a wrong transpose, a reused probe seed, a tolerance at the wrong order) is refused by ``fastslow check``
  itself, every claim with a matrix-free form also runs it on the ``toy`` preset (T = 6, d = 4, L = 3,
  2 heads, the stacks the form derives from it), with its own tolerances, derivations and control,
  through the runner of ``check --scale`` (``proofs_check.runners.scale.run_scale_claim``): it must be verified.
- **The matrix-free form against the dense form, number by number** (``proofs_check.runners.scale_dense``):
  each derivative the toy form computed (J·V by jvp and by the polynomial form, D_θX_L, ‖J‖₂, Jᵀ) against
  the dense Jacobian of the same toy stack, and the enclosures a form reports (5.1's μ, g*) against the
  dense form's certificate; a number outside its tolerance (float64 rounding × condition number) refuses
  the claim, so a mistake the form shares with its own guard is refused by ``fastslow check`` too.
- **The GPT-2 weight mapping** (claim 2.1, the GPT-2 block case): ``numerics.storage.hf_gpt2`` on built-in tiny
  checkpoints against an independent GPT-2 forward (``proofs_check.claims.hf_mapping``).

Each cross-check returns a record {name, status, max_error, tolerance, detail, seconds}; the ledger entry keeps
them under ``cross_checks`` and refuses the claim (status failed, ``detail`` "refused: …") when one ran and is
not verified; one that raised makes the entry an *error* (no evidence either way), as a raising check does.  Nothing is decided here beyond verified / not verified: the forms decide by their own rule
(``evidence.decide``).
"""

from __future__ import annotations

import time

TOY = "toy"
#: claims whose matrix-free form the default ledger does not run at the toy preset, with the reason
NOT_AT_TOY = {"1.1": "its form is a depth sweep, not a matrix-free route (the Euler scheme at L = 16 … 128 and "
                     "its i.i.d. control up to L = 4096 over 8 seeds at d < 32): minutes at the toy preset, where "
                     "`fastslow check --scale toy` runs it"}
#: claims whose ledger entry also checks the GPT-2 weight mapping
MAPPING_CLAIMS = ("2.1",)
#: the toy run of each claim's form, handed from toy_scale_form to toy_scale_vs_dense
_TOY_RUNS: dict = {}


def toy_scale_form(claim_id: str, ctx) -> dict:
    """The claim's matrix-free form on the toy preset, as ``check --scale toy`` runs it; its run (the stacks
    and derivatives it computed) and entry are kept for :func:`toy_scale_vs_dense`."""
    from numerics.text.training import torch_threads
    from proofs_check.runners.scale import run_scale_claim
    from proofs_check.verdicts.scale_run import ScaleRun

    run = ScaleRun(TOY, device=ctx.device, seed=ctx.seed)
    with torch_threads(1):   # toy tensors: one thread is fastest on a shared machine
        entry = run_scale_claim(claim_id, run)
    _TOY_RUNS[claim_id] = (run, entry)
    num = entry.get("numeric") or {}
    why = entry.get("detail") or (f"error {num.get('max_error')} > tolerance {num.get('tolerance')}"
                                  if num and not num["max_error"] <= num["tolerance"]
                                  else f"control {(entry.get('control') or {}).get('status')}")
    return {"name": f"matrix-free form at --scale {TOY}", "status": entry["status"],
            "max_error": num.get("max_error"), "tolerance": num.get("tolerance"),
            "detail": (num.get("detail") or "") if entry["status"] == "verified" else why,
            "seconds": entry.get("seconds", 0.0)}


def toy_scale_vs_dense(claim_id: str, ctx) -> dict:
    """Each number the toy form computed against the dense route on the same stacks
    (``proofs_check.runners.scale_dense``): a mistake the form shares with its own guard is refused here."""
    from numerics.text.training import torch_threads
    from proofs_check.runners.scale_dense import scale_vs_dense

    run, entry = _TOY_RUNS.pop(claim_id)
    start = time.perf_counter()
    with torch_threads(1):
        record = scale_vs_dense(claim_id, run, entry)
    return {**record, "seconds": time.perf_counter() - start}


def gpt2_mapping(claim_id: str, ctx) -> dict:
    from proofs_check.claims.hf_mapping import mapping_check

    start = time.perf_counter()
    record = mapping_check(seed=ctx.seed)
    record.pop("table")
    return {**record, "seconds": time.perf_counter() - start}


def cross_checks(claim_id: str, ctx) -> list[dict]:
    """Every cross-check of ``claim_id``, run; a cross-check that raises is a failed record with its reason."""
    from proofs_check.verdicts.registry import CLAIMS

    claim = CLAIMS.get(claim_id)
    runs = []
    if claim is not None and claim.matrix_free is not None and claim_id not in NOT_AT_TOY:
        runs.extend([toy_scale_form, toy_scale_vs_dense])
    if claim_id in MAPPING_CLAIMS:
        runs.append(gpt2_mapping)
    records = []
    for run in runs:
        if run is toy_scale_vs_dense and claim_id not in _TOY_RUNS:
            continue   # the form itself raised: its record says so
        try:
            records.append(run(claim_id, ctx))
        except Exception as exc:   # a crashing cross-check is an error (no evidence either way), with its reason
            records.append({"name": run.__name__, "status": "error", "max_error": None, "tolerance": None,
                            "detail": f"raised {type(exc).__name__}: {exc}", "seconds": 0.0})
    return records


def refusals(records: list[dict]) -> list[str]:
    """One line per cross-check that ran and is not verified."""
    return [f"cross-check {r['name']} is {r['status']}: {r['detail']}" for r in records
            if r["status"] not in ("verified", "error", "skipped")]


def errors(records: list[dict]) -> list[str]:
    """One line per cross-check that raised (the claim's entry is then an error, not failed)."""
    return [f"cross-check {r['name']} raised: {r['detail']}" for r in records if r["status"] == "error"]
