"""Built-in device table, name matching and ``--device`` override files."""

from __future__ import annotations

import json

import pytest

from rooftop.analyzer.ceilings.devices import (
    builtin,
    load_device_option,
    lookup,
    normalize_name,
)
from rooftop.errors import InputError


@pytest.mark.parametrize(("exported", "expected"), [
    ("NVIDIA A10G", "NVIDIA A10G"),
    ("NVIDIA A10Gj", "NVIDIA A10G"),  # stray protobuf byte after the name (.ncu-rep strings)
    ("NVIDIA A10", "NVIDIA A10"),
    ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2"),
    ("Tesla V100-PCIE-32GB", "Tesla V100-PCIE"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("GeForce GTX 1660 SUPER", "NVIDIA GeForce GTX 1660 SUPER"),  # older drivers drop "NVIDIA "
    ("NVIDIA GeForce RTX 3070", "NVIDIA GeForce RTX 3070"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
    ("NVIDIA A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("Tesla T4", "Tesla T4"),
    ("NVIDIA B200", "NVIDIA B200"),
    ("NVIDIA GH200 480GB", "NVIDIA GH200 480GB"),
    ("NVIDIA H200", "NVIDIA H200"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 5090", "NVIDIA GeForce RTX 5090"),
])
def test_lookup_names_as_exports_spell_them(exported: str, expected: str) -> None:
    spec = lookup(exported)
    assert spec is not None and spec.name == expected


@pytest.mark.parametrize("name", ["NVIDIA H100 NVL", "NVIDIA GeForce RTX 4090 D", "NVIDIA A40", "", "AMD MI250X"])
def test_unknown_names_give_none(name: str) -> None:
    assert lookup(name) is None


def test_cc_and_sm_count_fallback_only_when_unique() -> None:
    t4 = lookup(None, "7.5", 40)
    assert t4 is not None and t4.name == "Tesla T4"
    assert lookup("some renamed board", "7.5", 22) is not None  # the GTX 1660 SUPER is the only 7.5/22
    assert lookup(None, "8.0", 108) is None  # four A100 variants: ambiguous, no guess


def test_normalize_name() -> None:
    assert normalize_name("NVIDIA A100-SXM4-80GB\x1a") == "a100 sxm4 80gb"
    assert normalize_name("Tesla V100-SXM2-16GB") == "v100 sxm2 16gb"


def test_builtin_table_is_complete_and_sourced() -> None:
    specs = builtin()
    assert len(specs) >= 14
    names = {s.name for s in specs}
    for required in ("Tesla V100-SXM2", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-PCIE-40GB",
                     "NVIDIA H100 SXM5 80GB", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA B200", "NVIDIA L4",
                     "NVIDIA L40S", "NVIDIA A10", "NVIDIA A10G", "Tesla T4", "NVIDIA GeForce RTX 3090",
                     "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090"):
        assert required in names
    for s in specs:
        assert s.source == "builtin"
        for key in list(s.peaks) + list(s.bandwidth):
            assert s.sources.get(key), f"{s.name}.{key} has no source"
        for key, text in s.sources.items():
            if key in s.peaks or key in s.bandwidth:
                assert "docs/formulas.md#device-table" in text, f"{s.name}.{key}: {text}"
                assert "research" not in text and "§" not in text, f"{s.name}.{key}: {text}"
    b200 = lookup("NVIDIA B200")
    assert b200 is not None and all("approximate" in b200.sources[k] for k in b200.peaks)


def test_datasheet_numbers_and_ridges_match_formulas_md() -> None:
    h100 = lookup("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    # docs/research/formulas.md §4.1: 67 TF FP32, 989.4 TF dense FP16/BF16, 3,350 GB/s; §4.2 ridges 20.0 and 295.3
    assert h100.peaks["fp32"] == 67e12 and h100.peaks["tensor"] == 989.4e12 and h100.bandwidth["dram"] == 3350e9
    assert round(h100.peaks["fp32"] / h100.bandwidth["dram"], 1) == 20.0
    assert round(h100.peaks["tensor"] / h100.bandwidth["dram"], 1) == 295.3
    a100 = lookup("NVIDIA A100-SXM4-40GB")
    assert a100 is not None
    assert round(a100.peaks["tensor"] / a100.bandwidth["dram"], 1) == 200.6  # 312 TF / 1,555 GB/s
    # §4.3: L1 = 128 B/clk/SM x 108 SMs x 1.41 GHz = 19.49 TB/s
    assert a100.bandwidth["l1"] == pytest.approx(128 * 108 * 1.41e9, rel=0.01)
    contract = a100.as_contract()
    assert contract["source"] == "builtin" and contract["ceilings"]["dram"] == 1555e9
    assert contract["ceilings"]["fp32"] == 19.5e12 and contract["sm_count"] == 108 and contract["cc"] == "8.0"


def test_device_option_builtin_name_and_unknown_name() -> None:
    assert load_device_option(None) is None
    spec = load_device_option("NVIDIA A10G")
    assert spec is not None and spec.source == "builtin"
    with pytest.raises(InputError, match="not a known device"):
        load_device_option("Voodoo 5 6000")


def test_user_json_overrides_a_builtin_base(tmp_path) -> None:
    f = tmp_path / "my_h100.json"
    f.write_text(json.dumps({"base": "NVIDIA H100 80GB HBM3", "name": "H100 (power capped)",
                             "peaks": {"fp32": 5.0e13}, "bandwidth": {"dram": 3.0e12}}))
    spec = load_device_option(str(f))
    assert spec is not None and spec.source == "user" and spec.name == "H100 (power capped)"
    assert spec.peaks["fp32"] == 5.0e13 and spec.bandwidth["dram"] == 3.0e12
    assert spec.peaks["tensor"] == 989.4e12  # inherited from the base
    assert spec.sources["fp32"] == "user file my_h100.json"
    assert spec.sm_count == 132


def test_user_yaml_file(tmp_path) -> None:
    pytest.importorskip("yaml")
    f = tmp_path / "gpu.yaml"
    f.write_text("name: Lab GPU\nsm_count: 10\ncc: '8.6'\npeaks:\n  fp32: 1.0e13\nbandwidth:\n  dram: 5.0e11\n")
    spec = load_device_option(str(f))
    assert spec is not None and spec.source == "user" and spec.peaks == {"fp32": 1.0e13}
    assert spec.bandwidth == {"dram": 5.0e11} and spec.cc == "8.6"


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "one device object"),
    ('{"name": "x", "peaks": {"fp32": -1}}', "positive number"),
    ('{"name": "x", "peaks": {"fp33": 1e12}}', "unknown peaks key"),
    ('{"name": "x", "bandwidth": {"dram": "fast"}}', "positive number"),
    ('{"base": "Voodoo 5", "peaks": {"fp32": 1e12}}', "not a built-in device"),
    ('{"name": "x", "sm_count": 1.5}', "sm_count"),
])
def test_bad_device_files_are_input_errors(tmp_path, content: str, message: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(content)
    with pytest.raises(InputError, match=message):
        load_device_option(str(f))


def test_missing_device_file(tmp_path) -> None:
    with pytest.raises(InputError, match="cannot be read"):
        load_device_option(str(tmp_path / "nope.json"))


@pytest.mark.parametrize("width", [80, 200])
def test_render_table_lists_every_device_and_source(width: int) -> None:
    """At 80 columns (issue 27: rows were 125-189 wide) the columns go into two tables, each naming
    every device; at 200 one table holds them all."""
    from rooftop.reports.devices_table import render_table

    text = render_table([s.as_contract() for s in builtin()], width=width)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    heads = [ln for ln in lines if ln.startswith("device ")]
    assert len(heads) == (2 if width == 80 else 1)
    assert {h for ln in heads for h in ln.split()} >= {"CC", "SMs", "FP64", "Tensor", "INT8", "DRAM", "L2", "L1"}
    for s in builtin():
        assert sum(ln.startswith(s.name + " ") for ln in lines) == len(heads)
    h100 = " ".join(ln for ln in lines if ln.startswith("NVIDIA H100 SXM5 80GB "))
    assert "989.4" in h100 and "3,350.0" in h100 and "33,500.0" in h100
    assert "Sources:" in text and "docs/formulas.md#device-table" in text and "§" not in text
    data = json.loads(render_table([s.as_contract() for s in builtin()], as_json=True))
    assert len(data) == len(builtin()) and {"name", "source", "ceilings", "sources", "sm_count", "cc"} <= set(data[0])


@pytest.mark.parametrize(("exported", "expected"), [("AMD Instinct MI300X", "AMD Instinct MI300X"),
                                                    ("AMD Instinct MI325X", "AMD Instinct MI325X"),
                                                    ("AMD Instinct MI355X", "AMD Instinct MI355X"),
                                                    ("NVIDIA GB200", "NVIDIA GB200"), ("NVIDIA B200", "NVIDIA B200")])
def test_the_gpus_traces_run_on_are_in_the_table_with_dense_peaks(exported: str, expected: str) -> None:
    spec = lookup(exported)
    assert spec is not None and spec.name == expected and spec.llc_bytes
    assert all("sparsity" not in spec.sources[k] or "twice" in spec.sources[k] for k in spec.peaks)
