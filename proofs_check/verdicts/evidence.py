"""The evidence a claim's check reports, the options it runs under, and the ledger's rule.

A claim is **verified** only when (a) every symbolic step is proved, (b) the numeric property
check's max error is within its stated tolerance, and (c) its negative control fails as
predicted.  Check functions return a :class:`ClaimResult` (evidence only); :func:`decide` sets
the status, never the check.  A check that raises has no evidence: the ledger records it as
*error* (``proofs_check.verdicts.vocabulary.Decision``), never *failed*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, asdict

from proofs_check.timeouts import STEP_SECONDS
from proofs_check.verdicts.vocabulary import ControlStatus, Decision, PaperOutcome, words

STATUSES = words(Decision)
CONTROL_STATUSES = words(ControlStatus)


@dataclass
class SymbolicStep:
    """One step of a derivation: ``proved`` only when SymPy reduced it to zero / True exactly."""

    name: str
    proved: bool
    method: str = "simplify"  # simplify | equals | exact-rational | mpmath-50 | interval
    detail: str = ""


def symbolic_steps(items) -> list[SymbolicStep]:
    """SymbolicSteps from (name, proved, method, detail) tuples, as theory's proof helpers return them."""
    return [SymbolicStep(name=n, proved=bool(ok), method=m, detail=dt) for n, ok, m, dt in items]


#: How closely a tolerance must equal its recomputed derivation (relative): both are a few float64
#: multiplications of the same inputs, so they agree to a few ulps; 1e-9 refuses any change of formula.
DERIVATION_RTOL = 1e-9


@dataclass(frozen=True)
class Derivation:
    """How a rounding tolerance was derived, for the ledger to recompute: the check states its inputs and
    the value it used, the ledger recomputes ``margin · κ · f(n) · u^order`` and refuses a mismatch.

    ``u``: the unit roundoff of the dtype; ``n``: the length of the longest chain of rounded operations
    (summed dot-product lengths); ``kappa``: the condition number or cancellation factor that multiplies
    the relative error; ``margin``: the stated safety factor; ``model``: ``worst`` (f(n) = n, the
    worst-case bound γ_n = n·u) or ``probabilistic`` (f(n) = 4√n, Higham & Mary 2019); ``order``: the
    power of u, 1 for every bound of first-order rounding analysis (the ledger refuses any other)."""

    name: str
    value: float
    u: float
    n: float
    kappa: float = 1.0
    margin: float = 1.0
    model: str = "worst"
    order: float = 1

    def recomputed(self) -> float:
        f = self.n if self.model == "worst" else 4.0 * math.sqrt(self.n)
        return self.margin * self.kappa * f * self.u ** self.order

    def formula(self) -> str:
        f = "n" if self.model == "worst" else "4√n"
        return (f"{self.margin:g}·κ·{f}·u^{self.order:g} with κ = {self.kappa:.3g}, n = {self.n:g}, "
                f"u = {self.u:.3g}")

    def problem(self) -> str | None:
        """Why the tolerance does not match its derivation, or None."""
        if self.model not in ("worst", "probabilistic"):
            return f"tolerance {self.name}: unknown rounding model {self.model!r}"
        if self.order != 1:
            return (f"tolerance {self.name} is derived at order {self.order:g} in the unit roundoff; a rounding "
                    "bound is first order (γ = n·u)")
        if not all(math.isfinite(x) and x > 0 for x in (self.u, self.n, self.kappa, self.margin)):
            return f"tolerance {self.name}: its derivation's inputs are not positive numbers ({self.formula()})"
        expected = self.recomputed()
        if not (math.isfinite(self.value) and abs(self.value - expected) <= DERIVATION_RTOL * expected):
            return (f"tolerance {self.name} = {self.value:.3e} does not match its stated derivation "
                    f"{self.formula()} = {expected:.3e}")
        return None

    def as_dict(self) -> dict:
        return {**asdict(self), "recomputed": self.recomputed(), "problem": self.problem()}


@dataclass
class NumericResult:
    """A property check against simulation: cases run, the worst error, and its derived tolerance.

    ``derivations``: the rounding tolerances the error was measured against, each with its stated
    derivation (:class:`Derivation`); the result is ok only if every one matches its recomputation."""

    cases: int
    max_error: float
    tolerance: float
    detail: str = ""
    table: list[dict] = field(default_factory=list)  # optional rows for the report
    derivations: list[Derivation] = field(default_factory=list)

    def derivation_problems(self) -> list[str]:
        return [p for p in (d.problem() for d in self.derivations) if p]

    @property
    def ok(self) -> bool:
        return (self.cases > 0 and math.isfinite(self.max_error) and self.max_error <= self.tolerance
                and not self.derivation_problems())


@dataclass
class ControlResult:
    """The negative control: the theorem's condition broken, the claim failing by the predicted amount."""

    status: str  # fails-as-predicted | did-not-fail
    detail: str = ""

    def __post_init__(self):
        if self.status not in CONTROL_STATUSES:
            raise ValueError(f"control status {self.status!r} is not one of {CONTROL_STATUSES}")


@dataclass
class ClaimResult:
    """What a check function returns: evidence only."""

    symbolic: list[SymbolicStep]
    numeric: NumericResult
    control: ControlResult
    notes: str = ""
    finding: str = ""  # a stated counterexample or condition the paper's statement needs
    paper_setting: str = ""  # the claim in the paper's setting (vocabulary.PaperOutcome; proofs_check.verdicts.standing)
    measurement: dict | None = None  # the measurement in the paper's setting (standing.measurement); sets paper_setting

    def __post_init__(self):
        if self.measurement is not None:
            outcome = self.measurement["outcome"]
            if self.paper_setting not in ("", outcome):
                raise ValueError(f"paper_setting={self.paper_setting!r} but the measurement's outcome is {outcome!r}")
            self.paper_setting = outcome
        if self.paper_setting not in words(PaperOutcome):
            raise ValueError(f"paper_setting={self.paper_setting!r} is not one of {words(PaperOutcome)}")


@dataclass
class CheckContext:
    """Options every check and figure receives.

    ``quick`` selects CI sizes; ``cache_dir`` (set by ``fastslow reproduce``) is where
    expensive shared results — the training experiment's curves — are kept, so that a
    check and a figure reuse one run.
    """

    device: str = "cpu"
    profile: str = "ci"
    quick: bool = True
    seed: int = 0
    cache_dir: str | None = None
    step_seconds: float = STEP_SECONDS   # the time limit of one symbolic step (proofs_check.timeouts)

    def __post_init__(self):
        if self.profile not in ("ci", "random", "thorough"):
            raise ValueError(f"profile={self.profile!r} is not one of ci, random, thorough")
        if not isinstance(self.quick, bool):
            raise ValueError(f"quick={self.quick!r} must be True or False")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63 - 1:
            raise ValueError(f"seed={self.seed!r} must be an integer in [0, 2**63 - 1)")
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"device={self.device!r} must name a device, e.g. 'cpu'")

    @property
    def thorough(self) -> bool:
        return self.profile == "thorough"


def decide(result: ClaimResult) -> Decision:
    """The ledger's rule: verified iff all steps proved, numeric within tolerance, control failed."""
    symbolic_ok = all(step.proved for step in result.symbolic)
    if symbolic_ok and result.numeric.ok and result.control.status == ControlStatus.FAILS_AS_PREDICTED:
        return Decision.VERIFIED
    return Decision.FAILED
