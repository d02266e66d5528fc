"""Claims as functions of a stack source.

Every claim that is a statement about a stack registers one function
``evaluate(spec: StackSpec, ctx: CheckContext) -> Verdict`` with :func:`on_stack`, in its own
family's module (``proofs_check/claims/<family>.py``), together with

* ``specs(arch, ctx)``: the stacks it is checked on by default for an architecture, and
* ``not_applicable``: architecture -> the reason the claim does not apply to it (said once, here).

The ledger's check of the claim runs ``evaluate`` on ``specs("preln", ctx)``; the claims ×
architectures matrix runs the same function on each variant's specs; the scale presets,
sweeps and trained checkpoints are further sources of specs.  A verdict reports the measured
numbers, the prediction, the error against its tolerance and one of the statuses below; it
never depends on where the spec came from.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable

VERDICTS = ("holds", "conditional", "fails", "n/a")


@dataclass
class Verdict:
    """One claim on one stack (or one architecture's specs).

    ``error``/``tolerance`` are the normalised headline numbers (``error <= tolerance`` is the
    claim's numeric condition); ``measured`` and ``predicted`` hold the quantities themselves.
    ``condition`` names the extra hypothesis a *conditional* verdict rests on; ``reason``
    explains an *n/a*; ``counterexample`` reproduces a *fails* (the spec and seed).
    """

    claim: str
    status: str
    measured: dict = field(default_factory=dict)
    predicted: dict = field(default_factory=dict)
    error: float | None = None
    tolerance: float | None = None
    condition: str | None = None
    reason: str | None = None
    counterexample: dict | None = None
    spec: dict | None = None
    seconds: float = 0.0

    def __post_init__(self):
        if self.status not in VERDICTS:
            raise ValueError(f"verdict status {self.status!r} is not one of {VERDICTS}")

    @property
    def within_tolerance(self) -> bool:
        return (self.error is not None and self.tolerance is not None and math.isfinite(self.error)
                and self.error <= self.tolerance)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class OnStack:
    claim: str
    evaluate: Callable
    specs: Callable
    not_applicable: dict


ON_STACK: dict[str, OnStack] = {}


def on_stack(claim_id: str, *, specs: Callable, not_applicable: dict | None = None):
    """Register the decorated ``evaluate(spec, ctx) -> Verdict`` as claim ``claim_id`` on a stack."""

    def register(fn):
        ON_STACK[claim_id] = OnStack(claim_id, fn, specs, dict(not_applicable or {}))
        return fn

    return register


def check_spec(spec) -> None:
    """Refuse (ValueError naming the field) a spec that names no valid stack: not a ``StackSpec``, or
    sizes, knobs, dtype or architecture options that ``random_stack`` would refuse.  Checked without
    building the stack."""
    from numerics.architectures import resolve_options
    from numerics.spec import DTYPES, StackSpec
    from numerics.stack import StackConfig, validate_config

    if not isinstance(spec, StackSpec):
        raise ValueError(f"spec={spec!r}: a claim is evaluated on a numerics.spec.StackSpec")
    if spec.checkpoint is None:
        validate_config(StackConfig(T=spec.T, d=spec.d, layers=spec.layers, heads=spec.heads, kernel=spec.kernel,
                                    P=spec.P, seed=spec.seed, arch=spec.arch, **dict(spec.knobs)),
                        dtype=DTYPES[spec.dtype])
        resolve_options(spec.arch, dict(spec.arch_options))


def evaluate(claim_id: str, spec, ctx) -> Verdict:
    """Claim ``claim_id`` on the stack ``spec``; a crashing evaluation is a *fails* with its traceback.
    An unknown claim or an invalid spec is refused (ValueError) before anything is evaluated: a
    verdict is only ever about a stack that exists."""
    if claim_id not in ON_STACK:
        raise ValueError(f"claim_id={claim_id!r} is not a claim on a stack (registered: {', '.join(sorted(ON_STACK))})")
    check_spec(spec)
    entry = ON_STACK[claim_id]
    if spec.arch in entry.not_applicable:
        return Verdict(claim_id, "n/a", reason=entry.not_applicable[spec.arch], spec=spec.as_dict())
    start = time.perf_counter()
    try:
        verdict = entry.evaluate(spec, ctx)
    except Exception as exc:
        verdict = Verdict(claim_id, "fails", reason=f"evaluation raised {type(exc).__name__}: {exc}",
                          measured={"traceback": traceback.format_exc(limit=4)})
    verdict.spec = verdict.spec or spec.as_dict()
    verdict.seconds = time.perf_counter() - start
    return verdict


def default_specs(claim_id: str, arch: str, ctx) -> list:
    return list(ON_STACK[claim_id].specs(arch, ctx))


def ledger_cases(claim_id: str, ctx) -> tuple[list, list[dict]]:
    """The claim on its preln specs, as the ledger's check runs it: ``[(spec, verdict)]`` for the stacks
    that evaluated, and one table row (the stack, its status and the reason) for each that did not
    (n/a or a crash: the check counts those as an infinite error)."""
    cases, unusable = [], []
    for spec in default_specs(claim_id, "preln", ctx):
        v = evaluate(claim_id, spec, ctx)
        if v.status == "n/a" or "traceback" in v.measured:
            unusable.append({"stack": spec.label(), "status": v.status,
                             "reason": v.reason or v.measured.get("traceback")})
        else:
            cases.append((spec, v))
    return cases, unusable


def combine(claim_id: str, verdicts: list[Verdict]) -> Verdict:
    """Several stacks' verdicts as one: the worst status (fails > conditional > holds), the largest
    normalised error, every measurement kept in ``measured['cases']``."""
    if not verdicts:
        return Verdict(claim_id, "n/a", reason="no stacks")
    rank = {"fails": 0, "conditional": 1, "holds": 2, "n/a": 3}
    worst = min(verdicts, key=lambda v: rank[v.status])
    errs = [(v.error / v.tolerance if v.tolerance else v.error) for v in verdicts if v.error is not None]
    return Verdict(claim_id, worst.status,
                   measured={"cases": [v.as_dict() for v in verdicts]},
                   error=max(errs) if errs else None, tolerance=1.0 if errs else None,
                   condition=worst.condition, reason=worst.reason, counterexample=worst.counterexample,
                   spec=worst.spec, seconds=sum(v.seconds for v in verdicts))


def evaluate_arch(claim_id: str, arch: str, ctx) -> Verdict:
    """The claim on every default spec of ``arch``, combined; n/a with the claim's reason where it does not apply."""
    entry = ON_STACK.get(claim_id)
    if entry is None:
        return Verdict(claim_id, "n/a", reason="not a statement about a stack")
    if arch in entry.not_applicable:
        return Verdict(claim_id, "n/a", reason=entry.not_applicable[arch])
    return combine(claim_id, [evaluate(claim_id, s, ctx) for s in default_specs(claim_id, arch, ctx)])


ARCH_FREE: dict[str, str] = {}


def arch_free(claim_id: str, reason: str) -> None:
    """Declare that the matrix does not evaluate claim ``claim_id`` per architecture, and why (it states
    nothing about a stack's architecture, or it is an experiment on one model): its ledger entry is the verdict."""
    ARCH_FREE[claim_id] = reason


EXACT = 1e-12  # relative: a float64 identity through a few O(1) layers (~1e-15) with 1e3 room

#: The claims whose evaluation on a preln spec linearises at the token-homogeneous reference 1x̄ᵀ of the built
#: stack, with its slow-path gates as built: 2.1 (the blocks of J at 1x̄ᵀ), 2.2 (off-block mass at 1x̄ᵀ + δZ),
#: 2.3 (J = Σ A^m ⊗ K_m at 1x̄ᵀ), 2.4 (∂/∂(W_Q, W_K) at 1x̄ᵀ), 3.1 (mode products along the reference
#: trajectory), 3.2 (residuals at 1x̄ᵀ against the mode blocks), 4.1 (visibility at 1x̄ᵀ), 4.2 (∂x̄_L/∂g at the
#: built gates, taken as g = 0).  Not in it: 1.1 and 1.2 (a random inhomogeneous state), 5.1 (it zeroes the
#: gates itself, ``numerics.stability.at_zero_gate``), 6.3 (FLOP counts).
HOMOGENEOUS_REFERENCE = frozenset({"2.1", "2.2", "2.3", "2.4", "3.1", "3.2", "4.1", "4.2"})


def reference_spread(stack, xbar) -> dict:
    """The condition of the claims in :data:`HOMOGENEOUS_REFERENCE` on a built (preln) stack: the
    trajectory from X₀ = 1x̄ᵀ stays token-homogeneous.  Measured as

        spread = max_{ℓ = 1..L} ‖X_ℓ − 1·mean_t(X_ℓ)‖_F / ‖X_ℓ‖_F,

    the condition holds when spread ≤ tolerance = 64·L·T·ε (ε of the stack's dtype).  With every
    gate 0 the spread is rounding only: identical token rows pass the token-wise maps (LayerNorm,
    projections, MLP) identically and differ only through the attention's T-term sums (the softmax
    row normalisation and Σ_s A_ts v_s, nonnegative weights: ≤ 2Tε relative each); the L layers
    add L·2Tε, and the factor 32 covers the growth of a difference through the later layers
    (Lipschitz constants of O(1) weights over total depth hL = 1).  Measured at gate 0: ≤ 4ε up to
    T = 256.  With gates g ≠ 0 the slow path's one-block shift feeds block 0 zero and the other
    blocks the slow output, so the spread is first order in g.

    Returns ``gates`` (each layer's, [] without a slow path), ``spread``, ``layer`` (the ℓ of the
    maximum), ``tolerance`` and ``holds``.
    """
    import torch

    param = next(stack.parameters())
    T, d, L = stack.config.T, stack.config.d, len(stack.layers)
    X0 = xbar.to(dtype=param.dtype, device=param.device).expand(T, d).clone()
    with torch.no_grad():
        states = stack.trajectory(X0)[1:]
        spreads = [float(torch.linalg.norm(X - X.mean(dim=-2, keepdim=True)) / torch.linalg.norm(X))
                   for X in states]
    layer = max(range(L), key=spreads.__getitem__)
    tolerance = 64 * L * T * float(torch.finfo(param.dtype).eps)
    gates = [float(lay.gate.detach()) for lay in stack.layers if lay.slow is not None]
    return {"gates": gates, "spread": spreads[layer], "layer": layer + 1, "tolerance": tolerance,
            "holds": spreads[layer] <= tolerance}


def matrix_spec(arch: str, ctx, *, compress_gate: float | None = None, **fields):
    """The matrix's small stack of ``arch`` as a spec: T = 4, d = 4, 3 layers, 2 heads, causal,
    seed ``ctx.seed``, then ``fields`` (``knobs``/``arch_options`` dicts update the defaults).

    ``compressed`` gets its compression block P = 2 and, when ``compress_gate`` is given, that
    gate; ``hrm`` runs ``layers // 2`` cycles of 3 steps, so its step count matches the others'.
    """
    from numerics.spec import StackSpec

    spec = StackSpec(T=4, d=4, layers=3, heads=2, kernel="causal", arch=arch, seed=ctx.seed,
                     P=2 if arch == "compressed" else None).with_(**fields)
    if arch == "compressed" and compress_gate is not None:
        spec = spec.with_(arch_options={"compress_gate": compress_gate})
    return spec.with_(layers=max(1, spec.layers // 2)) if arch == "hrm" else spec


def shrink(predicate, strategy, max_examples: int = 30, budget: int = 200):
    """Hypothesis ``find``: the simplest example satisfying ``predicate`` (a failing case), or None.

    Hypothesis's explain phase is left out: it traces every Python line the predicate runs while
    shrinking (to report which lines a failure covered), which slows a stack evaluation many-fold
    and reports nothing here.  The predicate is evaluated on at most ``budget`` distinct cases: past that every
    new candidate counts as not failing, so shrinking stops at the simplest failing case found so far
    (still a case the predicate held for)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample

    seen: dict[str, bool] = {}

    def bounded(example):
        key = repr(example)  # a replayed case (Hypothesis replays the final one) keeps its answer
        if key not in seen:
            seen[key] = len(seen) < budget and bool(predicate(example))
        return seen[key]

    phases = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
    try:
        return find(strategy, bounded, settings=settings(max_examples=max_examples, database=None,
                                                           derandomize=True, deadline=None, phases=phases,
                                                           suppress_health_check=list(HealthCheck)))
    except NoSuchExample:
        return None

