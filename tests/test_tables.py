"""The one table formatter (proofs_check.tables): column widths, alignment, cuts, and markdown escaping."""

import pytest

from proofs_check.tables import Markdown, bold, code, markdown_table, text_table


def test_text_table_columns_line_up():
    lines = text_table([("claim", "status", "s"), ("2.1", "verified", "12.5"), ("10.10", "failed", "0.1")])
    assert lines == ["claim  status    s",
                     "-----  --------  ----",
                     "2.1    verified  12.5",
                     "10.10  failed    0.1"]
    # the second column starts at the same offset on every line
    assert {line.index(word) for line, word in zip(lines, ("status", "--------", "verified", "failed"))} == {7}


def test_right_alignment_and_long_cells_wrap():
    lines = text_table([("T", "seconds", "what"), (8, "0.10", "a very long description")], align=">><",
                       max_width=7)
    assert lines == ["T  seconds  what",
                     "-  -------  -----------",
                     "8     0.10  a very",
                     "            long",
                     "            description"]  # nothing is cut: every word of the reason is printed


def test_free_last_column_is_not_padded_and_its_rule_is_the_header():
    lines = text_table([("id", "finding"), ("1.1", "a finding much longer than its header")], last_free=True)
    assert lines == ["id   finding", "---  -------", "1.1  a finding much longer than its header"]


def test_ragged_rows_and_bad_alignment_are_refused():
    with pytest.raises(ValueError, match="header's 2 cells"):
        text_table([("a", "b"), ("1",)])
    with pytest.raises(ValueError, match="align"):
        text_table([("a", "b")], align="<^")
    with pytest.raises(ValueError, match="header's 2 cells"):
        markdown_table(("a", "b"), [("1", "2", "3")])


def test_markdown_escapes_plain_cells_and_keeps_markdown_ones():
    lines = markdown_table(("quantity", "status"), [("θ_ℓ | g*", bold("holds")), (Markdown("[2.1](#claim-2-1)"),
                                                                              code("a|b"))])
    assert lines == ["| quantity | status |",
                     "|---|---|",
                     "| θ\\_ℓ \\| g\\* | **holds** |",
                     "| [2.1](#claim-2-1) | `a\\|b` |"]
    # control: without escaping, the pipe would split the first row into three cells
    assert all(line.replace("\\|", "").count("|") == 3 for line in lines)
