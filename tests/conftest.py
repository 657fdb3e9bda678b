"""Shared test fixtures."""

import signal

import pytest


@pytest.fixture(scope="module")
def isolated_cache(tmp_path_factory):
    """Caches (e.g. the parsed SmolLM2 tokenizer) go to a temporary folder for the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARLARENA_CACHE", str(tmp_path_factory.mktemp("cache")))
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
