"""GPU health from the fields already in DCGM / nvidia-smi inputs: XID errors, ECC and row-remap
counters, clock-event reasons, temperature against the slowdown temperature, power against the
limit (docs/formulas.md#health).

:mod:`.rules` (fields, bits, thresholds, sources) -> :mod:`.partials` (observations per sample,
reduced per GPU; the fleet engines' map/reduce) -> :mod:`.gpus` (events per GPU, findings).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from rooftop.analyzer.health.gpus import gpu_health
from rooftop.analyzer.health.partials import GPU_COLUMNS, health_partial

__all__ = ["analyze_health"]


def analyze_health(samples: pa.Table | None) -> list[dict[str, Any]]:
    """Per-GPU health records of one sample table (``SAMPLE_SCHEMA``): every GPU the samples name,
    those without any health field with every aspect ``not collected``; [] without samples."""
    if samples is None or samples.num_rows == 0:
        return []
    gpus = samples.select(list(GPU_COLUMNS)).group_by(list(GPU_COLUMNS)).aggregate([]).to_pylist()
    return gpu_health(health_partial(samples), gpus)
