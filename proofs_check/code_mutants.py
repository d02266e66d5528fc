"""Code mutants: mutmut over the numerics (the generic layer beside the theory mutants).

mutmut 3 rewrites every function of the mutated files into trampolined variants, one
per classic mutation (operator swap, comparison swap, constant n -> n + 1, changed or
dropped argument, ``None`` for a value, string change), records which tests call which
function, and runs only those tests per mutant in a forked worker with a CPU-time limit
(15x the clean run).  A mutant is **killed** when a test fails (or it times out or
crashes); it **survives** when every test that reaches it passes, or when no selected
test reaches it ("no tests").

The run happens in a scratch copy of the package (``numerics``, ``theory``,
``proofs_check``, the selected test files), so the shared checkout is never written to.
Survivors are either killed by a new test (tests/test_code_mutants_kills.py,
tests/test_stack.py) or listed as equivalent in docs/equivalent_mutants.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The mutated files and the fast test subset of `fastslow mutate`.
DEFAULT_PATHS = ("numerics/stack.py", "numerics/kernels.py", "numerics/generated/*.py")
DEFAULT_TESTS = ("tests/test_stack.py", "tests/test_stack_contract.py", "tests/test_code_mutants_kills.py")
#: The issue's target for the code mutation score (numerics/generated/ and the stack).
CODE_TARGET = 0.9
#: mutmut's exit-code classes that count as detected.
DETECTED = {"killed", "timeout", "segfault", "caught by type check"}
_COPIED = ("numerics", "theory", "proofs_check")
_PYPROJECT = """\
[tool.pytest.ini_options]
markers = ["slow: longer numerical checks"]

[tool.mutmut]
source_paths = ["numerics"]
only_mutate = {only}
pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider"]
pytest_add_cli_args_test_selection = {tests}
also_copy = ["theory", "proofs_check"]
use_git_change_detection = false
use_setproctitle = false
"""


def _workspace(paths: list[str], tests: list[str]) -> Path:
    """A scratch project: the packages, the test files (and conftest), a [tool.mutmut] config."""
    for path in paths:
        if not path.startswith("numerics/") or not list(REPO.glob(path)):
            raise ValueError(f"paths: {path!r} matches no file under numerics/")
    test_files = sorted({t.split("::")[0] for t in tests})
    for test in test_files:
        if not (REPO / test).is_file():
            raise ValueError(f"tests: {test!r} is not a test file of the repository")
    root = Path(tempfile.mkdtemp(prefix="fastslow-code-mutants-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in _COPIED:
        shutil.copytree(REPO / package, root / package, ignore=ignore)
    (root / "tests").mkdir()
    for test in [*test_files, "tests/conftest.py"]:
        shutil.copy2(REPO / test, root / test)
    (root / "pyproject.toml").write_text(_PYPROJECT.format(only=json.dumps(list(paths)), tests=json.dumps(list(tests))))
    return root


def _mutmut(root: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(root),
                        "FASTSLOW_MUTANT": ""}
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _statuses(root: Path) -> dict[str, str]:
    from mutmut.stats import status_by_exit_code

    statuses = {}
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            statuses[key] = status_by_exit_code[code]
    return statuses


_DIFF_SCRIPT = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.mutation.data import SourceFileMutationData
from mutmut.utils.file_utils import walk_mutatable_files
wanted = set(json.loads(sys.argv[1]))
out = {}
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    for key in data.exit_code_by_key:
        if key in wanted:
            out[key] = get_diff_for_mutant(key, path=path)
print(json.dumps(out))
"""


def _diffs(root: Path, names: list[str]) -> dict[str, str]:
    """mutmut's unified diff of each mutant, read in one interpreter."""
    if not names:
        return {}
    env = os.environ | {"PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", _DIFF_SCRIPT, json.dumps(names)], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _survivor(root: Path, name: str, status: str, diff: str) -> dict:
    """{mutant, status, file, line, mutation, diff}: the mutated line located in the original file."""
    file = next((ln[4:].strip() for ln in diff.splitlines() if ln.startswith("--- ")), "")
    removed = [ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    line = None
    if file and removed:
        source = (root / file).read_text().splitlines()
        function = name.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[-1].removeprefix("x").split("ǁ")[-1].lstrip("_")
        start = next((i for i, ln in enumerate(source) if re.match(rf"\s*def {re.escape(function)}\(", ln)), 0)
        line = next((i + 1 for i in range(start, len(source)) if source[i] == removed[0]), None)
    return {"mutant": name, "status": status, "file": file, "line": line,
            "mutation": f"{removed[0].strip() if removed else ''}  ->  {added[0].strip() if added else ''}",
            "diff": diff}


def run_code_mutants(paths=DEFAULT_PATHS, tests=DEFAULT_TESTS, workers: int = 2, limit: int | None = None,
                     keep: bool = False) -> dict:
    """Run mutmut over ``paths`` (globs under numerics/) with the test subset ``tests``.

    ``limit``: only the first ``limit`` mutants in a fixed order (spread over the
    functions; for the CI sample).  Returns {"tool", "total", "killed", "score",
    "survivors": [{mutant, status, file, line, mutation, diff}], "seconds", "statuses"}.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    import mutmut

    start = time.perf_counter()
    paths, tests = list(paths), list(tests)
    root = _workspace(paths, tests)
    try:
        names: list[str] = []
        if limit is not None:  # generate the mutants and the test map, then run a fixed selection
            _mutmut(root, "run", "--max-children", str(workers), "__no_such_mutant__*")
            every = sorted(_statuses(root), key=_natural)
            step = max(1, len(every) // limit)
            names = every[::step][:limit]
        proc = _mutmut(root, "run", "--max-children", str(workers), *names)
        statuses = _statuses(root)
        if names:
            statuses = {n: statuses[n] for n in names}
        if not statuses or all(s == "not checked" for s in statuses.values()):
            raise RuntimeError(f"mutmut checked no mutant (exit {proc.returncode}):\n"
                               f"{_plain(proc.stdout)[-3000:]}\n{proc.stderr[-2000:]}")
        killed = sum(s in DETECTED for s in statuses.values())
        alive = sorted((n for n, s in statuses.items() if s not in DETECTED), key=_natural)
        diffs = _diffs(root, alive)
        survivors = [_survivor(root, n, statuses[n], diffs.get(n, "")) for n in alive]
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    counts: dict[str, int] = {}
    by_file: dict[str, list[int]] = {}  # file: [mutants, killed]
    for n, s in statuses.items():
        counts[s] = counts.get(s, 0) + 1
        row = by_file.setdefault(n.rsplit(".x", 1)[0].replace(".", "/") + ".py", [0, 0])
        row[0] += 1
        row[1] += s in DETECTED
    return {"tool": "mutmut", "version": mutmut.__version__, "paths": paths, "tests": tests, "total": len(statuses),
            "killed": killed, "score": killed / len(statuses), "survivors": survivors, "statuses": counts,
            "by_file": dict(sorted(by_file.items())),
            "sampled": sorted(statuses, key=_natural) if names else None,
            "seconds": time.perf_counter() - start}


def _plain(text: str) -> str:
    """mutmut's output without its spinner frames."""
    return "\n".join(ln for ln in text.replace("\r", "\n").splitlines() if ln.strip() and "⠋" not in ln
                     and not any(ch in ln for ch in "⠙⠹⠸⠼⠴⠦⠧⠇⠏"))


def _natural(name: str):
    head, _, number = name.rpartition("__mutmut_")
    return (head, int(number) if number.isdigit() else 0)


def format_summary(code: dict) -> str:
    lines = [f"code mutation score ({code['tool']} {code.get('version', '')}): {code['killed']}/{code['total']} = {code['score']:.3f}"
             f"  [{', '.join(f'{k}: {v}' for k, v in sorted(code['statuses'].items()))}]"
             f"  {code['seconds']:.0f} s"]
    if "justified" in code:
        lines.append("  survivors: " + ", ".join(f"{k} {v}" for k, v in code["justified"].items())
                     + "  (rules: proofs_check/equivalents.py)")
    for s in code["survivors"]:
        lines.append(f"  {s.get('justified') or 'OPEN':>4} {s['status']:>9}  {s['file']}:{s['line']}  {s['mutation']}")
    return "\n".join(lines)
