"""Shared test fixtures."""

import pytest


@pytest.fixture(scope="module")
def isolated_cache(tmp_path_factory):
    """Caches (e.g. the parsed SmolLM2 tokenizer) go to a temporary folder for the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARLARENA_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield
