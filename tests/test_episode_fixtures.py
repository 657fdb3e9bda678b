"""The same episodes as before the one episode loop (issue 33), to the byte.

``tests/fixtures/episodes/`` holds what the code before the redesign produced, each from fixed
seeds on the tiny random Llama with few episodes and few turns:

- ``eval.json.gz``: the JSONL records of ``arlarena eval`` of the ``random``, ``expert`` and
  ``hf`` agents on every env (two tasks × two samples, three in flight, so a freed slot takes
  the next episode);
- ``compare.json``: the paired rows of ``arlarena train compare`` of two checkpoints (more
  held-out tasks than env slots) and each one's episodes;
- ``rl.json``: the metrics of one RL step (and the held-out evaluations around it) and the
  held-out episodes it logged.

A record may gain fields, never change one. The RL metrics' floats come from torch's kernels,
which round differently on another CPU: they are compared to 1e-6 (on the machine that recorded
them they are equal). ``ARLARENA_RECORD_FIXTURES=1`` records the fixtures again: only for a
change that is meant to change the episodes.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

import pytest

from arlarena_baselines.cli import main
from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import load_policy

pytestmark = pytest.mark.usefixtures("isolated_cache")

FIXTURES = Path(__file__).parent / "fixtures" / "episodes"
RECORD = os.environ.get("ARLARENA_RECORD_FIXTURES") == "1"
ENVS = ("sokoban", "alfworld", "ARLArena/WebShop-Small-v0", "math", "ARLArena/Bandit-v0")
MACHINE = ("time/", "perf/")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A folder with the tiny model saved as ``a`` (init seed 0) and ``b`` (seed 1); relative
    paths keep the models' names, and so the records, the same in every run."""
    monkeypatch.chdir(tmp_path)
    for name, seed in (("a", 0), ("b", 1)):
        model, tokenizer = load_policy(ModelConfig(name="tiny", init_seed=seed))
        model.save_pretrained(name)
        tokenizer.save_pretrained(name)
    return tmp_path


def _check(name: str, found, same) -> None:
    """Compare ``found`` with the fixture ``name`` by ``same(expected, found)`` (or record it)."""
    path = FIXTURES / name
    opener = gzip.open if name.endswith(".gz") else open
    if RECORD:
        path.parent.mkdir(parents=True, exist_ok=True)
        with opener(path, "wt", encoding="utf-8") as handle:
            json.dump(found, handle, indent=None if name.endswith(".gz") else 1, sort_keys=True)
        pytest.skip(f"recorded {path}")
    with opener(path, "rt", encoding="utf-8") as handle:
        same(json.load(handle), found)


def _equal(expected, found) -> None:
    assert found == expected


SETTINGS_DIGESTS = {"digest", "settings"}
"""The settings digest (of a settings record, and its copy in every episode record) is a hash
of the whole settings record, which has since grown the model's weights hash and the env's
scorer: it changes, while every recorded setting and every episode stays as recorded."""


def _same_records(expected: dict, found: dict) -> None:
    """Every recorded record, in order, with every recorded field unchanged (but the settings
    digest, :data:`SETTINGS_DIGESTS`)."""
    assert sorted(found) == sorted(expected)
    for name, records in expected.items():
        assert len(found[name]) == len(records), name
        for i, (old, new) in enumerate(zip(records, found[name], strict=True)):
            kept = {k: v for k, v in old.items() if k not in SETTINGS_DIGESTS}
            assert _recorded(kept, new) == kept, f"{name} record {i}"


def _recorded(old, new):
    """``new`` cut to the keys ``old`` has, at every depth (a settings record gained keys)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: _recorded(v, new.get(k)) for k, v in old.items()}
    return new


def test_eval_of_every_agent_on_every_env_plays_the_recorded_episodes(workdir):
    found = {}
    for env in ENVS:
        assert main(["eval", "--env", env, "--agent", "random,expert,hf", "--model", "a",
                     "--max-tokens", "8", "--threads", "1", "--episodes", "2", "--samples",
                     "2", "--batch-size", "3", "--seed", "5", "--env-kwargs",
                     '{"max_episode_steps": 4}', "--out", "out", "--no-progress"]) == 0
    for path in sorted((workdir / "out").glob("*.jsonl")):
        found[path.name] = list(read_records(path))
    assert len(found) == 3 * len(ENVS)
    _check("eval.json.gz", found, _same_records)


def test_train_compare_gives_the_recorded_paired_rows(workdir):
    found = {}
    # Recorded before the held-out split: pinned to the tasks they played then (the env's
    # every level / training problems), where the default is now the held-out split.
    before_split = {"sokoban": "{split: all}", "math": "{split: train}"}
    for env in ("sokoban", "math"):
        assert main(["train", "compare", "a", "b", "--env", env, "--out", f"cmp-{env}",
                     "--set", f"eval.reset_options={before_split[env]}",
                     "--threads", "1", "--set", "eval.episodes=5", "--set",
                     "rollout.n_groups=1", "--set", "rollout.group_size=2", "--set",
                     "rollout.max_turns=3", "--set", "rollout.max_new_tokens=6", "--set",
                     "run.progress=false"]) == 0
        folder = workdir / f"cmp-{env}"
        found[env] = {"rows": json.loads((folder / "compare.json").read_text()), "episodes": [
            [{k: r[k] for k in ("seed", "won", "score", "turns")}
             for r in read_records(folder / f"{i}.jsonl") if r.get("type", "episode") == "episode"]
            for i in (0, 1)]}
    _check("compare.json", found, _equal)


def _close(expected: dict, found: dict) -> None:
    """The same episodes, and every recorded metric still there; floats equal to 1e-6 (see
    the module docstring)."""
    assert found["episodes"] == expected["episodes"]
    assert len(found["metrics"]) == len(expected["metrics"])
    for old, new in zip(expected["metrics"], found["metrics"], strict=True):
        assert set(old) <= set(new), sorted(set(old) - set(new))
        for key, value in old.items():
            if isinstance(value, float):
                assert math.isclose(new[key], value, rel_tol=1e-6, abs_tol=1e-9), key
            else:
                assert new[key] == value, key


def test_an_rl_step_from_a_fixed_seed_gives_the_recorded_metrics(workdir):
    assert main(["train", "rl", "--model", "a", "--env", "sokoban", "--steps", "1", "--out",
                 "rl", "--threads", "1", "--seed", "3", "--set", "rollout.n_groups=2", "--set",
                 "rollout.group_size=2", "--set", "rollout.max_turns=3", "--set",
                 "rollout.max_new_tokens=8", "--set", "eval.episodes=5", "--set",
                 "eval.every=1", "--set", "rl.mini_batch_size=4", "--set",
                 "run.progress=false", "--set", "run.tensorboard=false",
                 # recorded before Sokoban's content split: every level, as then
                 "--set", "rollout.reset_options={split: all}",
                 "--set", "eval.reset_options={split: all}"]) == 0
    metrics = [{k: v for k, v in r.items() if not k.startswith(MACHINE)}
               for r in read_records(workdir / "rl" / "metrics.jsonl")]
    episodes = list(read_records(workdir / "rl" / "eval_episodes.jsonl"))
    _check("rl.json", {"metrics": metrics, "episodes": episodes}, _close)
