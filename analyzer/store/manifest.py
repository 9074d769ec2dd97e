"""``_manifest.json``, the commit record of a fleet dataset: validated on load, indexed for ingest.

Rules (docs/formulas.md#fleet-ingest):

* **Validation.** A manifest that is not JSON or not the documented shape (top level other than
  ``version`` and an ``inputs`` list, an entry not an object, ``files`` not a list of
  dataset-relative paths, ``format``/``size``/``records`` missing or a count not a non-negative integer,
  ``sha256`` not 64 hex digits, a time that is not ISO 8601) is refused with the entry and key
  named and the fix (``rooftop ingest --repair``), *before* anything is deleted: the orphan sweep
  only ever trusts a validated manifest.
* **Identity.** An input is ``(host, path)``: the ``--host`` it was ingested with (``None``: the
  samples name their host) and its canonical path (symlinks and relative parts resolved). Content
  (size + SHA-256) then tells growth from rewrite. Entries written before identities were recorded
  (no ``host`` key) match any host at the absolute form of their path, so an upgrade re-stores nothing.
* **Index.** Lookups by identity, by ``(host, sha256)`` and by rotation family are dictionary
  lookups (no scan of the entries per input: an ingest of *n* inputs into a manifest of *m* is
  O(n + m), not O(n·m)).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from rooftop.atomic import replace_file
from rooftop.errors import InputError

MANIFEST = "_manifest.json"
MANIFEST_VERSION = 1
REPAIR_HINT = "run `rooftop ingest --repair --to {root}` (re-ingests the inputs whose partitions are gone)"

Identity = tuple[str | None, str]
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_COUNTS = ("size", "records", "missing", "rejected")
_REQUIRED = ("size", "records")  # every manifest ever written has them (ingest reads entry["size"])
# logrotate names of a rotated copy (`rotate N`, `dateext`): dmon.log.1, dmon.log.2.gz, dmon.log-20261123
_ROTATED = re.compile(r"(?:\.\d{1,3}|-\d{8}(?:\d{2})?)+(?:\.(?:gz|xz|bz2|zst|lz4))?\Z")


def canonical(path: str | Path) -> str:
    """The canonical form of an input path: absolute, symlinks and ``..`` resolved."""
    return os.path.realpath(path)


def rotation_base(path: str) -> tuple[str, str]:
    """``(folder, name without logrotate suffixes)``: the rotation family of a log file.

    >>> rotation_base("/var/log/dmon.log.1"), rotation_base("/l/dmon.log-20261123.gz")
    (('/var/log', 'dmon.log'), ('/l', 'dmon.log'))
    """
    folder, name = os.path.split(path)
    base = _ROTATED.sub("", name)
    return folder, base or name


def entry_identity(entry: dict[str, Any]) -> Identity:
    host = entry.get("host")
    return (host if isinstance(host, str) else None, os.path.abspath(entry["path"]))


def repair_hint(root: Path) -> str:
    return (f"run `rooftop ingest --repair --to {root}`: it keeps the valid entries, ingests again the "
            "inputs of the others that still exist and names those that are gone (nothing was changed or "
            "deleted)")


def _bad(path: Path, where: str, what: str) -> InputError:
    return InputError(str(path), f"is not a valid manifest: {where} {what}", repair_hint(path.parent))


def check_top(path: Path, data: Any) -> list[Any]:
    """The ``inputs`` of a parsed manifest whose top level is the documented one (``version`` and
    ``inputs``, nothing else: a report written over the manifest is not taken for an empty one)."""
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), list):
        raise _bad(path, "the top level", "is not an object with an `inputs` list")
    extra = sorted(set(data) - {"version", "inputs"})
    if extra:
        raise _bad(path, "the top level", f"holds keys a manifest never has ({', '.join(map(repr, extra[:3]))}: "
                   "another file written over it?)")
    if data.get("version") != MANIFEST_VERSION:
        raise _bad(path, "`version`", f"is {data.get('version')!r}, not {MANIFEST_VERSION}")
    inputs: list[Any] = data["inputs"]
    return inputs


def check_entry(path: Path, i: int, e: Any) -> dict[str, Any]:
    """One manifest entry, checked (:class:`InputError` naming the entry and key)."""
    where = f"inputs[{i}]"
    if not isinstance(e, dict):
        raise _bad(path, where, "is not an object")
    if not isinstance(e.get("path"), str) or not e["path"]:
        raise _bad(path, where, "has no `path` string")
    if not isinstance(e.get("sha256"), str) or not _HEX64.match(e["sha256"]):
        raise _bad(path, where, "has no `sha256` of 64 hex digits")
    for key in _COUNTS:
        if key not in e and key in _REQUIRED:
            raise _bad(path, f"{where}.{key}", "is missing")
        v = e.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _bad(path, f"{where}.{key}", "is not a non-negative integer")
    files = e.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) and _relative(f) for f in files):
        raise _bad(path, f"{where}.files", "is not a list of dataset-relative file paths")
    if not isinstance(e.get("format"), str):
        raise _bad(path, f"{where}.format", "is not a string")
    for key in ("host", "prefix_sha256", "kind", "time_origin", "start", "end", "ingested_at"):
        if e.get(key) is not None and not isinstance(e[key], str):
            raise _bad(path, f"{where}.{key}", "is not a string")
    examples = e.get("rejected_examples", [])
    if not isinstance(examples, list) or not all(
            isinstance(x, dict) and isinstance(x.get("path"), str) and isinstance(x.get("reason"), str)
            and (x.get("line") is None or (isinstance(x["line"], int) and not isinstance(x["line"], bool)))
            for x in examples):
        raise _bad(path, f"{where}.rejected_examples", "is not a list of {path, line, reason} objects")
    for key in ("time_origin", "start", "end", "ingested_at"):
        if e.get(key):
            try:
                datetime.fromisoformat(str(e[key]).replace("Z", "+00:00"))
            except ValueError:
                raise _bad(path, f"{where}.{key}", f"is {str(e[key])[:40]!r}, not an ISO 8601 time") from None
    pi = e.get("prefix_input")
    if pi is not None and not (isinstance(pi, list) and len(pi) == 2 and isinstance(pi[1], str)
                               and (pi[0] is None or isinstance(pi[0], str))):
        raise _bad(path, f"{where}.prefix_input", "is not [host, path]")
    return e


def validate(path: Path, data: Any) -> list[dict[str, Any]]:
    """The entries of a parsed manifest, or :class:`InputError` naming the first bad entry/key."""
    return [check_entry(path, i, e) for i, e in enumerate(check_top(path, data))]


def _relative(f: str) -> bool:
    p = PurePosixPath(f)
    return bool(f) and not p.is_absolute() and ".." not in p.parts and "\\" not in f


@dataclass
class Manifest:
    """``_manifest.json``: one entry per ingested input (identity, size, sha256, accounting, files).

    ``entries`` may be appended to directly; the indexes catch up on the next lookup."""

    root: Path
    entries: list[dict[str, Any]] = field(default_factory=list)
    _n: int = 0  # entries indexed so far
    _latest: dict[Identity, int] = field(default_factory=dict)
    _by_host_sha: dict[tuple[str | None, str], int] = field(default_factory=dict)
    _by_id_sha: dict[tuple[Identity, str], int] = field(default_factory=dict)
    _family: dict[tuple[str | None, str, str], list[int]] = field(default_factory=dict)
    _legacy: dict[str, int] = field(default_factory=dict)  # entries without a `host` key, by path
    _legacy_sha: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, root: Path, *, must_exist: bool = False) -> Manifest:
        path = root / MANIFEST
        if not path.exists():
            if must_exist:
                raise InputError(str(root), "is not a rooftop dataset (no _manifest.json)",
                                 "create it with `rooftop ingest INPUT... --to DATASET`")
            return cls(root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise InputError(str(path), f"is not a readable manifest ({str(exc)[:200]})",
                             repair_hint(root)) from exc
        return cls(root, validate(path, data))

    def save(self) -> None:
        """Replace ``_manifest.json`` atomically, keeping its mode (:func:`rooftop.atomic.replace_file`)."""
        payload = {"version": MANIFEST_VERSION, "inputs": self.entries}
        replace_file(self.root / MANIFEST, json.dumps(payload, indent=1, sort_keys=True).encode("utf-8"))

    def replace_entries(self, entries: list[dict[str, Any]]) -> None:
        """Set the entries (the indexes are rebuilt)."""
        self.entries = entries
        self._n = len(entries) + 1  # forces a rebuild
        self._sync()

    def _sync(self) -> None:
        if self._n > len(self.entries):  # entries were removed: rebuild
            self._n = 0
            self._latest.clear()
            self._by_host_sha.clear()
            self._by_id_sha.clear()
            self._family.clear()
            self._legacy.clear()
            self._legacy_sha.clear()
        for i in range(self._n, len(self.entries)):
            e = self.entries[i]
            ident = entry_identity(e)
            self._latest[ident] = i
            self._by_host_sha.setdefault((ident[0], e["sha256"]), i)
            self._by_id_sha[(ident, e["sha256"])] = i
            folder, base = rotation_base(ident[1])
            self._family.setdefault((ident[0], folder, base), []).append(i)
            if "host" not in e:  # written before identities: may have been ingested with any --host
                self._legacy[ident[1]] = i
                self._legacy_sha.add(e["sha256"])
        self._n = len(self.entries)

    def sha256s(self) -> set[str]:
        return {e["sha256"] for e in self.entries}

    def holds(self, host: str | None, sha: str) -> bool:
        """Whether an input of ``host`` with exactly these bytes is stored (any path)."""
        self._sync()
        return (host, sha) in self._by_host_sha or sha in self._legacy_sha

    def latest(self, ident: Identity) -> dict[str, Any] | None:
        """The last entry ingested for the identity ``(host, canonical path)``, or None."""
        self._sync()
        i = self._latest.get(ident)
        if i is None:
            i = self._legacy.get(ident[1])
        return None if i is None else self.entries[i]

    def latest_for(self, path: Path, host: str | None = None) -> dict[str, Any] | None:
        return self.latest((host, canonical(path)))

    def rotation_candidates(self, ident: Identity, max_size: int, limit: int = 64) -> list[dict[str, Any]]:
        """Entries of other inputs of the same host and rotation family (``dmon.log`` for
        ``dmon.log.1``) of at most ``max_size`` bytes, the most recent ``limit`` first: the stored
        versions a rotated copy may begin with (the family's current file may have restarted since)."""
        self._sync()
        folder, base = rotation_base(ident[1])
        out: list[dict[str, Any]] = []
        for i in reversed(self._family.get((ident[0], folder, base), [])):
            e = self.entries[i]
            if entry_identity(e) != ident and int(e["size"]) <= max_size:
                out.append(e)
                if len(out) >= limit:
                    break
        return out

    def chain(self, entry: dict[str, Any]) -> list[dict[str, Any]]:
        """``entry`` and the entries it appends to (``prefix_sha256`` links, within ``prefix_input``
        or else its own identity), oldest first: together they hold every sample of the file
        version ``entry`` describes."""
        self._sync()
        out = [entry]
        while out[-1].get("kind") == "append" and len(out) <= len(self.entries):
            last = out[-1]
            ident = entry_identity(last)
            pi = last.get("prefix_input")
            if isinstance(pi, list) and len(pi) == 2 and isinstance(pi[1], str):
                ident = (pi[0] if isinstance(pi[0], str) else None, os.path.abspath(pi[1]))
            i = self._by_id_sha.get((ident, str(last.get("prefix_sha256"))))
            if i is None:
                i = self._by_host_sha.get((ident[0], str(last.get("prefix_sha256"))))
            if i is None:
                break
            out.append(self.entries[i])
        return out[::-1]

    def files(self) -> list[str]:
        """Dataset-relative partition files, in ingest order (the scan order of every engine), each
        once (small inputs of one commit group share files: analyzer/store/batch.py)."""
        return list(dict.fromkeys(f for e in self.entries for f in e.get("files", [])))
