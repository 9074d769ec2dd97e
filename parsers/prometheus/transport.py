"""One HTTP request to a Prometheus server, bounded in time and size, the token kept to its host.

- **Deadline**: each request (connect, headers, body) ends within ``timeout_s`` as a whole, not per
  socket read: a server that trickles its answer a byte at a time is cut off at the deadline (a
  watchdog shuts the socket down), like curl's ``--max-time``.
- **Size**: an answer larger than :data:`MAX_ANSWER_BYTES` is refused (by its ``Content-Length``
  before reading, else once that many bytes arrived), so memory stays bounded whatever the server
  sends.
- **Redirects**: followed (urllib's rules, at most 10), but the ``Authorization`` header is dropped
  when a redirect leads to another origin (scheme, host or port), as curl and Go's net/http do: a
  bearer token is never sent to a host it was not given for. A refusal after such a redirect says so.
- **Token**: from a regular file (not a device, FIFO or folder) of at most :data:`MAX_TOKEN_BYTES`,
  or the environment; printable ASCII without spaces only (RFC 6750 ``b64token`` and the like), so
  a token with CR/LF cannot inject a header. Errors never echo the token.

Errors are :class:`InputError` naming the server (docs/formulas.md#inputs).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rooftop.errors import InputError

if TYPE_CHECKING:  # urllib.request (http.client, ssl, email) is imported only to send: bench/cli_startup.py
    import socket
    import urllib.request

TOKEN_ENV = "ROOFTOP_PROMETHEUS_TOKEN"
MAX_ANSWER_BYTES = 64 << 20  # one answer; http.POINT_BUDGET points are ~5 MB of JSON
MAX_TOKEN_BYTES = 16 << 10
CHUNK = 1 << 16


def short(text: str, n: int = 200) -> str:
    """``text`` on one line, at most ``n`` characters."""
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 3] + "..."


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port made explicit; what a token is bound to."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def check_token(token: str, where: str) -> str:
    """``token`` when it can travel in a header: printable ASCII, no spaces or controls."""
    if not token or any(not 0x21 <= ord(c) <= 0x7E for c in token):
        raise InputError(where, "the bearer token holds a space, a control character (CR, LF) or a "
                         "non-ASCII character, which cannot go into an HTTP header (the token is not shown)",
                         "write the token alone, on one line")
    return token


def read_token(token_file: str | None) -> str | None:
    """The bearer token from ``token_file`` (a regular file) or :data:`TOKEN_ENV`, checked."""
    if not token_file:
        env = os.environ.get(TOKEN_ENV)
        return check_token(env.strip(), f"${TOKEN_ENV}") if env and env.strip() else None
    try:
        fd = os.open(token_file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputError(token_file, f"token file cannot be read ({exc.strerror or exc})",
                         "check --token-file") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(token_file, "token file is not a regular file (a device, pipe or folder)",
                             "give a file that holds the token")
        if st.st_size > MAX_TOKEN_BYTES:
            raise InputError(token_file, f"token file is {st.st_size:,} bytes, more than a token "
                             f"({MAX_TOKEN_BYTES:,} at most)", "give a file that holds only the token")
        raw = os.read(fd, MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        raise InputError(token_file, f"token file cannot be read ({exc.strerror or exc})",
                         "check --token-file") from exc
    finally:
        os.close(fd)
    try:
        token = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise InputError(token_file, "token file is not UTF-8 text (the token is not shown)",
                         "write the token alone, on one line") from exc
    if not token:
        raise InputError(token_file, "token file is empty", "write the bearer token into it")
    return check_token(token, token_file)


@dataclass
class _Watch:
    """The sockets of one request and the watchdog that shuts them at the deadline."""

    socks: list[socket.socket] = field(default_factory=list)
    expired: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, sock: socket.socket) -> None:
        with self.lock:
            self.socks.append(sock)
            if self.expired:
                self._shut(sock)

    def expire(self) -> None:
        with self.lock:
            self.expired = True
            for s in self.socks:
                self._shut(s)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        import socket as _socket

        with contextlib.suppress(OSError):
            sock.shutdown(_socket.SHUT_RDWR)


@dataclass
class Transport:
    """Sends requests to ``server`` (:meth:`send`); ``redirects`` lists the other-origin URLs a
    redirect led to (the token was not sent there)."""

    server: str
    timeout_s: float
    token: str | None = None
    redirects: list[str] = field(default_factory=list)

    def request(self, url: str, data: bytes | None, headers: dict[str, str]) -> urllib.request.Request:
        import urllib.request

        req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET", headers=headers)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        return req

    def send(self, req: urllib.request.Request) -> bytes:
        """The answer's body; :class:`InputError` for every failure (see the module docstring)."""
        import urllib.error

        watch = _Watch()
        timer = threading.Timer(self.timeout_s, watch.expire)
        timer.daemon = True
        deadline = time.monotonic() + self.timeout_s
        timer.start()
        try:
            with _opener(watch, self)(req, timeout=self.timeout_s) as resp:
                return _read_capped(resp, self.server, deadline, watch)
        except urllib.error.HTTPError as exc:
            raise self._http_error(exc) from exc
        except InputError:
            raise
        except (TimeoutError, urllib.error.URLError, OSError, ValueError) as exc:
            if watch.expired or _is_timeout(exc):
                raise InputError(self.server, f"did not answer within {self.timeout_s:g} s",
                                 "retry, or narrow the range or --match") from exc
            if isinstance(exc, urllib.error.URLError):
                raise InputError(self.server, f"cannot be reached ({short(str(exc.reason))})",
                                 "check the address and that the server is running") from exc
            if isinstance(exc, ValueError):  # http.client: a malformed status line or header
                raise InputError(self.server, f"gave an answer that is not HTTP ({short(type(exc).__name__)})",
                                 "is this a Prometheus API?") from exc
            raise InputError(self.server, f"dropped the connection ({short(str(exc) or type(exc).__name__)})",
                             "retry") from exc
        except Exception as exc:  # http.client.HTTPException (bad status line, too many headers, ...)
            import http.client

            if not isinstance(exc, http.client.HTTPException):
                raise
            if watch.expired:
                raise InputError(self.server, f"did not answer within {self.timeout_s:g} s",
                                 "retry, or narrow the range or --match") from exc
            raise InputError(self.server, f"gave an answer that is not valid HTTP ({type(exc).__name__})",
                             "is this a Prometheus API?") from exc
        finally:
            timer.cancel()

    def _http_error(self, exc: urllib.error.HTTPError) -> InputError:
        detail = _error_text(exc)
        if exc.code in (401, 403):
            if self.redirects:
                return InputError(self.server, f"refused the request (HTTP {exc.code}{detail}) after a redirect "
                                  f"to {short(self.redirects[-1], 120)}: the bearer token is not sent to "
                                  "another host", "give that server's address directly")
            return InputError(self.server, f"refused the request (HTTP {exc.code}{detail})",
                              f"give a bearer token with --token-file or ${TOKEN_ENV}")
        if 300 <= exc.code < 400:
            return InputError(self.server, f"answered HTTP {exc.code} {short(str(exc.reason), 80)} (a redirect "
                              "rooftop does not follow)", "give the server's final address")
        hint = "check --match (PromQL) and the range" if exc.code < 500 else "retry later; nothing was written"
        return InputError(self.server, f"answered HTTP {exc.code} {short(str(exc.reason), 80)}{detail}", hint)


def _is_timeout(exc: BaseException) -> bool:
    import urllib.error

    return isinstance(exc, TimeoutError) or (isinstance(exc, urllib.error.URLError)
                                             and isinstance(exc.reason, TimeoutError))


def _read_capped(resp: Any, server: str, deadline: float, watch: _Watch) -> bytes:
    """The body, at most :data:`MAX_ANSWER_BYTES`, read in chunks until ``deadline``."""
    length = resp.headers.get("Content-Length")
    if length and length.strip().isdigit() and int(length) > MAX_ANSWER_BYTES:
        raise _too_big(server, int(length))
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError
        chunk: bytes = resp.read(CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise _too_big(server, size)
        parts.append(chunk)
    if watch.expired:  # the watchdog's shutdown reads as the end of the answer
        raise TimeoutError
    return b"".join(parts)


def _too_big(server: str, size: int) -> InputError:
    return InputError(server, f"answered with more than {MAX_ANSWER_BYTES:,} bytes ({size:,} seen): "
                      "rooftop holds one answer in memory and refuses larger ones",
                      "narrow --match, or give a larger --step")


def _error_text(exc: urllib.error.HTTPError) -> str:
    import json

    try:
        body = json.loads(exc.read(CHUNK) or b"{}")
    except (ValueError, OSError):
        return ""
    err = body.get("error") if isinstance(body, dict) else None
    return f": {short(str(err))}" if err else ""


def _opener(watch: _Watch, transport: Transport) -> Any:
    """``urlopen`` of an opener whose connections register their sockets with ``watch`` and whose
    redirects drop the token on a change of origin."""
    import http.client
    import urllib.request

    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    class SConn(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    class Plain(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Conn, req)

    class Secure(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(SConn, req, context=self._context)  # type: ignore[attr-defined]

    class Redirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str,
                             headers: Any, newurl: str) -> urllib.request.Request | None:
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and origin(new.full_url) != origin(req.full_url):
                new.remove_header("Authorization")
                transport.redirects.append(new.full_url)
            return new

    return urllib.request.build_opener(Plain, Secure, Redirect).open
