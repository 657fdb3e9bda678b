"""Shared test fixtures."""

import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory) -> Iterator[Callable[[str], Path]]:
    """``tmp_path_factory.mktemp`` for module-scoped fixtures, whose folders are removed when the
    module's tests are done: they hold models and runs of 100 MB or more, and kept to the end of
    the session they add up to gigabytes (``tmp_path`` itself is removed after a passing test:
    pyproject's ``tmp_path_retention_policy``)."""
    made: list[Path] = []

    def mktemp(name: str) -> Path:
        made.append(tmp_path_factory.mktemp(name))
        return made[-1]

    yield mktemp
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def isolated_cache(module_tmp):
    """Caches (e.g. the parsed SmolLM2 tokenizer) go to a temporary folder for the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARLARENA_CACHE", str(module_tmp("cache")))
        yield


@pytest.fixture
def sigint_reaches_children():
    """Processes the test spawns take SIGINT as Ctrl-C even when pytest was started with SIGINT
    ignored (``nohup ... &``): an ignored signal stays ignored across ``exec``, a handled one
    does not."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
