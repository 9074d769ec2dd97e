"""Device ceilings: the built-in GPU table, name matching, and user override files.

Ceilings are SI: peaks in FLOP/s (OP/s for int8), bandwidth in bytes/s. Peak keys:

``fp64``, ``fp32``
    non-tensor (FMA pipe) peaks, FMA = 2 FLOPs (docs/research/formulas.md §1.2-1.3).
``fp16``
    non-tensor half2 peak (HFMA2 = 4 FLOPs, docs/research/formulas.md §1.4).
``tensor``
    dense FP16/BF16 tensor-core peak with FP32 accumulate (docs/research/formulas.md §4.1, §7 item 10).
``tf32``, ``bf16``, ``fp8``, ``int8``, ``fp64_tensor``, ``tensor_fp16acc``
    dense tensor-core peaks of that input type (no 2:4 sparsity).

Bandwidth keys: ``dram``, ``l2``, ``l1``. The built-in table (``analyzer/data/devices.json``) is a
fallback: ceilings taken from the export (``.peak_sustained`` x cycles/s) are exact for the
device and clock the kernel ran at, and win (see :mod:`analyzer.ceilings.per_kernel`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from rooftop.analyzer.schema.vocab import BANDWIDTH_CEILINGS, COMPUTE_CEILINGS
from rooftop.errors import InputError

PEAK_KEYS: tuple[str, ...] = COMPUTE_CEILINGS  # the ceiling vocabularies (analyzer/schema/vocab.py)
BANDWIDTH_KEYS: tuple[str, ...] = BANDWIDTH_CEILINGS
_DROP_WORDS = {"nvidia", "tesla", "geforce", "quadro", "corporation"}


@dataclass(frozen=True)
class DeviceSpec:
    """One GPU's ceilings, with where each number comes from."""

    name: str
    source: str  # "builtin" | "export" | "user"
    sm_count: int | None
    cc: str | None
    peaks: dict[str, float]
    bandwidth: dict[str, float]
    sources: dict[str, str]
    clock_mhz: dict[str, float] = field(default_factory=dict)  # "sm" (boost), "tensor" (if different)
    match: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # normalized export spellings that name exactly this device
    base: str | None = None  # user file: the built-in device it starts from
    user_keys: tuple[str, ...] = ()  # user file with a base: the ceilings the file itself gives
    llc_bytes: float | None = None  # last-level cache in front of DRAM (L2; AMD: Infinity Cache), bytes

    def as_contract(self) -> dict[str, Any]:
        """The contract's ``devices[]`` entry (ceilings in SI units)."""
        return {
            "name": self.name,
            "source": self.source,
            "ceilings": {**self.peaks, **self.bandwidth},
            "sources": {k: v for k, v in self.sources.items() if k != "llc_bytes"},  # the ops verdicts use it
            "sm_count": self.sm_count,
            "cc": self.cc,
        }

    def matches(self, normalized: str) -> bool:
        return any(re.search(p, normalized) for p in self.match)


def normalize_name(name: str) -> str:
    """``"NVIDIA A100-SXM4-80GB\\x1aj"`` -> ``"a100 sxm4 80gb j"``: lower case, words only."""
    text = "".join(ch if ch.isascii() and ch.isprintable() else " " for ch in name).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", text) if w and w not in _DROP_WORDS]
    return " ".join(words)


def _spec_from_dict(d: dict[str, Any], source: str, where: str) -> DeviceSpec:
    def numbers(section: str, allowed: tuple[str, ...]) -> dict[str, float]:
        raw = d.get(section) or {}
        if not isinstance(raw, dict):
            raise InputError(where, f"'{section}' must be a mapping of name to number",
                             "see `rooftop devices --json` for the shape")
        out: dict[str, float] = {}
        for k, v in raw.items():
            if isinstance(v, str):  # YAML 1.1 reads "1.0e13" as text
                with contextlib.suppress(ValueError):
                    v = float(v)
            if k not in allowed:
                raise InputError(where, f"unknown {section} key {k!r}",
                                 f"use one of: {', '.join(allowed)}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise InputError(where, f"{section}.{k} must be a positive number in SI units, got {v!r}",
                                 "FLOP/s for peaks, bytes/s for bandwidth (e.g. 3.35e12)")
            out[k] = float(v)
        return out

    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InputError(where, "device has no 'name'", "add \"name\": \"My GPU\"")
    sm = d.get("sm_count")
    if sm is not None and (isinstance(sm, bool) or not isinstance(sm, int) or sm <= 0):
        raise InputError(where, f"sm_count must be a positive integer, got {sm!r}")
    cc = d.get("cc")
    llc = d.get("llc_bytes")
    if llc is not None and (isinstance(llc, bool) or not isinstance(llc, (int, float)) or not llc > 0):
        raise InputError(where, f"llc_bytes must be a positive number of bytes, got {llc!r}",
                         "the last-level cache size, e.g. 52428800 for 50 MB")
    clock = d.get("clock_mhz") or {}
    if not isinstance(clock, dict):
        raise InputError(where, "'clock_mhz' must be a mapping like {\"sm\": 1980}")
    return DeviceSpec(
        name=name.strip(),
        source=source,
        sm_count=sm,
        cc=str(cc) if cc is not None else None,
        peaks=numbers("peaks", PEAK_KEYS),
        bandwidth=numbers("bandwidth", BANDWIDTH_KEYS),
        sources={str(k): str(v) for k, v in (d.get("sources") or {}).items()},
        clock_mhz={str(k): float(v) for k, v in clock.items()},
        match=tuple(d.get("match") or ()),
        aliases=tuple(normalize_name(str(a)) for a in d.get("aliases") or ()),
        base=str(d["base"]) if d.get("base") and source == "user" else None,
        user_keys=tuple(sorted(d.get("user_keys") or ())) if source == "user" else (),
        llc_bytes=float(llc) if llc is not None else None,
    )


@lru_cache(maxsize=1)
def _builtin() -> tuple[DeviceSpec, ...]:
    text = resources.files("rooftop.analyzer").joinpath("data/devices.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return tuple(_spec_from_dict(d, "builtin", "analyzer/data/devices.json") for d in data["devices"])


def builtin() -> list[DeviceSpec]:
    """Every built-in device (docs/research/formulas.md §4.1 datasheet peaks, §4.3 cache bandwidths)."""
    return list(_builtin())


def lookup(name: str | None, cc: str | None = None, sm_count: int | None = None) -> DeviceSpec | None:
    """The built-in device for a name as exports spell it; else the one device with this CC and SM count.

    Names are matched after dropping vendor words, punctuation and stray bytes ("NVIDIA A10Gj",
    "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3"). Returns ``None`` when nothing (or more
    than one device) fits: a wrong ceiling is worse than none.
    """
    devices = _builtin()
    if name:
        norm = normalize_name(str(name))
        for spec in devices:
            if spec.matches(norm):
                return spec
        for spec in devices:  # a canonical name typed by a user ("NVIDIA H100 SXM5 80GB")
            if normalize_name(spec.name) == norm:
                return spec
    if cc and sm_count:
        hits = [s for s in devices if s.cc == str(cc) and s.sm_count == int(sm_count)]
        if len(hits) == 1:
            return hits[0]
    return None


def load_device_option(option: str | None) -> DeviceSpec | None:
    """``--device``: a built-in name, or a JSON/YAML ceilings file (source ``"user"``).

    A file holds one device: ``{"name", "sm_count"?, "cc"?, "clock_mhz"?, "peaks": {...},
    "bandwidth": {...}, "sources"?}`` in SI units, optionally ``"base": "<built-in name>"`` to
    start from a built-in device and override some ceilings.
    """
    if option is None or not str(option).strip():
        return None
    opt = str(option).strip()
    path = Path(opt)
    if path.suffix.lower() in (".json", ".yaml", ".yml") or path.is_file():
        return _load_file(path)
    spec = lookup(opt)
    if spec is None:
        raise InputError(opt, "is not a known device name",
                         "run `rooftop devices` for the names, or pass a JSON/YAML ceilings file")
    return spec


MAX_DEVICE_FILE_BYTES = 1 << 20  # a device file is a few hundred bytes


def _read_text(path: Path) -> str:
    """The device file's text: a regular file of at most :data:`MAX_DEVICE_FILE_BYTES` (a FIFO or
    device such as /dev/zero is refused, never read forever)."""
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputError(where, f"cannot be read: {exc.strerror or exc}", "check the path") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(where, "is not a regular file (a device, pipe or folder)",
                             "give a JSON or YAML device file")
        raw = os.read(fd, MAX_DEVICE_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(where, f"cannot be read: {exc.strerror or exc}", "check the path") from exc
    finally:
        os.close(fd)
    if len(raw) > MAX_DEVICE_FILE_BYTES:
        raise InputError(where, f"is larger than {MAX_DEVICE_FILE_BYTES:,} bytes, far more than one device",
                         "give a file that holds one device object")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(where, "is not UTF-8 text", "save the device file as UTF-8 JSON or YAML") from exc


def _load_yaml(text: str, where: str) -> Any:
    """YAML without aliases: ``*name`` references can expand a small file into an exponential
    structure ("billion laughs"); a device file needs none, so any alias is refused before loading."""
    try:
        import yaml
    except ImportError as exc:
        raise InputError(where, "is YAML but pyyaml is not installed",
                         "pip install 'rooftop[yaml]', or write the file as JSON") from exc
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise InputError(where, f"uses a YAML alias (*{event.anchor}), which rooftop does not read "
                                 "in a device file", "write each value out")
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(where, f"is not valid YAML: {str(exc).splitlines()[0]}") from exc
    except RecursionError as exc:
        raise InputError(where, "nests too deep to be a device file", "give one device object") from exc


def _load_file(path: Path) -> DeviceSpec:
    where = str(path)
    text = _read_text(path)
    data: Any
    if path.suffix.lower() in (".yaml", ".yml"):
        data = _load_yaml(text, where)
    else:
        from rooftop.parsers.json_depth import check_json_depth  # NumPy: only when a file is given

        check_json_depth(text, where)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(where, f"is not valid JSON: {exc.msg}", "fix the syntax",
                             line=exc.lineno) from exc
    if not isinstance(data, dict):
        raise InputError(where, "must hold one device object", "see `rooftop devices --json`")
    base_name = data.get("base")
    merged: dict[str, Any] = {}
    base: DeviceSpec | None = None
    if base_name is not None:
        base = lookup(str(base_name))
        if base is None:
            raise InputError(where, f"base device {base_name!r} is not a built-in device",
                             "run `rooftop devices` for the names")
        merged = {"name": base.name, "sm_count": base.sm_count, "cc": base.cc,
                  "clock_mhz": dict(base.clock_mhz), "peaks": dict(base.peaks),
                  "bandwidth": dict(base.bandwidth), "sources": dict(base.sources)}
    for key, value in data.items():
        if key in ("peaks", "bandwidth", "sources", "clock_mhz") and isinstance(value, dict):
            merged.setdefault(key, {}).update(value)
        elif key not in ("base", "user_keys"):
            merged[key] = value
    if "name" not in merged:
        merged["name"] = path.stem
    user_keys = set(data.get("peaks") or {}) | set(data.get("bandwidth") or {})
    sources = merged.setdefault("sources", {})
    for k in user_keys:
        sources[k] = f"user file {path.name}"
    merged.pop("match", None)
    merged.pop("aliases", None)
    if base_name is not None:
        merged["base"] = base.name if base is not None else None
        merged["user_keys"] = sorted(set(data.get("peaks") or {}) | set(data.get("bandwidth") or {}))
    return _spec_from_dict(merged, "user", where)
