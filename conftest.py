"""pytest's root configuration: the skip policy (``tests/skip_policy.py``) for every run, one
torch / OpenMP thread per pytest-xdist worker, the long test modules first, torch inductor's
cache kept apart per ``ATEN_CPU_CAPABILITY``, and a run refused at once when the temporary
folder lacks the room it needs."""

import getpass
import os
import shutil
import sys
import tempfile

import pytest

pytest_plugins = ["tests.skip_policy"]

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")

LONG_MODULES = (  # seconds of one worker's time in `make test` (2026-12-05), longest first
    "tests/test_train_methods.py",  # 112
    "tests/test_tir_sandbox.py",  # 102
    "tests/test_rollout_vllm.py",  # 55
    "tests/test_arena_alfworld.py",  # ~45 (its first runs, at nice 10 beside two jobs)
    "tests/test_arena.py",  # 41
    "tests/test_panels.py",  # 40
    "tests/test_demo.py",  # 39
    "tests/test_alfworld_native.py",  # 34
    "tests/test_agents_hf.py",  # 31
    "tests/test_vllm_serve.py",  # 30
    "tests/test_openrlhf_vllm.py",  # 28
    "tests/test_train_resume.py",  # 27
    "tests/test_trl.py",  # 24
    "tests/test_agents_vllm.py",  # 22
    "tests/test_agents_openai.py",  # 15
    "tests/test_episode_fixtures.py",  # 14
    "tests/test_openrlhf_plugin.py",  # 13
    "tests/test_tir_env.py",  # 12
    "tests/test_packaging.py",  # 12
)
"""Modules of 12 s or more, run first: pytest-xdist's ``loadscope`` hands whole modules out in
the order collected (its own reordering by test count, which put the one-test modules of 30 s
last, is turned off), so the long ones overlap and the short ones even out the end. A module
missing here only runs later; nothing depends on the order."""


def pytest_addoption(parser) -> None:
    parser.addini("tmp_free_mb", "free space (MB) the run needs in the temporary folder; short "
                  "of it, the run stops before it starts", default="0")


def pytest_sessionstart(session) -> None:
    """Stop at once, with what to do, when the temporary folder has less room than pyproject's
    ``tmp_free_mb``: a full disk mid-run fails hundreds of tests with errors that name no cause.
    Checked once, in the main process."""
    if hasattr(session.config, "workerinput"):
        return
    need = int(session.config.getini("tmp_free_mb"))
    folder = tempfile.gettempdir()
    free = shutil.disk_usage(folder).free >> 20
    if free < need:
        pytest.exit(f"{folder} has {free} MB free; the tests need {need} MB there "
                    "(bench/suite_disk.py measures them): free some space, or point TMPDIR at a "
                    "disk that has it", returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_configure(config) -> None:
    """Turn off xdist's reordering of modules by test count (:data:`LONG_MODULES`). In an xdist
    worker (``make test`` runs two, one per core), torch gets one thread unless
    the environment names a count: two workers of two threads each on two cores spin and wait
    for each other (see ``arlarena_baselines.trainer.runs.auto_threads``)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    capability = os.environ.get("ATEN_CPU_CAPABILITY")
    if capability:
        # Inductor's graph cache (vLLM's CPU engine compiles with it) does not key on the
        # capability: a kernel cached vectorised by an earlier run is rebuilt without the vector
        # headers, and g++ fails ("'at::vec' has not been declared"). One cache per capability.
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(
            tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}_{capability}"))
    if not hasattr(config, "workerinput"):
        return
    for name in THREAD_VARS:
        os.environ.setdefault(name, "1")
    if "torch" in sys.modules:  # imported before this hook: the variables come too late
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def pytest_collection_modifyitems(items) -> None:
    """The modules of :data:`LONG_MODULES` first, in its order; the rest after, as collected."""
    rank = {path: i for i, path in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
