"""``fastslow check --scale``: the claims' matrix-free forms (registered on each Claim; proofs_check.runners.scale)."""

import json

import pytest
import torch

from numerics.linearised import matrix_free as mf
from numerics.stacks.presets import PRESET_NAMES, SIZES, preset
from proofs_check.verdicts import scale_run
from proofs_check.verdicts.evidence import decide
from proofs_check.verdicts.ids import CLAIM_IDS
from proofs_check.verdicts.registry import CLAIMS, load_checks, scale_claims
from proofs_check.cli import main
from proofs_check.runners.scale import run_scale_claim

load_checks()


def test_check_scale_ci_verifies_every_scale_claim(tmp_path, capsys):
    """The reduced preset (T = 256, d = 64, L = 6): every scale form verified, its control failing as
    predicted; the claims with no scale form skipped with their reason; size and error recorded."""
    out = tmp_path / "scale.json"
    assert main(["check", "--scale", "ci", "--json", str(out), "--no-progress"]) == 0
    ledger = json.loads(out.read_text())
    by_id = {c["id"]: c for c in ledger["claims"]}
    assert set(by_id) == set(CLAIM_IDS)
    for cid in scale_claims():
        c = by_id[cid]
        assert c["status"] == "verified", (cid, c.get("detail"), c.get("numeric"), c.get("control"))
        assert c["control"]["status"] == "fails-as-predicted"
        assert c["numeric"]["max_error"] <= c["numeric"]["tolerance"]
        assert (c["size"]["T"], c["size"]["d"], c["size"]["layers"]) == (256, 64, 6)
        assert c["seconds"] >= 0 and c["peak_rss_gib"] > 0
    for cid in set(CLAIM_IDS) - set(scale_claims()):
        assert by_id[cid]["status"] == "skipped"
        assert by_id[cid]["detail"] == f"no scale form: {CLAIMS[cid].no_matrix_free}"
    assert ledger["options"]["scale"] == "ci"
    assert "peak RSS" in capsys.readouterr().out


def test_wrong_polynomial_is_caught_at_scale(monkeypatch):
    """A check that can fail: a mistake in the coefficients K_m (K_1 off by 1e-6) fails 2.3 at the toy size."""
    from numerics.families import factorisation
    real = factorisation.polynomial_coefficients

    def wrong(stack, xbar):
        K = real(stack, xbar).clone()
        K[1] = K[1] * (1 + 1e-6)
        return K

    monkeypatch.setattr(mf, "polynomial_coefficients", wrong)
    entry = run_scale_claim("2.3", scale_run.ScaleRun("toy"))
    assert entry["status"] == "failed"
    assert entry["numeric"]["max_error"] > 1e3 * entry["numeric"]["tolerance"]


def test_presets_and_bad_input(capsys):
    assert PRESET_NAMES == ("toy", "ci", "gpt2-small", "gpt2-medium", "gpt2-large")
    assert SIZES["gpt2-small"] == (1024, 768, 12, 12)
    spec = preset("gpt2-medium", dtype="float32")
    assert (spec.T, spec.d, spec.layers, spec.heads, spec.dtype, spec.knob("mlp_ratio")) == \
        (1024, 1024, 24, 16, "float32", 4)
    with pytest.raises(SystemExit) as exc:
        main(["check", "--scale", "gpt3"])
    assert exc.value.code == 2 and "--scale 'gpt3' is not a preset" in capsys.readouterr().err
    with pytest.raises(ValueError, match="dtype"):
        preset("toy", dtype="float16")


def test_float32_toy_has_its_own_tolerance():
    """float32: the J·V comparisons use u = 2⁻²⁴ in the probabilistic bound 4√n·u."""
    run = scale_run.ScaleRun("toy", dtype="float32")
    assert run.gamma == pytest.approx(mf.rounding_tolerance(6, 4, 3, torch.float32, model="probabilistic"))
    entry = run_scale_claim("2.3", run)
    assert entry["status"] == "verified", entry


def test_release_drops_only_the_variants_no_later_claim_uses():
    """After a claim, the stacks and derivatives of variants that no later claim needs are released;
    the others stay cached (the same objects), and a released one is rebuilt on demand, equal."""
    run = scale_run.ScaleRun("toy")
    kept, dropped = run.stack("preset"), run.stack("saturating")
    run.action("saturating")
    run.release({"preset"})
    assert set(run.cache) == {("stack", "preset")}
    assert run.stack("preset") is kept
    rebuilt = run.stack("saturating")
    assert rebuilt is not dropped
    for a, b in zip(rebuilt.parameters(), dropped.parameters()):
        assert torch.equal(a, b)
    assert all(CLAIMS[c].variants and CLAIMS[c].variants <= {"preset", *scale_run.VARIANTS} for c in scale_claims())


def test_a_block_not_affine_in_lambda_is_caught_by_the_interpolation_check(monkeypatch):
    """The scale forms build G_ℓ(λ) from the generated blocks at λ = 0 and 1.  A generated block with a
    term ε·λ(1 − λ)·I (zero at both ends) is caught by the check against the generated block at the last
    sampled λ, by the predicted amount ε·λ(1 − λ)·√(L·d)/‖G(λ)‖_F (to 1 %), and fails 3.1."""
    real = scale_run.layer_blocks
    eps = 1e-6

    def bent(stack, xbar, lam):
        out = real(stack, xbar, lam)
        eye = torch.eye(out.shape[-1], dtype=out.dtype)
        return out + eps * (lam * (1 - lam))[:, None, None, None] * eye

    run = scale_run.ScaleRun("toy")
    lam = torch.tensor(mf.sampled_causal_eigenvalues(run.spec.T, 16), dtype=torch.float64)
    st, xbar = run.stack("saturating"), run.xbar()
    direct = real(st, xbar, lam[-1:])[0]
    lm = float(lam[-1])
    predicted = eps * lm * (1 - lm) * (st.config.layers * st.config.d) ** 0.5 / float(torch.linalg.vector_norm(direct))
    assert scale_run.affine_blocks(st, xbar, lam)[2] <= 10 * scale_run.affine_tolerance(run)
    monkeypatch.setattr(scale_run, "layer_blocks", bent)
    assert scale_run.affine_blocks(st, xbar, lam)[2] == pytest.approx(predicted, rel=1e-2)
    assert decide(CLAIMS["3.1"].matrix_free(run)) == "failed"
