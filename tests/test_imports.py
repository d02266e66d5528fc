"""The import graph of the package has no cycles.

Every ``import`` statement counts, at module level or inside a function (a lazy import
still ties the two modules together).  ``from pkg import name`` is an edge to the
submodule ``pkg.name`` when that file exists, else to ``pkg`` itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "numerics", "proofs_check", "benchmarks")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def edges(mod: str, path: Path, known: dict[str, Path]) -> set[str]:
    out = set()
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = mod.split(".") if is_pkg else mod.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            r = resolve(t, known)
            if r and r != mod:
                out.add(r)
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: edges(m, p, known) for m, p in known.items()}


def test_no_import_cycles():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("pair", [("numerics.stacks.stack", "numerics.stacks.architectures.base"),
                                  ("proofs_check.report.reproduce", "proofs_check.cli.reproduce")])
def test_the_detector_sees_a_planted_cycle(pair):
    """Negative control: adding the reverse edge of a real one-way dependency must be reported."""
    g = graph()
    a, b = pair
    assert a in g[b] or b in g[a], f"{a} and {b} no longer depend on each other one way"
    g[a] = g[a] | {b}
    g[b] = g[b] | {a}
    assert find_cycle(g) is not None


#: the layers, lowest first: a module may import its own package and the packages before it
LAYERS = ("theory", "numerics", "proofs_check", "benchmarks")


def upward_imports(g: dict[str, set[str]]) -> list[str]:
    """Every edge from a package to one above it in ``LAYERS``, as 'a -> b'."""
    rank = {pkg: k for k, pkg in enumerate(LAYERS)}
    return sorted(f"{a} -> {b}" for a, targets in g.items() for b in targets
                  if rank[b.split(".")[0]] > rank[a.split(".")[0]])


def test_imports_run_one_way_theory_numerics_proofs_check_benchmarks():
    up = upward_imports(graph())
    assert not up, f"{len(up)} upward imports:\n" + "\n".join(up)


@pytest.mark.parametrize("edge", [("theory.factorisation", "numerics.stacks.stack"),
                                  ("numerics.stacks.stack", "proofs_check.validation"),
                                  ("proofs_check.cli", "benchmarks.run")])
def test_the_layering_check_sees_a_planted_upward_import(edge):
    """Negative control: an upward edge, planted, is reported."""
    g = graph()
    a, b = edge
    assert f"{a} -> {b}" not in upward_imports(g)
    g[a] = g[a] | {b}
    assert f"{a} -> {b}" in upward_imports(g)


#: the longest a module may be (numerics/generated/ is written by ``fastslow derive``, not by hand)
MAX_LINES = 450


def long_modules(paths, root: Path = ROOT) -> list[str]:
    """'path: n lines' for every module over MAX_LINES lines outside numerics/generated/."""
    out = []
    for p in paths:
        rel = p.relative_to(root).as_posix()
        if rel.startswith("numerics/generated/"):
            continue
        n = len(p.read_text().splitlines())
        if n > MAX_LINES:
            out.append(f"{rel}: {n} lines")
    return sorted(out)


def test_no_module_over_450_lines():
    """A module has one job; past 450 lines it has more (DEVELOPERS.md)."""
    too_long = long_modules(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
    assert not too_long, "split by job:\n" + "\n".join(too_long)


def test_the_length_check_sees_a_long_module(tmp_path):
    """Negative control: a 451-line module is reported; a 450-line one and a long generated one are not."""
    (tmp_path / "numerics" / "generated").mkdir(parents=True)
    files = {"long.py": MAX_LINES + 1, "short.py": MAX_LINES, "numerics/generated/big.py": 10 * MAX_LINES}
    for name, n in files.items():
        (tmp_path / name).write_text("x = 1\n" * n)
    assert long_modules([tmp_path / name for name in files], root=tmp_path) == [f"long.py: {MAX_LINES + 1} lines"]


#: proofs_check's sub-packages (and its top-level modules) in layers, lowest first: a module imports
#: only from its own layer and the layers before it (docs/ARCHITECTURE.md, "Layers inside proofs_check").
#: The registry finds the claims through an entry point (``verdicts.registry.load_checks``), not an import.
SUBPACKAGE_LAYERS = (
    ("environment", "extras", "integrity", "progress", "timeouts", "tables", "timings", "runlog"),
    ("verdicts",),
    ("validation", "inputs"),
    ("sweep",),
    ("experiments",),
    ("claims",),
    ("runners", "mutation"),
    ("report", "headline"),
    ("cli", "schemas"),
)


def sublayer(module: str) -> int | None:
    """The layer of a proofs_check module (None outside proofs_check and for the package itself)."""
    parts = module.split(".")
    if parts[0] != "proofs_check" or len(parts) == 1:
        return None
    for rank, names in enumerate(SUBPACKAGE_LAYERS):
        if parts[1] in names:
            return rank
    raise AssertionError(f"{module}: proofs_check.{parts[1]} has no layer in SUBPACKAGE_LAYERS")


def back_edges(g: dict[str, set[str]]) -> set[str]:
    """Every import, lazy ones included, from a proofs_check module to a later layer, as 'a -> b'."""
    return {f"{a} -> {b}" for a, targets in g.items() if sublayer(a) is not None
            for b in targets if sublayer(b) is not None and sublayer(b) > sublayer(a)}


def test_proofs_check_sub_packages_import_down_their_layers():
    found = sorted(back_edges(graph()))
    assert not found, f"{len(found)} imports up proofs_check's layers:\n" + "\n".join(found)


def test_the_sub_package_check_sees_a_planted_back_edge():
    """Negative control: the registry importing the CLI is reported."""
    g = graph()
    edge = "proofs_check.verdicts.evidence -> proofs_check.cli"
    assert edge not in back_edges(g)
    g["proofs_check.verdicts.evidence"] = g["proofs_check.verdicts.evidence"] | {"proofs_check.cli"}
    assert edge in back_edges(g)
