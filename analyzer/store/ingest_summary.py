"""What one ``rooftop ingest`` run did, and its summary as printed lines (docs/contract.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooftop.errors import InputError


@dataclass
class IngestSummary:
    """What one ``ingest`` run did."""

    dataset: Path
    ingested: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unusable: list[InputError] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)  # earlier bytes changed: ingested as new files
    regrown: list[str] = field(default_factory=list)  # grew, format not appendable: ingested whole again
    recut: list[str] = field(default_factory=list)  # grew after an unterminated stored line: ingested as new
    recompressed: list[str] = field(default_factory=list)  # a compressed file grew: ingested whole as new
    held_back: list[str] = field(default_factory=list)  # an unterminated last line was not ingested
    waiting: list[str] = field(default_factory=list)  # skipped: no complete line beyond the stored ones
    rotated: list[str] = field(default_factory=list)  # a rotated copy of a stored version: its tail appended
    repaired: list[str] = field(default_factory=list)  # entries dropped by --repair (partitions gone)
    lost: list[str] = field(default_factory=list)  # repaired entries whose input is gone too
    manifest_notes: list[str] = field(default_factory=list)  # repair: what was done with an invalid manifest
    orphans_removed: int = 0
    seconds: float = 0.0
    pulled: list[str] = field(default_factory=list)  # what each Prometheus server gave (one line each)

    @property
    def rows(self) -> int:
        return sum(int(e["records"]) for e in self.ingested)

    @property
    def files(self) -> int:
        return len({f for e in self.ingested for f in e["files"]})  # small inputs share files

    @property
    def appended(self) -> list[dict[str, Any]]:
        return [e for e in self.ingested if e.get("kind") == "append"]

    def unusable_lines(self, verbose: bool = False) -> list[str]:
        """The inputs not ingested, one line per reason: those in no format ``ingest`` reads first,
        naming the formats it does read (GPU metric streams, not every format rooftop knows); each
        other reason with its hint once, then its inputs. The first :data:`UNUSABLE_SHOWN` reasons
        and names of each (``verbose``: all of them)."""
        groups: dict[str, list[InputError]] = {}
        for exc in self.unusable:
            key = "" if _not_a_stream(exc) else f"{exc.reason} ({exc.hint})" if exc.hint else exc.reason
            groups.setdefault(key, []).append(exc)
        limit = len(self.unusable) if verbose else UNUSABLE_SHOWN
        ordered = sorted(groups.items(), key=lambda kv: kv[0] != "")  # stable: first seen first
        lines = []
        for key, excs in ordered[:limit]:
            where = [f"{e.path}:{e.line}" if e.line else e.path for e in excs]
            names = ", ".join(where[:limit]) + (" ..." if len(where) > limit else "")
            if key == "":
                lines.append(f"unusable: {len(excs)} input(s) in no format ingest reads (it reads "
                             f"{stream_formats()}; `rooftop analyze` reads profiles and traces): {names}")
            elif len(excs) == 1:
                lines.append(f"unusable: {names}: {key}")
            else:
                lines.append(f"unusable: {len(excs)} input(s): {key}: {names}")
        if len(ordered) > limit:
            lines.append(f"unusable: ... and {sum(len(g) for _, g in ordered[limit:])} more input(s) "
                         f"for {len(ordered) - limit} other reason(s) (-v lists them)")
        elif any(len(g) > limit for g in groups.values()):
            lines.append("unusable: -v lists every input")
        return lines

    def describe(self) -> str:
        """The summary as text, one line per :meth:`lines` entry."""
        return "\n".join(self.lines())

    def lines(self, verbose: bool = False) -> list[str]:
        """The summary, one entry per printed line (a file name with a newline stays in its line:
        the command line escapes each entry, docs/contract.md); ``verbose``: every unusable input."""
        rej = sum(int(e["rejected"]) for e in self.ingested)
        miss = sum(int(e["missing"]) for e in self.ingested)
        lines = [
            *self.pulled,
            f"ingested {len(self.ingested)} input(s) into {self.dataset}: {self.rows:,} samples "
            f"({miss:,} missing, {rej:,} rejected) in {self.files} partition file(s), "
            f"{self.seconds:.1f} s"
        ]
        if self.appended:
            lines.append(f"{len(self.appended)} of them grew since their last ingest: only the samples "
                         "after the stored ones were added")
        if self.rotated:
            lines.append(f"{len(self.rotated)} input(s) are rotated copies (logrotate) of a stored version: only "
                         "the samples after the stored ones were added: " + _first(self.rotated))
        lines += [f"repair: {note}" for note in self.manifest_notes]
        if self.repaired:
            lines.append(f"repair: dropped {len(self.repaired)} entr(ies) whose partition files were missing or "
                         "unreadable; their inputs were ingested again where they still exist: "
                         + _first(self.repaired))
        if self.lost:
            lines.append(f"repair: {len(self.lost)} input(s) are gone too: their samples are no longer in the "
                         "dataset: " + _first(self.lost))
        if self.rewritten:
            lines.append(f"{len(self.rewritten)} input(s) changed in their earlier bytes since their last "
                         "ingest (rotated or rewritten): ingested as new files, earlier samples kept: "
                         + _first(self.rewritten))
        if self.recut:
            lines.append(f"{len(self.recut)} input(s) grew since an ingest that stored their unterminated "
                         "last line (--finished, UTF-16, or an older rooftop): ingested as new files, earlier samples "
                         "kept: " + _first(self.recut))
        if self.regrown:
            lines.append(f"{len(self.regrown)} input(s) grew since their last ingest but their format is not "
                         "read in line order: ingested whole again, so their earlier samples are stored twice: "
                         + _first(self.regrown))
        if self.recompressed:
            lines.append(f"{len(self.recompressed)} compressed input(s) grew since their last ingest: a compressed "
                         "file is not appended to, so each was ingested whole as a new file and its earlier samples "
                         "are stored twice: " + _first(self.recompressed))
        same = len(self.skipped) - len(self.waiting)
        if same:
            lines.append(f"skipped {same} input(s) already in the dataset (same SHA-256)")
        if self.waiting:
            lines.append(f"skipped {len(self.waiting)} input(s) with no complete new lines (only a line still "
                         "being written)")
        if self.held_back:
            lines.append(f"held back the unterminated last line of {len(self.held_back)} input(s) (a line still "
                         "being written): it is ingested once its newline arrives; pass --finished if the files "
                         "are complete: " + _first(self.held_back))
        lines += self.unusable_lines(verbose)
        if self.orphans_removed:
            lines.append(f"removed {self.orphans_removed} file(s) left by an interrupted ingest")
        return lines


UNUSABLE_SHOWN = 5
NOT_A_STREAM = "not a DCGM metric stream"


def stream_formats() -> str:
    """The formats ``ingest`` stores: GPU metric streams (docs/contract.md#ingest)."""
    from rooftop.parsers.formats import FORMATS

    return ", ".join(dict.fromkeys(f.label for f in FORMATS.values() if f.kind == "samples"))


def _not_a_stream(exc: InputError) -> bool:
    from rooftop.parsers import NOT_A_FORMAT

    return exc.reason == NOT_A_FORMAT or exc.reason.endswith(NOT_A_STREAM)


def _first(paths: list[str], n: int = 5) -> str:
    return ", ".join(paths[:n]) + (" ..." if len(paths) > n else "")
