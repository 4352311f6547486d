"""One writer at a time: an exclusive flock on a file under ``STUDY/.locks``.

Two judge runs on one study used to append to and rewrite the same labels table at
once and lose rows. A run now holds the study's judges lock from before it reads
the table until after it has rewritten it; a second run is refused at once with the
holder's pid (waiting silently behind a run that may take hours is easy to forget,
and its unit list would be stale by then). The kernel drops a flock when its holder
dies, even by SIGKILL, so a killed run never leaves a stale lock; the file holds the
holder's pid only so that the refusal can name it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from judges.tables import file_errors
from samples import InputError, private_dir

# A refused run reads the holder's pid; the holder writes it just after locking, so a
# read in between sees the previous holder's line (or none) and is tried again.
_PID_WAIT_S = 1.0


class LockHeld(InputError):
    """Another live process holds the lock."""

    def __init__(self, message: str, *, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


def _holder(fd: int) -> int | None:
    try:
        pid = json.loads(os.pread(fd, 4096, 0) or b"null")["pid"]
    except (ValueError, TypeError, KeyError):
        return None
    return pid if isinstance(pid, int) and pid > 0 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def exclusive(path: str | Path, *, what: str) -> Iterator[None]:
    """Hold the lock at ``path`` for the block, or raise ``LockHeld`` naming the holder's pid.

    ``what`` names what the lock guards in the message ("the judge labels of STUDY").
    """
    path = Path(path)
    with file_errors(path, "create the lock"):
        private_dir(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            deadline = time.monotonic() + _PID_WAIT_S
            pid = _holder(fd)
            while (pid is None or not _alive(pid)) and time.monotonic() < deadline:
                time.sleep(0.05)
                pid = _holder(fd)
            who = f"pid {pid}" if pid is not None else "pid unknown"
            raise LockHeld(f"another run ({who}) is writing {what} (lock {path}); "
                           "wait for it to finish or stop it, then run again", pid=pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": round(time.time(), 3)}).encode() + b"\n", 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # while still held: the next refused run never reads a finished holder's pid
    finally:
        os.close(fd)  # releases the flock
