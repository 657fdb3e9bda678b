"""The code that runs first inside every sandboxed execution (passed to ``python -c``).

It reads its settings from ``sys.argv[1]`` (JSON: site-packages dirs, rlimits, the answer fd),
makes the mounted site-packages importable, applies the resource limits, installs
``final_answer`` as a builtin, then reads the model's code from stdin and runs it as
``__main__``. ``final_answer(x)`` writes ``str(x)`` to the answer fd (one JSON line) and stops the
program. A traceback shows only the model's own frames. Nothing here runs on import, so the
module stays importable (and doctest-collectable) on the host.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_MAX_ANSWER_CHARS = 10_000


class _FinalAnswer(BaseException):
    """Raised by ``final_answer`` to end the program (a ``BaseException`` like ``SystemExit``)."""


def main() -> None:
    import builtins
    import json
    import linecache
    import os
    import resource
    import site
    import traceback

    config = json.loads(sys.argv[1])
    answers = os.fdopen(config["answer_fd"], "w", encoding="utf-8", buffering=1)
    answers.write("ready\n")
    for path in config["site_dirs"]:
        site.addsitedir(path)
    limits = config["limits"]
    for name, soft, hard in (
        ("RLIMIT_AS", limits["memory_bytes"], limits["memory_bytes"]),
        ("RLIMIT_CPU", limits["cpu_time_s"], limits["cpu_time_s"] + 1),
        ("RLIMIT_NPROC", limits["max_processes"], limits["max_processes"]),
        ("RLIMIT_FSIZE", limits["max_file_bytes"], limits["max_file_bytes"]),
        ("RLIMIT_NOFILE", limits["max_open_files"], limits["max_open_files"]),
        ("RLIMIT_CORE", 0, 0),
    ):
        resource.setrlimit(getattr(resource, name), (soft, hard))

    def final_answer(answer: object) -> None:
        """Record ``answer`` as the final answer and stop the program."""
        text = str(answer)[:_MAX_ANSWER_CHARS]
        try:
            answers.write("answer " + json.dumps(text) + "\n")
            answers.flush()
        except (OSError, ValueError):
            pass
        raise _FinalAnswer

    builtins.final_answer = final_answer
    code = sys.stdin.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    filename = "<code>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(code, filename, "exec"), namespace)
    except _FinalAnswer:
        pass
    except SystemExit:
        raise
    except BaseException as error:
        tb = error.__traceback__.tb_next if error.__traceback__ else None
        traceback.print_exception(type(error), error, tb)
        sys.stderr.flush()
        os._exit(1)


if __name__ == "__main__":
    main()
