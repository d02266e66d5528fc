"""Integrity: a generated module that is not what its derivation recorded makes check, matrix and
reproduce refuse (exit 1, the file named) before any work; --allow-drift overrides and says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from proofs_check import integrity
from proofs_check.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def generated(tmp_path, monkeypatch):
    """A copy of numerics/generated/ (with its manifest) that the commands check instead."""
    copy = tmp_path / "generated"
    shutil.copytree(ROOT / "numerics" / "generated", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(integrity, "GENERATED", copy)
    return copy


def tamper(path: Path) -> None:
    """One constant of GELU′ hand-edited inside C_layer: a 1/2 becomes 0.49."""
    text = path.read_text()
    start = text.index("def C_layer(")
    body = text[start:]
    assert "/2" in body
    path.write_text(text[:start] + body.replace("/2", "*0.49", 1))


def test_the_committed_tree_matches_its_manifest():
    report = integrity.verify()
    assert report.ok, str(report)
    assert report.checked == len([p for p in (ROOT / "numerics" / "generated").glob("*.py")
                                  if p.name != "__init__.py"])


def test_tampered_file_is_named(generated):
    tamper(generated / "factorisation.py")
    report = integrity.verify(generated)
    assert not report.ok and len(report.drifted) == 1
    path, reason = report.drifted[0]
    assert path.endswith("factorisation.py") and "hand edit" in reason


@pytest.mark.parametrize("argv", [["check", "--claim", "2.1"], ["grid", "--claim", "2.1"],
                                  ["reproduce", "--quick"]])
def test_commands_refuse_a_tampered_tree_before_work(argv, generated, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tamper(generated / "factorisation.py")
    if argv[0] == "reproduce":
        argv = argv + ["--out", str(tmp_path / "out")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "factorisation.py" in err and "DRIFT" in err
    assert not (tmp_path / "out" / "ledger.json").exists()


def test_allow_drift_runs_and_records_the_override(generated, tmp_path, capsys):
    tamper(generated / "factorisation.py")
    path = tmp_path / "ledger.json"
    assert main(["check", "--claim", "6.3", "--no-progress", "--allow-drift", "--json", str(path)]) == 0
    ledger = json.loads(path.read_text())
    assert ledger["integrity"]["override"] is True and not ledger["integrity"]["ok"]
    assert any("factorisation.py" in d for d in ledger["integrity"]["drifted"])
    assert "OVERRIDDEN" in capsys.readouterr().out


def test_missing_manifest_stray_file_and_missing_module(generated):
    (generated / "stray.py").write_text("x = 1\n")
    assert any(p.endswith("stray.py") and "not recorded" in r for p, r in integrity.verify(generated).drifted)
    (generated / "stray.py").unlink()
    (generated / "visibility.py").unlink()
    assert any(p.endswith("visibility.py") and "missing" in r for p, r in integrity.verify(generated).drifted)
    (generated / integrity.MANIFEST).unlink()
    assert not integrity.verify(generated).ok


def test_changed_source_is_stale_not_drift(generated, tmp_path):
    """A theory file edited after derive: reported as stale (derive --check decides), not refused."""
    manifest = json.loads((generated / integrity.MANIFEST).read_text())
    source = tmp_path / "theory_copy.py"
    source.write_text("changed\n")
    manifest["families"]["visibility"]["sources"] = {str(source): "0" * 64}
    (generated / integrity.MANIFEST).write_text(json.dumps(manifest))
    report = integrity.verify(generated)
    assert report.ok and any("changed since" in r for _, r in report.stale)
