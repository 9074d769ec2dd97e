"""The window analysis object and the one-call entry point ``analyze_windows``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.analyzer.windows.counters import COUNTER_IDS, counter_lint, difference
from rooftop.analyzer.windows.fields import (
    _KEY_KEEP,
    LABEL_COLUMNS,
    METRICS,
    OPTIONAL_SERIES,
    TIMELINE_RATIOS,
    gpu_key,
)
from rooftop.analyzer.windows.findings import _findings
from rooftop.analyzer.windows.links import link_rows
from rooftop.analyzer.windows.lint import _lint, coverage_lint, no_window_fields_lint
from rooftop.analyzer.windows.reduce import finish_windows, unplaced_lint, without_unplaced
from rooftop.analyzer.windows.rules import classify_windows, window_devices
from rooftop.analyzer.windows.scan import window_partials
from rooftop.analyzer.windows.span import choose_window


@dataclass
class WindowAnalysis:
    windows: pd.DataFrame
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    window: dict[str, Any] = field(default_factory=dict)  # seconds, source (default/option), reason

    def records(self) -> list[dict[str, Any]]:
        """Contract ``windows`` entries (plus extras: uuid, mig, labels, device, evidence, n_samples)."""
        w = self.windows
        if w is None or not len(w):
            return []
        recs: list[dict[str, Any]] = []
        for r in w.to_dict("records"):
            metrics = {m: r[m] for m in METRICS if r.get(m) is not None and np.isfinite(r[m])}
            r = {k: (None if isinstance(v, float) and not np.isfinite(v) and k in _STR_FIELDS else v)
                 for k, v in r.items()}
            rec: dict[str, Any] = {
                "host": r["host"], "gpu": r["gpu"], "model": r["model"],
                "start": _iso(r["start"]), "end": _iso(r["end"]),
                "label": r["label"], "limiter": r["limiter"], "metrics": metrics,
                "est_flops_s": _num(r.get("est_flops_s")), "est_dram_bytes_s": _num(r.get("est_dram_bytes_s")),
                "est_intensity": _num(r.get("est_intensity")), "est_ofu": _num(r.get("est_ofu")),
                "uuid": r.get("uuid"), "pci_bus_id": r.get("pci_bus_id"), "mig": r.get("mig"), "mig_profile": r.get("mig_profile"),
                "namespace": r.get("namespace"), "pod": r.get("pod"), "container": r.get("container"),
                "job": r.get("job"), "device": r.get("device"), "n_samples": int(r["n_samples"]),
                "gpu_key": gpu_key(r["host"], r["gpu"], r.get("mig")),
                "window_s": _num(r.get("window_s")), "covered_s": _num(r.get("covered_s")),
                "interval_s": _num(r.get("interval_s")),
                "evidence": list(r.get("evidence") or []),
            }
            recs.append(rec)
        return recs

    def links(self) -> list[dict[str, Any]]:
        """NVLink / PCIe bytes/s per GPU, link and direction (docs/formulas.md#links)."""
        w = self.windows
        return link_rows(w) if w is not None and len(w) else []

    def timelines(self) -> dict[str, dict[str, list[Any]]]:
        """``{gpu_key: {"t": [iso...], "<metric>": [...], "label": [...]}}`` keyed like the records'
        ``gpu_key``: the four DCGM activity ratios always, and the coarse NVML signals
        (:data:`COARSE_SERIES`: utilisation, power, clocks) and the OFU estimate where the GPU has any."""
        w = self.windows
        out: dict[str, dict[str, list[Any]]] = {}
        if w is None or not len(w):
            return out
        for r in w.to_dict("records"):
            key = gpu_key(r["host"], r["gpu"], r.get("mig"))
            tl = out.setdefault(key, {"t": [], **{m: [] for m in (*TIMELINE_RATIOS, *OPTIONAL_SERIES)},
                                      "label": []})
            tl["t"].append(_iso(r["start"]))
            for m in (*TIMELINE_RATIOS, *OPTIONAL_SERIES):
                tl[m].append(_num(r.get(m)))
            tl["label"].append(r["label"])
        for tl in out.values():
            for m in OPTIONAL_SERIES:
                if all(v is None for v in tl[m]):
                    del tl[m]
        return out


_STR_FIELDS = frozenset({*_KEY_KEEP, *LABEL_COLUMNS, "device", "label", "limiter"})


def _num(x: Any) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _iso(ts: Any) -> str:
    return str(pd.Timestamp(ts).tz_convert("UTC").isoformat()).replace("+00:00", "Z")


def analyze_windows(samples: pa.Table, window_s: float | None = 60.0, device: str | None = None) -> WindowAnalysis:
    """Window, classify and lint one sample table (``SAMPLE_SCHEMA``); empty table -> empty analysis.

    ``window_s`` None: chosen from the capture (:func:`span.choose_window`, docs/formulas.md#windows)."""
    if samples is None or samples.num_rows == 0:
        return WindowAnalysis(windows=pd.DataFrame())
    raw = samples.to_pandas()
    floor = window_s  # the gap rule's floor (docs/formulas.md#counters "Gaps"): the window, as fleet's
    if floor is None and np.isin(raw["field_id"].to_numpy(), COUNTER_IDS).any():
        floor = choose_window(raw)[0]
    diffed = difference(raw, gap_floor_s=floor)  # cumulative counters -> increases per interval
    df = diffed.samples
    if window_s is None:
        window_s, reason = choose_window(df)
        window = {"seconds": window_s, "source": "default", "reason": reason}
    else:
        window = {"seconds": float(window_s), "source": "option", "reason": f"{window_s:g} s, set by --window"}
    wide, unplaced = without_unplaced(finish_windows(window_partials(df, window_s)))
    if not len(wide):
        placed = df[df["gpu"].notna()] if "gpu" in df.columns else df
        return WindowAnalysis(windows=pd.DataFrame(), window=window,
                              lint=unplaced_lint(unplaced) + counter_lint(diffed) + no_window_fields_lint(placed))
    windows = classify_windows(wide, device)
    return WindowAnalysis(windows=windows, devices=window_devices(windows, device),
                          lint=_lint(df, windows, device) + coverage_lint(windows) + unplaced_lint(unplaced)
                          + counter_lint(diffed),
                          findings=_findings(windows), window=window)
