"""Claim 7.3's training loop: determinism, resume = uninterrupted, corrupt checkpoints, the
frozen gate, and the sign of the data's verdict ∂R/∂g at g = 0 (tiny sizes, CPU).

Determinism: each batch comes from its own seed and the CPU kernels are deterministic for
a fixed thread count, so two runs (or a run resumed from its checkpoint) must agree
*exactly* (tolerance 0).  The gate-gradient test uses fixed seeds (derandomised) and a
fixed 4-standard-error rule (two-sided false-alarm rate 6e-5 per statement).
"""

import math
from dataclasses import replace

import pytest
import torch

from numerics import training as tr

TINY = tr.TrainConfig(T=16, d=8, layers=2, heads=2, steps=12, batch=4, eval_every=4, eval_batch=8,
                      rho=0.9, gate_lr=5e-2)


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_training_is_deterministic():
    a = tr.train(TINY, seed=3)
    b = tr.train(TINY, seed=3)
    assert a["curves"] == b["curves"]
    sa, sb = _state(a["model"]), _state(b["model"])
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c = tr.train(TINY, seed=4)  # control: another seed is another run
    assert c["curves"]["train_loss"] != a["curves"]["train_loss"]


def test_resume_equals_uninterrupted(tmp_path):
    ckpt = tmp_path / "run.pt"
    whole = tr.train(TINY, seed=1)
    first = tr.train(TINY, seed=1, checkpoint=ckpt, checkpoint_every=5, stop_after=7)
    assert len(first["curves"]["step"]) == 7 and ckpt.exists()
    resumed = tr.train(TINY, seed=1, checkpoint=ckpt, checkpoint_every=5)
    assert resumed["curves"] == whole["curves"]  # exact: same batches, same optimiser state
    sw, sr = _state(whole["model"]), _state(resumed["model"])
    assert all(torch.equal(sw[k], sr[k]) for k in sw)


def test_checkpoint_of_another_run_is_refused(tmp_path):
    ckpt = tmp_path / "run.pt"
    tr.train(TINY, seed=1, checkpoint=ckpt, stop_after=3)
    with pytest.raises(ValueError, match="another run"):
        tr.train(TINY, seed=2, checkpoint=ckpt)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", None])
def test_corrupt_checkpoint_is_a_clear_error(tmp_path, content):
    ckpt = tmp_path / "broken.pt"
    if content is None:  # a valid torch file that is not a training checkpoint
        torch.save({"hello": 1}, ckpt)
    else:
        ckpt.write_bytes(content)
    with pytest.raises(ValueError, match=r"checkpoint .*broken\.pt is corrupt"):
        tr.train(TINY, seed=0, checkpoint=ckpt)


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    ckpt = tmp_path / "trunc.pt"
    tr.train(TINY, seed=0, checkpoint=ckpt, stop_after=2)
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="trunc.pt is corrupt"):
        tr.train(TINY, seed=0, checkpoint=ckpt)


def test_frozen_gate_stays_exactly_zero_and_coupled_gate_moves():
    frozen = tr.train(replace(TINY, arm="frozen"), seed=0)
    for gate in frozen["model"].gates():
        assert gate.requires_grad is False and float(gate) == 0.0
    assert all(g == 0.0 for gates in frozen["curves"]["gates"] for g in gates)
    coupled = tr.train(TINY, seed=0)  # control: the same run with a learnable gate moves it
    assert max(abs(g[-1]) for g in coupled["curves"]["gates"]) > 0


def test_slow_path_gets_zero_gradient_at_closed_gate():
    """THEORY 7.3: at g = 0 the slow-path weights receive exactly zero gradient."""
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
