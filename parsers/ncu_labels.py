"""Section display labels (details page, console log) mapped to the ncu metric IDs they show.

Section rows name metrics by label (``Duration``, ``Memory Throughput``); the kernel table keys
metrics by ID, so a label from any layout lands in the same column as the ID from a raw page.
Keys are ``(section, label)``; a ``None`` section matches any section. Labels not listed here are
kept as ``"<section>: <label>"`` columns. Sources: ncu's ``sections/*.section`` files
(formulas.md §1.8) and the corpus exports.
"""

from __future__ import annotations

_ANY = None

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
    (_ANY, "Memory Throughput "): "dram__bytes.sum.per_second",
    (_ANY, "Mem Busy"): "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "Max Bandwidth"): "gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed",
    (_ANY, "L1/TEX Hit Rate"): "l1tex__t_sector_hit_rate.pct",
    (_ANY, "L2 Hit Rate"): "lts__t_sector_hit_rate.pct",
    (_ANY, "Mem Pipes Busy"): "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed",
    # SchedulerStats
    (_ANY, "Issued Warp Per Scheduler"): "smsp__issue_active.avg.per_cycle_active",
    (_ANY, "No Eligible"): "smsp__issue_inst0.avg.pct_of_peak_sustained_active",
    (_ANY, "Active Warps Per Scheduler"): "smsp__warps_active.avg.per_cycle_active",
    (_ANY, "Eligible Warps Per Scheduler"): "smsp__warps_eligible.avg.per_cycle_active",
}


def metric_for_label(section: str | None, label: str) -> str:
    """The metric ID a section row shows, or ``"<section>: <label>"`` when it is not known."""
    key = label.strip()
    hit = LABELS.get((section, key)) or LABELS.get((None, key))
    if hit:
        return hit
    return f"{section}: {key}" if section else key
