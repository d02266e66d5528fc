"""Claims declare what they need, architectures what they have; the registry decides n/a from that data.

An architecture's capabilities are ``CAPABILITIES`` in its class body (``numerics.stacks.architectures.capabilities``); a
claim's needs are ``needs=`` on its ``@on_stack`` registration.  A throwaway architecture defined in this file,
and nowhere else, gets every claim's answer: n/a, in the one format "n/a: <arch> has no <need> (<meaning>)", exactly
for the claims that need a capability it lacks, and applicable everywhere else, with no claim module edited.  No
claim module compares ``.arch`` or ``arch`` with anything (an AST scan, with planted comparisons as its control).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from numerics.stacks.architectures.capabilities import CAPABILITIES, capabilities, has
from proofs_check.verdicts import registry
from proofs_check.verdicts.evidence import CheckContext

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_DIR = ROOT / "proofs_check" / "claims"
#: the claims whose derivations exist for the paper's pre-LN stack only (docs/theory.md: 5.3's slow-mode maps G_ℓ,
#: K_ℓ and 6.4's depth clock are derived for its token map): n/a on an architecture without "paper_stack"
PAPER_STACK_ONLY = {"5.3", "6.4"}
NAME = "throwaway-scaled"


@pytest.fixture
def throwaway():
    """Defines (so registers) an architecture with no capabilities, and removes it from every table afterwards."""
    from numerics.stacks import stack as S
    from numerics.stacks.architectures import ARCHITECTURES, ArchStack

    class Scaled(ArchStack):
        """Each step is the base pre-LN layer scaled by 1/2: a map the claims' variant routes can measure."""

        arch = NAME

        def step(self, i, s):
            return 0.5 * self.base.layers[i](s)

        def token_step(self, i, sbar):
            return 0.5 * self.base.layers[i].token_map(sbar)

    try:
        yield Scaled
    finally:
        ARCHITECTURES.pop(NAME, None)
        S.VARIANTS.pop(NAME, None)


@pytest.fixture(scope="module")
def claims():
    return registry.load_checks()


def _na_reason(need: str) -> str:
    return f"n/a: {NAME} has no {need} ({CAPABILITIES[need]})"


def test_a_throwaway_architecture_gets_every_claims_answer(throwaway, claims):
    assert capabilities(NAME) == frozenset()
    ids = registry.on_stack_claims()
    assert PAPER_STACK_ONLY <= set(ids)
    for cid in ids:
        reason = claims[cid].not_applicable_to(NAME)
        if cid in PAPER_STACK_ONLY:
            assert reason == _na_reason("paper_stack"), (cid, reason)
            v = registry.evaluate_arch(cid, NAME, CheckContext())
            assert (v.status, v.reason) == ("n/a", _na_reason("paper_stack")), cid
        else:
            assert reason is None, (cid, reason)


def test_a_claim_applicable_to_the_throwaway_runs_there_unedited(throwaway, claims):
    """1.2's variant route (the chain rule through the throwaway's own step maps) holds on it: exact in float64."""
    v = registry.evaluate_arch("1.2", NAME, CheckContext())
    assert v.status == "holds", (v.status, v.reason, v.measured)


def test_declaring_the_capability_makes_the_claims_apply(throwaway, claims, monkeypatch):
    """Control: the same throwaway declaring "paper_stack" is no longer n/a for the claims that need it."""
    monkeypatch.setattr(throwaway, "CAPABILITIES", frozenset({"paper_stack"}), raising=False)
    assert has(NAME, "paper_stack")
    assert all(claims[cid].not_applicable_to(NAME) is None for cid in registry.on_stack_claims())


def test_capabilities_are_declared_not_inherited():
    """ReLU reuses pre-LN's modules but not its derivations; every shipped architecture's set is known."""
    from numerics.stacks.architectures import ARCHS

    assert has("preln", "paper_stack") and not has("relu", "paper_stack") and has("relu", "kink_set")
    assert all(capabilities(a) <= set(CAPABILITIES) for a in ARCHS)


def test_unknown_names_are_refused(throwaway, monkeypatch):
    with pytest.raises(ValueError, match="capability='wings' is not one of"):
        has("preln", "wings")
    with pytest.raises(ValueError, match=r"needs=\['wings'\] are not capabilities"):
        registry.on_stack("1.2", specs=lambda arch, ctx: [], needs=("wings",))
    monkeypatch.setattr(throwaway, "CAPABILITIES", frozenset({"wings"}), raising=False)
    with pytest.raises(ValueError, match=r"declares capabilities \['wings'\]"):
        capabilities(NAME)


def arch_comparisons(source: str, filename: str = "<claim>") -> list[str]:
    """'file:line' of every comparison with an ``.arch`` attribute or a name ``arch`` on either side (==, !=, in,
    not in): a claim's ``specs(arch, ctx)`` and its evaluation both ask for capabilities instead."""
    out = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "arch" or isinstance(s, ast.Name) and s.id == "arch"
                   for s in sides):
                out.append(f"{filename}:{node.lineno}")
    return out


def test_no_claim_module_tests_the_architecture_name():
    found = [hit for p in sorted(CLAIMS_DIR.rglob("*.py"))
             for hit in arch_comparisons(p.read_text(), str(p.relative_to(ROOT)))]
    assert not found, "claims branch on spec.arch (declare needs=, or ask numerics.stacks.architectures.capabilities.has):\n" \
        + "\n".join(found)


@pytest.mark.parametrize("planted", ['if spec.arch == "preln":\n    pass\n', 'x = s.arch in ("postln", "mhc")\n',
                                     'ok = "relu" != spec.arch\n', 'if arch == "preln":\n    pass\n'])
def test_the_scan_sees_a_planted_arch_test(planted):
    """Negative control: each form of the comparison is reported; asking for a capability is not."""
    assert arch_comparisons(planted) == ["<claim>:1"]
    assert arch_comparisons('ok = has(spec.arch, "paper_stack")\n') == []
