"""The words a result can take, defined once.

Three questions get three vocabularies; no word means two things:

- :class:`Decision` — the ledger's mechanical decision on one claim's check, in the setting the check
  ran (``fastslow check``);
- :class:`Standing` — what that check measured about the claim *in the paper's setting*;
- :class:`StackVerdict` — a claim evaluated on one stack (``check --stack``, the grid, sweeps).

:class:`PaperOutcome` is what a check reports about the paper's setting, from which the standing is
derived (``proofs_check.verdicts.standing``).  Each enum is a ``StrEnum``: its members compare equal to
their words, so a ledger JSON written as plain strings reads back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class Decision(StrEnum):
    """The ledger's decision on a claim's check."""

    #: the symbolic steps were proved, the numeric error is within its tolerance and every negative
    #: control failed as predicted, in the setting the check ran
    VERIFIED = "verified"
    #: the check ran to its end and its evidence contradicts the claim in that setting
    FAILED = "failed"
    #: the check (or its form) raised: no evidence either way; the exception's one-line summary is kept
    ERROR = "error"
    #: no check is implemented for the claim
    SKIPPED = "skipped"


class Standing(StrEnum):
    """A claim's standing in the paper's setting, as its check measured it."""

    #: the measurement in the paper's setting shows the effect, as the paper states it
    HOLDS = "holds as stated"
    #: it holds only under a condition the paper does not state (named beside it)
    CONDITIONAL = "holds under a condition the paper does not state"
    #: the measurement in the paper's setting contradicts the statement
    FAILS = "fails in the paper's setting"
    #: the effect the statement describes is not there in the paper's setting (e.g. no scale separation)
    ABSENT = "absent in the paper's setting"
    #: the bound is true but cannot bind in the paper's setting (it exceeds what it bounds by far)
    VACUOUS = "vacuous in the paper's setting"
    #: docs/theory.md rebuilt the definition, so the paper's own statement is not what was checked
    RECONSTRUCTION = "reconstruction"


class PaperOutcome(StrEnum):
    """What a check reports about the paper's setting (``ClaimResult.paper_setting``)."""

    #: not separately evaluated (the check's own setting is the paper's, or no stack enters)
    NOT_RUN = ""
    HOLDS = "holds"
    FAILS = "fails"
    ABSENT = "absent"
    VACUOUS = "vacuous"


class StackVerdict(StrEnum):
    """A claim evaluated on one stack."""

    #: the claim's form holds on this stack within its tolerance
    HOLDS = "holds"
    #: it holds once a condition the stack does not meet by itself is imposed (named in the reason)
    CONDITIONAL = "conditional"
    #: the form ran and its measurement contradicts the claim on this stack (a counterexample)
    FAILS = "fails"
    #: the claim does not apply to this stack (no on-stack form, or the form needs stacks it lacks)
    NA = "n/a"
    #: the form raised: no evidence either way; never a counterexample
    ERROR = "error"


class ControlStatus(StrEnum):
    """A negative control's outcome."""

    FAILS_AS_PREDICTED = "fails-as-predicted"
    DID_NOT_FAIL = "did-not-fail"


class LedgerWord(StrEnum):
    """How the summary prints a *verified* decision whose setting is not simply the paper's
    (``proofs_check.verdicts.standing.ledger_word``)."""

    #: verified in a setting the suite chose (named), not the paper's
    VERIFIED_IN_SETTING = "verified in its setting"
    #: verified only off the paper's setting; in the paper's setting the claim fails, is absent or vacuous
    PASSES_OFF_PAPER = "passes off the paper's setting"


class Tone(StrEnum):
    """The colour a word is shown in (the report's table cells)."""

    HOLDS = "holds"
    CONDITIONAL = "conditional"
    FAILS = "fails"
    NA = "na"
    ERROR = "error"


#: every result word of the vocabularies above -> its tone
TONES: dict[str, Tone] = {
    Decision.VERIFIED: Tone.HOLDS, Decision.FAILED: Tone.FAILS, Decision.ERROR: Tone.ERROR, Decision.SKIPPED: Tone.NA,
    StackVerdict.HOLDS: Tone.HOLDS, StackVerdict.CONDITIONAL: Tone.CONDITIONAL, StackVerdict.FAILS: Tone.FAILS,
    StackVerdict.NA: Tone.NA,
    Standing.HOLDS: Tone.HOLDS, Standing.CONDITIONAL: Tone.CONDITIONAL, Standing.FAILS: Tone.FAILS,
    Standing.ABSENT: Tone.FAILS, Standing.VACUOUS: Tone.FAILS, Standing.RECONSTRUCTION: Tone.CONDITIONAL,
    LedgerWord.VERIFIED_IN_SETTING: Tone.CONDITIONAL, LedgerWord.PASSES_OFF_PAPER: Tone.FAILS,
}


def words(enum: type[StrEnum]) -> tuple[str, ...]:
    """The enum's words in declaration order (for JSON Schemas and counts)."""
    return tuple(m.value for m in enum)


def one_line(exc: BaseException) -> str:
    """An exception's one-line summary: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
