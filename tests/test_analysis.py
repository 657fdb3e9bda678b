"""Action-flow analysis and the comparison report on hand-written and real results files."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from arlarena_baselines.analysis import (
    analyze,
    build_sankey,
    classify_action,
    episode_flows,
    find_loops,
    transition_counts,
    write_pngs,
)
from arlarena_baselines.cli import main
from arlarena_baselines.evaluation import EvalConfig, evaluate, read_records
from wrappers.agents import make_agent

WEBSHOP, ALFWORLD = "ARLArena/WebShop-v0", "ARLArena/ALFWorld-v0"


def _episode(agent, env, eid, actions, outcome, anchors=None, task_type=None):
    """The records ``arlarena eval`` writes for one episode (the fields the analysis reads)."""
    anchors = anchors or [""] * len(actions)
    turns = [{"type": "turn", "episode_id": eid, "agent": agent, "env": env, "step": i,
              "parsed_action": a, "format_ok": a is not None, "anchor": s,
              "won": outcome == "success" and i == len(actions) - 1}
             for i, (a, s) in enumerate(zip(actions, anchors, strict=True))]
    end = {"type": "episode", "episode_id": eid, "agent": agent, "env": env, "seed": 0,
           "sample": int(eid[-1]), "task_type": task_type, "won": outcome == "success",
           "score": {"success": 1.0, "failure": 0.25, "error": 0.0}[outcome],
           "turns": len(actions),
           "valid_turns": sum(a is not None for a in actions), "return": 0.0,
           "error": "server error" if outcome == "error" else None}
    return [*turns[::-1], end]  # turns out of order: the analysis must sort by step


SHOP_WON = ["search[red running shoes]", "click[B0ABCDEFGH]", "click[size 9]", "click[Buy Now]"]
SHOP_LOST = ["search[shoes]", "click[Next >]", "click[Next >]", "click[b0aaaaaaaa]",
             "click[< Prev]", "click[b0bbbbbbbb]", "click[< Prev]", "click[b0aaaaaaaa]",
             "click[Description]", None, "click[Buy Now]"]
SHOP_LOST_STATES = ["search", "results 1", "results 2", "results 3", "item a", "results 3",
                    "item b", "results 3", "item a", "description a", "description a"]
ALF_WON = ["go to countertop 1", "take apple 1 from countertop 1", "go to microwave 1",
           "heat apple 1 with microwave 1", "go to diningtable 1", "move apple 1 to diningtable 1"]
ALF_LOST = ["look", "go to cabinet 1", "open cabinet 1", "close cabinet 1", "go to cabinet 1",
            "examine cabinet 1", "inventory", "use desklamp 1", "frobnicate the lamp"]


def _write(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def shop_file(tmp_path):
    return _write(tmp_path / "webshop.jsonl", [
        *_episode("gpt", WEBSHOP, "seed=0/sample=0", SHOP_WON, "success"),
        *_episode("gpt", WEBSHOP, "seed=1/sample=0", SHOP_LOST, "failure", SHOP_LOST_STATES),
        *_episode("gpt", WEBSHOP, "seed=2/sample=0", ["search[hat]"], "error"),
        # An unfinished episode (killed run): its turns are ignored.
        *_episode("gpt", WEBSHOP, "seed=3/sample=0", ["search[x]"], "failure")[:-1],
    ])


@pytest.fixture
def alf_file(tmp_path):
    return _write(tmp_path / "alfworld.jsonl", [
        *_episode("gpt", ALFWORLD, "seed=0/sample=0", ALF_WON, "success", task_type="heat"),
        *_episode("gpt", ALFWORLD, "seed=1/sample=0", ALF_LOST, "failure", task_type="look"),
    ])


def test_actions_are_classified_from_their_text():
    shop = [classify_action(a, WEBSHOP) for a in SHOP_LOST]
    assert shop == ["search", "next", "next", "click_product", "prev", "click_product", "prev",
                    "click_product", "description", "invalid", "buy"]
    more = ["click[Back to Search]", "click[features]", "click[Reviews]", "click[x-large]",
            "click[0123456789]", "buy now", "search[]"]
    assert [classify_action(a, "webshop") for a in more] == [
        "back", "features", "reviews", "click_option", "click_product", "other", "other"]
    alf = [classify_action(a, ALFWORLD) for a in ALF_WON + ALF_LOST]
    assert alf == ["go", "take", "go", "heat", "go", "put",
                   "look", "go", "open", "close", "go", "examine", "inventory", "toggle", "other"]
    assert [classify_action(a, "ARLArena/Sokoban-8x8-2b-v0") for a in
            ["Up", " left ", "jump", "", None]] == ["up", "left", "other", "invalid", "invalid"]


def test_transitions_and_loops_of_a_known_file(shop_file):
    from arlarena_baselines.evaluation import read_records

    flows = episode_flows(read_records(shop_file))
    assert [f.outcome for f in flows] == ["success", "failure", "error"]
    counts = transition_counts(flows)
    assert counts == {
        ("search", "click_product"): 1, ("click_product", "click_option"): 1,
        ("click_option", "buy"): 1, ("buy", "success"): 1,
        ("search", "next"): 1, ("next", "next"): 1, ("next", "click_product"): 1,
        ("click_product", "prev"): 2, ("prev", "click_product"): 2,
        ("click_product", "description"): 1, ("description", "invalid"): 1,
        ("invalid", "buy"): 1, ("buy", "failure"): 1, ("search", "error"): 1,
    }
    assert transition_counts(flows, outcome="success", terminal=False) == {
        ("search", "click_product"): 1, ("click_product", "click_option"): 1,
        ("click_option", "buy"): 1}
    won, lost, _ = (find_loops(f) for f in flows)
    assert not won.any
    assert (lost.repeated_next, lost.oscillations, lost.repeated_actions, lost.longest_repeat,
            lost.revisits) == (1, 2, 1, 2, 1)
    summary = analyze(flows)
    assert summary["outcomes"] == {"success": 1, "failure": 1, "error": 1}
    assert summary["actions"]["failure"]["click_product"] == 3
    assert summary["loops"]["oscillations"]["failure"] == {"episodes_with": 1.0, "mean": 2.0}


def test_sankey_paths_follow_the_steps_and_end_in_the_outcome(shop_file):
    from arlarena_baselines.evaluation import read_records

    flows = episode_flows(read_records(shop_file))
    sankey = build_sankey(flows, max_steps=3)
    nodes = [(n.column, n.label) for n in sankey.nodes]
    assert sorted(nodes) == [(0, "search"), (1, "click_product"), (1, "next"),
                             (2, "click_option"), (2, "next"), (3, "more steps"),
                             (4, "error"), (4, "failure"), (4, "success")]
    links = {(nodes[k.source], nodes[k.target], k.group): k.value for k in sankey.links}
    assert links == {
        ((0, "search"), (1, "click_product"), "success"): 1,
        ((1, "click_product"), (2, "click_option"), "success"): 1,
        ((2, "click_option"), (3, "more steps"), "success"): 1,
        ((3, "more steps"), (4, "success"), "success"): 1,
        ((0, "search"), (1, "next"), "failure"): 1,
        ((1, "next"), (2, "next"), "failure"): 1,
        ((2, "next"), (3, "more steps"), "failure"): 1,
        ((3, "more steps"), (4, "failure"), "failure"): 1,
        ((0, "search"), (4, "error"), "error"): 1,
    }
    failures = build_sankey([f for f in flows if f.outcome == "failure"], max_steps=3,
                            color_by="action")
    assert [k.group for k in failures.links] == ["search", "next", "next", "more steps"]
    assert len({k.color for k in failures.links}) == 3


def test_matplotlib_draws_the_png_without_a_browser(shop_file, tmp_path):
    from arlarena_baselines.evaluation import read_records

    flows = episode_flows(read_records(shop_file))
    path = tmp_path / "sankey.png"
    sankey = build_sankey(flows, max_steps=4, title="t")
    assert write_pngs([(sankey, path)], "matplotlib") == "matplotlib"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(path) as image:
        assert image.size == (800, 560) and sankey.columns == 6
        colors = image.convert("RGB").getcolors(1 << 20)
    assert any(c == (0x2C, 0xA0, 0x2C) for _, c in colors)  # the success node is drawn


def test_without_a_browser_auto_falls_back_to_matplotlib(shop_file, tmp_path, monkeypatch):
    from arlarena_baselines.evaluation import read_records

    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chrome"))  # kaleido finds no Chrome
    sankey = build_sankey(episode_flows(read_records(shop_file)))
    with pytest.warns(UserWarning, match="drawing it with matplotlib"):
        assert write_pngs([(sankey, tmp_path / "s.png")]) == "matplotlib"
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


def test_a_renderer_that_writes_no_file_falls_back_to_matplotlib(shop_file, tmp_path,
                                                                 monkeypatch):
    """kaleido's Chrome, under load, has ended a batch without writing every PNG and without an
    error; the files are checked, and ``auto`` draws them with matplotlib instead."""
    import plotly.io as pio

    from arlarena_baselines.evaluation import read_records

    monkeypatch.setattr(pio, "write_images", lambda *args, **kwargs: None)  # writes nothing
    sankey = build_sankey(episode_flows(read_records(shop_file)))
    paths = [tmp_path / "a.png", tmp_path / "b.png"]
    with pytest.warns(UserWarning, match="no PNG written for"):
        assert write_pngs([(sankey, p) for p in paths]) == "matplotlib"
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)
    with pytest.raises(RuntimeError, match="no PNG written"):
        write_pngs([(sankey, tmp_path / "c.png")], "kaleido")


def test_analyze_command_writes_graphs_and_counts(shop_file, alf_file, tmp_path, capsys):
    out = tmp_path / "analysis"
    assert main(["analyze", str(shop_file), f"react={alf_file}", "--out", str(out),
                 "--max-steps", "6"]) == 0
    printed = capsys.readouterr().out
    assert "## gpt on ARLArena/WebShop-v0" in printed
    assert "## react on ARLArena/ALFWorld-v0" in printed
    summary = json.loads((out / "WebShop-v0__gpt_analysis.json").read_text())
    assert summary["outcomes"] == {"success": 1, "failure": 1, "error": 1}
    alf = json.loads((out / "ALFWorld-v0__react_analysis.json").read_text())
    assert alf["actions"]["failure"] == {"look": 1, "go": 2, "open": 1, "close": 1,
                                         "examine": 1, "inventory": 1, "toggle": 1, "other": 1}
    with open(out / "WebShop-v0__gpt_loops.csv") as handle:
        rows = {r["episode_id"]: r for r in csv.DictReader(handle)}
    assert rows["seed=1/sample=0"]["oscillations"] == "2"
    assert rows["seed=1/sample=0"]["repeated_next"] == "1"
    for name in ("WebShop-v0__gpt_sankey", "WebShop-v0__gpt_failures",
                 "ALFWorld-v0__react_sankey", "ALFWorld-v0__react_failures"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert 'src="plotly.min.js"' in (out / f"{name}.html").read_text()
    assert (out / "plotly.min.js").stat().st_size > 1_000_000  # the page works offline
    assert main(["analyze", str(tmp_path / "missing.jsonl")]) == 2


def test_compare_report_and_csv_from_several_files(tmp_path, capsys):
    a = _write(tmp_path / "a.jsonl", [
        *_episode("x", ALFWORLD, "seed=0/sample=0", ALF_WON, "success", task_type="heat"),
        *_episode("x", ALFWORLD, "seed=1/sample=0", ALF_LOST, "failure", task_type="look"),
        *_episode("x", ALFWORLD, "seed=2/sample=0", ["look"], "error", task_type="look"),
    ])
    b = _write(tmp_path / "b.jsonl", [
        *_episode("y", ALFWORLD, "seed=0/sample=0", ALF_WON, "success", task_type="heat"),
        *_episode("y", ALFWORLD, "seed=1/sample=0", ALF_WON, "success", task_type="look"),
    ])
    evaluate(EvalConfig(episodes=2), make_agent("expert"), tmp_path / "s.jsonl", progress=False)
    assert main(["report", f"GiGPO={a}", f"GPT-4o (debate)={b}", str(tmp_path / "s.jsonl"),
                 "--compare", "--csv", str(tmp_path / "table.csv")]) == 0
    out = capsys.readouterr().out
    assert "### ARLArena/ALFWorld-v0" in out and "### ARLArena/Sokoban-v0" in out
    assert "| agent | episodes | errors | all | heat | look |" in out
    assert "| GiGPO | 3 | 1 | 33.3% / 0.417 | 100.0% / 1.000 | 0.0% / 0.125 |" in out
    assert "| GPT-4o (debate) | 2 | 0 | 100.0% / 1.000 | 100.0% / 1.000 | 100.0% / 1.000 |" in out
    assert "| expert | 2 | 0 | 100.0% / 1.000 |" in out
    with open(tmp_path / "table.csv") as handle:
        rows = list(csv.DictReader(handle))
    gigpo = {r["group"]: r for r in rows if r["agent"] == "GiGPO"}
    assert set(gigpo) == {"all", "task_type=heat", "task_type=look"}
    assert gigpo["task_type=look"]["errors"] == "1" and gigpo["all"]["episodes"] == "3"
    assert float(gigpo["all"]["success"]) == pytest.approx(1 / 3)


def test_hostile_results_files_never_crash_the_commands(shop_file, tmp_path, capsys):
    hostile = tmp_path / "hostile.jsonl"
    with open(hostile, "wb") as handle:
        handle.write(b"[1, 2]\n\"text\"\n\xff\xfe\x00binary\n" + b"{" * 100_000 + b"\n")
        odd = {"agent": ["x"], "env": None, "episode_id": {"a": 1}, "step": "x",
               "parsed_action": 5}
        handle.write(json.dumps({"type": "turn", **odd}).encode() + b"\n")
        handle.write(json.dumps({"type": "episode", **odd, "won": "yes"}).encode() + b"\n")
        for run in ({"type": "spend", **odd, "failures": [1], "attempts": "many", "cost": {}},
                    {"type": "settings", "digest": [None], "agent": odd}):
            handle.write(json.dumps(run).encode() + b"\n")
        handle.write(shop_file.read_bytes())
        handle.write(b'{"type": "turn", "episode_id": "torn')
    assert main(["analyze", str(hostile), "--out", str(tmp_path / "a"), "--no-png",
                 "--no-html"]) == 0
    assert "## gpt on ARLArena/WebShop-v0" in capsys.readouterr().out
    assert main(["report", str(hostile)]) == 0
    assert "| gpt | ARLArena/WebShop-v0 | all | 3 |" in capsys.readouterr().out


def test_a_compressed_results_file_reads_as_the_plain_one_even_torn(tmp_path, capsys):
    """``make learn`` commits its episodes gzipped: report reads them as the plain file, and a
    compressed file cut short keeps what was whole."""
    plain = tmp_path / "s.jsonl"
    evaluate(EvalConfig(episodes=3), make_agent("expert"), plain, progress=False)
    packed = tmp_path / "s.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert list(read_records(packed)) == list(read_records(plain))
    for path in (plain, packed):
        assert main(["report", str(path)]) == 0
        assert "| expert | ARLArena/Sokoban-v0 | all | 3 | 100.0% |" in capsys.readouterr().out
    torn = tmp_path / "torn.jsonl.gz"
    torn.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    kept = list(read_records(torn))
    assert 0 < len(kept) < len(list(read_records(plain)))
    assert kept == list(read_records(plain))[: len(kept)]
