"""What to install when an optional part is missing: one line naming the extra, not a traceback.

Holds :data:`EXTRA_OF` (the top-level module → the ``setup.cfg`` extra that installs it) and
:func:`missing_extra`, which ``arlarena``'s entry point asks about any ``ImportError`` a
command raises: an error that names a module of an extra becomes that one line; any other
``ImportError`` (a bug) keeps its traceback.
"""

from __future__ import annotations

__all__ = ["EXTRA_OF", "install_command", "missing_extra"]

EXTRA_OF: dict[str, str] = {
    "openai": "api",
    "vllm": "vllm",
    "ray": "openrlhf",
    "openrlhf": "openrlhf",
    "deepspeed": "openrlhf",
    "trl": "trl",
    "torch": "train",
    "transformers": "train",
    "gguf": "train",
    "accelerate": "train",
    "flask": "webshop",
    "bm25s": "webshop",
    "rapidfuzz": "webshop",
    "Stemmer": "webshop",
    "alfworld": "alfworld",
    "textworld": "alfworld",
    "fast_downward": "alfworld",
    "math_verify": "math",
    "reasoning_gym": "math",
    "word2number": "math",
    "pyarrow": "math",
    "matplotlib": "plot",
    "plotly": "plot",
    "kaleido": "plot",
}
"""Top-level module → the extra of ``setup.cfg`` that installs it."""

# OpenRLHF's own dependency pins build flash-attn: it is installed without them.
_AFTER = {"openrlhf": " && pip install --no-deps openrlhf==0.11.2"}


def install_command(extra: str) -> str:
    """The command that installs ``extra`` into a checkout's environment."""
    return f"pip install -e '.[{extra}]'{_AFTER.get(extra, '')}"


def missing_extra(error: BaseException) -> str | None:
    """``error: ...`` naming the missing module, its extra and the command that installs it, if
    ``error`` (or what caused it) is a ``ModuleNotFoundError`` of a module of an extra; else
    ``None``.

    >>> missing_extra(ModuleNotFoundError("No module named 'openai'", name="openai"))
    "error: openai is not installed: it comes with the 'api' extra: pip install -e '.[api]' \
(`make install` installs every extra)"
    >>> missing_extra(ModuleNotFoundError("No module named 'arlarena_x'", name="arlarena_x"))
    """
    seen: BaseException | None = error
    while seen is not None:
        name = getattr(seen, "name", None) if isinstance(seen, ModuleNotFoundError) else None
        extra = EXTRA_OF.get((name or "").split(".")[0])
        if extra is not None:
            return (f"error: {name.split('.')[0]} is not installed: it comes with the '{extra}' "
                    f"extra: {install_command(extra)} (`make install` installs every extra)")
        seen = seen.__cause__ or seen.__context__
    return None
