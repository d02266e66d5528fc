"""Code mutants: mutmut over the numerics (the generic layer beside the theory mutants).

mutmut 3 rewrites every function of the mutated files into trampolined variants, one
per classic mutation (operator swap, comparison swap, constant n -> n + 1, changed or
dropped argument, ``None`` for a value, string change), records which tests call which
function, and runs only those tests per mutant in a forked worker with a CPU-time limit
(15x the clean run).  A mutant is **killed** when a test fails (or it times out or
crashes); it **survives** when every test that reaches it passes, or when no selected
test reaches it ("no tests").

The run happens in a scratch copy of the package (``numerics``, ``theory``,
``proofs_check``, the selected test files and the tests' shared helpers: every
``tests/*.py`` that is not a test file), so the shared checkout is never written to.
mutmut is driven through its command line only (``mutmut run``, ``mutmut results``,
``mutmut show``); a step that fails raises :class:`MutationRunError` naming the step.
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

REPO = Path(__file__).resolve().parents[2]

#: The mutated files and the fast test subset of `fastslow mutate`.
DEFAULT_PATHS = ("numerics/stacks/stack.py", "numerics/stacks/kernels.py", "numerics/generated/*.py")
DEFAULT_TESTS = ("tests/test_stack.py", "tests/test_stack_contract.py", "tests/test_code_mutants_kills.py",
                 "tests/test_stack_behaviour.py")
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


class MutationRunError(RuntimeError):
    """A step of the mutation run failed (not a verdict on a mutant): ``step`` names it."""

    def __init__(self, step: str, detail: str):
        self.step, self.detail = step, " ".join(detail.split()) or "failed"
        super().__init__(f"{step}: {self.detail}")


def mutation_step(step: str, run, *args, **kwargs):
    """``run(*args, **kwargs)``; any exception but an interrupt becomes a :class:`MutationRunError` naming
    ``step``, so ``fastslow mutate`` reports one line and exits 1 instead of a traceback."""
    try:
        return run(*args, **kwargs)
    except MutationRunError as exc:
        raise MutationRunError(f"{step}, {exc.step}", exc.detail) from None
    except Exception as exc:
        raise MutationRunError(step, f"{type(exc).__name__}: {exc}") from None


def shared_test_modules() -> list[str]:
    """The tests' shared modules (conftest and the helpers the test files import by name, e.g.
    ``strategies``): every ``tests/*.py`` that is not a ``test_*.py`` file."""
    return sorted(f"tests/{p.name}" for p in (REPO / "tests").glob("*.py") if not p.name.startswith("test_"))


def _workspace(paths: list[str], tests: list[str]) -> Path:
    """A scratch project: the packages, the test files and the tests' shared helpers, a [tool.mutmut] config."""
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
    for test in [*test_files, *shared_test_modules()]:
        shutil.copy2(REPO / test, root / test)
    (root / "pyproject.toml").write_text(_PYPROJECT.format(only=json.dumps(list(paths)), tests=json.dumps(list(tests))))
    return root


def mutmut_command() -> str:
    """mutmut's console script: the one installed beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).with_name("mutmut")
    found = str(beside) if beside.is_file() else shutil.which("mutmut")
    if found is None:
        raise MutationRunError("finding mutmut", "no 'mutmut' command beside this Python or on PATH "
                               "(pip install 'mutmut>=3.8,<4')")
    return found


def _env(root: Path) -> dict:
    return os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(root),
                         "FASTSLOW_MUTANT": ""}


def _collect(root: Path, tests: list[str]) -> None:
    """pytest's collection of the selected tests in the scratch copy, before mutmut: an import error there
    (a helper not copied, a module that moved) is named here, where mutmut would only say pytest failed."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *tests], cwd=root, env=_env(root), capture_output=True, text=True)
    if proc.returncode != 0:
        raise MutationRunError("collecting the tests in the scratch copy", f"pytest exited {proc.returncode}: "
                               f"{_last_error(proc)}")


def _mutmut(root: Path, step: str, *args: str, allowed: str | None = None) -> subprocess.CompletedProcess:
    """``mutmut ARGS`` (its command line) in the scratch project; a nonzero exit is a
    :class:`MutationRunError` naming ``step`` and mutmut's last error line, unless the output
    contains ``allowed`` (an outcome the caller expects)."""
    try:
        proc = subprocess.run([mutmut_command(), *args], cwd=root, env=_env(root), capture_output=True, text=True)
    except OSError as exc:
        raise MutationRunError(step, f"could not start mutmut ({type(exc).__name__}: {exc})") from None
    if proc.returncode != 0 and not (allowed and allowed in proc.stdout + proc.stderr):
        raise MutationRunError(step, f"mutmut {args[0]} exited {proc.returncode}: {_last_error(proc)}")
    return proc


def _last_error(proc: subprocess.CompletedProcess) -> str:
    """The most telling line of a failed mutmut or pytest run: the last ``E  ...Error`` / ``...Error:`` line,
    else the last line of its output."""
    lines = _plain(proc.stdout).splitlines() + [ln for ln in proc.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"\b\w*(Error|Exception)\b", ln)]
    return (errors or lines or ["no output"])[-1].strip()


_RESULT = re.compile(r"^\s+(\S+): (.+?)\s*$")


def _statuses(root: Path, step: str = "mutmut results") -> dict[str, str]:
    """{mutant: status} from ``mutmut results --all true``."""
    proc = _mutmut(root, step, "results", "--all", "true")
    return {m.group(1): m.group(2) for m in map(_RESULT.match, proc.stdout.splitlines()) if m}


def _diffs(root: Path, names: list[str], workers: int) -> dict[str, str]:
    """mutmut's unified diff of each mutant (``mutmut show NAME``, its first line the status), ``workers``
    at a time."""
    from concurrent.futures import ThreadPoolExecutor

    def show(name):
        out = _mutmut(root, f"mutmut show {name}", "show", name).stdout
        return name, out.split("\n", 1)[1] if out.startswith("#") else out

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(show, names))


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
    from importlib.metadata import version

    start = time.perf_counter()
    paths, tests = list(paths), list(tests)
    root = _workspace(paths, tests)
    try:
        _collect(root, tests)
        names: list[str] = []
        if limit is not None:  # generate the mutants and the test map, then run a fixed selection
            # (mutmut has no command that only generates: a run selecting no mutant stops, as mutmut
            # says, once the mutants and the test map are written)
            _mutmut(root, "mutmut run (generating the mutants and the test map)",
                    "run", "--max-children", str(workers), "__no_such_mutant__*",
                    allowed="Filtered for specific mutants, but nothing matches")
            every = sorted(_statuses(root, "mutmut results (listing the mutants)"), key=_natural)
            if not every:
                raise MutationRunError("mutmut run (generating the mutants)", f"no mutant in {', '.join(paths)}")
            step = max(1, len(every) // limit)
            names = every[::step][:limit]
        proc = _mutmut(root, "mutmut run", "run", "--max-children", str(workers), *names)
        statuses = _statuses(root)
        if names:
            statuses = {n: statuses.get(n, "not checked") for n in names}
        if not statuses or all(s == "not checked" for s in statuses.values()):
            raise MutationRunError("mutmut run", f"checked no mutant: {_last_error(proc)}")
        killed = sum(s in DETECTED for s in statuses.values())
        alive = sorted((n for n, s in statuses.items() if s not in DETECTED), key=_natural)
        diffs = _diffs(root, alive, workers)
        survivors = [_survivor(root, n, statuses[n], diffs.get(n, "")) for n in alive]
    except (OSError, ValueError, KeyError) as exc:  # reading mutmut's output or the copy
        raise MutationRunError("reading mutmut's results", f"{type(exc).__name__}: {exc}") from None
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
    return {"tool": "mutmut", "version": version("mutmut"), "paths": paths, "tests": tests, "total": len(statuses),
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
                     + "  (rules: proofs_check/mutation/equivalents.py)")
    for s in code["survivors"]:
        lines.append(f"  {s.get('justified') or 'OPEN':>4} {s['status']:>9}  {s['file']}:{s['line']}  {s['mutation']}")
    return "\n".join(lines)
