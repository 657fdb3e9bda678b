"""The arena: planning, running (resume, skip), the grid's selection rule, the report.

The end-to-end test runs ``arlarena arena`` for GRPO and CISPO × 2 steps on the tiny random
Llama and ``ARLArena/Bandit-v0`` (one turn, tiny budgets) and reads the report it writes.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.algos.compose import method_policy_loss
from arlarena_baselines.arena.equivalence import (
    Equivalence,
    Sameness,
    compare_runs,
    equivalence_section,
    equivalences,
)
from arlarena_baselines.arena.figure3 import own_band_keys
from arlarena_baselines.arena.findings import judge
from arlarena_baselines.arena.plan import (
    ArenaPlan,
    RunSpec,
    Setting,
    StressGrid,
    parse_grid,
    plan_runs,
)
from arlarena_baselines.arena.results import (
    ConfigResult,
    RunResult,
    load_runs,
    select_configs,
    summarize,
)
from arlarena_baselines.arena.runner import (
    FINAL_FILE,
    RECORD_FILE,
    holding,
    run_arena,
    run_one,
)
from arlarena_baselines.arena.stability import drops, stability_section
from arlarena_baselines.arena.stats import paired_difference, peak_drop
from arlarena_baselines.arena.stress import stress_cells
from arlarena_baselines.cli import main
from arlarena_baselines.evaluation.paired import paired_comparison
from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.trainer.compare import compare_checkpoints
from arlarena_baselines.trainer.config import TrainConfig, apply_overrides
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, METRICS_FILE, read_metrics

pytestmark = pytest.mark.usefixtures("isolated_cache")

ROOT = Path(__file__).resolve().parents[1]

TINY = [
    "rollout.n_groups=2", "rollout.group_size=2", "rollout.max_new_tokens=8",
    "eval.episodes=4", "eval.every=0", "run.threads=1", "rl.mini_batch_size=2",
]
ARGS = ["--model", "tiny", "--env", "ARLArena/Bandit-v0", "--steps", "2",
        *(f"--set={o}" for o in TINY)]


def tiny_base(*overrides: str) -> TrainConfig:
    """The base config ``ARGS`` give the arena command."""
    return apply_overrides(TrainConfig(), [
        "model.name=tiny", "rollout.env=ARLArena/Bandit-v0", "rl.steps=2",
        "run.tensorboard=false", "run.keep_checkpoints=1", *TINY, *overrides])


# -- planning ---------------------------------------------------------------------------------
def test_plan_adds_stabiliser_staleness_and_grid_rows_with_one_folder_each(tmp_path):
    base = apply_overrides(TrainConfig(), ["rl.mini_batch_size=256", "run.seed=7"])
    plan = ArenaPlan(methods=("cispo", "GiGPO"), seeds=2,
                     grid=parse_grid(["CISPO:clip_high=0.2,0.28", "CISPO:rl.lr=1e-6,1e-5"]))
    runs = plan_runs(plan, base, tmp_path)
    names = {(r.method, r.setting.name) for r in runs}
    assert names == {
        ("checkpoint", "start"),  # the starting checkpoint's evaluation
        ("CISPO", "base"),
        ("CISPO", "stabiliser-kl_coef=0.05"),
        ("CISPO", "stabiliser-mini_batch_size=1024"),
        ("CISPO", "staleness-mini_batch_size=64"),
        # clip_high=0.2 with lr=1e-6 is the base itself: not run twice
        ("CISPO", "grid-clip_high=0.2+lr=1e-5"),
        ("CISPO", "grid-clip_high=0.28+lr=1e-6"),
        ("CISPO", "grid-clip_high=0.28+lr=1e-5"),
        ("GiGPO", "base"),
    }
    assert len(runs) == 2 * len(names)
    assert {r.seed for r in runs} == {7, 8}
    assert len({r.folder(tmp_path) for r in runs}) == len(runs)
    spec = next(r for r in runs if r.setting.name == "grid-clip_high=0.28+lr=1e-5")
    config = spec.config(base, tmp_path)
    assert config.rl.method == "CISPO" and config.rl.lr == 1e-5
    assert config.rl.method_overrides == {"clip_high": 0.28}
    assert config.run.out == str(tmp_path / "CISPO" / spec.setting.name / f"seed{spec.seed}")


def test_the_stress_grid_plans_every_cell_seed_by_seed_with_its_own_budget(tmp_path):
    stress = StressGrid(methods=("cispo", "GSPO"), lrs=("1e-4", "1e-3"), mini_batches=(1, 4),
                        seeds=2, budget=("rl.steps=3", "eval.episodes=8"))
    plan = ArenaPlan(methods=("GRPO",), staleness=0, stress=stress, final_temperatures=(1.0, 0.4))
    runs = plan_runs(plan, apply_overrides(TrainConfig(), ["run.seed=5"]), tmp_path)
    assert [(r.method, r.setting.name, r.seed) for r in runs[:2]] == [
        ("checkpoint", "start", 5), ("GRPO", "base", 5)]
    assert all(r.final_temperatures == (1.0, 0.4) and r.final_episodes == 1024
               for r in runs[:2])
    cells = runs[2:]
    assert len(cells) == 2 * 2 * 2 * 2
    assert [r.seed for r in cells] == [5] * 8 + [6] * 8  # every cell once before any twice
    assert [(r.method, r.setting.name) for r in cells[:4]] == [
        ("CISPO", "stress-lr=1e-4+mini_batches=1"), ("GSPO", "stress-lr=1e-4+mini_batches=1"),
        ("CISPO", "stress-lr=1e-4+mini_batches=4"), ("GSPO", "stress-lr=1e-4+mini_batches=4")]
    assert all(r.final_temperatures == () and r.final_episodes == 0 for r in cells)
    config = cells[3].config(TrainConfig(), tmp_path)
    assert (config.rl.lr, config.rl.mini_batches, config.rl.steps) == (1e-4, 4, 3)
    assert config.eval.episodes == 8 and config.eval.at_start  # its own start
    # Without base methods there is no start evaluation either.
    only = plan_runs(ArenaPlan(methods=(), stress=stress), TrainConfig(), tmp_path)
    assert {r.setting.role for r in only} == {"stress"}
    with pytest.raises(ValueError, match="stress grid needs"):
        StressGrid(lrs=())


def test_plan_without_a_mini_batch_stales_by_episodes_and_skips_the_batch_stabiliser(tmp_path):
    base = apply_overrides(TrainConfig(), ["rl.mini_batch_size=null", "rollout.n_groups=4",
                                           "rollout.group_size=16"])
    runs = plan_runs(ArenaPlan(methods=("SAPO",), staleness=8), base, tmp_path)
    assert [r.setting.name for r in runs] == [
        "start", "base", "stabiliser-kl_coef=0.05", "staleness-mini_batch_size=8"]


def test_a_base_count_of_mini_batches_refuses_rows_that_set_a_size(tmp_path):
    base = apply_overrides(TrainConfig(), ["rl.mini_batches=4"])
    with pytest.raises(ValueError, match="--staleness 0"):
        plan_runs(ArenaPlan(methods=("CISPO",)), base, tmp_path)
    plan = ArenaPlan(methods=("CISPO",), staleness=0, stabiliser_batch=1)
    assert {r.setting.name for r in plan_runs(plan, base, tmp_path)} == {
        "start", "base", "stabiliser-kl_coef=0.05"}


@pytest.mark.parametrize("grid, message", [
    (["CISPO:clip_hgh=0.3"], "neither a Method field"),
    (["CISPO-clip_high=0.3"], "METHOD:key=value1,value2"),
    (["NOPE:clip_high=0.3"], "NOPE"),
])
def test_bad_grid_strings_are_refused(grid, message):
    with pytest.raises((ValueError, KeyError), match=message):
        parse_grid(grid)


def test_a_bad_grid_value_fails_before_anything_runs(tmp_path):
    plan = ArenaPlan(methods=("GSPO",), grid=parse_grid(["GSPO:clip_low=3e-3,5"]))
    with pytest.raises(ValueError, match="clip_low"):
        plan_runs(plan, TrainConfig(), tmp_path)
    assert not any(tmp_path.iterdir())


# -- the grid's selection rule ------------------------------------------------------------------
def _config(method, role, setting, success, train_success, *, collapse_at=None, seeds=(0,),
            start=None, levels=10, overrides=()):
    """A configuration whose runs won ``success`` of ``levels`` held-out levels at their last
    evaluation (step ``len(train_success)``) and at the one halfway, ``start`` (default
    ``success``) at step 0, and logged ``train_success`` per step."""
    runs = []
    last = len(train_success)
    for seed in seeds:
        records = [{"phase": "rl", "step": 0}] + [
            {"phase": "rl", "step": i + 1, mn.SUCCESS_RATE: v,
             **({mn.COLLAPSE: 1.0} if collapse_at == i + 1 else {})}
            for i, v in enumerate(train_success)]
        episodes = [{"seed": level, "won": level < round(levels * success), "score": 0.0}
                    for level in range(levels)]
        first = success if start is None else start
        now = {e["seed"]: float(e["won"]) for e in episodes}
        curve = {0: {level: float(level < round(levels * first)) for level in range(levels)},
                 last // 2: now, last: now}
        record = {"method": method, "role": role, "setting": setting,
                  "overrides": list(overrides), "seed": seed}
        runs.append(RunResult(None, record, records, episodes, curve))
    return runs


def test_selection_keeps_the_best_stable_configuration():
    steady = [0.5] * 10
    runs = (_config("CISPO", "base", "base", 0.3, steady)
            # best, but its held-out success fell from 1.0 to under half of it
            + _config("CISPO", "grid", "grid-a", 0.45, steady, start=1.0, levels=100)
            + _config("CISPO", "grid", "grid-b", 0.4, steady, collapse_at=3)  # detector
            + _config("CISPO", "grid", "grid-c", 0.35, steady)
            + _config("CISPO", "stabiliser", "stabiliser-x", 1.0, steady))  # not a candidate
    configs = summarize(runs)
    by_name = {c.setting: c for c in configs}
    assert by_name["grid-a"].collapses == [(0, 5)] and by_name["grid-a"].runs[0].drop_step == 5
    assert by_name["grid-b"].collapses == [(0, 3)] and by_name["grid-b"].runs[0].drop_step is None
    assert not by_name["grid-a"].stable and not by_name["grid-b"].stable
    assert select_configs(configs)["CISPO"].setting == "grid-c"
    # 97 of 100 levels after all 100 is within 3 paired standard errors: the best.
    near = summarize(_config("CISPO", "base", "base", 0.5, steady)
                     + _config("CISPO", "grid", "grid-a", 0.97, steady, start=1.0, levels=100))
    assert not near[1].collapses and select_configs(near)["CISPO"].setting == "grid-a"


def test_selection_falls_back_to_the_base_when_nothing_is_stable():
    configs = summarize(_config("SAPO", "grid", "grid-a", 0.9, [0.5] * 4, collapse_at=2)
                        + _config("SAPO", "base", "base", 0.2, [0.5] * 4, collapse_at=3))
    assert select_configs(configs)["SAPO"].setting == "base"


def test_a_configuration_is_stable_only_if_every_seed_is():
    runs = _config("GSPO", "base", "base", 0.5, [0.5] * 10, seeds=(0,))
    runs += _config("GSPO", "base", "base", 0.5, [0.5] * 8 + [0.0, 1.0], seeds=(1,),
                    collapse_at=9)
    (config,) = summarize(runs)
    assert isinstance(config, ConfigResult) and config.seeds == [0, 1]
    assert config.collapses == [(1, 9)] and not config.stable
    assert math.isclose(config.variance, 0.25)  # the study's variance, quoted


STEADY = [0.5] * 10


def _findings(*runs):
    """Each finding the arena judges on ``runs`` (groups of runs, as :func:`_config` makes),
    by its claim."""
    configs = summarize([run for group in runs for run in group])
    return {f.claim: f for f in judge(configs, select_configs(configs))}


def _verdicts(*runs):
    return {claim: f.verdict for claim, f in _findings(*runs).items()}


def _evidence(*runs):
    return {claim: f.evidence for claim, f in _findings(*runs).items()}


def test_findings_judge_held_out_differences_by_their_standard_error():
    grpo = _config("GRPO", "base", "base", 0.1, STEADY)
    verdicts = _verdicts(grpo, _config("GiGPO", "base", "base", 0.9, STEADY),
                         _config("DAPO_GRPO", "base", "base", 0.1, STEADY),
                         _config("DAPO_GiGPO", "base", "base", 0.5, STEADY))
    assert verdicts["GiGPO beats GRPO."] == "holds"
    # DAPO costs GiGPO 0.4 and GRPO nothing: the contrary of the claim.
    assert verdicts["DAPO's filtering helps GiGPO more than GRPO."] == "fails"
    assert verdicts["SAMPO is best overall."] == "not run"
    assert _verdicts(grpo, _config("GiGPO", "base", "base", 0.2, STEADY))[
        "GiGPO beats GRPO."] == "within noise"  # one level in ten
    verdicts = _verdicts(grpo, _config("GiGPO", "base", "base", 0.5, STEADY),
                         _config("SAMPO", "base", "base", 0.0, STEADY))
    assert verdicts["SAMPO is best overall."] == "fails"


def test_a_finding_names_the_seeds_and_runs_its_difference_is_paired_on():
    """A method run on fewer seeds limits the pairing to the seeds it shares: the evidence
    says so, rather than counting every configuration's runs."""
    three = (0, 1, 2)
    evidence = _evidence(_config("GRPO", "base", "base", 0.5, STEADY, seeds=three),
                         _config("GiGPO", "base", "base", 0.6, STEADY, seeds=three),
                         _config("DAPO_GRPO", "base", "base", 0.5, STEADY),
                         _config("DAPO_GiGPO", "base", "base", 0.7, STEADY, seeds=three))
    assert evidence["GiGPO beats GRPO."].endswith("(n = 30; seeds 0, 1, 2: 6 runs)")
    assert evidence["DAPO's filtering helps GiGPO more than GRPO."].endswith(
        "their difference +0.100 ± 0.100 (n = 10; seed 0: 4 runs)")


def test_findings_judge_collapse_and_masking_by_the_collapse_detector():
    clipping = ("Tolerant clipping (CISPO, SAPO) collapses; sequence-level clipping (GSPO) "
                "stays stable.")
    masking = "Sequence masking stabilises CISPO and SAPO."
    calm = [_config(m, "base", "base", 0.5, STEADY) for m in ("CISPO", "SAPO", "GSPO")]
    masked = [_config(m, "base", "base", 0.5, STEADY) for m in ("CISPO_SM", "SAPO_SM")]
    verdicts = _verdicts(*calm, *masked)
    assert verdicts[clipping] == "fails"  # no collapse to show
    assert verdicts[masking] == "within noise"  # nothing to stabilise; the same success
    stale = _config("CISPO", "staleness", "staleness-x", 0.2, STEADY, collapse_at=4)
    assert _verdicts(*calm, stale)[clipping] == "holds"
    collapsed_gspo = _config("GSPO", "staleness", "staleness-x", 0.5, STEADY, collapse_at=5)
    assert _verdicts(*calm, stale, collapsed_gspo)[clipping] == "fails"
    collapsed = [_config("CISPO", "base", "base", 0.2, STEADY, collapse_at=4),
                 _config("SAPO", "base", "base", 0.2, STEADY, collapse_at=4)]
    assert _verdicts(*collapsed, *masked)[masking] == "holds"
    assert _verdicts(*collapsed, masked[0], _config(
        "SAPO_SM", "base", "base", 0.2, STEADY, collapse_at=2))[masking] == "mixed"
    assert _verdicts(*calm)[masking] == "not run"


def test_the_clipping_finding_names_the_seeds_each_method_rests_on():
    """A grid made in sittings may hold one seed of SAPO beside three of CISPO: a verdict of
    "no collapse" on one seed says less, and the evidence shows it."""
    evidence = _evidence(_config("CISPO", "base", "base", 0.5, STEADY, seeds=(0, 1, 2)),
                         _config("SAPO", "base", "base", 0.5, STEADY),
                         _config("GSPO", "base", "base", 0.5, STEADY, seeds=(0, 1)))
    clipping = evidence["Tolerant clipping (CISPO, SAPO) collapses; sequence-level clipping "
                        "(GSPO) stays stable."]
    assert [part.split(":")[0] for part in clipping.split("; ")] == [
        "CISPO base (3 seeds)", "SAPO base (1 seed)", "GSPO base (2 seeds)"]


def _stress(method, lr, k, collapse):
    return _config(method, "stress", f"stress-lr={lr}+mini_batches={k}", 0.5, STEADY,
                   collapse_at=4 if collapse else None,
                   overrides=(f"rl.lr={lr}", f"rl.mini_batches={k}"))


def _stress_verdicts(collapsed: dict[str, set[int]]) -> dict[str, str]:
    """Three cells (0, 1, 2); ``collapsed``: per method, the cells it collapses in."""
    runs = [run for method, cells in collapsed.items() for cell in range(3)
            for run in _stress(method, ("2e-4", "6e-4", "2e-3")[cell], 4, cell in cells)]
    configs = summarize(runs)
    cells = stress_cells(configs)
    assert [(c.lr, c.mini_batches) for c in cells] == [(2e-4, 4), (6e-4, 4), (2e-3, 4)]
    return {f.claim.split(" (")[0].split(" CISPO")[0]: f.verdict
            for f in judge(configs, select_configs(configs), cells)[:2]}


def test_stress_findings_count_collapsed_cells_where_grpo_or_gspo_stays_stable():
    clipping, masking = "Tolerant clipping", "Sequence masking stabilises"
    # Cell 2 wrecks GRPO and GSPO alike: it does not count.
    verdicts = _stress_verdicts({"GRPO": {2}, "GSPO": {2}, "CISPO": {1, 2}, "SAPO": {2},
                                 "CISPO_SM": {2}, "SAPO_SM": {2}})
    assert verdicts == {clipping: "holds", masking: "holds"}  # CISPO 1 cell, GSPO and _SM 0
    verdicts = _stress_verdicts({"GRPO": set(), "GSPO": {0, 1}, "CISPO": {1}, "SAPO": {1},
                                 "CISPO_SM": {0, 1}, "SAPO_SM": {1}})
    assert verdicts == {clipping: "fails", masking: "fails"}  # SAPO ties, CISPO_SM worse
    verdicts = _stress_verdicts({"GRPO": set(), "GSPO": set(), "CISPO": set(), "SAPO": set(),
                                 "CISPO_SM": set(), "SAPO_SM": set()})
    assert verdicts == {clipping: "within noise", masking: "within noise"}


def test_one_seed_paired_difference_is_the_evaluation_modules():
    a = {(0, level): float(level % 3 == 0) for level in range(30)}
    b = {(0, level): float(level % 2 == 0) for level in range(25)}
    mean, se, n = paired_difference(a, b)
    reference = paired_comparison({k[1]: v for k, v in b.items()},
                                  {k[1]: v for k, v in a.items()})
    assert n == reference.n == 25
    assert math.isclose(mean, reference.diff) and math.isclose(se, reference.se_diff)
    # A second seed that disagrees widens the error to the spread of the seeds' differences.
    a |= {(1, level): 1.0 for level in range(25)}
    b |= {(1, level): 0.0 for level in range(25)}
    assert paired_difference(a, b)[1] > 0.4


# -- stability: the drop from the peak, the collapse verdict, the effect against GRPO ---------
def _curve(*wins: int, levels: int = 100) -> dict[int, dict[int, float]]:
    """A held-out curve evaluated every 4 steps: ``wins[i]`` of ``levels`` won at step 4i."""
    return {4 * i: {level: float(level < won) for level in range(levels)}
            for i, won in enumerate(wins)}


def test_a_collapse_is_a_lasting_drop_from_the_peak_beyond_paired_errors():
    # Early gains, then a fall that lasts two evaluations: a collapse from the first of them.
    drop = peak_drop(_curve(50, 70, 40, 35))
    assert (drop.peak_step, drop.peak, drop.last) == (4, 0.7, 0.35)
    assert math.isclose(drop.drop, 0.35)
    # 35 levels lost of the peak's 70, none gained: sd of the paired differences / sqrt(100).
    assert math.isclose(drop.se, math.sqrt(0.35 * 0.65 * 100 / 99) / 10)
    assert drop.step == 8
    assert peak_drop(_curve(50, 70, 40, 70)).step is None  # it came back
    assert peak_drop(_curve(50, 70, 70, 40)).step is None  # seen once, at the end
    # The review's knife edges: 0.531 → 0.281 was "stable" for ending above half the start
    # (0.266); now a lasting fall of 25 points on the same levels is a collapse.
    assert peak_drop(_curve(53, 30, 28, levels=100)).step == 4
    # ... and a fall within 3 paired standard errors is not, however near half the start.
    assert peak_drop(_curve(10, 6, 5, levels=100)).step is None


def _run(method, seed, curve, setting="base", records=None, final=()):
    record = {"method": method, "role": "base", "setting": setting, "overrides": [],
              "seed": seed}
    return RunResult(None, record, records or [{"phase": "rl", "step": 0}], [], curve,
                     list(final))


def test_stability_gives_each_methods_drop_against_grpos_paired_by_seed():
    grpo = [_run("GRPO", s, _curve(50, 60, 60 - d, 60 - d)) for s, d in enumerate((0, 10, 20))]
    sapo = [_run("SAPO", s, _curve(50, 60, 60 - d, 60 - d)) for s, d in enumerate((20, 30, 50))]
    configs = summarize(grpo + sapo)
    assert [drops(c) for c in configs][1] == {
        s: (pytest.approx(d), pytest.approx(math.sqrt(d * (1 - d) * 100 / 99) / 10))
        for s, d in enumerate((0.2, 0.3, 0.5))}
    lines = "\n".join(stability_section(configs, "100 levels"))
    # SAPO − GRPO per seed: +0.2, +0.2, +0.3: mean 0.233, standard error 0.033 across seeds.
    assert "| SAPO | base | 3 | – | 0.600 @ 4 (s0), 0.600 @ 4 (s1), 0.600 @ 4 (s2) | +0.333 ± " \
           "0.088 | +0.233 ± 0.033 (seeds: 3) | +0.200 … +0.300 | 8 (s0), 8 (s1), 8 (s2) |" \
           in lines
    # GRPO's seed 0 held its peak: no collapse there.
    assert "| +0.100 ± 0.058 | – | – | 8 (s1), 8 (s2) |" in lines


# -- equivalences: the same procedure, from the runs -----------------------------------------
def _steps(*grad_norms, samples=(100, 90, 80, 70), drawn=1.0):
    return [{"phase": "rl", "step": 0}] + [
        {"phase": "rl", "step": i + 1, mn.GRAD_NORM: g, mn.SAMPLES: float(samples[i]),
         mn.SUCCESS_RATE: 0.5, mn.ROUNDS: drawn if i == len(grad_norms) - 1 else 1.0}
        for i, g in enumerate(grad_norms)]


def test_the_equivalence_check_tells_identical_runs_from_different_ones():
    curve = _curve(50, 60)
    a = _run("GRPO", 0, curve, records=_steps(0.2, 0.3, 0.4, 0.5))
    same = _run("CISPO", 0, _curve(50, 60), records=_steps(0.2, 0.3000001, 0.4, 0.5))
    assert compare_runs(a, same).verdict == "identical episodes"
    assert compare_runs(a, same).steps == 4
    other = _run("GSPO", 0, curve, records=_steps(0.2, 0.31, 0.4, 0.5))
    assert compare_runs(a, other) == Sameness("differ", 1,
                                              "gradient norm 0.3 vs 0.31 at step 2")
    # The same gradients until the rollouts drift apart (floating-point noise): the same.
    drifted = _run("GRPO_ST", 0, _curve(50, 61),
                   records=_steps(0.2, 0.3, 0.4, 0.9, samples=(100, 90, 80, 71)))
    assert compare_runs(a, drifted).verdict == "same gradients"
    assert compare_runs(a, drifted).steps == 3
    early = _run("EMPG", 0, curve, records=_steps(0.2, 0.3, 0.4, 0.5, samples=(100, 91, 80, 70)))
    assert compare_runs(a, early).verdict == "undecided"
    # Rollouts drawn differently (a filter's second round): a different procedure.
    filtered = _run("DAPO_GRPO", 0, curve, records=_steps(0.2, 0.3, 0.4, 0.5, drawn=2.0))
    assert compare_runs(a, filtered).verdict == "differ"
    # Classes over the seeds both ran: GRPO = CISPO on seeds 0 and 1; GSPO differs on seed 0.
    runs = [a, same, other, _run("GRPO", 1, curve, records=_steps(0.1, 0.2, 0.3, 0.4)),
            _run("CISPO", 1, curve, records=_steps(0.1, 0.2, 0.3, 0.4)),
            _run("GSPO", 1, curve, records=_steps(0.1, 0.2, 0.3, 0.4))]
    assert equivalences(summarize(runs)) == [
        Equivalence("base", ("GRPO", "CISPO"), (0, 1), "identical episodes", 4)]
    table = "\n".join(equivalence_section(summarize(runs)))
    assert "| base | GRPO, CISPO | 0, 1 | identical episodes | 4 |" in table


def test_figure3_reads_cisposs_clipped_weight_on_either_side():
    """CISPO's own band clips the weight at 1 + ε_high for either sign of A (ε_low = 1): its
    A < 0 column is the stability count of either side, not the loss's lower-bound count,
    which can never be non-zero there."""
    from arlarena_baselines.algos import get_method, stability_metrics

    cispo = get_method("CISPO")
    ratios = torch.tensor([[1.5, 0.5], [1.0, 1.3], [0.5, 1.0]])
    adv, mask = torch.tensor([1.0, -1.0, -1.0]), torch.ones(3, 2)
    out = stability_metrics(ratios.log(), torch.zeros(3, 2), adv, mask,
                            clip_low=cispo.clip_low, clip_high=cispo.clip_high)
    low, high = own_band_keys("CISPO")
    assert out[low] == pytest.approx(1 / 6)  # 1.3 at A < 0: its weight is clipped to 1.2
    assert out[high] == pytest.approx(1 / 6)  # 1.5 at A > 0
    _, metrics = method_policy_loss(cispo, ratios.log(), torch.zeros(3, 2), adv, mask)
    assert metrics[mn.OOB_LOW_FRAC] == 0.0  # below 1 − ε_low = 0: never
    assert own_band_keys("GRPO") == (mn.OOB_LOW_FRAC, mn.OOB_HIGH_FRAC)


def test_reference_kl_logs_the_kl_shares_without_changing_training(tmp_path):
    """Without a KL term a run keeps no π_ref, so the KL shares (and kl_shares.png) were
    empty; ``rl.reference_kl`` keeps one for the diagnostics alone: the same training, the
    shares logged. A 2-step run's collapse detector can fire from its first update."""
    from arlarena_baselines.trainer.rl import RLTrainer, train_rl

    runs = {}
    for keep in (False, True):
        config = tiny_base("rl.method=GRPO", "rl.method_overrides={kl_coef: 0.0}", "rl.lr=1e-2",
                           f"rl.reference_kl={str(keep).lower()}", "eval.episodes=0",
                           f"run.out={tmp_path / str(keep)}")
        runs[keep] = train_rl(config)
    trainer = RLTrainer(apply_overrides(config, [f"run.out={tmp_path / 'detector'}"]))
    trainer.close()
    assert (trainer.detector.warmup, trainer.detector.patience) == (1, 1)
    for plain, kept in zip(runs[False], runs[True], strict=True):
        assert not any(k in plain for k in (mn.KL_REF, *mn.KL_REF_SHARE_KEYS))
        assert all(k in kept for k in (mn.KL_REF, *mn.KL_REF_SHARE_KEYS))
        assert kept[mn.GRAD_NORM] == plain[mn.GRAD_NORM]
        assert kept[mn.SAMPLES] == plain[mn.SAMPLES]
        assert kept[mn.TOTAL_LOSS] == plain[mn.TOTAL_LOSS]
    # Step 1 trains π_ref itself (KL 0); after one update the shares divide a positive KL.
    assert runs[True][-1][mn.KL_REF] > 0
    assert sum(runs[True][-1][k] for k in mn.KL_REF_SHARE_KEYS) == pytest.approx(1.0)


# -- running: the command, skip, resume, the report -------------------------------------------
@pytest.fixture(scope="module")
def arena(module_tmp):
    """``arlarena arena`` for GRPO and CISPO × 2 steps (with CISPO's KL stabiliser row)."""
    root = module_tmp("arena")
    code = main(["arena", *ARGS, "--methods", "GRPO,CISPO", "--staleness", "0",
                 "--stabiliser-batch", "1", "--out", str(root)])
    assert code == 0
    return root


def test_arena_trains_every_run_and_reports_rows_and_figures(arena):
    runs = {(r.record["method"], r.record["setting"]): r for r in load_runs(arena)}
    assert set(runs) == {("checkpoint", "start"), ("GRPO", "base"), ("CISPO", "base"),
                         ("CISPO", "stabiliser-kl_coef=0.05")}
    start = runs.pop(("checkpoint", "start"))
    assert [r["step"] for r in read_metrics(start.folder)] == [0]
    for run in runs.values():
        # Step 0 is the checkpoint's evaluation, made once for every run.
        assert [r["step"] for r in read_metrics(run.folder)] == [1, 2]
        assert [r["step"] for r in run.records] == [0, 1, 2]
        assert run.records[0] == read_metrics(start.folder)[0]
        assert (run.folder / "final" / "config.json").is_file()
        assert not (run.folder / "checkpoints").exists()
    # The same held-out levels for every method, one episode each.
    levels = {tuple(sorted(e["seed"] for e in r.episodes)) for r in [start, *runs.values()]}
    assert levels == {(1_000_000, 1_000_001, 1_000_002, 1_000_003)}
    assert {e["step"] for r in runs.values() for e in r.episodes} == {2}
    report = (arena / "arena.md").read_text()
    methods_table = report.split("## Methods")[1].split("##")[0]
    assert "| checkpoint | start | 1 |" in methods_table
    assert "| GRPO | base | 1 |" in methods_table and "| CISPO | base | 1 |" in methods_table
    assert "| CISPO | stabiliser-kl_coef=0.05 | 1 |" in report.split("## Stabilisers")[1]
    findings = report.split("## The study's findings")[1].split("##")[0]
    assert "| 1 | Tolerant clipping" in findings and (
        "| 3 | GiGPO beats GRPO. | the last held-out evaluation | **not run** |" in findings)
    for name in ("success.png", "diagnostics.png", "kl_shares.png"):
        assert (arena / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in report
    rows = (arena / "arena.csv").read_text().splitlines()
    assert rows[0].startswith("method,role,setting") and len(rows) == 5


def test_the_start_evaluation_is_the_trainers_own_step_zero_evaluation(arena, tmp_path):
    from arlarena_baselines.trainer.rl import RLTrainer

    config = apply_overrides(RunSpec("GRPO", Setting(), 0).config(tiny_base(), tmp_path),
                             ["eval.at_start=true"])
    trainer = RLTrainer(config)
    try:
        own = trainer.evaluate()
    finally:
        trainer.close()
    (shared,) = read_metrics(arena / "checkpoint" / "start" / "seed0")
    assert {k: v for k, v in shared.items() if k not in ("phase", "step")} == own


def test_rerun_skips_finished_runs_and_refuses_changed_settings(arena, capsys):
    stamps = {p: p.stat().st_mtime_ns for p in arena.rglob(RECORD_FILE)}
    assert main(["arena", *ARGS, "--methods", "GRPO,CISPO", "--staleness", "0",
                 "--stabiliser-batch", "1", "--out", str(arena), "--no-progress"]) == 0
    assert {p: p.stat().st_mtime_ns for p in arena.rglob(RECORD_FILE)} == stamps
    assert main(["arena", *ARGS, "--steps", "3", "--methods", "GRPO", "--out", str(arena),
                 "--no-progress"]) == 2
    assert "rl.steps: 2 -> 3" in capsys.readouterr().err


def test_report_rebuilds_into_another_folder_with_the_runs_small_files(arena, tmp_path):
    out = tmp_path / "docs"
    assert main(["arena", "--report", str(arena), "--out", str(out)]) == 0
    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    for name in ("metrics.jsonl.gz", "eval_episodes.jsonl.gz", "arena.json", "rl_config.yaml"):
        assert f"GRPO/base/seed0/{name}" in copied
    assert not any("/final/" in p or p.endswith(".jsonl") for p in copied)
    for name in ("metrics.jsonl", EVAL_EPISODES_FILE):
        packed = out / "GRPO" / "base" / "seed0" / f"{name}.gz"
        assert gzip.decompress(packed.read_bytes()) == (
            arena / "GRPO" / "base" / "seed0" / name).read_bytes()
    assert (out / "arena.md").read_text() == (arena / "arena.md").read_text()
    again = tmp_path / "again"  # the copies rebuild it, and copy to the same bytes
    assert main(["arena", "--report", str(out), "--out", str(again)]) == 0
    assert (again / "arena.md").read_text() == (arena / "arena.md").read_text()
    runs = [p for p in copied if "/seed" in p]
    assert runs and all((again / p).read_bytes() == (out / p).read_bytes() for p in runs)


def test_an_arena_goes_on_from_the_finished_runs_of_a_report_folder(arena, tmp_path, capsys):
    """``--from``: a report folder's copies count as finished runs in a new arena folder (in
    place of an interrupted copy there); a run it lacks is trained; the report is the same."""
    docs = tmp_path / "docs"
    assert main(["arena", "--report", str(arena), "--out", str(docs)]) == 0
    shutil.rmtree(docs / "CISPO" / "base")  # a sitting that had not made it
    out = tmp_path / "again"
    interrupted = out / "GRPO" / "base" / "seed0"
    interrupted.mkdir(parents=True)
    (interrupted / METRICS_FILE).write_text('{"step": 1}\n')
    args = ["arena", *ARGS, "--methods", "GRPO,CISPO", "--staleness", "0",
            "--stabiliser-batch", "1", "--out", str(out), "--no-progress"]
    capsys.readouterr()
    assert main([*args, "--from", str(docs), "--dry-run"]) == 0
    states = {" ".join(line.split()[:-4]): line.split()[-2]
              for line in capsys.readouterr().out.splitlines()[:-1]}
    assert states == {"checkpoint start seed 0": "restore", "GRPO base seed 0": "restore",
                      "CISPO base seed 0": "new",
                      "CISPO stabiliser-kl_coef=0.05 seed 0": "restore"}
    assert not (interrupted / RECORD_FILE).exists()  # a dry run copies nothing
    assert main([*args, "--from", str(docs)]) == 0
    assert not (interrupted / METRICS_FILE).exists() and not (interrupted / "final").exists()
    assert (interrupted / RECORD_FILE).read_bytes() == (docs / "GRPO" / "base" / "seed0" /
                                                        RECORD_FILE).read_bytes()
    assert (out / "CISPO" / "base" / "seed0" / "final").is_dir()
    assert (out / "arena.md").read_text() == (arena / "arena.md").read_text()


def test_runs_from_other_starting_weights_are_refused(arena, tmp_path, capsys):
    """Each run's record keeps its start's weights hash and the CPU kernels it trained on. A
    start rebuilt with other weights under the same path (a BC retrained on a machine with
    other float kernels) pairs with none of those runs: the arena refuses them in its folder
    and from ``--from``, before it copies or trains anything, naming the kernels the runs were
    made on and this machine's."""
    from transformers import AutoModelForCausalLM

    from wrappers.agents.weights import files_digest

    start = tmp_path / "start"
    shutil.copytree(arena / "GRPO" / "base" / "seed0" / "final", start)
    out, docs, fresh = tmp_path / "arena", tmp_path / "docs", tmp_path / "fresh"
    args = ["arena", *ARGS, "--model", str(start), "--steps", "1", "--methods", "GRPO",
            "--no-stabilisers", "--staleness", "0", "--no-progress"]
    assert main([*args, "--out", str(out)]) == 0
    records = [json.loads(p.read_text()) for p in out.rglob(RECORD_FILE)]
    assert len(records) == 2 and {r["start_weights"] for r in records} == {files_digest(start)}
    here = torch.backends.cpu.get_cpu_capability()
    assert {r["cpu_kernels"] for r in records} == {here}
    assert main(["arena", "--report", str(out), "--out", str(docs)]) == 0
    for path in docs.rglob(RECORD_FILE):  # as if the committed runs were made elsewhere
        path.write_text(json.dumps({**json.loads(path.read_text()), "cpu_kernels": "ELSEWHERE"}))
    model = AutoModelForCausalLM.from_pretrained(start)
    with torch.no_grad():
        next(model.parameters()).add_(1e-3)
    model.save_pretrained(start)
    for target, made in ((["--out", str(out)], here),
                         (["--out", str(fresh), "--from", str(docs)], "ELSEWHERE")):
        for dry in ([], ["--dry-run"]):
            capsys.readouterr()
            assert main([*args, *target, *dry]) == 2
            err = capsys.readouterr().err
            assert "holds a run from other starting weights" in err
            assert f"trained on {made} CPU kernels" in err and f"this machine runs {here})" in err
    assert not (fresh / "GRPO").exists() and not (fresh / "checkpoint").exists()


def test_parallel_jobs_make_the_same_runs_and_report_a_failing_one(arena, tmp_path):
    good = RunSpec("checkpoint", Setting("start"), 0)
    bad = RunSpec("checkpoint", Setting("start", ("rollout.template=nope",)), 0)
    failures = run_arena([bad, good], tiny_base(), tmp_path, jobs=2, progress=False)
    assert [(spec, "no prompt template 'nope'" in error) for spec, error in failures] == [
        (bad, True)]
    assert not (bad.folder(tmp_path) / RECORD_FILE).exists()
    for name in ("metrics.jsonl", EVAL_EPISODES_FILE):
        assert (good.folder(tmp_path) / name).read_text() == (
            good.folder(arena) / name).read_text()


@pytest.mark.usefixtures("sigint_reaches_children")
@pytest.mark.parametrize("stop", ["Ctrl-C", "SIGTERM"])
def test_an_interrupted_parallel_arena_stops_its_workers_and_starts_no_other_run(tmp_path, stop):
    """Ctrl-C (SIGINT to the whole process group) or SIGTERM (to the arena's process alone)
    stops a two-job arena at once: no worker trains on without it, and no queued run starts."""
    out = tmp_path / "arena"
    run = subprocess.Popen(
        [sys.executable, "-m", "arlarena_baselines.cli", "arena", *ARGS, "--steps", "100000",
         "--methods", "GRPO,GSPO,CISPO", "--no-stabilisers", "--staleness", "0", "--jobs", "2",
         "--out", str(out), "--no-progress"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def lines(method: str) -> int:
        path = out / method / "base" / "seed0" / METRICS_FILE
        return path.read_text().count("\n") if path.is_file() else 0

    try:
        end = time.monotonic() + 180
        while lines("GRPO") < 2 or lines("GSPO") < 2:  # both workers are training
            assert time.monotonic() < end and run.poll() is None, run.communicate()[1]
            time.sleep(0.05)
        if stop == "Ctrl-C":
            os.killpg(run.pid, signal.SIGINT)
        else:
            run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
        trained = lines("GRPO"), lines("GSPO")
        time.sleep(2)  # a worker left running would go on logging steps
        assert (lines("GRPO"), lines("GSPO")) == trained
    finally:  # whatever is left of the arena's session (none of it, when the test passes)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    signum = signal.SIGINT if stop == "Ctrl-C" else signal.SIGTERM
    assert run.returncode == 128 + signum, err
    assert "interrupted; results written so far are kept" in err
    assert not (out / "CISPO").exists()


def test_a_second_arena_on_the_same_folder_is_refused_while_one_runs(tmp_path, capsys):
    holder = subprocess.Popen(  # another arena's process, holding the folder's lock
        [sys.executable, "-c", "import sys\nfrom arlarena_baselines.arena.runner import holding\n"
         "with holding(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()",
         str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert main(["arena", *ARGS, "--methods", "GRPO", "--out", str(tmp_path),
                     "--no-progress"]) == 2
        assert "in use by another arena" in capsys.readouterr().err
        assert not list(tmp_path.rglob("*.yaml"))  # nothing was started
    finally:
        holder.communicate("", timeout=60)
    with holding(tmp_path):  # its process ended: the lock went with it
        pass


def _machine_free(records):
    return [{k: v for k, v in r.items() if not k.startswith(mn.MACHINE_PREFIXES)}
            for r in records]


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize("checkpoint_every", [0, 1])
def test_an_interrupted_run_resumes_or_restarts_to_the_same_metrics(arena, tmp_path,
                                                                     checkpoint_every):
    base = tiny_base(f"run.checkpoint_every={checkpoint_every}")
    spec = RunSpec("GRPO", Setting(), 0)
    calls = []

    def interrupt_in_step_two():
        calls.append(1)
        if len(calls) == 2:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_one(spec, base, tmp_path, interrupt_in_step_two)
    folder = spec.folder(tmp_path)
    assert not (folder / RECORD_FILE).exists()
    record = run_one(spec, base, tmp_path)
    # With a checkpoint after step 1 the run resumes there; without one it starts again.
    assert record["resumed_from"] == checkpoint_every
    reference = arena / "GRPO" / "base" / "seed0"
    assert _machine_free(read_metrics(folder)) == _machine_free(read_metrics(reference))
    assert (folder / EVAL_EPISODES_FILE).read_text() == (
        reference / EVAL_EPISODES_FILE).read_text()


def test_final_evaluation_and_stress_grid_end_to_end(tmp_path):
    """A run's final evaluation plays the same levels as the start's at each temperature; the
    stress grid's runs evaluate their own start; the report has a table per temperature and
    the stress grid; a run that lost its final evaluation is evaluated again, not trained."""
    args = ["arena", *ARGS, "--methods", "GRPO", "--staleness", "0", "--no-stabilisers",
            "--final-temperatures", "1.0,0.5", "--final-episodes", "3",
            "--stress-methods", "GRPO,CISPO", "--stress-lr", "1e-4,1e-2",
            "--stress-mini-batches", "1,2", "--stress-seeds", "1", "--stress-set", "rl.steps=1",
            "--out", str(tmp_path), "--no-progress"]
    assert main(args) == 0
    runs = {(r.record["method"], r.record["setting"]): r for r in load_runs(tmp_path)}
    start, grpo = runs[("checkpoint", "start")], runs[("GRPO", "base")]
    for run in (start, grpo):
        assert [(e["temperature"], e["seed"]) for e in run.final] == [
            (t, 1_000_000 + i) for t in (1.0, 0.5) for i in range(3)]
    # The start's final episodes are `arlarena train compare`'s on the same config.
    config = apply_overrides(tiny_base(), ["eval.episodes=3", "eval.temperature=0.5"])
    compare_checkpoints(config, ["tiny"], out=tmp_path / "compare")
    compared = {e["seed"]: (e["won"], e["score"]) for e in read_records(
        tmp_path / "compare" / "0.jsonl") if e.get("type") == "episode"}
    assert compared == {e["seed"]: (e["won"], e["score"]) for e in start.at(0.5).episodes}
    stress = runs[("CISPO", "stress-lr=1e-2+mini_batches=2")]
    assert stress.final == [] and sorted(stress.curve) == [0, 1]
    assert read_metrics(stress.folder)[0]["step"] == 0  # its own start
    assert stress.records[-1][mn.UPDATES] == 2.0
    report = (tmp_path / "arena.md").read_text()
    assert "## Methods at T = 1" in report and "## Methods at T = 0.5" in report
    assert "| CISPO | 0.01 | 2 | 1 |" in report.split("## Stress grid")[1]
    assert (tmp_path / "stress.png").read_bytes()[:4] == b"\x89PNG"
    findings = report.split("## The study's findings")[1].split("##")[0]
    assert "| 1 | Tolerant clipping" in findings and "| stress grid |" in findings
    assert "| 3 | GiGPO beats GRPO. | T = 1, 3 levels | **not run** |" in findings
    # Lose GRPO's final evaluation: the rerun evaluates it again (the same episodes) and
    # trains nothing.
    final = grpo.folder / FINAL_FILE
    before, record = final.read_bytes(), (grpo.folder / RECORD_FILE).read_text()
    metrics = (grpo.folder / METRICS_FILE).read_text()
    final.unlink()
    assert main(args) == 0
    assert final.read_bytes() == before
    assert (grpo.folder / METRICS_FILE).read_text() == metrics
    assert json.loads((grpo.folder / RECORD_FILE).read_text())["wall_s"] == json.loads(
        record)["wall_s"]
    # An arena that asks for other levels evaluates again.
    assert main([*args[:-3], "--final-episodes", "2", *args[-3:]]) == 0
    (again,) = [r for r in load_runs(tmp_path) if r.record["setting"] == "base"]
    assert [(e["temperature"], e["seed"]) for e in again.final] == [
        (t, 1_000_000 + i) for t in (1.0, 0.5) for i in range(2)]
