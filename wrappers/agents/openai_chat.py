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

Retries back off exponentially and honour ``Retry-After`` (a value that is not 0 to 60 seconds
falls back to the backoff). A reply whose body is not UTF-8 or JSON is a ``bad_reply`` like any
other unusable 200; one without token counts is kept and counted as ``no_usage``. A reply's
lone surrogates (JSON can carry ``\\ud800``; UTF-8 cannot encode it) become U+FFFD as it
arrives (:func:`~arlarena_envs.base.repair_surrogates`), so it can be cached, sent back in a
debate and written; the rest of the text is kept as the model wrote it.
"""

from __future__ import annotations

import base64
import difflib
import importlib
import io
import json
import math
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

import numpy as np

from arlarena_envs.base import repair_surrogates
from wrappers.agents.base import (
    Agent,
    AgentError,
    AgentReply,
    AgentRequest,
    add_usage,
    register_agent,
    stream_seed,
)
from wrappers.agents.cache import RequestBudget, ResponseCache, cache_key
from wrappers.agents.continuation import continuation_of

__all__ = [
    "CONTINUATIONS",
    "ChatEndpoint",
    "Halted",
    "OpenAIChatAgent",
    "endpoint_id",
    "gather",
    "model_price",
    "open_cache",
    "redact",
    "redact_url",
    "request_messages",
    "url_secrets",
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


def redact_url(url: Any) -> str:
    """``url`` with its user info and every query value replaced by ``***``: what may be
    written of it (a key can sit in either).

    >>> redact_url("https://user:sk-secret@api.example.com/v1?key=sk-2&v=1")
    'https://***@api.example.com/v1?key=***&v=***'
    """
    parts = urlsplit(str(url))
    host = parts.netloc.rpartition("@")[2]
    netloc = f"***@{host}" if "@" in parts.netloc else host
    query = "&".join(f"{name}=***" for name, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def url_secrets(url: Any) -> list[str]:
    """The parts of ``url`` that may be a key (its user name and password, its query values)
    and are long enough (8 characters) to be told apart from other text.

    >>> url_secrets("https://user:sk-secret@api.example.com/v1?key=sk-second&v=1")
    ['sk-secret', 'sk-second']
    """
    parts = urlsplit(str(url or ""))
    found = [parts.username, parts.password]
    found += [value for _, value in parse_qsl(parts.query, keep_blank_values=False)]
    return [unquote(secret) for secret in found if secret and len(secret) >= 8]


def redact(text: str, url: Any) -> str:
    """``text`` with ``url`` (:func:`redact_url`) and each of its secrets (:func:`url_secrets`,
    also URL-quoted) replaced, so that no key in ``url`` is written with it.

    >>> redact("http://u:sk-123456@host/v1 failed: sk-123456", "http://u:sk-123456@host/v1")
    'http://***@host/v1 failed: ***'
    """
    if not url:
        return text
    text = text.replace(str(url), redact_url(url))
    for secret in sorted(url_secrets(url), key=len, reverse=True):
        text = text.replace(secret, "***").replace(quote(secret, safe=""), "***")
    return text


_MAYBE_BILLED = ("timeout", "bad_reply")
"""Failed attempts a provider may still bill: a timeout, and a 200 whose body is unusable."""

_COMPLETION_TOKENS_MODELS = re.compile(r"^(o\d|gpt-5)", re.I)
"""Models that take ``max_completion_tokens`` and refuse ``max_tokens`` (OpenAI's o-series
and GPT-5); any other model switches to it on a 400 that names it."""


def _deadline_client(timeout: float) -> Any:
    """The ``openai`` client's HTTP client, with ``timeout`` seconds for each request in all,
    its reply's body included: the HTTP library bounds each read alone, so a reply that
    trickles would run on. (The library is the one the installed ``openai`` uses: ``httpx``,
    or ``httpx2`` in later versions.)"""
    import openai

    http = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])
    ends: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    class DeadlineStream(http.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, stream: Any, end: float, request: Any) -> None:
            self.stream, self.end, self.request = stream, end, request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.stream:
                if time.monotonic() > self.end:
                    raise http.ReadTimeout("the reply did not arrive within the request's "
                                           "timeout", request=self.request)
                yield chunk

        def close(self) -> None:
            self.stream.close()

    def start(request: Any) -> None:
        ends[request] = time.monotonic() + timeout

    def bound(response: Any) -> None:
        end = ends.get(response.request)
        if end is not None:
            response.stream = DeadlineStream(response.stream, end, response.request)

    return openai.DefaultHttpxClient(timeout=timeout,
                                     event_hooks={"request": [start], "response": [bound]})


class Halted(AgentError):
    """The run is stopping: this request was not sent."""


class ChatEndpoint:
    """One model behind one OpenAI-compatible URL.

    :meth:`complete` returns an :class:`AgentReply` whose ``usage`` holds the tokens of that
    completion and its ``cost`` (when ``price`` is known), the same whether it came from the
    server or from the cache, so results do not depend on what was cached, and whose ``facts``
    say what the server said of it (:func:`_parse_reply`). :meth:`spent` counts what this
    process actually spent: every attempt sent, the failed ones by kind
    (:func:`_failure_kind`), the replies answered and those from the cache, tokens, the tokens
    the provider may have billed, and the cost. With a :attr:`journal`, each of those counts
    goes to it the moment it changes instead (an attempt before it is sent), so a killed run
    loses none.

    A reply is cached the moment it has arrived and been read, before anything else is done
    with it. :meth:`halt` makes every later attempt (a retry waiting included) give up at once
    with :class:`Halted`: what is in flight still arrives and is cached.

    Args:
        model: model name.
        base_url: endpoint (default ``$OPENAI_BASE_URL``, else OpenAI's); a key in its user
            info or query is never written (:func:`redact`: every message is scrubbed).
        api_key: key (default ``$OPENAI_API_KEY``; ``"EMPTY"`` for local servers).
        timeout: seconds per request in all (its reply's body included), then a timeout.
        max_retries: retries after the first attempt for retryable failures.
        backoff: first retry delay in seconds (doubles each retry, capped at 30 s).
        top_k: sent as ``top_k`` (vLLM and other servers honour it; the OpenAI API has none).
        seed: base of the per-request ``seed`` sent to the server (derived from it, the sample
            index and ``tag``); ``None`` sends none.
        cache: a :class:`ResponseCache`, or ``None``; keyed by the endpoint (:func:`endpoint_id`),
            the model, the request and the sampling, so another server never answers from it;
            at a temperature above 0 by the episode, turn, sample and asker too, so a prompt
            that repeats is sampled afresh (at 0 the same request reuses its reply).
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
        top_k: int | None = None,
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
            http_client=_deadline_client(timeout),
        )
        self.endpoint = endpoint_id(self.client.base_url)
        self.sampling: dict[str, Any] = {
            "max_tokens": max_tokens, "temperature": temperature, "top_p": top_p
        }
        if top_k is not None:
            self.sampling["top_k"] = top_k
        self.token_limit = ("max_completion_tokens" if _COMPLETION_TOKENS_MODELS.match(model)
                            else "max_tokens")
        self.seed = seed
        self.max_retries = max_retries
        self.backoff = backoff
        self.cache = cache
        self.budget = budget
        self.price = price
        self.journal: Callable[[dict[str, Any]], None] | None = None
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._spent: dict[str, Any] = {}

    @property
    def where(self) -> str:
        return redact_url(self.base_url) if self.base_url else "the OpenAI API"

    def settings(self) -> dict[str, Any]:
        """What changes this endpoint's replies: the model, the endpoint, sampling and seed."""
        return {"model": self.model, "endpoint": self.endpoint, "sampling": dict(self.sampling),
                "seed": self.seed}

    def halt(self) -> None:
        """Send nothing more: a retry waiting, and every later attempt, give up at once."""
        self._halt.set()

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
        sampled = self.sampling["temperature"] > 0
        variant = ({"episode": episode_id, "turn": turn, "sample": sample, "tag": tag}
                   if sampled else {})
        sampling = dict(self.sampling)
        if self.seed is not None:
            stream = f"{episode_id}\x1f{tag}\x1f{sample}" if sampled else ""
            sampling["seed"] = stream_seed(self.seed, stream, turn if sampled else 0) % 2**31
        asked = {"messages": messages} if prompt is None else {"prompt": prompt}
        key = cache_key(model=self.model, endpoint=self.endpoint, sampling=sampling, **asked,
                        **variant)
        stored = self.cache.get(key) if self.cache is not None else None
        if stored is not None:
            self._add_spent({"cache_hits": 1})
            return self._reply(stored)
        stored = self._request(asked, sampling, key)
        if "error" in stored:
            return AgentReply("", error=stored["error"])
        reply = self._reply(stored)
        billed = reply.usage["prompt_tokens"] + reply.usage["completion_tokens"]
        if reply.usage.get("no_usage"):
            billed = _estimate(asked) + len(stored["text"]) // 4
        paid = {name: value for name, value in reply.usage.items() if name != "requests"}
        self._add_spent({"answered": 1, "est_billed_tokens": billed, **paid})
        return reply

    def _reply(self, stored: dict[str, Any]) -> AgentReply:
        prompt, completion = stored["prompt_tokens"], stored["completion_tokens"]
        usage: dict[str, float] = {"requests": 1, "prompt_tokens": prompt or 0,
                                   "completion_tokens": completion or 0}
        if prompt is None or completion is None:
            usage["no_usage"] = 1  # its tokens, and so its cost, are unknown
        elif self.price is not None:
            usage["cost"] = (prompt * self.price["prompt"]
                             + completion * self.price["completion"]) / 1e6
        return AgentReply(stored["text"], usage, facts=dict(stored.get("facts") or {}))

    def _request(self, asked: dict[str, Any], sampling: dict[str, Any],
                 key: str) -> dict[str, Any]:
        """The completion of ``asked`` (``messages`` for a chat completion, ``prompt`` for a
        text completion) as ``{text, prompt_tokens, completion_tokens, facts}`` (cached under
        ``key`` as it arrives) or ``{error}``. Every attempt is counted before it is sent, and
        every failed one by its kind."""
        import openai

        stop_run = (openai.RateLimitError, openai.APIConnectionError)  # incl. timeouts
        refused_run = (openai.AuthenticationError, openai.PermissionDeniedError,
                       openai.NotFoundError)
        retried = (openai.RateLimitError, openai.InternalServerError)
        chat = "messages" in asked
        api = self.client.chat.completions if chat else self.client.completions
        error: Exception | None = None
        attempt = 0
        while attempt <= self.max_retries:
            if attempt and self._halt.wait(self._delay(attempt - 1, error)):
                raise Halted("the run is stopping: no more requests are sent")
            if self._halt.is_set():
                raise Halted("the run is stopping: no more requests are sent")
            if self.budget is not None:
                self.budget.take()
            limit = self.token_limit if chat else "max_tokens"
            sent, extra = _request_body(sampling, limit)
            self._add_spent({"attempts": 1})
            attempt += 1
            try:
                stored = _parse_reply(api.create(model=self.model, **asked, **sent,
                                                 extra_body=extra or None))
            except (openai.APIConnectionError, openai.APIStatusError,
                    openai.APIResponseValidationError, json.JSONDecodeError, UnicodeDecodeError,
                    _BadReply) as failure:
                self._failed(failure, asked)
                if isinstance(failure, refused_run):
                    raise AgentError(self._refused(failure)) from failure
                if self._switch_limit(failure, limit):
                    attempt -= 1  # the same request under the name the model takes
                    continue
                if (isinstance(failure, openai.APIStatusError) and not isinstance(failure, retried)
                        and failure.status_code not in (408, 409)):  # those two are retried
                    return {"error": self._refused(failure)}
                error = failure
                continue
            if self.cache is not None:
                self.cache.put(key, stored)
            return stored
        message = self._scrub(f"{self.where} failed {self.max_retries + 1} times for model "
                              f"{self.model}: {type(error).__name__}: {error}")
        if isinstance(error, stop_run):
            raise AgentError(message) from error
        return {"error": message}

    def _switch_limit(self, failure: Exception, limit: str) -> bool:
        """Whether ``failure`` is a 400 asking for ``max_completion_tokens`` where
        ``max_tokens`` was sent; then every later request sends that instead."""
        status = getattr(failure, "status_code", None)
        if status != 400 or limit != "max_tokens" or "max_completion_tokens" not in str(failure):
            return False
        self.token_limit = "max_completion_tokens"
        return True

    def _failed(self, error: Exception, asked: dict[str, Any]) -> None:
        """Count a failed attempt; one the provider may bill adds its estimated tokens: the
        request at about 4 characters a token, and ``max_tokens``."""
        kind = _failure_kind(error)
        billed = _estimate(asked) + self.sampling["max_tokens"] if kind in _MAYBE_BILLED else 0
        self._add_spent({"failures": {kind: 1}, "est_billed_tokens": billed})

    def _scrub(self, text: str) -> str:
        return redact(text, self.base_url)

    def _refused(self, error: Any) -> str:
        return self._scrub(f"{self.where} refused the request ({error.status_code}) for "
                           f"{self.model}: {error}")

    def _delay(self, attempt: int, error: Exception | None) -> float:
        """Seconds before retry ``attempt``: the server's ``Retry-After`` where it is a
        number of seconds from 0 to 60, else exponential backoff with jitter."""
        response = getattr(error, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            asked = float(header) if header else math.nan
        except ValueError:
            asked = math.nan
        if 0 <= asked <= 60:
            return asked
        return min(self.backoff * 2**attempt, 30.0) * (0.5 + random.random() / 2)

    def _add_spent(self, spent: dict[str, Any]) -> None:
        if self.price is not None:
            spent = {"cost": 0.0, **spent}
        journal = self.journal
        if journal is not None:
            journal({"model": self.model, "endpoint": self.endpoint, **spent})
            return
        with self._lock:
            for name, value in spent.items():
                if isinstance(value, dict):
                    add_usage(self._spent.setdefault(name, {}), value)
                else:
                    self._spent[name] = self._spent.get(name, 0) + value

    def spent(self) -> dict[str, Any]:
        """What was spent since the last call and not given to the :attr:`journal`, reset on
        read: ``attempts`` sent (failed ones included), ``failures`` by kind, replies
        ``answered`` by the server and ``cache_hits``, the answered ``prompt_tokens`` and
        ``completion_tokens``, ``no_usage`` (answers that reported no token counts),
        ``est_billed_tokens`` (those, plus the estimate of every failed attempt the provider
        may bill, and of every answer without counts) and ``cost`` (of the answered tokens,
        when priced)."""
        with self._lock:
            spent, self._spent = self._spent, {}
        record: dict[str, Any] = {
            "model": self.model, "endpoint": self.endpoint, "attempts": 0, "answered": 0,
            "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "est_billed_tokens": 0, "failures": {}, **spent,
        }
        if self.price is not None:
            record.setdefault("cost", 0.0)
        return record

    def close(self) -> None:
        self.client.close()


def _estimate(asked: dict[str, Any]) -> int:
    """The tokens of a request, at about 4 characters a token."""
    return len(json.dumps(asked, ensure_ascii=False)) // 4


def _request_body(sampling: dict[str, Any], limit: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(fields, extra fields)`` of a request with ``sampling``: the token limit under the
    name ``limit``, and ``top_k``, which the OpenAI API lacks, as an extra field."""
    sent = {(limit if name == "max_tokens" else name): value for name, value in sampling.items()
            if name != "top_k"}
    extra = {"top_k": sampling["top_k"]} if "top_k" in sampling else {}
    return sent, extra


def _failure_kind(error: Exception) -> str:
    """The kind of a failed attempt: ``timeout``, ``connection``, ``rate_limit`` (429),
    ``server_error`` (5xx), ``client_error`` (another 4xx) or ``bad_reply`` (a 200 whose body
    is not a usable completion)."""
    import openai

    kinds = ((openai.APITimeoutError, "timeout"), (openai.APIConnectionError, "connection"),
             (openai.RateLimitError, "rate_limit"), (openai.InternalServerError, "server_error"),
             (openai.APIStatusError, "client_error"))
    return next((kind for cls, kind in kinds if isinstance(error, cls)), "bad_reply")


def _text(content: Any) -> str:
    """A reply's content as text: a list of parts is their texts joined."""
    if isinstance(content, list):
        return "".join(str(part.get("text") or "") if isinstance(part, dict)
                       else str(getattr(part, "text", "") or "") for part in content)
    return "" if content is None else str(content)


def _tokens(value: Any) -> int | None:
    """A usage count, or ``None`` where the server gave none or no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        return None
    return int(value) if math.isfinite(value) else None


def _parse_reply(reply: Any) -> dict[str, Any]:
    """A completion as ``{text, prompt_tokens, completion_tokens, facts}``.

    ``facts`` hold what the server said of it: ``finish_reason`` (``length``: cut at the
    token limit; ``content_filter``), ``served_model`` and ``system_fingerprint`` (the snapshot
    that answered). A reasoning model's ``reasoning_content`` (DeepSeek and servers like it
    return its thinking apart from the content) becomes the ``<think>`` block ahead of the
    content when the content has none, as the model's chat template writes it, so the format
    check reads the whole reply; when the content has one, it is kept in ``facts`` as
    ``reasoning``. Token counts the server did not give as numbers are ``None``."""
    choices = getattr(reply, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _BadReply("the server returned no choices")
    try:
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = _text(message.content if message is not None else choice.text)
    except AttributeError as error:
        raise _BadReply(f"the server returned a malformed choice: {choices[0]!r:.200}") from error
    facts = {"finish_reason": getattr(choice, "finish_reason", None),
             "served_model": getattr(reply, "model", None),
             "system_fingerprint": getattr(reply, "system_fingerprint", None)}
    reasoning = _text(getattr(message, "reasoning_content", None)) if message is not None else ""
    if reasoning and "<think>" in text:
        facts["reasoning"] = repair_surrogates(reasoning)
    elif reasoning:
        text = f"<think>{reasoning}</think>{text}"
    usage = getattr(reply, "usage", None)
    return {
        "text": repair_surrogates(text),
        "prompt_tokens": _tokens(getattr(usage, "prompt_tokens", None)),
        "completion_tokens": _tokens(getattr(usage, "completion_tokens", None)),
        "facts": {name: value for name, value in facts.items() if value is not None},
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
        top_k: int | None = None,
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
            top_p=top_p, top_k=top_k, timeout=timeout, max_retries=max_retries,
            backoff=backoff, seed=seed, cache=self.cache, budget=budget,
            price=model_price(model, prices),
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

    def record_spending(self, journal: Callable[[dict[str, Any]], None] | None) -> None:
        self.endpoint.journal = journal

    def stop(self) -> None:
        self.endpoint.halt()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.endpoint.close()
        if self._owns_cache and self.cache is not None:
            self.cache.close()
