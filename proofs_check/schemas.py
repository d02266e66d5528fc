"""The JSON Schemas of the documents fastslow reads and writes, generated from their pydantic models.

One model per document, at the layer that owns it:

- ``stack-spec``: :class:`numerics.stacks.params.StackSpecModel` (a stack, as a manifest's ``spec`` or a sweep row names it);
- ``checkpoint-manifest``: :class:`numerics.storage.checkpoint.CheckpointManifest` (``fastslow train``, ``import-hf``);
- ``sweep-spec``: :class:`proofs_check.sweep.spec.SweepFile` (a sweep's TOML file, as parsed);
- ``ledger``: :class:`proofs_check.verdicts.ledger_schema.Ledger` (``fastslow check --json``);
- ``run-log``: :class:`proofs_check.runlog.RunLog` (docs/runs.json, the runs the docs quote).

``python -m proofs_check.schemas`` writes them to docs/schema/<document>.schema.json;
``--check`` exits 1, naming the file, when a committed schema differs from what the models generate.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "schema"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def models() -> dict:
    """Document name -> the pydantic model that defines it."""
    from numerics.storage.checkpoint import CheckpointManifest
    from numerics.stacks.params import StackSpecModel
    from proofs_check.verdicts.ledger_schema import Ledger
    from proofs_check.runlog import RunLog
    from proofs_check.sweep.spec import SweepFile

    return {"stack-spec": StackSpecModel, "checkpoint-manifest": CheckpointManifest, "sweep-spec": SweepFile,
            "ledger": Ledger, "run-log": RunLog}


def schema(name: str) -> dict:
    """Document ``name``'s JSON Schema, as its model generates it now."""
    return {"$schema": DIALECT, **models()[name].model_json_schema()}


def text(name: str) -> str:
    """The schema file's contents: indented JSON, keys in the model's order, one trailing newline."""
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def path(name: str, folder: Path = FOLDER) -> Path:
    return Path(folder) / f"{name}.schema.json"


def stale(folder: Path = FOLDER) -> list[Path]:
    """The schema files under ``folder`` that are missing or differ from what the models generate."""
    return [path(n, folder) for n in models()
            if not path(n, folder).is_file() or path(n, folder).read_text(encoding="utf-8") != text(n)]


def write(folder: Path = FOLDER) -> list[Path]:
    """Write every schema under ``folder`` (atomically); return the paths."""
    from numerics.storage.io import write_text

    Path(folder).mkdir(parents=True, exist_ok=True)
    for name in models():
        write_text(path(name, folder), text(name))
    return [path(n, folder) for n in models()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--check"]):
        print("usage: python -m proofs_check.schemas [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        bad = stale()
        for p in bad:
            print(f"{p}: differs from its model; run python -m proofs_check.schemas", file=sys.stderr)
        return 1 if bad else 0
    for p in write():
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
