"""A task vocabulary keeps the task's texts intact and the model's distribution over them.

- Gathered from the task's own episodes, it covers the prompts of levels it never saw.
- Text round-trips through it exactly as through the full tokenizer (encode → decode), and a
  model's tokens decode to the same text whichever side of the remap they are on.
- Cutting a full-vocabulary checkpoint to it keeps each kept token's logit: the cut model's
  softmax is the full one's renormalised over the kept ids.
- It is saved with the checkpoint: loading the folder (evaluation, the ``hf`` agent, ``train
  compare``) applies it, and the loaded model scores responses as the saved one did.
- The tiny model built over it trains (behaviour cloning) and samples only task ids.
"""

from __future__ import annotations

import pytest
import torch

from arlarena_baselines.rollout import SamplingParams, Task, collect, make_env_pool, pack_pairs
from arlarena_baselines.rollout import forward as F
from arlarena_baselines.trainer.config import load_config
from arlarena_baselines.trainer.models import load_policy, save_model, smollm2_tokenizer
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.vocab import task_vocabulary
from wrappers.agents import make_agent
from wrappers.agents.chat import ChatFormat
from wrappers.agents.hf import load_model
from wrappers.agents.vocab import VOCAB_FILE, TaskVocabTokenizer, TaskVocabulary

pytestmark = pytest.mark.usefixtures("isolated_cache")

RECIPE = ["model.name=tiny", "model.hidden_size=64", "model.num_layers=2", "model.num_heads=2",
          "rollout.env=sokoban", "rollout.template=sokoban_compact", "rollout.history_length=0",
          "rollout.max_turns=4", "rollout.max_new_tokens=16",
          "sft.response_template=<think>{action}</think><action>{action}</action>"]


@pytest.fixture(scope="module")
def config(module_tmp):
    return load_config(None, [*RECIPE, f"run.out={module_tmp('run')}"])


@pytest.fixture(scope="module")
def vocab(config) -> TaskVocabulary:
    return task_vocabulary(config, smollm2_tokenizer(), levels=32)


def level_prompts(config, seeds: range) -> list[str]:
    """The prompts of 4 turns of random play on each of ``seeds`` (levels the vocabulary was
    not gathered on)."""
    env, prompts = env_factory(config)(), []
    actions = ["up", "left", "down", "right"]
    for seed in seeds:
        prompt, _ = env.reset(seed=seed)
        prompts.append(prompt)
        for turn in range(3):
            prompt, *_ = env.step(f"<think>x</think><action>{actions[(seed + turn) % 4]}</action>")
            prompts.append(prompt)
    return prompts


def test_the_vocabulary_is_small_and_covers_unseen_levels(config, vocab):
    tokenizer = smollm2_tokenizer()
    assert 40 < len(vocab) < 200 < len(tokenizer)
    assert {tokenizer.eos_token_id, tokenizer.pad_token_id} <= set(vocab.ids)
    chat = ChatFormat(tokenizer)
    for prompt in level_prompts(config, range(50_000, 50_100)):
        assert all(i in vocab for i in chat.prompt_ids(prompt))
    for move in ("up", "down", "left", "right"):
        response = f"<think>{move}</think><action>{move}</action>"
        assert all(i in vocab for i in chat.response_ids(response))
    again = task_vocabulary(config, tokenizer, levels=32)
    assert again == vocab  # gathered deterministically


def test_the_envs_reply_to_an_invalid_move_is_in_the_vocabulary():
    """The expert and the random agent play admissible actions only; the prompt after a move
    the env rejects (ALFWorld's "Nothing happens.") must still encode without unknown ids,
    or RL, whose policy makes such moves, feeds the model an untrained embedding."""
    config = load_config("configs/recipe/alfworld-rl.yaml", ["model.name=tiny"])
    tokenizer = smollm2_tokenizer()
    chat = ChatFormat(tokenizer)
    vocab = task_vocabulary(config, tokenizer, levels=4)
    env = env_factory(config)()
    env.reset(seed=90_000, options={"split": "train", "part": "fit"})
    prompt, *_, info = env.step("<think></think><action>take unicorn 1 from moon 1</action>")
    assert not info["format_ok"] and "\nObservation: Nothing happens.\n" in prompt
    # The reply's own words (the scene's object names need more levels than 4).
    reply = tokenizer("\nObservation: Nothing happens.\n", add_special_tokens=False)["input_ids"]
    assert set(reply) <= set(chat.prompt_ids(prompt)) and all(i in vocab for i in reply)


def test_text_round_trips_as_through_the_full_tokenizer(config, vocab):
    full = smollm2_tokenizer()
    task = TaskVocabTokenizer(full, vocab)
    texts = [*level_prompts(config, range(7, 9)), "<think>up</think><action>up</action>"]
    for text in texts:
        ids = task(text, add_special_tokens=False)["input_ids"]
        assert max(ids) < len(task) == len(vocab)
        assert vocab.to_full(ids) == full(text, add_special_tokens=False)["input_ids"]
        assert task.decode(ids) == full.decode(full(text, add_special_tokens=False)["input_ids"])
    batch = task(texts, add_special_tokens=False)["input_ids"]  # a batch encodes row by row
    assert task.batch_decode(batch) == [task.decode(row) for row in batch]
    assert task.eos_token_id == vocab.to_task([full.eos_token_id])[0]
    assert task.convert_ids_to_tokens(task.eos_token_id) == full.eos_token
    with pytest.warns(UserWarning, match="outside the task vocabulary"):
        unknown = task("Zebra quantum", add_special_tokens=False)["input_ids"]
    assert set(unknown) == {vocab.unk}


def test_a_cut_checkpoint_keeps_each_kept_tokens_logit(config, vocab, tmp_path):
    full_model, full_tok = load_policy(config.model)
    folder = save_model(full_model, full_tok, tmp_path / "full")
    cut_config = load_config(None, [*RECIPE, f"model.name={folder}", "model.task_vocab=true"])
    cut_model, cut_tok = load_policy(cut_config.model, lambda tok: vocab)
    assert isinstance(cut_tok, TaskVocabTokenizer)
    assert cut_model.get_output_embeddings().weight.shape[0] == len(vocab)
    assert cut_model.config.eos_token_id == cut_tok.eos_token_id
    chat, cut_chat = ChatFormat(full_tok), ChatFormat(cut_tok)
    prompt = level_prompts(config, range(3, 4))[0]
    response = "<think>left</think><action>left</action>"
    with torch.no_grad():
        full_logits = full_model.eval()(torch.tensor([chat.prompt_ids(prompt)])).logits[0, -1]
        cut_logits = cut_model.eval()(torch.tensor([cut_chat.prompt_ids(prompt)])).logits[0, -1]
    assert torch.allclose(cut_logits, full_logits[list(vocab.ids)], atol=1e-5)
    # Its response log-probs are the full model's renormalised over the kept ids.
    full_ids, cut_ids = chat.response_ids(response), cut_chat.response_ids(response)
    with torch.no_grad():
        row = torch.tensor([chat.prompt_ids(prompt) + full_ids])
        logits = full_model(row).logits[0, -len(full_ids) - 1 : -1, list(vocab.ids)]
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(cut_ids)[:, None])
        cut_lp, _ = F.response_log_probs(cut_model, pack_pairs(
            [cut_chat.prompt_ids(prompt)], [cut_ids], cut_tok.pad_token_id))
    assert torch.allclose(cut_lp[0], expected[:, 0], atol=1e-5)


def test_the_vocabulary_travels_with_the_checkpoint(config, vocab, tmp_path):
    policy = Policy.load(load_config(None, [*RECIPE, "model.task_vocab=true",
                                            f"run.out={tmp_path}"]))
    assert len(policy.tokenizer) == policy.model.get_input_embeddings().weight.shape[0]
    folder = policy.save(tmp_path / "final")
    assert (folder / VOCAB_FILE).is_file()
    model, tokenizer = load_model(str(folder))
    assert isinstance(tokenizer, TaskVocabTokenizer) and tokenizer.vocab == policy.tokenizer.vocab
    chat = ChatFormat(tokenizer)
    prompt = level_prompts(config, range(11, 12))[0]
    pair = pack_pairs([chat.prompt_ids(prompt)], [chat.response_ids("<think>up</think>")],
                      tokenizer.pad_token_id)
    with torch.no_grad():
        loaded, _ = F.response_log_probs(model, pair)
        saved, _ = F.response_log_probs(policy.model, pair)
    assert torch.allclose(loaded, saved, atol=1e-6)
    # The hf agent (arlarena eval) and a checkpoint-named run load it the same way.
    agent = make_agent("hf", model=str(folder), max_new_tokens=8, temperature=1.0, top_p=1.0,
                       top_k=0)
    assert isinstance(agent.tokenizer, TaskVocabTokenizer)
    again = load_policy(load_config(None, [*RECIPE, f"model.name={folder}"]).model)[1]
    assert again.vocab == policy.tokenizer.vocab
    policy.close()


def test_the_tiny_task_model_samples_only_task_text(config, tmp_path):
    policy = Policy.load(load_config(None, [*RECIPE, "model.task_vocab=true",
                                            f"run.out={tmp_path}"]))
    vocab = policy.tokenizer.vocab
    with make_env_pool(env_factory(config), 8, 0) as pool:
        rollout = collect(pool, policy.responder(SamplingParams(max_new_tokens=16)),
                          [Task(f"g{i}", 100 + i) for i in range(2)], 4, max_turns=2, seed=3)
    full = smollm2_tokenizer()
    for sample in rollout.samples:
        assert max(sample.response_ids) < len(vocab)
        text = full.decode(vocab.to_full(sample.response_ids), skip_special_tokens=True)
        assert sample.response == text
    policy.close()


def test_pretrained_models_keep_their_vocabulary():
    config = load_config(None, ["model.name=smollm2", "model.task_vocab=true"])
    with pytest.raises(ValueError, match="keeps its vocabulary"):
        load_policy(config.model, lambda tok: None)
