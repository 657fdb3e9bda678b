"""``PromptWrapper``: the study's prompt, interaction history and format check around an env.

Holds :class:`PromptWrapper` and :data:`NOT_UNDERSTOOD` (the notice of ``notice=True``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym

from arlarena_envs.base import clean_text, coerce_action, text_space
from wrappers.format import FORMAT_CHECKS
from wrappers.templates import TEMPLATES, render_prompt

__all__ = ["NOT_UNDERSTOOD", "PromptWrapper"]

NOT_UNDERSTOOD = (
    "Your previous response could not be understood: it had no <action>...</action> block, so "
    "nothing happened."
)


class PromptWrapper(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Turn a text env into an LLM env: prompt in, raw response out.

    The observation becomes the env's template (:mod:`wrappers.templates`: the study's text,
    without history on the first turn, then with the last ``history_length`` (observation,
    action) pairs), and the action becomes the model's whole response. The response goes
    through a format check of :data:`~wrappers.format.FORMAT_CHECKS`: ``format_check="study"``
    (default) is the study's projection for the env (the template's ``check``), ``"strict"``
    ARLArena's stricter one (:attr:`active_check` names the one that runs). A response that
    fails it loses ``format_penalty`` on the step's reward; its action is still executed when
    one can be extracted; when none can, the check's fallback runs (the study's: the
    response's last 30 characters, or Sokoban's ``still``;
    ``strict``: an empty, invalid, state-preserving action). With ``notice=True`` the next
    prompt then says the response was not understood (ARLArena's option; the study says
    nothing). ``info`` gains ``format_ok``, ``parsed_action``, ``format_error``,
    ``format_check`` (the check that ran), ``notice`` and ``env_reward`` (the reward before the
    penalty).

    Text follows the envs' rule (:func:`arlarena_envs.base.clean_text`): the response is
    cleaned on the way in (:func:`~arlarena_envs.base.coerce_action`), and the prompt on the
    way out, within ``observation_space.max_length`` (a longer one loses its middle, never the
    instructions at its end), so that a prompt always encodes as UTF-8 whatever the model or
    an env not built on :class:`~arlarena_envs.base.TextEnv` wrote.

    Envs whose actions are free-form (``strict_format = False``, e.g. TIR Math) get the raw
    response (cleaned) and no penalty. Visual envs (template ``sokoban_visual``) put the frame in
    ``info["image"]``.

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = PromptWrapper(gym.make("ARLArena/Sokoban-v0"))
        >>> prompt, info = env.reset(seed=0)
        >>> prompt.startswith("\\nYou are an expert agent operating in the Sokoban environment.")
        True
        >>> _, reward, *_, info = env.step("I will go up.")
        >>> info["format_ok"], info["format_check"], round(reward, 2)
        (False, 'sokoban', -0.2)
    """

    def __init__(
        self,
        env: gym.Env,
        history_length: int = 2,
        format_penalty: float = 0.1,
        format_check: str = "study",
        notice: bool = False,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, history_length=history_length, format_penalty=format_penalty,
            format_check=format_check, notice=notice,
        )
        gym.Wrapper.__init__(self, env)
        if history_length < 0:
            raise ValueError(f"history_length must be >= 0, got {history_length}")
        if format_check != "study" and format_check not in FORMAT_CHECKS:
            known = ", ".join(["study", *FORMAT_CHECKS])
            raise ValueError(f"format_check must be one of {known}, got {format_check!r}")
        self.history_length = history_length
        self.format_penalty = float(format_penalty)
        self.format_check = format_check
        self.notice = bool(notice)
        self.template = getattr(env.unwrapped, "prompt_template", "")
        self.strict = getattr(env.unwrapped, "strict_format", True)
        self.lowercase = getattr(env.unwrapped, "lowercase_actions", True)
        self.observation_space = text_space()
        self._history: deque[tuple[str, str]] = deque(maxlen=history_length or None)
        self._steps = 0
        self._obs = ""
        self._info: dict[str, Any] = {}

    @property
    def active_check(self) -> str | None:
        """The name of the check that judges responses (``None``: free-form actions)."""
        if not self.strict:
            return None
        study = self.format_check == "study"
        return TEMPLATES[self.template].check if study else self.format_check

    def _prompt(self, observation: str, notice: str = "") -> str:
        history = list(self._history)[-self.history_length :] if self.history_length else []
        prompt = render_prompt(
            self.template,
            task=self._info.get("task", ""),
            observation=observation,
            admissible=self._info.get("admissible_actions", ()),
            history=history,
            step_count=self._steps,
            notice=notice,
        )
        return clean_text(prompt, self.observation_space.max_length)

    def _with_image(self, info: dict[str, Any]) -> dict[str, Any]:
        if self.template == "sokoban_visual":
            info["image"] = self.env.render()
        return info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._history.clear()
        self._steps, self._obs, self._info = 0, obs, info
        return self._prompt(obs), self._with_image(dict(info))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        action = coerce_action(action)
        check = self.active_check
        if check is None:
            parsed, env_action = None, action
        else:
            admissible = self._info.get("admissible_actions", ())
            parsed, env_action = FORMAT_CHECKS[check](action, admissible, self.lowercase)
        obs, reward, terminated, truncated, info = self.env.step(env_action)
        info = dict(info)
        info["env_reward"] = float(reward)
        info["format_ok"] = True if parsed is None else parsed.format_ok
        info["format_error"] = None if parsed is None else parsed.error
        info["parsed_action"] = env_action if parsed is None else parsed.action
        info["format_check"], info["notice"] = check, self.notice
        if not info["format_ok"]:
            reward = float(reward) - self.format_penalty
        self._history.append((self._obs, env_action))
        self._steps += 1
        self._obs, self._info = obs, info
        unparsed = parsed is not None and parsed.action is None
        prompt = self._prompt(obs, f"{NOT_UNDERSTOOD}\n" if self.notice and unparsed else "")
        return prompt, float(reward), terminated, truncated, self._with_image(info)
