"""``fastslow check``: run the claims' checks and assemble the ledger (table and JSON)."""

from __future__ import annotations

import sys

from proofs_check.environment import environment
from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.registry import get, load_checks
from proofs_check.verdicts.evidence import CheckContext
from proofs_check.runners.ledger import run_claim
from proofs_check.tables import text_table
from proofs_check.verdicts.run_scope import one_run
from proofs_check.verdicts.vocabulary import Decision, StackVerdict, words


def check_seed(profile: str, seed: int | None) -> int:
    """The seed the checks draw their stacks from: ``seed`` when given, else 0 (``ci``,
    ``thorough``: the same stacks every run) or a fresh one (``random``: new stacks each run)."""
    if seed is not None:
        return seed
    if profile == "random":
        import secrets

        return secrets.randbelow(2**31)
    return 0


@one_run()
def run_checks(claim_ids: list[str] | None = None, *, device: str = "cpu", profile: str = "ci",
               quick: bool = True, progress: bool = True, cache_dir: str | None = None,
               seed: int | None = None) -> dict:
    """Run the selected claims (all of docs/theory.md by default) and return the ledger dict; the
    checks draw their stacks from ``check_seed(profile, seed)``, recorded in the options."""
    from proofs_check.progress import track

    from proofs_check.validation import validate_check

    params = validate_check(claim_ids=claim_ids, device=device, profile=profile, quick=quick, seed=seed,
                            cache_dir=cache_dir)
    load_checks()
    ids = params.claim_ids or list(CLAIM_IDS)
    seed = check_seed(profile, seed)
    ctx = CheckContext(device=device, profile=profile, quick=quick, seed=seed, cache_dir=cache_dir)
    claims = [with_standing(run_claim(cid, ctx))
              for cid in track(ids, "check claims", unit="claim", label=_claim_label, enabled=progress)]
    return {"claims": claims, "environment": environment(device),
            "options": {"profile": profile, "quick": quick, "seed": seed,
                        "reproduce": f"--profile {profile} --seed {seed}"}}


def with_standing(record: dict) -> dict:
    """The record with the standing its measurement in the paper's setting supports
    (``proofs_check.verdicts.standing.reconcile``), with any conflict with the declared one named."""
    from proofs_check.verdicts.standing import reconcile

    declared = record.get("standing")
    if declared is None:
        return record
    standing, conflict = reconcile(declared, record.get("paper_setting") or "", record["status"])
    record.update(declared_standing=str(declared), standing=str(standing))
    if conflict:
        record["standing_conflict"] = conflict
    return record


def exit_code(ledger: dict) -> int:
    """``fastslow check``'s exit status: 1 when a claim's check failed or raised (error), else 0.  Serves
    both the ledger (verified / failed / error / skipped) and ``check --stack`` (holds / conditional / fails /
    n/a / error)."""
    bad = {Decision.FAILED, Decision.ERROR, StackVerdict.FAILS, StackVerdict.ERROR}
    return 1 if any(c["status"] in bad for c in ledger["claims"]) else 0


def _claim_label(cid: str) -> str:
    from proofs_check.verdicts.registry import CLAIMS

    spec = CLAIMS.get(cid)
    return f"{cid} ({spec.title})" if spec is not None and getattr(spec, "title", None) else cid


TITLE_WIDTH = 46


def shorten(text: str, width: int = TITLE_WIDTH) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters, marked with an ellipsis."""
    if len(text) <= width:
        return text
    cut = text[:width - 1].rsplit(" ", 1)[0].rstrip(" ,;:—–-")
    return cut + "…"


def format_table(ledger: dict) -> str:
    """Plain-text ledger, opening with what each verdict means (``proofs_check.verdicts.standing``: kind,
    setting, status, one-line finding); then claim, symbolic, numeric error vs tolerance, control, the
    mechanical decision; then the run's profile and sizes (the symbolic step count depends on them:
    ``thorough`` and full sizes prove more)."""
    from proofs_check.experiments.recorded_findings import recorded_findings
    from proofs_check.verdicts.standing import FAILS, format_summary, ledger_word

    rows = [("claim", "title", "symbolic", "numeric max err / tol", "control", "ledger", "s")]
    for c in ledger["claims"]:
        sym = f"{c['symbolic']['proved']}/{c['symbolic']['steps']}"
        num = c.get("numeric")
        num_s = f"{num['max_error']:.2e} / {num['tolerance']:.1e} ({num['cases']})" if num else "-"
        ctl = c["control"]["status"] if c.get("control") else "-"
        flag = " (recon.)" if c.get("reconstruction") else ""
        rows.append((c["id"], shorten(c["title"], TITLE_WIDTH - len(flag)) + flag, sym, num_s, ctl, ledger_word(c),
                     f"{c.get('seconds', 0):.1f}"))
    lines = [format_summary(ledger, recorded_findings()), ""] + text_table(rows)
    counts = {s: sum(c["status"] == s for c in ledger["claims"]) for s in words(Decision)}
    opts = ledger.get("options", {})
    sizes = "quick (CI) sizes" if opts.get("quick", True) else "full sizes"
    steps = sum(c["symbolic"]["steps"] for c in ledger["claims"])
    proved = sum(c["symbolic"]["proved"] for c in ledger["claims"])
    off = sum(c["status"] == "verified" and c.get("standing") == FAILS for c in ledger["claims"])
    qualifier = f" ({off} of them only off the paper's setting, where it fails)" if off else ""
    lines.append(f"\n{counts['verified']} verified{qualifier}, {counts['failed']} failed, {counts['error']} error, "
                 f"{counts['skipped']} skipped; "
                 f"profile {opts.get('profile', 'ci')}, {sizes}: {proved}/{steps} symbolic steps proved "
                 "(the step count depends on the profile and sizes)")
    if "seed" in opts:
        lines.append(f"stacks drawn from seed {opts['seed']} (reproduce with {opts['reproduce']})")
    for c in ledger["claims"]:
        if c["status"] in (Decision.FAILED, Decision.ERROR):
            lines.append(f"  {c['id']} {c['status']}: {c.get('detail') or (c.get('control') or {}).get('detail', '')}")
        if c.get("finding"):
            lines.append(f"  {c['id']} finding: {c['finding']}")
    return "\n".join(lines)


@one_run()
def run_stack_checks(checkpoint: str, claim_ids: list[str] | None = None, *, device: str = "cpu",
                     profile: str = "ci", quick: bool = True, progress: bool = True) -> dict:
    """``fastslow check --stack CKPT``: every claim with an on-stack form on the trained stack of checkpoint
    ``CKPT`` (its manifest's spec, weights loaded, in float64), by ``Claim.evaluate``: dense where T·d fits,
    matrix-free above, n/a for a claim stated at 1x̄ᵀ where the trained gates move the trajectory off it.

    Claims that state nothing about a stack, and claims without an on-stack form, are listed
    with their reason and not run.  The ledger records that the stack was trained: the
    checkpoint, its manifest's config, corpus hash, step and final validation loss.
    """
    from tqdm import tqdm

    from numerics.storage import checkpoint as ckpt
    from numerics.stacks.spec import StackSpec
    manifest = ckpt.read_manifest(checkpoint)
    if "spec" not in manifest:
        raise ckpt.CheckpointError(f"checkpoint {checkpoint}: the manifest has no 'spec' (not a fastslow train "
                                   "checkpoint)")
    ckpt.load(checkpoint)  # hash and format checked before any work
    spec = StackSpec.from_dict({**manifest["spec"], "dtype": "float64", "device": device,
                                "checkpoint": str(checkpoint)})
    load_checks()
    ids = claim_ids or list(CLAIM_IDS)
    ctx = CheckContext(device=device, profile=profile, quick=quick)
    claims = []
    bar = tqdm(ids, desc="claims on the stack", unit="claim", disable=not progress or not sys.stderr.isatty())
    for cid in bar:
        entry = get(cid)
        title = entry.title or "(not implemented)"
        if entry.on_stack is None:
            reason = entry.arch_free or "no on-stack form of this claim is registered"
            claims.append({"id": cid, "title": title, "status": StackVerdict.NA, "reason": reason, "verdict": None})
            continue
        bar.set_postfix_str(cid)
        verdict = entry.evaluate(spec, ctx)
        claims.append({"id": cid, "title": title, "status": verdict.status, "reason": verdict.reason,
                       "verdict": verdict.as_dict(), "seconds": verdict.seconds})
        if progress and not sys.stderr.isatty():
            print(f"  {cid} on the stack: {verdict.status} ({verdict.seconds:.1f} s)", file=sys.stderr,
                  flush=True)
    curves = manifest["curves"]
    imported = manifest.get("source") is not None  # import-hf: whether those weights were trained is not recorded
    stack = {"trained": None if imported else manifest["step"] > 0, "imported": imported,
             "checkpoint": str(checkpoint), "config": manifest["config"],
             "spec": spec.as_dict(), "step": manifest["step"], "corpus": manifest.get("corpus"),
             "final_validation_loss": curves["eval_loss"][-1] if curves.get("eval_loss") else None,
             "gates": [g[-1] for g in curves.get("gates", [])], "git": manifest.get("git")}
    return {"claims": claims, "stack": stack, "environment": environment(device),
            "options": {"profile": profile, "quick": quick, "stack": str(checkpoint)}}


def format_stack_table(ledger: dict) -> str:
    """Plain-text table of ``run_stack_checks``: claim, status, error / tolerance, reason."""
    s = ledger["stack"]
    loss = s["final_validation_loss"]
    kind = ("imported (Hugging Face weights, no training record)" if s.get("imported")
            else "trained" if s.get("trained", True) else "untrained")
    lines = [f"{kind} stack {s['checkpoint']}: {s['spec']['arch']} T={s['spec']['T']} d={s['spec']['d']} "
             f"L={s['spec']['layers']} P={s['spec']['P']}, {s['step']} training steps, "
             + ("no validation loss recorded" if loss is None else f"validation loss {loss:.3f} nats/byte")]
    rows = [("claim", "title", "status", "form", "error / tol", "reason or condition")]
    for c in ledger["claims"]:
        v = c.get("verdict") or {}
        err = (f"{v['error']:.2e} / {v['tolerance']:.1e}" if v.get("error") is not None and v.get("tolerance")
               else "-")
        why = (c.get("reason") or v.get("condition") or "")
        form = (v.get("measured") or {}).get("form", "-")
        rows.append((c["id"], c["title"], c["status"], form, err, " ".join(str(why).split())))
    table = text_table(rows, max_width=60)  # long titles and reasons wrap, never cut
    counts = {k: sum(c["status"] == k for c in ledger["claims"]) for k in words(StackVerdict)}
    return "\n".join(lines + table + ["", ", ".join(f"{v} {k}" for k, v in counts.items())])
