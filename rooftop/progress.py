"""Progress as a callback: the library reports how far it got through a list of items, and the
caller (the command line draws a bar) decides how to show it. The library imports no UI."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
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
