"""Perturb one generated function everywhere it is referenced, for tests that a claim's numbers move."""

from __future__ import annotations


def scale_generated(monkeypatch, dotted: str, factor: float = 1 + 1e-3) -> None:
    """Replace a generated function by itself × factor, in its module and wherever it was imported by name."""
    import importlib
    import sys

    module_name, name = dotted.rsplit(".", 1)
    original = getattr(importlib.import_module(module_name), name)

    def scaled(*args, **kwargs):
        return original(*args, **kwargs) * factor

    for module in list(sys.modules.values()):
        try:
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, scaled)
        except Exception:  # a lazy module that refuses attribute access holds no reference
            continue
