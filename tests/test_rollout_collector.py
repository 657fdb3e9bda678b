"""Rollouts: groups share env seeds, every turn becomes a scored step sample, pools agree."""

from __future__ import annotations

import pytest
import torch

from arlarena_baselines.rollout import (
    AgentResponder,
    EnvFactory,
    HFBackend,
    InProcessEnvPool,
    ModelResponder,
    ProcessEnvPool,
    Reply,
    SamplingParams,
    Start,
    StepSamples,
    Task,
    collect,
    encode_prompt,
    make_env_pool,
    pack_pairs,
    play,
    response_log_probs,
    score_samples,
)
from arlarena_baselines.rollout.envs import EnvWorkerError
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy
from wrappers.agents import make_agent
from wrappers.agents.base import Agent, AgentReply
from wrappers.agents.scripted import planned_response
from wrappers.format import parse_response

SOKOBAN = EnvFactory("sokoban", history_length=1)


pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture(scope="module")
def tiny():
    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    return model.eval(), tokenizer


class CountingBackend(HFBackend):
    """The real HF backend, counting its generate calls and prompts."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[int] = []

    def generate(self, prompts, sampling, seeds, scores=None):
        self.calls.append(len(prompts))
        return super().generate(prompts, sampling, seeds, scores)


def test_groups_share_the_seed_and_samples_carry_their_ids():
    tasks = [Task("a", 3), Task("b", 4)]
    with InProcessEnvPool(SOKOBAN, 6) as pool:
        rollout = collect(pool, AgentResponder(make_agent("random", seed=1)), tasks, 3,
                          max_turns=4)
    assert len(rollout.episodes) == 6
    first = {s.traj_id: s.anchor for s in rollout.samples if s.step == 0}
    assert first["a/0"] == first["a/1"] == first["a/2"] != first["b/0"]
    for episode in rollout.episodes:
        turns = [s for s in rollout.samples if s.traj_id == episode.traj_id]
        assert [s.step for s in turns] == list(range(episode.turns))
        assert all(s.group_id == episode.group_id for s in turns)
        assert all(s.episode_score == pytest.approx(episode.episode_return) for s in turns)
        assert episode.episode_return == pytest.approx(sum(s.reward for s in turns))
        assert episode.turns <= 4 and all(s.valid for s in turns)


def test_the_expert_solves_every_level_in_process():
    with InProcessEnvPool(SOKOBAN, 4) as pool:
        rollout = collect(pool, AgentResponder(make_agent("expert")),
                          [Task(f"g{i}", i) for i in range(4)], 1)
    assert all(e.won for e in rollout.episodes)


def test_a_noisy_expert_deviates_on_some_turns_and_replays_exactly():
    tasks = [Task(f"g{i}", i) for i in range(6)]

    def actions(agent) -> list[tuple[str, int, str]]:
        with InProcessEnvPool(SOKOBAN, 6) as pool:
            rollout = collect(pool, AgentResponder(agent), tasks, 1, max_turns=6)
        return [(s.traj_id, s.step, s.response) for s in rollout.samples]

    clean, noisy = actions(make_agent("expert")), actions(make_agent("expert", epsilon=0.5))
    assert noisy == actions(make_agent("expert", epsilon=0.5))
    assert noisy != clean
    assert all("<action>" in r for _, _, r in noisy)
    with pytest.raises(ValueError, match="epsilon"):
        make_agent("expert", epsilon=1.5)


def test_worker_processes_give_the_same_rollouts_as_in_process():
    tasks = [Task("a", 11), Task("b", 12), Task("c", 13)]
    runs = []
    for pool in (make_env_pool(SOKOBAN, 4, 0), make_env_pool(SOKOBAN, 4, 2)):
        with pool:
            rollout = collect(pool, AgentResponder(make_agent("random", seed=5)), tasks, 2,
                              max_turns=3)
        runs.append([(s.traj_id, s.step, s.prompt, s.reward, s.anchor) for s in rollout.samples])
    assert isinstance(pool, ProcessEnvPool) and runs[0] == runs[1]


def test_an_env_error_in_a_worker_is_raised_with_its_traceback():
    with ProcessEnvPool(EnvFactory("sokoban"), 2, 1) as pool:
        pool.reset([0, 1], [0, 0])
        with pytest.raises(EnvWorkerError, match="split must be one of"):
            pool.reset([0], [1], {"split": "nope"})
        assert pool.reset([0], [1])[0][1]["won"] is False  # the worker survives


class FlakyAgent(Agent):
    """The random agent, except that the request of one episode's turn gets an error reply
    (as an API agent's does when the server answers garbage)."""

    name = "flaky"

    def __init__(self, episode: str, turn: int) -> None:
        self.random, self.fails = make_agent("random", seed=1), (episode, turn)

    def act(self, requests):
        return [reply.text for reply in self.respond(requests)]

    def respond(self, requests):
        return [AgentReply("", error="HTTP 500") if (r.episode_id, r.turn) == self.fails else reply
                for r, reply in zip(requests, self.random.respond(requests), strict=True)]


def test_an_agent_error_ends_its_episode_and_not_the_rollout():
    def played(agent):
        with InProcessEnvPool(SOKOBAN, 3) as pool:
            return collect(pool, AgentResponder(agent), [Task("a", 3), Task("b", 4)], 2,
                           max_turns=4)

    flaky, clean = played(FlakyAgent("b/1", 1)), played(make_agent("random", seed=1))
    failed = [(e.traj_id, e.turns, e.won, e.score, e.error) for e in flaky.episodes if e.error]
    assert failed == [("b/1", 1, False, 0.0, "HTTP 500")]
    assert len(flaky.episodes) == 4 and [s.step for s in flaky.samples if s.traj_id == "b/1"] == [0]
    kept = [(s.traj_id, s.step, s.response) for s in clean.samples if s.traj_id != "b/1"]
    assert sorted(kept) == sorted((s.traj_id, s.step, s.response) for s in flaky.samples
                                  if s.traj_id != "b/1")  # the others played as without it


def test_model_rollout_batches_each_turn_and_scores_every_token(tiny):
    model, tokenizer = tiny
    backend = CountingBackend(model, tokenizer, batch_size=64)
    responder = ModelResponder(backend, tokenizer, SamplingParams(max_new_tokens=6))
    with InProcessEnvPool(SOKOBAN, 4) as pool:
        rollout = collect(
            pool, responder, [Task("a", 0), Task("b", 1)], 2, max_turns=2,
            scorer=lambda s: score_samples(model, s, tokenizer.pad_token_id, micro_batch_size=3),
        )
    assert backend.calls == [4, 4]  # one generation call per turn for all live episodes
    assert len(rollout.samples) == 8 and rollout.generated_tokens == sum(
        len(s.response_ids) for s in rollout.samples)
    sample = rollout.samples[-1]
    assert sample.prompt_ids == encode_prompt(tokenizer, sample.prompt)
    assert 1 <= len(sample.response_ids) <= 6
    assert len(sample.old_log_probs) == len(sample.response_ids)
    # The batched, padded scores equal those of the sample alone.
    alone = pack_pairs([sample.prompt_ids], [sample.response_ids], tokenizer.pad_token_id)
    with torch.no_grad():
        log_prob, entropy = response_log_probs(model, alone, with_entropy=True)
    assert sample.old_log_probs == pytest.approx(log_prob[0].tolist(), abs=1e-4)
    assert sample.entropy == pytest.approx(float(entropy.mean()), abs=1e-4)
    assert not any(s.valid for s in rollout.samples)  # an untrained model fails the format


def test_generation_is_reproducible_per_seed_and_greedy_is_argmax(tiny):
    model, tokenizer = tiny
    backend = HFBackend(model, tokenizer, batch_size=2)
    prompts = [encode_prompt(tokenizer, "hello"), encode_prompt(tokenizer, "a longer prompt")]
    sampling = SamplingParams(max_new_tokens=5)
    state = torch.get_rng_state()
    first = backend.generate(prompts, sampling, [7, 8])
    assert torch.equal(state, torch.get_rng_state())  # the global RNG is untouched
    assert backend.generate(prompts, sampling, [7, 8]) == first
    assert backend.generate(prompts, sampling, [9, 8])[0] != first[0]
    greedy = backend.generate(prompts[:1], SamplingParams(temperature=0, max_new_tokens=3), [0])[0]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompts[0] + greedy])).logits[0]
    assert greedy == logits[len(prompts[0]) - 1 : -1].argmax(-1).tolist()


def test_a_rollout_is_the_same_whatever_the_pool_size_and_task_order(tiny):
    model, tokenizer = tiny
    responder = ModelResponder(HFBackend(model, tokenizer, batch_size=3), tokenizer,
                               SamplingParams(max_new_tokens=4))
    tasks = [Task("a", 5), Task("b", 6), Task("c", 7)]
    runs = []
    for envs, order in ((6, tasks), (2, tasks[::-1])):
        with InProcessEnvPool(SOKOBAN, envs) as pool:
            rollout = collect(pool, responder, order, 2, max_turns=2, seed=11)
        runs.append(sorted((s.traj_id, s.step, tuple(s.response_ids)) for s in rollout.samples))
    assert runs[0] == runs[1]


def test_study_sampling_settings_are_validated():
    with pytest.raises(ValueError):
        SamplingParams(top_p=0.0)
    with pytest.raises(ValueError):
        SamplingParams(max_new_tokens=0)


def test_compact_template_replaces_the_study_prompt():
    env = EnvFactory("sokoban", history_length=0, template="sokoban_compact")()
    prompt, info = env.reset(seed=0)
    assert prompt.startswith(f"Sokoban: {info['task']} Symbols")
    # The grid, one cell per token: every row of the anchor, its cells spaced.
    for row in info["anchor"].split("\n"):
        assert "\n" + " ".join(row) + "\n" in prompt
    with pytest.raises(KeyError, match="no prompt template"):
        EnvFactory("sokoban", template="nope")()


def test_a_turn_without_a_format_verdict_counts_valid_for_every_consumer():
    """A bare env (no PromptWrapper) reports no ``format_ok``: the loop decides once that the
    turn is valid, so the episode's count and the step samples agree."""
    import gymnasium as gym

    import arlarena_envs  # noqa: F401  (registers the ids)

    class Blue:
        def respond(self, requests, seed):
            return [Reply("blue") for _ in requests]

    pool = InProcessEnvPool(lambda: gym.make("ARLArena/Bandit-v0", rounds=2), 2)
    samples, finished = StepSamples(), []

    class Keep:
        def turn(self, episode, turn):
            assert "format_ok" not in turn.info

        def finish(self, episode):
            finished.append(episode)

    play(pool, Blue(), [Start(Task("g", s), 0, f"e{s}") for s in (0, 1)], [samples, Keep()])
    pool.close()
    assert [(e.turns, e.valid_turns) for e in finished] == [(2, 2), (2, 2)]
    assert [s.valid for s in samples.rollout.samples] == [True] * 4


def test_a_noisy_experts_replies_name_the_plan_it_left():
    """Every reply of a noisy expert gives back its plan's move through ``planned_response``,
    also on the turns where it moved at random (read from the env before each move)."""
    agent, plans = make_agent("expert", epsilon=0.5), {}

    class Recorder(AgentResponder):
        def respond(self, requests, seed):
            plans.update({(r.episode_id, r.turn): r.env.unwrapped.expert_action()
                          for r in requests})
            return super().respond(requests, seed)

    with InProcessEnvPool(SOKOBAN, 6) as pool:
        rollout = collect(pool, Recorder(agent), [Task(f"g{i}", i) for i in range(6)], 1,
                          max_turns=6)
    replies = [s.response for s in rollout.samples]
    plan = [plans[s.traj_id, s.step] for s in rollout.samples]
    assert len(plan) == len(plans)
    taken = [parse_response(r).action for r in replies]
    planned = [parse_response(planned_response(r)).action for r in replies]
    assert planned == plan and taken != plan  # the noise moved off the plan, the label did not
