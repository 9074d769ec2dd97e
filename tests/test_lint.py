"""Kernel lint: codes, messages and positions (row positions in the results, not ncu indices)."""

from __future__ import annotations

import pandas as pd

from rooftop.analyzer.kernels.analyze import analyze_kernels


def _codes(lint: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for item in lint:
        out.setdefault(item["code"], []).append(item)
    return out


def _k(index: int, **metrics: object) -> dict[str, object]:
    return {"input": "a.csv", "index": index, "name": f"k{index}", "duration_s": 1e-3} | metrics


def test_missing_groups_name_the_levels_and_use_positions() -> None:
    k = pd.DataFrame([_k(10, **{"dram__bytes.sum": 1e6}), _k(11, **{"lts__t_bytes.sum": 5.0})])
    lint = _codes(analyze_kernels(k, pd.DataFrame()).lint)
    msgs = {i["message"].split(" missing")[0]: i["kernels"] for i in lint["missing-metrics"]}
    assert msgs["L1 bytes (l1tex__lsu_writeback_active_mem_lg[ds].sum)"] == [0, 1]  # positions, not ncu index 10/11
    assert msgs["L2 bytes (lts__lts2xbar_cycles_active.sum)"] == [0]
    assert msgs["DRAM bytes (dram__bytes.sum)"] == [1]
    assert lint["bytes-convention"][0]["kernels"] == [1]
    # no device, no .peak_sustained: the lint must not cite L1/L2 ceilings that do not exist
    msg = lint["bytes-convention"][0]["message"]
    assert "no L1/L2 ceiling is known" in msg and "device table's L1/L2 ceilings" not in msg


def test_nersc_bytes_with_table_ceilings_say_so() -> None:
    k = pd.DataFrame([_k(0, **{"lts__t_bytes.sum": 5e6, "l1tex__t_bytes.sum": 1e7, "dram__bytes.sum": 1e6})])
    lint = _codes(analyze_kernels(k, pd.DataFrame(), device="NVIDIA A100-SXM4-80GB").lint)
    msg = lint["bytes-convention"][0]["message"]
    assert "device table's L1/L2 ceilings" in msg and lint["bytes-convention"][0]["kernels"] == [0]


def test_achieved_above_roof() -> None:
    # 1e11 FFMA = 2e11 FLOP in 1 ms = 200 TFLOP/s against a 66.9 TFLOP/s export roof
    k = pd.DataFrame([_k(0, **{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e11,
                               "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 16896.0,
                               "sm__cycles_elapsed.avg.per_second": 1.98e9}),
                      _k(1, **{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9,
                               "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 16896.0,
                               "sm__cycles_elapsed.avg.per_second": 1.98e9})])
    items = _codes(analyze_kernels(k, pd.DataFrame()).lint)["achieved-above-roof"]
    assert items[0]["kernels"] == [0] and "FP32" in items[0]["message"]


def test_fp16_counters_zero_on_tensor_kernels_and_tensor_uncounted() -> None:
    zero = {f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum": 0.0 for op in ("hadd", "hmul", "hfma")}
    k = pd.DataFrame([
        _k(0, **zero, **{"sm__ops_path_tensor_src_fp16_dst_fp32.sum": 1e9}),
        _k(1, **zero),  # no tensor work: zero FP16 is just no FP16
        _k(2, cc="8.0", **{"sm__inst_executed_pipe_tensor.sum": 1e5}),  # Ampere: no x512
    ])
    lint = _codes(analyze_kernels(k, pd.DataFrame()).lint)
    assert lint["fp16-counters-zero"][0]["kernels"] == [0]
    assert lint["tensor-uncounted"][0]["kernels"] == [2]


def test_mixed_devices_legacy_and_clock_lint() -> None:
    k = pd.DataFrame([
        _k(0, device="NVIDIA A10G", cc="8.6"),
        _k(1, device="NVIDIA A100-SXM4-40GB", cc="8.0"),
        {"input": "b.csv", "index": 0, "name": "v", "duration_s": 1e-3, "sm__sol_pct": 1.0,
         "gpu__compute_memory_sol_pct": 3.0, "dram__read_bytes": 10.0, "dram__write_bytes": 2.0},
        {"input": "c.csv", "index": 0, "name": "c", "duration_s": 1e-3, "device__attribute_clock_rate": 1_980_000.0,
         "sm__cycles_elapsed.avg.per_second": 1.59e9},
    ])
    lint = _codes(analyze_kernels(k, pd.DataFrame()).lint)
    assert lint["mixed-devices"][0]["kernels"] == [0, 1]
    assert lint["legacy-metrics"][0]["kernels"] == [2]
    clock = lint["clock-control"][0]
    assert clock["kernels"] == [3] and "80%" in clock["message"]  # 1.59 / 1.98 = 80 %


def test_cache_and_clock_control_from_the_command_line() -> None:
    # cache-control names only kernels with DRAM bytes (a cold cache changes nothing else)
    k = pd.DataFrame([_k(0, **{"dram__bytes.sum": 1e6}), {"input": "b.csv", "index": 0, "name": "x", "duration_s": 1e-3,
                                                         "dram__bytes.sum": 1e6}])
    meta = {"a.csv": {"command": "ncu --set full -o rep ./app"},
            "b.csv": {"command": "ncu --cache-control none --clock-control none ./app"}}
    lint = _codes(analyze_kernels(k, pd.DataFrame(), meta=meta).lint)
    assert lint["cache-control"][0]["kernels"] == [0]
    assert lint["clock-control"][0]["kernels"] == [0]


def test_clean_complete_kernel_has_no_quality_lint() -> None:
    import importlib.util
    import sys

    from tests.conftest import FIXTURES

    spec = importlib.util.spec_from_file_location("make_ncu", FIXTURES / "make_ncu.py")
    assert spec and spec.loader
    mk = importlib.util.module_from_spec(spec)
    sys.modules["make_ncu"] = mk
    spec.loader.exec_module(mk)
    k = mk.kernels()[1]  # the GEMV: everything collected
    row = {"input": "d", "index": 0, "name": k["name"], "cc": "9.0", "device": mk.DEVICE_NAME}
    row.update({m: (v * 1e-9 if m == "gpu__time_duration.sum" else float(v)) for m, v in k["metrics"].items()})
    row["duration_s"] = row["gpu__time_duration.sum"]
    assert analyze_kernels(pd.DataFrame([row]), pd.DataFrame()).lint == []
