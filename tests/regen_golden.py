"""Hand-built report documents for the report tests, and the golden-file regenerator.

``python tests/regen_golden.py`` (or ``make golden``) rewrites ``tests/golden/sample.md`` and
``tests/golden/sample.json`` from :func:`sample_document`. Run it only after an intended change
to the Markdown/JSON output, and review the diff before committing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rooftop.analyzer.view import document_view

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"

HOSTILE_NAMES = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(1)</script>",
    "\"quoted' name\" & <b>bold</b>",
    "{{7*7}} ${7*7} | `tick` [link](http://x) \u2028line\u2029sep\nnewline",
    "void long_kernel<" + "A" * 6000 + ">(int)",
]


def empty_document(**keys: Any) -> dict[str, Any]:
    """The smallest valid analyze document (every required key, nothing in it), with ``keys`` set."""
    return {"schema_version": 1, "tool": {"name": "rooftop", "version": "0.1.0"}, "kind": "analyze",
            "run": {"command": "", "created": "1970-01-01T00:00:00Z", "input_sha256": {}}, "inputs": [],
            "rejected": [], "devices": [], "kernels": [], "findings": [], "windows": [], "lint": [], **keys}


def _kernel(i: int, name: str, family: str, *, dur: float, flops: float | None, dram: float | None,
            l2: float | None, l1: float | None, attainable: float | None, label: str, limiter: str,
            evidence: list[str], rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    def ai(b: float | None) -> float | None:
        return flops / b if (flops is not None and b) else None

    return {
        "index": i, "input": "run.ncu.csv", "id": str(i), "name": name, "family": family,
        "device": "NVIDIA H100 80GB HBM3", "duration_s": dur, "grid": 132, "block": 256,
        "sol": {"compute_pct": 30.0, "memory_pct": 85.0},
        "flops": flops, "flops_by_class": {"fp64": None, "fp32": flops, "fp16": None, "tensor": None},
        "bytes": {"l1": l1, "l2": l2, "dram": dram},
        "intensity": {"l1": ai(l1), "l2": ai(l2), "dram": ai(dram)},
        "attainable_flops_s": attainable,
        "achieved_flops_s": (flops / dur) if flops is not None else None,
        "label": label, "limiter": limiter, "evidence": evidence, "ncu_rules": rules or [],
    }


def sample_document() -> dict[str, Any]:
    """A small analyze document: 7 launches in 6 families (5 hostile names), 2 GPUs of DCGM windows."""
    kernels = [
        _kernel(0, "void add_kernel<float>(float*, const float*, int)", "add_kernel (grid 132, block 256)",
                dur=4e-3, flops=1e9, dram=1.2e10, l2=1.3e10, l1=1.5e10, attainable=2.8e11,
                label="memory-bound", limiter="dram", evidence=["DRAM throughput 85% of peak"]),
        _kernel(1, "void add_kernel<float>(float*, const float*, int)", "add_kernel (grid 132, block 256)",
                dur=4e-3, flops=1e9, dram=1.2e10, l2=1.3e10, l1=1.5e10, attainable=2.8e11,
                label="memory-bound", limiter="dram", evidence=["DRAM throughput 85% of peak"]),
    ]
    labels = [("compute-bound", "fp32"), ("overhead-bound", "launch"), ("memory-bound", "l2"),
              ("unknown", "unknown"), ("compute-bound", "tensor")]
    for j, name in enumerate(HOSTILE_NAMES):
        label, limiter = labels[j]
        known = label != "unknown"
        kernels.append(_kernel(
            2 + j, name, name if len(name) < 200 else "long_kernel (grid 132, block 256)",
            dur=(j + 1) * 1e-3, flops=5e10 * (j + 1) if known else None, dram=1e8 if known else None,
            l2=2e8 if known else None, l1=4e8 if known else None,
            attainable=5e13 if known else None, label=label, limiter=limiter,
            evidence=[f"evidence for {name[:40]}"],
            rules=[{"rule": "SOLBottleneck", "title": "<script>alert(2)</script>", "speedup_pct": 12.5}]
            if j == 0 else None))
    windows = []
    timelines: dict[str, Any] = {}
    for g, host in ((0, "node-<01>"), (1, "node-<01>")):
        key = f"{host}:{g}"
        ts = [f"2026-11-20T00:0{m}:00Z" for m in range(4)]
        timelines[key] = {"t": ts, "gr_active": [0.9, 0.8, 0.1, 0.95], "sm_active": [0.7, 0.6, 0.05, 0.8],
                          "tensor_active": [0.3, 0.2, 0.0, 0.4], "dram_active": [0.5, 0.6, 0.01, 0.2]}
        for m, lab in enumerate(("compute-bound", "memory-bound", "idle")):
            windows.append({
                "host": host, "gpu": str(g), "model": "H100", "namespace": "ml<team>", "pod": f"train-{g}",
                "start": ts[m], "end": ts[m + 1], "label": lab, "limiter": "tensor",
                "metrics": {"gr_active": 0.9, "sm_active": 0.7, "tensor_active": 0.3, "dram_active": 0.5},
                "est_flops_s": 2e14 if lab != "idle" else None, "est_dram_bytes_s": 1e12 if lab != "idle" else None,
            })
    findings = [
        {"rank": 1, "rule": "roofline.memory.dram", "severity": "high",
         "title": "add_kernel (grid 132, block 256): memory-bound (dram), 30.8% of kernel time in 2 launch(es)",
         "kernels": [0, 1], "time_share": 0.3077, "est_saving_s": 7.97e-3,
         "recommendation": "Cut DRAM traffic: fuse.", "family": "add_kernel (grid 132, block 256)",
         "label": "memory-bound", "limiter": "dram", "evidence": ["DRAM throughput 85% of peak"], "source": "ncu"},
        {"rank": 2, "rule": "ncu.SOLBottleneck", "severity": "medium", "title": HOSTILE_NAMES[0] + ": compute-bound",
         "kernels": [2], "time_share": 0.0385, "est_saving_s": 1.25e-4, "recommendation": "Use tensor cores | `now`.",
         "evidence": ["<b>evidence</b>"], "source": "ncu"},
        {"rank": 3, "rule": "dcgm.idle", "severity": "medium", "title": "GPU node-<01>:0 idle 33% of the time",
         "kernels": [], "time_share": 0.33, "est_saving_s": None, "recommendation": "Pack jobs.", "source": "dcgm"},
    ]
    for k in kernels:
        k.setdefault("extra", {})["ceilings"] = "NVIDIA H100 80GB HBM3|builtin"
    doc = {
        "schema_version": 1, "tool": {"name": "rooftop", "version": "0.1.0"}, "kind": "analyze",
        "run": {"command": "rooftop analyze run.ncu.csv dmon.txt --md out.md",
                "created": "2026-11-21T00:00:00Z", "input_sha256": {"run.ncu.csv": "0" * 64, "dmon.txt": None}},
        "inputs": [{"path": "run.ncu.csv", "format": "ncu-raw-csv", "records": 7, "missing": 0, "rejected": 1},
                   {"path": "dmon.txt", "format": "dcgmi-dmon", "records": 24, "missing": 0, "rejected": 0}],
        "rejected": [{"path": "run.ncu.csv", "line": 9, "reason": "duration is not a number: '<x>'"}],
        "devices": [{"name": "NVIDIA H100 80GB HBM3", "source": "builtin",
                     "ceilings": {"fp64": 3.4e13, "fp32": 6.7e13, "tensor": 9.89e14,
                                  "dram": 3.35e12, "l2": 1.1e13, "l1": 3.3e13},
                     "sources": {"fp32": "datasheet <spec>", "dram": "datasheet HBM3"}, "sm_count": 132, "cc": "9.0"}],
        "kernels": kernels, "findings": findings, "windows": windows,
        "lint": [{"code": "cache-control", "message": "L2 flushed before each replay <all>", "kernels": [0, 1]}],
        "timelines": timelines,
    }
    doc.update(document_view(doc))  # roofline panels and family rows, as the pipeline adds them
    return doc


def big_document(n: int, families: int = 2000) -> dict[str, Any]:
    """An analyze document with ``n`` launches spread over ``families`` families (scale tests)."""
    doc = sample_document()
    doc["windows"], doc["timelines"] = [], {}
    kernels = []
    for i in range(n):
        f = i % families
        dur = 1e-6 * (1 + (i * 7919) % 997)
        flops = 1e6 * (1 + f % 50) * (1 + i % 3)
        kernels.append(_kernel(i, f"void fam_{f}_kernel<float, {f}>(float*, int)", f"fam_{f}_kernel (grid 132, block 256)",
                               dur=dur, flops=flops, dram=flops / (0.5 + f % 20), l2=flops / (1 + f % 20),
                               l1=flops / (2 + f % 20), attainable=1e13,
                               label=("memory-bound", "compute-bound", "overhead-bound")[f % 3],
                               limiter=("dram", "fp32", "launch")[f % 3], evidence=["DRAM 80% of peak"]))
    for k in kernels:
        k.setdefault("extra", {})["ceilings"] = "NVIDIA H100 80GB HBM3|builtin"
    doc["kernels"] = kernels
    doc["findings"] = doc["findings"][:1]
    doc.update(document_view(doc))
    return doc


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from rooftop.reports.json_report import render_json
    from rooftop.reports.markdown import render_markdown

    GOLDEN.mkdir(exist_ok=True)
    doc = sample_document()
    (GOLDEN / "sample.md").write_text(render_markdown(doc), encoding="utf-8")
    (GOLDEN / "sample.json").write_text(render_json(doc), encoding="utf-8")
    print(f"wrote {GOLDEN / 'sample.md'} and {GOLDEN / 'sample.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
