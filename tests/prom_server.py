"""A real Prometheus server for the tests: a DCGM capture loaded with ``promtool tsdb
create-blocks-from openmetrics``, served on 127.0.0.1 at a free port; and a fault-injecting proxy
in front of it (auth, HTTP errors, cut-short and partial answers, slowness) for the error tests.

Skips cleanly when ``prometheus``/``promtool`` are absent (``tests/setup_prometheus.sh`` installs
Debian's package)."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
STEP_S = 15
HOURS = 2
GPUS = ("0", "1")
FIELDS = {  # name -> value of gpu g at scrape k
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": lambda g, k: 0.9 if g == "0" else 0.1 + (k % 10) / 100,
    "DCGM_FI_PROF_SM_ACTIVE": lambda g, k: 0.8 if g == "0" else 0.05,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": lambda g, k: 0.7 if g == "0" else 0.0,
    "DCGM_FI_PROF_DRAM_ACTIVE": lambda g, k: 0.2 if g == "0" else 0.01,
    "DCGM_FI_DEV_GPU_UTIL": lambda g, k: 100 if g == "0" else 10,
    "DCGM_FI_DEV_POWER_USAGE": lambda g, k: 650.5 if g == "0" else 80.25,
}
SCRAPES = HOURS * 3600 // STEP_S


def openmetrics() -> str:
    """The capture as OpenMetrics text (families contiguous, timestamps in seconds, ``# EOF``)."""
    out = []
    t0 = int(START.timestamp())
    for name, value in FIELDS.items():
        out.append(f"# TYPE {name} gauge")
        for g in GPUS:
            labels = (f'gpu="{g}",UUID="GPU-0000000{g}-aaaa-bbbb-cccc-dddddddddddd",modelName="NVIDIA H100 80GB HBM3",'
                      f'hostname="node-p",instance="node-p:9400",job="dcgm"')
            out += [f"{name}{{{labels}}} {value(g, k)} {t0 + k * STEP_S}" for k in range(SCRAPES)]
    return "\n".join(out) + "\n# EOF\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("prometheus did not become ready")


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a running Prometheus holding :func:`openmetrics`."""
    prom, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not prom or not promtool:
        pytest.skip("prometheus/promtool not installed (tests/setup_prometheus.sh installs Debian's package)")
    root = tmp_path_factory.mktemp("prometheus")
    (root / "capture.om").write_text(openmetrics(), encoding="utf-8")
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(root / "capture.om"), str(root / "data")],
                   check=True, capture_output=True, timeout=300)
    (root / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\n", encoding="utf-8")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (root / "prometheus.log").open("wb")
    proc = subprocess.Popen([prom, f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'data'}",
                             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_ready(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


class Proxy:
    """Forwards to ``upstream``; ``mode`` injects a fault: ``auth`` (401 unless the bearer token is
    ``TOKEN``), ``503``, ``cut`` (the answer cut in half), ``partial`` (Thanos-style warnings),
    ``slow`` (answers after ``delay_s``), ``fail_after`` (503 after N good answers)."""

    TOKEN = "s3cret-token"

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.mode = ""
        self.delay_s = 3.0
        self.fail_after = 0
        self.seen = 0
        self.auth_headers: list[str | None] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.do_POST()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else None
                proxy.auth_headers.append(self.headers.get("Authorization"))
                proxy.seen += 1
                if proxy.mode == "auth" and self.headers.get("Authorization") != f"Bearer {Proxy.TOKEN}":
                    return self._send(401, b'{"status":"error","error":"unauthorized"}')
                if proxy.mode == "503" or (proxy.mode == "fail_after" and proxy.seen > proxy.fail_after):
                    return self._send(503, b'{"status":"error","errorType":"unavailable","error":"store down"}')
                if proxy.mode == "slow":
                    time.sleep(proxy.delay_s)
                req = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command,
                                             headers={"Content-Type": self.headers.get("Content-Type", "")})
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        data = r.read()
                except OSError:  # the test gave up on a slow answer and the server stopped meanwhile
                    return self._send(502, b'{"status":"error","error":"upstream gone"}')
                if proxy.mode == "cut":
                    data = data[: len(data) // 2]
                if proxy.mode == "partial":
                    doc = json.loads(data)
                    doc["warnings"] = ["receive-0: context deadline exceeded"]
                    data = json.dumps(doc).encode()
                return self._send(200, data)

            def _send(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def at(hours: float) -> datetime:
    return START + timedelta(hours=hours)
