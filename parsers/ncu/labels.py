"""Section display labels (details page, console log) mapped to the ncu metric IDs they show.

Section rows name metrics by label (``Duration``, ``Memory Throughput``); the kernel table keys
metrics by ID, so a label from any layout lands in the same column as the ID from a raw page.
Keys are ``(section, label)``; a ``None`` section matches any section. Labels not listed here are
kept as ``"<section>: <label>"`` columns. Sources: ncu's ``sections/*.section`` files
(docs/research/formulas.md §1.8) and the corpus exports.
"""

from __future__ import annotations

import re

_ANY = None
_RC = "GPU Speed Of Light Roofline Chart"

LABELS: dict[tuple[str | None, str], str] = {
    # SpeedOfLight ("GPU Speed Of Light Throughput")
    (_ANY, "Duration"): "gpu__time_duration.sum",
    (_ANY, "Elapsed Cycles"): "gpc__cycles_elapsed.max",
    (_ANY, "SM Active Cycles"): "sm__cycles_active.avg",
    (_ANY, "SM Frequency"): "gpc__cycles_elapsed.avg.per_second",
    (_ANY, "DRAM Frequency"): "dram__cycles_elapsed.avg.per_second",
    (_ANY, "Memory Throughput"): "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "Memory [%]"): "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "DRAM Throughput"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "L1/TEX Cache Throughput"): "l1tex__throughput.avg.pct_of_peak_sustained_active",
    (_ANY, "L2 Cache Throughput"): "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "Compute (SM) Throughput"): "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "Compute (SM) [%]"): "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    # LaunchStats ("Launch Statistics")
    (_ANY, "Block Size"): "launch__block_size",
    (_ANY, "Grid Size"): "launch__grid_size",
    (_ANY, "Registers Per Thread"): "launch__registers_per_thread",
    (_ANY, "Threads"): "launch__thread_count",
    (_ANY, "Waves Per SM"): "launch__waves_per_multiprocessor",
    (_ANY, "# SMs"): "device__attribute_multiprocessor_count",
    (_ANY, "Shared Memory Configuration Size"): "launch__shared_mem_config_size",
    (_ANY, "Static Shared Memory Per Block"): "launch__shared_mem_per_block_static",
    (_ANY, "Dynamic Shared Memory Per Block"): "launch__shared_mem_per_block_dynamic",
    # Occupancy
    (_ANY, "Theoretical Occupancy"): "sm__maximum_warps_per_active_cycle_pct",
    (_ANY, "Achieved Occupancy"): "sm__warps_active.avg.pct_of_peak_sustained_active",
    (_ANY, "Achieved Active Warps Per SM"): "sm__warps_active.avg.per_cycle_active",
    (_ANY, "Theoretical Active Warps per SM"): "sm__maximum_warps_avg_per_active_cycle",
    (_ANY, "Block Limit Registers"): "launch__occupancy_limit_registers",
    (_ANY, "Block Limit Shared Mem"): "launch__occupancy_limit_shared_mem",
    (_ANY, "Block Limit Warps"): "launch__occupancy_limit_warps",
    (_ANY, "Block Limit SM"): "launch__occupancy_limit_blocks",
    # MemoryWorkloadAnalysis
    # Same label as the SpeedOfLight percentage, but here a bandwidth (Gbyte/s): section-specific.
    ("Memory Workload Analysis", "Memory Throughput"): "dram__bytes.sum.per_second",
    # Checked against the section definitions stored in the corpus .ncu-rep files (2020.3-2025.1).
    (_ANY, "Mem Busy"): "gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "Max Bandwidth"): "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "L1/TEX Hit Rate"): "l1tex__t_sector_hit_rate.pct",
    (_ANY, "L2 Hit Rate"): "lts__t_sector_hit_rate.pct",
    (_ANY, "Mem Pipes Busy"): "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed",
    # SchedulerStats
    (_ANY, "Issued Warp Per Scheduler"): "smsp__issue_active.avg.per_cycle_active",
    (_ANY, "No Eligible"): "smsp__issue_inst0.avg.pct_of_peak_sustained_active",
    (_ANY, "Active Warps Per Scheduler"): "smsp__warps_active.avg.per_cycle_active",
    (_ANY, "Eligible Warps Per Scheduler"): "smsp__warps_eligible.avg.per_cycle_active",
    # Labels read from the sections stored in the corpus .ncu-rep files (ISection body/header
    # metrics, label -> metric name; ncu 2020.3-2025.1). Labels that name two metrics are left out.
    (_ANY, "One or More Eligible"): "smsp__issue_active.avg.pct_of_peak_sustained_active",
    (_ANY, "Theoretical Warps Per Scheduler"): "smsp__maximum_warps_avg_per_active_cycle",
    (_ANY, "GPU Maximum Warps Per Scheduler"): "smsp__warps_active.avg.peak_sustained",
    (_ANY, "Driver Shared Memory Per Block"): "launch__shared_mem_per_block_driver",
    (_ANY, "# TPCs"): "launch__tpc_count",
    (_ANY, "Stack Size"): "launch__stack_size",
    (_ANY, "Uses Green Context"): "launch__uses_green_context",
    (_ANY, "Executed Ipc Active"): "sm__inst_executed.avg.per_cycle_active",
    (_ANY, "Executed Ipc Elapsed"): "sm__inst_executed.avg.per_cycle_elapsed",
    (_ANY, "Issue Slots Busy"): "sm__inst_issued.avg.pct_of_peak_sustained_active",
    (_ANY, "Issued Ipc Active"): "sm__inst_issued.avg.per_cycle_active",
    (_ANY, "SM Busy"): "sm__instruction_throughput.avg.pct_of_peak_sustained_active",
    (_ANY, "L2 Compression Success Rate"): "lts__average_gcomp_input_sector_success_rate.pct",
    (_ANY, "L2 Compression Ratio"): "lts__average_gcomp_output_sector_compression_achieved_rate.ratio",
    (_ANY, "Warp Cycles Per Issued Instruction"): "smsp__average_warp_latency_per_inst_issued.ratio",
    (_ANY, "Warp Cycles Per Executed Instruction"): "smsp__average_warps_active_per_inst_executed.ratio",
    (_ANY, "Avg. Active Threads Per Warp"): "smsp__thread_inst_executed_per_inst_executed.ratio",
    (_ANY, "Avg. Not Predicated Off Threads Per Warp"): "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    (_ANY, "Avg. Executed Instructions Per Scheduler"): "smsp__inst_executed.avg",
    (_ANY, "Executed Instructions"): "smsp__inst_executed.sum",
    (_ANY, "Avg. Issued Instructions Per Scheduler"): "smsp__inst_issued.avg",
    (_ANY, "Issued Instructions"): "smsp__inst_issued.sum",
    (_ANY, "Average DRAM Active Cycles"): "dram__cycles_active.avg",
    (_ANY, "Total DRAM Elapsed Cycles"): "dram__cycles_elapsed.sum",
    (_ANY, "Average L1 Active Cycles"): "l1tex__cycles_active.avg",
    (_ANY, "Total L1 Elapsed Cycles"): "l1tex__cycles_elapsed.sum",
    (_ANY, "Average L2 Active Cycles"): "lts__cycles_active.avg",
    (_ANY, "Total L2 Elapsed Cycles"): "lts__cycles_elapsed.sum",
    (_ANY, "Average SM Active Cycles"): "sm__cycles_active.avg",
    (_ANY, "Total SM Elapsed Cycles"): "sm__cycles_elapsed.sum",
    (_ANY, "Average SMSP Active Cycles"): "smsp__cycles_active.avg",
    (_ANY, "Total SMSP Elapsed Cycles"): "smsp__cycles_elapsed.sum",
    # ncu 2020.x-2021.x "GPU Speed Of Light" section
    (_ANY, "SOL SM"): "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "SOL Memory"): "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "SOL DRAM"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "SOL L1/TEX Cache"): "l1tex__throughput.avg.pct_of_peak_sustained_active",
    (_ANY, "SOL L2 Cache"): "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    # Roofline chart sections show the SM clock as sm__ (not gpc__) cycles per second.
    ("GPU Speed Of Light Roofline Chart", "SM Frequency"): "sm__cycles_elapsed.avg.per_second",
    ("GPU Speed Of Light Roofline Chart", "DRAM Bandwidth"): "dram__bytes.sum.per_second",
    # SpeedOfLight_RooflineChart.section (docs/research/formulas.md §1.5): its peaks and achieved
    # per-cycle counts by display name (ncu --csv --page details --section SpeedOfLight_RooflineChart).
    **{(_RC, f"Theoretical Predicated-On {op.upper()} Thread Instructions Executed"):
       f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained" for op in ("ffma", "dfma", "hfma")},
    **{(_RC, f"Theoretical Predicated-On {op.upper()} Operations"):
       f"derived__sm__sass_thread_inst_executed_op_{op}_pred_on_x{4 if op == 'hfma' else 2}"
       for op in ("ffma", "dfma", "hfma")},
    **{(_RC, f"Predicated-On {op.upper()} Thread Instructions Executed Per Cycle"):
       f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"
       for op in ("ffma", "fadd", "fmul", "dfma", "dadd", "dmul", "hfma", "hadd", "hmul")},
    **{(_RC, f"Predicated-On {op.upper()} Operations Per Cycle"):
       f"derived__smsp__sass_thread_inst_executed_op_{op}_pred_on_x{4 if op == 'hfma' else 2}"
       for op in ("ffma", "dfma", "hfma")},
    (_RC, "Theoretical DRAM Bytes Accessible"): "dram__bytes.sum.peak_sustained",
}


def lookup_label(section: str | None, label: str) -> str | None:
    """The metric ID a section row shows, or ``None`` when the label is not mapped."""
    key = label.strip()
    return LABELS.get((section, key)) or LABELS.get((None, key))


def metric_for_label(section: str | None, label: str) -> str:
    """The metric ID a section row shows, or ``"<section>: <label>"`` when it is not known."""
    hit = lookup_label(section, label)
    if hit:
        return hit
    key = label.strip()
    return f"{section}: {key}" if section else key


# Counters no export can make negative: bytes, sectors, requests, executed instructions, cycles,
# durations (ncu metric naming: ``dram__bytes_read.sum``, ``lts__t_sectors``, ``smsp__inst_executed``).
_COUNTS = re.compile(r"bytes|sectors|requests|wavefronts|inst_executed|cycles_(?:elapsed|active)|__time_duration")


def is_count_metric(name: str) -> bool:
    """Whether the metric ``name`` counts something (so a negative value is no value)."""
    return _COUNTS.search(str(name).split(".")[0]) is not None
