"""Every reference the repository makes resolves inside the repository.

A clone holds the code, its docs and nothing else, so each citation in a docstring, comment,
message or document must point into it:

- a section ``§N`` (``docs/theory.md §3``, ``§1–§2``, ``§3, §5``) names a heading ``## §N`` of
  docs/theory.md;
- a path ``numerics/…``, ``proofs_check/…``, ``tests/…::test_x``, ``docs/…`` names a file that exists;
- nothing cites a document outside the repository (the spec the project started from
  and the paper notes lived outside it; docs/theory.md replaces them), and no
  absolute path of the machine it was written on appears.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THEORY = ROOT / "docs" / "theory.md"
SCANNED_DIRS = ("numerics", "proofs_check", "theory", "tests", "benchmarks", "notebooks", "docs")
SUFFIXES = {".py", ".md", ".ipynb", ".toml"}

SPEC = "THEORY" + ".md"  # the outside spec's name, spelt so that a rename of citations leaves it alone
SECTION = re.compile(r"§\s?(\d+)(?:\.\d+)?")
PATH = re.compile(r"(?<![\w/.-])((?:numerics|proofs_check|theory|tests|benchmarks|docs|notebooks|\.ci)"
                  r"/[\w./-]*\w\.(?:py|md|json|ipynb|toml|png|pdf))(?![\w/])")
OUTSIDE = [
    (re.compile(r"(?<![\w/])THEORY\.md"), f"cites {SPEC}, which a clone does not contain (cite docs/theory.md)"),
    (re.compile(r"\bTHEORY(?:'s)? ?(?:§|\d|ρ|0\.)"), "cites the outside spec by name (THEORY §0, THEORY ρ, THEORY 0.19)"),
    (re.compile(r"paper/NOTES\.md|(?<![\w.])shared/(?:paper|THEORY)"), "cites the paper notes outside the repository"),
    (re.compile(r"/work/(?:main|shared)\b|/tmp/(?:base|helpers|ledger_before)"), "an absolute path of another machine"),
]


def theory_sections() -> set[str]:
    return set(re.findall(r"^## §(\d+)\b", THEORY.read_text(), re.M))


def problems(text: str, where: str, sections: set[str]) -> list[str]:
    """What in ``text`` does not resolve inside the repository."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        at = f"{where}:{lineno}"
        for pattern, why in OUTSIDE:
            if pattern.search(line):
                found.append(f"{at}: {why}: {line.strip()[:100]}")
        for n in SECTION.findall(line):
            if n not in sections:
                found.append(f"{at}: §{n} is not a section of docs/theory.md")
        for path in PATH.findall(line):
            if not (ROOT / path).exists():
                found.append(f"{at}: {path} does not exist")
    return found


def python_text(source: str, strings: bool) -> str:
    """The comments and docstrings of a module (and, with ``strings``, every other string literal,
    such as a message printed to the user), each kept on its own line number; code is blanked."""
    import ast
    import io
    import tokenize

    lines = [""] * (source.count("\n") + 2)
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add(first.lineno)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and (strings or tok.start[0] in docstrings)):
            for k, part in enumerate(tok.string.splitlines()):
                lines[tok.start[0] - 1 + k] += " " + part
    return "\n".join(lines)


def file_text(path: Path) -> str:
    """What of ``path`` is a reference: all of a document; of a module its comments, docstrings and
    messages (a test's other strings build deliberately broken inputs and are not references)."""
    text = path.read_text(errors="replace")
    if path.suffix != ".py":
        return text
    return python_text(text, strings=path.relative_to(ROOT).parts[0] != "tests")


def scanned_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for d in SCANNED_DIRS:
        files += [p for p in sorted((ROOT / d).rglob("*")) if p.suffix in SUFFIXES and p.is_file()
                  and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts]
    return [p for p in files if p.exists() and p != Path(__file__).resolve()]


def test_theory_document_has_every_section():
    assert theory_sections() >= {str(n) for n in range(8)}


def test_every_reference_resolves():
    sections = theory_sections()
    found = [p for f in scanned_files() for p in problems(file_text(f), str(f.relative_to(ROOT)), sections)]
    assert not found, f"{len(found)} references do not resolve:\n" + "\n".join(found[:60])


@pytest.mark.parametrize("text, expected", [
    (f"see {SPEC} §3", f"cites {SPEC}"),
    ("docs/theory.md §9", "§9 is not a section"),
    ("r_last vs THEORY 0.94 and THEORY ρ", "by name"),
    ("tests/test_nothing_here.py::test_x", "does not exist"),
    ("from /work/shared/paper/NOTES.md", "outside the repository"),
])
def test_a_broken_reference_is_reported(text, expected):
    assert any(expected in p for p in problems(text, "x.py", theory_sections()))


def test_a_test_may_build_a_missing_path_but_not_cite_one():
    source = '"""Checks tests/test_missing.py."""\nbad = "theory/gone.py"  # see ' + SPEC + '\n'
    text = python_text(source, strings=False)
    assert "theory/gone.py" not in text and SPEC in text and "tests/test_missing.py" in text


def test_resolving_references_pass():
    ok = "docs/theory.md §3 and §1–§2 (Claims 3.1, 3.2); tests/test_references.py::test_x; numerics/stacks/spec.py"
    assert problems(ok, "x.py", theory_sections()) == []
