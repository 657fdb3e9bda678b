"""``make run``'s demo (``arlarena demo``), its own code path at a reduced size: a table with all
four envs, the untrained embedded model at 0% valid format, locally and as an API model behind
a real OpenAI-compatible endpoint, and behaviour cloning raising the valid format."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from arlarena_baselines.cli.demo import CLONE, DEMO_RUNS, DemoRun, run_demo

pytestmark = pytest.mark.slow


def _small(run: DemoRun) -> DemoRun:
    """One episode; the model's episodes one short turn, ALFWorld's five turns."""
    env_kwargs, agent_kwargs = dict(run.env_kwargs), dict(run.agent_kwargs)
    if run.needs_model:
        env_kwargs["max_episode_steps"], agent_kwargs["max_new_tokens"] = 1, 16
    elif "max_episode_steps" in env_kwargs:
        env_kwargs["max_episode_steps"] = 5
    return replace(run, episodes=1, env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)


def test_the_demo_at_a_reduced_size(tmp_path: Path, isolated_cache) -> None:
    clone = (*CLONE, "sft.episodes=24", "sft.batch_size=8", "eval.episodes=8")
    result = run_demo(tmp_path, [_small(run) for run in DEMO_RUNS], clone)
    rows = {(row.agent, row.env.split("/")[-1]): row for row in result.rows}
    assert {env for _, env in rows} == {"Sokoban-v0", "WebShop-Small-v0", "TIRMath-v0",
                                        "ALFWorld-v0"}
    assert rows["expert", "Sokoban-v0"].success == 1.0
    assert rows["math-coder", "TIRMath-v0"].success == 1.0
    for agent in ("hf:smollm2", "openai:smollm2"):  # the untrained model, local and by API
        row = rows[agent, "Sokoban-v0"]
        assert (row.episodes, row.errors, row.valid_format) == (1, 0, 0.0)
    # the endpoint reports the served model's own counts: the same prompt, ≤ 16 new tokens
    local = rows["hf:smollm2", "Sokoban-v0"].tokens
    api = rows["openai:smollm2", "Sokoban-v0"].tokens
    assert local and api and abs(local - api) <= 16
    first, last = result.clone[0], result.clone[-1]
    assert first["step"] == 0 and first["eval/valid_format_ratio"] == 0.0
    assert last["eval/valid_format_ratio"] >= 0.5  # behaviour cloning teaches the format
    assert (result.clone_dir / "final").is_dir() and result.png.is_file()

