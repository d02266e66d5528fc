"""Which claims survive training: the matrix's ``trained`` column read as the ledger's finding.

The column evaluates every on-stack claim on a pre-LN stack trained on text
(``proofs_check.runners.grid.trained_cells``).  ``findings`` sorts its cells into claims that hold
on the trained weights, hold only under a named condition, fail, or do not apply (with the
reason), and states the result in one sentence for the ledger and the report.
"""

from __future__ import annotations

#: The figures that set trained weights beside random ones.
FIGURES = ("trained_vs_random", "visibility_trained_vs_random", "gate_margin_over_training")


def findings(matrix_json: dict) -> dict | None:
    """The ledger's ``trained`` entry from a matrix with a ``trained`` column (None without one)."""
    cells = [c for c in matrix_json["cells"] if c["arch"] == "trained"]
    if not cells:
        return None
    stack = next((c["evidence"]["trained"] for c in cells if "trained" in (c.get("evidence") or {})), None)
    by_status = {s: {c["claim"]: c.get("condition") for c in cells if c["status"] == s}
                 for s in ("holds", "conditional", "fails", "n/a")}
    return {"stack": stack, "unigram_entropy": _unigram_entropy(), "hold": sorted(by_status["holds"]),
            "conditional": by_status["conditional"], "fail": by_status["fails"], "not_applicable": by_status["n/a"],
            "statement": _statement(by_status)}


def _unigram_entropy() -> float:
    """The validation text's unigram entropy (nats/byte): the loss of a model that ignores context."""
    from numerics.text.corpus import ByteCorpus, unigram_entropy
    import torch

    return unigram_entropy(ByteCorpus.load().validation.to(torch.uint8).numpy().tobytes())


def _statement(by_status: dict) -> str:
    def ids(d):
        return ", ".join(sorted(d)) or "none"

    text = f"On weights trained on text, {ids(by_status['holds'])} hold"
    if by_status["conditional"]:
        text += f"; {ids(by_status['conditional'])} hold only under their condition"
    text += f"; {ids(by_status['fails'])} fail"
    return text + f"; {len(by_status['n/a'])} claims do not apply to this stack (reasons listed)."
