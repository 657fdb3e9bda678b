"""OpenRLHF's own ``train_ppo_ray`` command line: its parser and checks, without its imports.

OpenRLHF 0.11.2 builds the parser of ``python -m openrlhf.cli.train_ppo_ray`` and checks the
arguments inside the module's ``if __name__ == "__main__":`` block, after importing Ray,
DeepSpeed and vLLM at the top of the module. :func:`parse_train_args` runs that block's
statements from the installed source (located with ``importlib``, read with ``ast``; nothing
is copied) with ``train`` bound to a function that keeps the arguments, so a command can be
checked on any machine where ``openrlhf`` is installed, with or without a GPU.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

__all__ = ["OpenRLHFArgumentError", "parse_train_args"]

MODULE = "openrlhf.cli.train_ppo_ray"


class OpenRLHFArgumentError(ValueError):
    """OpenRLHF's parser or its checks rejected a command line."""


def _is_main_guard(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _main_block() -> tuple[ast.Module, str]:
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"{MODULE} is not installed (pip install --no-deps openrlhf)",
                                  name=MODULE)
    tree = ast.parse(Path(spec.origin).read_text(), spec.origin)
    guard = next(
        (node for node in tree.body if isinstance(node, ast.If) and _is_main_guard(node.test)),
        None,
    )
    if guard is None:
        raise RuntimeError(f"{spec.origin} has no `if __name__ == '__main__':` block")
    return ast.Module(body=guard.body, type_ignores=[]), spec.origin


def parse_train_args(argv: Sequence[str]) -> SimpleNamespace:
    """The arguments ``train_ppo_ray`` would hand to its ``train()``: parsed, nested
    (``args.actor.eps_clip_low_high``) and checked by OpenRLHF's own code.

    Raises:
        OpenRLHFArgumentError: the parser exits (unknown flag, bad value) or a check fails.
    """
    block, origin = _main_block()
    kept: list[SimpleNamespace] = []
    namespace = {"__name__": f"{MODULE}:check", "argparse": argparse, "datetime": datetime,
                 "os": os, "train": kept.append}
    saved = sys.argv
    sys.argv = [origin, *argv]
    try:
        exec(compile(block, origin, "exec"), namespace)
    except SystemExit as err:
        raise OpenRLHFArgumentError(
            f"OpenRLHF's parser rejected the command (exit {err.code})"
        ) from err
    except AssertionError as err:
        raise OpenRLHFArgumentError(f"OpenRLHF's checks rejected the command: {err}") from err
    finally:
        sys.argv = saved
    return kept[0]
