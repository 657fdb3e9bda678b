"""A task panel as a command uses it: loaded, its tasks checked, the outcome said plainly.

Holds :func:`checked_panel`, which ``arlarena eval --panel`` and ``arlarena train --panel`` /
``--eval-panel`` call before they run anything.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["checked_panel"]


def checked_panel(
    name: str, count: int | None = None, env_kwargs: dict[str, Any] | None = None
) -> tuple[Any, dict[str, Any]]:
    """``(spec, record)`` of panel ``name``: its first ``count`` tasks (all by default) are
    generated again (with ``env_kwargs`` added to the panel's) and compared with its hashes;
    the outcome goes to stderr, a mismatch as a warning. ``record`` is what results and run
    folders keep (name, the hash of the tasks as generated now, their number, whether they
    match). Raises :class:`~arlarena_envs.panels.PanelError` for an unusable panel."""
    from tqdm.auto import tqdm

    import arlarena_envs  # noqa: F401  (registers the ids)
    from arlarena_envs.panels import check_panel, load_panel

    panel = load_panel(name)
    total = panel.spec.count if count is None else count
    with tqdm(total=total, desc=f"checking task panel {name}", unit="task", leave=False) as bar:
        check = check_panel(panel, count, bar.update, env_kwargs)
    print(check.message(), file=sys.stderr)
    return panel.spec, check.record()
