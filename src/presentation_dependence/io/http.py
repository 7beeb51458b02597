"""HTTP with a wall-clock deadline per attempt, and refusal bodies fit for an error message.

:func:`post_with_deadline` runs one ``urllib`` request whose whole exchange (connect, send,
headers, body) must finish within ``timeout_s`` seconds: a timer shuts the request's sockets when
the deadline passes, so a server that trickles bytes (each within the per-read socket timeout)
cannot hold the caller longer. :class:`ApiClient` posts to an OpenAI-compatible endpoint
(``chat/completions`` or ``completions``) with bounded retries on 429 / 5xx / timeouts /
malformed bodies, exponential backoff with seeded jitter, and call counts; any other 4xx is
refused at once with the server's reason. Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, Protocol

from presentation_dependence.errors import PresdepError
from presentation_dependence.secrets import redact
from presentation_dependence.seeding import rng_from

__all__ = [
    "MAX_ERROR_BODY",
    "ApiClient",
    "ApiRequestError",
    "ClientSettings",
    "error_text",
    "get_json",
    "post_with_deadline",
]

logger = logging.getLogger(__name__)

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


class ApiRequestError(PresdepError, RuntimeError):
    """A request failed after every retry, or was refused (4xx other than 429)."""


class ClientSettings(Protocol):
    """The options an :class:`ApiClient` reads (a reranker's or a judge's options)."""

    @property
    def base_url(self) -> str: ...
    @property
    def api_key_env(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def backoff_base_s(self) -> float: ...
    @property
    def backoff_max_s(self) -> float: ...


def _answer_text(endpoint: str, body: Mapping[str, Any]) -> str:
    """The answer of a chat or text completion (KeyError/TypeError when the body has none)."""
    choice = body["choices"][0]
    text = choice["message"]["content"] if endpoint.endswith("chat/completions") else choice["text"]
    if not isinstance(text, str):
        raise TypeError("the answer is not a string")
    return text


class ApiClient:
    """An OpenAI-compatible client with bounded retries, backoff + seeded jitter, call counts."""

    def __init__(self, opts: ClientSettings) -> None:
        self.opts = opts
        self._rng = rng_from(opts.seed, 0xA91)  # the retry jitter stream
        self._lock = threading.Lock()
        self.http_calls = 0
        self.retries = 0
        self.failures: dict[str, int] = {}

    def _count(self, kind: str) -> None:
        with self._lock:
            self.failures[kind] = self.failures.get(kind, 0) + 1

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        with self._lock:
            jitter = float(self._rng.uniform(0.5, 1.0))
        delay = self.opts.backoff_base_s * (2**attempt) * jitter
        if retry_after is not None:
            with contextlib.suppress(ValueError):
                delay = max(delay, float(retry_after))
        return float(min(delay, self.opts.backoff_max_s))

    def post(self, endpoint: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``<base_url>/<endpoint>`` (``chat/completions`` or
        ``completions``); return the parsed JSON response, which holds an answer text."""
        url = self.opts.base_url.rstrip("/") + "/" + endpoint
        data = json.dumps(payload).encode("utf-8")
        last = "no attempt"
        for attempt in range(self.opts.max_retries + 1):
            headers = {"Content-Type": "application/json"}
            key = os.environ.get(self.opts.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")
            retry_after: str | None = None
            with self._lock:
                self.http_calls += 1
            try:
                body = json.loads(post_with_deadline(req, self.opts.timeout_s))
                _answer_text(endpoint, body)
                return dict(body)
            except urllib.error.HTTPError as e:
                if e.code != 429 and e.code < 500:
                    reason = error_text(getattr(e, "presdep_body", b""), key)
                    raise ApiRequestError(
                        f"{url} refused the request: HTTP {e.code} {e.reason}: {reason}. Fix: "
                        f"what the server names (e.g. the model name or max_tokens), base_url, "
                        f"or the key in ${self.opts.api_key_env}"
                    ) from None
                retry_after = e.headers.get("Retry-After") if e.headers else None
                last = f"HTTP {e.code}"
                self._count(str(e.code))
            except TimeoutError as e:
                last = f"timeout ({e})"
                self._count("timeout")
            except urllib.error.URLError as e:
                if isinstance(e.reason, TimeoutError):
                    last, kind = "timeout", "timeout"
                else:
                    last, kind = f"connection error ({e.reason})", "connection"
                self._count(kind)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                last = f"malformed body ({type(e).__name__})"
                self._count("malformed")
            except (ConnectionError, OSError, http.client.HTTPException) as e:
                last = f"connection error ({e})"
                self._count("connection")
            if attempt == self.opts.max_retries:
                break
            with self._lock:
                self.retries += 1
            delay = self._backoff(attempt, retry_after)
            logger.info("request failed (%s); retry %d in %.2f s", last, attempt + 1, delay)
            time.sleep(delay)
        raise ApiRequestError(
            f"{url}: no valid answer after {self.opts.max_retries + 1} attempts; last: {last}"
        )


def get_json(url: str, timeout_s: float) -> Any:
    """GET ``url`` and parse its JSON body (``/models`` of a server)."""
    req = urllib.request.Request(url, method="GET")
    return json.loads(post_with_deadline(req, timeout_s))
