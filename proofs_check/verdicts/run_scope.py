"""Measurements shared inside one run of the checks, and never across runs.

A reference trajectory, a dense Jacobian or a stability margin computed for one claim is reused by the next
claim of the same run (``fastslow check``, ``check --stack``, ``reproduce``): inside a run the code and the
committed checkpoints cannot change, so what would be recomputed is the same.  Outside a run, a function
marked :func:`per_run` computes afresh on every call, so a caller that changes the code between two calls
(a test that patches a forward pass, then checks again) never reads a value the changed code did not make.
The key of a shared value is the function and its arguments; each function keeps at most ``maxsize`` values
per run, the oldest dropped first (a gpt2-small stack's derivatives are GiBs).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections import OrderedDict

_STORE: contextvars.ContextVar[dict | None] = contextvars.ContextVar("fastslow_run_store", default=None)


@contextlib.contextmanager
def one_run():
    """The scope of one run: values of :func:`per_run` functions are shared until it closes (nested scopes
    share the outer one's)."""
    if _STORE.get() is not None:
        yield
        return
    token = _STORE.set({})
    try:
        yield
    finally:
        _STORE.reset(token)


def shared(name: str) -> OrderedDict:
    """The run's store named ``name`` (a fresh, unshared one outside a run)."""
    store = _STORE.get()
    if store is None:
        return OrderedDict()
    return store.setdefault(name, OrderedDict())


def remember(values: OrderedDict, key, make, maxsize: int | None = None):
    """``values[key]``, made by ``make()`` when absent; at most ``maxsize`` kept, the oldest dropped."""
    if key in values:
        values.move_to_end(key)
        return values[key]
    value = make()
    values[key] = value
    while maxsize is not None and len(values) > maxsize:
        values.popitem(last=False)
    return value


def per_run(maxsize: int | None = None):
    """Decorator: the function's value for hashable arguments is shared inside :func:`one_run`, recomputed
    outside it."""
    def wrap(fn):
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.wraps(fn)
        def wrapper(*args):
            return remember(shared(name), args, lambda: fn(*args), maxsize)

        return wrapper

    return wrap
