"""A loopback OpenAI-compatible server (``/v1/chat/completions``, ``/v1/completions``,
``/v1/models``, ``/metrics``), with injectable faults.

It serves a local causal LM (greedy generation through transformers) or any ``responder``
callable (chat) or ``completer`` callable (token-id prompts, as vLLM takes them), on
``127.0.0.1`` at a free port, in a daemon thread. ``/metrics`` reports the requests being
handled as ``vllm:num_requests_running`` (and zero waiting and preemptions), so the server-load
figures of a judge run can be tested. Faults are injected by a queue
of one-shot fault names taken in request order (``"429"``, ``"500"``, ``"timeout"``: sleep past
the client's timeout and then answer, ``"malformed"``: a 200 with a body that is not a chat
completion, ``"400"``: a refusal with ``error_body``, ``"trickle"``: a valid answer sent one byte
every ``trickle_interval_s``). Every request is counted, so tests can show what was retried and
what was not; ``client_gone`` counts answers the client hung up on.

Used by ``tests/rerankers/test_api_teacher.py`` and by the reranker contract suite
(:func:`shared_chat_server_url`). It binds loopback only and never reads an API key.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FAULTS",
    "ChatServer",
    "Completer",
    "Responder",
    "TransformersCompleter",
    "TransformersResponder",
    "shared_chat_server_url",
    "shared_completion_server_url",
]

logger = logging.getLogger(__name__)

Responder = Callable[[Sequence[Mapping[str, Any]], Mapping[str, Any]], str]
# request body -> (text, generated token ids (EOS kept, as vLLM returns them), finish_reason)
Completer = Callable[[Mapping[str, Any]], tuple[str, list[int], str]]
FAULTS = ("429", "500", "timeout", "malformed", "400", "trickle")
DEFAULT_ERROR_BODY = b'{"error": {"message": "max_tokens is too large: 99999 > 4096"}}'


class TransformersResponder:
    """Greedy chat completion with a local causal LM (one generation at a time)."""

    def __init__(self, model_path: str, *, max_new_tokens: int = 64) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model: Any = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
        self.model.eval()
        self.model_name = model_path
        self.max_new_tokens = max_new_tokens
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
        import torch

        text = self.tokenizer.apply_chat_template(
            [dict(m) for m in messages], add_generation_prompt=True, tokenize=False
        )
        enc = self.tokenizer(str(text), add_special_tokens=False, return_tensors="pt")
        ids: Any = enc["input_ids"]
        limit = body.get("max_tokens") or self.max_new_tokens
        pad = self.tokenizer.pad_token_id
        with self._lock, torch.inference_mode():
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=int(min(limit, self.max_new_tokens)),
                do_sample=False,
                pad_token_id=pad if pad is not None else self.tokenizer.eos_token_id,
            )
        return str(self.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))


class TransformersCompleter:
    """Greedy completion of a token-id prompt with a local causal LM (one at a time)."""

    def __init__(self, model_path: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model: Any = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
        self.model.eval()
        self._lock = threading.Lock()

    def __call__(self, body: Mapping[str, Any]) -> tuple[str, list[int], str]:
        import torch

        ids = torch.tensor([list(body["prompt"])], dtype=torch.long)
        eos = self.tokenizer.eos_token_id
        with self._lock, torch.inference_mode():
            torch.manual_seed(int(body.get("seed") or 0))
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=int(body["max_tokens"]),
                do_sample=False,
                pad_token_id=eos,
                eos_token_id=eos,
            )
        new = [int(t) for t in out[0, ids.shape[1] :]]
        if eos in new:
            new = new[: new.index(eos) + 1]
        finish = "stop" if new and new[-1] == eos else "length"
        return str(self.tokenizer.decode(new, skip_special_tokens=True)), new, finish


class ChatServer:
    """``with ChatServer(responder) as srv: srv.url`` -> ``http://127.0.0.1:PORT/v1``."""

    def __init__(
        self,
        responder: Responder | None,
        *,
        completer: Completer | None = None,
        model_root: str = "",
        model_name: str = "loopback-model",
        faults: Iterable[str] = (),
        timeout_sleep_s: float = 1.0,
        expected_api_key: str | None = None,
        error_body: bytes = DEFAULT_ERROR_BODY,
        trickle_interval_s: float = 0.2,
        server_version: str | None = None,
    ) -> None:
        self.responder = responder
        self.server_version = server_version  # GET /version (vLLM's); None = 404
        self.completer = completer
        self.model_root = model_root
        self.model_name = model_name
        self.timeout_sleep_s = timeout_sleep_s
        self.error_body = error_body
        self.trickle_interval_s = trickle_interval_s
        self._busy = 0
        self.expected_api_key = expected_api_key
        self._faults: deque[str] = deque()
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()  # requests, ok, and one entry per fault served
        self.served_prompts: Counter[str] = Counter()  # user content -> 200 answers written
        self.add_faults(faults)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add_faults(self, faults: Iterable[str]) -> None:
        for f in faults:
            if f not in FAULTS:
                raise ValueError(f"unknown fault {f!r}; known: {FAULTS}")
            with self.lock:
                self._faults.append(f)

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ChatServer:
        handler = type("Handler", (_Handler,), {"chat": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def wait_idle(self, timeout_s: float = 30.0) -> None:
        """Wait until no request is being handled (e.g. a trickle noticed its client left)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            with self.lock:
                if self._busy == 0:
                    return
            time.sleep(0.01)

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_SHARED: dict[str, ChatServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_chat_server_url(model_path: str) -> str:
    """The URL of a process-wide loopback server greedily serving ``model_path`` (started once)."""
    with _SHARED_LOCK:
        srv = _SHARED.get(model_path)
        if srv is None:
            srv = ChatServer(TransformersResponder(model_path), model_name=model_path).start()
            _SHARED[model_path] = srv
        return srv.url


def shared_completion_server_url(model_path: str) -> str:
    """The URL of a process-wide loopback server completing token-id prompts greedily with
    ``model_path`` (served under that name, the folder as its root; started once)."""
    key = "completions:" + model_path
    with _SHARED_LOCK:
        srv = _SHARED.get(key)
        if srv is None:
            srv = ChatServer(
                None,
                completer=TransformersCompleter(model_path),
                model_root=model_path,
                model_name=model_path,
            ).start()
            _SHARED[key] = srv
        return srv.url


class _Handler(BaseHTTPRequestHandler):
    """One request of the loopback server; ``chat`` is the :class:`ChatServer` it serves
    (set on a subclass made per server)."""

    chat: ChatServer

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("chat server: " + format, *args)

    def _send(
        self,
        code: int,
        body: bytes,
        headers: Mapping[str, str] = {},
        trickle: bool = False,
    ) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if not trickle:
                self.wfile.write(body)
            for i in range(len(body) if trickle else 0):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(self.chat.trickle_interval_s)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up
            with self.chat.lock:
                self.chat.counts["client_gone"] += 1

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": self.chat.model_name, "root": self.chat.model_root}]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
        elif self.path.rstrip("/") == "/metrics":
            with self.chat.lock:
                busy = self.chat._busy
            text = (
                f'vllm:num_requests_running{{model_name="m"}} {busy:.1f}\n'
                f'vllm:num_requests_waiting{{model_name="m"}} 0.0\n'
                f'vllm:num_preemptions_total{{model_name="m"}} 0.0\n'
            )
            self._send(200, text.encode())
        elif self.path.rstrip("/") == "/version" and self.chat.server_version is not None:
            self._send(200, json.dumps({"version": self.chat.server_version}).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        with self.chat.lock:
            self.chat._busy += 1
        try:
            self._post()
        finally:
            with self.chat.lock:
                self.chat._busy -= 1

    def _post(self) -> None:
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        with self.chat.lock:
            self.chat.counts["requests"] += 1
            fault = self.chat._faults.popleft() if self.chat._faults else None
        if self.chat.expected_api_key is not None and self.headers.get("Authorization") != (
            "Bearer " + self.chat.expected_api_key
        ):
            self._send(401, b'{"error": {"message": "bad key"}}')
            return
        path = self.path.rstrip("/")
        if path.endswith("/v1/completions") and self.chat.completer is not None:
            text, ids, finish = self.chat.completer(json.loads(raw))
            choice = {"index": 0, "text": text, "finish_reason": finish, "token_ids": ids}
            with self.chat.lock:
                self.chat.counts["ok"] += 1
            self._send(200, json.dumps({"choices": [choice]}).encode("utf-8"))
            return
        if not path.endswith("/chat/completions") or self.chat.responder is None:
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        if fault is not None and self._fault(fault):
            return
        body = json.loads(raw)
        messages = body["messages"]
        text = self.chat.responder(messages, body)
        out = {
            "id": "chatcmpl-loopback",
            "object": "chat.completion",
            "model": self.chat.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
        with self.chat.lock:
            if fault is None:
                self.chat.counts["ok"] += 1
                self.chat.served_prompts[str(messages[-1].get("content", ""))] += 1
        self._send(200, json.dumps(out).encode("utf-8"), trickle=fault == "trickle")

    def _fault(self, fault: str) -> bool:
        """Answer with the injected ``fault``; True when that was the whole answer (a timeout
        only delays the real one)."""
        with self.chat.lock:
            self.chat.counts[fault] += 1
        replies: dict[str, tuple[int, bytes, dict[str, str]]] = {
            "429": (429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"}),
            "500": (500, b'{"error": {"message": "boom"}}', {}),
            "malformed": (200, b'{"choices": [ this is not json', {}),
            "400": (400, self.chat.error_body, {}),
        }
        if fault in replies:
            self._send(*replies[fault])
            return True
        if fault == "timeout":
            time.sleep(self.chat.timeout_sleep_s)  # answer too late
        return False
