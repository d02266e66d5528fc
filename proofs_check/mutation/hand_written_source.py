"""Numerics mutants: plausible mistakes in the torch stack, the kernels, pooling, the certificate
and the training experiment, and whether the **ledger** catches them.

The theory mutants (``proofs_check/mutation/hand_written_theory.py``) put a wrong derivation into the generated
code.  These put a wrong line into the hand-written numerics that every check simulates: a
sublayer reading the wrong input, a sign in the residual damping, the mean pooling written as
a sum, the causal mask transposed, ...  Each mutant is one exact source replacement
(``old`` must occur exactly once in ``path``; otherwise the mutant is *stale* and reported as an
error, never as killed).

Running one, in a scratch copy of the repository (the working tree is never touched):

1. copy ``theory/``, ``numerics/``, ``proofs_check/``, ``benchmarks/``, ``tests/`` and ``docs/`` to a temporary
   folder and apply the replacement there;
2. run the ledger check of every claim the mutant names, in a fresh interpreter on the copy:
   the mutant is **killed by the ledger** when one of them is no longer verified (a crash does
   not count);
3. if it survived, run the tests of the claims' families on the copy: **killed by a test only**
   when one fails.  A mutant the ledger misses is a defect of the ledger even if a test kills it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from proofs_check.verdicts.registry import CLAIM_IDS
from proofs_check.mutation.hand_written_theory import run_limited, run_pool, timed_out
from proofs_check.mutation.processes import held, released
from proofs_check.tables import bold, markdown_table, text_table

REPO = Path(__file__).resolve().parents[2]
#: docs/ too: checks read committed records there (docs/trained: the paper-setting checkpoints, study records)
COPIED = ("theory", "numerics", "proofs_check", "benchmarks", "tests", "docs")


@dataclass(frozen=True)
class SourceMutant:
    """Replace ``old`` (exactly once) by ``new`` in ``path``; the ledger of ``claims`` should catch it."""

    name: str
    path: str
    old: str
    new: str
    claims: tuple[str, ...]
    description: str
    where: str  # forward pass | reference trajectory | kernels | pooling | certificate | training | claim numerics
    scale: str | None = None   # a preset: the claims' scale forms (fastslow check --scale) are its ledger

    def apply(self, root: Path) -> None:
        file = root / self.path
        text = file.read_text()
        count = text.count(self.old)
        if count != 1:
            raise ValueError(f"source mutant {self.name!r} is stale: its line occurs {count} times in {self.path}")
        file.write_text(text.replace(self.old, self.new))


def _mutant(name, old, new, claims, description, where, path="numerics/stacks/stack.py", scale=None):
    return SourceMutant(name, path, old, new, tuple(claims), description, where, scale)


CATALOGUE: tuple[SourceMutant, ...] = (
    _mutant("mlp-reads-x", "return u + self.h * self.mlp(self.ln2(u))",
               "return u + self.h * self.mlp(self.ln2(x))", ["1.1", "2.1"],
               "the MLP sublayer reads the layer's input X instead of the post-attention state U",
               "forward pass"),
    _mutant("decay-sign", "u = (1.0 - self.h * self.decay) * x + self.h * self.mixing(x)",
               "u = (1.0 + self.h * self.decay) * x + self.h * self.mixing(x)", ["2.1", "5.1"],
               "the residual damping (1 − hα)X written (1 + hα)X in the forward pass", "forward pass"),
    _mutant("step-size-squared", "self.h, self.decay = cfg.h, cfg.decay",
               "self.h, self.decay = cfg.h ** 2, cfg.decay", ["1.1", "2.1"],
               "every layer steps h² instead of h = 1/L", "forward pass"),
    _mutant("attention-scale-dk-missing",
               "scores = q @ k.transpose(-1, -2) / math.sqrt(self.W_Q.shape[-1]) + self.bias",
               "scores = q @ k.transpose(-1, -2) + self.bias", ["2.1", "1.1", "2.4"],
               "attention scores without the 1/√d_k scale", "forward pass"),
    _mutant("token-map-skips-ln1",
               "ubar = (1.0 - self.h * self.decay) * xbar + self.h * self.ln1(xbar) @ self.attn.value_output()",
               "ubar = (1.0 - self.h * self.decay) * xbar + self.h * xbar @ self.attn.value_output()",
               ["2.1", "3.1"], "the reference trajectory's attention step forgets LN₁", "reference trajectory"),
    _mutant("reference-from-start", "states.append(layer.token_map(states[-1]))",
               "states.append(layer.token_map(states[0]))", ["2.1", "3.1"],
               "every layer of the reference trajectory starts again from x̄₀", "reference trajectory"),
    _mutant("slow-shift-missing",
               "shifted = torch.cat([torch.zeros_like(out[..., :1, :]), out[..., :-1, :]], dim=-2)",
               "shifted = out", ["4.2", "5.1"],
               "the slow path without its one-block shift (block b sees its own mean)", "pooling"),
    _mutant("slow-pool-sum", "pooled = z.reshape(*batch, T // self.P, self.P, d).mean(-2)",
               "pooled = z.reshape(*batch, T // self.P, self.P, d).sum(-2)", ["5.1", "4.2"],
               "the slow path pools block sums instead of block means", "pooling"),
    _mutant("pool-matrix-sum", "torch.full((1, P), 1.0 / P, dtype=dtype, device=device))",
               "torch.full((1, P), 1.0, dtype=dtype, device=device))", ["3.2"],
               "the pooling matrix Π = I ⊗ 1ᵀ (block sums) instead of I ⊗ 1ᵀ/P", "pooling",
               path="numerics/stacks/kernels.py"),
    _mutant("causal-mask-transposed", "    return i[None, :] <= i[:, None]\n",
               "    return i[None, :] >= i[:, None]\n", ["4.1", "3.2", "2.1"],
               "the causal mask transposed: token i attends to the later tokens j ≥ i", "kernels",
               path="numerics/stacks/kernels.py"),
    _mutant("block-mask-diagonal", "return b[None, :] <= b[:, None]", "return b[None, :] == b[:, None]",
               ["2.1", "3.2"], "the block-causal kernel written block-diagonal (no earlier blocks)", "kernels",
               path="numerics/stacks/kernels.py"),
    _mutant("alibi-sign", "bias = (-slopes[:, None, None] * (i[:, None] - i[None, :])).to(dtype)",
               "bias = (slopes[:, None, None] * (i[:, None] - i[None, :])).to(dtype)", ["2.1", "2.2"],
               "ALiBi with the wrong sign: distant tokens favoured", "kernels", path="numerics/stacks/kernels.py"),
    _mutant("cert-K-without-gate-scaling", "Ds = _slow_branch_maps(stack, xs, step)",
               "Ds = cfg.h * _slow_branch_maps(stack, xs, step)", ["5.1"],
               "the certificate's slow-branch map K_ℓ is ∂/∂g of the layer (carrying h) instead of (1/h)∂/∂g",
               "certificate", path="numerics/families/slow_mode_maps.py"),
    _mutant("cert-slow-branch-wrong-block",
               "out.append(_batched_jacobian(lambda e: shift @ layer.slow.attn(layer.ln1(x + e)), zero))",
               "out.append(_batched_jacobian(lambda e: shift.T @ layer.slow.attn(layer.ln1(x + e)), zero))",
               ["5.1"], "the certificate's slow branch shifted the wrong way: block b reads block b+1",
               "certificate", path="numerics/families/slow_mode_maps.py"),
    _mutant("cert-slow-branch-skips-ln1",
               "out.append(_batched_jacobian(lambda e: shift @ layer.slow.attn(layer.ln1(x + e)), zero))",
               "out.append(_batched_jacobian(lambda e: shift @ layer.slow.attn(x + e), zero))",
               ["5.1"], "the certificate's slow-branch map differentiates the slow attention without LN₁",
               "certificate", path="numerics/families/slow_mode_maps.py"),
    _mutant("cert-K-without-mlp-stage",
               'K = torch.einsum("lij,lajbk->laibk", factor, Ds.reshape(-1, n, d, n, d)).reshape(-1, N, N)',
               "K = Ds.reshape(-1, N, N)", ["5.1"],
               "K_ℓ without the MLP stage's factor (I + C_ℓ): the slow branch taken as the layer's output",
               "certificate", path="numerics/families/slow_mode_maps.py"),
    _mutant("cert-K-without-operating-point-shift",
               'K = K + torch.einsum("laij,lajc->laic", shift, G_u).reshape(L, N, N)', "K = K.clone()", ["5.1"],
               "K_ℓ without the shift of the MLP's operating point by the slow output (the linear model's K)",
               "certificate", path="numerics/families/slow_mode_maps.py"),
    _mutant("cert-margin-frobenius", "norms.append(spectral_norm(M))",
               "norms.append(torch.linalg.matrix_norm(M))", ["5.1"],
               "the certificate's norms ‖G_ℓ‖, ‖K_ℓ‖ (and so μ, g*) taken in Frobenius instead of the 2-norm",
               "certificate", path="numerics/families/stability.py"),
    _mutant("spectral-norm-smallest",
               "return torch.linalg.eigvalsh(M.transpose(-1, -2) @ M)[..., -1].clamp_min(0).sqrt()",
               "return torch.linalg.eigvalsh(M.transpose(-1, -2) @ M)[..., 0].clamp_min(0).sqrt()", ["5.1", "5.2"],
               "the spectral norm returns the smallest singular value instead of the largest", "certificate",
               path="numerics/families/layer_systems.py"),
    _mutant("gated-jacobian-gates-mixed", 'params["gate"] = gates.repeat_interleave(N).reshape(B, 1, 1)',
               'params["gate"] = gates.repeat(N).reshape(B, 1, 1)', ["5.1"],
               "the direct gated-layer Jacobians interleave the gates across the batch (repeat, not "
               "repeat_interleave): each row of ΠJ(g)Π⁺ is taken at another gate", "certificate",
               path="numerics/families/slow_mode_maps.py"),
    _mutant("training-mask-sees-next",
               "allowed = (i[None, :] <= i[:, None]) & (i[None, :] // P == i[:, None] // P)",
               "allowed = (i[None, :] <= i[:, None] + 1) & (i[None, :] // P == i[:, None] // P)", ["7.3"],
               "the within-block causal mask of the training model off by one: token i also sees token i+1",
               "training", path="numerics/text/language_model.py"),
    _mutant("training-target-unshifted", "logits = model(tokens)[:, :-1]", "logits = model(tokens)[:, 1:]",
               ["7.3"], "the next-token loss aligns the logits of position t+1 with token t+1 (it sees its target)",
               "training", path="numerics/text/language_model.py"),
    _mutant("saturation-search-off-by-one", "    return ell\n", "    return max(ell - 1, 0)\n", ["3.1"],
               "the saturation depth's search returns one layer too shallow (which also eases ℓ* ≤ bound)",
               "claim numerics", path="numerics/families/coarse_graining.py"),
    _mutant("matrix-free-transpose-dropped", "AmV = self.kernel(AmV, transpose=transpose)",
               "AmV = self.kernel(AmV, transpose=False)", ["2.3"],
               "the matrix-free Jᵀ applies the kernel A where Aᵀ belongs", "claim numerics",
               path="numerics/linearised/matrix_free.py"),
    _mutant("scale-tolerance-sqrt", "    tol = run.gamma\n    # at 1x̄ᵀ + δN",
               "    tol = run.gamma ** 0.5\n    # at 1x̄ᵀ + δN", ["2.4"],
               "a scale tolerance derived at the wrong order: √γ instead of the rounding bound γ = n·u",
               "claim numerics", path="proofs_check/claims/factorisation/matrix_free.py", scale="toy"),
    _mutant("adjoint-probes-reused-seed", "V = mf.probes(probes, spec.T, spec.d, seed=spec.seed + 32)",
               "V = mf.probes(probes, spec.T, spec.d, seed=spec.seed + 31)", ["2.3"],
               "the adjoint identity's probes V drawn from U's seed (V = U): the identity no longer sees a "
               "transpose dropped from Jᵀ", "claim numerics", path="proofs_check/claims/factorisation/polynomial_form.py"),
    _mutant("scale-adjoint-probes-reused-seed", "run.probe(1, seed=21), run.probe(1, seed=22))",
               "run.probe(1, seed=21), run.probe(1, seed=21))", ["2.3", "3.2"],
               "the scale forms' adjoint check draws V from U's seed (V = U)", "claim numerics",
               path="proofs_check/verdicts/scale_run.py"),
    # self-consistent scale-only mistakes: the form's check and its own guard share them, so the form stays
    # verified; the ledger refuses them by comparing the form's numbers with the dense form's at the toy size
    _mutant("scale-operator-norm-squared", "return sigma, abs(sigma - prev) / max(sigma, torch.finfo(dtype).tiny)",
               "return sigma * sigma, abs(sigma - prev) / max(sigma, torch.finfo(dtype).tiny)", ["2.3", "3.2"],
               "the power iteration reports the eigenvalue of MᵀM (σ²) as ‖M‖₂: 3.2's ratio of two such norms "
               "and 2.3's lower bound stay self-consistent", "claim numerics", path="numerics/linearised/matrix_free.py"),
    _mutant("scale-gate-certificate-step-halved",
               "e = ns.certify_gate_bound(norms[0], norms[1], st.h, rel_err=rel_err)",
               "e = ns.certify_gate_bound(norms[0], norms[1], st.h / 2, rel_err=rel_err)", ["5.1"],
               "5.1's matrix-free certificate with the step h/2: μ and g* doubled (an unsafe gate bound), "
               "while the form's guard tests the gated product below that g*", "claim numerics",
               path="proofs_check/claims/stability/matrix_free.py"),
    _mutant("scale-gate-certificate-maps-swapped",
               "e = ns.certify_gate_bound(norms[0], norms[1], st.h, rel_err=rel_err)",
               "e = ns.certify_gate_bound(norms[1], norms[0], st.h, rel_err=rel_err)", ["5.1"],
               "5.1's matrix-free certificate with the norms of the maps G_ℓ and K_ℓ in the wrong order",
               "claim numerics", path="proofs_check/claims/stability/matrix_free.py"),
)


def catalogue() -> dict[str, SourceMutant]:
    names = [m.name for m in CATALOGUE]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"source mutant names used twice: {sorted(duplicates)}")
    for m in CATALOGUE:
        unknown = [c for c in m.claims if c not in CLAIM_IDS]
        if unknown:
            raise ValueError(f"source mutant {m.name!r} names unknown claims {unknown}")
    return {m.name: m for m in CATALOGUE}


def scratch_copy(mutant: SourceMutant) -> Path:
    """A temporary copy of the repository's code with the mutant applied."""
    root = Path(tempfile.mkdtemp(prefix=f"fastslow-{mutant.name}-"))
    for name in COPIED:
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml",):
        shutil.copy2(REPO / name, root / name)
    mutant.apply(root)
    return root


_LEDGER = ("import json, sys\n"
           "from proofs_check.verdicts.evidence import CheckContext\n"
            "from proofs_check.verdicts.registry import load_checks\n"
            "from proofs_check.runners.ledger import run_claim\n"
           "from proofs_check.mutation.hand_written_theory import _killed_by_ledger\n"
           "load_checks()\n"
           "out = {}\n"
           "for cid in sys.argv[1:]:\n"
           "    entry = run_claim(cid, CheckContext(quick=True))\n"
           "    out[cid] = _killed_by_ledger(entry) if not entry.get('traceback') else 'crash: ' + entry['detail'][:100]\n"
           "print('@@' + json.dumps(out))\n")


_SCALE = ("import json, sys\n"
          "from proofs_check.verdicts.scale_run import ScaleRun\n"
          "from proofs_check.runners.scale import run_scale_claim\n"
          "run = ScaleRun(sys.argv[1])\n"
          "out = {}\n"
          "for cid in sys.argv[2:]:\n"
          "    e = run_scale_claim(cid, run)\n"
          "    num = e.get('numeric') or {}\n"
          "    why = None if e['status'] == 'verified' else (e.get('detail') or "
          "(f\"numeric check: error {num.get('max_error')} > tolerance {num.get('tolerance')}\" if num else 'failed'))\n"
          "    out[cid] = 'crash: ' + e['detail'][:100] if e.get('traceback') else why\n"
          "print('@@' + json.dumps(out))\n")


def run_one(name: str | SourceMutant, run_tests: bool = True) -> dict:
    """Run one source mutant (a catalogue name, or a mutant itself); ``killed_by_ledger`` names the
    first ledger check that caught it, ``killed_by_test_only`` the first failing test."""
    start = time.perf_counter()
    mutant = name if isinstance(name, SourceMutant) else catalogue()[name]
    name = mutant.name
    root = scratch_copy(mutant)
    held(root)  # removed on SIGTERM too (proofs_check.mutation.processes)
    env = os.environ | {"PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    try:
        args = ["-c", _SCALE, mutant.scale] if mutant.scale else ["-c", _LEDGER]
        proc = run_limited([sys.executable, *args, *mutant.claims], cwd=root, env=env)
        marker = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@")] if proc else []
        per_claim = json.loads(marker[-1][2:]) if marker else {}
        if proc is None:   # a ledger that does not finish is a refusal, with its reason
            per_claim = {cid: timed_out(f"the ledger check of {cid}") for cid in mutant.claims}
            marker = ["@@"]
        ledger = next(((cid, why) for cid, why in per_claim.items() if why and not why.startswith("crash")), None)
        crashes = {cid: why for cid, why in per_claim.items() if why and why.startswith("crash")}
        if not marker:
            crashes = {"*": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        test = None
        if ledger is None and run_tests:
            families = sorted({CLAIM_IDS[c] for c in mutant.claims})
            files = [str(root / "tests" / f"test_{f}.py") for f in families if (root / "tests" / f"test_{f}.py").exists()]
            result = run_limited([sys.executable, "-m", "pytest", *files, "-x", "-q", "-p", "no:cacheprovider"],
                                 cwd=root, env=env)
            if result is None:
                test = timed_out("the family's tests")
            elif result.returncode not in (0, 5):
                failed = [ln for ln in result.stdout.splitlines() if ln.startswith("FAILED")]
                test = failed[0][7:] if failed else "tests failed"
    finally:
        released(root)
    return {"name": name, "where": mutant.where, "claims": list(mutant.claims), "description": mutant.description,
            "killed_by_ledger": f"{ledger[0]}: {ledger[1]}" if ledger else None,
            "killed_by_test_only": test, "crashes": crashes, "seconds": time.perf_counter() - start}


def run_source_mutants(names: list[str] | None = None, workers: int = 2, run_tests: bool = True,
                       progress: bool = True) -> dict:
    """Run the selected source mutants; the scores count ledger kills and test-only kills apart."""
    results = run_pool(run_one, names, catalogue(), "source mutant", workers, run_tests, progress)
    by_ledger = sum(r["killed_by_ledger"] is not None for r in results)
    by_test = sum(r["killed_by_ledger"] is None and r["killed_by_test_only"] is not None for r in results)
    total = len(results)
    return {"total": total, "killed_by_ledger": by_ledger, "killed_by_test_only": by_test,
            "ledger_score": by_ledger / total if total else 0.0,
            "score": (by_ledger + by_test) / total if total else 0.0, "mutants": results}


def format_table(source: dict) -> str:
    rows = [("source mutant", "where", "killed by", "s")]
    for r in source["mutants"]:
        how = (f"ledger {r['killed_by_ledger']}" if r["killed_by_ledger"] else
               f"test only: {r['killed_by_test_only']}" if r["killed_by_test_only"] else "SURVIVED")
        rows.append((r["name"], r["where"], how, f"{r['seconds']:.1f}"))
    lines = text_table(rows, max_width=90)
    lines.append(f"\nsource mutants killed by the ledger: {source['killed_by_ledger']}/{source['total']} = "
                 f"{source['ledger_score']:.2f}; by a test only: {source['killed_by_test_only']}")
    return "\n".join(lines)


def markdown_section(source: dict) -> list[str]:
    """The source mutants' two scores and table, as report markdown (``fastslow mutate --json``'s
    ``source`` entry)."""
    lines = [f"Source mutants (mistakes in the stack, kernels, pooling, certificate, training): "
             f"**{source['killed_by_ledger']}/{source['total']} killed by the ledger** "
             f"(= {source['ledger_score']:.2f}); killed by a test only: **{source['killed_by_test_only']}**; "
             f"survived: {source['total'] - source['killed_by_ledger'] - source['killed_by_test_only']}.", ""]
    rows = []
    for r in source["mutants"]:
        how = (f"ledger {r['killed_by_ledger']}" if r["killed_by_ledger"] else
               f"test only: {r['killed_by_test_only']}" if r["killed_by_test_only"] else bold("SURVIVED"))
        rows.append((r["name"], r["where"], ", ".join(r["claims"]), how))
    return lines + markdown_table(("source mutant", "where", "claims", "killed by"), rows)
