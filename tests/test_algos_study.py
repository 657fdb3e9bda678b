"""Each method at the study's settings per env, pinned against values read off its scripts.

Paths are in the study's repository (WillDreamer/ARLArena at dc1da9f): ALF =
examples/embody_agent_trainer/, SHOP = examples/shop_agent_trainer/Qwen3_4B/, and the recipe
configs recipe/world_agent/config/alfworld_.yaml (ALF_CFG) and
recipe/shop_agent/config/webshop_.yaml (SHOP_CFG). Everything a script does not set comes from
its config: clip 0.2 / 0.2 (CFG:62-63), dual clip 3.0 (CFG:64), token-mean (CFG:65), entropy
0.001 (CFG:66). Every script sets kl_loss_coef=0.01 with kl_loss_type=low_var_kl (k3).
"""

import re
from pathlib import Path

import pytest

from arlarena_baselines.algos import (
    METHODS,
    STUDY_SETTINGS,
    get_method,
    method_table_markdown,
    study_env,
    study_method,
    study_sources_markdown,
)

TM, STM = "token-mean", "seq-mean-token-mean"

EXPECTED = {
    # ALF train_alfworld_grpo.sh:78-79
    ("GRPO", "alfworld"): dict(aggregation=TM, clip_low=0.2, clip_high=0.2, dual_clip=3.0),
    # SHOP train_grpo.sh:81-82
    ("GRPO", "webshop"): dict(aggregation=TM, clip_low=0.2, clip_high=0.2, dual_clip=3.0),
    # ALF train_alfworld_grpo_seq_mean.sh:80 loss_agg_mode=seq-mean-token-mean (KL, entropy too)
    ("GRPO_ST", "alfworld"): dict(aggregation=STM, regularizer_aggregation=STM),
    # ALF train_alfworld_gspo.sh:81-82 clip 3e-4 / 4e-4; the loss is always seq-mean-token-mean
    # (verl/trainer/ppo/core_algos.py:1069), KL and entropy follow ALF_CFG:65
    ("GSPO", "alfworld"): dict(clip_low=3e-4, clip_high=4e-4, aggregation=STM,
                               regularizer_aggregation=TM, dual_clip=None),
    # SHOP train_gspo.sh:81-83 clip 3e-2 / 4e-2, loss_agg_mode=seq-mean-token-mean
    ("GSPO", "webshop"): dict(clip_low=3e-2, clip_high=4e-2, aggregation=STM,
                              regularizer_aggregation=STM),
    # ALF train_alfworld_cispo.sh:81 clip_ratio_low=1.0; SHOP train_cispo.sh:81 clip_ratio_low=1
    ("CISPO", "alfworld"): dict(clip_low=1.0, clip_high=0.2, aggregation=TM),
    ("CISPO", "webshop"): dict(clip_low=1.0, clip_high=0.2, aggregation=TM),
    # ALF train_alfworld_sapo.sh:81-82 tau 2.0 / 2.1; the SAPO loss takes loss_agg_mode (ALF_CFG:65)
    ("SAPO", "alfworld"): dict(tau_pos=2.0, tau_neg=2.1, aggregation=TM, sequence_mask=False),
    # SHOP train_sapo.sh:81-84 tau 1.0 / 1.05, use_seq_mask=True, seq_mask_delta=3e-3
    ("SAPO", "webshop"): dict(tau_pos=1.0, tau_neg=1.05, aggregation=TM, sequence_mask=True,
                              delta=3e-3),
    # ALF train_alfworld_seq_mask.sh:83 (an unregistered loss_mode): ARLArena's PPO clip + mask
    ("GRPO_SM", "alfworld"): dict(sequence_mask=True, delta=3e-3, clip_high=0.2, dual_clip=3.0),
    # ALF seq_mask/train_alfworld_cispo_seq_mask.sh:81-83
    ("CISPO_SM", "alfworld"): dict(clip_low=1.0, sequence_mask=True, delta=3e-3),
    # ALF seq_mask/train_alfworld_sapo_seq_mask.sh:81-84
    ("SAPO_SM", "alfworld"): dict(tau_pos=1.0, tau_neg=1.05, sequence_mask=True, delta=3e-3,
                                  aggregation=TM),
    # ALF train_alfworld_gigpo.sh:21,100-102 gamma 0.95, step_advantage_w 1.0, mean_std_norm
    ("GiGPO", "alfworld"): dict(gamma=0.95, omega=1.0, gigpo_mode="mean_std_norm"),
    # SHOP train_gigpo.sh:29,99-101 mean_norm
    ("GiGPO", "webshop"): dict(gamma=0.95, omega=1.0, gigpo_mode="mean_norm"),
    # recipe/world_agent/ppo/core_algos.py:550 compute_EMPG_advantage(k=1.0, k_f=1.0, zeta=0.05)
    ("EMPG", "alfworld"): dict(empg_k=1.0, empg_k_f=1.0, empg_zeta=0.05),
    # ALF train_alfworld_dapo.sh:104-106 filter, 3 rounds, cold start 15; no clip-higher
    ("DAPO_GRPO", "alfworld"): dict(filtering="dapo", max_num_gen_batches=3,
                                    cold_start_steps=15, clip_high=0.2, overlong_max_len=None,
                                    top_up=True),
    # recipe/shop_agent/main_shop_agent.py:214 forces 2 rounds; SHOP_CFG:263 cold start 0;
    # SHOP train_dapo.sh:38 max_response_length=512 for the overlong penalty
    # (agent_system/reward_manager/dapo.py:27, buffer 512/5)
    ("DAPO_GRPO", "webshop"): dict(max_num_gen_batches=2, cold_start_steps=0,
                                   overlong_max_len=512, clip_high=0.2),
    # no script: the paper's settings
    ("DAPO_GiGPO", "alfworld"): dict(clip_high=0.28, gigpo_mode="mean_std_norm",
                                     max_num_gen_batches=3),
    ("DAPO_GiGPO", "webshop"): dict(clip_high=0.28, gigpo_mode="mean_norm"),
    ("SAMPO", "alfworld"): dict(clip_low=3e-3, clip_high=4e-3, gigpo_mode="mean_std_norm",
                                cold_start_steps=15, max_num_gen_batches=3, aggregation=STM),
    ("SAMPO", "webshop"): dict(clip_low=3e-3, clip_high=4e-3, gigpo_mode="mean_norm",
                               cold_start_steps=5),
}


@pytest.mark.parametrize(("name", "env"), list(EXPECTED))
def test_the_study_settings_of_each_method_and_env(name, env):
    method = study_method(name, env)
    assert {k: getattr(method, k) for k in EXPECTED[name, env]} == EXPECTED[name, env]
    assert (method.kl_coef, method.kl_estimator, method.entropy_coef) == (0.01, "k3", 0.001)


def test_envs_without_a_study_script_read_alfworld():
    assert study_env("webshop-small") == study_env("ARLArena/WebShop-v0") == "webshop"
    for env in ("sokoban", "math", "ARLArena/Bandit-v0", "alfworld", None):
        assert study_method("GSPO", env) == get_method("GSPO")
    # A method without a WebShop script keeps its ALFWorld settings there.
    assert study_method("GRPO_ST", "webshop") == get_method("GRPO_ST")


def test_every_setting_names_its_source():
    assert set(STUDY_SETTINGS) == set(METHODS)
    for columns in STUDY_SETTINGS.values():
        assert "alfworld" in columns
        for column in columns.values():
            for setting in column.values():
                path = setting.source.removeprefix("ARLArena: ").removeprefix("as ")
                assert setting.source == "paper" or path.split(" ")[0].rsplit(":", 1)[1].isdigit()


def test_tables_mark_paper_only_methods_and_list_sources():
    table = method_table_markdown()
    paper_rows = [row for row in table.splitlines() if "(paper)" in row]
    assert [row.split(" | ")[0] for row in paper_rows] == ["| DAPO_GiGPO", "| SAMPO"]
    assert "clip_low=0.03" in table and "no script: as ALFWorld" in table
    sources = study_sources_markdown()
    assert "| GSPO | webshop | `clip_low` | 0.03 | examples/shop_agent_trainer/Qwen3_4B/" \
        "train_gspo.sh:81 |" in sources


ROOT = Path(__file__).resolve().parents[1]


def _between(text: str, name: str) -> str:
    start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
    return text[text.index(start) + len(start):text.index(end)]


def test_the_docs_hold_the_generated_tables():
    assert _between((ROOT / "docs" / "algorithms.md").read_text(), "study-sources") == \
        study_sources_markdown()
    assert _between((ROOT / "docs" / "methods.md").read_text(), "method-table") == \
        method_table_markdown()


def test_every_docs_reference_resolves_inside_the_repository():
    pattern = re.compile(r"\bdocs/[\w./-]+\.(?:md|png)")
    files = [p for ext in ("py", "md", "yaml", "sh", "cfg") for p in ROOT.rglob(f"*.{ext}")
             if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    refs = {m for path in files for m in pattern.findall(path.read_text(errors="replace"))}
    assert "docs/algorithms.md" in refs
    assert [r for r in sorted(refs) if not (ROOT / r).is_file()] == []
