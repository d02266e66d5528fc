"""Which of a claim's declared generated functions its check actually calls.

A claim declares the generated formulas it rests on (``@claim(..., generated=[...])``).  A
declaration the check never calls is checked by nothing: a mistake in that formula (a dropped ½, a
wrong sign) would leave the claim verified.  :func:`count_calls` wraps each declared function of
``numerics.generated.<family>`` with a call counter for the duration of the check (the numerics call
them as ``gen.<name>(...)``, an attribute lookup at call time, so every route is counted); the ledger
refuses a claim whose check leaves one of them uncalled.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading

_lock = threading.Lock()


def _split(qualified: str) -> tuple[str, str]:
    module, _, name = qualified.rpartition(".")
    if not module.startswith("numerics.generated.") or not name:
        raise ValueError(f"generated function {qualified!r} is not numerics.generated.<family>.<name>")
    return module, name


@contextlib.contextmanager
def count_calls(qualified_names: list[str]):
    """Yield {qualified name: calls so far}; each declared function counts its calls inside the block.
    A declared name that does not exist is counted as never called (the ledger then names it)."""
    counts = {q: 0 for q in qualified_names}
    patched = []
    with _lock:
        for q in qualified_names:
            module_name, name = _split(q)
            module = importlib.import_module(module_name)
            fn = getattr(module, name, None)
            if fn is None or not callable(fn):
                continue

            def counted(*args, __q=q, __fn=fn, **kwargs):
                counts[__q] += 1
                return __fn(*args, **kwargs)

            setattr(module, name, functools.wraps(fn)(counted))
            patched.append((module, name, fn))
    try:
        yield counts
    finally:
        with _lock:
            for module, name, fn in reversed(patched):
                setattr(module, name, fn)


def never_called(counts: dict[str, int]) -> list[str]:
    return [q for q, n in counts.items() if n == 0]
