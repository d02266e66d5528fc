"""CI's fixed sample of mutants: a weakened check or test shows up at landing.

Three theory mutants (a wrong derivation regenerated into a scratch module, the claim's
ledger check run against it) and six code mutants (mutmut over two generated modules,
the generated-code tests of one of them run against each) are killed or, in the
control module no selected test reaches, reported as survivors.  The full runs are
`fastslow mutate` (theory) and `fastslow mutate --code-only` (code).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from proofs_check.mutation.mutmut_code import run_code_mutants
from proofs_check.mutation.hand_written_theory import catalogue, run_one

THEORY_SAMPLE = ("pst-from-Q", "posterior-block-sum", "G-sign-flip")
CODE_FILE = "numerics/generated/visibility.py"
CONTROL_FILE = "numerics/generated/coarse_graining.py"
CODE_TESTS = tuple(f"tests/test_code_mutants_kills.py::{test}[visibility-{fn}]"
                   for test in ("test_generated_function_evaluates_its_derivation",
                                "test_generated_function_keeps_dtype_and_device")
                   for fn in ("first_order_response", "gate_sensitivity", "injection_pattern"))


def test_theory_sample_is_killed_by_the_ledger_checks():
    assert set(THEORY_SAMPLE) <= set(catalogue())
    # Each mutant runs in its own interpreter; two at a time use the two cores.
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda name: run_one(name, run_tests=False), THEORY_SAMPLE))
    survivors = [r["name"] for r in results if r["killed_by"] is None]
    assert not survivors, f"theory mutants survived their claim's check: {survivors}"
    crashed = [r["name"] for r in results if r["killed_by"].startswith("installing or checking crashed")]
    assert not crashed, f"a crash is not a kill: {crashed}"


def test_code_sample_is_killed_by_the_generated_code_tests():
    """Six mutants spread over two generated modules, tested with visibility's tests only: the
    three in visibility.py are killed; the three in coarse_graining.py (negative control: no
    selected test reaches them) survive and are reported with their file and line."""
    code = run_code_mutants([CONTROL_FILE, CODE_FILE], CODE_TESTS, workers=2, limit=6)
    by_file = {}
    for name in code["sampled"]:
        by_file.setdefault(name.split(".")[2], []).append(name)
    assert code["total"] == 6 and sorted(by_file) == ["coarse_graining", "visibility"]
    survivors = {s["mutant"]: s for s in code["survivors"]}
    assert not set(by_file["visibility"]) & set(survivors), "a visibility.py mutant survived its tests"
    assert set(by_file["coarse_graining"]) <= set(survivors), "the control: untested mutants must survive"
    assert code["killed"] == len(by_file["visibility"]) >= 2
    assert all(survivors[n]["file"] == CONTROL_FILE and survivors[n]["line"] for n in by_file["coarse_graining"])


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="paths"):
        run_code_mutants(["theory/stability.py"], CODE_TESTS)
    with pytest.raises(ValueError, match="limit"):
        run_code_mutants([CODE_FILE], CODE_TESTS, limit=0)


@pytest.mark.parametrize("old,new,rule", [
    ('q = torch.einsum("...td,hdk->...htk", z, W)', 'q = torch.einsum("...TD,HDK->...HTK", z, W)', "E1"),
    ('raise ValueError("weights_at needs it")', 'raise ValueError("WEIGHTS_AT NEEDS IT")', None),
    ("_c0 = torch.tensor(0, dtype=x.dtype, device=x.device)", "_c0 = torch.tensor(0, device=x.device)", "E2"),
    ("_c0 = torch.tensor(0, dtype=x.dtype, device=x.device)", "_c0 = torch.tensor(1, dtype=x.dtype, device=x.device)",
     None),
    ("x2 = x0 - 1/d * torch.ones(d, d, dtype=x.dtype)", "x2 = x0 - 1/d / torch.ones(d, d, dtype=x.dtype)", "E3"),
    ("x2 = x0 - 1/d * torch.ones(d, d, dtype=x.dtype)", "x2 = x0 - 1/d * torch.ones(d, dtype=x.dtype)", "E4"),
    ("x2 = x0 - 1/d * torch.ones(d, d, dtype=x.dtype)", "x2 = x0 + 1/d * torch.ones(d, d, dtype=x.dtype)", None),
    ("y = z.flatten(-2, -1)", "y = z.flatten(-2, )", "E6"),
    ("M = torch.cat([A, B], dim=0)", "M = torch.cat([A, B], )", "E7"),
    ("M = torch.cat([A, B], dim=0)", "M = torch.cat([A, B], dim=1)", None),
    ('K.check_divisible(cfg.T, cfg.P, "P")', "K.check_divisible(cfg.T, cfg.P, )", "E7"),
    ('leaf = name.rsplit(".", 1)[-1]', 'leaf = name.rsplit(".", 2)[-1]', "E8"),
    ('leaf = name.rsplit(".", 1)[-1]', 'leaf = name.rsplit(".", 1)[0]', None),
    ("for name in draws[0]}", "for name in draws[1]}", "E9"),
    ("rhs = torch.zeros_like(M[:, :1])", "rhs = torch.zeros_like(M[:, :2])", "E10"),
    ("rhs = torch.zeros_like(M[:, :1])", "rhs = torch.zeros_like(M[:, :1]) + 1", None),
    ("s = stack.to(dtype=dtype, device=device)", "s = stack.to(dtype=dtype, device=None)", "D"),
    ("s = stack.to(dtype=dtype, device=device)", "s = stack.to(dtype=dtype, )", "D"),
    ("s = stack.to(dtype=dtype, device=device)", "s = stack.to(dtype=None, device=device)", None),
    ("device=next(iter(self._path.values())).device)", ")", "D"),
])
def test_equivalence_rules_match_exactly_their_mutations(old, new, rule):
    """Each rule justifies its own kind of mutation and not a near miss that changes behaviour."""
    from proofs_check.mutation.equivalents import classify

    got = classify({"mutant": "numerics.stacks.stack.x_f__mutmut_1", "mutation": f"{old}  ->  {new}"})
    assert (got.key if got else None) == rule


def test_cancelling_constant_rule_is_confined_to_its_function():
    from proofs_check.mutation.equivalents import classify

    line = "x0 = alpha*h - 1  ->  x0 = alpha*h + 1"
    assert classify({"mutant": "numerics.generated.factorisation.x_G_layer_coefficient_1__mutmut_3",
                     "mutation": line}).key == "E5"
    assert classify({"mutant": "numerics.generated.factorisation.x_G_layer_coefficient_0__mutmut_3",
                     "mutation": line}) is None


def test_code_mutant_test_ids_are_ascii():
    """mutmut re-selects tests by node id; pytest escapes non-ASCII ids, so such a test would be
    found by no id, pytest would exit 4 and mutmut would count the mutant as killed."""
    import subprocess
    import sys

    from proofs_check.mutation.mutmut_code import DEFAULT_TESTS, REPO

    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *DEFAULT_TESTS], cwd=REPO, capture_output=True, text=True, check=True)
    ids = [ln for ln in proc.stdout.splitlines() if "::" in ln]
    assert len(ids) > 100, proc.stdout[-2000:]
    assert [i for i in ids if not i.isascii() or "\\u" in i or "\\x" in i] == []


def test_report_section_shows_both_scores(tmp_path):
    import json

    from proofs_check.report.reproduce import _mutation_section

    assert "No mutation run" in "\n".join(_mutation_section(tmp_path))
    (tmp_path / "mutation.json").write_text(json.dumps({
        "theory": {"total": 2, "killed": 2, "score": 1.0,
                   "mutants": [{"name": "a", "claim": "2.1", "killed_by": "numeric check"},
                               {"name": "b", "claim": "5.1", "killed_by": "symbolic step: x"}]},
        "code": {"tool": "mutmut", "total": 10, "killed": 9, "score": 0.9, "survivors": [{}],
                 "justified": {"equivalent": 1, "device-only": 0, "open": 0},
                 "by_file": {"numerics/stacks/stack.py": [10, 9]}}}))
    text = "\n".join(_mutation_section(tmp_path))
    assert "Theory mutation score: **2/2 = 1.00**" in text and "| a | 2.1 | numeric check |" in text
    assert "Code mutation score (mutmut): **9/10 = 0.900**; survivors: 1 (1 equivalent, 0 device-only, 0 open" in text
    assert "| `numerics/stacks/stack.py` | 10 | 9 | 0.900 |" in text
