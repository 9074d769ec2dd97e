"""Tell the input formats apart from their content, never from the file name."""

from __future__ import annotations

import json
import re

from rooftop.parsers.source import Source

NCU_REP = "ncu-rep"
NCU_RAW = "ncu-raw-csv"
NCU_DETAILS = "ncu-details-csv"
NCU_CONSOLE = "ncu-console"
DCGM_DMON = "dcgm-dmon"
PROM_TEXT = "prometheus-text"
PROM_JSON = "prometheus-json"
SMI_CSV = "nvidia-smi-csv"
SMI_DMON = "nvidia-smi-dmon"

_CSV_HEADER = re.compile(r'^\ufeff?"ID"[,;]"Process ID"', re.M)  # ";": re-saved, decimal-comma locale
_CONSOLE = re.compile(
    r"^\s+Section: |^\s{2}\S.*\)x\(\d+, \d+, \d+\), |, Invocations \d+\s*$|, Context \d+, Stream \d+", re.M
)
_DMON = re.compile(r"^\s*#\s?Entity\b", re.M)
_PROM_LINE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{[^\n]*\})?\s+[-+0-9.eEnaNIf]+(\s+-?\d+)?\s*$", re.M)
_PROM_META = re.compile(r"^# (HELP|TYPE) [A-Za-z_:][A-Za-z0-9_:]*", re.M)
_SMI_CSV = re.compile(r"^\s*(timestamp|index|name|pci\.bus_id|uuid)\s*,.*\[\s*(%|MiB|W|MHz)\s*\]|"
                      r"^\s*(timestamp|index|name),\s*(index|name|pci\.bus_id|utilization\.gpu)", re.M | re.I)
_SMI_DMON = re.compile(r"^#\s*gpu\s+(pwr|sm|gtemp|mtemp|mem|enc|dec|mclk|pclk)\b", re.M | re.I)
_PROF = re.compile(r"^==(PROF|ERROR|WARNING)==", re.M)
# Query JSON behind a pasted curl/kubectl line; dmon rows pasted without their header lines.
_PROM_JSON_NOISY = re.compile(r'^\s*\{\s*"status"\s*:|"resultType"\s*:\s*"(vector|matrix)"', re.M)
_SMI_CSV_LOGGER = re.compile(r"^\s*timestamp\s*,.*\b(memory\.used|utilization\.gpu|power\.draw|temperature\.gpu)\b",
                             re.M | re.I)
_SMI_DMON_DT = re.compile(r"^#\s*(Date\s+)?Time\s+gpu\s", re.M | re.I)  # nvidia-smi dmon -o DT / -o T
_DMON_ROWS = re.compile(r"^\s*(GPU|GPU-I|GPU-CI)\s+\d+\s+(N/A|-?\d+(\.\d+)?)(\s+(N/A|-?\d+(\.\d+)?))*\s*$", re.M)


def detect_format(src: Source) -> str | None:
    """The format name of ``src``, or ``None`` when nothing rooftop reads is recognised."""
    if src.head_bytes.startswith(b"NVR\x00"):
        return NCU_REP
    if src.is_binary:
        return NCU_REP if _looks_like_report_block(src.head_bytes) else None
    text = src.head_text()
    stripped = text.lstrip("\ufeff \t\n")
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(src.text()) if src.size < 256 * 1024 * 1024 else None
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("data"), dict) and "resultType" in doc["data"]:
            return PROM_JSON
    if "resultType" in text and _PROM_JSON_NOISY.search(text) and '"data"' in text:
        return PROM_JSON
    m = _CSV_HEADER.search(text)
    if m:
        header = text[m.start() : text.find("\n", m.start())]
        return NCU_DETAILS if '"Metric Name"' in header else NCU_RAW
    if _DMON.search(text):
        return DCGM_DMON
    if _SMI_DMON.search(text) or _SMI_DMON_DT.search(text):
        return SMI_DMON
    if _SMI_CSV.search(text) or _SMI_CSV_LOGGER.search(text):
        return SMI_CSV
    if _PROM_META.search(text) or (len(_PROM_LINE.findall(text)) >= 1 and "DCGM_FI_" in text):
        return PROM_TEXT
    if _DMON_ROWS.search(text):
        return DCGM_DMON
    if _CONSOLE.search(text) or _PROF.search(text):
        return NCU_CONSOLE
    return None


def _looks_like_report_block(head: bytes) -> bool:
    """A headless ncu report block (no ``NVR`` magic): uint32 header length, then protobuf."""
    if len(head) < 8:
        return False
    n = int.from_bytes(head[:4], "little")
    return 0 < n < 4096 and len(head) > 4 + n
