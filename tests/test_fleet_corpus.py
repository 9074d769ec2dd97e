"""``ingest`` + ``fleet`` over the whole corpus DCGM folder (issue 24 "Done when"): no internal
error, the GPU count equals the distinct physical GPUs of the stored samples, the GPU-hours equal the
covered sample time, both recomputed here by a plain loop over the samples (docs/formulas.md#windows
"Covered time", "GPU identity", "MIG"; docs/formulas.md#fleet)."""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

import pandas as pd
from click.testing import CliRunner

from rooftop.analyzer.windows.fields import WINDOW_FIELDS
from rooftop.cli.commands import main
from tests.conftest import corpus_dir, manifest

WINDOW_MS = 60_000
UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
NO_CLOCK = {"dmon"}  # streams without timestamps: ingested with --host and --start


def _run(*args: Any, unusable_ok: bool = False) -> None:
    """One CLI run; ``unusable_ok``: a file refused with a clear error (exit 2) is fine, never a crash."""
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert "internal error" not in res.output.lower() and "Traceback" not in res.output
    assert res.exit_code == 0 or (unusable_ok and res.exit_code == 2 and isinstance(res.exception, SystemExit)), \
        res.output


def _ingest_corpus(d: Path, ds: Path) -> None:
    rows = {r["file"]: r for r in manifest("dcgm")}
    timed, untimed = [], []
    for p in sorted(d.iterdir()):
        fmt = rows.get(p.name, {}).get("format", "")
        if fmt in ("prometheus-text", "prom-json", "nvidia-smi", "dmon"):
            (untimed if fmt in NO_CLOCK or p.name.endswith(".nvsmi_dmon.txt") else timed).append(p)
    _run("ingest", *timed, "--to", ds, "-q", "--finished")
    for i, p in enumerate(untimed):
        _run("ingest", p, "--to", ds, "-q", "--finished", "--host", f"dmon-host-{i}",
             "--start", "2025-06-01T00:00:00Z", unusable_ok=True)


def _physical(r: dict[str, Any], one_uuid: dict[str, str]) -> str:
    hg = f"{r['host'] or '(none)'}/{r['gpu'] or '-'}"
    u = r["uuid"]
    return u if isinstance(u, str) and UUID.match(u) else one_uuid.get(hg, hg)


def _reference(samples: pd.DataFrame) -> tuple[int, float]:
    """(distinct physical GPUs, covered GPU-seconds) by a plain loop over windowed samples."""
    rows = [r for r in samples.to_dict("records") if r["field_id"] in WINDOW_FIELDS and isinstance(r["gpu"], str)]
    pairs: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if isinstance(r["uuid"], str) and UUID.match(r["uuid"]):
            pairs[f"{r['host'] or '(none)'}/{r['gpu']}"].add(r["uuid"])
    one_uuid = {k: next(iter(v)) for k, v in pairs.items() if len(v) == 1}
    gpus = {_physical(r, one_uuid) for r in rows}
    # windows per series (host, gpu, uuid, model, mig): first, last, samples of its most-sampled field
    win: dict[tuple[Any, ...], dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        key = tuple(r[c] if isinstance(r[c], str) else None for c in ("host", "gpu", "uuid", "model", "mig"))
        t = int(r["timestamp"].value // 1_000_000)
        w = win[key].setdefault(t // WINDOW_MS, {"first": t, "last": t, "n": defaultdict(int)})
        w["first"], w["last"] = min(w["first"], t), max(w["last"], t)
        w["n"][r["field_id"]] += 1
    covered: dict[tuple[Any, ...], float] = {}
    for key, ws in win.items():
        order = sorted(ws)
        inner = [(ws[i]["last"] - ws[i]["first"]) / (max(ws[i]["n"].values()) - 1)
                 for i in order if max(ws[i]["n"].values()) >= 2]
        inner = [x for x in inner if x > 0]
        ref = max(statistics.median(inner), WINDOW_MS) if inner else WINDOW_MS
        steps = [ws[b]["first"] - ws[a]["last"] for a, b in pairwise(order)]
        cands = inner + [s for s in steps if 0 < s <= 5 * ref]
        interval = statistics.median(cands) if cands else None
        total = 0.0
        for i in order:
            f, last = ws[i]["first"], ws[i]["last"]
            # no measurable interval: the samples' own span (0 s for one instant), never the window
            total += ((min(last + interval, f + WINDOW_MS) if interval is not None else last) - f) / 1000.0
        covered[key] = total
    # a MIG GPU counted once: instances by compute slices (unknown profiles: equal parts); here no
    # MIG GPU of the corpus carries a parent series beside its instances with time covered
    profile = {}
    for r in rows:
        if isinstance(r["mig"], str):
            key = tuple(r[c] if isinstance(r[c], str) else None for c in ("host", "gpu", "uuid", "model", "mig"))
            profile[key] = r["mig_profile"]
    seconds = 0.0
    for key, s in covered.items():
        if key[4] is None or not s:
            seconds += s
            continue
        m = re.match(r"^(\d+)g\.", profile.get(key) or "")
        n = 4 if key[3] and "A30" in key[3].upper() else 7
        seconds += s * (int(m.group(1)) / n if m else 1.0)
    return len(gpus), seconds


def test_ingest_and_fleet_over_the_whole_corpus_folder(tmp_path: Path) -> None:
    d = corpus_dir("dcgm")
    ds = tmp_path / "ds"
    _ingest_corpus(d, ds)
    out = tmp_path / "f.json"
    _run("fleet", ds, "--since", "2000-01-01", "--until", "2100-01-01", "--by", "host", "--json", out,
         "--html", tmp_path / "f.html")
    doc = json.loads(out.read_text())
    samples = pd.read_parquet(ds, partitioning=None)  # folder keys off: host is a file column
    gpus, seconds = _reference(samples)
    assert doc["fleet"]["gpus"] == gpus
    assert sum(g["gpus"] for g in doc["groups"]) == gpus  # one count: by-host table = header
    assert abs(doc["fleet"]["gpu_hours"] * 3600 - seconds) < 1e-6 * max(1.0, seconds)
    assert gpus >= 40  # the corpus holds 16 H100 (aicr), 8 + 8 H800 (dmon, nvidia-smi dmon), ...
