"""An OpenAI-compatible chat-completions endpoint as an agent (OpenAI, vLLM, any proxy).

Retries rate limits (429), server errors (5xx), timeouts and dropped connections with
exponential backoff (honouring ``Retry-After``), answers requests with bounded concurrency, and
counts token usage from the API's ``usage`` fields. A server that stays down or hangs ends in an
:class:`~wrappers.agents.base.AgentError` naming the endpoint, never in a hang.
"""

from __future__ import annotations

import base64
import io
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from wrappers.agents.base import Agent, AgentError, AgentRequest, register_agent

__all__ = ["OpenAIChatAgent"]


def _image_part(image: np.ndarray) -> dict[str, Any]:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


@register_agent("openai")
class OpenAIChatAgent(Agent):
    """Chat-completions agent on the ``openai`` client.

    Args:
        base_url: endpoint (default ``$OPENAI_BASE_URL``, else OpenAI's).
        model: model name (default ``$OPENAI_MODEL``; required).
        api_key: key (default ``$OPENAI_API_KEY``; ``"EMPTY"`` for local servers).
        timeout: seconds per request before it counts as a timeout.
        max_retries: retries after the first attempt for retryable failures.
        concurrency: requests in flight at once.
        backoff: first retry delay in seconds (doubles each retry, capped at 30 s).
    """

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.6,
        top_p: float = 0.95,
        timeout: float = 60.0,
        max_retries: int = 5,
        concurrency: int = 8,
        backoff: float = 1.0,
        seed: int | None = None,
        **_: object,
    ) -> None:
        import openai

        self.model = model or os.environ.get("OPENAI_MODEL")
        if not self.model:
            raise ValueError("the openai agent needs a model: --model NAME or $OPENAI_MODEL")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.name = f"openai:{self.model}"
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            timeout=timeout,
            max_retries=0,
        )
        self.sampling = {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p}
        if seed is not None:
            self.sampling["seed"] = seed
        self.max_retries = max_retries
        self.backoff = backoff
        self.pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
        self._lock = threading.Lock()
        self._usage = {"prompt_tokens": 0.0, "completion_tokens": 0.0, "requests": 0.0}

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        return list(self.pool.map(self._complete, requests))

    def _messages(self, request: AgentRequest) -> list[dict[str, Any]]:
        image = request.info.get("image")
        if image is None:
            return [{"role": "user", "content": request.prompt}]
        before, _, after = request.prompt.partition("<image>")
        parts = [
            {"type": "text", "text": before}, _image_part(image), {"type": "text", "text": after}
        ]
        return [{"role": "user", "content": parts}]

    def _complete(self, request: AgentRequest) -> str:
        import openai

        retryable = (openai.RateLimitError, openai.APITimeoutError, openai.APIConnectionError,
                     openai.InternalServerError)
        where = self.base_url or "the OpenAI API"
        for attempt in range(self.max_retries + 1):
            try:
                reply = self.client.chat.completions.create(
                    model=self.model, messages=self._messages(request), **self.sampling
                )
            except retryable as error:
                if attempt == self.max_retries:
                    raise AgentError(
                        f"{where} failed {attempt + 1} times for model {self.model}: "
                        f"{type(error).__name__}: {error}"
                    ) from error
                time.sleep(self._delay(attempt, error))
                continue
            except openai.APIStatusError as error:
                raise AgentError(
                    f"{where} refused the request ({error.status_code}): {error}"
                ) from error
            self._count(reply)
            if not reply.choices:
                return ""
            return reply.choices[0].message.content or ""
        raise AssertionError("unreachable")

    def _delay(self, attempt: int, error: Exception) -> float:
        response = getattr(error, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            try:
                return min(float(header), 60.0)
            except ValueError:
                pass
        return min(self.backoff * 2**attempt, 30.0) * (0.5 + random.random() / 2)

    def _count(self, reply: Any) -> None:
        usage = getattr(reply, "usage", None)
        with self._lock:
            self._usage["requests"] += 1
            if usage is not None:
                self._usage["prompt_tokens"] += usage.prompt_tokens or 0
                self._usage["completion_tokens"] += usage.completion_tokens or 0

    def usage(self) -> dict[str, float]:
        with self._lock:
            usage, self._usage = self._usage, dict.fromkeys(self._usage, 0.0)
        return usage

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()
