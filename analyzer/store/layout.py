"""Where a fleet dataset's samples live: ``date=YYYY-MM-DD/host_key=<host>`` partition folders with host
names made safe for paths, and the epoch-ms / ISO 8601 times of the manifest (docs/formulas.md#fleet-ingest).

The folder key is ``host_key``, not ``host``: every file holds the true ``host`` column, and a
``host=`` key beside it made ``pandas.read_parquet(DATASET)`` fail (Arrow cannot merge the file's
string column with the inferred partition column) and, where a long name is shortened to a digest,
would replace the true host. Datasets written before keep their ``host=`` folders (:func:`host_key_of`):
rooftop reads them as before; ``pandas.read_parquet(DATASET, partitioning=None)`` opens them."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from hashlib import sha1
from urllib.parse import quote

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # hive convention for null
MAX_PARTITION_CHARS = 120
MS_PER_DAY = 86_400_000


def partition_value(value: str | None) -> str:
    """A host (or any label) as a safe path segment: percent-encoded, never ``.``/``..``, bounded.

    >>> partition_value("../../etc"), partition_value("a/b"), partition_value(None)
    ('%2E%2E%2F%2E%2E%2Fetc', 'a%2Fb', '__HIVE_DEFAULT_PARTITION__')
    """
    if value is None or value == "":
        return NULL_PARTITION
    safe = quote(value, safe="-_")  # quote() keeps letters, digits, "-", "_"; "." and "~" encoded below
    safe = safe.replace(".", "%2E").replace("~", "%7E")
    if safe.startswith("_"):
        safe = "%5F" + safe[1:]
    if len(safe) > MAX_PARTITION_CHARS:
        digest = sha1(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        head = safe[:80]
        cut = head.rfind("%", len(head) - 2)
        head = head[:cut] if cut >= 0 else head
        safe = f"{head}-{digest}"
    return safe


def day_of(ms: int) -> str:
    """The UTC day (``YYYY-MM-DD``) of an epoch-ms time."""
    return datetime.fromtimestamp(ms // MS_PER_DAY * 86_400, tz=timezone.utc).strftime("%Y-%m-%d")


HOST_KEY = "host_key"  # the partition folder key of a host (never ``host``: the files' column)
LEGACY_HOST_KEY = "host"  # datasets written before: kept, never mixed with HOST_KEY
HOST_KEYS = (HOST_KEY, LEGACY_HOST_KEY)


def partition_dir(day: str, host: str | None, key: str = HOST_KEY) -> str:
    """The dataset-relative folder of a day and host."""
    return f"date={day}/{key}={partition_value(host)}"


def host_dir(name: str) -> str | None:
    """The path-safe host of a partition folder name (``host_key=…``, or ``host=…`` in a dataset
    written before), None for any other name."""
    for key in HOST_KEYS:
        if name.startswith(key + "="):
            return name[len(key) + 1:]
    return None


def host_key_of(root: os.PathLike[str] | str) -> str:
    """The host folder key a dataset already uses (:data:`LEGACY_HOST_KEY` where its folders are
    ``host=``), so one dataset never holds both; :data:`HOST_KEY` for a new or empty one."""
    try:
        dates = sorted(e.name for e in os.scandir(root) if e.name.startswith("date=") and e.is_dir())
    except OSError:
        return HOST_KEY
    for date in dates:
        try:
            names = [e.name for e in os.scandir(os.path.join(root, date))]
        except OSError:
            continue
        for name in names:
            for key in HOST_KEYS:
                if name.startswith(key + "="):
                    return key
    return HOST_KEY


_DATE_RE = re.compile(r"(?:^|/)date=(\d{4}-\d{2}-\d{2})/")


def file_date(relpath: str) -> str | None:
    """The ``date=`` partition of a dataset-relative file path."""
    m = _DATE_RE.search(relpath)
    return m.group(1) if m else None


def iso_ms(ms: int | None) -> str | None:
    """Epoch ms as ISO 8601 UTC with milliseconds and ``Z`` (None stays None)."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def parse_iso(value: str | None) -> datetime | None:
    """An ISO 8601 time (``Z`` accepted); None for None or empty."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
