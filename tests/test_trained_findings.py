"""The ledger's ``trained`` finding sorts the matrix's trained column by status and names every
condition and reason; a matrix without the column has no finding."""

from proofs_check.report.sections import trained_section
from proofs_check.runners import trained_findings as tf
def _cell(claim, arch, status, condition=None):
    ev = {"trained": {"checkpoint": "ck", "step": 7, "corpus_sha256": "ab" * 32, "validation_loss": 2.9}}
    return {"claim": claim, "arch": arch, "status": status, "condition": condition, "evidence": ev}


def test_findings_sort_the_trained_column_and_state_it():
    matrix = {"cells": [_cell("1.2", "trained", "holds"), _cell("3.1", "trained", "conditional", "ρ̃ < 1"),
                        _cell("2.2", "trained", "fails", "slope 0.4"), _cell("5.1", "trained", "n/a", "P unset"),
                        _cell("2.1", "preln", "fails", "not this column")]}
    e = tf.findings(matrix)
    assert e["hold"] == ["1.2"] and e["conditional"] == {"3.1": "ρ̃ < 1"}
    assert e["fail"] == {"2.2": "slope 0.4"} and e["not_applicable"] == {"5.1": "P unset"}
    assert e["statement"] == ("On weights trained on text, 1.2 hold; 3.1 hold only under their condition; 2.2 fail; "
                              "1 claims do not apply to this stack (reasons listed).")
    assert 3.0 < e["unigram_entropy"] < 3.3  # the CPython documentation's bytes: 3.14 nats
    section = "\n".join(trained_section(e))
    for text in ("3.1 holds only if: ρ̃ \\< 1", "2.2 fails: slope 0.4", "5.1 n/a: P unset", "2.900 nats/byte"):
        assert text in section, text
    assert all(f"figures/{name}.png" in section for name in tf.FIGURES)


def test_no_trained_column_no_finding():
    assert tf.findings({"cells": [_cell("1.2", "preln", "holds")]}) is None
    assert "without its `trained` column" in "\n".join(trained_section(None))
