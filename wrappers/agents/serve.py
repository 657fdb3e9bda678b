"""Any agent behind an OpenAI-compatible endpoint on 127.0.0.1, with the standard library only.

Holds :class:`AgentServer` (``POST /v1/chat/completions``, and ``/v1/completions`` whose prompt
the reply sees as one user message; JSON in and out with ``usage`` fields), :func:`completion`
(the JSON of one answer) and :func:`agent_reply` (an :class:`~wrappers.agents.base.Agent` as
the server's reply function). ``arlarena demo`` puts the embedded model behind it and evaluates
the ``openai`` agent against it, which is where an API model sits in the demo's table; the tests
put scripted replies behind it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from wrappers.agents.base import Agent, AgentRequest

__all__ = ["AgentServer", "Reply", "agent_reply", "completion", "request_messages"]

Reply = Callable[[list[dict[str, Any]], dict[str, Any]], "str | tuple[str, dict[str, int]]"]
"""The text of an answer, from the request's messages and its whole body; with its token
counts (``prompt_tokens``, ``completion_tokens``) where the replier knows them."""

POLL_S = 0.05
"""How often the serving loop checks for ``shutdown()`` (the stdlib's default: 0.5 s)."""


def request_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat request's messages; a text completion's prompt as one user message."""
    return body.get("messages") or [{"role": "user", "content": body.get("prompt", "")}]


def completion(
    body: dict[str, Any], content: str, number: int, tokens: dict[str, int] | None = None
) -> dict[str, Any]:
    """The JSON of answer ``number``: ``content`` as the request's kind of completion, with
    ``tokens`` as its usage (default: counted in words)."""
    if tokens is None:
        words = sum(len(str(m["content"]).split()) for m in request_messages(body))
        tokens = {"prompt_tokens": words, "completion_tokens": len(content.split())}
    text = "prompt" in body
    answer = {"text": content} if text else {"message": {"role": "assistant", "content": content}}
    return {
        "id": f"chatcmpl-{number}",
        "object": "text_completion" if text else "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop", **answer}],
        "usage": {**tokens, "total_tokens": tokens["prompt_tokens"] + tokens["completion_tokens"]},
    }


class AgentServer:
    """Serves ``reply`` as model ``model`` on a free port of 127.0.0.1 while in a ``with`` block.

    Every request body is kept in :attr:`requests`, its ``Authorization`` header in
    :attr:`keys`. :meth:`answer` decides each response; a
    subclass may answer otherwise (the tests' failure modes).
    """

    def __init__(self, reply: Reply | None, model: str = "local") -> None:
        self.reply, self.model = reply, model
        self.requests: list[dict[str, Any]] = []
        self.keys: list[str] = []
        self.lock = threading.Lock()
        self.pause = 0.2
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.keys.append(self.headers.get("Authorization", ""))
                    number = len(server.requests)
                answered = server.answer(body, number)
                if answered is None:
                    return
                code, payload, headers = answered
                chunks = payload if isinstance(payload, list) else [
                    payload if isinstance(payload, bytes) else json.dumps(payload).encode()]
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(sum(map(len, chunks))))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                for i, chunk in enumerate(chunks):
                    if i:
                        time.sleep(server.pause)
                    self.wfile.write(chunk)
                    self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # serve_forever notices shutdown() only at its next poll: a stop cost up to 0.5 s
        # (some 20 s over the tests' servers), now up to POLL_S
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(POLL_S,),
                                       daemon=True)

    def answer(
        self, body: dict[str, Any], number: int
    ) -> tuple[int, dict[str, Any] | bytes | list[bytes], dict[str, str]] | None:
        """``(status, JSON or raw bytes, headers)`` of request ``number``; ``None``: no answer.
        A list of byte strings is sent one by one, :attr:`pause` seconds apart."""
        if self.reply is None or body.get("model") != self.model:
            return 404, {"error": {"message": f"no model {body.get('model')}"}}, {}
        answer = self.reply(request_messages(body), body)
        content, tokens = answer if isinstance(answer, tuple) else (answer, None)
        return 200, completion(body, content, number, tokens), {}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> AgentServer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def agent_reply(agent: Agent) -> Reply:
    """``agent`` answering the text of each request's messages, one request at a time (local
    models are not thread-safe), from the stream of the request's ``seed``: the same request
    gets the same answer, with the agent's token counts. The request's sampling settings are the
    agent's own, not the body's."""
    lock = threading.Lock()

    def reply(messages: list[dict[str, Any]], body: dict[str, Any]) -> tuple[str, dict[str, int]]:
        prompt = "\n".join(str(m["content"]) for m in messages)
        with lock:
            agent.usage()  # counters are reset on read: this request's alone follow
            text = agent.act([AgentRequest(prompt, episode_id=f"seed={body.get('seed')}")])[0]
            used = agent.usage()
        return text, {key: int(used.get(key, 0)) for key in ("prompt_tokens", "completion_tokens")}

    return reply
