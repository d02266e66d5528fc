"""The recorded experiments' results, one clause per claim, for the claims' summary
(``proofs_check.verdicts.standing.summary_rows``): read from the committed records, never rerun."""

from __future__ import annotations


def recorded_findings() -> dict[str, str]:
    """Claim id -> the recorded run's result in one clause (7.3 on text; empty when nothing is recorded)."""
    from proofs_check.experiments.text_experiment import short_finding

    text = short_finding()
    return {"7.3": text} if text else {}
