"""The optional extras of the fastslow distribution and the modules each one installs.

``pip install fastslow`` installs what ``derive``, ``check``, ``figures`` and the tests need; the other
libraries come with an extra (pyproject.toml's ``[project.optional-dependencies]``; ``[dev]`` pulls them
all).  A command that needs an extra calls :func:`require` before any work, and ``fastslow`` turns a
:class:`MissingExtra` — or any ``ModuleNotFoundError`` for one of these modules raised later — into exit
status 2 with the pip line that installs it.  Nothing here imports the libraries it names until asked.
"""

from __future__ import annotations

import importlib

#: extra -> the top-level modules it installs (pyproject.toml's optional dependencies; tests/test_extras.py
#: holds the two equal)
EXTRAS: dict[str, tuple[str, ...]] = {
    "sweep": ("dask", "distributed", "pandas", "pyarrow"),
    "hf": ("transformers", "safetensors"),
    "report": ("markdown_it", "mdit_py_plugins", "latex2mathml"),
}


class MissingExtra(ImportError):
    """A library of an extra is not installed: the message says what needs it and the pip line."""

    def __init__(self, module: str, extra: str, needed_by: str):
        self.module, self.extra = module, extra
        super().__init__(f"{needed_by} needs {module}, which is not installed: "
                         f"pip install 'fastslow[{extra}]'", name=module)


def extra_of(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name is read by its top level), or None."""
    top = (module or "").split(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def require(extra: str, needed_by: str) -> None:
    """Import every module of ``extra``; :class:`MissingExtra` naming the first one missing."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtra(module, extra, needed_by) from exc


def missing_extra(exc: BaseException) -> MissingExtra | None:
    """``exc`` as a :class:`MissingExtra` when it is an import failure of an extra's module, else None."""
    if isinstance(exc, MissingExtra):
        return exc
    if isinstance(exc, ImportError) and (extra := extra_of(exc.name)) is not None:
        return MissingExtra(exc.name, extra, "this command")
    return None


def available(module: str) -> bool:
    """Whether ``module`` imports (an optional reference tool, e.g. sympytorch for the benchmarks)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
