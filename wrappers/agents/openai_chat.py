"""An OpenAI-compatible chat-completions endpoint as an agent (OpenAI, vLLM, any proxy).

Holds :class:`ChatEndpoint` (one model at one URL: retries, response cache, request budget,
token usage and cost, and what was spent: attempts, failures by kind, billed tokens),
:class:`OpenAIChatAgent` (the ``openai`` agent: one endpoint, requests answered with bounded
concurrency; a continued response (TIR Math) as a chat turn or a text completion,
:data:`CONTINUATIONS`), and the helpers the debate agents share: :func:`request_messages`,
:func:`gather`, :func:`model_price`, :func:`open_cache`, :func:`endpoint_id`.

Failures are sorted by what they mean for a run:

- the endpoint cannot be used at all (unreachable, hanging, rate-limited after every retry,
  key or model refused): :class:`~wrappers.agents.base.AgentError` is raised and the run stops,
  keeping its results, to be resumed later;
- one request went wrong (a 5xx after every retry, malformed JSON, no choices, another 4xx):
  the reply carries an ``error`` and the runner ends that episode only.

Retries back off exponentially and honour ``Retry-After``. A reply's lone surrogates (JSON can
carry ``\\ud800``; UTF-8 cannot encode it) become U+FFFD as it arrives
(:func:`~arlarena_envs.base.repair_surrogates`), so it can be cached, sent back in a debate and
written; the rest of the text is kept as the model wrote it.
"""

from __future__ import annotations

import base64
import difflib
import io
import json
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from arlarena_envs.base import repair_surrogates
from wrappers.agents.base import (
    Agent,
    AgentError,
    AgentReply,
    AgentRequest,
    register_agent,
    stream_seed,
)
from wrappers.agents.cache import RequestBudget, ResponseCache, cache_key
from wrappers.agents.continuation import continuation_of

__all__ = [
    "CONTINUATIONS",
    "ChatEndpoint",
    "OpenAIChatAgent",
    "endpoint_id",
    "gather",
    "model_price",
    "open_cache",
    "request_messages",
]

T = TypeVar("T")


def _image_part(image: np.ndarray) -> dict[str, Any]:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def request_messages(request: AgentRequest) -> list[dict[str, Any]]:
    """The prompt as one user message; a visual env's frame replaces ``<image>``."""
    image = request.info.get("image")
    if image is None:
        return [{"role": "user", "content": request.prompt}]
    before, _, after = request.prompt.partition("<image>")
    parts = [{"type": "text", "text": before}, _image_part(image), {"type": "text", "text": after}]
    return [{"role": "user", "content": parts}]


def gather(pool: Executor, calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run ``calls`` on ``pool`` and return their results in order.

    Every call finishes before an exception of one is re-raised, so the others' answers are
    cached and counted even when the run has to stop.
    """
    futures = [pool.submit(call) for call in calls]
    errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error
    return [f.result() for f in futures]


class _BadReply(Exception):
    """The server answered 200 with something that is not a usable completion."""


def model_price(model: str, prices: dict[str, Any] | None) -> dict[str, float] | None:
    """The price of ``model`` from a price table (USD per million prompt/completion tokens).

    No table (``None``) means no costs. A table without ``model`` is an error, not a missing
    cost: a misspelled name would otherwise drop part of the cost silently.

    >>> model_price("gpt-4o-mini", {"gpt-4o-mni": {"prompt": 0.15, "completion": 0.6}})
    Traceback (most recent call last):
    ValueError: no price for model 'gpt-4o-mini' (priced: 'gpt-4o-mni'; did you mean 'gpt-4o-mni'?)
    """
    if prices is None:
        return None
    if model not in prices:
        close = difflib.get_close_matches(model, [str(name) for name in prices], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        priced = ", ".join(repr(name) for name in prices) or "none"
        raise ValueError(f"no price for model {model!r} (priced: {priced}{hint})")
    price = prices[model]
    if not isinstance(price, dict) or set(price) != {"prompt", "completion"}:
        raise ValueError(
            f"price of {model!r} must be {{'prompt': USD, 'completion': USD}} per million "
            f"tokens, got {price!r}"
        )
    return {"prompt": float(price["prompt"]), "completion": float(price["completion"])}


def endpoint_id(url: Any) -> str:
    """``scheme://host[:port]/path`` of an endpoint URL: what names the server in cache keys
    and results (never a key: user info, query and fragment are dropped).

    >>> endpoint_id("https://user:sk-secret@api.example.com/v1/?key=sk-secret")
    'https://api.example.com/v1'
    """
    parts = urlsplit(str(url))
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path.rstrip('/')}"


_MAYBE_BILLED = ("timeout", "bad_reply")
"""Failed attempts a provider may still bill: a timeout, and a 200 whose body is unusable."""


class ChatEndpoint:
    """One model behind one OpenAI-compatible URL.

    :meth:`complete` returns an :class:`AgentReply` whose ``usage`` holds the tokens of that
    completion and its ``cost`` (when ``price`` is known), the same whether it came from the
    server or from the cache, so results do not depend on what was cached. :meth:`spent` counts
    what this process actually spent: every attempt sent, the failed ones by kind
    (:func:`_failure_kind`), the replies answered and those from the cache, tokens, the tokens
    the provider may have billed, and the cost.

    Args:
        model: model name.
        base_url: endpoint (default ``$OPENAI_BASE_URL``, else OpenAI's).
        api_key: key (default ``$OPENAI_API_KEY``; ``"EMPTY"`` for local servers).
        timeout: seconds per request before it counts as a timeout.
        max_retries: retries after the first attempt for retryable failures.
        backoff: first retry delay in seconds (doubles each retry, capped at 30 s).
        seed: base of the per-request ``seed`` sent to the server (derived from it, the sample
            index and ``tag``); ``None`` sends none.
        cache: a :class:`ResponseCache`, or ``None``; keyed by the endpoint (:func:`endpoint_id`),
            the model, the request and the sampling, so another server never answers from it.
        budget: the run's :class:`RequestBudget` (every attempt takes one), or ``None``.
        price: ``{"prompt": USD, "completion": USD}`` per million tokens, or ``None``.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        max_tokens: int = 512,
        temperature: float = 0.6,
        top_p: float = 0.95,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        seed: int | None = None,
        cache: ResponseCache | None = None,
        budget: RequestBudget | None = None,
        price: dict[str, float] | None = None,
    ) -> None:
        import openai

        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            timeout=timeout,
            max_retries=0,
        )
        self.endpoint = endpoint_id(self.client.base_url)
        self.sampling: dict[str, Any] = {
            "max_tokens": max_tokens, "temperature": temperature, "top_p": top_p
        }
        self.seed = seed
        self.max_retries = max_retries
        self.backoff = backoff
        self.cache = cache
        self.budget = budget
        self.price = price
        self._lock = threading.Lock()
        self._spent: dict[str, float] = {}
        self._failures: Counter[str] = Counter()

    @property
    def where(self) -> str:
        return self.base_url or "the OpenAI API"

    def settings(self) -> dict[str, Any]:
        """What changes this endpoint's replies: the model, the endpoint, sampling and seed."""
        return {"model": self.model, "endpoint": self.endpoint, "sampling": dict(self.sampling),
                "seed": self.seed}

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        sample: int = 0,
        tag: str = "",
        episode_id: str = "",
        turn: int = 0,
        prompt: str | None = None,
    ) -> AgentReply:
        """One chat completion of ``messages`` for rollout ``sample`` (``tag``: who asks); the
        request's seed is the stream of (``episode_id``, ``turn``), so a resumed run sends
        every episode's turns the seeds it would have sent. With ``prompt`` (the text of
        ``messages`` in the model's chat format, then the start of its reply), a text
        completion of that prompt instead (``/completions``): the model continues its reply."""
        # Greedy decoding does not depend on the rollout; sampling must differ between them.
        variant = {"sample": sample, "tag": tag} if self.sampling["temperature"] > 0 else {}
        sampling = dict(self.sampling)
        if self.seed is not None:
            stream = f"{episode_id}\x1f{tag}\x1f{sample}" if variant else ""
            sampling["seed"] = stream_seed(self.seed, stream, turn if variant else 0) % 2**31
        asked = {"messages": messages} if prompt is None else {"prompt": prompt}
        key = cache_key(model=self.model, endpoint=self.endpoint, sampling=sampling, **asked,
                        **variant)
        stored = self.cache.get(key) if self.cache is not None else None
        if stored is not None:
            self._add_spent({"cache_hits": 1})
            return self._reply(stored)
        stored = self._request(asked, sampling)
        if "error" in stored:
            return AgentReply("", error=stored["error"])
        if self.cache is not None:
            self.cache.put(key, stored)
        reply = self._reply(stored)
        billed = reply.usage["prompt_tokens"] + reply.usage["completion_tokens"]
        paid = {name: value for name, value in reply.usage.items() if name != "requests"}
        self._add_spent({"answered": 1, "est_billed_tokens": billed, **paid})
        return reply

    def _reply(self, stored: dict[str, Any]) -> AgentReply:
        usage = {"requests": 1, "prompt_tokens": stored["prompt_tokens"],
                 "completion_tokens": stored["completion_tokens"]}
        if self.price is not None:
            usage["cost"] = (stored["prompt_tokens"] * self.price["prompt"]
                             + stored["completion_tokens"] * self.price["completion"]) / 1e6
        return AgentReply(stored["text"], usage)

    def _request(self, asked: dict[str, Any], sampling: dict[str, Any]) -> dict[str, Any]:
        """The completion of ``asked`` (``messages`` for a chat completion, ``prompt`` for a
        text completion) as ``{text, prompt_tokens, completion_tokens}`` or ``{error}``.
        Every attempt is counted, and every failed one by its kind."""
        import openai

        stop_run = (openai.RateLimitError, openai.APIConnectionError)  # incl. timeouts
        refused_run = (openai.AuthenticationError, openai.PermissionDeniedError,
                       openai.NotFoundError)
        retried = (openai.RateLimitError, openai.InternalServerError)
        error: Exception | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self._delay(attempt - 1, error))
            if self.budget is not None:
                self.budget.take()
            self._add_spent({"attempts": 1})
            try:
                chat = "messages" in asked
                api = self.client.chat.completions if chat else self.client.completions
                return _parse_reply(api.create(model=self.model, **asked, **sampling))
            except (openai.APIConnectionError, openai.APIStatusError,
                    openai.APIResponseValidationError, json.JSONDecodeError,
                    _BadReply) as failure:
                self._failed(failure, asked)
                if isinstance(failure, refused_run):
                    raise AgentError(self._refused(failure)) from failure
                if (isinstance(failure, openai.APIStatusError) and not isinstance(failure, retried)
                        and failure.status_code not in (408, 409)):  # those two are retried
                    return {"error": self._refused(failure)}
                error = failure
        message = (f"{self.where} failed {self.max_retries + 1} times for model {self.model}: "
                   f"{type(error).__name__}: {error}")
        if isinstance(error, stop_run):
            raise AgentError(message) from error
        return {"error": message}

    def _failed(self, error: Exception, asked: dict[str, Any]) -> None:
        """Count a failed attempt; one the provider may bill adds its estimated tokens: the
        request at about 4 characters a token, and ``max_tokens``."""
        kind = _failure_kind(error)
        billed = 0
        if kind in _MAYBE_BILLED:
            billed = len(json.dumps(asked, ensure_ascii=False)) // 4 + self.sampling["max_tokens"]
        with self._lock:
            self._failures[kind] += 1
        self._add_spent({"est_billed_tokens": billed})

    def _refused(self, error: Any) -> str:
        return f"{self.where} refused the request ({error.status_code}) for {self.model}: {error}"

    def _delay(self, attempt: int, error: Exception | None) -> float:
        response = getattr(error, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            try:
                return min(float(header), 60.0)
            except ValueError:
                pass
        return min(self.backoff * 2**attempt, 30.0) * (0.5 + random.random() / 2)

    def _add_spent(self, spent: dict[str, float]) -> None:
        with self._lock:
            for name, value in spent.items():
                self._spent[name] = self._spent.get(name, 0) + value

    def spent(self) -> dict[str, Any]:
        """What was spent since the last call, reset on read: ``attempts`` sent (failed ones
        included), ``failures`` by kind, replies ``answered`` by the server and
        ``cache_hits``, the answered ``prompt_tokens`` and ``completion_tokens``,
        ``est_billed_tokens`` (those, plus the estimate of every failed attempt the provider
        may bill: at most what it billed) and ``cost`` (of the answered tokens, when priced)."""
        with self._lock:
            spent, failures = self._spent, self._failures
            self._spent, self._failures = {}, Counter()
        record: dict[str, Any] = {
            "model": self.model, "endpoint": self.endpoint, "attempts": 0, "answered": 0,
            "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "est_billed_tokens": 0, **spent, "failures": dict(failures),
        }
        if self.price is not None:
            record.setdefault("cost", 0.0)
        return record

    def close(self) -> None:
        self.client.close()


def _failure_kind(error: Exception) -> str:
    """The kind of a failed attempt: ``timeout``, ``connection``, ``rate_limit`` (429),
    ``server_error`` (5xx), ``client_error`` (another 4xx) or ``bad_reply`` (a 200 whose body
    is not a usable completion)."""
    import openai

    kinds = ((openai.APITimeoutError, "timeout"), (openai.APIConnectionError, "connection"),
             (openai.RateLimitError, "rate_limit"), (openai.InternalServerError, "server_error"),
             (openai.APIStatusError, "client_error"))
    return next((kind for cls, kind in kinds if isinstance(error, cls)), "bad_reply")


def _parse_reply(reply: Any) -> dict[str, Any]:
    choices = getattr(reply, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _BadReply("the server returned no choices")
    try:
        choice = choices[0]
        text = (choice.message.content if getattr(choice, "message", None) else choice.text) or ""
    except AttributeError as error:
        raise _BadReply(f"the server returned a malformed choice: {choices[0]!r:.200}") from error
    usage = getattr(reply, "usage", None)
    return {
        "text": repair_surrogates(str(text)),
        "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
    }


def open_cache(cache: ResponseCache | str | Path | None) -> tuple[ResponseCache | None, bool]:
    """``(cache, owned)``: a path opens a cache this caller must close; ``None`` is no cache."""
    if cache is None or isinstance(cache, ResponseCache):
        return cache, False
    return ResponseCache(cache), True


CONTINUATIONS = ("chat", "completion")
"""How the ``openai`` agent answers an env that continues one response (TIR Math): ``chat``,
the whole prompt (the response so far included) as one new user message, or ``completion``,
the first user message in the model's chat format followed by the response so far, continued
by the server's text completion (``/completions``: vLLM and most local servers)."""


def _tokenizer(template: Any) -> Any:
    """A tokenizer with the model's chat template: ``template`` itself, or the
    ``transformers`` tokenizer of that name or path."""
    if hasattr(template, "apply_chat_template"):
        return template
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(template))


@register_agent("openai")
class OpenAIChatAgent(Agent):
    """Chat-completions agent on the ``openai`` client: each prompt is one user message.

    Args:
        model: model name (default ``$OPENAI_MODEL``; required).
        concurrency: requests in flight at once.
        cache: a :class:`ResponseCache` or a directory for one (``None``: no cache;
            ``arlarena eval`` always gives one).
        budget: the run's :class:`RequestBudget`.
        prices: model → ``{"prompt": USD, "completion": USD}`` per million tokens; it must
            price ``model`` (``None``: no costs).
        continuation: ``chat`` or ``completion`` (see :data:`CONTINUATIONS`).
        chat_template: for ``completion``, the tokenizer (or its name or path) whose chat
            template formats the first message (default: the model's name).
        Other options as in :class:`ChatEndpoint`.
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
        cache: ResponseCache | str | Path | None = None,
        budget: RequestBudget | None = None,
        prices: dict[str, Any] | None = None,
        continuation: str = "chat",
        chat_template: Any = None,
        **_: object,
    ) -> None:
        model = model or os.environ.get("OPENAI_MODEL")
        if not model:
            raise ValueError("the openai agent needs a model: --model NAME or $OPENAI_MODEL")
        if continuation not in CONTINUATIONS:
            raise ValueError(f"continuation must be one of {CONTINUATIONS}, got {continuation!r}")
        self.name = f"openai:{model}"
        self.continuation = continuation
        self.template = None
        if continuation == "completion":
            self.template = _tokenizer(chat_template or model)
        self.cache, self._owns_cache = open_cache(cache)
        self.endpoint = ChatEndpoint(
            model, base_url, api_key, max_tokens=max_tokens, temperature=temperature,
            top_p=top_p, timeout=timeout, max_retries=max_retries, backoff=backoff, seed=seed,
            cache=self.cache, budget=budget, price=model_price(model, prices),
        )
        self.pool = ThreadPoolExecutor(max_workers=max(1, concurrency))

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def base_url(self) -> str | None:
        return self.endpoint.base_url

    def _ask(self, request: AgentRequest) -> AgentReply:
        parts = continuation_of(request) if self.template is not None else None
        messages, prompt = request_messages(request), None
        if parts is not None:
            user, prefix = parts
            messages = [{"role": "user", "content": user}]
            prompt = self.template.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False) + prefix
        return self.endpoint.complete(messages, sample=request.sample,
                                      episode_id=request.episode_id, turn=request.turn,
                                      prompt=prompt)

    def respond(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return gather(self.pool, [lambda r=request: self._ask(r) for request in requests])

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        replies = self.respond(requests)
        for reply in replies:
            if reply.error is not None:
                raise AgentError(reply.error)
        return [reply.text for reply in replies]

    def settings(self) -> dict[str, Any]:
        settings = {"name": self.name, **self.endpoint.settings(),
                    "continuation": self.continuation}
        if self.template is not None:
            settings["chat_template"] = getattr(self.template, "name_or_path", str(self.template))
        return settings

    def spending(self) -> list[dict[str, Any]]:
        return [self.endpoint.spent()]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.endpoint.close()
        if self._owns_cache and self.cache is not None:
            self.cache.close()
