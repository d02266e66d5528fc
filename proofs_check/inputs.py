"""Files a command reads, checked before any work: regular files under a size cap
(``numerics.storage.io.read_input``), JSON against a pydantic model, with one-line refusals that name the
option, the file and the field (``InvalidInput``: exit 2).

* :func:`load_ledger`: ``grid --ledger``; the schema, then consistency: a status its own numbers
  contradict (verified with an error above its tolerance, unproved steps, a control that did not
  fail) is a forged or damaged ledger;
* :func:`load_mutation_record`: ``out/mutation.json``, which ``reproduce`` reads into its report at
  the end of the run: checked when the run starts, so that a truncated file costs no run.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from numerics.stacks.params import InvalidInput


def _field(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def load_json(path, model: type[BaseModel], name: str) -> dict:
    """Read a JSON file and check it against ``model``; one-line errors name the file and field."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    if not isinstance(text, str) or text.strip() == "":
        raise InvalidInput(f"{name} {text!r}: the path is empty")
    from numerics.storage.io import read_input

    try:
        raw = read_input(text, name).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidInput(f"{name} {text}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except ValueError as err:
        raise InvalidInput(str(err)) from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise InvalidInput(f"{name} {text}: not JSON ({err})") from None
    try:
        model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InvalidInput(f"{name} {text}: field {_field(err['loc'])}: {err['msg']}") from None
    return data


def ledger_inconsistencies(ledger: dict) -> list[str]:
    """What in a ledger its own numbers contradict, each as ``claims[i] (id): why``.

    The ledger's rule (``proofs_check.verdicts.evidence.decide``) makes an entry *verified* only when
    every symbolic step is proved, the numeric route ran (cases > 0) with a finite error within its
    tolerance, and the control failed as predicted; a stored status the stored numbers do not give
    is a forged or damaged ledger.  For any status: proved ≤ steps, and no claim twice.  (The standing rule
    is the schema's: ``verdicts.ledger_schema.LedgerClaim``.)"""
    problems, seen = [], set()
    for i, entry in enumerate(ledger.get("claims", [])):
        where = f"claims[{i}] ({entry.get('id')})"
        if entry.get("id") in seen:
            problems.append(f"{where}: claim {entry.get('id')} appears twice")
        seen.add(entry.get("id"))
        symbolic = entry.get("symbolic") or {}
        if symbolic.get("proved", 0) > symbolic.get("steps", 0):
            problems.append(f"{where}: symbolic.proved={symbolic.get('proved')} > steps={symbolic.get('steps')}")
        if entry.get("status") != "verified":
            continue
        if symbolic.get("proved") != symbolic.get("steps"):
            problems.append(f"{where}: status verified with {symbolic.get('proved')}/{symbolic.get('steps')} "
                            "symbolic steps proved")
        numeric = entry.get("numeric")
        if numeric is not None:
            error, tolerance = numeric.get("max_error"), numeric.get("tolerance")
            if numeric.get("cases", 0) < 1:
                problems.append(f"{where}: status verified with numeric.cases={numeric.get('cases')}")
            elif (error is None or tolerance is None or not math.isfinite(error) or not math.isfinite(tolerance)
                  or error > tolerance):
                problems.append(f"{where}: status verified with numeric.max_error={error} above "
                                f"numeric.tolerance={tolerance}")
        control = entry.get("control")
        if control is not None and control.get("status") != "fails-as-predicted":
            problems.append(f"{where}: status verified with control.status={control.get('status')!r}")
    return problems


def load_ledger(path, name: str = "--ledger") -> dict:
    """A ledger JSON file, checked against its schema (:class:`proofs_check.verdicts.ledger_schema.Ledger`)
    and for consistency (:func:`ledger_inconsistencies`): a status its own numbers contradict is refused."""
    from proofs_check.verdicts.ledger_schema import Ledger

    data = load_json(path, Ledger, name)
    problems = ledger_inconsistencies(data)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InvalidInput(f"{name} {os.fspath(path)}: {problems[0]}{more}; the ledger contradicts its own numbers")
    return data


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class TheoryMutant(_Open):
    name: str
    claim: str
    killed_by: str | None


class TheoryScore(_Open):
    killed: int = Field(ge=0)
    total: int = Field(ge=0)
    score: float
    mutants: list[TheoryMutant]


class SourceMutant(_Open):
    name: str
    where: str
    claims: list[str]
    killed_by_ledger: Any = None
    killed_by_test_only: Any = None


class SourceScore(_Open):
    total: int = Field(ge=0)
    killed_by_ledger: int = Field(ge=0)
    killed_by_test_only: int = Field(ge=0)
    ledger_score: float
    mutants: list[SourceMutant]


class CodeScore(_Open):
    tool: str
    killed: int = Field(ge=0)
    total: int = Field(ge=0)
    score: float
    survivors: list[Any] = []
    by_file: dict[str, tuple[int, int]] = {}
    justified: dict[str, int] | None = None


class MutationRecord(_Open):
    """``fastslow mutate --json``: the fields ``reproduce``'s report reads."""

    theory: TheoryScore | None = None
    source: SourceScore | None = None
    code: CodeScore | None = None
    git: str | None = None


def load_mutation_record(path, name: str = "mutation.json") -> dict | None:
    """``path`` checked as a mutation record (:class:`MutationRecord`); None when there is none."""
    if not os.path.lexists(os.fspath(path)):
        return None
    return load_json(path, MutationRecord, name)
