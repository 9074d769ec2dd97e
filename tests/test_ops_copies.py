"""Ops whose GPU work is copies (docs/formulas.md#op-verdicts, #op-memory): a copy between host and device is
bound by the host link, its bytes counted once; a device-to-device copy reads and writes DRAM and is placed
on the DRAM roof. On fixtures/make_trace.copies_doc, every number by hand (an H100: 3.35 TB/s DRAM)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fixtures.make_trace import write_copies_kineto
from rooftop.analyzer.pipeline import run_analysis
from tests.conftest import corpus_dir


@cache
def _doc(folder: str) -> dict[str, Any]:
    return dict(run_analysis([str(write_copies_kineto(Path(folder) / "copies.json"))]))


def _ops(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[tuple[str, str], dict[str, Any]]]:
    doc = _doc(str(tmp_path_factory.mktemp("copies")))
    return doc, {(o["shape"], o["concrete_inputs"][-1]): o for o in doc["ops"]}


def test_host_copies_are_transfer_bound_with_their_bytes_counted_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    """aten::copy_ of 8 MiB fp32, 4 pageable H2D copies in 8 ms: 33,554,432 B / 8 ms = 4.194 GB/s (the formula's
    read + write would say 8.39); the pinned ones 20.97 GB/s (was: unknown, "profile it with ncu", 41.9 GB/s)."""
    doc, ops = _ops(tmp_path_factory)
    for key, rate in ((("[2097152]", "False"), 4.194304e9), (("[2097152]", "True"), 20.97152e9),
                      (("[1048576]", "False"), 2.097152e9), (("[1048576]", "True"), 16.777216e9)):
        o = ops[key]
        assert (o["label"], o["limiter"]) == ("transfer-bound", "host-link"), key
        assert o["achieved_bytes_per_s"] == pytest.approx([rate, rate], rel=1e-12), key
        assert o["bytes_min"] == o["bytes_max"] == round(rate * o["kernel_time_s"]), key
        assert o["min_time_s"] is None and "ncu profiles kernels, not copies" in o["evidence"][0]
    assert not [f for f in doc["findings"] if f["rule"] == "op-unknown"]
    assert not [f for f in doc["findings"] if f["source"] == "ops" and "transfer" in f["label"]]
    for f in doc["findings"]:
        assert "ncu" not in f["recommendation"], f["title"]


def test_a_device_to_device_copy_reads_and_writes_dram(tmp_path_factory: pytest.TempPathFactory) -> None:
    """aten::copy_ of 32 MiB by a DtoD memcpy in 24 µs, twice: 2 x 33,554,432 B read + written per call,
    2.796 TB/s = 83.5 % of 3.35 TB/s: memory-bound on DRAM (its 64 MiB working set exceeds the 50 MiB L2)."""
    _, ops = _ops(tmp_path_factory)
    o = ops[("[8388608]", "False")]
    assert (o["label"], o["limiter"]) == ("memory-bound", "dram")
    assert o["pct_of_roof"] == pytest.approx(2 * 2 * 2**25 / 48e-6 / 3.35e12, rel=1e-9)


@pytest.mark.corpus
def test_corpus_mixed_host_and_device_copies_stay_undecided_with_the_link_rate() -> None:
    """negative_queue rank0: aten::copy_ [4096, 2798] runs pinned H2D and D2D copies, so no one roof bounds it;
    its host-link rate is its H2D copies' bytes once over their time, 12.0 GB/s (was 112.8 GB/s: the formula's
    read + write over all its time). Its pinned H2D-only signatures are transfer-bound."""
    path = next(corpus_dir("trace").glob("*negative_queue_length_values_check__rank0*"), None)
    if path is None:
        pytest.skip("trace corpus absent")
    doc = dict(run_analysis([str(path)]))
    (mixed,) = [o for o in doc["ops"] if o["name"] == "aten::copy_" and o["shape"] == "[4096, 2798]"]
    assert mixed["label"] == "unknown"
    assert any(x.startswith("host link: ") and "= 12 GB/s" in x for x in mixed["evidence"])
    h2d = {o["shape"]: o for o in doc["ops"] if o["top_kernels"] == ["Memcpy HtoD (Pinned -> Device)"]}
    # 16.4 kB copies (5.2 µs each, 3.15 GB/s) take the link's fixed cost: latency; the MB-sized ones the link
    small = h2d.pop("[4096]")
    assert (small["label"], small["limiter"]) == ("overhead-bound", "latency")
    assert h2d and {(o["label"], o["limiter"]) for o in h2d.values()} == {("transfer-bound", "host-link")}


@pytest.mark.corpus
def test_undecided_communication_ops_are_not_sent_to_ncu() -> None:
    """negative_queue rank0: nccl:all_reduce (127 ms) and nccl:all_to_all lead its undecided ops; ncu does not
    decide a collective, its message size does (record_param_comms). The advice names both, each for its kind."""
    path = next(corpus_dir("trace").glob("*negative_queue_length_values_check__rank0*"), None)
    if path is None:
        pytest.skip("trace corpus absent")
    (f,) = [f for f in dict(run_analysis([str(path)]))["findings"] if f["rule"] == "op-unknown"]
    assert "nccl:all_reduce" in f["title"]
    assert "record_param_comms" in f["recommendation"] and "profile it with ncu" in f["recommendation"]
    from rooftop.analyzer.ops.findings import _undecided

    comm = [o for o in dict(run_analysis([str(path)]))["ops"] if o["category"] == "communication"
            and o["label"] == "unknown"]
    (only,) = _undecided(comm)  # undecided collectives alone: no ncu advice at all
    assert "record_param_comms" in only["recommendation"] and "ncu (" not in only["recommendation"]
