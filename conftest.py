"""pytest's root configuration: the skip policy (``tests/skip_policy.py``) for every run, and one
torch / OpenMP thread per pytest-xdist worker."""

import os
import sys

pytest_plugins = ["tests.skip_policy"]

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config) -> None:
    """In an xdist worker (``make test`` runs two, one per core), torch gets one thread unless
    the environment names a count: two workers of two threads each on two cores spin and wait
    for each other (see ``arlarena_baselines.trainer.runs.auto_threads``)."""
    if not hasattr(config, "workerinput"):
        return
    for name in THREAD_VARS:
        os.environ.setdefault(name, "1")
    if "torch" in sys.modules:  # imported before this hook: the variables come too late
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
