"""A hostile or broken Prometheus server (issue 30 items 7, 14 and 3's newline name): the token stays
with its host, every request ends by a deadline and a size cap, odd answers and odd tokens end in
one typed error that never shows the token. Stub servers on 127.0.0.1 / 127.0.0.2 only."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rooftop.cli.commands import main
from rooftop.errors import InputError
from rooftop.parsers.prometheus import http as ph
from rooftop.parsers.prometheus import transport
from tests.prom_server import at

T0 = at(0).timestamp()
SECRET = "s3cret-TOKEN-value"


def matrix(series: list[dict[str, Any]]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}).encode()


def good_series(gpu: str = "0") -> dict[str, Any]:
    return {"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE", "gpu": gpu, "Hostname": "n1"},
            "values": [[T0 + 60 * k, "0.5"] for k in range(60)]}


class Stub:
    """A tiny HTTP server on ``host``: ``answer(handler)`` writes each reply; every request's
    Authorization header is kept in ``auth``."""

    def __init__(self, answer: Callable[[http.server.BaseHTTPRequestHandler], None], host: str = "127.0.0.1") -> None:
        self.auth: list[str | None] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.do_POST()

            def do_POST(self) -> None:
                if self.command == "POST":
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stub.auth.append(self.headers.get("Authorization"))
                with contextlib.suppress(OSError):
                    answer(self)

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def reply(h: http.server.BaseHTTPRequestHandler, body: bytes, code: int = 200, length: bool = True) -> None:
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    if length:
        h.send_header("Content-Length", str(len(body)))
    else:
        h.send_header("Connection", "close")
    h.end_headers()
    h.wfile.write(body)


@contextlib.contextmanager
def stub(answer: Callable[[http.server.BaseHTTPRequestHandler], None], host: str = "127.0.0.1") -> Iterator[Stub]:
    try:
        s = Stub(answer, host)
    except OSError as exc:  # 127.0.0.2 not routable to this host (rare: some containers)
        pytest.skip(f"cannot listen on {host}: {exc}")
    try:
        yield s
    finally:
        s.close()


def query(tmp: Path, token: str | None = SECRET, **kw: Any) -> ph.PromQuery:
    token_file = None
    if token is not None:
        (tmp / "token").write_text(token)
        token_file = str(tmp / "token")
    return ph.PromQuery(since=at(0), until=at(1), step_s=60, token_file=token_file, **kw)


def rooftop(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


# item 7: the token is dropped on a redirect to another host


def test_token_is_not_sent_to_another_host_after_a_redirect(tmp_path: Path) -> None:
    with stub(lambda h: reply(h, matrix([good_series()])), host="127.0.0.2") as other:
        def redirect(h: http.server.BaseHTTPRequestHandler) -> None:
            h.send_response(302)
            h.send_header("Location", other.url + h.path)
            h.send_header("Content-Length", "0")
            h.end_headers()

        with stub(redirect) as first:
            got = ph.pull(first.url, query(tmp_path), tmp_path / "out")
    assert first.auth == [f"Bearer {SECRET}"]  # the server it was given for
    assert other.auth and all(a is None for a in other.auth)  # never the other host
    assert got.points == 60


def test_token_is_kept_on_a_redirect_to_the_same_host(tmp_path: Path) -> None:
    def answer(h: http.server.BaseHTTPRequestHandler) -> None:
        if h.path.startswith("/old/"):
            h.send_response(301)
            h.send_header("Location", h.path[len("/old"):])
            h.send_header("Content-Length", "0")
            h.end_headers()
        else:
            reply(h, matrix([good_series()]))

    with stub(answer) as s:
        ph.pull(s.url + "/old", query(tmp_path), tmp_path / "out")
    assert s.auth == [f"Bearer {SECRET}"] * 2


def test_a_refusal_after_a_cross_host_redirect_says_why(tmp_path: Path) -> None:
    with stub(lambda h: reply(h, b'{"status":"error","error":"unauthorized"}', 401), host="127.0.0.2") as other:
        def redirect(h: http.server.BaseHTTPRequestHandler) -> None:
            h.send_response(307)
            h.send_header("Location", other.url + h.path)
            h.send_header("Content-Length", "0")
            h.end_headers()

        with stub(redirect) as first:
            res = rooftop("analyze", first.url, "--since", "2025-01-01T00:00:00Z", "--until",
                          "2025-01-01T01:00:00Z", "--step", "60", "--token-file", _token(tmp_path),
                          "--json", tmp_path / "a.json", "--html", tmp_path / "a.html")
    assert res.exit_code == 2, res.output
    assert "internal error" not in res.output and SECRET not in res.output
    # urllib answers a 307 to a POST itself with the 307 (never re-posting elsewhere) or, when
    # followed, the other host's 401 names the redirect
    assert "HTTP 307" in res.output or "not sent to another host" in res.output


def test_a_followed_redirect_then_refused_names_the_redirect(tmp_path: Path) -> None:
    with stub(lambda h: reply(h, b'{"status":"error","error":"unauthorized"}', 401), host="127.0.0.2") as other:
        def redirect(h: http.server.BaseHTTPRequestHandler) -> None:
            h.send_response(302)
            h.send_header("Location", other.url + h.path)
            h.send_header("Content-Length", "0")
            h.end_headers()

        with stub(redirect) as first, pytest.raises(InputError, match="not sent to another host") as err:
            ph.pull(first.url, query(tmp_path), tmp_path / "out")
    assert SECRET not in str(err.value) and other.auth == [None]


def _token(tmp: Path, text: str = SECRET) -> Path:
    p = tmp / "tok"
    p.write_text(text)
    return p


# item 14: deadline, size cap, odd answers, odd tokens


def test_a_trickling_server_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    body = b" " * 40 + matrix([good_series()])

    def trickle(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for i in range(len(body)):  # one byte every 0.1 s: each read is well within the timeout
            h.wfile.write(body[i:i + 1])
            h.wfile.flush()
            if i < 40:
                time.sleep(0.1)

    with stub(trickle) as s, pytest.raises(InputError, match="did not answer within 1 s"):
        ph.pull(s.url, query(tmp_path, timeout_s=1.0), tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.prom"))


@pytest.mark.parametrize("length", [True, False])
def test_an_answer_larger_than_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   length: bool) -> None:
    monkeypatch.setattr(transport, "MAX_ANSWER_BYTES", 2000)
    big = matrix([good_series(str(g)) for g in range(5)])
    assert len(big) > 2000
    with stub(lambda h: reply(h, big, length=length)) as s, \
            pytest.raises(InputError, match="more than 2,000 bytes") as err:
        ph.pull(s.url, query(tmp_path), tmp_path / "out")
    assert "--match" in str(err.value)


ODD = {
    "result-not-a-list": b'{"status":"success","data":{"resultType":"matrix","result":"x"}}',
    "series-not-objects": b'{"status":"success","data":{"resultType":"matrix","result":[1,2]}}',
    "values-not-a-list": matrix([{"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE"}, "values": "zz"}]),
    "value-not-a-number": matrix([{"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE"},
                                   "values": [[T0, "1 2\nDCGM_FI_PROF_SM_ACTIVE{gpu=\"9\"} 1"]]}]),
    "time-not-a-number": matrix([{"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE"}, "values": [["x", "1"]]}]),
    "pair-too-short": matrix([{"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE"}, "values": [[T0]]}]),
    "warnings-not-a-list": b'{"status":"success","warnings":7,"data":{"result":[]}}',
    "deep-json": b"[" * 100_000 + b"]" * 100_000,
    "not-http": b"garbage\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_answers_end_in_one_typed_error(tmp_path: Path, case: str) -> None:
    body = ODD[case]

    def answer(h: http.server.BaseHTTPRequestHandler) -> None:
        if case == "not-http":
            h.wfile.write(body)
            return
        reply(h, body)

    with stub(answer) as s:
        res = rooftop("ingest", s.url, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                      "--step", "60", "--to", tmp_path / "ds")
    assert res.exit_code == 2, res.output
    assert "internal error" not in res.output and "Traceback" not in res.output
    assert s.url in res.output


@pytest.mark.parametrize("case", ["count-not-a-number", "count-infinite", "count-no-value"])
def test_odd_answers_while_finding_the_step_end_in_one_typed_error(tmp_path: Path, case: str) -> None:
    sample = {"count-not-a-number": {"metric": {}, "value": [T0, "x"]},
              "count-infinite": {"metric": {}, "value": [T0, "+Inf"]},
              "count-no-value": {"metric": {}}}[case]

    def answer(h: http.server.BaseHTTPRequestHandler) -> None:
        if "label/__name__" in h.path:
            return reply(h, b'{"status":"success","data":["DCGM_FI_PROF_SM_ACTIVE"]}')
        reply(h, json.dumps({"status": "success", "data": {"resultType": "vector", "result": [sample]}}).encode())

    with stub(answer) as s, pytest.raises(InputError, match="answered query with"):
        ph.pull(s.url, ph.PromQuery(since=at(0), until=at(1)), tmp_path / "out")


def test_a_metric_name_with_a_newline_injects_no_sample(tmp_path: Path) -> None:
    evil = {"metric": {"__name__": 'DCGM_FI_PROF_SM_ACTIVE{gpu="7"} 0.99 1735689600000\nDCGM_FI_PROF_SM_ACTIVE',
                       "gpu": "1"}, "values": [[T0, "0.5"]]}
    label = {"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE", "gpu": "2",
                        "Hostname": 'n1"} 0.99 1\nDCGM_FI_PROF_SM_ACTIVE{gpu="8'}, "values": [[T0, "0.5"]]}
    with stub(lambda h: reply(h, matrix([good_series(), evil, label]))) as s:
        got = ph.pull(s.url, query(tmp_path, token=None), tmp_path / "out")
    text = "".join(f.read_text() for f in got.files)
    assert 'gpu="7"' not in text and not any(line.startswith('DCGM_FI_PROF_SM_ACTIVE{gpu="8') for line in
                                               text.splitlines())
    assert len(text.splitlines()) == 61  # the good series' 60 points and the hostile label's one
    assert sum(got.skipped.values()) == 1 and "not read" in got.describe(s.url)


@pytest.mark.parametrize("token", ["abc\r\nX-Injected: 1", "abc def", "tök"])
def test_a_token_that_cannot_be_a_header_is_refused_without_showing_it(tmp_path: Path, token: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with stub(lambda h: reply(h, matrix([good_series()]))) as s:
        res = rooftop("ingest", s.url, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                      "--step", "60", "--to", tmp_path / "ds", "--token-file", _token(tmp_path, SECRET + token))
        assert res.exit_code == 2, res.output
        assert "internal error" not in res.output and SECRET not in res.output and "cannot go into" in res.output
        monkeypatch.setenv(transport.TOKEN_ENV, SECRET + token)
        res = rooftop("ingest", s.url, "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-01T01:00:00Z",
                      "--step", "60", "--to", tmp_path / "ds")
    assert res.exit_code == 2, res.output
    assert SECRET not in res.output and transport.TOKEN_ENV in res.output
    assert s.auth == []  # nothing was sent


def test_a_token_file_that_is_a_pipe_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def writer() -> None:  # a writer, so that reading the pipe would not block forever
        with contextlib.suppress(OSError), open(fifo, "w") as fh:
            fh.write(SECRET)

    threading.Thread(target=writer, daemon=True).start()
    with pytest.raises(InputError, match="not a regular file") as err:
        transport.read_token(str(fifo))
    assert SECRET not in str(err.value)
    with contextlib.suppress(OSError):  # release the writer
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)


def test_a_token_file_that_is_a_device_is_refused() -> None:
    with pytest.raises(InputError, match="not a regular file"):
        transport.read_token("/dev/zero")
