"""The driver behind `fastslow derive`: theory modules -> numerics/generated/.

For every family (a module ``theory/<family>.py`` defining ``FAMILY`` and
``generated_functions()``) the module text is rendered with
:func:`theory.codegen.render_module`, cached under ``.fastslow-cache/`` by a hash
of the sources it depends on, and written to ``numerics/generated/<family>.py``
(or, with ``check=True``, compared with it).

``check=True`` always derives from the sources: the cache only speeds up writing.  Each
write records the module's sha256, its source hash and every source file's sha256 in
``numerics/generated/manifest.json`` (``proofs_check.integrity``), and a cache entry is
used only when its source hash is the current one *and* its text hashes to what the
manifest recorded for that source: a forged or corrupt entry is ignored with a warning.
The source hash covers every ``theory`` module the family imports, the code generator,
and the versions of Python, SymPy and mpmath.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
import platform
import sys
import time
import types
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import mpmath
import sympy
from tqdm import tqdm

from proofs_check import integrity
from numerics.storage.io import write_text

import theory
from theory import codegen
from theory.codegen import CODEGEN_VERSION, CodegenError, parse_header, render_module
from theory.codegen.render import HEADER_MARK

REPO_ROOT = Path(theory.__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "numerics" / "generated"
CACHE_DIR = REPO_ROOT / ".fastslow-cache"
_NOT_FAMILIES = {"codegen"}
_CACHE_MARK = "# fastslow-cache"


@dataclass
class DeriveReport:
    """What `derive` did.  ``drifted``: (path, reason) pairs; ``ok`` when empty."""

    check: bool = False
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    drifted: list[tuple[Path, str]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    cached: list[str] = field(default_factory=list)  # families whose text came from the cache

    @property
    def ok(self) -> bool:
        return not self.drifted

    def __str__(self) -> str:
        mode = "derive --check" if self.check else "derive"
        lines = [
            f"{mode}: {len(self.seconds)} families, {len(self.written)} written, "
            f"{len(self.unchanged)} unchanged, {len(self.drifted)} drifted "
            f"({len(self.cached)} from cache, {sum(self.seconds.values()):.1f} s)"
        ]
        lines += [f"  wrote   {_display(p)}" for p in self.written]
        lines += [f"  DRIFT   {_display(p)}: {reason}" for p, reason in self.drifted]
        if self.drifted:
            lines.append("  run `fastslow derive` to regenerate (never hand-edit generated files)"
                         if self.check else "  fix the errors above and rerun `fastslow derive`")
        return "\n".join(lines)


def _display(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


# -- discovery and source hashing ---------------------------------------------------
def discover_families(errors: dict | None = None) -> dict[str, types.ModuleType]:
    """Every ``theory/<name>.py`` that defines ``FAMILY`` and ``generated_functions()``.

    A module that fails to import raises, unless ``errors`` is given: then its
    exception is stored there under the module name and discovery goes on.
    """
    families = {}
    for info in pkgutil.iter_modules(theory.__path__):
        if info.ispkg or info.name.startswith("_") or info.name in _NOT_FAMILIES:
            continue
        try:
            module = importlib.import_module(f"theory.{info.name}")
        except Exception as err:
            if errors is None:
                raise
            errors[info.name] = err
            continue
        if not (hasattr(module, "FAMILY") and callable(getattr(module, "generated_functions", None))):
            continue
        if module.FAMILY != info.name:
            raise CodegenError(
                f"theory/{info.name}.py declares FAMILY = {module.FAMILY!r}; "
                "the family name must equal the file stem"
            )
        families[info.name] = module
    return families


def _theory_dependencies(module: types.ModuleType) -> list[types.ModuleType]:
    """``module`` and the ``theory.*`` modules it uses, transitively (by name, sorted)."""
    seen = {module.__name__: module}
    todo = [module]
    while todo:
        for value in vars(todo.pop()).values():
            name = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
            if isinstance(name, str) and name.startswith("theory.") and name not in seen \
                    and name in sys.modules:
                seen[name] = sys.modules[name]
                todo.append(seen[name])
    return [seen[name] for name in sorted(seen)]


def source_files(module: types.ModuleType) -> list[Path]:
    """Every file the family's generated text depends on: its theory modules and the generator."""
    files = {Path(inspect.getsourcefile(m)).resolve() for m in _theory_dependencies(module)}
    files |= {p.resolve() for p in Path(codegen.__file__).parent.glob("*.py")}
    return sorted(files)


def source_hash(module: types.ModuleType) -> str:
    """sha256 of every source the family's generated text depends on, and the library versions."""
    digest = hashlib.sha256(f"{CODEGEN_VERSION} sympy {sympy.__version__} mpmath {mpmath.__version__} "
                            f"python {platform.python_version()}\n".encode())
    for path in source_files(module):
        digest.update(f"{path.name}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


# -- cache ------------------------------------------------------------------------
def _read_cache(path: Path, wanted_source: str, recorded: dict | None = None) -> str | None:
    """The cached module text, or None when absent, stale, corrupt or forged (the last two warned).

    ``recorded`` is the manifest's record of the family: the entry is used only when the
    manifest recorded the same source hash and the entry's text hashes to the recorded output.
    """
    if not path.exists():
        return None
    try:
        first, _, text = path.read_text(encoding="utf-8").partition("\n")
        fields = first.split(" ")
        if len(fields) != 4 or " ".join(fields[:2]) != _CACHE_MARK:
            raise ValueError("missing cache header")
        source, text_hash = fields[2:]
        if source != f"source={wanted_source}":
            return None  # stale: the sources changed
        if text_hash != f"text={hashlib.sha256(text.encode()).hexdigest()}":
            raise ValueError("text hash does not match")
        parse_header(text)
        if not recorded or recorded.get("source") != wanted_source:
            return None  # no derivation recorded for these sources: nothing to vouch for the entry
        if recorded.get("sha256") != integrity.sha256_text(text):
            raise ValueError("its text is not what `fastslow derive` recorded for these sources "
                             "in numerics/generated/manifest.json (forged or corrupt)")
        return text
    except (OSError, UnicodeDecodeError, ValueError) as err:
        warnings.warn(f"ignoring corrupt cache entry {path} ({err}); regenerating", stacklevel=3)
        return None


def _atomic_write(path: Path, text: str) -> None:
    write_text(path, text)


def _write_cache(path: Path, source: str, text: str) -> None:
    text_hash = hashlib.sha256(text.encode()).hexdigest()
    _atomic_write(path, f"{_CACHE_MARK} source={source} text={text_hash}\n{text}")


# -- the driver -------------------------------------------------------------------
def _select(families, errors: dict) -> tuple[dict[str, types.ModuleType], bool]:
    """(family -> module, whether the selection is every family); import errors -> errors."""
    if families is None:
        return discover_families(errors), True
    if isinstance(families, Mapping):
        return dict(families), False
    found: dict = {}
    everything = discover_families(found)
    names = [families] if isinstance(families, str) else list(families)
    errors.update((n, err) for n, err in found.items() if n in names)
    missing = [n for n in names if n not in everything and n not in errors]
    if missing:
        raise CodegenError(f"unknown families {missing}; known: {sorted(everything)}")
    return {n: everything[n] for n in names if n in everything}, False


def _first_difference(old: str, new: str) -> int:
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines()), start=1):
        if a != b:
            return number
    return min(len(old.splitlines()), len(new.splitlines())) + 1


def derive(families=None, check: bool = False, out_dir: Path = OUT_DIR,
           cache_dir: Path = CACHE_DIR, progress: bool = True) -> DeriveReport:
    """Regenerate (or, with ``check``, verify) ``<out_dir>/<family>.py`` for each family.

    ``families``: None (every discovered family; orphaned generated files are
    reported too), an iterable of family names, or a mapping name -> module.
    ``check=True`` writes nothing and reports every generated file that is
    missing, differs from what derivation produces now, or is an orphan.
    """
    import_errors: dict = {}
    selected, everything = _select(families, import_errors)
    out_dir, cache_dir = Path(out_dir), Path(cache_dir)
    report = DeriveReport(check=check)
    for name, err in import_errors.items():
        report.drifted.append((out_dir / f"{name}.py",
                               f"theory/{name}.py failed to import: {type(err).__name__}: {err}"))
    bar = tqdm(selected.items(), desc="derive", unit="family",
               disable=not (progress and sys.stderr.isatty()))
    recorded = integrity.read_manifest(out_dir)
    entries = {}
    for family, module in bar:
        bar.set_postfix_str(family)
        start = time.perf_counter()
        target = out_dir / f"{family}.py"
        try:
            source = source_hash(module)
            text = _module_text(family, module, cache_dir, check, report, source, recorded.get(family))
        except Exception as err:  # one broken family must not hide the others
            report.drifted.append((target, f"derivation failed: {type(err).__name__}: {err}"))
        else:
            _compare_or_write(target, text, check, report)
            entries[family] = integrity.entry(text, source, source_files(module))
        report.seconds[family] = time.perf_counter() - start
    if entries and not check:
        integrity.record(out_dir, entries)
    if everything:
        report.drifted += _orphans(out_dir, {**selected, **import_errors})
    return report


def _module_text(family, module, cache_dir: Path, check: bool, report: DeriveReport, source: str,
                 recorded: dict | None) -> str:
    cache_path = cache_dir / f"{family}.py.txt"
    if not check:  # --check derives from the sources, never from the cache
        text = _read_cache(cache_path, source, recorded)
        if text is not None:
            report.cached.append(family)
            return text
    # SymPy's global cache can hand back an equal expression built by an earlier family in a
    # different (equally valid) form; clearing it makes each family's text independent of
    # which families were derived before it in the same process.
    sympy.core.cache.clear_cache()
    text = render_module(family, module.__name__, list(module.generated_functions()))
    if not check:
        _write_cache(cache_path, source, text)
    return text


def _compare_or_write(target: Path, text: str, check: bool, report: DeriveReport) -> None:
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if current == text:
        report.unchanged.append(target)
    elif not check:
        _atomic_write(target, text)
        report.written.append(target)
    elif current is None:
        report.drifted.append((target, "missing"))
    else:
        line = _first_difference(current, text)
        report.drifted.append(
            (target, f"differs from the derivation from line {line} (hand edit or stale)")
        )


def _orphans(out_dir: Path, selected: dict) -> list[tuple[Path, str]]:
    orphans = []
    for path in sorted(out_dir.glob("*.py")):
        if path.stem in selected or path.name == "__init__.py":
            continue
        with path.open(encoding="utf-8", errors="replace") as handle:
            if handle.readline().startswith(HEADER_MARK):
                orphans.append((path, f"orphan: theory/{path.stem}.py no longer exists "
                                      "(or defines no generated_functions); delete it"))
    return orphans
