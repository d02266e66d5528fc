"""Theory mutants: deliberate, plausible mistakes in the SymPy derivations, and whether the suite catches them.

A mutant replaces one function of a ``theory/<family>.py`` module (the derivation, not
the generated file).  Running a mutant, in a fresh interpreter:

1. patch the theory function;
2. push the family's ``generated_functions()`` through the normal generator into a
   scratch module and install it as ``numerics.generated.<family>`` before anything
   imports it (every numerics module then evaluates the wrong formula);
3. run the claim's ledger check (symbolic steps, numeric property, control): the
   mutant is **killed** when the claim is no longer verified;
4. if it survived, run the tests that name the claim (``tests/test_<family>.py``) with
   the same mutant installed (``FASTSLOW_MUTANT=<name>``, applied by tests/conftest.py).

The **mutation score** is killed / total.  A surviving mutant means a check is too weak:
strengthen the check, never delete the mutant.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from proofs_check.tables import text_table

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutant:
    """One mistake: ``target`` = "theory.<family>:<function>", ``mutate(original) -> replacement``."""

    name: str
    claim: str
    description: str
    target: str
    mutate: Callable

    @property
    def family(self) -> str:
        return self.target.split(":")[0].split(".")[1]


# ---- the catalogue -----------------------------------------------------------------------
def _catalogue() -> list[Mutant]:
    import sympy as sp

    def fact():
        return importlib.import_module("theory.factorisation")

    def g_variant(build):
        """A wrong G_ℓ(λ) built from the module's own B_ℓ, C_ℓ."""
        def replacement(lam_value=None, s=None):
            f = fact()
            lam_value = f.lam if lam_value is None else lam_value
            s = f.SYM if s is None else s
            return build(f, lam_value, s)
        return lambda original: replacement

    cat = [
        Mutant("G-sign-flip", "2.1", "a sign flipped in G_ℓ(λ): (I + C)((1−hα)I − hλB)",
               "theory.factorisation:G_expr",
               g_variant(lambda f, lv, s: (s.I + f.C_expr(s)) * ((1 - f.h * f.alpha) * s.I - f.h * lv * f.B_expr(s)))),
        Mutant("G-factor-order", "2.1", "the factors of G_ℓ(λ) in the wrong order: ((1−hα)I + hλB)(I + C)",
               "theory.factorisation:G_expr",
               g_variant(lambda f, lv, s: ((1 - f.h * f.alpha) * s.I + f.h * lv * f.B_expr(s)) * (s.I + f.C_expr(s)))),
        Mutant("G-dropped-h", "2.1", "a dropped h: (I + C)((1−hα)I + λB)",
               "theory.factorisation:G_expr",
               g_variant(lambda f, lv, s: (s.I + f.C_expr(s)) * ((1 - f.h * f.alpha) * s.I + lv * f.B_expr(s)))),
        Mutant("G-h-squared", "2.1", "h² for h in the attention factor: (I + C)((1−hα)I + h²λB)",
               "theory.factorisation:G_expr",
               g_variant(lambda f, lv, s: (s.I + f.C_expr(s)) * ((1 - f.h * f.alpha) * s.I + f.h**2 * lv * f.B_expr(s)))),
        Mutant("G-one-minus-lambda", "2.1", "λ for 1 − λ in G_ℓ(λ)",
               "theory.factorisation:G_expr",
               lambda original: (lambda lam_value=None, s=None: original(
                   1 - (importlib.import_module("theory.factorisation").lam if lam_value is None else lam_value),
                   importlib.import_module("theory.factorisation").SYM if s is None else s))),
        Mutant("LN-no-mean-removal", "2.1", "the LN Jacobian without its mean-removal term: diag(γ)/σ (I − x̂x̂ᵀ/d)",
               "theory.factorisation:ln_jacobian_expr",
               lambda original: (lambda v, g, s=None: _ln_jacobian_without_centring(v, g, s))),
        Mutant("GELU-prime-is-GELU", "2.1", "GELU′ replaced by GELU in the MLP Jacobian",
               "theory.factorisation:gelu_prime_scalar",
               lambda original: importlib.import_module("theory.factorisation").gelu_scalar),
        Mutant("C-without-h", "2.1", "C_ℓ without its factor h",
               "theory.factorisation:C_expr",
               lambda original: (lambda s=None: original(*(() if s is None else (s,)))
                                 / importlib.import_module("theory.factorisation").h)),
        Mutant("B-no-transpose", "2.1", "B_ℓ = W_VO J_LN (row-convention W_VO used as a column map)",
               "theory.factorisation:B_expr",
               lambda original: (lambda s=None: _B_without_transpose(s))),
    ]
    return cat + _catalogue_other_families(sp)


def _ln_jacobian_without_centring(v, g, s=None):
    f = importlib.import_module("theory.factorisation")
    s = f.SYM if s is None else s
    from sympy import DiagMatrix
    xh = f.ln_normalised(v, s)
    return DiagMatrix(g) * (s.I - xh * xh.T / s.d) / f.ln_sigma(v, s)


def _B_without_transpose(s=None):
    f = importlib.import_module("theory.factorisation")
    s = f.SYM if s is None else s
    return s.W_VO * f.ln_jacobian_expr(s.x, s.gamma1, s)


def _catalogue_other_families(sp) -> list[Mutant]:
    """Mutants of the other families (proofs_check/mutation/catalogue.py)."""
    from proofs_check.mutation import catalogue as mutant_catalogue
    return mutant_catalogue.mutants(Mutant)


def catalogue() -> dict[str, Mutant]:
    mutants = _catalogue()
    names = [m.name for m in mutants]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"mutant names used twice: {sorted(duplicates)}")
    return {m.name: m for m in mutants}


# ---- installing a mutant -------------------------------------------------------------------
def install(name: str, scratch: Path | None = None) -> Mutant:
    """Apply mutant ``name`` in this interpreter: patch theory, regenerate, install the module.

    Must run before anything imports ``numerics.generated.<family>`` or the family's numerics.
    """
    from theory.codegen import render_module

    mutant = catalogue().get(name)
    if mutant is None:
        raise ValueError(f"--only {name!r}: no such mutant (known: {', '.join(catalogue())})")
    module_name, attr = mutant.target.split(":")
    module = importlib.import_module(module_name)
    owner, *path = [module, *attr.split(".")]  # "function" or "Class.method"
    for part in path[:-1]:
        owner = getattr(owner, part)
    setattr(owner, path[-1], mutant.mutate(getattr(owner, path[-1])))
    family = mutant.family
    text = render_module(family, module_name, module.generated_functions())
    scratch = Path(scratch or os.environ.get("FASTSLOW_MUTANT_SCRATCH") or tempfile.mkdtemp(prefix="fastslow-mutant-"))
    path = scratch / f"{family}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"numerics.generated.{family}", path)
    generated = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = generated
    spec.loader.exec_module(generated)
    import numerics.generated

    setattr(numerics.generated, family, generated)
    return mutant


# ---- running mutants -------------------------------------------------------------------------
def _killed_by_ledger(entry: dict) -> str | None:
    if entry["status"] == "verified":
        return None
    if entry.get("traceback"):
        return f"check raised: {entry.get('detail', '')[:120]}"
    if (entry.get("detail") or "").startswith("refused: "):   # a timeout, an unexercised formula, a tolerance
        return entry["detail"][:160]
    unproved = [s["name"] for s in entry["symbolic"].get("list", []) if not s["proved"]]
    if unproved:
        return f"symbolic step: {unproved[0]}"
    num = entry.get("numeric") or {}
    if num and not (num["max_error"] <= num["tolerance"]):
        return f"numeric check: error {num['max_error']:.2e} > tolerance {num['tolerance']:.1e}"
    return f"control: {(entry.get('control') or {}).get('status')}"


#: The time limit of one mutant's ledger run, and of its test run (s): a quick claim check takes ≤ 2 min on a
#: loaded 2-core machine, the slowest family's tests a few minutes; a mutant that runs past this is refused
#: (a derivation that makes SymPy hang is a mistake the suite caught), never awaited.
MUTANT_SECONDS = 1200.0


def run_limited(cmd: list[str], seconds: float | None = None, **kwargs):
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)`` under a time limit: the completed
    process, or None when it ran past ``seconds`` (default :data:`MUTANT_SECONDS`); then its whole process
    group (pytest workers included) is killed, as it is when this process is interrupted or dies
    (``proofs_check.mutation.processes.run_group``)."""
    from proofs_check.mutation.processes import run_group

    return run_group(cmd, MUTANT_SECONDS if seconds is None else seconds, **kwargs)


def timed_out(what: str, seconds: float | None = None) -> str:
    return f"refused: {what} did not finish within {MUTANT_SECONDS if seconds is None else seconds:g} s (timeout)"


def run_one(name: str, run_tests: bool = True) -> dict:
    """Run one mutant in a fresh interpreter; return {name, claim, killed_by, seconds}.  The ledger run and
    the test run each have :data:`MUTANT_SECONDS`; a timeout is a refusal (the mutant is killed), with its reason."""
    start = time.perf_counter()
    mutant = catalogue()[name]
    from proofs_check.mutation.processes import scratch

    with scratch("fastslow-mutant-") as folder:  # the regenerated module; removed on every exit
        return _run_one(name, mutant, folder, run_tests, start)


def _run_one(name: str, mutant, scratch: str, run_tests: bool, start: float) -> dict:
    code = ("import json, sys\n"
            "from proofs_check.mutation.hand_written_theory import install, _killed_by_ledger\n"
            f"install({name!r}, {scratch!r})\n"
            "from proofs_check.verdicts.evidence import CheckContext\n"
            "from proofs_check.verdicts.registry import load_checks\n"
            "from proofs_check.runners.ledger import run_claim\n"
            "load_checks()\n"
            f"entry = run_claim({mutant.claim!r}, CheckContext(quick=True))\n"
            "print('@@' + json.dumps({'killed_by': _killed_by_ledger(entry)}))\n")
    env = os.environ | {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = run_limited([sys.executable, "-c", code], cwd=REPO, env=env)
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@")] if proc else []
    if proc is None:
        killed_by = timed_out(f"the ledger check of {mutant.claim}")
    elif marker:
        killed_by = json.loads(marker[-1][2:])["killed_by"]
    else:
        killed_by = f"installing or checking crashed: {proc.stderr.strip().splitlines()[-1:]}"
    if killed_by is None and run_tests:
        test_file = REPO / "tests" / f"test_{mutant.family}.py"
        if test_file.exists():
            result = run_limited([sys.executable, "-m", "pytest", str(test_file), "-x", "-q",
                                  "-p", "no:cacheprovider"], cwd=REPO,
                                 env=env | {"FASTSLOW_MUTANT": name, "FASTSLOW_MUTANT_SCRATCH": scratch})
            if result is None:
                killed_by = "test: " + timed_out(test_file.name)
            elif result.returncode != 0:
                failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAILED")]
                killed_by = f"test: {failed[0][7:] if failed else test_file.name}"
    return {"name": name, "claim": mutant.claim, "family": mutant.family, "description": mutant.description,
            "killed_by": killed_by, "seconds": time.perf_counter() - start}


def run_pool(run_one, names, known: dict, kind: str, workers: int, run_tests: bool, progress: bool) -> list[dict]:
    """``run_one(name, run_tests)`` for the selected names (all of ``known`` by default) on a process pool."""
    from tqdm import tqdm

    names = names or list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"--only {', '.join(unknown)}: no such {kind} (known: {', '.join(known)})")
    from proofs_check.mutation.processes import pool_map

    def bar(futures):
        return tqdm(futures, desc=f"{kind}s", unit="mutant", disable=not progress or not sys.stderr.isatty())

    return pool_map(run_one, [(n, run_tests) for n in names], workers, bar)


def run_mutants(names: list[str] | None = None, workers: int = 2, run_tests: bool = True,
                progress: bool = True) -> dict:
    """Run the selected mutants (all by default) on a process pool; return the theory summary."""
    results = run_pool(run_one, names, catalogue(), "mutant", workers, run_tests, progress)
    killed = sum(r["killed_by"] is not None for r in results)
    return {"total": len(results), "killed": killed, "score": killed / len(results) if results else 0.0,
            "mutants": results}


def format_table(theory: dict) -> str:
    rows = [("mutant", "claim", "killed by", "s")]
    rows += [(r["name"], r["claim"], r["killed_by"] or "SURVIVED", f"{r['seconds']:.1f}") for r in theory["mutants"]]
    lines = text_table(rows, max_width=90)
    lines.append(f"\ntheory mutation score: {theory['killed']}/{theory['total']} = {theory['score']:.2f}")
    return "\n".join(lines)
