"""Progress as a callback: the library reports how far it got through a list of items, and the
caller (the command line draws a bar) decides how to show it. The library imports no UI."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

# progress(items, label) -> a context manager yielding the items to iterate (e.g. click.progressbar)
Progress = Callable[[Sequence[Any], str], AbstractContextManager[Iterable[Any]]]
ProgressArg = Progress | bool | None


def track(items: Sequence[T], progress: ProgressArg, label: str) -> AbstractContextManager[Iterable[T]]:
    """``with track(paths, progress, "parsing") as it: for p in it: ...``; no callback (or a
    bare ``True``/``False`` from older callers) or fewer than two items: the items as they are."""
    if not callable(progress) or len(items) < 2:
        return nullcontext(items)
    return progress(items, label)


BAR_MIN_BYTES = 4 << 20  # an input this large shows a bar inside it (its bytes) and over the stages after


def bar_bytes(path: str | os.PathLike[str]) -> int:
    """The size of ``path`` when it is at least :data:`BAR_MIN_BYTES` (a bar is worth showing), else 0."""
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return 0
    return size if size >= BAR_MIN_BYTES else 0


# While one input is parsed, where its reader is in the file (bytes), for a bar inside one large
# input: set by :func:`reading`, read by ``parsers.source.Source.open_bytes``.
_POSITION: ContextVar[Callable[[int], None] | None] = ContextVar("rooftop_read_position", default=None)


def position_report() -> Callable[[int], None] | None:
    """The callback a reader reports its byte position to, or None (nobody shows it)."""
    return _POSITION.get()


@contextmanager
def reading(progress: ProgressArg, label: str, total: int) -> Iterator[None]:
    """Around the parse of one input of ``total`` bytes: its read position reported to the byte bar
    ``progress.bytes(label, total)`` opens (a context manager yielding ``advance(position)``), where
    the callback has one; otherwise nothing."""
    open_bar = getattr(progress, "bytes", None)
    if not callable(open_bar) or total <= 0:
        yield
        return
    with open_bar(label, total) as advance:
        token = _POSITION.set(advance)
        try:
            yield
        finally:
            _POSITION.reset(token)


@contextmanager
def stages(progress: ProgressArg, names: Sequence[str], label: str) -> Iterator[Callable[[], None]]:
    """The named stages of one long job as a bar over them: ``with stages(p, [...], "analysing") as
    step:`` then ``step()`` as each next stage starts (the bar shows its name)."""
    with track(names, progress, label) as it:
        steps = iter(it)
        next(steps, None)

        def step() -> None:
            next(steps, None)

        yield step
        for _ in steps:
            pass
