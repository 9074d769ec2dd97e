"""A command's library imported lazily: ``rooftop --help`` imports only click (bench/cli_startup.py)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_imports() -> Iterator[None]:
    """Import a command's library (pandas, NumPy, pyarrow: some 100,000 objects) with the cyclic
    garbage collector paused, then ``gc.freeze()`` them: later collections no longer walk the
    imported modules. Cuts a one-kernel ``analyze`` by ~0.15 s CPU (bench/NOTES.md, command-line
    start-up); collection of what the command itself allocates is unchanged. Freezes only in the
    call that first imports pandas (a process running several commands, as the tests do, freezes
    once)."""
    fresh = "pandas" not in sys.modules
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if fresh and "pandas" in sys.modules:
            gc.freeze()
        if was:
            gc.enable()
