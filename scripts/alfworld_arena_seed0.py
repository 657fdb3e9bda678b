"""GiGPO seed 0 of `make arena-alfworld` is the recipe run of `make learn-alfworld`: its evidence.

The ALFWorld arena trains GRPO, GiGPO and SAMPO on three seeds each from the recipe's BC start,
with the recipe's config (configs/recipe/alfworld-rl.yaml: GiGPO, seed 0). Its GiGPO seed 0 is
therefore the recipe run itself, up to execution settings that keep the same tokens
(``rollout.gen_batch_size``, ``eval.width``): trained again, its first step and its start's
validation episodes came out the same (docs/learn-alfworld.md, "Ninth sitting"). Rather than
spend its ~1.5 h again, this script writes the recipe run's committed evidence
(docs/learn-alfworld/recipe-run) where the arena's own evidence goes (``--out``, the
``ALF_ARENA_DOCS`` of the Makefile), so that ``arlarena arena --from OUT/runs`` counts the run
as finished and ``scripts/alfworld_compare.py --from OUT`` has its held-out episodes:

- ``OUT/runs/GiGPO/base/seed0/``: ``arena.json`` (with ``copied_from``), the arena's config of
  the run (``rl_config.yaml``), the recipe run's metrics and validation episodes, gzipped;
- ``OUT/<split>/T<t>/BC.episodes.jsonl.gz``: the start's held-out episodes, as they are;
- ``OUT/<split>/T<t>/GiGPO-seed0.episodes.jsonl.gz``: the recipe run's held-out episodes, the
  model renamed to the arena run's ``final`` (in the settings record, whose digest is
  recomputed, and in each episode record); nothing else changes.

Example (what was run)::

    python scripts/alfworld_arena_seed0.py --out docs/learn-alfworld/arena
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

import yaml

from arlarena_baselines.arena.plan import ArenaPlan, plan_runs
from arlarena_baselines.arena.runner import RECORD_FILE
from arlarena_baselines.evaluation.settings import settings_record
from arlarena_baselines.trainer.checkpoint import atomic_write_gzip
from arlarena_baselines.trainer.config import apply_overrides, config_to_dict, load_config
from arlarena_baselines.trainer.runs import config_file
from arlarena_baselines.trainer.tracking import EVAL_EPISODES_FILE, METRICS_FILE

RECIPE = "docs/learn-alfworld/recipe-run"
ROOT = "runs/alfworld-arena"  # the Makefile's ALF_ARENA (with ALF_RUNS=runs)
BC = "runs/learn-alfworld-bc/final"
ARENA = ["run.tensorboard=false", "run.keep_checkpoints=1", f"model.name={BC}", "rl.steps=36"]


def renamed(lines: list[str], name: str) -> list[str]:
    """The records of an episode file with the model named ``name``."""
    out = []
    for record in map(json.loads, lines):
        if record.get("type") == "settings":
            settings = {k: v for k, v in record.items() if k not in ("type", "digest")}
            settings["agent"] = {**settings["agent"], "name": name}
            record = settings_record(settings)
        elif record.get("type") == "episode":
            record["agent"] = name
        out.append(json.dumps(record) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default=RECIPE, help="the recipe run's evidence")
    parser.add_argument("--out", required=True, help="the arena's evidence folder")
    parser.add_argument("--config", default="configs/recipe/alfworld-rl.yaml")
    args = parser.parse_args(argv)
    recipe, out = Path(args.recipe), Path(args.out)
    base = apply_overrides(load_config(args.config), ARENA)
    plan = ArenaPlan(methods=("GiGPO",), seeds=1, stabilisers=False, staleness=0)
    spec = next(s for s in plan_runs(plan, base, ROOT) if s.trains)
    config = spec.config(base, ROOT)
    if (config.rl.method, config.run.seed, config.rl.steps) != ("GiGPO", 0, 36):
        raise SystemExit(f"not the recipe run's method, seed and steps: {spec.label()}")
    folder = out / "runs" / spec.folder(ROOT).relative_to(ROOT)
    folder.mkdir(parents=True, exist_ok=True)
    rl_s = [float(line.split("\t")[1]) for line in
            (recipe / "walltime.tsv").read_text().splitlines() if line.startswith("rl\t")]
    record = {"method": spec.method, "role": spec.setting.role, "setting": spec.setting.name,
              "overrides": list(spec.setting.overrides), "seed": spec.seed,
              "steps": config.rl.steps, "resumed_from": 0,
              "wall_s": sum(rl_s),
              "copied_from": f"{recipe} (the recipe run of make learn-alfworld; wall_s: its "
                             "timed RL stages, a stretch to step 10 untimed)"}
    (folder / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n")
    config_file(folder, "rl").write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))
    atomic_write_gzip(folder / f"{METRICS_FILE}.gz", (recipe / "metrics.jsonl").read_bytes())
    shutil.copyfile(recipe / "rl_validation_episodes.jsonl.gz",
                    folder / f"{EVAL_EPISODES_FILE}.gz")
    final = str(spec.folder(ROOT) / "final")
    for path in sorted(recipe.glob("*/T*/*.episodes.jsonl.gz")):
        target = out / path.relative_to(recipe)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.name.startswith("BC."):
            shutil.copyfile(path, target)
        else:
            lines = gzip.open(path, "rt", encoding="utf-8").readlines()
            atomic_write_gzip(target.with_name("GiGPO-seed0.episodes.jsonl.gz"),
                              "".join(renamed(lines, final)).encode())
    print(f"GiGPO seed 0 from {recipe} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
