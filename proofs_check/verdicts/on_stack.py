"""Claims as functions of a stack source: the verdict, and the routes of ``Claim.evaluate``.

Every claim that is a statement about a stack registers one function
``evaluate(spec: StackSpec, ctx: CheckContext) -> Verdict`` with ``proofs_check.verdicts.registry.on_stack``,
in its own module, together with

* ``specs(arch, ctx)``: the stacks it is checked on by default for an architecture, and
* ``needs``: the capabilities an architecture must declare for the claim to apply (the registry says n/a,
  in one format, where one is missing: ``numerics.stacks.architectures.capabilities``).

``registry.Claim.evaluate`` runs it (:func:`dense_verdict`) where T·d fits, and the claim's matrix-free
form (:func:`matrix_free_verdict`) above.  The ledger's check of the claim runs it on ``specs("preln",
ctx)`` (``registry.ledger_cases``); the claims × architectures grid runs the same function on each
variant's specs (``registry.evaluate_arch``); the scale presets, sweeps and trained checkpoints are further sources of
specs.  A verdict reports the measured numbers, the prediction, the error against its tolerance and one
of :class:`~proofs_check.verdicts.vocabulary.StackVerdict`; it never depends on where the spec came from.
A form that raises is an *error* with the exception's one-line summary: no evidence either way, never a
*fails* and never a counterexample.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import traceback
from dataclasses import asdict, dataclass, field

from proofs_check.verdicts.run_scope import per_run
from proofs_check.verdicts.vocabulary import StackVerdict, one_line, words

VERDICTS = words(StackVerdict)

#: inside a ledger check (:func:`raising`), a form that raises propagates, so that the ledger records the
#: claim as *error*; elsewhere (grid, sweeps, ``check --stack``) it becomes an *error* verdict
_RAISE = contextvars.ContextVar("raise_form_errors", default=False)


@contextlib.contextmanager
def raising():
    """Within this block, on-stack and matrix-free forms that raise are not caught (the ledger's checks)."""
    token = _RAISE.set(True)
    try:
        yield
    finally:
        _RAISE.reset(token)


@dataclass
class Verdict:
    """One claim on one stack (or one architecture's specs).

    ``error``/``tolerance`` are the normalised headline numbers (``error <= tolerance`` is the
    claim's numeric condition); ``measured`` and ``predicted`` hold the quantities themselves.
    ``condition`` names the extra hypothesis a *conditional* verdict rests on; ``reason``
    explains an *n/a* and summarises an *error*; ``counterexample`` reproduces a *fails* (the spec and seed).
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
        self.status = StackVerdict(self.status).value  # the plain word, as JSON and parquet store it

    @property
    def within_tolerance(self) -> bool:
        return (self.error is not None and self.tolerance is not None and math.isfinite(self.error)
                and self.error <= self.tolerance)

    def as_dict(self) -> dict:
        return asdict(self)


def check_spec(spec) -> None:
    """Refuse (ValueError naming the field) a spec that names no valid stack: not a ``StackSpec``, or
    sizes, knobs, dtype or architecture options that ``build(spec)`` would refuse.  Checked without
    building the stack."""
    from numerics.stacks.architectures import resolve_options
    from numerics.stacks.spec import DTYPES, StackSpec
    from numerics.stacks.stack import StackConfig, validate_config

    if not isinstance(spec, StackSpec):
        raise ValueError(f"spec={spec!r}: a claim is evaluated on a numerics.stacks.spec.StackSpec")
    if spec.checkpoint is None:
        validate_config(StackConfig(**spec.flat()), dtype=DTYPES[spec.dtype])
        resolve_options(spec.arch, dict(spec.arch_options))


def dense_verdict(claim, spec, ctx) -> Verdict:
    """``claim``'s dense form on ``spec``; a crash is an *error* with its traceback.  On a checkpoint, a form that
    builds stacks of another shape than the checkpoint's (it varies the depth, the weight path, ...) is n/a,
    with the refusal as the reason, not a failure of the claim."""
    from numerics.storage.checkpoint import CheckpointError

    try:
        verdict = claim.on_stack(spec, ctx)
    except CheckpointError as exc:
        if _RAISE.get() and spec.checkpoint is None:
            raise
        verdict = (Verdict(claim.id, StackVerdict.NA, reason=f"the check varies the stack beyond one checkpoint's "
                           f"shape: {exc}") if spec.checkpoint is not None else
                   Verdict(claim.id, StackVerdict.ERROR, reason=f"evaluation raised {one_line(exc)}",
                           measured={"traceback": traceback.format_exc(limit=4)}))
    except Exception as exc:
        if _RAISE.get():
            raise
        verdict = Verdict(claim.id, StackVerdict.ERROR, reason=f"evaluation raised {one_line(exc)}",
                          measured={"traceback": traceback.format_exc(limit=4)})
    if spec.checkpoint is not None:
        verdict.measured.setdefault("form", "dense")
    return verdict


@per_run(maxsize=1)
def _scale_run(spec):
    """One ``ScaleRun`` per spec: its reference and derivatives are shared by the claims' matrix-free forms."""
    from proofs_check.verdicts.scale_run import ScaleRun

    return ScaleRun("checkpoint" if spec.checkpoint else "spec", dtype=spec.dtype, device=spec.device,
                    seed=spec.seed, source=spec)


def matrix_free_verdict(claim, spec) -> Verdict:
    """``claim``'s matrix-free form on ``spec`` (``proofs_check.verdicts.scale_run``: jvp probes of the stack
    against the matrix-free predictions, with the form's control).  n/a when the form builds stacks a
    checkpoint does not hold (other depths, kernels, a slow path)."""
    from numerics.storage.checkpoint import CheckpointError
    from proofs_check.verdicts.evidence import decide

    try:
        result = claim.matrix_free(_scale_run(spec))
    except CheckpointError as exc:
        return Verdict(claim.id, StackVerdict.NA, reason=f"matrix-free form: {exc} (the dense form: T·d = "
                       f"{spec.T * spec.d} > {claim.dense_features})", spec=spec.as_dict())
    except Exception as exc:  # a crashing form is no evidence either way, as a dense one is
        if _RAISE.get():
            raise
        return Verdict(claim.id, StackVerdict.ERROR, reason=f"matrix-free form raised {one_line(exc)}",
                       measured={"form": "matrix-free", "traceback": traceback.format_exc(limit=4)},
                       spec=spec.as_dict())
    status = StackVerdict.HOLDS if decide(result) == "verified" else StackVerdict.FAILS
    measured = {"form": "matrix-free", "numeric": result.numeric.detail,
                "control": {"status": result.control.status, "detail": result.control.detail}}
    return Verdict(claim.id, status, measured=measured, error=result.numeric.max_error,
                   tolerance=result.numeric.tolerance, spec=spec.as_dict(),
                   reason=None if status == StackVerdict.HOLDS else "matrix-free form: " + (
                       result.control.detail if result.numeric.ok else result.numeric.detail),
                   counterexample=None if status == StackVerdict.HOLDS else {"spec": spec.as_dict()})


def off_reference(claim, spec) -> Verdict | None:
    """On a checkpoint's weights, a claim stated at the token-homogeneous reference is n/a, not run, when the
    trained gates move the trajectory from 1x̄ᵀ off the homogeneous set (:func:`reference_spread` above its
    rounding tolerance): the theorem's condition does not hold on these weights.  The reason names the
    measured spread and the gates.  None when the condition holds."""
    from numerics.stacks.stack import random_xbar

    ref = reference_spread(spec.build(), random_xbar(spec.d, spec.seed))
    if ref["holds"]:
        return None
    gates = ", ".join(f"{g:+.4f}" for g in ref["gates"])
    reason = (f"spread {ref['spread']:.1e} > {ref['tolerance']:.1e} off 1x̄ᵀ: the trained gates g = ({gates}) "
              f"move the reference off the token-homogeneous set (max_ℓ ‖X_ℓ − 1·mean_t X_ℓ‖/‖X_ℓ‖ from "
              f"X_0 = 1x̄ᵀ, at layer {ref['layer']}; tolerance: float64 rounding at g = 0), and the claim is "
              "stated at the gate-0 homogeneous reference")
    return Verdict(claim.id, StackVerdict.NA, measured={"reference": ref}, reason=reason, spec=spec.as_dict())


def combine(claim_id: str, verdicts: list[Verdict]) -> Verdict:
    """Several stacks' verdicts as one: the worst status (error > fails > conditional > holds > n/a: an error is
    never hidden behind another stack's verdict), the largest normalised error, every measurement kept in
    ``measured['cases']``."""
    if not verdicts:
        return Verdict(claim_id, StackVerdict.NA, reason="no stacks")
    rank = {StackVerdict.ERROR: 0, StackVerdict.FAILS: 1, StackVerdict.CONDITIONAL: 2, StackVerdict.HOLDS: 3,
            StackVerdict.NA: 4}
    worst = min(verdicts, key=lambda v: rank[v.status])
    errs = [(v.error / v.tolerance if v.tolerance else v.error) for v in verdicts if v.error is not None]
    return Verdict(claim_id, worst.status,
                   measured={"cases": [v.as_dict() for v in verdicts]},
                   error=max(errs) if errs else None, tolerance=1.0 if errs else None,
                   condition=worst.condition, reason=worst.reason, counterexample=worst.counterexample,
                   spec=worst.spec, seconds=sum(v.seconds for v in verdicts))


EXACT = 1e-12  # relative: a float64 identity through a few O(1) layers (~1e-15) with 1e3 room

def reference_spread(stack, xbar) -> dict:
    """The condition of the claims stated at the token-homogeneous reference (``registry.homogeneous_reference``) on a built (preln) stack: the
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
    from numerics.stacks.spec import StackSpec

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

