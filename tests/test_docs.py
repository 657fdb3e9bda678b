"""The documentation's examples run, and the README's links land on a page and a heading.

Every ```` ```python ```` block of a page under ``docs/`` runs, the page's blocks in order in one
fresh interpreter (in a temporary folder, with the checkout first on the path), unless an HTML
comment ``<!-- test: skip (why) -->`` stands right before it; a ```` ```console ```` block runs
when ``<!-- test: run -->`` stands before it, each ``$ `` line as a shell command. Sections in
waiting (``docs/_incoming/``) are not pages yet. ``mkdocs build --strict`` (``make docs``, in CI)
checks the links between pages; the README is no page, so its links are checked here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"(?:<!-- test: (?P<mark>[a-z]+)[^>]*-->\n)?"
                    r"^```(?P<lang>\w+)\n(?P<code>.*?)^```", re.M | re.S)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_incoming" not in p.relative_to(DOCS).parts)


def examples(text: str) -> tuple[list[str], list[str]]:
    """(the python blocks to run, the console commands to run) of a page, in order."""
    python, console = [], []
    for m in _BLOCK.finditer(text):
        if m["lang"] == "python" and m["mark"] != "skip":
            python.append(m["code"])
        elif m["lang"] == "console" and m["mark"] == "run":
            console += [line[2:] for line in m["code"].splitlines() if line.startswith("$ ")]
    return python, console


def test_the_example_finder_honours_the_marks():
    text = ("```python\na = 1\n```\n<!-- test: skip (a sketch) -->\n```python\nb\n```\n"
            "```console\n$ arlarena --help\n```\n"
            "<!-- test: run -->\n```console\n$ true\nout\n```\n")
    assert examples(text) == (["a = 1\n"], ["true"])


RUNNABLE = [p for p in pages() if any(examples(p.read_text(encoding="utf-8")))]


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(DOCS)) for p in RUNNABLE])
def test_the_pages_examples_run(page, tmp_path):
    python, console = examples(page.read_text(encoding="utf-8"))
    if python:
        done = subprocess.run([sys.executable, "-c", "\n".join(python)], cwd=tmp_path,
                              env=_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    cli = Path(sys.executable).with_name("arlarena")
    for command in console:
        command = re.sub(r"^arlarena\b", f"{sys.executable} -m arlarena_baselines.cli"
                         if not cli.exists() else str(cli), command)
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"


def _slug(heading: str) -> str:
    """The anchor of a heading, as MkDocs' table of contents (and GitHub) writes it."""
    from markdown.extensions.toc import slugify

    return slugify(re.sub(r"[`*]", "", heading), "-")


def test_every_readme_link_lands_on_a_page_and_a_heading():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", readme)
    assert len(links) >= 20
    for path, anchor in links:
        assert (ROOT / path).is_file(), path
        if anchor and path.endswith(".md"):
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, f"{path}#{anchor}"
