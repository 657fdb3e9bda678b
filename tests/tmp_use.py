"""Run by tests/test_temporary_folder.py in a pytest of its own (the name keeps it out of the
suite): a module-scoped folder and a test's ``tmp_path``, each given a file, as the suite's
models and runs are."""

import pytest


@pytest.fixture(scope="module")
def model(module_tmp):
    folder = module_tmp("model")
    (folder / "weights").write_bytes(bytes(1000))
    return folder


@pytest.mark.parametrize("run", range(2))
def test_a_run_of_the_model(model, tmp_path, run):
    (tmp_path / "metrics.jsonl").write_text(f"{run}\n")
    assert (model / "weights").stat().st_size == 1000
