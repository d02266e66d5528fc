"""What a verdict means: each claim's kind, the setting it was checked in, and its standing.

The ledger's mechanical decision (``proofs_check.verdicts.evidence.decide``: verified / failed) says that a
check's evidence came out as its claim predicts *in the setting the check ran*.  This module says
what that evidence is worth for the paper:

- **kind**: *identity* (exact at its reference for any weights), *lemma* (a mathematical fact on a
  model system; no stack enters), *prediction* (a quantitative statement about stacks that can
  fail on some stack), *experiment* (depends on data);
- **setting**: the paper's (:data:`PAPER_SETTING`) or one the suite chose, named;
- **standing**: one of :class:`~proofs_check.verdicts.vocabulary.Standing` — holds as stated; holds
  under a condition the paper does not state (named); fails in the paper's setting; absent in the
  paper's setting (the effect is not there); vacuous in the paper's setting (the bound cannot bind);
  reconstruction (docs/theory.md rebuilt the definition, so the paper's own statement is not what was
  checked).

A standing is set by measurement.  A check that runs the paper's setting reports it as a
:func:`measurement` (the quantity, its number, what it is judged against, and the outcome: holds, fails,
absent, vacuous); :func:`reconcile` derives the standing from it, whatever was declared, and records a
conflict with the declaration.  A declared standing survives only where the check confirms it: a verified
check run in the paper's setting, or a measurement there that agrees.  :func:`validate_declaration`
refuses, when a claim registers, a standing its kind and setting cannot support, and :func:`refusal`
refuses a ledger record that breaks the rule (a claim whose own measurement in the paper's setting shows
the effect absent, the bound vacuous or the claim failing never reads holds or verified).
"""

from __future__ import annotations

from proofs_check.tables import bold, markdown_table, text_table
from proofs_check.verdicts.vocabulary import Decision, LedgerWord, PaperOutcome, Standing, words

KINDS = ("identity", "lemma", "prediction", "experiment")

HOLDS = Standing.HOLDS
CONDITIONAL = Standing.CONDITIONAL
FAILS = Standing.FAILS
ABSENT = Standing.ABSENT
VACUOUS = Standing.VACUOUS
RECONSTRUCTION = Standing.RECONSTRUCTION
STANDINGS = words(Standing)
#: the standings a measurement in the paper's setting can force, by its outcome
FORCED = {PaperOutcome.FAILS: FAILS, PaperOutcome.ABSENT: ABSENT, PaperOutcome.VACUOUS: VACUOUS}

#: The paper's setting: the stack of docs/theory.md §0 as the paper builds it.
PAPER = "paper"
PAPER_SETTING = "causal fast kernel, pre-LN, untied, gate 0"

#: What a check reports about the paper's setting (``ClaimResult.paper_setting``): not separately
#: evaluated (its own setting is the paper's, or no stack enters), holds, fails, absent or vacuous there.
PAPER_OUTCOMES = words(PaperOutcome)


def measurement(quantity: str, value, judged: str, outcome: str, *, where: str = PAPER_SETTING,
                short: str | None = None) -> dict:
    """A check's measurement in the paper's setting: ``quantity`` (what was measured), ``value`` (its
    number, or numbers), ``judged`` (the criterion it is judged against, in words with its number),
    ``outcome`` (:class:`PaperOutcome`, not empty), ``where`` (the stack it was measured on) and ``short``
    (the number in a few words, for summaries; default ``quantity = value``)."""
    outcome = PaperOutcome(outcome)
    if outcome == PaperOutcome.NOT_RUN:
        raise ValueError("a measurement in the paper's setting has an outcome: holds, fails, absent or vacuous")
    return {"quantity": quantity, "value": value, "judged": judged, "outcome": outcome.value, "where": where,
            "short": short or f"{quantity} = {value}"}


def validate_declaration(claim_id: str, *, kind: str, setting: str, standing: str, condition: str | None,
                         reconstruction: bool) -> None:
    """Refuse a declaration whose standing its kind, setting or reconstruction flag cannot support."""
    where = f"claim {claim_id}"
    if kind not in KINDS:
        raise ValueError(f"{where}: kind={kind!r} is not one of {', '.join(KINDS)}")
    if standing not in STANDINGS:
        raise ValueError(f"{where}: standing={standing!r} is not one of {'; '.join(STANDINGS)}")
    if not isinstance(setting, str) or not setting.strip():
        raise ValueError(f"{where}: setting must be {PAPER!r} or a named setting, not {setting!r}")
    if kind == "lemma" and setting == PAPER:
        raise ValueError(f"{where}: a lemma has no stack; its setting names its model system, not {PAPER!r}")
    if standing == HOLDS and setting != PAPER and kind in ("identity", "prediction"):
        raise ValueError(f"{where}: checked in a suite-chosen setting ({setting}), a statement about stacks cannot "
                         f"be '{HOLDS}'; name the condition ('{CONDITIONAL}') or say it '{FAILS}'")
    if standing == FAILS and setting == PAPER:
        raise ValueError(f"{where}: '{FAILS}' needs the setting in which the check passed, not {PAPER!r}")
    if standing in FORCED.values() and kind == "lemma":
        raise ValueError(f"{where}: a lemma has no stack, so no paper's setting to fail in")
    if standing == CONDITIONAL and not (condition and condition.strip()):
        raise ValueError(f"{where}: '{CONDITIONAL}' must name the condition")
    if standing == RECONSTRUCTION and not reconstruction:
        raise ValueError(f"{where}: standing '{RECONSTRUCTION}' but docs/theory.md does not mark it a reconstruction")
    if reconstruction and standing not in (RECONSTRUCTION, *FORCED.values()):
        raise ValueError(f"{where}: docs/theory.md marks it a reconstruction, so it cannot be '{standing}'")


def reconcile(declared: str, paper_setting: str, status: str) -> tuple[str, str]:
    """The standing the ledger records, derived from the check's measurement in the paper's setting, and a
    conflict note ('' when the measurement agrees with the declaration).

    ``paper_setting`` is the measurement's outcome (:data:`PAPER_OUTCOMES`).  Fails, absent or vacuous there
    make the standing :data:`FAILS`, :data:`ABSENT` or :data:`VACUOUS` whatever was declared; holds there
    confirms holds, a named condition or a reconstruction, and overrides a declared fails / absent /
    vacuous with :data:`HOLDS`.  A check that did not run the paper's setting confirms no negative standing:
    a declared one is kept with the conflict named.  A claim whose check failed or raised keeps its declared
    standing: the ledger's ``failed`` / ``error`` already says it is not evidence."""
    if paper_setting not in PAPER_OUTCOMES:
        raise ValueError(f"paper_setting={paper_setting!r} is not one of {PAPER_OUTCOMES}")
    if status != Decision.VERIFIED:
        return declared, ""
    forced = FORCED.get(paper_setting)
    if forced is not None:
        if declared == forced:
            return forced, ""
        verb = {FAILS: "fails", ABSENT: "is absent", VACUOUS: "is vacuous"}[forced]
        return forced, f"declared '{declared}', but the check found that it {verb} in the paper's setting"
    if declared in FORCED.values():
        return (HOLDS, f"declared '{declared}', but the check found that it holds there") if paper_setting else \
            (declared, f"declared '{declared}', but the check did not run the paper's setting")
    return declared, ""


def refusal(record: dict) -> str | None:
    """Why a ledger record breaks the rule that a standing is what its measurement shows, or None: an outcome
    in the paper's setting without its measurement (or disagreeing with it), or a claim whose measurement
    shows it failing, absent or vacuous in the paper's setting that reads holds, a condition, or verified."""
    where = f"claim {record.get('id')}"
    outcome = record.get("paper_setting") or ""
    shown = record.get("measurement")
    if shown is not None and shown.get("outcome") != outcome:
        return f"{where}: paper_setting={outcome!r} but its measurement's outcome is {shown.get('outcome')!r}"
    if outcome and shown is None:
        return f"{where}: paper_setting={outcome!r} with no measurement in the paper's setting to show it"
    forced = FORCED.get(outcome)
    if forced is not None and record.get("status") == Decision.VERIFIED and record.get("standing") != forced:
        return (f"{where}: its measurement in the paper's setting ({shown['quantity']} = {shown['value']}) is "
                f"{outcome}, but its standing reads '{record.get('standing')}'")
    if forced is not None and ledger_word(record) == Decision.VERIFIED:
        return f"{where}: {outcome} in the paper's setting, yet the ledger reads 'verified'"
    return None


def ledger_word(record: dict) -> str:
    """The mechanical decision as the summary prints it: never a bare 'verified' beside a claim that fails,
    is absent or is vacuous in the paper's setting (there the check passed only in the suite's setting)."""
    status = record.get("status", Decision.SKIPPED)
    if status == Decision.VERIFIED and (record.get("standing") in FORCED.values()
                                        or FORCED.get(record.get("paper_setting") or "")):
        return LedgerWord.PASSES_OFF_PAPER
    if status == Decision.VERIFIED and record.get("setting") not in (None, PAPER) and record.get("kind") != "lemma":
        return LedgerWord.VERIFIED_IN_SETTING
    return status


def setting_text(setting: str | None) -> str:
    if setting is None:
        return "—"
    return f"the paper's ({PAPER_SETTING})" if setting == PAPER else setting


def summary_rows(ledger: dict, findings: dict[str, str] | None = None) -> list[dict]:
    """One row per claim: id, kind, setting, standing, the ledger's decision and the one-line finding, with
    the recorded experiment's result where ``findings`` (claim id -> one clause,
    ``proofs_check.experiments.recorded_findings``) has one."""
    rows, findings = [], findings or {}
    for c in ledger["claims"]:
        get = c.get  # each ledger record carries its claim's declaration (a record without one reads "—")
        standing = get("standing") or "—"
        line = get("headline") or ""
        if get("condition") and standing == CONDITIONAL:
            line = f"condition: {get('condition')}. {line}".strip()
        if findings.get(c["id"]):
            line = f"{line}; {findings[c['id']]}"
        if c.get("measurement"):
            line = f"measured in the paper's setting: {c['measurement']['short']}. {line}".strip()
        if c.get("standing_conflict"):
            line = f"[{c['standing_conflict']}] {line}"
        rows.append({"id": c["id"], "kind": get("kind") or "—", "setting": get("setting"), "standing": standing,
                     "ledger": ledger_word({**c, "standing": standing, "setting": get("setting"), "kind": get("kind")}),
                     "finding": line})
    return rows


def format_summary(ledger: dict, findings: dict[str, str] | None = None) -> str:
    """The plain-text summary ``fastslow check`` opens with: one line per claim, the finding in full."""
    rows = summary_rows(ledger, findings)
    head = ("claim", "kind", "setting", "status", "ledger", "finding")
    cells = [head] + [(r["id"], r["kind"], "paper's" if r["setting"] == PAPER else (r["setting"] or "—"),
                       r["standing"], r["ledger"], r["finding"]) for r in rows]
    lines = text_table([tuple(_cut(x, 48) if i == 2 else x for i, x in enumerate(row)) for row in cells],
                       last_free=True)
    counts = {s: sum(r["standing"] == s for r in rows) for s in STANDINGS}
    lines.append(f"paper's setting: {PAPER_SETTING}. " + "; ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines)


def summary_markdown(ledger: dict, findings: dict[str, str] | None = None) -> str:
    """The same summary as a markdown table (for the report's first screen and the README)."""
    rows = [(_one_line(r["id"]), _one_line(r["kind"]), _one_line(setting_text(r["setting"])),
             bold(_one_line(r["standing"])), bold(_one_line(r["ledger"])), _one_line(r["finding"]))
            for r in summary_rows(ledger, findings)]
    lines = markdown_table(("claim", "kind", "setting", "status", "ledger", "finding"), rows)
    return "\n".join(lines) + f"\n\nThe paper's setting: {PAPER_SETTING}. *ledger* is the mechanical decision " \
        "(symbolic steps proved, numeric error within tolerance, negative control failing as predicted) " \
        "in the setting named.\n"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def _one_line(text) -> str:
    return " ".join(str(text).split())
