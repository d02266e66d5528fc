"""Time limits for the ledger's symbolic steps: a step that does not finish in time is refused, not awaited.

A symbolic step is a call from a check into ``theory`` (or a ``sympy.simplify`` in the check itself).
:func:`time_limited` runs such a call under a deadline in the calling thread: a watchdog thread, at
the deadline, raises :class:`StepTimeout` inside the calling thread (CPython's
``PyThreadState_SetAsyncExc``, delivered at the next bytecode boundary; SymPy's simplification is
Python code, so it stops within milliseconds).  It needs no signal (``signal.alarm`` works on the
main thread only: not inside a Dask worker's task thread), no fork and no pickling (the step's
results, SymPy's caches and any patch of the theory stay in this process).  A C call that never
returns to Python is not interrupted; none of the theory's steps makes one.

:func:`limit_symbolic_steps` applies the limit to every function of the imported ``theory`` modules
and to ``sympy.simplify`` for the duration of one check; only the outermost call of a thread is
timed (a step's own calls into theory share its deadline).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import inspect
import sys
import threading
import time

#: The time limit of one symbolic step (s): the slowest step of the quick ledger,
#: ``theory.factorisation_proofs.prove_mlp_jacobian`` (2.1), took 48 s on a 2-core machine at load 16; a step
#: that runs over ten times longer is refused.
STEP_SECONDS = 600.0
#: How often the watchdog raises again after the deadline, should a step's code swallow the first one.
REPEAT_SECONDS = 0.5


class StepTimeout(BaseException):
    """A symbolic step ran past its time limit.  A BaseException, like KeyboardInterrupt, so that the
    ``except Exception`` blocks inside SymPy do not swallow it."""


_state = threading.local()


def _raise_in(ident: int, exc) -> None:
    """Raise ``exc`` (a class) asynchronously in thread ``ident``; ``None`` clears a pending one."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                               ctypes.py_object(exc) if exc is not None else None)


@contextlib.contextmanager
def deadline(seconds: float, what: str):
    """Run the block under a time limit of ``seconds``: past it, :class:`StepTimeout` naming ``what``."""
    if not (isinstance(seconds, (int, float)) and seconds > 0):
        raise ValueError(f"step time limit {seconds!r} must be a positive number of seconds")
    ident, lock, done = threading.get_ident(), threading.Lock(), threading.Event()
    fired = []

    def watchdog():
        wait = seconds
        while not done.wait(wait):
            with lock:
                if done.is_set():
                    return
                _raise_in(ident, StepTimeout)
                fired.append(time.perf_counter())
            wait = REPEAT_SECONDS

    dog = threading.Thread(target=watchdog, name=f"deadline {what}", daemon=True)
    dog.start()
    try:
        yield
    except StepTimeout:
        raise StepTimeout(f"{what} did not finish within {seconds:g} s") from None
    finally:
        with lock:
            done.set()
            if fired:
                _raise_in(ident, None)   # a raise already scheduled but not yet delivered is withdrawn
        dog.join()


def time_limited(fn, seconds: float, what: str | None = None):
    """``fn`` wrapped so that its outermost call in a thread runs under :func:`deadline`."""
    name = what or f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_state, "active", False):
            return fn(*args, **kwargs)
        _state.active = True
        try:
            with deadline(seconds, f"symbolic step {name}"):
                return fn(*args, **kwargs)
        finally:
            _state.active = False

    wrapper.__wrapped_step__ = fn
    return wrapper


_patch_lock = threading.Lock()
_patch_users = 0
_patched: list[tuple[object, str, object]] = []


def _targets():
    """(owner, attribute, function): every function bound in an imported ``theory`` module (its own, the
    helpers it imports, a mutant's replacement), and ``sympy.simplify``."""
    import sympy

    out = [(sympy, "simplify", sympy.simplify)]
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "theory" or name.startswith("theory.")) or name.startswith("theory.codegen"):
            continue
        for attr, value in list(vars(module).items()):
            if inspect.isfunction(value) and not attr.startswith("__"):   # patched ones (a mutant's) included
                out.append((module, attr, value))
    return out


@contextlib.contextmanager
def limit_symbolic_steps(seconds: float = STEP_SECONDS):
    """For the block: every call into ``theory`` and every ``sympy.simplify`` runs under a per-step
    limit of ``seconds`` (outermost call per thread).  Re-entrant across threads: the functions are
    wrapped by the first block and restored when the last one ends."""
    global _patch_users
    with _patch_lock:
        if _patch_users == 0:
            for owner, attr, fn in _targets():
                _patched.append((owner, attr, fn))
                setattr(owner, attr, time_limited(fn, seconds, f"{owner.__name__}.{attr}"))
        _patch_users += 1
    try:
        yield
    finally:
        with _patch_lock:
            _patch_users -= 1
            if _patch_users == 0:
                for owner, attr, fn in reversed(_patched):
                    setattr(owner, attr, fn)
                _patched.clear()
