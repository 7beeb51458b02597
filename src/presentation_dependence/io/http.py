"""HTTP with a wall-clock deadline per attempt, and refusal bodies fit for an error message.

:func:`post_with_deadline` runs one ``urllib`` request whose whole exchange (connect, send,
headers, body) must finish within ``timeout_s`` seconds: a timer shuts the request's sockets when
the deadline passes, so a server that trickles bytes (each within the per-read socket timeout)
cannot hold the caller longer. Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

from presentation_dependence.secrets import redact

__all__ = ["MAX_ERROR_BODY", "error_text", "post_with_deadline"]

MAX_ERROR_BODY = 300  # characters of a refusal's body shown in the error


class _Deadline:
    """Shuts the sockets of one HTTP attempt when its wall-clock deadline passes, so that a
    blocked read returns at once whatever the per-read socket timeout. (The sockets are kept
    here: urllib drops its connection's reference once the headers are read.)"""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            socks = list(self._socks)
        for sock in socks:
            self._shut(sock)

    def track(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            expired = self.expired
        if expired:
            self._shut(sock)

    def opener(self) -> urllib.request.OpenerDirector:
        """An opener whose HTTP(S) connections this deadline can shut."""
        deadline = self

        class _Http(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                deadline.track(self.sock)

        class _Https(http.client.HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                deadline.track(self.sock)

        class _HttpHandler(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(_Http, req)

        class _HttpsHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(_Https, req, context=getattr(self, "_context", None))

        return urllib.request.build_opener(_HttpHandler(), _HttpsHandler())


def error_text(raw: bytes, key: str | None) -> str:
    """A refusal body for an error message: its ``error.message`` when it is JSON, truncated
    to :data:`MAX_ERROR_BODY` characters and redacted (the API ``key`` always, whatever the
    name of its variable)."""
    text = raw.decode("utf-8", errors="replace").strip()
    with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
        msg = json.loads(text)["error"]["message"]
        if isinstance(msg, str):
            text = msg
    text = redact(text)
    if key:
        text = text.replace(key, "<redacted:api key>")
    if len(text) > MAX_ERROR_BODY:
        text = text[:MAX_ERROR_BODY] + f"... ({len(text)} characters)"
    return text or "(empty body)"


def post_with_deadline(req: urllib.request.Request, timeout_s: float) -> bytes:
    """The response body of ``req``, within the wall-clock deadline ``timeout_s``.

    A deadline that passes raises :class:`TimeoutError`. An :class:`urllib.error.HTTPError`
    propagates with its body (read within the deadline, at most 64 KiB) as ``presdep_body``.
    """
    with _Deadline(timeout_s) as deadline:
        try:
            with deadline.opener().open(req, timeout=timeout_s) as resp:
                return bytes(resp.read())
        except urllib.error.HTTPError as e:
            body = b""
            with contextlib.suppress(Exception):
                body = e.read(64 * 1024)
            e.presdep_body = body  # type: ignore[attr-defined]
            raise
        except Exception:
            if deadline.expired:
                raise TimeoutError(
                    f"no complete answer within the {timeout_s:g} s deadline"
                ) from None
            raise
