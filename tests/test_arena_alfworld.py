"""The arena report's ALFWorld section, from the summary.json of the real comparison script
(scripts/alfworld_compare.py on a real untrained tiny model, both splits, two seeds a method)
and a real tiny arena (GRPO, one step on ``ARLArena/Bandit-v0``).

The untrained model wins no game, so the real summary's differences are all 0; the tests that
need a given verdict or distinct numbers set each run's success in that summary and let the
script's own :func:`across_seeds` recompute the methods' across-seed entries."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

from arlarena_baselines.arena.alfworld import SUMMARY_FILE, alfworld_section, read_summary
from arlarena_baselines.cli import main
from arlarena_baselines.trainer.config import ModelConfig
from arlarena_baselines.trainer.models import save_model, smollm2_tokenizer, tiny_model

pytestmark = pytest.mark.usefixtures("isolated_cache")

_SPEC = importlib.util.spec_from_file_location(
    "alfworld_compare", Path(__file__).resolve().parents[1] / "scripts" / "alfworld_compare.py")
alfworld_compare = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(alfworld_compare)

LABELS = [f"{m}/seed{s}" for m in ("GRPO", "GiGPO", "SAMPO") for s in (0, 1)]


@pytest.fixture(scope="module")
def summary(module_tmp) -> Path:
    """The comparison's summary.json: the start and six runs (three methods × two seeds; all
    the same untrained model) on the first two games of both held-out splits."""
    tokenizer = smollm2_tokenizer()
    model = str(save_model(tiny_model(ModelConfig(name="tiny"), tokenizer), tokenizer,
                           module_tmp("tiny")))
    out = module_tmp("compare")
    assert alfworld_compare.main([
        "--bc", model, "--rl", *[model] * len(LABELS), "--labels", ",".join(LABELS),
        "--out", str(out), "--splits", "id,ood", "--episodes", "2", "--sweep", "0,1.0",
        "--temperatures", "1.0", "--set", "model.task_vocab=false",
        "--set", "rollout.max_turns=2"]) == 0
    return out / "summary.json"


@pytest.fixture(scope="module")
def arena(module_tmp) -> Path:
    """A finished arena: GRPO, one step, and the start."""
    root = module_tmp("arena")
    assert main(["arena", "--model", "tiny", "--env", "ARLArena/Bandit-v0", "--steps", "1",
                 *(f"--set={o}" for o in (
                     "rollout.n_groups=2", "rollout.group_size=2", "rollout.max_new_tokens=8",
                     "eval.episodes=4", "eval.every=0", "run.threads=1",
                     "rl.mini_batch_size=2")),
                 "--methods", "GRPO", "--staleness", "0", "--no-stabilisers", "--out", str(root),
                 "--no-progress"]) == 0
    return root


def _with_success(summary: Path, success: dict[str, list[float]], out: Path,
                  labels: list[str] | None = None) -> Path:
    """``summary`` with each method's runs (seed k: ``success[method][k]``) on every split and
    temperature, their paired difference against the start's success and the script's
    across-seed entries recomputed; ``labels``: the runs kept (default all)."""
    data = json.loads(summary.read_text())
    for split in data["splits"].values():
        for paired in split["paired"].values():
            start = paired["start"]["success"]
            rl = {}
            for label, row in paired["rl"].items():
                if labels is not None and label not in labels:
                    continue
                method, seed = label.split("/seed")
                row = copy.deepcopy(row)
                if method in success:
                    row["success"] = success[method][int(seed)]
                    row["diff"] = row["success"] - start
                rl[label] = row
            paired["rl"], paired["methods"] = rl, alfworld_compare.across_seeds(rl)
    out.write_text(json.dumps(data))
    return out


def _findings(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """``{(finding, held-out): (verdict, evidence)}`` of the section's findings table."""
    lines = alfworld_section(read_summary(path))
    rows = lines[lines.index("### The study's findings on ALFWorld"):]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in rows
             if line.startswith("| 3 ") or line.startswith("| 5 ")]
    return {(c[0], c[2]): (c[3].strip("*"), c[4]) for c in cells}


def test_the_report_adds_the_section_and_its_folder_keeps_it(summary, arena, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["arena", "--report", str(arena), "--out", str(out), "--alfworld",
                 str(summary)]) == 0
    report = (out / "arena.md").read_text()
    # Right after the Sokoban findings.
    head, section = report.split("## ALFWorld: GRPO, GiGPO and SAMPO against the BC start")
    assert head.split("\n## ")[-1].startswith("The study's findings")
    assert "\n## Stability" in section
    section = section.split("\n## ")[0]
    data = json.loads(summary.read_text())
    assert "Env `ALFWorld-Compact-v0`, template alfworld_compact (not the study's template)" \
        in section and f"start `{data['bc']}`" in section
    ood, idd = section.index("### OOD"), section.index("### ID")
    assert ood < idd < section.index("### The study's findings on ALFWorld")
    for split, at in (("ood", ood), ("id", idd)):
        panel = data["splits"][split]["panel"]
        assert section[at:].startswith(f"### {split.upper()} (") and panel["tasks"] == 2
        assert f"`{panel['name']}`\n\n2 episodes (panel hash {panel['hash']})" in section
    # Every run the same untrained model: every difference is 0, every finding within noise.
    assert section.count("| 1 | GiGPO | 2 | 0.000 ± 0.000 | +0.000 | 0.000 | 0.000 | 0.000 |") == 2
    verdicts = _findings(summary)
    assert set(verdicts) == {(f, f"{s}, T = {t}") for f in "35" for s in ("OOD", "ID")
                             for t in ("1", "0")}
    assert {v for v, _ in verdicts.values()} == {"within noise"}
    assert (out / SUMMARY_FILE).read_bytes() == summary.read_bytes()
    # The report's folder rebuilds it without the flag, from its copy; so does a report of
    # the runs rebuilt into that folder (make arena's --report runs/arena --out docs/arena).
    assert main(["arena", "--report", str(out)]) == 0
    assert (out / "arena.md").read_text() == report
    assert not (arena / SUMMARY_FILE).exists()
    assert main(["arena", "--report", str(arena), "--out", str(out)]) == 0
    assert (out / "arena.md").read_text() == report
    capsys.readouterr()


def test_without_the_flag_or_a_kept_copy_the_report_is_sokobans_alone(arena, tmp_path):
    assert main(["arena", "--report", str(arena), "--out", str(tmp_path)]) == 0
    report = (tmp_path / "arena.md").read_text()
    assert "## The study's findings" in report and "ALFWorld" not in report
    assert not (tmp_path / SUMMARY_FILE).exists()


def test_the_table_shows_each_methods_numbers_from_the_summary(summary, tmp_path):
    path = _with_success(summary, {"GRPO": [0.25, 0.35], "GiGPO": [0.4, 0.6],
                                   "SAMPO": [0.5, 0.52]}, tmp_path / "summary.json")
    lines = alfworld_section(read_summary(path))
    ood = lines[next(i for i, x in enumerate(lines) if x.startswith("### OOD")):]
    data = json.loads(path.read_text())["splits"]["ood"]["paired"]["1"]
    start = data["start"]["success"]
    gigpo = data["methods"]["GiGPO"]
    # mean 0.5 ± 0.1 across seeds; Δ = 0.5 − start; SD 0.141, SE 0.1; paired SE 0 (same runs).
    assert gigpo["seeds"] == 2 and gigpo["seed_sd"] == pytest.approx(0.2 / 2**0.5)
    row = next(x for x in ood if x.startswith("| 1 | GiGPO |"))
    assert row == (f"| 1 | GiGPO | 2 | 0.500 ± 0.100 | {0.5 - start:+.3f} | 0.100 | 0.141 | "
                   f"0.000 | 0: {0.4 - start:+.3f}, 1: {0.6 - start:+.3f} |")
    assert next(x for x in ood if x.startswith("| 1 | start (BC) |")).startswith(
        f"| 1 | start (BC) | – | {start:.3f} ± {data['start']['se']:.3f} |")


@pytest.mark.parametrize(("success", "verdicts"), [
    # GiGPO above GRPO on both seeds by the same margin: beyond any SE.
    ({"GRPO": [0.2, 0.3], "GiGPO": [0.4, 0.5], "SAMPO": [0.6, 0.7]}, ("holds", "holds")),
    # ... below it, and SAMPO below GiGPO (the best other method).
    ({"GRPO": [0.4, 0.5], "GiGPO": [0.2, 0.3], "SAMPO": [0.1, 0.2]}, ("fails", "fails")),
    # The seeds disagree: +0.3 on one, −0.1 on the other (mean 0.1 ± 0.2).
    ({"GRPO": [0.2, 0.4], "GiGPO": [0.5, 0.3], "SAMPO": [0.3, 0.5]},
     ("within noise", "within noise")),
])
def test_the_verdicts_follow_the_numbers_with_the_across_seed_error(summary, tmp_path, success,
                                                                     verdicts):
    found = _findings(_with_success(summary, success, tmp_path / "summary.json"))
    for split in ("OOD", "ID"):
        assert found["3", f"{split}, T = 1"][0] == verdicts[0]
        assert found["5", f"{split}, T = 1"][0] == verdicts[1]
    evidence = found["3", "OOD, T = 1"][1]
    assert evidence.startswith("held-out success GiGPO − GRPO: ") and "(n = 2; seeds 0, 1" \
        in evidence


def _written(text: str, path: Path) -> Path:
    path.write_text(text)
    return path


def _single_run(summary: Path, path: Path) -> Path:
    """``make learn-alfworld``'s summary: one run, labelled ``RL``, no methods."""
    kept = _with_success(summary, {}, path, ["GRPO/seed0"]).read_text()
    return _written(kept.replace('"GRPO/seed0"', '"RL"').replace('"GRPO"', '"RL"'), path)


@pytest.mark.parametrize(("make", "message"), [
    (lambda s, p: p, "no such file (the ALFWorld comparison writes it"),
    (lambda s, p: _written("{not json", p), "is not the ALFWorld comparison's"),
    (lambda s, p: _written('{"env": "ARLArena/Sokoban-v0", "splits": {}}', p),
     "is not the ALFWorld comparison's summary.json (scripts/alfworld_compare.py): "
     "ValueError: env 'ARLArena/Sokoban-v0'"),
    (lambda s, p: _written(s.read_text().replace('"paired"', '"sweeps"'), p),
     "KeyError: 'paired'"),
    (_single_run, "no runs labelled METHOD/seedK on ood at T = 1"),
    (lambda s, p: _with_success(s, {}, p, [x for x in LABELS if x != "GiGPO/seed1"]),
     "GiGPO has 1 seed on ood at T = 1; the across-seed SE needs at least 2"),
])
def test_a_bad_summary_is_a_one_line_error(summary, arena, tmp_path, capsys, make, message):
    path = make(summary, tmp_path / "summary.json")
    capsys.readouterr()
    assert main(["arena", "--report", str(arena), "--out", str(tmp_path / "out"),
                 "--alfworld", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_an_arena_refuses_a_bad_summary_before_it_trains(tmp_path, capsys):
    out = tmp_path / "arena"
    assert main(["arena", "--model", "tiny", "--env", "ARLArena/Bandit-v0", "--steps", "1",
                 "--methods", "GRPO", "--out", str(out), "--no-progress",
                 "--alfworld", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err and not out.exists()
