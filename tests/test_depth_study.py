"""The depth study (docs/depth_study.md, claim 8.1): each measure against an independent route, the
pre-registered rule on stacks with a known answer, the toy study end to end, the ledger's check of the record.

Tolerances: the measures are float64 compositions of a few hundred operations on O(1) numbers, so two routes
through the same maps agree to ~1e-13 relative (rounding × a condition number of order 10); the assertions
allow 1e-10.  The predicted failures are stated beside each control.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from numerics.depth_study import measures as ms
from numerics.depth_study import spectrum as spm
from numerics.fitting import loglog_fit
from numerics.stacks.spec import StackSpec

GPT2 = {"activation": "gelu_new", "attn_bias": True}
RTOL = 1e-10


def gpt2_stack(L=4, T=8, d=16, heads=2, seed=0, **kw):
    knobs = {"step": 1.0} if kw.get("weight_path") is None else {}
    return StackSpec.of(T=T, d=d, layers=L, heads=heads, kernel="causal", seed=seed, **GPT2, **{**knobs, **kw}).build()


def windows(n=3, T=8, d=16, seed=1):
    return torch.randn(n, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------------------------ (a) step
def test_step_profile_equals_a_hand_loop():
    stack, X = gpt2_stack(L=5), windows()
    hand = []
    x = X.clone()
    with torch.no_grad():
        for layer in stack.layers:
            y = layer(x)
            per = [float(torch.sqrt(((y[i] - x[i]) ** 2).sum()) / torch.sqrt((x[i] ** 2).sum())) for i in range(len(X))]
            hand.append(sum(per) / len(per))
            x = y
    got = ms.step_profile(stack.trajectory(X))
    assert len(got) == 5
    for a, b in zip(got, hand):
        assert abs(a - b) <= RTOL * b


def test_step_slope_reads_euler_on_a_smooth_path_and_not_on_iid_layers():
    """Known answers: h = 1/L on a smooth path gives a step ∝ 1/L (slope −1 ± 0.15, the O(h) correction at
    L ≥ 4); i.i.d. layers at h = 1 give a slope above the rule's −0.6 (the stream grows like √ℓ)."""
    X, Ls = windows(), (4, 8, 16, 32)
    smooth = [sum(ms.step_profile(gpt2_stack(L, weight_path="smooth").trajectory(X))) / L for L in Ls]
    iid = [sum(ms.step_profile(gpt2_stack(L).trajectory(X))) / L for L in Ls]
    assert abs(loglog_fit(Ls, smooth).slope + 1) <= 0.15
    assert loglog_fit(Ls, iid).slope >= -0.6


# ------------------------------------------------------------------------------------------ invariants
def _rotate_and_permute(stack, seed=0):
    """Per layer: a random orthogonal R_h inside each head for Q/K (W_Q R, W_K R, b_Q R), another for V/O
    (W_V Q, Qᵀ W_O) and a random permutation of the MLP's hidden units: the same function."""
    out = copy.deepcopy(stack)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in out.layers:
            a, m = layer.attn, layer.mlp
            heads, _, dk = a.W_Q.shape
            for h in range(heads):
                R = torch.linalg.qr(torch.randn(dk, dk, generator=gen, dtype=torch.float64))[0]
                Q = torch.linalg.qr(torch.randn(dk, dk, generator=gen, dtype=torch.float64))[0]
                a.W_Q[h] = a.W_Q[h] @ R
                a.W_K[h] = a.W_K[h] @ R
                a.b_Q[h] = a.b_Q[h] @ R
                a.W_V[h] = a.W_V[h] @ Q
                a.W_O[h] = Q.T @ a.W_O[h]
            perm = torch.randperm(m.W1.shape[1], generator=gen)
            m.W1.copy_(m.W1[:, perm])
            m.b1.copy_(m.b1[perm])
            m.W2.copy_(m.W2[perm])
    return out


def test_invariants_unchanged_by_head_rotations_and_unit_permutations():
    """The symmetry leaves the stack's function and every invariant's roughness unchanged to rounding.
    Control: the raw W_Q of a smooth path, rotated independently per layer, loses its smoothness by the
    predicted amount, E r² = (‖A‖² + ‖B‖²)/‖A‖² (the rotated pair is uncorrelated: E⟨A R₁, B R₂⟩ = 0),
    within 0.15 relative (≈ 5 standard deviations of ⟨A R₁, B R₂⟩/(‖A‖‖B‖) ~ 1/√(d·d_k) = 0.06 averaged
    over 7 pairs)."""
    stack = StackSpec.of(T=8, d=32, layers=8, heads=4, kernel="causal", seed=3, weight_path="smooth", **GPT2).build()
    moved = _rotate_and_permute(stack)
    X = windows(T=8, d=32)
    with torch.no_grad():
        assert float((moved(X) - stack(X)).norm() / stack(X).norm()) <= RTOL
    before, after = ms.stack_roughness(stack), ms.stack_roughness(moved)
    for g in ms.INVARIANTS:
        for a, b in zip(before[g], after[g]):
            assert abs(a - b) <= RTOL * max(a, 1e-3)
    raw = lambda s: [l.attn.W_Q.detach().reshape(-1) for l in s.layers]
    r_smooth = ms.roughness(raw(stack))
    assert max(r_smooth) < 0.5  # the smooth path before the rotation
    A = raw(stack)
    predicted = sum((a.norm() ** 2 + b.norm() ** 2) / a.norm() ** 2 for a, b in zip(A, A[1:])) / (len(A) - 1)
    measured = sum(r ** 2 for r in ms.roughness(raw(moved))) / (len(A) - 1)
    assert abs(measured / float(predicted) - 1) <= 0.15


def test_roughness_slopes_read_a_smooth_path_and_iid_layers():
    Ls = (4, 8, 16)
    for path, lo, hi in (("smooth", -1.15, -0.85), (None, -0.25, 0.25)):
        rows = [ms.stack_roughness(gpt2_stack(L, weight_path=path)) for L in Ls]
        for g in ms.INVARIANTS:
            slope = loglog_fit(Ls, [sum(r[g]) / len(r[g]) for r in rows]).slope
            assert lo <= slope <= hi, (path, g, slope)


# ------------------------------------------------------------------------------------------ (b)
def test_fixed_pattern_error_vanishes_at_the_reference_and_not_along_text():
    """At 1x̄ᵀ the attention pattern's change contributes nothing (claim 2.1), so e = 0 to rounding; at
    i.i.d. tokens it is of order one-tenth or more."""
    stack = gpt2_stack(L=3)
    xbar = torch.randn(16, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    ref = xbar.expand(2, 8, 16).clone()
    states = stack.trajectory(ref).detach()
    at_ref = ms.fixed_pattern_profile(stack, states, probes=4)
    assert max(at_ref) <= 1e-12
    off = ms.fixed_pattern_profile(stack, stack.trajectory(windows()).detach(), probes=4)
    assert min(off) >= 1e-2


def test_fixed_pattern_layer_is_the_layer():
    stack, X = gpt2_stack(L=2), windows()
    for layer in stack.layers:
        with torch.no_grad():
            f = ms.fixed_pattern_layer(layer, layer.attn.weights(layer.ln1(X)))
            assert float((f(X) - layer(X)).norm() / layer(X).norm()) <= RTOL


# ------------------------------------------------------------------------------------------ (c)
def test_spectrum_equals_autograd_jacobian_projected():
    """Forward-mode Φ against numerics.linearised.jacobians.stack_jacobian (reverse mode); the mean directions are
    mapped to themselves (LN ignores them), and the quotient removes exactly 2T directions: P_out Φ P_in has
    2T singular values at rounding, Φ none."""
    from numerics.linearised.jacobians import stack_jacobian

    stack = gpt2_stack(L=3, T=4, d=8)
    X = windows(1, 4, 8)[0]
    fwd = spm.stack_jacobian_forward(stack, X)
    rev = stack_jacobian(stack, X)
    assert float((fwd - rev).norm() / rev.norm()) <= RTOL
    ones = torch.zeros(4, 8, dtype=torch.float64)
    ones[2] = 1.0
    assert float((fwd @ ones.reshape(-1) - ones.reshape(-1)).norm()) <= RTOL
    full = torch.linalg.svdvals(rev)
    M = spm.output_projector(stack(X).detach()) @ rev @ spm.mean_projector(4, 8)
    proj = torch.linalg.svdvals(M)
    assert float(full[-1] / full[0]) > 1e-8
    assert float(proj[-8] / proj[0]) <= 1e-12 and float(proj[-9] / proj[0]) > 1e-8
    got = spm.quotient_spectrum(stack, X)
    assert got.shape == (32 - 8,)
    assert float((got - proj[:24]).abs().max() / proj[0]) <= RTOL


def test_truncated_stack_is_the_first_tokens_of_the_full_stack():
    stack, X = gpt2_stack(L=3, T=8), windows()
    short = spm.truncated_stack(stack, 4)
    with torch.no_grad():
        assert float((short(X[:, :4]) - stack(X)[:, :4]).norm()) <= RTOL * float(stack(X).norm())


def test_gap_statistic():
    """The largest ln(σ_k/σ_{k+1}) over k ≤ 0.9 n: here k = 2 (ln 100); the drop to 1e-20 at k = 19 > 18 is the
    tail the search leaves out."""
    sigma = torch.tensor([5.0, 4.0] + [0.04 * 0.9 ** i for i in range(17)] + [1e-20], dtype=torch.float64)
    g = spm.gap(sigma)
    assert g["k"] == 2 and abs(g["g"] - math.log(100.0)) <= 1e-12


# ------------------------------------------------------------------------------------------ the rule
def _cells(p_step, p_rough, arms=("gpt2", "smooth"), depths=(4, 8, 16, 32), snaps=(0, 10)):
    cells = []
    for arm in arms:
        for L in depths:
            snap = {"step": {"mean": 0.5 * L ** p_step[arm]},
                    "roughness": {g: {"mean": 0.3 * L ** p_rough[arm]} for g in ms.INVARIANTS}}
            init = {"step": {"mean": 0.5 * L ** -0.4},
                    "roughness": {g: {"mean": 1.4 * L ** (0.0 if arm == "gpt2" else -1.0)} for g in ms.INVARIANTS}}
            cells.append({"config": {"arm": arm, "layers": L, "snapshots": list(snaps)},
                          "snapshots": {str(snaps[0]): init, str(snaps[-1]): snap}})
    return cells


@pytest.mark.parametrize("p_step, p_rough, verdict", [
    (-1.0, -1.0, "supported"), (-0.4, -1.0, "refuted"), (-1.0, 0.0, "refuted"), (-0.7, -0.5, "inconclusive"),
    (-0.76, -0.76, "supported"), (-0.74, -0.9, "inconclusive")])
def test_rule_reads_the_gpt2_arm(p_step, p_rough, verdict):
    from proofs_check.experiments.depth_study_rule import decide

    d = decide(_cells({"gpt2": p_step, "smooth": -1.0}, {"gpt2": p_rough, "smooth": -1.0}))
    assert d["calibrated"] and d["verdict"] == verdict


def test_rule_is_inconclusive_when_the_calibration_fails():
    from proofs_check.experiments.depth_study_rule import decide

    cells = _cells({"gpt2": -1.0, "smooth": -1.0}, {"gpt2": -1.0, "smooth": -1.0})
    for c in cells:  # the smooth arm's initialisation read as i.i.d.: the estimator cannot be trusted
        if c["config"]["arm"] == "smooth":
            for g in c["snapshots"]["0"]["roughness"].values():
                g["mean"] = 1.4
    d = decide(cells)
    assert not d["calibrated"] and d["verdict"] == "inconclusive"


# ------------------------------------------------------------------------------------------ end to end
TINY = {"d": 8, "heads": 2, "T": 8, "steps": 10, "batch": 4, "warmup": 2, "eval_every": 5, "eval_windows": 4,
        "snapshots": (0, 5, 10)}


@pytest.fixture(scope="module")
def toy_record(tmp_path_factory):
    """The study at toy size, each cell as its Dask task function in-process (L = 2, 4; both arms)."""
    from proofs_check.experiments import depth_study as study

    cache = tmp_path_factory.mktemp("cache")
    cells = [study.cell_task({**TINY, "layers": L, "arm": arm}, str(cache), windows=2, probes=2,
                             spectrum_tokens=4, spectrum_windows=1) for L in (2, 4) for arm in ("gpt2", "smooth")]
    return study.assemble(cells, wall_seconds=0.0, workers=0)


def test_toy_study_end_to_end(toy_record):
    rec = toy_record
    assert rec["depths"] == [2, 4] and rec["arms"] == ["gpt2", "smooth"]
    assert rec["decision"]["verdict"] in ("supported", "refuted", "inconclusive")
    for cell in rec["cells"]:
        assert set(cell["snapshots"]) == {"0", "5", "10"}
        assert "spectrum" in cell["snapshots"]["10"] and "spectrum" not in cell["snapshots"]["5"]
        assert len(cell["snapshots"]["10"]["spectrum"]["mean_log_sigma"]) == 4 * 8 - 8
    assert "claim 8.1" in rec["statement"]


def test_ledger_8_1_refuses_an_edited_verdict(toy_record, monkeypatch):
    from proofs_check.claims import depth_study as claim
    from proofs_check.experiments import depth_study as study
    from proofs_check.verdicts.evidence import CheckContext

    monkeypatch.setattr(study, "recorded", lambda: toy_record)
    res = claim.check_8_1(CheckContext())
    assert res.numeric.cases == 4
    edited = copy.deepcopy(toy_record)
    edited["decision"]["verdict"] = {"supported": "refuted"}.get(toy_record["decision"]["verdict"], "supported")
    monkeypatch.setattr(study, "recorded", lambda: edited)
    with pytest.raises(ValueError, match="pre-registered rule"):
        claim.check_8_1(CheckContext())


def test_gpt2_byte_ids():
    from proofs_check.experiments.depth_study_stack import gpt2_byte_ids

    ids = gpt2_byte_ids()
    assert sorted(ids.tolist()) == list(range(256))
    assert int(ids[ord(" ")]) == 220 and int(ids[ord("!")]) == 0 and int(ids[0]) == 188


def test_study_cli_refuses_bad_input(capsys):
    from proofs_check.cli import main

    assert main(["study", "depth", "--depths", "4"]) == 2
    assert "--depths" in capsys.readouterr().err
    assert main(["study", "depth", "--stack", "/nonexistent/folder"]) == 2
    assert "--stack" in capsys.readouterr().err


def test_study_cli_refuses_snapshots_that_do_not_end_at_the_last_step(capsys):
    """Refused before any cluster starts: exit 2, the message names --snapshots."""
    from proofs_check.cli import main

    assert main(["study", "depth", "--steps", "30", "--snapshots", "0", "10", "31"]) == 2
    assert "--snapshots" in capsys.readouterr().err
    assert main(["study", "depth", "--warmup", "0"]) == 2
    assert "--warmup" in capsys.readouterr().err


def test_grid_submits_each_depth_and_arm_as_one_dask_task(monkeypatch, tmp_path):
    """run_grid hands the cluster one task per (L, arm), the deepest first, each with that cell's config.
    The cluster is replaced by a client that records its submissions (no training)."""
    import contextlib

    import distributed

    from proofs_check.experiments import depth_study as study
    from proofs_check.sweep import run as sweep_run

    submitted = []

    class Done:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

    class Client:
        def submit(self, fn, cfg, *args, key, **kwargs):
            submitted.append((fn, key, cfg["layers"], cfg["arm"]))
            return Done({"config": cfg})

    monkeypatch.setattr(sweep_run, "connect", contextlib.contextmanager(lambda scheduler, workers: (yield Client())))
    monkeypatch.setattr(distributed, "as_completed", iter)
    cells = study.run_grid(TINY, (2, 4, 8), cache=tmp_path, workers=2, log=lambda *_: None)
    assert [(L, arm) for _, _, L, arm in submitted] == [(L, arm) for L in (8, 4, 2) for arm in ("gpt2", "smooth")]
    assert all(fn is study.cell_task for fn, *_ in submitted)
    assert len({key for _, key, *_ in submitted}) == 6 and len(cells) == 6


def test_record_states_each_cells_cost_and_each_workers_peak_memory(toy_record):
    """The cells carry wall and CPU seconds and their worker's peak memory; the results section lists them.
    A record without them (written before cells carried them) gets no such section."""
    from proofs_check.experiments import depth_study as study

    for cell in toy_record["cells"]:
        s, w = cell["seconds"], cell["worker"]
        assert s["train_call_cpu"] > 0 and s["measure_cpu"] > 0 and w["peak_rss_mb"] > 50  # a torch process
    text = study.results_markdown(toy_record)
    assert "Peak resident memory per Dask worker" in text and "measure CPU" in text
    bare = copy.deepcopy(toy_record)
    for cell in bare["cells"]:
        cell["seconds"] = {k: v for k, v in cell["seconds"].items() if not k.endswith("_cpu")}
    assert "Peak resident memory" not in study.results_markdown(bare)


def test_results_section_and_figure_from_the_record(toy_record, tmp_path):
    """The results section is generated from the record (its verdict and slopes appear as computed), and
    the figure draws from the same record."""
    from proofs_check.experiments import depth_study as study
    from proofs_check.report.figures.depth_study import plot

    text = study.results_markdown(toy_record)
    assert f"claim 8.1 is {toy_record['decision']['verdict']}" in text
    assert f"{toy_record['decision']['fits']['gpt2']['trained']['p_step']:+.3f}" in text
    doc = tmp_path / "page.md"
    doc.write_text("# page\n\nregistered text\n\n## Results\n\nold numbers\n")
    study.write_results(toy_record, doc)
    out = doc.read_text()
    assert out.startswith("# page\n\nregistered text\n") and "old numbers" not in out
    assert plot(toy_record, tmp_path / "fig.png").stat().st_size > 10_000


def test_committed_results_match_the_committed_record():
    """docs/depth_study.md's results section is exactly what the committed record generates."""
    from proofs_check.experiments import depth_study as study

    record = study.recorded()
    if record is None:
        pytest.skip("no committed study record")
    page = (study.REPO / "docs" / "depth_study.md").read_text()
    assert page.endswith(study.results_markdown(record))


def _tiny_hf_gpt2(folder):
    """A random GPT-2 with the 256 byte tokens (vocabulary 300), saved as transformers does."""
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=300, n_positions=12, n_embd=8, n_layer=3, n_head=2, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    GPT2LMHeadModel(cfg).save_pretrained(folder)
    return folder


def test_study_on_checkpoints_import_hf_and_train_read(tmp_path, capsys):
    """`study depth --stack` on a GPT-2 folder `import-hf` wrote and on a `fastslow train` checkpoint: the
    per-layer table (one step per layer, one roughness per consecutive pair) and its JSON."""
    import json

    from proofs_check.cli import main
    from proofs_check.experiments.train import TextConfig, train_text

    pytest.importorskip("transformers")
    hf = _tiny_hf_gpt2(tmp_path / "hf")
    assert main(["import-hf", str(hf), "--out", str(tmp_path / "imported"), "--T", "12"]) == 0
    trained = tmp_path / "trained"
    train_text(TextConfig(d=8, layers=3, heads=2, T=12, tokens=480, batch=4, eval_every=5, eval_windows=2),
               trained, progress=False)
    for ckpt, text in ((tmp_path / "imported", "GPT-2's byte tokens"), (trained, "byte embedding")):
        out = tmp_path / f"{ckpt.name}.json"
        assert main(["study", "depth", "--stack", str(ckpt), "--windows", "2", "--json", str(out)]) == 0
        rec = json.loads(out.read_text())
        assert rec["layers"] == 3 and len(rec["step"]["profile"]) == 3 and text in rec["text"]
        assert all(len(r["profile"]) == 2 for r in rec["roughness"].values())
        assert len(rec["spectrum"]["mean_log_sigma"]) == 8 * 8 - 16
        assert "largest log-gap" in capsys.readouterr().out
