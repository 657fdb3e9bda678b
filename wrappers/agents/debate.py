"""Multi-agent debate as one agent: ``debate`` and ``aggressive-debate``.

Several participants (each any model at any OpenAI-compatible endpoint) propose an action with
their reasons, read each other's latest proposals for a fixed number of rounds, and the final
action is chosen by vote (plurality, ties to the earlier debater) or by a judge model when they
disagree. The answer is a strict ``<think>…</think><action>…</action>`` response, so the wrappers
treat the debate like a single agent; the transcript of every round, the votes and the decision
travel in :attr:`AgentReply.transcript`, and the usage (tokens, cost) of every participant in
:attr:`AgentReply.usage`.

The aggressive variant gives every participant the study's goal-oriented constraints: a finite
horizon, finish early, partial rewards exist, and a good available result beats a perfect one.

Holds :class:`Participant`, :func:`parse_participants` (``model@url,…`` or a list of dicts),
:func:`load_debate_config` (YAML/JSON), :class:`DebateAgent` and :class:`AggressiveDebateAgent`.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wrappers.agents.base import (
    Agent,
    AgentError,
    AgentReply,
    AgentRequest,
    add_usage,
    register_agent,
)
from wrappers.agents.cache import RequestBudget, ResponseCache, cache_key
from wrappers.agents.openai_chat import (
    ChatEndpoint,
    gather,
    model_price,
    open_cache,
    request_messages,
)
from wrappers.format import contains_cjk, format_response, parse_response

__all__ = [
    "AggressiveDebateAgent",
    "DebateAgent",
    "Participant",
    "load_debate_config",
    "parse_participants",
    "prompt_version",
]

_SAMPLING_KEYS = {"max_tokens", "temperature", "top_p", "top_k", "seed"}
_TAG = re.compile(r"</?\s*(?:think|action)\s*>", re.I)
_REASONS_CHARS = 600

DEBATE_SYSTEM = (
    "You are agent {index} of {count} who discuss the next action for the same task. Propose "
    "one action and explain your reasons briefly. {constraints}Answer only in the required "
    "format: your reasoning inside <think> </think>, then one admissible action inside "
    "<action> </action>."
)
AGGRESSIVE_CONSTRAINTS = (
    "Be goal-oriented. The episode has a finite horizon{horizon}, so finish as early as you "
    "can: every step you spend exploring is a step you cannot use to finish. Partial rewards "
    "exist, so a good result that is available now is better than a perfect result you may "
    "never reach. When a reasonable option is in reach, commit to it instead of searching "
    "further. "
)
FOLLOW_UP = (
    "Round {round} of {rounds}. The other agents proposed:\n{others}\nWeigh their reasons "
    "against yours. {constraints}Then give your answer for this step again in the same format: "
    "reasoning inside <think> </think>, then one admissible action inside <action> </action>."
)
AGGRESSIVE_REMINDER = "Prefer the action that reaches a good result soonest. "
JUDGE_SYSTEM = (
    "You are the judge of a discussion between {count} agents about the next action for a "
    "task. Read the task and their final proposals, then choose the single best action. "
    "{constraints}Answer only in the required format: your reasoning inside <think> </think>, "
    "then one admissible action inside <action> </action>."
)
JUDGE_REQUEST = (
    "\n\nThe agents' final proposals for this step:\n{proposals}\nChoose the best action for "
    "this step."
)


def prompt_version() -> str:
    """A digest of the debate's prompt texts: the settings record keeps it, so a resume after
    they change is refused like one after a template change."""
    texts = [DEBATE_SYSTEM, AGGRESSIVE_CONSTRAINTS, FOLLOW_UP, AGGRESSIVE_REMINDER, JUDGE_SYSTEM,
             JUDGE_REQUEST]
    return cache_key(prompts=texts)[:16]


@dataclass(frozen=True)
class Participant:
    """One debater or judge: a model at an endpoint, with its own sampling if wanted.

    Attributes:
        model: model name sent to the endpoint.
        base_url: the endpoint (``None``: the agent's ``base_url``).
        api_key_env: name of the environment variable holding its key (keys never go on the
            command line); ``None``: the agent's key.
        sampling: overrides of ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``seed``.
    """

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    sampling: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str | dict[str, Any] | Participant) -> Participant:
        """From ``"model"``, ``"model@http://host:port/v1"`` or a dict of the attributes.

        >>> Participant.parse("m@http://127.0.0.1:8000/v1")
        Participant(model='m', base_url='http://127.0.0.1:8000/v1', api_key_env=None, sampling={})
        """
        if isinstance(spec, Participant):
            return spec
        if isinstance(spec, str):
            model, at, url = spec.strip().rpartition("@")
            if not at or not url.startswith(("http://", "https://")):
                model, url = spec.strip(), ""
            if not model:
                raise ValueError(f"participant {spec!r} has no model name")
            return cls(model, url or None)
        if not isinstance(spec, dict) or not spec.get("model"):
            raise ValueError(f"a participant needs at least a model, got {spec!r}")
        unknown = set(spec) - {"model", "base_url", "api_key_env"} - _SAMPLING_KEYS
        if unknown:
            raise ValueError(f"participant {spec['model']!r}: unknown keys {sorted(unknown)}")
        sampling = {k: spec[k] for k in _SAMPLING_KEYS if k in spec}
        return cls(str(spec["model"]), spec.get("base_url"), spec.get("api_key_env"), sampling)


def parse_participants(spec: str | Sequence[Any]) -> list[Participant]:
    """Debaters from ``"model_a@http://h:1/v1,model_b"`` or a list of specs.

    >>> [p.model for p in parse_participants("a@http://h:1/v1, b")]
    ['a', 'b']
    """
    items = [s for s in spec.split(",") if s.strip()] if isinstance(spec, str) else list(spec)
    if not items:
        raise ValueError("no debaters given")
    return [Participant.parse(item) for item in items]


def load_debate_config(path: str | Path) -> dict[str, Any]:
    """A debate set-up from a YAML or JSON file.

    Keys: ``debaters`` (list of participant specs), optional ``judge``, ``rounds``,
    ``decision`` (``vote`` or ``judge``) and ``prices`` (model → ``{prompt, completion}`` USD
    per million tokens).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        config = json.loads(text)
    else:
        import yaml

        config = yaml.safe_load(text)
    if not isinstance(config, dict) or "debaters" not in config:
        raise ValueError(f"{path}: a debate config is a mapping with a 'debaters' list")
    unknown = set(config) - {"debaters", "judge", "rounds", "decision", "prices"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    return config


@dataclass
class _Proposal:
    agent: int
    model: str
    response: str
    action: str | None
    format_ok: bool
    think: str | None
    usage: dict[str, float]
    error: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The proposal as the transcript keeps it, with what the server said of its reply
        (finish reason, served model)."""
        return {"agent": self.agent, "model": self.model, "response": self.response,
                "action": self.action, "format_ok": self.format_ok, "usage": self.usage,
                "error": self.error, **self.facts}


@dataclass
class _Debate:
    """The state of one request's debate."""

    request: AgentRequest
    count: int
    lowercase: bool
    rounds: list[list[_Proposal]] = field(default_factory=list)
    latest: dict[int, _Proposal] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def active(self) -> list[int]:
        """Debaters still in (those whose every request so far got an answer)."""
        failed = {p.agent for r in self.rounds for p in r if p.error is not None}
        return [i for i in range(self.count) if i not in failed]

    def read(self, agent: int, model: str, reply: AgentReply) -> _Proposal:
        """Parse ``reply`` (debater ``agent``, or ``-1`` for the judge) and count its usage."""
        add_usage(self.usage, reply.usage)
        parsed = parse_response(
            reply.text, self.request.info.get("admissible_actions") or (),
            lowercase=self.lowercase,
        )
        return _Proposal(agent, model, reply.text, parsed.action or None, parsed.format_ok,
                         parsed.think, reply.usage, reply.error, reply.facts)

    def add(self, agent: int, model: str, reply: AgentReply) -> _Proposal:
        """Read a debater's reply into the current round."""
        proposal = self.read(agent, model, reply)
        self.rounds[-1].append(proposal)
        if reply.error is None:
            self.latest[agent] = proposal
        return proposal

    def votes(self) -> Counter[str]:
        """Final proposals' actions: format-valid ones, else any extracted action."""
        final = [self.latest[i] for i in sorted(self.latest)]
        valid = [p.action for p in final if p.format_ok and p.action]
        return Counter(valid or [p.action for p in final if p.action])


def _reasons(proposal: _Proposal) -> str:
    think = _TAG.sub(" ", proposal.think or "").strip()
    if contains_cjk(think):
        return ""
    return think if len(think) <= _REASONS_CHARS else think[:_REASONS_CHARS] + "…"


def _with_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """``messages`` with ``text`` appended to the last (user) message."""
    last = dict(messages[-1])
    if isinstance(last["content"], str):
        last["content"] = last["content"] + text
    else:
        last["content"] = [*last["content"], {"type": "text", "text": text}]
    return [*messages[:-1], last]


def _describe(proposal: _Proposal, label: str) -> str:
    if not proposal.action:
        return f"- {label}: no usable proposal (its answer had no action)."
    reasons = _reasons(proposal) or "none given"
    return f"- {label}: action '{proposal.action}'. Reasons: {reasons}"


@register_agent("debate")
class DebateAgent(Agent):
    """Multi-agent debate on OpenAI-compatible endpoints, answering like a single agent.

    Args:
        debaters: ``"model@url,model@url"``, a list of participant specs (see
            :class:`Participant`), or the path of a ``.yaml``/``.yml``/``.json`` config
            (:func:`load_debate_config`). Default: three debaters of ``model``.
        judge: a participant spec; with it the default decision is ``judge``.
        rounds: rounds of proposals (round 1 = independent proposals).
        decision: ``vote`` (plurality, ties to the earlier debater) or ``judge`` (the judge
            decides unless every debater agrees; its unusable answer falls back to the vote).
        model, base_url, api_key: defaults for participants that do not name their own.
        concurrency: requests in flight at once, across episodes and debaters.
        cache, budget, prices: as for the ``openai`` agent, shared by every participant.

    Sampling options (``max_tokens``, ``temperature``, ``top_p``, ``seed``) and retry options
    are the participants' defaults.
    """

    name = "debate"
    aggressive = False

    def __init__(
        self,
        debaters: str | Sequence[Any] | None = None,
        judge: str | dict[str, Any] | None = None,
        rounds: int | None = None,
        decision: str | None = None,
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
        **_: object,
    ) -> None:
        config: dict[str, Any] = {}
        if isinstance(debaters, str) and debaters.lower().endswith((".yaml", ".yml", ".json")):
            config = load_debate_config(debaters)
            debaters = config["debaters"]
        if debaters is None:
            if not model:
                raise ValueError(f"the {self.name} agent needs debaters: --debaters "
                                 "model@url,... (or a YAML/JSON file), or --model NAME")
            debaters = [model] * 3
        self.debaters = parse_participants(debaters)
        judge = judge if judge is not None else config.get("judge")
        self.judge = Participant.parse(judge) if judge else None
        self.rounds = int(rounds if rounds is not None else config.get("rounds", 2))
        self.decision = decision or config.get("decision") or ("judge" if self.judge else "vote")
        if self.rounds < 1:
            raise ValueError(f"a debate needs at least one round, got {self.rounds}")
        if self.decision not in ("vote", "judge"):
            raise ValueError(f"decision must be 'vote' or 'judge', got {self.decision!r}")
        if self.decision == "judge" and self.judge is None:
            raise ValueError("decision 'judge' needs a judge: --judge model@url")
        participants = [*self.debaters, *([self.judge] if self.judge else [])]
        for p in participants:
            if p.api_key_env and p.api_key_env not in os.environ:
                raise ValueError(f"${p.api_key_env} (the key of {p.model}) is not set")
        if prices is not None or "prices" in config:
            prices = {**(config.get("prices") or {}), **(prices or {})}
        for p in participants:
            model_price(p.model, prices)  # a missing or malformed price fails before any request
        self.cache, self._owns_cache = open_cache(cache)
        defaults = {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p,
                    "top_k": top_k, "seed": seed}

        def endpoint(p: Participant) -> ChatEndpoint:
            return ChatEndpoint(
                p.model, p.base_url or base_url,
                os.environ[p.api_key_env] if p.api_key_env else api_key,
                timeout=timeout, max_retries=max_retries, backoff=backoff, cache=self.cache,
                budget=budget, price=model_price(p.model, prices), **{**defaults, **p.sampling},
            )

        self.endpoints = [endpoint(p) for p in self.debaters]
        self.judge_endpoint = endpoint(self.judge) if self.judge else None
        models = Counter(p.model for p in self.debaters)
        self.name = f"{self.name}:" + "+".join(
            m if n == 1 else f"{n}x{m}" for m, n in models.items()
        )
        if self.judge:
            self.name += f"/judge={self.judge.model}"
        self.pool = ThreadPoolExecutor(max_workers=max(1, concurrency))

    # ------------------------------------------------------------------ prompts
    def _constraints(self, request: AgentRequest) -> str:
        if not self.aggressive:
            return ""
        horizon = getattr(getattr(request.env, "spec", None), "max_episode_steps", None)
        return AGGRESSIVE_CONSTRAINTS.format(
            horizon=f" of {horizon} steps" if horizon else ""
        )

    def _debater_messages(self, debate: _Debate, agent: int, round_: int) -> list[dict]:
        system = DEBATE_SYSTEM.format(index=agent + 1, count=len(self.debaters),
                                      constraints=self._constraints(debate.request))
        messages = [{"role": "system", "content": system}, *request_messages(debate.request)]
        if round_ == 0:
            return messages
        others = [_describe(p, f"Agent {p.agent + 1}")
                  for i, p in sorted(debate.latest.items()) if i != agent]
        follow_up = FOLLOW_UP.format(
            round=round_ + 1, rounds=self.rounds,
            others="\n".join(others) or "- (no other agent answered)",
            constraints=AGGRESSIVE_REMINDER if self.aggressive else "",
        )
        return [*messages, {"role": "assistant", "content": debate.latest[agent].response},
                {"role": "user", "content": follow_up}]

    def _judge_messages(self, debate: _Debate) -> list[dict]:
        system = JUDGE_SYSTEM.format(count=len(self.debaters),
                                     constraints=self._constraints(debate.request))
        proposals = "\n".join(
            _describe(p, f"Agent {i + 1}") for i, p in sorted(debate.latest.items())
        )
        user = _with_text(request_messages(debate.request),
                          JUDGE_REQUEST.format(proposals=proposals))
        return [{"role": "system", "content": system}, *user]

    # ------------------------------------------------------------------ the debate
    def respond(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        debates = [
            _Debate(r, len(self.debaters),
                    getattr(getattr(r.env, "unwrapped", None), "lowercase_actions", True))
            for r in requests
        ]
        for round_ in range(self.rounds):
            jobs = [(d, i) for d in debates if d.error is None for i in d.active]
            replies = gather(self.pool, [
                lambda d=d, i=i, r=round_: self.endpoints[i].complete(
                    self._debater_messages(d, i, r), sample=d.request.sample,
                    tag=f"debater{i}", episode_id=d.request.episode_id,
                    turn=d.request.turn,
                )
                for d, i in jobs
            ])
            for d in debates:
                if d.error is None:
                    d.rounds.append([])
            for (d, i), reply in zip(jobs, replies, strict=True):
                d.add(i, self.debaters[i].model, reply)
            for d in debates:
                if d.error is None and not d.active:
                    errors = "; ".join(p.error or "" for p in d.rounds[-1])
                    d.error = f"every debater failed in round {round_ + 1}: {errors}"
        to_judge = [d for d in debates if d.error is None and self._needs_judge(d)]
        verdicts = gather(self.pool, [
            lambda d=d: self.judge_endpoint.complete(
                self._judge_messages(d), sample=d.request.sample, tag="judge",
                episode_id=d.request.episode_id, turn=d.request.turn,
            )
            for d in to_judge
        ])
        judged = {id(d): v for d, v in zip(to_judge, verdicts, strict=True)}
        return [self._decide(d, judged.get(id(d))) for d in debates]

    def _needs_judge(self, debate: _Debate) -> bool:
        return self.decision == "judge" and len(debate.votes()) > 1

    def _decide(self, debate: _Debate, verdict: AgentReply | None) -> AgentReply:
        transcript: dict[str, Any] = {
            "method": "aggressive-debate" if self.aggressive else "debate",
            "rounds": [[p.record() for p in r] for r in debate.rounds],
        }
        if debate.error is not None:
            return AgentReply("", debate.usage, transcript, debate.error)
        votes = debate.votes()
        transcript["votes"] = dict(votes)
        chosen, how, reasons = self._vote(debate, votes)
        if verdict is not None:
            judged = debate.read(-1, self.judge.model, verdict)
            transcript["judge"] = judged.record()
            if judged.error is None and judged.format_ok and judged.action:
                chosen, how, reasons = judged.action, "judge", _reasons(judged)
            else:
                how += " (the judge's answer was unusable)"
        transcript["decision"], transcript["action"] = how, chosen
        if chosen is None:
            first = debate.latest[min(debate.latest)]
            return AgentReply(first.response, debate.usage, transcript)
        tally = ", ".join(f"'{a}' ×{n}" for a, n in votes.items())
        think = (f"{len(self.debaters)} agents debated for {len(debate.rounds)} round(s); final "
                 f"proposals: {tally}; decided by {how}. {reasons}").strip()
        return AgentReply(format_response(think, chosen), debate.usage, transcript)

    def _vote(self, debate: _Debate, votes: Counter[str]) -> tuple[str | None, str, str]:
        if not votes:
            return None, "no proposal had an action", ""
        top = max(votes.values())
        chosen = next(a for a in votes if votes[a] == top)  # first proposer wins ties
        if len(votes) == 1 and top == len(debate.latest):
            how = "consensus"
        else:
            how = "majority" if top * 2 > len(debate.latest) else "plurality"
        supporter = next(p for _, p in sorted(debate.latest.items()) if p.action == chosen)
        return chosen, how, _reasons(supporter)

    def act(self, requests: Sequence[AgentRequest]) -> list[str]:
        replies = self.respond(requests)
        for reply in replies:
            if reply.error is not None:
                raise AgentError(reply.error)
        return [reply.text for reply in replies]

    @property
    def _all_endpoints(self) -> list[ChatEndpoint]:
        return [*self.endpoints, *([self.judge_endpoint] if self.judge_endpoint else [])]

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "aggressive": self.aggressive, "rounds": self.rounds,
                "decision": self.decision, "prompt_version": prompt_version(),
                "debaters": [endpoint.settings() for endpoint in self.endpoints],
                "judge": self.judge_endpoint.settings() if self.judge_endpoint else None}

    def spending(self) -> list[dict[str, Any]]:
        """One record per model and endpoint (debaters sharing both are counted together)."""
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for spent in (endpoint.spent() for endpoint in self._all_endpoints):
            model, where = spent.pop("model"), spent.pop("endpoint")
            total = merged.setdefault((model, where),
                                      {"model": model, "endpoint": where, "failures": {}})
            add_usage(total["failures"], spent.pop("failures"))
            add_usage(total, spent)
        return list(merged.values())

    def record_spending(self, journal: Callable[[dict[str, Any]], None] | None) -> None:
        for endpoint in self._all_endpoints:
            endpoint.journal = journal

    def stop(self) -> None:
        for endpoint in self._all_endpoints:
            endpoint.halt()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        for endpoint in self._all_endpoints:
            endpoint.close()
        if self._owns_cache and self.cache is not None:
            self.cache.close()


@register_agent("aggressive-debate")
class AggressiveDebateAgent(DebateAgent):
    """:class:`DebateAgent` whose participants work under the goal-oriented constraints:
    finite horizon, finish early, partial rewards exist, a good available result beats a
    perfect one."""

    name = "aggressive-debate"
    aggressive = True
