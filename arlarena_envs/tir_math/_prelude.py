"""The code that runs first inside every sandboxed execution (passed to ``python -S -c``).

Its arguments are the answer fd, the uid to become (0: stay), the rlimits (address space, CPU
seconds, processes, file size, open files), the longest answer and the directories to put on
``sys.path``. It becomes that uid (dropping the only capabilities it was started with,
``CAP_SETUID``/``CAP_SETGID``), applies the limits, installs ``final_answer`` as a builtin, says
``ready`` on the answer fd, then reads the model's code from stdin (the host sends it only
after ``ready``) and runs it as ``__main__``.
``final_answer(x)`` writes ``str(x)`` (cut to the longest answer, escaped to one line) to the
answer fd and stops the program. A traceback shows only the model's own frames. Only
``os`` and ``resource`` are imported before the code runs, to keep the start cheap. Nothing
here runs on import, so the module stays importable (and doctest-collectable) on the host.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


class _FinalAnswer(BaseException):
    """Raised by ``final_answer`` to end the program (a ``BaseException`` like ``SystemExit``)."""


def main() -> None:
    import builtins
    import os
    import resource

    answer_fd, uid, memory, cpu, processes, file_bytes, open_files, max_chars = (
        map(int, sys.argv[1:9]))
    sys.path.extend(sys.argv[9:])
    del sys.argv[1:]
    if uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    for name, soft, hard in (
        ("RLIMIT_AS", memory, memory),
        ("RLIMIT_CPU", cpu, cpu + 1),
        ("RLIMIT_NPROC", processes, processes),
        ("RLIMIT_FSIZE", file_bytes, file_bytes),
        ("RLIMIT_NOFILE", open_files, open_files),
        ("RLIMIT_CORE", 0, 0),
    ):
        resource.setrlimit(getattr(resource, name), (soft, hard))
    answers = os.fdopen(answer_fd, "wb", buffering=0)

    def final_answer(answer: object) -> None:
        """Record ``answer`` as the final answer and stop the program."""
        text = str(answer)[:max_chars]
        try:
            answers.write(b"answer " + text.encode("unicode_escape") + b"\n")
        except (OSError, ValueError):
            pass
        raise _FinalAnswer

    builtins.final_answer = final_answer
    answers.write(b"ready\n")
    code = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(code, "<code>", "exec"), namespace)
    except _FinalAnswer:
        pass
    except SystemExit:
        raise
    except BaseException as error:
        _print_traceback(error, code)
        os._exit(1)


def _print_traceback(error: BaseException, code: str) -> None:
    """Print ``error``'s traceback without the prelude's frame, the code's lines shown."""
    import linecache
    import traceback

    linecache.cache["<code>"] = (len(code), None, code.splitlines(True), "<code>")
    tb = error.__traceback__.tb_next if error.__traceback__ else None
    traceback.print_exception(type(error), error, tb)
    sys.stderr.flush()


if __name__ == "__main__":
    main()
