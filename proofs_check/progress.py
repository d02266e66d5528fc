"""The one progress policy of the command line: name the item being worked on, estimate the rest.

On a terminal (stderr is a TTY) a tqdm bar shows the current item and the time left, and nested
bars stack; in a log (stderr is a file or pipe) no bar and no escape code is written, only plain
lines: a first line naming the work (``check claims: 18 claims, first 1.1``), then
``check claims [3/18] 2.1 done in 4.2 s, about 40 s left; next 2.2`` (the time left: the mean time per
item so far times the items left), and while one item runs long, ``check claims [3/18] 2.1 still
running, 60 s so far`` every :data:`HEARTBEAT_SECONDS`, so a piped run is never silent for minutes.
Both modes print the done lines, so a log and a terminal tell the same story.

Two shapes of work: ``track`` walks a list of items; ``steps`` hands a lower layer (numerics) a
plain callback ``report(done, total, label)`` to call as it finishes each unit of a long
computation, so numerics reports progress without importing proofs_check.

``silenced()`` turns every bar and line off for the code it wraps: the commands' ``--no-progress``.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

#: True inside ``silenced()``: every ``track`` and ``steps`` then reports nothing
_SILENT = contextvars.ContextVar("progress_silent", default=False)

#: in a log, ``steps`` writes a line at most this often (and always for the last unit)
LOG_EVERY_SECONDS = 5.0
#: in a log, ``track`` says an item is still running this often
HEARTBEAT_SECONDS = 30.0


@contextlib.contextmanager
def _heartbeat(stream, text: Callable[[float], str], every: float) -> Iterator[None]:
    """While the body runs, write ``text(elapsed)`` to ``stream`` every ``every`` seconds (a daemon thread)."""
    import threading

    stop = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not stop.wait(every):
            print(text(time.perf_counter() - start), file=stream, flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def is_tty(stream=None) -> bool:
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextlib.contextmanager
def silenced(silent: bool = True) -> Iterator[None]:
    """No progress bar or line from the code inside (when ``silent``)."""
    token = _SILENT.set(bool(silent) or _SILENT.get())
    try:
        yield
    finally:
        _SILENT.reset(token)


def track(items: Iterable[T], desc: str, *, unit: str = "item", label: Callable[[T], str] = str,
          enabled: bool = True, stream=None, heartbeat: float = HEARTBEAT_SECONDS) -> Iterator[T]:
    """Yield ``items``, reporting each one by ``label(item)`` under the heading ``desc``."""
    items = list(items)
    if not enabled or _SILENT.get():
        yield from items
        return
    stream = sys.stderr if stream is None else stream
    tty = is_tty(stream)
    bar = None
    if tty:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc=desc, unit=unit, file=stream, leave=False, dynamic_ncols=True)
    n = len(items)
    if bar is None and n:
        print(f"{desc}: {n} {unit}{'s' if n > 1 else ''}, first {label(items[0])}", file=stream, flush=True)
    began = time.perf_counter()
    try:
        for i, item in enumerate(items):
            if bar is not None:
                bar.set_postfix_str(label(item), refresh=True)
            start = time.perf_counter()
            if bar is None:
                running = f"{desc} [{i + 1}/{n}] {label(item)} still running"
                with _heartbeat(stream, lambda s, running=running: f"{running}, {s:.0f} s so far", heartbeat):
                    yield item
            else:
                yield item
            now = time.perf_counter()
            left = f", about {(now - began) / (i + 1) * (n - i - 1):.0f} s left" if i + 1 < n else ""
            nxt = f"; next {label(items[i + 1])}" if i + 1 < n else ""
            line = f"{desc} [{i + 1}/{n}] {label(item)} done in {now - start:.1f} s{left}{nxt}"
            if bar is not None:
                bar.write(line, file=stream)
                bar.update(1)
            else:
                print(line, file=stream, flush=True)
    finally:
        if bar is not None:
            bar.close()


@contextlib.contextmanager
def steps(desc: str, *, unit: str = "step", enabled: bool = True, stream=None,
          log_every: float = LOG_EVERY_SECONDS) -> Iterator[Callable[[int, int, str], None]]:
    """A callback ``report(done, total, label)`` for a computation that counts its own units.

    On a terminal: a tqdm bar over ``total`` units with the elapsed time and the time left, the
    last finished unit's ``label`` beside it.  In a log: ``desc [done/total] label, 12 s so far,
    about 30 s left``, at most every ``log_every`` seconds and always for the last unit (the time
    left is the mean time per unit so far times the units left).
    """
    if not enabled or _SILENT.get():
        yield lambda done, total, label: None
        return
    stream = sys.stderr if stream is None else stream
    start = time.perf_counter()
    state = {"bar": None, "logged": start}

    def report(done: int, total: int, label: str) -> None:
        now = time.perf_counter()
        if is_tty(stream):
            bar = state["bar"]
            if bar is None:
                from tqdm import tqdm

                bar = state["bar"] = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False,
                                          dynamic_ncols=True)
            bar.total = total
            bar.set_postfix_str(label, refresh=False)
            bar.update(done - bar.n)
            bar.refresh()  # units are coarse (a layer's map, a spectral norm): redraw each one
        elif done >= total or now - state["logged"] >= log_every:
            state["logged"] = now
            elapsed = now - start
            left = elapsed / done * (total - done) if done else float("nan")
            print(f"{desc} [{done}/{total}] {label}, {elapsed:.0f} s so far, about {left:.0f} s left",
                  file=stream, flush=True)

    try:
        yield report
    finally:
        if state["bar"] is not None:
            state["bar"].close()
