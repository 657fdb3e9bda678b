"""Running an arena: each planned run through the trainer, resumable, with one progress bar.

Holds :class:`ArenaTrainer` (the trainer of :mod:`~arlarena_baselines.trainer.rl`, reporting
each finished step), :func:`run_one` (one run, or the starting checkpoint's evaluation),
:func:`run_arena` (holding the folder's lock, :func:`holding`, so that a second arena on it is
refused while one runs), :func:`steps_done`, :func:`total_steps` and :data:`RECORD_FILE`.

A run folder (``ROOT/<method>/<setting>/seed<k>``) is what ``arlarena train rl`` writes
(``rl_config.yaml``, ``metrics.jsonl``, ``eval_episodes.jsonl`` with every held-out episode,
which the report pairs across methods; checkpoints, ``final/``) plus ``arena.json`` (the
method, setting, seed and the start's weights hash) once the run has trained, and
``final_episodes.jsonl.gz`` (every episode of the final evaluation at each temperature) once it
has been evaluated. A run with both is skipped; one with ``arena.json`` alone is only
evaluated; one with a checkpoint resumes from it; one killed before its first checkpoint starts
again. A trained run's checkpoints are removed (``final/`` stays). A report folder's copy of a
finished run (its small files, see :func:`~arlarena_baselines.arena.report.write_report`) is
finished too, so :func:`restore_finished` lets an arena of several sittings go on from its
committed report.
"""

from __future__ import annotations

import json
import multiprocessing
import queue as queue_module
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import yaml
from tqdm.auto import tqdm

from arlarena_baselines.arena.plan import RunSpec
from arlarena_baselines.evaluation.lock import FileBusy, held
from arlarena_baselines.evaluation.results import read_records
from arlarena_baselines.evaluation.signals import terminate_as_interrupt
from arlarena_baselines.rollout import make_env_pool
from arlarena_baselines.trainer.checkpoint import (
    atomic_write_gzip,
    atomic_write_text,
    latest_checkpoint,
)
from arlarena_baselines.trainer.config import (
    TrainConfig,
    apply_overrides,
    config_from_dict,
    config_to_dict,
)
from arlarena_baselines.trainer.heldout import evaluate_policy, heldout_rollout
from arlarena_baselines.trainer.policy import Policy, env_factory
from arlarena_baselines.trainer.rl import RLTrainer
from arlarena_baselines.trainer.runs import TorchThreads, config_file, prepare_run_dir
from arlarena_baselines.trainer.tracking import MetricsLogger, episode_record
from wrappers.agents.weights import files_digest

__all__ = [
    "FINAL_FILE",
    "LOCK_FILE",
    "RECORD_FILE",
    "ArenaBusyError",
    "ArenaTrainer",
    "check_folder",
    "cpu_kernels",
    "final_evaluation",
    "holding",
    "restorable",
    "restore_finished",
    "run_arena",
    "run_finished",
    "run_one",
    "saved_config",
    "start_weights",
    "steps_done",
    "total_steps",
]

RECORD_FILE = "arena.json"
FINAL_FILE = "final_episodes.jsonl.gz"
LOCK_FILE = ".arena.lock"


class ArenaBusyError(FileBusy):
    """Another arena is running on the same folder."""


@contextmanager
def holding(root: str | Path) -> Iterator[None]:
    """Hold ``root``'s arena lock (:func:`~arlarena_baselines.evaluation.lock.held`): two
    arenas on one folder would train, resume and evaluate the same runs at once and tear
    their files."""
    busy = (f"{root} is in use by another arena (it holds {LOCK_FILE}): wait for it to finish "
            "or stop it")
    with held(Path(root) / LOCK_FILE, busy, ArenaBusyError):
        yield


# Config fields that change how a run is executed or logged, not what it computes.
_EXECUTION_FIELDS = {
    "run": ("out", "progress", "tensorboard", "wandb", "wandb_project", "threads",
            "checkpoint_every", "keep_checkpoints"),
    "rollout": ("env_workers", "gen_batch_size"),
    "eval": ("width",),
}


class ArenaTrainer(RLTrainer):
    """:class:`RLTrainer` that calls ``on_step()`` after every training step."""

    def __init__(self, config: TrainConfig, *, resume: bool, on_step: Callable[[], Any]) -> None:
        super().__init__(config, resume=resume)
        self.on_step = on_step

    def train_step(self, step: int) -> dict[str, float]:
        metrics = super().train_step(step)
        self.on_step()
        return metrics


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    return {
        section: {k: v for k, v in values.items() if k not in _EXECUTION_FIELDS.get(section, ())}
        for section, values in config.items()
    }


def start_weights(config: TrainConfig) -> str | None:
    """The content hash of the runs' starting weights (``model.name``'s weight files; ``None``
    for a hub id), which each run's ``arena.json`` keeps: a start rebuilt on a machine with
    other float kernels (or by other code) has other weights, and runs from it would not pair
    with those made before."""
    return files_digest(config.model.name)


def cpu_kernels() -> str:
    """The family of torch's CPU float kernels in use here (``AVX512``, ``AVX2``, ...; the
    machine's best unless ``ATEN_CPU_CAPABILITY`` caps it). Trained weights follow it, so each
    run's ``arena.json`` keeps it beside ``start_weights``: a refused start names the kernels
    its runs need."""
    return torch.backends.cpu.get_cpu_capability()


def check_folder(spec: RunSpec, config: TrainConfig, root: str | Path,
                 weights: str | None = None) -> None:
    """Refuse a run folder that holds a run of other settings or from other starting weights
    (it would be skipped or resumed as if it were this one). ``weights`` is the start's
    :func:`start_weights` where the caller has it (hashed here otherwise); a run that predates
    the record, or a start with none, is not checked."""
    _check_start(spec.folder(root), config, weights)
    saved = config_file(spec.folder(root), "rl")
    if not saved.is_file():
        return
    old = _comparable(yaml.safe_load(saved.read_text()) or {})
    new = _comparable(yaml.safe_load(yaml.safe_dump(config_to_dict(config))))
    # A field the saved run predates held its default then (a new field's default keeps the
    # old behaviour), so it is compared as that.
    default = _comparable(yaml.safe_load(yaml.safe_dump(config_to_dict(TrainConfig()))))

    def before(section: str, key: str) -> Any:
        values = old.get(section, {})
        return values[key] if key in values else default.get(section, {}).get(key)

    changed = [
        f"{section}.{key}: {before(section, key)!r} -> {value!r}"
        for section, values in new.items() for key, value in values.items()
        if before(section, key) != value
    ]
    if changed:
        raise ValueError(
            f"{spec.folder(root)} holds a run with other settings ({'; '.join(changed[:4])}): "
            "remove it or choose another --out"
        )


def _check_start(folder: Path, config: TrainConfig, weights: str | None) -> None:
    record = folder / RECORD_FILE
    saved = json.loads(record.read_text()) if record.is_file() else {}
    kept = saved.get("start_weights")
    if kept is None:
        return
    now = weights if weights is not None else start_weights(config)
    if now is not None and now != kept:
        made = saved.get("cpu_kernels", "unrecorded")
        raise ValueError(
            f"{folder} holds a run from other starting weights ({kept}, trained on {made} CPU "
            f"kernels; {config.model.name} is {now}; this machine runs {cpu_kernels()}): a start "
            "rebuilt on another machine's float kernels or by other code does not pair with "
            "it; start the arena afresh (another --out, no --from) or bring back that start "
            "(a BC rebuilt by the same code on a machine with the run's kernels is that start)"
        )


def total_steps(spec: RunSpec, config: TrainConfig) -> int:
    """The training steps a run makes (none for the starting checkpoint's evaluation)."""
    return config.rl.steps if spec.trains else 0


def saved_config(folder: Path | None) -> TrainConfig | None:
    """The config a run folder's trainer saved, or ``None`` when it has none."""
    path = config_file(folder, "rl") if folder is not None else None
    if path is None or not path.is_file():
        return None
    return config_from_dict(yaml.safe_load(path.read_text()))


def _final_done(spec: RunSpec, folder: Path) -> bool:
    """Whether the run's final evaluation is made with ``spec``'s temperatures and levels (an
    arena that asks for others makes it again)."""
    if not spec.final_temperatures:
        return True
    path = folder / FINAL_FILE
    if not path.is_file():
        return False
    made = Counter(e["temperature"] for e in read_records(path))
    return made == dict.fromkeys(spec.final_temperatures, spec.final_episodes)


def run_finished(spec: RunSpec, root: str | Path) -> bool:
    """Whether a run has trained and, where it has one, made its final evaluation."""
    folder = spec.folder(root)
    return (folder / RECORD_FILE).is_file() and _final_done(spec, folder)


def restorable(spec: RunSpec, source: str | Path, root: str | Path) -> bool:
    """Whether ``source`` holds the run finished and ``root`` does not."""
    return not run_finished(spec, root) and run_finished(spec, source)


def restore_finished(runs: list[RunSpec], base: TrainConfig, source: str | Path,
                     root: str | Path) -> int:
    """Copy each run of ``runs`` that is :func:`restorable` from ``source`` into ``root`` (in
    place of an unfinished copy, whose work the finished one supersedes); return how many.
    ``source`` is typically a report folder: an arena that runs in sittings on different
    machines goes on from the runs its last report committed. A run there of other settings
    or from other starting weights (:func:`check_folder`) is refused before any is copied."""
    weights = start_weights(base)
    todo = [spec for spec in runs if restorable(spec, source, root)]
    for spec in todo:
        check_folder(spec, spec.config(base, root), source, weights)
    restored = 0
    for spec in todo:
        shutil.rmtree(spec.folder(root), ignore_errors=True)
        shutil.copytree(spec.folder(source), spec.folder(root))
        restored += 1
    return restored


def steps_done(spec: RunSpec, root: str | Path, steps: int) -> int:
    """Steps a run has behind it: all when finished, else its latest checkpoint's."""
    folder = spec.folder(root)
    if (folder / RECORD_FILE).is_file():
        return steps
    checkpoint = latest_checkpoint(folder)
    return int(checkpoint.name.split("_")[-1]) if checkpoint is not None else 0


def _train(config: TrainConfig, resume: bool, on_step: Callable[[], Any]) -> None:
    """Train to ``rl.steps`` (the trainer evaluates at the end)."""
    trainer = ArenaTrainer(config, resume=resume, on_step=on_step)
    try:
        trainer.train()
    finally:
        trainer.close()


@contextmanager
def _playing(config: TrainConfig) -> Iterator[tuple[Policy, Any]]:
    """``config.model`` loaded beside an env pool of the rollout's size, under the run's torch
    threads; all closed on the way out."""
    threads = TorchThreads(config.run.threads)
    try:
        policy = Policy.load(config)
        try:
            r = config.rollout
            with make_env_pool(env_factory(config), r.n_groups * r.group_size,
                               r.env_workers) as pool:
                yield policy, pool
        finally:
            policy.close()
    finally:
        threads.restore()


def _evaluate(config: TrainConfig) -> None:
    """The held-out evaluation of ``config.model`` as it is, logged as the run's step 0 (its
    metrics and its episodes, as the trainer logs its own)."""
    logger = MetricsLogger(prepare_run_dir(config, "rl", resume=False), "rl")
    try:
        with _playing(config) as (policy, pool):
            logger.log(0, evaluate_policy(policy, config, pool, logger=logger, step=0))
    finally:
        logger.close()


def final_evaluation(spec: RunSpec, config: TrainConfig, folder: Path) -> None:
    """Play the run's model (``final/``; the start's for the ``start`` role) on
    ``spec.final_episodes`` held-out levels at each final temperature, with the evaluation's
    other sampling settings, and write every episode to ``FINAL_FILE`` at once. Every run of a
    seed meets the same levels with the same random streams, so runs pair level by level."""
    model = str(folder / "final") if spec.trains else config.model.name
    config = apply_overrides(config, [f"model.name={model}",
                                      f"eval.episodes={spec.final_episodes}"])
    lines = []
    with _playing(config) as (policy, pool):
        for temperature in spec.final_temperatures:
            at = apply_overrides(config, [f"eval.temperature={temperature}"])
            lines += [json.dumps({"temperature": temperature, **episode_record(e)})
                      for e in heldout_rollout(policy, at, pool).episodes]
    atomic_write_gzip(folder / FINAL_FILE, ("\n".join(lines) + "\n").encode())


def run_one(spec: RunSpec, base: TrainConfig, root: str | Path,
            on_step: Callable[[], Any] = lambda: None) -> dict[str, Any]:
    """Make one run (train it to its end, resuming it if it has a checkpoint; or, for the
    ``start`` role, evaluate the checkpoint) and write ``arena.json``; then make its final
    evaluation; return that record. A trained run is not trained again."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the arena's bar is the only one (checkpoint writes)
    config = spec.config(base, root)
    folder = spec.folder(root)
    check_folder(spec, config, root)
    if (folder / RECORD_FILE).is_file():
        record = json.loads((folder / RECORD_FILE).read_text())
    else:
        record = _train_or_evaluate(spec, config, root, on_step)
    if not _final_done(spec, folder):
        start = time.perf_counter()
        final_evaluation(spec, config, folder)
        record["final_s"] = round(time.perf_counter() - start, 1)
        atomic_write_text(folder / RECORD_FILE, json.dumps(record, indent=1) + "\n")
    return record


def _train_or_evaluate(spec: RunSpec, config: TrainConfig, root: str | Path,
                       on_step: Callable[[], Any]) -> dict[str, Any]:
    """Train the run (or evaluate the start) and write its ``arena.json``."""
    folder = spec.folder(root)
    steps = total_steps(spec, config)
    start_step = steps_done(spec, root, steps)
    if start_step == 0 and folder.exists():
        shutil.rmtree(folder)  # killed before its first checkpoint: its log would be redone
    start = time.perf_counter()
    if spec.trains:
        _train(config, start_step > 0, on_step)
    else:
        _evaluate(config)
    record = {
        "method": spec.method,
        "role": spec.setting.role,
        "setting": spec.setting.name,
        "overrides": list(spec.setting.overrides),
        "seed": spec.seed,
        "steps": steps,
        "resumed_from": start_step,
        "wall_s": round(time.perf_counter() - start, 1),
        "start_weights": start_weights(config),
        "cpu_kernels": cpu_kernels(),
    }
    atomic_write_text(folder / RECORD_FILE, json.dumps(record, indent=1) + "\n")
    shutil.rmtree(folder / "checkpoints", ignore_errors=True)
    return record


_STEPS: Any = None  # in a worker process: the queue each finished step is put on


def _init_worker(steps: Any) -> None:
    """Set a worker process up: its queue of finished steps, and SIGINT ignored (Ctrl-C reaches
    the whole process group; the arena's own process stops its workers, :func:`_run_parallel`)."""
    global _STEPS
    _STEPS = steps
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker(spec: RunSpec, base: TrainConfig, root: str) -> dict[str, Any]:
    """One run in a worker process."""
    return run_one(spec, base, root, lambda: _STEPS.put(1))


def run_arena(runs: list[RunSpec], base: TrainConfig, root: str | Path, *, jobs: int = 1,
              progress: bool = True, restore_from: str | Path | None = None
              ) -> list[tuple[RunSpec, str]]:
    """Run every unfinished run of ``runs`` (``jobs`` at a time, each in its own process when
    ``jobs`` > 1) under one progress bar over runs × steps, holding ``root``'s lock
    (:func:`holding`), after copying in those ``restore_from`` holds finished
    (:func:`restore_finished`); return the failed runs with their error (the others still
    run)."""
    with holding(root), terminate_as_interrupt():
        if restore_from is not None:
            restored = restore_finished(runs, base, restore_from, root)
            if progress and restored:
                print(f"arena: {restored} finished runs copied from {restore_from}",
                      file=sys.stderr)
        return _run_all(runs, base, root, jobs, progress)


def _run_all(runs: list[RunSpec], base: TrainConfig, root: str | Path, jobs: int,
             progress: bool) -> list[tuple[RunSpec, str]]:
    configs = {spec: spec.config(base, root) for spec in runs}
    weights = start_weights(base)
    for spec, config in configs.items():
        check_folder(spec, config, root, weights)
    steps = {spec: total_steps(spec, config) for spec, config in configs.items()}
    done = {spec: steps_done(spec, root, steps[spec]) for spec in runs}
    pending = [s for s in runs if not run_finished(s, root)]
    bar = tqdm(total=sum(steps.values()), initial=sum(done.values()),
               unit="step", desc=f"arena: {len(runs) - len(pending)}/{len(runs)} runs done",
               disable=not progress, dynamic_ncols=True)
    failures: list[tuple[RunSpec, str]] = []

    def finished(spec: RunSpec, error: BaseException | None) -> None:
        if error is not None:
            failures.append((spec, f"{type(error).__name__}: {error}"))
            tqdm.write(f"arena: {spec.label()} failed: {error}", file=sys.stderr)
        bar.set_description(f"arena: {len(runs) - len(pending)}/{len(runs)} runs done")

    try:
        if jobs <= 1:
            for spec in list(pending):
                bar.set_postfix_str(spec.label())
                error = None
                try:
                    run_one(spec, base, root, lambda: bar.update())
                except Exception as err:  # one broken run must not stop the arena
                    error = err
                pending.remove(spec)
                finished(spec, error)
        else:
            _run_parallel(pending, base, root, jobs, bar, finished)
    finally:
        bar.close()
    return failures


def _worker_context() -> multiprocessing.context.BaseContext:
    """Fresh worker processes (never a fork of this one, whose torch threads a fork would
    break): forked from a server that has imported the trainer once, where the platform has
    one; spawned otherwise."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _run_parallel(pending: list[RunSpec], base: TrainConfig, root: str | Path, jobs: int,
                  bar: Any, finished: Callable[[RunSpec, BaseException | None], None]) -> None:
    """Run ``pending`` in ``jobs`` worker processes, handing a worker its next run only when it
    is free, so that an interrupt (Ctrl-C, or SIGTERM) starts no further run: the workers are
    stopped at once, and their runs resume from their last checkpoint next time."""
    context = _worker_context()
    steps = context.Queue()
    waiting = list(pending)
    others = set(multiprocessing.active_children())
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker,
                             initargs=(steps,)) as pool:
        futures: dict[Future[Any], RunSpec] = {}
        bar.set_postfix_str(f"{jobs} jobs")
        try:
            while waiting or futures:
                while waiting and len(futures) < jobs:
                    spec = waiting.pop(0)
                    try:
                        futures[pool.submit(_worker, spec, base, str(root))] = spec
                    except BrokenExecutor as error:  # a worker was killed: none can start
                        pending.remove(spec)
                        finished(spec, error)
                ready, _ = wait(futures, timeout=1.0, return_when=FIRST_COMPLETED)
                while True:
                    try:
                        bar.update(steps.get_nowait())
                    except queue_module.Empty:
                        break
                for future in ready:
                    spec = futures.pop(future)
                    pending.remove(spec)
                    finished(spec, future.exception())
        except KeyboardInterrupt:
            for worker in set(multiprocessing.active_children()) - others:
                worker.terminate()
            raise
