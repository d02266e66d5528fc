"""The one progress policy of the command line: name the item being worked on.

On a terminal (stderr is a TTY) a tqdm bar shows the current item and nested bars stack;
in a log (stderr is a file or pipe) no bar and no escape code is written, only one plain
line per finished item: ``check claims [3/18] 2.1 done in 4.2 s; next 2.2``.  Both modes
print that line, so a log and a terminal tell the same story.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")


def is_tty(stream=None) -> bool:
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def track(items: Iterable[T], desc: str, *, unit: str = "item", label: Callable[[T], str] = str,
          enabled: bool = True, stream=None) -> Iterator[T]:
    """Yield ``items``, reporting each one by ``label(item)`` under the heading ``desc``."""
    items = list(items)
    if not enabled:
        yield from items
        return
    stream = sys.stderr if stream is None else stream
    tty = is_tty(stream)
    bar = None
    if tty:
        from tqdm import tqdm

        bar = tqdm(total=len(items), desc=desc, unit=unit, file=stream, leave=False, dynamic_ncols=True)
    n = len(items)
    try:
        for i, item in enumerate(items):
            if bar is not None:
                bar.set_postfix_str(label(item), refresh=True)
            start = time.perf_counter()
            yield item
            nxt = f"; next {label(items[i + 1])}" if i + 1 < n else ""
            line = f"{desc} [{i + 1}/{n}] {label(item)} done in {time.perf_counter() - start:.1f} s{nxt}"
            if bar is not None:
                bar.write(line, file=stream)
                bar.update(1)
            else:
                print(line, file=stream, flush=True)
    finally:
        if bar is not None:
            bar.close()
