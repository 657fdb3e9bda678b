"""Generation samples exactly what ``SamplingParams`` says, from each sequence's own stream.

On a tiny random model (a near-uniform softmax over SmolLM2's 49k tokens): at the training
sampling most sampled tokens rank far beyond any top-k a library would default to, at the
evaluation sampling none ranks beyond 20; a sequence does not depend on its batch; the ``hf``
agent samples exactly like the trainer's backend; reusing the KV of a shared prompt prefix
changes nothing but speed, in the decode loop and in the training forward pass; the sampler's
own log-probs and entropies are the forward pass's.
"""

from __future__ import annotations

import copy

import pytest
import torch

from arlarena_baselines.rollout import (
    EVAL_SAMPLING,
    TRAIN_SAMPLING,
    HFBackend,
    SamplingParams,
    encode_prompt,
    pack_pairs,
    response_log_probs,
    right_aligned,
)
from arlarena_baselines.rollout.forward import SHARED_PREFIX_MIN, shared_prompt_prefix
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy
from tests.sampling_checks import token_ranks
from wrappers.agents import AgentRequest, make_agent
from wrappers.agents.base import stream_seed
from wrappers.agents.sampling import (
    PrefixCache,
    TokenScores,
    generate_tokens,
    sample_tokens,
    sampling_probs,
)

pytestmark = pytest.mark.usefixtures("isolated_cache")

TOKENS = 12


@pytest.fixture(scope="module")
def tiny():
    model, tokenizer = load_policy(ModelConfig(name="tiny"))
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def prompts(tiny):
    _, tokenizer = tiny
    return [encode_prompt(tokenizer, f"question number {i}") for i in range(8)]


def with_budget(sampling: SamplingParams) -> SamplingParams:
    return SamplingParams(sampling.temperature, sampling.top_p, sampling.top_k, TOKENS)


def test_top_p_keeps_the_smallest_set_reaching_its_mass():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    probs = sampling_probs(logits, SamplingParams(top_p=0.8))
    assert probs[0].tolist() == pytest.approx([0.625, 0.375, 0.0, 0.0])
    probs = sampling_probs(logits, SamplingParams(top_p=0.81))
    assert probs[0].tolist() == pytest.approx([0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0])
    greedy = sampling_probs(logits, SamplingParams(temperature=0))
    assert greedy[0].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_sampled_tokens_have_their_probabilities():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0])
    logits = torch.log(probs).expand(4000, -1)
    generators = [torch.Generator().manual_seed(i) for i in range(4000)]
    tokens = sample_tokens(logits, SamplingParams(), generators)
    share = torch.bincount(tokens, minlength=5).double() / 4000
    assert share[4] == 0  # a token of probability 0 is never drawn
    assert share.tolist() == pytest.approx(probs.tolist(), abs=0.025)
    again = sample_tokens(logits[:3], SamplingParams(),
                          [torch.Generator().manual_seed(i) for i in range(3)])
    assert again.tolist() == tokens[:3].tolist()  # row i depends on its generator alone


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_temperature_sharpens_or_flattens_what_is_drawn(temperature):
    """softmax(logits / T): the probabilities raised to 1 / T and renormalised, and the draws
    follow them (the model-level check: test_the_sampler_scores_tokens_as_the_forward_pass_does)."""
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
    expected = probs ** (1 / temperature) / (probs ** (1 / temperature)).sum()
    logits = torch.log(probs).float().expand(4000, -1)
    sampling = SamplingParams(temperature=temperature)
    assert sampling_probs(logits[:1], sampling)[0].tolist() == pytest.approx(
        expected.tolist(), rel=1e-5)
    generators = [torch.Generator().manual_seed(i) for i in range(4000)]
    tokens = sample_tokens(logits, sampling, generators)
    share = torch.bincount(tokens, minlength=4).double() / 4000
    assert share.tolist() == pytest.approx(expected.tolist(), abs=0.025)  # 3 sigma at most


def test_training_sampling_draws_from_the_full_softmax(tiny, prompts):
    model, tokenizer = tiny
    responses = HFBackend(model, tokenizer).generate(
        prompts, with_budget(TRAIN_SAMPLING), list(range(len(prompts)))
    )
    ranks = token_ranks(model, prompts, responses, tokenizer.pad_token_id)
    assert len(ranks) == len(prompts) * TOKENS
    # transformers' default top-k is 50: a truncated sampler never goes past rank 49.
    assert sum(r >= 50 for r in ranks) / len(ranks) > 0.9


def test_evaluation_sampling_keeps_the_top_20(tiny, prompts):
    model, tokenizer = tiny
    responses = HFBackend(model, tokenizer).generate(
        prompts, with_budget(EVAL_SAMPLING), list(range(len(prompts)))
    )
    ranks = token_ranks(model, prompts, responses, tokenizer.pad_token_id)
    assert max(ranks) < 20 and len(set(ranks)) > 5


def test_sampled_tokens_follow_the_differentiated_distribution(tiny, prompts):
    """E over sampled y of log π(y) is −H(π). With a sharpened head the tail beyond the top 50
    still carries most of the mass: top-k 50 sampling gives a mean log-prob near −6.5 where
    −H is −9.5 (measured), full-softmax sampling −9.4."""
    _, tokenizer = tiny
    sharp = load_policy(ModelConfig(name="tiny"))[0].eval()
    with torch.no_grad():
        sharp.lm_head.weight.mul_(10.0)
    for temperature in (1.0, 0.7):
        sampling = SamplingParams(temperature=temperature, max_new_tokens=TOKENS)
        seeds = [stream_seed(3, f"ep{i}", 0) for i in range(len(prompts) * 4)]
        batch_prompts = prompts * 4
        responses = HFBackend(sharp, tokenizer).generate(batch_prompts, sampling, seeds)
        batch = pack_pairs(batch_prompts, responses, tokenizer.pad_token_id)
        with torch.no_grad():
            log_prob, entropy = response_log_probs(sharp, batch, with_entropy=True,
                                                   temperature=temperature)
        mask = batch.response_mask > 0
        mean_log_prob = float(log_prob[mask].mean())
        mean_entropy = float(entropy[mask].mean())
        assert 5.0 < mean_entropy < 10.6  # below the uniform's 10.8
        assert mean_log_prob == pytest.approx(-mean_entropy, abs=0.5)


def test_a_sequence_does_not_depend_on_its_batch(tiny, prompts):
    model, tokenizer = tiny
    seeds = [stream_seed(0, f"episode{i}", 2) for i in range(len(prompts))]
    sampling = with_budget(TRAIN_SAMPLING)
    together = HFBackend(model, tokenizer, batch_size=8).generate(prompts, sampling, seeds)
    chunked = HFBackend(model, tokenizer, batch_size=3).generate(
        prompts[::-1], sampling, seeds[::-1]
    )[::-1]
    alone = [generate_tokens(model, [p], sampling, [s], pad_id=tokenizer.pad_token_id,
                             eos_ids=[tokenizer.eos_token_id])[0]
             for p, s in zip(prompts[:3], seeds[:3], strict=True)]
    assert together == chunked
    assert together[:3] == alone
    assert len({tuple(r) for r in together}) == len(prompts)


def test_the_hf_agent_samples_as_the_trainer_does(tiny, tmp_path):
    model, tokenizer = tiny
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    agent = make_agent("hf", model=str(tmp_path), max_new_tokens=TOKENS, temperature=1.0,
                       top_p=1.0, top_k=0, seed=5, batch_size=2)
    requests = [AgentRequest(f"question number {i}", episode_id=f"seed={i}/sample=0", turn=1)
                for i in range(3)]
    texts = agent.act(requests)
    # Each request alone, in another order, gets the same reply: its own stream.
    assert [agent.act([r])[0] for r in requests[::-1]] == texts[::-1]
    expected = HFBackend(model, tokenizer).generate(
        [encode_prompt(tokenizer, r.prompt) for r in requests],
        agent.sampling,
        [stream_seed(5, r.episode_id, r.turn) for r in requests],
    )
    assert texts == tokenizer.batch_decode(expected, skip_special_tokens=True)
    other_turn = AgentRequest(requests[0].prompt, episode_id=requests[0].episode_id, turn=2)
    assert agent.act([other_turn])[0] != texts[0]


def test_a_reused_prompt_prefix_changes_no_token(tiny):
    """Turns of episodes: a shared preamble, each episode's history growing turn by turn. With
    a prefix cache kept across the calls, every call samples what it samples without one, and
    after the first no call computes the preamble again."""
    model, tokenizer = tiny
    preamble = "You are an agent in a maze of boxes. " * 4
    head = len(encode_prompt(tokenizer, preamble)) - 8  # less the template's closing tokens
    cache = PrefixCache()
    sampling = with_budget(TRAIN_SAMPLING)
    options = {"pad_id": tokenizer.pad_token_id, "eos_ids": [tokenizer.eos_token_id]}
    for turn, batch in enumerate([[0], [0], [0, 1, 2], [1, 2]]):
        prompts = [encode_prompt(tokenizer, preamble + f"episode {e}. " + "moved up. " * turn)
                   for e in batch]
        seeds = [stream_seed(0, f"e{e}", turn) for e in batch]
        plain = generate_tokens(model, prompts, sampling, seeds, **options)
        reused = cache.reused
        cached = generate_tokens(model, prompts, sampling, seeds, prefix_cache=cache, **options)
        assert cached == plain, turn
        assert cache.reused - reused >= (head * len(batch) if turn else 0), turn


def test_a_prefix_cache_gives_the_same_numbers_whatever_it_held_before(tiny):
    """A call's log-probs are a function of its prompts alone, to the last bit: the same after
    calls that cached a longer prefix (a group's identical prompts), a shorter one, or none.
    Else an evaluation between RL steps, a run-time estimate or a resume would change later
    samples. (Blocks of 16 tokens, so that the prefixes span several.)"""
    model, tokenizer = tiny
    preamble = "You are an agent in a maze of boxes. " * 6
    prompts = [encode_prompt(tokenizer, preamble + f"episode {e}. moved up.") for e in range(3)]
    group = [encode_prompt(tokenizer, preamble + "episode 7. moved left. " * 3)] * 2
    short = [encode_prompt(tokenizer, "You are an agent in a maze. " * 3 + f"{e}") for e in (1, 2)]
    sampling = with_budget(TRAIN_SAMPLING)
    options = {"pad_id": tokenizer.pad_token_id, "eos_ids": [tokenizer.eos_token_id]}

    def scored(cache: PrefixCache, batch: list[list[int]]) -> list[list[float]]:
        scores = TokenScores(len(batch))
        generate_tokens(model, batch, sampling, list(range(len(batch))), prefix_cache=cache,
                        scores=scores, **options)
        return scores.log_probs

    first = PrefixCache(block_tokens=16)
    fresh = scored(first, prompts)
    held = []
    for before in (group, prompts[:1] * 2, short, prompts):
        cache = PrefixCache(block_tokens=16)
        scored(cache, before)
        held.append(len(cache.ids))
        assert scored(cache, prompts) == fresh
    assert held[0] > len(first.ids) > held[2] > 0 and cache.reused > 0


def test_the_hf_backend_reuses_a_prefix_only_while_the_weights_stand(tiny):
    """The trainer's hf backend keeps the shared prefix's KV across calls (tokens as without
    it) and drops it when a parameter changes in place, as an optimizer step changes them."""
    model, tokenizer = tiny
    model = copy.deepcopy(model)
    cached, plain = HFBackend(model, tokenizer), HFBackend(model, tokenizer, prefix_caching=False)
    preamble = "You are an agent in a maze of boxes. " * 4
    prompts = [encode_prompt(tokenizer, preamble + f"episode {e}.") for e in range(3)]
    sampling, seeds = with_budget(TRAIN_SAMPLING), [11, 12, 13]
    for _ in range(2):
        assert cached.generate(prompts, sampling, seeds) == plain.generate(prompts, sampling, seeds)
    assert cached.prefix_cache.reused > 0
    stale = cached.prefix_cache
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(1.5)
    assert cached.generate(prompts, sampling, seeds) == plain.generate(prompts, sampling, seeds)
    assert cached.prefix_cache is not stale


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_sampler_scores_tokens_as_the_forward_pass_does(tiny, temperature):
    """π_old from the decode loop (prefix cache and chunking included) is the forward pass's
    log-prob of each sampled token, and its entropy the forward's entropy at that position."""
    model, tokenizer = tiny
    preamble = "You are an agent in a maze of boxes. " * 4
    prompts = [encode_prompt(tokenizer, preamble + f"episode {e}." + " up" * e) for e in range(6)]
    sampling = SamplingParams(temperature=temperature, max_new_tokens=TOKENS)
    scores = TokenScores(len(prompts))
    backend = HFBackend(model, tokenizer, batch_size=4)
    responses = backend.generate(prompts, sampling, list(range(6)), scores=scores)
    assert backend.exact_scores
    assert [len(r) for r in responses] == [len(s) for s in scores.log_probs]
    batch = pack_pairs(prompts, responses, tokenizer.pad_token_id)
    with torch.no_grad():
        log_prob, entropy = response_log_probs(model, batch, with_entropy=True,
                                               temperature=temperature)
    mask = batch.response_mask > 0
    sampled = right_aligned(scores.log_probs, batch.width)
    entropies = right_aligned(scores.entropies, batch.width)
    assert (sampled - log_prob)[mask].abs().max() < 1e-5
    assert torch.allclose(entropies[mask], entropy[mask], rtol=1e-5)  # ~10 nats: relative
    # The same replies without scores: recording them changes no token.
    assert backend.generate(prompts, sampling, list(range(6))) == responses


def test_a_shared_prompt_prefix_runs_once_with_the_same_values_and_gradients(tiny):
    """The forward pass that runs the prompt prefix all rows share once gives the log-probs,
    entropies and parameter gradients of the plain forward pass, within float rounding."""
    model, tokenizer = tiny
    model = copy.deepcopy(model).train()
    preamble = "You are an agent in a maze of boxes. " * 4
    prompts = [encode_prompt(tokenizer, preamble + f"episode {e}." + " up" * e) for e in range(5)]
    responses = [[(7 * e + t) % 200 + 10 for t in range(3 + e % 3)] for e in range(5)]
    batch = pack_pairs(prompts, responses, tokenizer.pad_token_id)
    assert shared_prompt_prefix(batch) > SHARED_PREFIX_MIN
    results = []
    for share in (True, False):
        model.zero_grad()
        log_prob, entropy = response_log_probs(model, batch, with_entropy=True,
                                               temperature=0.8, share_prefix=share)
        ((log_prob - 0.1 * entropy) * batch.response_mask).sum().backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        results.append((log_prob.detach(), entropy.detach(), grads))
    (lp, ent, grad), (lp0, ent0, grad0) = results
    mask = batch.response_mask > 0
    assert (lp - lp0)[mask].abs().max() < 1e-5 and (ent - ent0)[mask].abs().max() < 1e-5
    assert torch.allclose(grad, grad0, atol=1e-5, rtol=1e-4) and grad0.abs().max() > 0
