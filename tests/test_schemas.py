"""The schema layer: docs/schema/*.schema.json are what the models generate now, and real documents of
each kind (a shipped sweep spec, a checkpoint written by import-hf and by train, a ledger written by
run_claim and a recorded --scale ledger) validate against both the model and the published schema."""

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from numerics.storage import checkpoint as ck
from proofs_check import schemas
from proofs_check.verdicts.ledger_schema import checked_ledger

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "proofs_check" / "sweep" / "specs").glob("*.toml"))


def test_committed_schemas_are_what_the_models_generate():
    assert schemas.stale() == [], "run: python -m proofs_check.schemas"
    assert schemas.main(["--check"]) == 0


def test_a_stale_schema_is_named(tmp_path):
    """Control: a schema file that no longer matches its model is reported, a missing one too."""
    schemas.write(tmp_path)
    assert schemas.stale(tmp_path) == []
    edited = schemas.path("ledger", tmp_path)
    edited.write_text(edited.read_text().replace('"minimum": 0', '"minimum": 1', 1))
    schemas.path("sweep-spec", tmp_path).unlink()
    assert set(schemas.stale(tmp_path)) == {edited, schemas.path("sweep-spec", tmp_path)}


def _valid(name: str, document) -> None:
    schemas.models()[name].model_validate(document)
    jsonschema.validate(document, schemas.schema(name))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_shipped_sweep_specs_validate(path):
    _valid("sweep-spec", tomllib.loads(path.read_text()))


def test_a_misspelt_sweep_key_fails_the_schema_too():
    data = tomllib.loads(SPECS[0].read_text())
    data["sweep"][0]["vaule_scale"] = [1.0]
    with pytest.raises(jsonschema.ValidationError, match="vaule_scale"):
        jsonschema.validate(data, schemas.schema("sweep-spec"))


def test_an_imported_checkpoint_manifest_validates(tmp_path):
    """``import-hf`` of the shipped GPT-2 (kind hf-gpt2), and its spec as a stack-spec document."""
    from proofs_check.runners.import_hf import import_hf

    manifest = import_hf(ROOT / "docs" / "trained" / "gpt2-bytes", tmp_path / "ck", T=8, verify=False)
    assert manifest["kind"] == "hf-gpt2"
    _valid("checkpoint-manifest", manifest)
    _valid("stack-spec", manifest["spec"])
    extra = {**manifest, "colour": 1}
    (tmp_path / "ck" / "manifest.json").write_text(json.dumps(extra))
    with pytest.raises(ck.CheckpointError, match="field 'colour'"):
        ck.read_manifest(tmp_path / "ck")


def test_a_trained_checkpoint_manifest_validates(tmp_path):
    from proofs_check.experiments.train import TextConfig, train_text

    manifest = train_text(TextConfig(d=8, layers=1, heads=2, T=8, tokens=256, batch=8, eval_every=4,
                                     eval_windows=4), tmp_path / "run", progress=False, threads=1)
    assert manifest["kind"] == "byte-corpus"
    _valid("checkpoint-manifest", ck.read_manifest(tmp_path / "run"))


def _ledger(records: list[dict]) -> dict:
    from proofs_check.environment import environment

    return {"claims": records, "environment": environment("cpu"),
            "options": {"profile": "ci", "quick": True, "seed": 0, "reproduce": "--profile ci --seed 0"},
            "integrity": {"ok": True, "override": False, "checked": 3, "drifted": [], "stale": []}}


def test_a_ledger_from_run_claim_validates(monkeypatch):
    """run_claim's record, through a claim whose check is replaced by a quick one (the record's shape is
    run_claim's, not the test's); a crashing check's record too."""
    from proofs_check.verdicts import registry
    from proofs_check.verdicts.evidence import CheckContext, ClaimResult, ControlResult, NumericResult, SymbolicStep
    from proofs_check.runners.check import with_standing
    from proofs_check.runners.ledger import run_claim

    registry.load_checks()
    claim_id = "2.1"

    def quick(ctx):
        return ClaimResult(symbolic=[SymbolicStep("0 = 0", True)],
                           numeric=NumericResult(cases=1, max_error=0.0, tolerance=1e-12),
                           control=ControlResult("fails-as-predicted", "control"))

    def crash(ctx):
        raise RuntimeError("boom")

    records = []
    for check in (quick, crash):
        entry = dataclasses.replace(registry.CLAIMS[claim_id], check=check, generated=[])
        monkeypatch.setitem(registry.CLAIMS, claim_id, entry)
        records.append(with_standing(run_claim(claim_id, CheckContext())))
    assert [r["status"] for r in records] == ["verified", "error"]
    ledger = json.loads(json.dumps(_ledger(records), default=str))  # as write_json writes it
    _valid("ledger", ledger)
    assert checked_ledger(ledger) is ledger
    ledger["claims"][0]["colour"] = 1
    with pytest.raises(ValueError, match=r"field claims\[0\]\.colour"):
        checked_ledger(ledger)


def test_the_recorded_scale_ledger_validates():
    _valid("ledger", json.loads((ROOT / "docs" / "scale" / "gpt2-small.json").read_text()))


def test_every_sweep_axis_is_typed_from_the_stack_models():
    """Each axis' type comes from StackSpecModel or StackKnobs, so the GPT-2 block knobs are sweepable
    (a hand-kept list of axis types once lacked them) and a value of the wrong type is refused by name."""
    from proofs_check.sweep import spec as sweep_spec

    assert {sweep_spec._value_type(a) for a in sweep_spec.AXES} <= {bool, int, float, str}
    table = {"claim": "2.1", "ln_eps": [1e-5, 1e-3], "attn_bias": [True, False], "activation": ["gelu", "gelu_new"],
             "step": 1}
    (sweep,) = sweep_spec.parse({"sweep": [table]}, claims=["2.1"]).sweeps
    assert sweep.axes["step"] == (1.0,) and sweep.axes["attn_bias"] == (True, False)
    with pytest.raises(sweep_spec.SpecError, match=r"sweep\[0\]\.attn_bias='yes' must be a boolean"):
        sweep_spec.parse({"sweep": [{"claim": "2.1", "attn_bias": "yes"}]}, claims=["2.1"])
