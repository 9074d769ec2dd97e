"""The ``.ncu-rep`` container, read without NVIDIA's library: result count, version, command line.

Layout (corpus FORMATS.md §6): ``NVR\\0``, a uint32-length-prefixed protobuf (format version), a
uint32-length-prefixed file header (OS, CPU, host), then blocks. Each block is a uint32 header
length, a protobuf block header (field 2: number of results, i.e. profiled launches; field 5:
payload size) and the payload. Summing field 2 over the blocks gives the launch count, which lets
the parser notice results that ``ncu_report`` silently drops from a truncated file. The ncu
version (``2023.1.1.0 (build 32678585)``) and the command line are stored as plain protobuf strings
from about 2020.3 on; they are found by pattern, not by schema.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"NVR\x00"
_VERSION = re.compile(rb"(\d{4}\.\d+\.\d+(?:\.\d+)?) \(build (\d+)\)")
_NCU_EXE = re.compile(rb"(?:ncu|ncu\.exe|nv-nsight-cu-cli|nv-nsight-cu-cli\.exe)\"? ")


@dataclass(frozen=True)
class ContainerInfo:
    """What the container itself says, before ``ncu_report`` interprets it."""

    has_magic: bool
    declared_results: int | None  # None: the block structure could not be walked at all
    complete_results: int | None  # results in blocks that lie wholly inside the file
    truncated_at: int | None  # byte offset of a block that runs past the end of the file
    size: int
    ncu_version: str | None
    command_line: str | None


def _varint(buf: bytes | mmap.mmap, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            break
    raise ValueError("bad varint")


def _block_header(buf: bytes | mmap.mmap, start: int, end: int) -> tuple[int, int]:
    """``(results, payload_size)`` from a protobuf block header in ``buf[start:end]``."""
    results = payload = 0
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            if field == 2:
                results = value
            elif field == 5:
                payload = value
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
    if pos != end:
        raise ValueError("block header overruns its length")
    return results, payload


def _u32(buf: bytes | mmap.mmap, pos: int) -> int:
    return int.from_bytes(buf[pos : pos + 4], "little")


def walk_blocks(buf: bytes | mmap.mmap) -> tuple[int | None, int | None, int | None]:
    """``(declared_results, complete_results, truncated_at)``.

    ``declared_results`` counts the results of every block whose header is whole (the last one
    may be cut short), ``complete_results`` only those of blocks wholly inside the file;
    ``truncated_at`` is the offset of the block that runs past the end. All ``None`` when the
    bytes are not blocks.
    """
    size = len(buf)
    pos = 0
    if buf[:4] == MAGIC:
        pos = 4
        for _ in range(2):  # format-version message, then the file header
            if pos + 4 > size:
                return None, None, None
            pos += 4 + _u32(buf, pos)
    declared = 0
    blocks = 0
    while pos + 4 <= size:
        hlen = _u32(buf, pos)
        if hlen == 0 or hlen > 1 << 20:
            return (declared, declared, None) if blocks else (None, None, None)
        if pos + 4 + hlen > size:
            return declared, declared, pos
        try:
            results, payload = _block_header(buf, pos + 4, pos + 4 + hlen)
        except (ValueError, IndexError):
            return (declared, declared, None) if blocks else (None, None, None)
        blocks += 1
        end = pos + 4 + hlen + payload
        if end > size:
            return declared + results, declared, pos
        declared += results
        pos = end
    return (declared, declared, None) if blocks else (None, None, None)


def _command_line(buf: bytes | mmap.mmap) -> str | None:
    """The ncu command line: a length-prefixed string that contains the ncu executable."""
    m = _NCU_EXE.search(buf)
    if not m:
        return None
    lo = max(0, m.start() - 2048)
    for start in range(m.start(), lo, -1):
        # Field 11 of the process message (tag 0x5A), a varint length, then the string itself.
        for nlen in (1, 2):
            lp = start - nlen
            if lp - 1 < lo or buf[lp - 1] != 0x5A:
                continue
            try:
                length, after = _varint(buf, lp, start)
            except ValueError:
                continue
            if after != start or start + length < m.end():
                continue
            try:
                text = bytes(buf[start : start + length]).decode("utf-8")
            except UnicodeDecodeError:
                continue
            if text.isprintable():
                return text.strip()
    return None


def read_container(path: str | Path) -> ContainerInfo:
    """Walk the container of ``path`` (memory-mapped; never loads the whole file)."""
    p = Path(path)
    size = p.stat().st_size
    if size == 0:
        return ContainerInfo(False, None, None, None, 0, None, None)
    with p.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        has_magic = buf[:4] == MAGIC
        declared, complete, truncated = walk_blocks(buf)
        vm = _VERSION.search(buf)
        version = vm.group(1).decode() if vm else None
        cmd = _command_line(buf)
    return ContainerInfo(has_magic, declared, complete, truncated, size, version, cmd)
