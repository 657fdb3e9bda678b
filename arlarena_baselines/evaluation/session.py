"""One evaluation command from start to exit status: agents played one after the other.

:func:`evaluate_agents` is what ``arlarena eval`` does once its options are parsed: it opens the
run's response cache and request budget (shared by every API agent), plays each agent into its
results file (:func:`~.runner.evaluate`), says what each spent, and maps what happened to an
exit status (:data:`EXIT`). SIGTERM is handled as Ctrl-C is: the requests in flight arrive and
are kept (cache and spend record), the results so far stay, and the run exits with 128 + the
signal's number.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from arlarena_baselines.evaluation.config import EvalConfig
from arlarena_baselines.evaluation.lock import FileBusy
from arlarena_baselines.evaluation.merge import load_results, per_setting
from arlarena_baselines.evaluation.report import format_table, summarize
from arlarena_baselines.evaluation.results import finished_ids, read_records, still_to_play
from arlarena_baselines.evaluation.runner import evaluate
from arlarena_baselines.evaluation.signals import terminate_as_interrupt
from arlarena_baselines.evaluation.spending import describe_spend, total_spend

__all__ = ["EXIT", "evaluate_agents", "results_path"]

EXIT = {"ok": 0, "episode errors": 1, "agent stopped": 1, "usage": 2, "budget spent": 3}
"""Exit statuses of an evaluation; an interrupt exits with 128 + its signal's number."""


def results_path(out: str | Path, env: str, agent: str) -> Path:
    """The results file of ``agent`` on ``env`` in folder ``out``."""
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{env.split('/')[-1]}__{agent}")
    return Path(out) / f"{label}.jsonl"


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _spend_records(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_records(path) if r.get("type") == "spend"] if path.exists() else []


def evaluate_agents(
    config: EvalConfig,
    agents: Sequence[tuple[str, Callable[[dict[str, Any]], Any]]],
    out: str | Path,
    *,
    cache: Any = None,
    budget: Any = None,
    resume: bool = False,
    overwrite: bool = False,
    force: bool = False,
    progress: bool = True,
    explain: Callable[[BaseException], str | None] = lambda error: None,
) -> int:
    """Play ``config``'s episodes with each agent of ``agents`` (``(name, make)``: ``make``
    builds it from the run's shared ``{"cache", "budget"}``) into ``out``, print the results
    table, and return the exit status (:data:`EXIT`).

    ``cache`` (a :class:`~wrappers.agents.cache.ResponseCache`, closed here) and ``budget``
    are shared by every agent; ``explain`` may word an agent's construction error (e.g. a
    missing extra) better than ``error: agent NAME: ...``. A spent budget stops the run (3)
    and says how many episodes are unfinished; an agent that cannot go on stops it (1);
    episodes that ended with an error make it 1; a results file that exists without
    ``resume`` or ``overwrite``, other settings on resume, or a results file another
    evaluation is writing, stop it at once (2).
    """
    from wrappers.agents import AgentError, BudgetExhausted

    paths: list[Path] = []
    status = EXIT["ok"]
    shared = {"cache": cache, "budget": budget}
    try:
        with terminate_as_interrupt():
            for name, make in agents:
                try:
                    agent = make(shared)
                except (ValueError, ModuleNotFoundError, OSError) as error:
                    _say(explain(error) or f"error: agent {name!r}: {error}")
                    return EXIT["usage"]
                path = results_path(out, config.env, agent.name)
                if path.exists() and not (resume or overwrite):
                    _say(f"error: {path} exists; pass --resume to continue it or --overwrite")
                    agent.close()
                    return EXIT["usage"]
                spent_before = len(_spend_records(path))
                outcome = "ok"
                try:
                    evaluate(config, agent, path, resume=resume, force=force,
                             overwrite=overwrite, progress=progress)
                except (ValueError, FileBusy) as error:  # SettingsMismatch, a second writer
                    _say(f"error: {error}")
                    return EXIT["usage"]
                except BudgetExhausted as error:
                    outcome = str(error)
                except AgentError as error:
                    _say(f"error: {agent.name} stopped the run: {error}\nfinished episodes are "
                         f"kept in {path}; rerun with --resume")
                    status, outcome = EXIT["agent stopped"], "stopped"
                except KeyboardInterrupt as interrupt:
                    _report_spend(agent.name, path, spent_before)
                    _interrupted(interrupt, config, path)
                    raise
                finally:
                    agent.close()
                paths.append(path)
                _report_spend(agent.name, path, spent_before)
                records = list(read_records(path)) if path.exists() else []
                if outcome not in ("ok", "stopped"):
                    unfinished = len(still_to_play(config.starts(), finished_ids(records)))
                    where = f", every answered request in {cache.path}" if cache else ""
                    _say(f"stopped: {outcome}; {unfinished} of {len(config.starts())} episodes "
                         f"are unfinished (the finished ones are kept in {path}{where}); rerun "
                         "with --resume (and a new --max-requests) to finish them without "
                         "paying twice")
                    status = EXIT["budget spent"]
                    break
                failed = sum(1 for r in records if r.get("type") == "episode" and r.get("error"))
                if failed:
                    _say(f"{failed} episode(s) of {agent.name} ended with an error (see their "
                         f"'error' field in {path}); rerun with --resume to retry them")
                    status = EXIT["episode errors"]
                if outcome == "stopped":
                    break
    except KeyboardInterrupt as interrupt:
        return 128 + getattr(interrupt, "signum", signal.SIGINT)
    finally:
        if cache is not None:
            cache.close()
    records, warnings = load_results([str(p) for p in paths if p.exists()])
    for warning in warnings:
        _say(f"warning: {warning}")
    records = per_setting(records)
    print(format_table(summarize(records)))
    print("results: " + ", ".join(str(p) for p in paths))
    return status


def _report_spend(name: str, path: Path, before: int) -> None:
    """Say what agent ``name`` spent into ``path`` since its first ``before`` spend records."""
    for total in total_spend(_spend_records(path)[before:]):
        _say(f"{name}: {describe_spend(total)}")


def _interrupted(interrupt: KeyboardInterrupt, config: EvalConfig, path: Path) -> None:
    records = list(read_records(path)) if path.exists() else []
    unfinished = len(still_to_play(config.starts(), finished_ids(records)))
    what = getattr(interrupt, "signum", None)
    name = signal.Signals(what).name if what else "SIGINT"
    _say(f"interrupted ({name}): the replies in flight were kept; {unfinished} of "
         f"{len(config.starts())} episodes are unfinished in {path}; rerun with --resume to "
         "finish them without paying twice")
