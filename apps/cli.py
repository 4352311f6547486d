"""`accord` command line: one module per command under ``apps/commands``.

Each command module defines ``add_arguments(parser)`` and ``run(args) -> int`` and a
docstring whose first line is its summary. Only the chosen command's module is
imported, so start-up stays lean (``accord agree`` must answer in well under a
second, interpreter included). Exit codes: 0 ok, 1 a gate failed, 2 usage or input
error.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import pkgutil
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import NoReturn

from samples import InputError

_COMMANDS_PACKAGE = "apps.commands"


def _command_names() -> list[str]:
    package = importlib.import_module(_COMMANDS_PACKAGE)
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def _usage() -> str:
    lines = ["usage: accord COMMAND [options]   (accord COMMAND --help for details)", "", "commands:"]
    for name in _command_names():
        module = importlib.import_module(f"{_COMMANDS_PACKAGE}.{name.replace('-', '_')}")
        summary = (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
        lines.append(f"  {name:<12} {summary}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line (argparse prints the whole usage first), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


_FILE_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EISDIR,
                          errno.ENOTDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP, errno.ENXIO, errno.EFBIG})
"""What the file system answers about the user's paths and disk (not a bug in accord)."""


def _users_file(error: OSError) -> bool:
    return error.errno in _FILE_ERRNOS or (error.filename is not None and error.errno is not None)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _stop_signals_interrupt() -> Iterator[None]:
    """SIGTERM (`kill PID`) and SIGHUP (a closed terminal) end a command as Ctrl-C does, so its cleanup runs:
    without this a killed `accord run` leaves the llama-server it started serving, unowned."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers live in the main thread only
        yield
        return
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name = argv[0]
    if name not in _command_names():
        print(f"accord: error: unknown command {name!r}; choose from {', '.join(_command_names())}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"{_COMMANDS_PACKAGE}.{name.replace('-', '_')}")
    parser = _Parser(prog=f"accord {name}", description=module.__doc__)
    module.add_arguments(parser)
    try:
        args = parser.parse_args(argv[1:])
    except SystemExit as exit_:
        return int(exit_.code or 0)
    except InputError as error:  # a registry's choices (apps.choices) are read here: a plugin that failed to load
        print(f"accord {name}: error: {error}", file=sys.stderr)
        return 2
    try:
        with _stop_signals_interrupt():
            return int(module.run(args))
    except InputError as error:
        print(f"accord {name}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as error:
        if not _users_file(error):
            raise
        # the user's files or folders, not a bug: a study folder they cannot write, a read-only or full disk
        where = f"{error.filename}: " if error.filename else ""
        print(f"accord {name}: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"accord {name}: interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    """The ``accord`` executable (and ``python -m apps``): main(), then exit with its code.

    A command ended by an interrupt has run its cleanup (its servers stopped, its files committed or left as
    they were) when main() returns 130, so the process ends there with 130: an interrupt that landed inside an
    asyncio task is stored on the task and raised again while asyncio cancels the rest, and the interpreter's
    own shutdown then reported the caught interrupt as death by SIGINT (exit -2 instead of 130).
    """
    code = main()
    if code == 130:
        import logging
        import os

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    entry()
