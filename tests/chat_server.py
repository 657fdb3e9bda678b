"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

It speaks the real HTTP protocol (``POST /v1/chat/completions``, and ``/v1/completions`` whose
prompt the responder sees as one user message; JSON in and out, ``usage`` fields), so the
``openai`` client is exercised end to end. ``responder`` decides each answer from the messages
(or from the messages and the whole request body, if it takes two arguments); ``models``
serves several model names, each with its own responder (other names get a 404). Failure
modes: ``faults`` scripts the first requests, one fault each (an HTTP status, ``"hang"``,
``"malformed"``, ``"empty_choices"``, or ``None``: a good answer); then ``fail_first`` requests
get ``status`` (e.g. 429); ``hang_after`` makes every later request hang until the server stops;
``broken`` makes every answer ``"malformed"`` (a 200 whose body is cut-off JSON) or
``"empty_choices"``; ``delay`` slows every answer down. The attributes may change between runs.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[..., str]
Fault = int | str | None
_FAULTS = (None, "hang", "malformed", "empty_choices")


def always(text: str) -> Callable[[list[dict[str, Any]]], str]:
    return lambda messages: text


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat request's messages; a text completion's prompt as one user message."""
    return body.get("messages") or [{"role": "user", "content": body.get("prompt", "")}]


def _call(responder: Responder, body: dict[str, Any]) -> str:
    if len(inspect.signature(responder).parameters) >= 2:
        return responder(_messages(body), body)
    return responder(_messages(body))


class ChatServer:
    def __init__(
        self,
        responder: Responder | None = None,
        *,
        fail_first: int = 0,
        status: int = 429,
        hang_after: int | None = None,
        model: str = "test-model",
        models: dict[str, Responder] | None = None,
        broken: str | None = None,
        delay: float = 0.0,
        faults: Sequence[Fault] = (),
    ) -> None:
        for fault in (broken, *faults):
            if not isinstance(fault, int) and fault not in _FAULTS:
                raise ValueError(f"unknown failure mode {fault!r}")
        self.responders = dict(models or {})
        if responder is not None:
            self.responders.setdefault(model, responder)
        self.fail_first, self.status = fail_first, status
        self.hang_after, self.model = hang_after, model
        self.broken, self.delay, self.faults = broken, delay, list(faults)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    count = len(server.requests)
                if server.delay:
                    time.sleep(server.delay)
                fault = server.fault(count)
                if isinstance(fault, int):
                    return self._send(fault, {"error": {"message": "slow down"}},
                                      {"Retry-After": "0.05"})
                if fault == "hang":
                    server.stopping.wait(60)
                    return None
                responder = server.responders.get(body["model"])
                if responder is None:
                    return self._send(404, {"error": {"message": f"no model {body['model']}"}})
                if fault == "malformed":
                    return self._send_raw(200, b'{"id": "chatcmpl-1", "choices": [{"index')
                content = _call(responder, body)
                prompt_tokens = sum(len(str(m["content"]).split()) for m in _messages(body))
                answer = ({"text": content} if "prompt" in body
                          else {"message": {"role": "assistant", "content": content}})
                choices = [] if fault == "empty_choices" else [
                    {"index": 0, "finish_reason": "stop", **answer}
                ]
                return self._send(200, {
                    "id": f"chatcmpl-{count}",
                    "object": "text_completion" if "prompt" in body else "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": choices,
                    "usage": {"prompt_tokens": prompt_tokens,
                              "completion_tokens": len(content.split()),
                              "total_tokens": prompt_tokens + len(content.split())},
                })

            def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
                self._send_raw(code, json.dumps(payload).encode(), headers)

            def _send_raw(self, code: int, data: bytes, headers: dict | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def fault(self, count: int) -> Fault:
        """The fault of the ``count``-th request (1-based), ``None`` for a good answer."""
        if count <= len(self.faults):
            return self.faults[count - 1]
        if count <= self.fail_first:
            return self.status
        if self.hang_after is not None and count > self.hang_after:
            return "hang"
        return self.broken

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
