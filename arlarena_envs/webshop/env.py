"""``ARLArena/WebShop-v0`` (and ``WebShop-Small-v0``): shopping in the Flask shop as a text env."""

from __future__ import annotations

import re
import uuid
from typing import Any, ClassVar

from arlarena_envs.base import MAX_OBS_CHARS, TextEnv, clean_text, coerce_action
from arlarena_envs.webshop.app import DEFAULT_PAGES, MAX_KEYWORDS_CHARS, check_pages, get_app
from arlarena_envs.webshop.client import HttpTransport, InProcessTransport, ShopClient
from arlarena_envs.webshop.goals import SPLITS
from arlarena_envs.webshop.nouns import noun_tagger
from arlarena_envs.webshop.reward import DEFAULT_REWARD, check_reward
from arlarena_envs.webshop.shop import ShopConfig, get_shop
from arlarena_envs.webshop.textmode import agent_view, normalize_label
from arlarena_envs.webshop.urls import parse_location, results_url, search_url

__all__ = ["OBSERVATION_MODES", "SEARCH_ENTRY", "WIN_REWARD", "WebShopEnv"]

SEARCH_ENTRY = "search[<your query>]"
"""The admissible entry that stands for any search query."""
WIN_REWARD = 10.0
"""The env reward for a purchase whose task score is exactly 1.0 (the study's runs)."""
OBSERVATION_MODES = ("agent", "text")

_ACTION = re.compile(r"(search|click)\[(.*)\]", re.S)
_MAX_RESULT_PAGES = 5


class WebShopEnv(TextEnv):
    """Find and buy the product an instruction describes, in WebShop's text mode.

    Each episode is one session of the shop application (:mod:`~arlarena_envs.webshop.app`),
    driven through Flask's test client in this process, or over HTTP when ``server_url``
    points at ``arlarena webshop serve``. Actions are ``search[query]`` and ``click[label]``
    for a link or button of the current page (lower-cased as listed in
    ``info["admissible_actions"]``). As in the original, a search works from any page (only
    the search page lists it), and the search page lists ``click[search]``, its button,
    which changes nothing. Anything else — malformed, not on this page, after the purchase —
    changes nothing and sets ``action_is_valid`` to False. "Buy Now" ends the episode:
    ``info["score"]`` is WebShop's task score in [0, 1] and the reward is 10 when it is
    exactly 1.0 (``won``), else 0, as in the study's runs. ``info["reward_rule"]``,
    ``info["pages"]`` and ``info["noun_tagger"]`` say how it was scored and shown.

    The observation is the page in WebShop's text mode (elements joined by ``[SEP]``). In
    ``observation_mode="agent"`` (default) it is the line ``Instruction: <the instruction>``,
    then the page as the agent codebases show it: the elements after the instruction, each
    quoted (:func:`~arlarena_envs.webshop.textmode.agent_view`; ``PromptWrapper``'s template
    states the task in its own words and drops that line); ``info["anchor"]`` is always the
    whole page text. ``reset(options={"split": "eval", "index": 3})`` picks a goal; without
    an index the seed draws one from the split (``train`` by default).

    Args:
        products: catalogue size (generated: 10,000 by default; ``WebShop-Small-v0`` uses the
            study's 1,000; with original files: the first ``products``, default all).
        catalogue_seed: seed of the generated catalogue, its goals and the goal splits.
        split: the default goal split, ``train``, ``eval`` or ``test``.
        server_url: drive a running ``arlarena webshop serve`` over HTTP instead (its
            catalogue and settings then win over ``products``, ``catalogue_seed``,
            ``data_dir``, ``reward`` and ``pages``).
        data_dir: a folder with the original WebShop files (default
            ``$ARLARENA_WEBSHOP_DATA``; unset: the generated catalogue).
        human_goals: with original files, use the human instructions as goals.
        reward: the option rule (:data:`~arlarena_envs.webshop.reward.REWARD_RULES`):
            ``"study"`` (default, the study's scorer) or ``"finer"`` (upstream's 6ba9969).
        pages: ``"original"`` (default: what the original's pages show) or ``"extended"``
            (with ARLArena's generated ratings, reviews and exact prices).
        observation_mode: ``agent`` (quoted elements after the instruction) or ``text``.
        render_mode: ``ansi`` renders the page text.
        timeout: seconds per HTTP request with ``server_url``.

    Pickling or deep-copying the env (:mod:`arlarena_envs.snapshots`) carries its settings,
    goal and actions, not the Flask app: the copy builds (or, in the same process, shares) the
    shop and replays the episode in a session of its own.

    Example:
        >>> env = WebShopEnv(products=300)
        >>> obs, info = env.reset(seed=0, options={"split": "eval"})
        >>> obs == f"Instruction: {info['task']}\\n'Search'", info["admissible_actions"]
        (True, ['search[<your query>]', 'click[search]'])
        >>> obs, reward, terminated, truncated, info = env.step("search[shampoo]")
        >>> info["action_is_valid"], "click[back to search]" in info["admissible_actions"]
        (True, True)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    prompt_template = "webshop"
    lowercase_actions = False

    def __init__(
        self,
        products: int | None = None,
        catalogue_seed: int = 0,
        split: str = "train",
        server_url: str | None = None,
        data_dir: str | None = None,
        human_goals: bool = False,
        reward: str = DEFAULT_REWARD,
        pages: str = DEFAULT_PAGES,
        observation_mode: str = "agent",
        render_mode: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.split = split
        self.observation_mode = observation_mode
        self.render_mode = render_mode
        self.server_url = server_url
        check_reward(reward)
        check_pages(pages)
        if server_url:
            self.client = ShopClient(HttpTransport(server_url, timeout=timeout))
            described = self.client.api("/api/shop")
            self._split_sizes: dict[str, int] = dict(described["splits"])
            self.reward = str(described.get("reward", DEFAULT_REWARD))
            self.pages = str(described.get("pages", DEFAULT_PAGES))
            self.noun_tagger = str(described.get("noun_tagger", ""))
            self.data_source = str((described.get("config") or {}).get("data_dir") or
                                   "generated")
        else:
            config = ShopConfig(products, catalogue_seed, data_dir, human_goals)
            shop = get_shop(config)
            self.client = ShopClient(InProcessTransport(get_app(shop, reward, pages)))
            self._split_sizes = {name: shop.split_size(name) for name in SPLITS}
            self.reward, self.pages, self.noun_tagger = reward, pages, noun_tagger()
            self.data_source = shop.config.data_dir or "generated"
        self._sid = ""
        self._goal: dict[str, Any] = {}
        self._done = False
        self._score = 0.0

    # -- observation and info ------------------------------------------------------------------
    @staticmethod
    def _clean(text: str) -> str:
        return clean_text(text)[:MAX_OBS_CHARS]

    def _observation(self) -> str:
        elements = self.client.page.elements
        if self.observation_mode == "agent":
            return self._clean(agent_view(self._goal.get("instruction", ""), elements))
        return self._clean(self.client.page.text)

    def _admissible(self) -> list[str]:
        if self._done:
            return []
        page = self.client.page
        bar = page.search_bar
        head = [SEARCH_ENTRY, *(f"click[{b}]" for b in bar.buttons)] if bar is not None else []
        return head + [f"click[{label}]" for label in page.clickables]

    def _info(self, action_is_valid: bool | None = None) -> dict[str, Any]:
        return self.make_info(
            task=self._goal.get("instruction", ""),
            admissible_actions=self._admissible(),
            won=self._score == 1.0,
            anchor=self._clean(self.client.page.text),
            action_is_valid=action_is_valid,
            score=self._score,
            task_type=self._goal.get("category", ""),
            page=parse_location(self.client.url).kind,
            reward_rule=self.reward,
            pages=self.pages,
            noun_tagger=self.noun_tagger,
        )

    def scorer(self) -> dict[str, Any]:
        """The reward rule, the title-noun tagger (spaCy or the built-in rules, chosen by
        ``ARLARENA_NOUN_TAGGER`` / ``ARLARENA_SPACY_MODEL`` and what is installed) and the data
        (``generated`` or the original files' folder, ``ARLARENA_WEBSHOP_DATA``)."""
        return {"reward": self.reward, "noun_tagger": self.noun_tagger,
                "data": self.data_source}

    @property
    def session_id(self) -> str:
        """The shop session of the current episode (in the pages' URLs)."""
        return self._sid

    # -- gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a new session on a goal of the split (see the class docs for ``options``)."""
        super().reset(seed=seed, options=options)
        options = options or {}
        split = options.get("split", self.split)
        if split not in self._split_sizes or not self._split_sizes[split]:
            raise ValueError(f"split must be one of {sorted(self._split_sizes)}, got {split!r}")
        if "index" in options:
            index = int(options["index"]) % self._split_sizes[split]
        else:
            index = int(self.np_random.integers(self._split_sizes[split]))
        self._sid = uuid.uuid4().hex
        self.client.open(search_url(self._sid, split, index))
        self._goal = self.client.api(f"/api/sessions/{self._sid}")["goal"]
        self._done, self._score = False, 0.0
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Search or click; invalid actions change nothing (see the class docs)."""
        valid = False if self._done else self._act(coerce_action(action).strip())
        reward = 0.0
        if valid and parse_location(self.client.url).kind == "done":
            state = self.client.api(f"/api/sessions/{self._sid}")
            self._done, self._score = True, float(state["score"])
            reward = WIN_REWARD if state["won"] else 0.0
        return self._observation(), reward, self._done, False, self._info(action_is_valid=valid)

    def _act(self, text: str) -> bool:
        match = _ACTION.fullmatch(text)
        if match is None:
            return False
        verb, argument = match.groups()
        page = self.client.page
        if verb == "search":
            query = " ".join("".join(c for c in argument if c.isprintable()).split())
            if not query or len(query) > MAX_KEYWORDS_CHARS:
                return False
            if page.search_bar is None:
                self.client.open(results_url(self._sid, query, 1))
            else:
                self.client.search(query)
            return True
        label = normalize_label(argument)
        if page.search_bar is not None and label in page.search_bar.buttons:
            return True  # the original lists the search button but clicking it does nothing
        if label not in page.clickables:
            return False
        self.client.click(label)
        return True

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.client.page.text
        return None

    # -- privileged expert ---------------------------------------------------------------------
    def expert_action(self) -> str | None:
        """The next action of a shopper who knows the goal: search the target's title, page
        through those results until it shows, pick the goal's options, buy. From anywhere else
        it goes back to search first."""
        if self._done or not self._goal:
            return None
        here = parse_location(self.client.url)
        clickables = self.client.page.clickables
        target, query = self._goal["asin"].lower(), " ".join(self._goal["name"].split())
        if self.client.page.search_bar is not None:
            return f"search[{query}]"
        on_target = here.asin.lower() == target
        # The study's checks lower-case every action, so its own search may come back so.
        if here.kind == "results" and here.keywords.lower() == query[:MAX_KEYWORDS_CHARS].lower():
            if target in clickables:
                return f"click[{target}]"
            if here.page < _MAX_RESULT_PAGES and "next >" in clickables:
                return "click[next >]"
        elif here.kind == "item" and on_target:
            selected = set(here.options.values())
            for _, value in self._goal["options"]:
                label = normalize_label(value)
                if label in clickables and clickables[label].option and value not in selected:
                    return f"click[{label}]"
            return "click[buy now]"
        elif on_target and "< prev" in clickables:  # a sub-page of the target
            return "click[< prev]"
        return "click[back to search]"
