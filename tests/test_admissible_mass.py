"""scripts/admissible_mass.py on a real (untrained) tiny model: the probability of a list of
actions is the sum of each action's, whatever the padding."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from arlarena_baselines.trainer.config import ModelConfig, load_config
from arlarena_baselines.trainer.models import save_model, smollm2_tokenizer, tiny_model
from arlarena_baselines.trainer.policy import Policy

_SPEC = importlib.util.spec_from_file_location(
    "admissible_mass", Path(__file__).resolve().parents[1] / "scripts" / "admissible_mass.py")
admissible_mass = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(admissible_mass)

TEMPLATE = "<think></think><action>{action}</action>"


def prompt(actions: list[str]) -> str:
    return ("ALFWorld. Task: put a mug in desk.\nObservation: You see a desk 1.\n"
            f"Admissible actions: [{', '.join(actions)}]. Answer as "
            "<think>...</think><action>...</action>.")


@pytest.fixture(scope="module")
def policy(module_tmp):
    tokenizer = smollm2_tokenizer()
    folder = save_model(tiny_model(ModelConfig(name="tiny", init_seed=3), tokenizer), tokenizer,
                        module_tmp("tiny"))
    policy = Policy.load(load_config("configs/recipe/alfworld-rl.yaml", [
        f"model.name={folder}", "model.task_vocab=false"]))
    policy.model.eval()
    return policy


def test_a_lists_mass_is_the_sum_of_its_actions_whatever_their_lengths(policy):
    actions = ["take mug 1 from desk 1", "look"]
    text = prompt(actions)
    alone = [admissible_mass.admissible_mass(policy, text, TEMPLATE, [a]) for a in actions]
    assert all(0 < summed == top < 1 for summed, top in alone)
    # scored in one batch (the short one left-padded): the same two probabilities, summed
    both, top = admissible_mass.admissible_mass(policy, text, TEMPLATE)
    assert both == pytest.approx(alone[0][0] + alone[1][0], rel=1e-4)
    assert top == pytest.approx(max(alone[0][0], alone[1][0]), rel=1e-4)


def test_a_prompt_without_the_list_is_refused():
    with pytest.raises(ValueError, match="alfworld_compact"):
        admissible_mass.listed_actions("Sokoban. Grid: ...")
