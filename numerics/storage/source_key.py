"""What a cached result depends on: the project source a module can execute, and a cache key over it.

``source_key(modules, config)`` hashes ``config``, the torch and Python versions and every file of
``source_closure(modules)``; ``default_cache_dir`` / ``cache_dir_for`` say where trained runs are kept.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


SOURCE_PACKAGES = ("numerics", "theory", "proofs_check")  # the experiments that cache results live in proofs_check


def _module_file(name: str, root: Path) -> Path | None:
    if name.split(".")[0] not in SOURCE_PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def source_closure(modules: tuple[str, ...], root: str | os.PathLike | None = None) -> dict[str, Path]:
    """Every module of this project (``SOURCE_PACKAGES``) that importing ``modules`` can execute, with its file.

    Found from the source itself: each file's ``import``/``from … import`` statements (at any
    depth, so imports inside functions count), followed transitively, plus every parent
    package's ``__init__``.  ``root`` is the folder holding the packages (this checkout by default).
    """
    root = Path(root) if root is not None else REPO
    found: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = _module_file(name, root)
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        package = name if path.name == "__init__.py" else ".".join(parts[:-1])
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.Import):
                todo.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    base = node.module
                todo.append(base)
                todo.extend(f"{base}.{alias.name}" for alias in node.names)
    return found


def source_key(modules: tuple[str, ...], config, root: str | os.PathLike | None = None) -> str:
    """A cache key: sha256 over ``config`` (JSON), the torch and Python versions and the content
    of every file in :func:`source_closure` of ``modules``."""
    root = Path(root) if root is not None else REPO
    h = hashlib.sha256()
    h.update(json.dumps(config, sort_keys=True, default=str).encode())
    h.update(f"torch {torch.__version__} python {'.'.join(map(str, sys.version_info[:3]))}".encode())
    for name, path in sorted(source_closure(modules, root).items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:20]


def cache_dir_for(ctx) -> Path:
    """The cache folder of a check or figure context: ``ctx.cache_dir`` (set by ``fastslow
    reproduce``) or else ``default_cache_dir()``."""
    return Path(getattr(ctx, "cache_dir", None) or default_cache_dir())


def default_cache_dir() -> Path:
    """Where trained runs are kept: $FASTSLOW_CACHE, else out/cache."""
    return Path(os.environ.get("FASTSLOW_CACHE", Path("out") / "cache"))
