"""WebShop benchmark: catalogue and index build, search latency, server start-up, memory, agents.

Run ``python bench/webshop.py`` (defaults: 10k and 100k products, 200 eval instructions per
agent). Each catalogue size is measured in a fresh subprocess (so peak memory is its own) with
a fresh cache folder (so the builds are cold; the server start-up then finds the catalogue and
index caches warm).
The search-latency peer is a plain linear scan counting shared query tokens over every
product, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_CLI = "import sys; from arlarena_baselines.cli import main; sys.exit(main())"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_size(products: int, queries: int) -> dict[str, float]:
    """Build times, search latencies and peak memory for one catalogue size (this process)."""
    from arlarena_envs.webshop.cache import cache_dir, cached_pickle
    from arlarena_envs.webshop.catalogue import generate_catalogue
    from arlarena_envs.webshop.goals import SyntheticGoals
    from arlarena_envs.webshop.search import SearchIndex, tokenize
    from arlarena_envs.webshop.shop import ShopConfig, get_shop
    from wrappers.agents.webshop_heuristic import instruction_query

    start = time.perf_counter()
    catalogue = generate_catalogue(products)
    build_catalogue = time.perf_counter() - start
    goals = SyntheticGoals(catalogue)
    texts = [p.search_text() for p in catalogue]
    start = time.perf_counter()
    SearchIndex.build(texts)
    build_index = time.perf_counter() - start

    start = time.perf_counter()
    shop = get_shop(ShopConfig(products))  # builds and saves the cached index
    first_shop = time.perf_counter() - start
    folder = next(cache_dir().glob("index-*"))
    start = time.perf_counter()
    index = SearchIndex.load(folder)
    load_index = time.perf_counter() - start
    start = time.perf_counter()
    cached_pickle(next(cache_dir().glob("catalogue-*.pickle")), list)
    load_catalogue = time.perf_counter() - start

    eval_ids = shop.splits["eval"][:queries]
    texts_q = [instruction_query(goals[int(i)].instruction) for i in eval_ids]
    latencies = []
    for query in texts_q:
        begin = time.perf_counter()
        index.search(query)
        latencies.append(time.perf_counter() - begin)
    token_sets = [set(tokenize(t)) for t in texts]
    scan = []
    for query in texts_q[:20]:
        begin = time.perf_counter()
        wanted = set(tokenize(query))
        sorted(range(len(token_sets)), key=lambda i: -len(wanted & token_sets[i]))[:50]
        scan.append(time.perf_counter() - begin)
    return {
        "products": products,
        "goals": len(goals),
        "catalogue_s": build_catalogue,
        "index_build_s": build_index,
        "shop_first_build_s": first_shop,
        "index_load_s": load_index,
        "catalogue_load_s": load_catalogue,
        "search_p50_ms": 1000 * _percentile(latencies, 0.5),
        "search_p95_ms": 1000 * _percentile(latencies, 0.95),
        "scan_p50_ms": 1000 * _percentile(scan, 0.5),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_server(products: int, env: dict[str, str]) -> dict[str, float]:
    """Seconds from launching ``arlarena webshop serve`` to its announcement, and request times."""
    import urllib.request

    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", _CLI, "webshop", "serve", "--products", str(products),
         "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        startup = time.perf_counter() - start
        url = re.search(r"(http://\S+?)/?$", line.strip())
        if url is None:
            raise RuntimeError(f"server did not start: {line}")
        base = url.group(1)
        timings = []
        for k in range(50):
            begin = time.perf_counter()
            with urllib.request.urlopen(f"{base}/bench{k}/results?keywords=long+lasting+shampoo"):
                pass
            timings.append(time.perf_counter() - begin)
        return {"startup_s": startup, "results_page_p50_ms": 1000 * statistics.median(timings)}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def measure_agents(products: int, episodes: int) -> list[dict[str, float | str]]:
    """Mean task score and success rate of the scripted agents on eval instructions."""
    import gymnasium as gym

    import arlarena_envs  # noqa: F401
    from wrappers.agents.base import AgentRequest
    from wrappers.agents.webshop_heuristic import WebShopHeuristicAgent, WebShopRandomAgent
    from wrappers.prompt import PromptWrapper

    rows: list[dict[str, float | str]] = []
    env = PromptWrapper(gym.make("ARLArena/WebShop-v0", products=products))
    for agent in (WebShopHeuristicAgent(), WebShopRandomAgent(seed=0)):
        scores, wins, steps = [], 0, 0
        start = time.perf_counter()
        for index in range(episodes):
            prompt, info = env.reset(seed=index, options={"split": "eval", "index": index})
            done = False
            while not done:
                response = agent.act([AgentRequest(prompt, info, env)])[0]
                prompt, _, terminated, truncated, info = env.step(response)
                steps += 1
                done = terminated or truncated
            scores.append(info["score"])
            wins += info["won"]
        elapsed = time.perf_counter() - start
        rows.append({
            "agent": agent.name, "products": products, "episodes": episodes,
            "mean_score": sum(scores) / episodes, "success": wins / episodes,
            "steps_per_s": steps / elapsed,
        })
    return rows


def _table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    header = " | ".join(title for title, _, _ in columns)
    lines = [header, " | ".join("---" for _ in columns)]
    for row in rows:
        lines.append(" | ".join(format(row[key], spec) for _, key, spec in columns))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure_size(args.worker, args.queries)))
        return 0

    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="webshop-bench-") as cache:
            env = {**os.environ, "ARLARENA_CACHE": cache}
            out = subprocess.run(
                [sys.executable, __file__, "--worker", str(size), "--queries", str(args.queries)],
                env=env, capture_output=True, text=True, check=True,
            ).stdout
            row = json.loads(out.strip().splitlines()[-1])
            row.update(measure_server(size, env))
            row["bm25_vs_scan"] = row["scan_p50_ms"] / row["search_p50_ms"]
            rows.append(row)
    print("## Catalogue, index, search and server (each size in a fresh process and cache)\n")
    print(_table(rows, [
        ("products", "products", "d"), ("goals", "goals", "d"),
        ("catalogue s", "catalogue_s", ".2f"), ("catalogue load s", "catalogue_load_s", ".2f"),
        ("index build s", "index_build_s", ".2f"), ("index load s", "index_load_s", ".2f"),
        ("search p50 ms", "search_p50_ms", ".2f"),
        ("search p95 ms", "search_p95_ms", ".2f"), ("linear scan p50 ms", "scan_p50_ms", ".1f"),
        ("BM25 speed-up", "bm25_vs_scan", ".0f"), ("server start s", "startup_s", ".2f"),
        ("results page p50 ms", "results_page_p50_ms", ".1f"),
        ("peak RSS MB", "peak_rss_mb", ".0f"),
    ]))
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"\n{last['products']:,} vs {first['products']:,} products: catalogue "
              f"x{last['catalogue_s'] / first['catalogue_s']:.1f}, index build "
              f"x{last['index_build_s'] / first['index_build_s']:.1f}, search p50 "
              f"x{last['search_p50_ms'] / first['search_p50_ms']:.1f}, memory "
              f"x{last['peak_rss_mb'] / first['peak_rss_mb']:.1f}")
    if args.episodes:
        agent_rows = []
        for size in (1_000, 10_000):
            agent_rows += measure_agents(size, args.episodes)
        print("\n## Scripted agents on eval instructions\n")
        print(_table(agent_rows, [
            ("agent", "agent", "s"), ("products", "products", "d"),
            ("episodes", "episodes", "d"), ("mean score", "mean_score", ".3f"),
            ("success", "success", ".3f"), ("env steps/s", "steps_per_s", ".0f"),
        ]))
        by_size: dict[int, dict[str, float]] = {}
        for row in agent_rows:
            by_size.setdefault(int(row["products"]), {})[str(row["agent"])] = float(
                row["mean_score"]
            )
        for size, scores in by_size.items():
            ratio = scores["webshop-heuristic"] / max(scores["webshop-random"], 1e-9)
            print(f"\n{size:,} products: heuristic / random mean score = {ratio:.1f}x", end="")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
