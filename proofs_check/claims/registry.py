"""The claims' registry: one :class:`Claim` per claim of docs/theory.md, registered by its family's module.

A claim with no check registered is **skipped** by the ledger, never verified.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from proofs_check.claims.ids import CLAIM_IDS

@dataclass
class Claim:
    id: str
    title: str
    family: str
    statement: str
    assumptions: list[str]
    reconstruction: bool
    generated: list[str]
    tests: list[str]
    control: str
    figure: str | None
    check: Callable | None = None
    kind: str | None = None        # identity | lemma | prediction | experiment (proofs_check.claims.standing)
    setting: str | None = None     # "paper" or the suite-chosen setting, named
    standing: str | None = None    # proofs_check.claims.standing.STANDINGS
    condition: str | None = None   # the condition the paper does not state, when the standing names one
    headline: str | None = None    # the finding in one line, for the summary


CLAIMS: dict[str, Claim] = {}


def claim(id: str, *, title: str, family: str, statement: str, assumptions: list[str],
          reconstruction: bool = False, generated: list[str] = (), tests: list[str] = (),
          control: str, figure: str | None = None, kind: str | None = None, setting: str | None = None,
          standing: str | None = None, condition: str | None = None, headline: str | None = None):
    """Register the decorated function as the check of claim ``id``, with what its verdict means
    (``kind``, ``setting``, ``standing``, ``condition``, ``headline``: ``proofs_check.claims.standing``)."""
    if id not in CLAIM_IDS:
        raise ValueError(f"claim id {id!r} is not in docs/theory.md ({', '.join(CLAIM_IDS)})")
    if CLAIM_IDS[id] != family:
        raise ValueError(f"claim {id} belongs to family {CLAIM_IDS[id]!r}, not {family!r}")
    if (kind, setting, standing) != (None, None, None):
        from proofs_check.claims.standing import validate_declaration

        validate_declaration(id, kind=kind, setting=setting, standing=standing, condition=condition,
                             reconstruction=reconstruction)

    def register(fn):
        CLAIMS[id] = Claim(id=id, title=title, family=family, statement=statement,
                           assumptions=list(assumptions), reconstruction=reconstruction,
                           generated=list(generated), tests=list(tests), control=control,
                           figure=figure, check=fn, kind=kind, setting=setting, standing=standing,
                           condition=condition, headline=headline)
        return fn

    return register


def load_checks() -> dict[str, Claim]:
    """Import every family's module (``proofs_check.claims.<family>``) so that its claims register."""
    for family in dict.fromkeys(CLAIM_IDS.values()):
        importlib.import_module(f"proofs_check.claims.{family}")
    return CLAIMS
