"""Tell the input formats apart from their content, never from the file name: one sniffer per rule,
tried in the order of :mod:`parsers.formats`."""

from __future__ import annotations

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

# Line-start patterns use [ \t], never \s: with re.M, ``^\s*`` re-scans every following blank line
# from each line start (quadratic: 16 KB of blank lines took ~60 s to refuse; issue 30 item 13).
_CSV_HEADER = re.compile(r'^\ufeff?"ID"[,;]"Process ID"', re.M)  # ";": re-saved, decimal-comma locale
_CONSOLE = re.compile(
    r"^[ \t]+Section: |^[ \t]{2}\S.*\)x\(\d+, \d+, \d+\), |, Invocations \d+[ \t\r]*$|, Context \d+, Stream \d+", re.M
)
_DMON = re.compile(r"^[ \t]*#[ \t]?Entity\b", re.M)
_PROM_LINE = re.compile(r"^[ \t]*[A-Za-z_:][A-Za-z0-9_:]*(\{[^\n]*\})?\s+[-+0-9.eEnaNIf]+(\s+-?\d+)?\s*$", re.M)
_PROM_META = re.compile(r"^[ \t]*# (HELP|TYPE) [A-Za-z_:][A-Za-z0-9_:]*", re.M)
_SMI_CSV = re.compile(r"^[ \t]*(timestamp|index|name|pci\.bus_id|uuid)[ \t]*,.*\[[ \t]*(%|MiB|W|MHz)[ \t]*\]|"
                      r"^[ \t]*(timestamp|index|name),[ \t]*(index|name|pci\.bus_id|utilization\.gpu)", re.M | re.I)
_SMI_DMON = re.compile(r"^#[ \t]*gpu[ \t]+(pwr|sm|gtemp|mtemp|mem|enc|dec|mclk|pclk)\b", re.M | re.I)
_PROF = re.compile(r"^==(PROF|ERROR|WARNING)==", re.M)
# Query JSON behind a pasted curl/kubectl line; dmon rows pasted without their header lines.
_PROM_JSON_NOISY = re.compile(r'^[ \t]*\{\s*"status"\s*:|"resultType"\s*:\s*"(vector|matrix)"', re.M)
_SMI_CSV_LOGGER = re.compile(r"^[ \t]*timestamp[ \t]*,.*\b(memory\.used|utilization\.gpu|power\.draw|temperature\.gpu)\b",
                             re.M | re.I)
_SMI_DMON_DT = re.compile(r"^#[ \t]*(Date[ \t]+)?Time[ \t]+gpu[ \t]", re.M | re.I)  # nvidia-smi dmon -o DT / -o T
_RESULT_TYPE = re.compile(r'"resultType"\s*:\s*"(vector|matrix|scalar|string)"')
_DMON_ROWS = re.compile(r"^[ \t]*(GPU|GPU-I|GPU-CI)[ \t]+\d+[ \t]+(N/A|-?\d+(\.\d+)?)([ \t]+(N/A|-?\d+(\.\d+)?))*[ \t\r]*$",
                        re.M)


# Sniffers: each tells from the bounded head (and, for JSON, tail) of the input whether it is one
# format; parsers.formats tries them in its registered order.

def is_ncu_report(src: Source) -> bool:
    """``NVR\0`` magic, or a headless report block (binary heads only)."""
    head = src.head_bytes
    return head.startswith(b"NVR\x00") or (src.is_binary and _looks_like_report_block(head))


def is_prom_json(src: Source) -> bool:
    """A Prometheus query answer: a JSON object with ``"data"`` and ``"resultType"``, found in the
    first and last :data:`~parsers.source.SNIFF_BYTES` (a key-sorted dump puts ``resultType`` after
    the result), or query JSON behind a pasted command line. Never parses the document."""
    text = src.head_text()
    if "resultType" in text and _PROM_JSON_NOISY.search(text) and '"data"' in text:
        return True
    if not text.lstrip("\ufeff \t\n").startswith("{") or ('"data"' not in text and '"status"' not in text):
        return False
    both = text + src.tail_text()
    return '"data"' in both and _RESULT_TYPE.search(both) is not None


def _csv_header(src: Source) -> str | None:
    text = src.head_text()
    m = _CSV_HEADER.search(text)
    return text[m.start() : text.find("\n", m.start())] if m else None


def is_ncu_raw(src: Source) -> bool:
    header = _csv_header(src)
    return header is not None and '"Metric Name"' not in header


def is_ncu_details(src: Source) -> bool:
    header = _csv_header(src)
    return header is not None and '"Metric Name"' in header


def is_dcgm_dmon(src: Source) -> bool:
    return _DMON.search(src.head_text()) is not None


def is_smi_dmon(src: Source) -> bool:
    text = src.head_text()
    return bool(_SMI_DMON.search(text) or _SMI_DMON_DT.search(text))


def is_smi_csv(src: Source) -> bool:
    text = src.head_text()
    return bool(_SMI_CSV.search(text) or _SMI_CSV_LOGGER.search(text))


def is_prom_text(src: Source) -> bool:
    text = src.head_text()
    return bool(_PROM_META.search(text) or ("DCGM_FI_" in text and _PROM_LINE.search(text)))


def is_dmon_rows(src: Source) -> bool:
    return _DMON_ROWS.search(src.head_text()) is not None


def is_ncu_console(src: Source) -> bool:
    text = src.head_text()
    return bool(_CONSOLE.search(text) or _PROF.search(text))


def _looks_like_report_block(head: bytes) -> bool:
    """A headless ncu report block (no ``NVR`` magic): uint32 header length, then protobuf."""
    if len(head) < 8:
        return False
    n = int.from_bytes(head[:4], "little")
    return 0 < n < 4096 and len(head) > 4 + n
