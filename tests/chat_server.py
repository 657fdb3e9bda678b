"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for tests, with failure modes.

It is :class:`~wrappers.agents.serve.AgentServer` (the real HTTP protocol, so the ``openai``
client is exercised end to end) answering with scripted responders. ``responder`` decides each
answer from the messages (or from the messages and the whole request body, if it takes two
arguments); ``models`` serves several model names, each with its own responder (other names get
a 404). Failure modes: ``faults`` scripts the first requests, one fault each (an HTTP status,
``"hang"``, ``"malformed"``, ``"empty_choices"``, ``"not_utf8"`` (a 200 whose body is not
UTF-8), ``"trickle"`` (a 200 whose body arrives a space every 0.2 s for 20 s), or ``None``: a
good answer); then ``fail_first`` requests get ``status`` (e.g. 429, with ``Retry-After:
retry_after``); ``hang_after`` makes every later request hang until the server stops;
``broken`` makes every answer one of those faults; ``delay`` slows every answer down.
``edit(body, answer)`` may change each good answer's JSON in place (drop its usage, add
``reasoning_content``...); ``refuse(body)`` may refuse a request with ``(status, message)``.
The attributes may change between runs.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from wrappers.agents.serve import AgentServer, completion, request_messages

Responder = Callable[..., str]
Fault = int | str | None
_FAULTS = (None, "hang", "malformed", "empty_choices", "not_utf8", "trickle")


def always(text: str) -> Callable[[list[dict[str, Any]]], str]:
    return lambda messages: text


def _call(responder: Responder, body: dict[str, Any]) -> str:
    if len(inspect.signature(responder).parameters) >= 2:
        return responder(request_messages(body), body)
    return responder(request_messages(body))


class ChatServer(AgentServer):
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
        retry_after: str = "0.05",
        edit: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
        refuse: Callable[[dict[str, Any]], tuple[int, str] | None] | None = None,
    ) -> None:
        for fault in (broken, *faults):
            if not isinstance(fault, int) and fault not in _FAULTS:
                raise ValueError(f"unknown failure mode {fault!r}")
        super().__init__(None, model)
        self.responders = dict(models or {})
        if responder is not None:
            self.responders.setdefault(model, responder)
        self.fail_first, self.status = fail_first, status
        self.hang_after = hang_after
        self.broken, self.delay, self.faults = broken, delay, list(faults)
        self.retry_after, self.edit, self.refuse = retry_after, edit, refuse
        self.stopping = threading.Event()

    def fault(self, number: int) -> Fault:
        """The fault of request ``number`` (1-based), ``None`` for a good answer."""
        if number <= len(self.faults):
            return self.faults[number - 1]
        if number <= self.fail_first:
            return self.status
        if self.hang_after is not None and number > self.hang_after:
            return "hang"
        return self.broken

    def answer(self, body: dict[str, Any], number: int) -> Any:
        if self.delay:
            time.sleep(self.delay)
        fault = self.fault(number)
        if isinstance(fault, int):
            return fault, {"error": {"message": "slow down"}}, {"Retry-After": self.retry_after}
        if fault == "hang":
            self.stopping.wait(60)
            return None
        refused = self.refuse(body) if self.refuse is not None else None
        if refused is not None:
            return refused[0], {"error": {"message": refused[1]}}, {}
        responder = self.responders.get(body["model"])
        if responder is None:
            return 404, {"error": {"message": f"no model {body['model']}"}}, {}
        if fault == "malformed":
            return 200, b'{"id": "chatcmpl-1", "choices": [{"index', {}
        answer = completion(body, _call(responder, body), number)
        if self.edit is not None:
            self.edit(body, answer)
        if fault == "empty_choices":
            answer["choices"] = []
        if fault == "not_utf8":
            return 200, json.dumps(answer).encode().replace(b"chatcmpl", b"chat\xff\xfe"), {}
        if fault == "trickle":
            return 200, [b" "] * 100 + [json.dumps(answer).encode()], {}
        return 200, answer, {}

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        super().__exit__()
