"""Claim 7.3's training loop: determinism, resume = uninterrupted, corrupt checkpoints, the
frozen gate, and the sign of the data's verdict ∂R/∂g at g = 0 (tiny sizes, CPU).

Determinism: each batch comes from its own seed and the CPU kernels are deterministic for
a fixed thread count, so two runs (or a run resumed from its checkpoint) must agree
*exactly* (tolerance 0).  The gate-gradient test uses fixed seeds (derandomised) and a
fixed 4-standard-error rule (two-sided false-alarm rate 6e-5 per statement).
"""

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from numerics.storage import checkpoint as ckpt_mod
from numerics.text import training as tr
TINY = tr.TrainConfig(T=16, d=8, layers=2, heads=2, steps=12, batch=4, eval_every=4, eval_batch=8,
                      rho=0.9, gate_lr=5e-2)


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_training_is_deterministic():
    a = tr.train(TINY, seed=3)
    b = tr.train(TINY, seed=3)
    strip = lambda c: {k: v for k, v in c.items() if k != "seconds"}
    assert strip(a["curves"]) == strip(b["curves"])
    sa, sb = _state(a["model"]), _state(b["model"])
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c = tr.train(TINY, seed=4)  # control: another seed is another run
    assert c["curves"]["train_loss"] != a["curves"]["train_loss"]


def test_resume_equals_uninterrupted(tmp_path):
    ckpt = tmp_path / "run"
    whole = tr.train(TINY, seed=1)
    first = tr.train(TINY, seed=1, checkpoint=ckpt, checkpoint_every=5, stop_after=7)
    assert len(first["curves"]["step"]) == 7 and (ckpt / "manifest.json").exists()
    resumed = tr.train(TINY, seed=1, checkpoint=ckpt, checkpoint_every=5)
    strip = lambda c: {k: v for k, v in c.items() if k != "seconds"}  # wall time is not a result
    assert strip(resumed["curves"]) == strip(whole["curves"])  # exact: same batches, lr, optimiser state
    assert resumed["curves"]["eval_loss"][-1] == whole["curves"]["eval_loss"][-1]
    sw, sr = _state(whole["model"]), _state(resumed["model"])
    assert all(torch.equal(sw[k], sr[k]) for k in sw)
    assert len(list(ckpt.glob("weights-*.pt"))) == 1  # older tensor files are removed


def test_resume_after_a_kill_between_saves(tmp_path):
    """A save interrupted after its tensor file but before its manifest leaves the previous
    save usable: the manifest still names (and hashes) the older, complete tensor file."""
    ckpt = tmp_path / "run"
    tr.train(TINY, seed=1, checkpoint=ckpt, checkpoint_every=5, stop_after=5)
    (ckpt / "weights-00000010.pt").write_bytes(b"half a file")  # the orphan of a killed save
    resumed = tr.train(TINY, seed=1, checkpoint=ckpt, checkpoint_every=5)
    whole = tr.train(TINY, seed=1)
    assert resumed["curves"]["eval_loss"] == whole["curves"]["eval_loss"]


def test_checkpoint_of_another_run_is_refused(tmp_path):
    ckpt = tmp_path / "run"
    tr.train(TINY, seed=1, checkpoint=ckpt, stop_after=3)
    with pytest.raises(ValueError, match="another run .*seed: checkpoint 1, requested 2"):
        tr.train(TINY, seed=2, checkpoint=ckpt)


@pytest.mark.parametrize("damage", ["empty-manifest", "not-json", "no-weights", "flipped-byte", "foreign-torch"])
def test_corrupt_checkpoint_is_a_clear_error(tmp_path, damage):
    ckpt = tmp_path / "broken"
    tr.train(TINY, seed=0, checkpoint=ckpt, stop_after=2)
    manifest = ckpt / "manifest.json"
    weights = next(ckpt.glob("weights-*.pt"))
    if damage == "empty-manifest":
        manifest.write_text("")
    elif damage == "not-json":
        manifest.write_text("{not json")
    elif damage == "no-weights":
        weights.unlink()
    elif damage == "flipped-byte":
        data = bytearray(weights.read_bytes())
        data[len(data) // 2] ^= 0xFF
        weights.write_bytes(bytes(data))
    else:  # a valid torch file that is not this run's, with a matching hash: refused by shape
        torch.save({"hello": 1}, weights)
        m = json.loads(manifest.read_text())
        m["sha256"] = ckpt_mod.sha256_file(weights)
        m["binding"] = ckpt_mod.binding(m)
        manifest.write_text(json.dumps(m))
    with pytest.raises(ckpt_mod.CheckpointError, match=r"broken"):
        tr.train(TINY, seed=0, checkpoint=ckpt)


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    ckpt = tmp_path / "trunc"
    tr.train(TINY, seed=0, checkpoint=ckpt, stop_after=2)
    weights = next(ckpt.glob("weights-*.pt"))
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(ckpt_mod.CheckpointError, match="trunc.* is corrupt: its sha256 differs"):
        tr.train(TINY, seed=0, checkpoint=ckpt)


def test_learning_rate_schedule_is_warmup_then_cosine():
    opt = tr.Optimiser(steps=11, lr=1.0, gate_lr=1.0, warmup=1)
    assert opt.factor(0) == 0.5  # linear warm-up: (step + 1)/(warmup + 1)
    assert opt.factor(1) == 1.0 and abs(opt.factor(6) - 0.5) < 1e-15  # cosine: half-way is 1/2
    assert abs(opt.factor(11)) < 1e-15
    curves = tr.train(TINY, seed=0)["curves"]
    cfg = TINY.optimiser()
    assert curves["lr"] == [TINY.lr * cfg.factor(s) for s in range(TINY.steps)]


def test_frozen_gate_stays_exactly_zero_and_coupled_gate_moves():
    frozen = tr.train(replace(TINY, arm="frozen"), seed=0)
    for gate in frozen["model"].gates():
        assert gate.requires_grad is False and float(gate) == 0.0
    assert all(g == 0.0 for gates in frozen["curves"]["gates"] for g in gates)
    coupled = tr.train(TINY, seed=0)  # control: the same run with a learnable gate moves it
    assert max(abs(g[-1]) for g in coupled["curves"]["gates"]) > 0


def test_slow_path_gets_zero_gradient_at_closed_gate():
    """docs/theory.md §7, claim 7.3: at g = 0 the slow-path weights receive exactly zero gradient."""
    model = tr.HierarchicalLM(TINY, seed=0)
    tokens, _ = TINY.data().sample(4, TINY.T, 0)
    tr.next_token_loss(model, tokens).backward()
    slow = [p for n, p in model.named_parameters() if ".slow." in n]
    assert slow and all(p.grad is not None and torch.count_nonzero(p.grad) == 0 for p in slow)
    assert any(float(g.grad) != 0.0 for g in model.gates())


def test_local_fast_path_sees_only_the_current_block():
    """At g = 0 the logits of block b do not depend on tokens of other blocks (local kernel)."""
    cfg = replace(TINY, dtype="float64")
    model = tr.HierarchicalLM(cfg, seed=0)
    x = model.embed[TINY.data().sample(1, cfg.T, 0)[0]].detach()
    with tr.torch_threads(1):
        J = torch.autograd.functional.jacobian(lambda z: model.stack(z).sum(-1), x)[0, :, 0, :, :].abs().sum(-1)
    block = torch.arange(cfg.T) // cfg.P
    assert float(J[block[:, None] != block[None, :]].max()) == 0.0
    assert float(J[block[:, None] == block[None, :]].max()) > 0  # control: within-block coupling exists


@pytest.mark.parametrize("rho, informative", [(0.0, False), (0.9, True)])
def test_gate_gradient_at_zero_is_decided_by_the_data(rho, informative):
    """∂R/∂g at g = 0, information part (history vs swapped history), at random init:
    i.i.d. blocks -> within 4 SE of 0 (it is 0 in expectation, exchangeability);
    AR(1) blocks (ρ = 0.9) -> more than 4 SE away from 0."""
    cfg = tr.TrainConfig(T=32, d=16, layers=2, heads=2, rho=rho, dtype="float64")
    res = tr.gate_gradient_information(cfg, seed=0, n_batches=30, batch=32)
    z = abs(res["info"]) / res["se_info"]
    if informative:
        assert z > 4.0, res
    else:
        assert z < 4.0, res


def test_bad_config_is_a_value_error():
    with pytest.raises(ValueError, match="fast_kernel"):
        tr.TrainConfig(fast_kernel="full")
    with pytest.raises(ValueError, match="rho"):
        tr.TrainConfig(rho=1.0)
    with pytest.raises(ValueError, match="arm"):
        tr.TrainConfig(arm="open")
    with pytest.raises(ValueError, match="seeds"):
        tr.run_experiment(quick=True, seeds=[])
    assert math.isfinite(tr.TrainConfig().lr)


# ---------------------------------------------------------------- the cache key of Claim 7.3's runs
def test_source_closure_covers_every_module_the_experiment_imports():
    """The static import closure must contain every numerics/theory module that a fresh
    interpreter actually loads while running the experiment's code (read from __file__)."""
    code = ("import sys, json\n"
            "from numerics.text import training as tr\n"
            "tr.train(tr.TrainConfig(T=16, d=8, layers=1, heads=2, steps=1, batch=2, eval_batch=2), 0)\n"
            "import numerics.families.emissions\n"
            "print(json.dumps(sorted(n for n, m in sys.modules.items() if n.split('.')[0] in ('numerics', 'theory', 'proofs_check')"
            " and getattr(m, '__file__', None))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                       cwd=tr.REPO).stdout)
    closure = tr.source_closure(tr.EXPERIMENT_MODULES)
    assert "numerics.stacks.kernels" in loaded and set(loaded) <= set(closure), set(loaded) - set(closure)
    for name, path in closure.items():
        assert path.is_file() and path.resolve().is_relative_to(tr.REPO)


def _copy_sources(dst: Path) -> Path:
    import shutil

    for pkg in tr.SOURCE_PACKAGES:
        shutil.copytree(tr.REPO / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_cache_key_changes_with_the_attention_mask_in_kernels(tmp_path):
    """A changed attention mask in numerics/stacks/kernels.py (causal j ≤ i → j < i + 1 + 1, a one-token
    look-ahead) must give another key; an untouched copy gives the same key as the checkout."""
    root = _copy_sources(tmp_path)
    payload = {"x": 1}
    assert tr.source_key(tr.EXPERIMENT_MODULES, payload, root) == tr.source_key(tr.EXPERIMENT_MODULES, payload)
    kernels = root / "numerics" / "stacks" / "kernels.py"
    text = kernels.read_text()
    assert "<=" in text
    kernels.write_text(text.replace("<=", "<= 1 +", 1))
    assert tr.source_key(tr.EXPERIMENT_MODULES, payload, root) != tr.source_key(tr.EXPERIMENT_MODULES, payload)


def test_cache_key_changes_with_config_torch_version_and_a_theory_edit(tmp_path, monkeypatch):
    key = tr.source_key(tr.EXPERIMENT_MODULES, {"x": 1})
    assert tr.source_key(tr.EXPERIMENT_MODULES, {"x": 2}) != key
    root = _copy_sources(tmp_path)
    gen = root / "numerics" / "generated" / "emissions.py"
    gen.write_text(gen.read_text() + "\n# edited\n")
    assert tr.source_key(tr.EXPERIMENT_MODULES, {"x": 1}, root) != key
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    assert tr.source_key(tr.EXPERIMENT_MODULES, {"x": 1}) != key


MICRO = tr.TrainConfig(T=16, d=8, layers=1, heads=2, steps=6, batch=4, eval_every=3, eval_batch=16)


def test_experiment_resumes_its_runs_and_reuses_only_a_matching_cache(tmp_path, monkeypatch):
    """An interrupted experiment keeps its finished runs' checkpoints and continues; the result
    equals an uninterrupted one; a changed source (another key) trains afresh."""
    monkeypatch.setattr(tr, "experiment_configs",
                        lambda quick, smoke=False: {"base": MICRO, "seeds": (0, 1), "rho_ar": 0.9,
                                                    "bayes_sequences": 50})
    clean = tr.run_experiment(cache_dir=None)
    real_train, calls = tr.train, []

    def interrupted(cfg, seed, **kw):
        calls.append((cfg.rho, cfg.arm, seed))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_train(cfg, seed, **kw)

    monkeypatch.setattr(tr, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tr.run_experiment(cache_dir=tmp_path)
    (folder,) = (tmp_path / "emissions_training").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["iid_coupled_seed0", "iid_coupled_seed1"]
    monkeypatch.setattr(tr, "train", real_train)
    resumed = tr.run_experiment(cache_dir=tmp_path)
    for name in ("iid", "ar1"):
        for arm in tr.ARMS:
            for a, b in zip(clean["settings"][name]["runs"][arm], resumed["settings"][name]["runs"][arm]):
                assert a["curves"]["final_eval_per_seq"] == b["curves"]["final_eval_per_seq"]
    assert (folder / "result.json").exists()
    again = tr.run_experiment(cache_dir=tmp_path)  # from result.json
    assert again["summary"] == resumed["summary"]
    monkeypatch.setattr(tr, "source_key", lambda *a, **k: "another-key")
    monkeypatch.setattr(tr, "train", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("retrained")))
    with pytest.raises(RuntimeError, match="retrained"):
        tr.run_experiment(cache_dir=tmp_path)


# ---------------------------------------------------------------- the ledger's 7.3 decision rule can fail
@pytest.fixture(scope="module")
def micro_result():
    import numerics.text.training as mod

    real = mod.experiment_configs
    mod.experiment_configs = lambda quick, smoke=False: {"base": MICRO, "seeds": (0, 1, 2), "rho_ar": 0.9,
                                                         "bayes_sequences": 50}
    try:
        return mod.run_experiment(cache_dir=None)
    finally:
        mod.experiment_configs = real


def _shifted(result, name, arm, delta):
    import copy

    out = copy.deepcopy(result)
    for run in out["settings"][name]["runs"][arm]:
        c = run["curves"]
        c["final_eval_per_seq"] = [x + delta for x in c["final_eval_per_seq"]]
        c["eval_loss"][-1] += delta
    out["summary"] = tr.summarise(out)
    return out


def _ledger_7_3(monkeypatch, result):
    from proofs_check.claims import emissions as ce
    from proofs_check.verdicts.evidence import CheckContext

    monkeypatch.setattr(tr, "run_experiment", lambda **kw: result)
    return ce.check_7_3(CheckContext(quick=True))


def test_ledger_7_3_fails_when_a_model_beats_the_bayes_risk(monkeypatch, micro_result):
    """A leak (a model seeing what its Bayes predictor cannot) lowers its loss; shifting the AR(1)
    coupled arm's eval losses by −(excess + 1) nats makes its excess exactly −1, and the check's
    error must be the predicted 1/(Z·SE) (the shift leaves the SE unchanged)."""
    row = micro_result["summary"]["ar1"]["coupled"]
    broken = _shifted(micro_result, "ar1", "coupled", -(row["excess"] + 1.0))
    res = _ledger_7_3(monkeypatch, broken)
    predicted = 1.0 / (tr.Z * row["excess_se"])
    assert broken["summary"]["verdict"]["excess_over_z_se"]["ar1/coupled"] == pytest.approx(-predicted, rel=1e-9)
    assert broken["summary"]["verdict"]["no_arm_beats_bayes"] is False
    assert res.numeric.max_error >= predicted * (1 - 1e-9) > res.numeric.tolerance


def test_ledger_7_3_fails_when_iid_arms_differ_beyond_noise(monkeypatch, micro_result):
    """Shifting the i.i.d. frozen arm by +δ moves the paired gap by exactly δ and leaves its
    noise unchanged: the error must be |gap + δ|/crit."""
    iid = micro_result["summary"]["iid"]
    delta = 10 * iid["crit"]
    res = _ledger_7_3(monkeypatch, _shifted(micro_result, "iid", "frozen", delta))
    assert res.numeric.max_error >= abs(iid["gap"] + delta) / iid["crit"] * (1 - 1e-9)
    assert res.numeric.max_error > res.numeric.tolerance


def test_ledger_7_3_control_fails_outside_the_size_window(monkeypatch, micro_result):
    """An AR(1) gap of 2·G + upper allowance (a coupled arm gaining twice what the data hold) is
    outside the window; a gap of 0.3·G is below MIN_CAPTURE·G: both make the control not fail."""
    ar = micro_result["summary"]["ar1"]
    G = ar["bayes_gap"]
    for target in (2 * G + ar["crit"] + tr.Z * ar["bayes_se"], 0.3 * G):
        broken = _shifted(micro_result, "ar1", "frozen", target - ar["gap"])
        assert broken["summary"]["ar1"]["gap"] == pytest.approx(target, abs=1e-9)
        res = _ledger_7_3(monkeypatch, broken)
        assert broken["summary"]["verdict"]["ar1_gap_size_ok"] is False
        assert res.control.status == "did-not-fail"
