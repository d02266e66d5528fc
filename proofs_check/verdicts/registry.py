"""The claims' registry: one :class:`Claim` per claim of docs/theory.md, holding everything about it.

A claim's module registers its parts on the same object, wherever the decorators sit:

* :func:`claim` — the statement, what its verdict means and the ledger's ``check(ctx) -> ClaimResult``;
* :func:`on_stack` — ``evaluate(spec, ctx) -> Verdict`` on one stack, the default ``specs(arch, ctx)``,
  ``needs`` (the capabilities an architecture must declare, ``numerics.stacks.architectures.capabilities``: the
  claim is n/a, with one reason format, on an architecture that lacks one) and whether the claim is
  stated at the token-homogeneous reference 1x̄ᵀ;
* :func:`matrix_free` — the form that never builds a (Td)² Jacobian (``form(run: ScaleRun) -> ClaimResult``)
  with the stack variants it builds, or :func:`no_matrix_free` with the reason there is none;
* :func:`arch_free` — the reason the claim is not evaluated per architecture (it states nothing about a stack).

:meth:`Claim.evaluate` is the one route from a stack to a verdict: the dense form where T·d fits
(:attr:`Claim.dense_features`), the matrix-free form above it.  The ledger, the claims × architectures
grid, ``check --stack``, ``check --scale``, the sweeps and the figures read this registry; the views
(:func:`on_stack_claims`, :func:`scale_claims`, :func:`homogeneous_reference`) are computed from it.

A claim with no check registered is **skipped** by the ledger, never verified.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from dataclasses import dataclass, field
from typing import Callable

from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.vocabulary import StackVerdict

#: Above this many features T·d a claim runs in its matrix-free form (when it has one): the dense forms
#: build (Td)² state Jacobians and parameter Jacobians (at T·d = 256 all of them take ~30 s on one core;
#: 4.1's grows as parameters × T·d).
DENSE_FEATURES = 256


@dataclass
class Claim:
    id: str
    family: str
    title: str = ""
    statement: str = ""
    assumptions: list[str] = field(default_factory=list)
    reconstruction: bool = False
    generated: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    control: str = ""
    figure: str | None = None
    check: Callable | None = None
    kind: str | None = None        # identity | lemma | prediction | experiment (proofs_check.verdicts.standing)
    setting: str | None = None     # "paper" or the suite-chosen setting, named
    standing: str | None = None    # proofs_check.verdicts.standing.STANDINGS
    condition: str | None = None   # the condition the paper does not state, when the standing names one
    headline: str | None = None    # the finding in one line, for the summary
    # -- on a stack (proofs_check.verdicts.on_stack) --
    on_stack: Callable | None = field(default=None, repr=False)      # evaluate(spec, ctx) -> Verdict, dense
    specs: Callable | None = field(default=None, repr=False)         # specs(arch, ctx) -> [StackSpec]
    needs: tuple[str, ...] = ()           # capabilities an architecture must declare (numerics.stacks.architectures)
    homogeneous_reference: bool = False   # stated at 1x̄ᵀ with the slow-path gates as built (gate 0)
    dense_features: int = DENSE_FEATURES  # the largest T·d the dense form runs at
    along_text: bool = False              # on a checkpoint, evaluate measures along its held-out text
    arch_free: str | None = None          # why the grid does not evaluate it per architecture
    # -- matrix-free (proofs_check.verdicts.scale_run) --
    matrix_free: Callable | None = field(default=None, repr=False)   # form(run: ScaleRun) -> ClaimResult
    variants: frozenset = frozenset()     # the ScaleRun stack variants the form builds
    no_matrix_free: str | None = None     # why it has no matrix-free form

    LEDGER_FIELDS = ("id", "title", "family", "statement", "assumptions", "reconstruction", "generated", "tests",
                     "control", "figure", "kind", "setting", "standing", "condition", "headline")

    def record(self) -> dict:
        """The claim's description as the ledger entry starts it."""
        import copy

        return {k: copy.deepcopy(getattr(self, k)) for k in self.LEDGER_FIELDS}

    def not_applicable_to(self, arch: str) -> str | None:
        """Why the claim does not apply to architecture ``arch`` ("n/a: <arch> has no <need> (<meaning>)", the
        first need it lacks), or None when ``arch`` declares every capability the claim needs."""
        from numerics.stacks.architectures.capabilities import CAPABILITIES, missing

        need = missing(arch, self.needs)
        return None if need is None else f"n/a: {arch} has no {need} ({CAPABILITIES[need]})"

    def why_no_matrix_free(self) -> str:
        return self.no_matrix_free or "no matrix-free form is registered"

    def evaluate(self, spec, ctx):
        """The claim on the stack ``spec``: its dense form where T·d ≤ :attr:`dense_features`, its matrix-free
        form above (when it has one; else the dense form).  n/a where the claim does not apply to the
        architecture, and, on a checkpoint's weights, where a claim stated at 1x̄ᵀ finds the trajectory off
        the token-homogeneous set.  A crashing evaluation is an *error* with its traceback.  An invalid spec
        or a claim with no on-stack form is refused (ValueError) before anything is evaluated."""
        from proofs_check.verdicts import on_stack as O

        if self.on_stack is None:
            raise ValueError(f"claim_id={self.id!r} is not a claim on a stack (registered: "
                             f"{', '.join(on_stack_claims())})")
        O.check_spec(spec)
        reason = self.not_applicable_to(spec.arch)
        if reason:
            return O.Verdict(self.id, StackVerdict.NA, reason=reason, spec=spec.as_dict())
        start = time.perf_counter()
        if spec.checkpoint is not None and self.along_text:   # at the states the checkpoint's text visits
            verdict = O.dense_verdict(self, spec, ctx)
        else:
            verdict = O.off_reference(self, spec) if self.homogeneous_reference and spec.checkpoint else None
        if verdict is None:
            if spec.T * spec.d > self.dense_features and self.matrix_free is not None:
                verdict = O.matrix_free_verdict(self, spec)
            else:
                verdict = O.dense_verdict(self, spec, ctx)
        verdict.spec = verdict.spec or spec.as_dict()
        verdict.seconds = time.perf_counter() - start
        return verdict


CLAIMS: dict[str, Claim] = {}


def _entry(id: str, family: str | None = None) -> Claim:
    """Claim ``id``'s one object, created on the first registration of any of its parts.  The ledger's
    registration (``family`` given) needs the id in docs/theory.md (``verdicts.ids.CLAIM_IDS``) and its family
    there; an on-stack or matrix-free form alone may register under any id (a sweep's or a test's own claim)."""
    if family is not None:
        if id not in CLAIM_IDS:
            raise ValueError(f"claim id {id!r} is not in docs/theory.md ({', '.join(CLAIM_IDS)})")
        if CLAIM_IDS[id] != family:
            raise ValueError(f"claim {id} belongs to family {CLAIM_IDS[id]!r}, not {family!r}")
    if id not in CLAIMS:
        CLAIMS[id] = Claim(id=id, family=CLAIM_IDS.get(id, ""))
    return CLAIMS[id]


def claim(id: str, *, title: str, family: str, statement: str, assumptions: list[str],
          reconstruction: bool = False, generated: list[str] = (), tests: list[str] = (),
          control: str, figure: str | None = None, kind: str | None = None, setting: str | None = None,
          standing: str | None = None, condition: str | None = None, headline: str | None = None):
    """Register the decorated function as the ledger's check of claim ``id``, with what its verdict means
    (``kind``, ``setting``, ``standing``, ``condition``, ``headline``: ``proofs_check.verdicts.standing``)."""
    entry = _entry(id, family)
    if (kind, setting, standing) != (None, None, None):
        from proofs_check.verdicts.standing import validate_declaration

        validate_declaration(id, kind=kind, setting=setting, standing=standing, condition=condition,
                             reconstruction=reconstruction)

    def register(fn):
        entry.title, entry.statement, entry.assumptions = title, statement, list(assumptions)
        entry.reconstruction, entry.generated, entry.tests = reconstruction, list(generated), list(tests)
        entry.control, entry.figure, entry.check = control, figure, fn
        entry.kind, entry.setting, entry.standing = kind, setting, standing
        entry.condition, entry.headline = condition, headline
        return fn

    return register


def on_stack(id: str, *, specs: Callable, needs: tuple[str, ...] = (),
             homogeneous_reference: bool = False, dense_features: int = DENSE_FEATURES, along_text: bool = False):
    """Register the decorated ``evaluate(spec, ctx) -> Verdict`` as claim ``id`` on one stack (its dense form),
    with the stacks it is checked on by default (``specs(arch, ctx)``), the capabilities an architecture must
    declare for it to apply (``needs``: names of ``numerics.stacks.architectures.capabilities.CAPABILITIES``, refused
    with ValueError when unknown), whether it is stated at the
    token-homogeneous reference 1x̄ᵀ with the gates as built, the largest T·d its dense form runs at, and
    whether, on a checkpoint's weights, it measures the claim at the states the held-out text visits
    (``numerics.text.held_out``) at any size instead of at 1x̄ᵀ."""
    from numerics.stacks.architectures.capabilities import CAPABILITIES

    unknown = sorted(set(needs) - set(CAPABILITIES))
    if unknown:
        raise ValueError(f"claim {id}: needs={unknown} are not capabilities ({', '.join(CAPABILITIES)})")
    entry = _entry(id)

    def register(fn):
        entry.on_stack, entry.specs = fn, specs
        entry.needs = tuple(needs)
        entry.homogeneous_reference, entry.dense_features = homogeneous_reference, dense_features
        entry.along_text = along_text
        return fn

    return register


def matrix_free(id: str, *, variants: set[str]):
    """Register the decorated ``form(run: ScaleRun) -> ClaimResult`` as claim ``id``'s matrix-free form,
    building the ScaleRun stack ``variants`` ("preset" and ``proofs_check.verdicts.scale_run.VARIANTS``)."""
    entry = _entry(id)

    def register(fn):
        entry.matrix_free, entry.variants = fn, frozenset(variants)
        return fn

    return register


def no_matrix_free(id: str, reason: str) -> None:
    """Declare that claim ``id`` has no matrix-free form, and why (``check --scale`` reports it)."""
    _entry(id).no_matrix_free = reason


def arch_free(id: str, reason: str) -> None:
    """Declare that the grid does not evaluate claim ``id`` per architecture, and why (it states nothing
    about a stack's architecture, or it is an experiment on one model): its ledger entry is the verdict."""
    _entry(id).arch_free = reason


def get(id: str) -> Claim:
    """Claim ``id`` (ValueError naming it when it is not a claim of docs/theory.md)."""
    if id not in CLAIM_IDS:
        raise ValueError(f"claim_id={id!r} is not a claim of docs/theory.md ({', '.join(CLAIM_IDS)})")
    return CLAIMS.get(id) or Claim(id=id, family=CLAIM_IDS[id])


def evaluate(claim_id: str, spec, ctx):
    """Claim ``claim_id`` on the stack ``spec`` (:meth:`Claim.evaluate`); an unknown claim, one with no
    on-stack form, or an invalid spec is refused (ValueError) before anything is evaluated."""
    entry = CLAIMS.get(claim_id)
    if entry is None or entry.on_stack is None:
        raise ValueError(f"claim_id={claim_id!r} is not a claim on a stack (registered: "
                         f"{', '.join(on_stack_claims())})")
    return entry.evaluate(spec, ctx)


def on_device(spec, ctx):
    """``spec`` on the run's device (``ctx.device``, ``--device``): a claim's default stacks are built where
    the run was asked to run them."""
    return spec if spec.device == ctx.device else spec.with_(device=ctx.device)


def ledger_cases(claim_id: str, ctx) -> tuple[list, list[dict]]:
    """The claim on its preln specs, as the ledger's check runs it: ``[(spec, verdict)]`` for the stacks
    that evaluated, and one table row (the stack, its status and the reason) for each that is n/a (the
    check counts those as an infinite error).  A stack whose evaluation raised makes the check raise
    (RuntimeError with the summary), so that the ledger records the claim as *error*, not *failed*."""
    cases, unusable = [], []
    entry = CLAIMS[claim_id]
    for spec in map(lambda s: on_device(s, ctx), entry.specs("preln", ctx)):
        v = entry.evaluate(spec, ctx)
        if v.status == StackVerdict.ERROR:
            raise RuntimeError(f"claim {claim_id} on {spec.label()}: {v.reason}")
        if v.status == StackVerdict.NA:
            unusable.append({"stack": spec.label(), "status": v.status,
                             "reason": v.reason or v.measured.get("traceback")})
        else:
            cases.append((spec, v))
    return cases, unusable


def evaluate_arch(claim_id: str, arch: str, ctx) -> Verdict:
    """The claim on every default spec of ``arch``, combined; n/a with the claim's reason where it does not
    apply (to the architecture, or to any stack: ``arch_free``)."""
    from proofs_check.verdicts.on_stack import Verdict, combine

    entry = CLAIMS.get(claim_id)
    if entry is not None and entry.arch_free:
        return Verdict(claim_id, StackVerdict.NA, reason=entry.arch_free)
    if entry is None or entry.on_stack is None:
        return Verdict(claim_id, StackVerdict.NA, reason="not a statement about a stack")
    reason = entry.not_applicable_to(arch)
    if reason:
        return Verdict(claim_id, StackVerdict.NA, reason=reason)
    return combine(claim_id, [entry.evaluate(on_device(s, ctx), ctx) for s in entry.specs(arch, ctx)])


def _in_order(ids) -> list[str]:
    order = {cid: i for i, cid in enumerate(CLAIM_IDS)}
    return sorted(ids, key=lambda cid: order.get(cid, len(order)))


def on_stack_claims() -> list[str]:
    """The claims with an on-stack form, in docs/theory.md's order."""
    return _in_order(cid for cid, c in CLAIMS.items() if c.on_stack is not None)


def scale_claims() -> list[str]:
    """The claims with a matrix-free form, in docs/theory.md's order."""
    return _in_order(cid for cid, c in CLAIMS.items() if c.matrix_free is not None)


def homogeneous_reference() -> frozenset[str]:
    """The claims whose evaluation linearises at the token-homogeneous reference 1x̄ᵀ of the built stack,
    with its slow-path gates as built (``proofs_check.verdicts.on_stack.reference_spread`` is their condition)."""
    return frozenset(cid for cid, c in CLAIMS.items() if c.homogeneous_reference)


#: the entry-point group naming the packages whose modules register claims (pyproject.toml): the registry
#: finds the claims through it, so it imports nothing above its own layer
CLAIM_PACKAGES = "fastslow.claims"


def load_checks() -> dict[str, Claim]:
    """Import every module of each package under the ``fastslow.claims`` entry point (``proofs_check.claims``:
    each family's module or package and its modules), so that every claim registers; returns the registry.
    An install that declares no such package is refused (RuntimeError): a registry with no claims would
    skip every one of them."""
    from importlib.metadata import entry_points

    packages = sorted(entry_points(group=CLAIM_PACKAGES), key=lambda e: e.name)
    if not packages:
        raise RuntimeError(f"no package registers claims under the entry point {CLAIM_PACKAGES!r}: the installed "
                           "metadata predates it; reinstall with pip install -e .")
    for entry in packages:
        package = entry.load()
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            importlib.import_module(info.name)
    return CLAIMS
