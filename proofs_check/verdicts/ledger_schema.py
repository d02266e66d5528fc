"""The ledger's schema: what ``fastslow check --json`` writes, checked before it is written.

:class:`Ledger` is the one model of the document: a list of claim entries (:class:`LedgerClaim`,
the record ``proofs_check.runners.ledger.run_claim`` returns, with the standing
``runners.check.with_standing`` settles), the environment, the options the run was made with and
the integrity of the generated modules.  ``check --scale`` writes the same document with each
entry's size and the run's resources.  Every model forbids fields it does not name, so a field
that appears in a ledger without being declared here is a failed check, not a silent addition;
docs/schema/ledger.schema.json is generated from these models (``python -m proofs_check.schemas``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from proofs_check.verdicts.vocabulary import ControlStatus, Decision, PaperOutcome, Standing, words

#: a claim entry's status: the ledger's decision (``proofs_check.verdicts.vocabulary.Decision``)
STATUSES = words(Decision)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SymbolicSummary(_Strict):
    """The symbolic steps of a check: how many, how many proved, and each one."""

    steps: int = Field(ge=0)
    proved: int = Field(ge=0)
    steps_list: list[dict[str, Any]] | None = Field(None, alias="list",
                                                    description="each step: name, proved, method, detail")


class NumericSummary(_Strict):
    """The numeric route: cases compared, the largest error and the tolerance it is held to."""

    cases: int = Field(ge=0)
    max_error: float | None
    tolerance: float | None
    detail: str = ""
    table: list[dict[str, Any]] = Field(default_factory=list, description="rows for the report")


class ControlSummary(_Strict):
    """The negative control: did breaking the theorem's condition fail it by the predicted amount?"""

    status: Literal[words(ControlStatus)]
    detail: str = ""


class RunSize(_Strict):
    """``check --scale``: the preset size an entry ran at."""

    preset: str
    T: int = Field(ge=1)
    d: int = Field(ge=1)
    layers: int = Field(ge=1)
    heads: int = Field(ge=1)
    dtype: str
    device: str


class LedgerClaim(_Strict):
    """One claim's entry: its description (``Claim.record``), then what its check found."""

    id: str = Field(description="the claim's number in docs/theory.md, e.g. '2.1'")
    status: Literal[STATUSES] = Field(description="the ledger's decision (proofs_check.verdicts.vocabulary."
                                                  "Decision); error: the check raised, detail has its one-line summary")
    family: str
    title: str
    statement: str | None = None
    assumptions: list[str] | None = None
    reconstruction: bool = False
    generated: list[str] | None = Field(None, description="the generated functions the check must call")
    tests: list[str] = Field(default_factory=list)
    figure: str | None = None
    kind: str | None = None
    setting: str | None = None
    standing: Literal[words(Standing)] | None = Field(
        None, description="the claim's standing in the paper's setting, derived from its measurement there "
                          "(proofs_check.verdicts.vocabulary.Standing)")
    declared_standing: Literal[words(Standing)] | None = None
    standing_conflict: str | None = None
    condition: str | None = None
    headline: str | None = None
    symbolic: SymbolicSummary
    numeric: NumericSummary | None
    control: ControlSummary | None
    generated_calls: dict[str, int] | None = None
    derivations: list[dict[str, Any]] | None = Field(None, description="each tolerance's stated derivation")
    notes: str | None = None
    finding: str | None = None
    paper_setting: Literal[words(PaperOutcome)] | None = None
    measurement: dict[str, Any] | None = Field(
        None, description="the measurement in the paper's setting the standing rests on: quantity, value, "
                          "reference, outcome")
    detail: str | None = None
    traceback: str | None = None
    cross_checks: list[dict[str, Any]] | None = Field(
        None, description="checks run beside the claim's own (proofs_check.runners.cross_checks): its matrix-free "
                          "form at --scale toy, the GPT-2 mapping; one not verified refuses the claim")
    seconds: float = Field(ge=0)
    size: RunSize | None = None
    cpu_seconds: float | None = Field(None, ge=0)
    peak_rss_gib: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _standing_is_measured(self):
        """The standing its own measurement in the paper's setting supports (``verdicts.standing.refusal``)."""
        from proofs_check.verdicts.standing import refusal

        problem = refusal(self.model_dump(by_alias=True))
        if problem:
            raise ValueError(f"the standing rule: {problem}")
        return self


class Environment(_Strict):
    """The software and device the ledger was made on (``proofs_check.environment``)."""

    python: str
    platform: str
    device: str
    torch: str
    sympy: str
    numpy: str
    scipy: str
    mpmath: str
    cuda: str | None


class Options(_Strict):
    """How the run was made: enough to reproduce it."""

    profile: str
    quick: bool
    seed: int | None = Field(None, ge=0)
    reproduce: str | None = None
    scale: str | None = None
    preset: str | None = None
    dtype: str | None = None
    device: str | None = None
    T: int | None = Field(None, ge=1)
    d: int | None = Field(None, ge=1)
    layers: int | None = Field(None, ge=1)
    heads: int | None = Field(None, ge=1)


class Integrity(_Strict):
    """Whether the generated modules match the hashes their derivations recorded."""

    ok: bool
    override: bool
    checked: int = Field(ge=0)
    drifted: list[str]
    stale: list[str]


class Ledger(_Strict):
    """``fastslow check --json``: every selected claim's entry, the environment and the options."""

    claims: list[LedgerClaim]
    environment: Environment
    options: Options
    integrity: Integrity | None = None
    seconds: float | None = Field(None, ge=0)
    cpu_seconds: float | None = Field(None, ge=0)
    peak_rss_gib: float | None = Field(None, ge=0)


def _where(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def checked_ledger(ledger: dict) -> dict:
    """``ledger`` itself once it validates against :class:`Ledger` (every entry keeping the rule that its
    standing is what its measurement in the paper's setting shows); ValueError naming the first bad field."""
    try:
        Ledger.model_validate(ledger)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"the ledger does not match its schema: field {_where(err['loc'])}: {err['msg']}") from None
    return ledger
