"""The errors a user can act on, defined once at the bottom of the package (it imports no stage).

The command line's error boundary (``rooftop.cli``) prints each as its one line and
exits 2 (docs/contract.md#exit-codes); anything else is an internal error.
"""

from __future__ import annotations

__all__ = ["InputError", "OutputError", "SchemaError"]


class InputError(Exception):
    """An input that cannot be used at all: one line naming the file, what is wrong, what to do."""

    def __init__(self, path: str, reason: str, hint: str = "", line: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.hint = hint
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        msg = f"{where}: {self.reason}"
        return f"{msg} ({self.hint})" if self.hint else msg


class OutputError(Exception):
    """An output that cannot be written (missing folder, no permission, disk full)."""


class SchemaError(ValueError):
    """A table or document handed from one stage to the next does not match its documented schema.

    ``SchemaError(message)``: a canonical table (``parsers/model.py``); ``SchemaError(message,
    path=...)``: the analysis document, ``path`` naming the bad key (``$.kernels[3].label``;
    the types are in ``analyzer/schema/``)."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        if path is not None:
            message = f"analysis document {path}: {message} (types in rooftop/analyzer/schema/)"
        super().__init__(message)
