"""The GPT-2-small benchmark script (``benchmarks/hf_gpt2_small.py``) at a tiny config, so it cannot rot:
it builds, saves, imports and checks a local model and records times and memory per command."""

import json

import pytest

pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from benchmarks import hf_gpt2_small as bench  # noqa: E402


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("g2tiny")
    out = work / "record.json"
    code = bench.main(["--tiny", "--json", str(out), "--workdir", str(work / "run"), "--claim", "1.2", "6.4"])
    return code, json.loads(out.read_text()), work / "run"


def test_tiny_run_passes_and_records_every_step(tiny_run):
    code, record, work = tiny_run
    assert code == 0 and record["passed"] and record["failures"] == []
    assert record["config"] == bench.TINY and (work / "hf" / "config.json").exists()
    for step in ("import", "check"):
        s = record["steps"][step]
        assert s["exit"] == 0 and s["wall_s"] > 0 and s["cpu_s"] > 0
        # a Python process that imported torch holds more than 50 MB and less than the budget
        assert 0.05 < s["peak_rss_gib"] < record["budget"]["peak_rss_gib"]
    assert record["claims"]["1.2"]["status"] == "holds"
    assert record["claims"]["6.4"]["status"] == "conditional"
    assert set(record["claims"]) == {"1.2", "6.4"}             # only the claims asked for
    assert record["hf_agreement"] is not None


def test_budget_is_judged(tiny_run):
    """Negative control: the same record against a budget it cannot meet fails on each command, by name."""
    _, record, _ = tiny_run
    failures = bench.judge(record, budget_seconds=1e-3, budget_gib=1e-3)
    assert sum("s wall >" in f for f in failures) == 2 and sum("peak RSS" in f for f in failures) == 2
    broken = {**record, "claims": {**record["claims"], "6.4": {"status": "fails"}}}
    assert bench.judge(broken, 600, 8) == ["claim 6.4 fails"]


def test_bad_arguments_exit_2(tmp_path):
    for argv in (["--tiny"], ["--tiny", "--json", str(tmp_path / "x.json"), "--budget-gib", "0"]):
        with pytest.raises(SystemExit) as exc:
            bench.main(argv)
        assert exc.value.code == 2
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("a user file")
    with pytest.raises(SystemExit):
        bench.main(["--tiny", "--json", str(tmp_path / "x.json"), "--workdir", str(tmp_path / "full")])
    assert (tmp_path / "full" / "mine.txt").read_text() == "a user file"


def test_6_4_mode_subset_on_an_imported_gpt2(tiny_run, monkeypatch):
    """6.4's one-mode-at-a-time form on an imported GPT-2 (forced by a zero block budget): conditional, its
    form and the modes it evaluated named in the verdict, and its ratios equal to the all-modes run's columns
    (the reach on 8 text windows is the same computation in both)."""
    from numerics.storage import checkpoint as ckpt
    from numerics.families import depth_clock_scale as S
    from numerics.stacks.spec import StackSpec
    from proofs_check.verdicts.evidence import CheckContext
    from proofs_check.verdicts.registry import evaluate
    from proofs_check.verdicts.registry import load_checks

    load_checks()
    _, _, work = tiny_run
    spec = StackSpec.from_dict({**ckpt.read_manifest(work / "ckpt")["spec"], "dtype": "float64",
                                "checkpoint": str(work / "ckpt")})
    full = evaluate("6.4", spec, CheckContext(quick=True))
    monkeypatch.setattr(S, "BLOCK_BYTES_LIMIT", 0)
    monkeypatch.setattr(S, "SCALE_MODES", 4)
    part = evaluate("6.4", spec, CheckContext(quick=True))
    assert full.status == part.status == "conditional", (full.reason, part.reason)
    rf, rp = full.measured["reach"], part.measured["reach"]
    assert rf["modes"]["form"] == "all modes" and part.measured["form"] == "mode subset"
    idx = rp["modes"]["evaluated"]
    assert idx == S.select_modes(31, 4) == [0, 2, 9, 30] and rp["modes"]["decaying_modes"] == 31 == len(rf["lambdas"])
    assert "on 4 of its 31 decaying modes" in part.condition
    # L = 2, d = 16: 6.4's identity tolerance bounds the two routes' relative difference (tests/test_depth_clock_scale.py)
    from proofs_check.claims.depth_slow_manifold import identity_tolerance
    assert max(abs(rp["r_last"][k] / rf["r_last"][i] - 1) for k, i in enumerate(idx)) <= identity_tolerance(2, 16)
    assert rp["real_inputs"]["max_log_error"] == rf["real_inputs"]["max_log_error"]
