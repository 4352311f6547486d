"""Whole-process timing and peak memory of a command, as a user would run it."""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class Run:
    """One finished command: wall seconds, the child's CPU seconds and peak RSS, its output."""

    seconds: float
    cpu_seconds: float
    """User + system time of the child: less sensitive than wall time to a busy shared machine."""
    peak_rss_bytes: int
    returncode: int
    stdout: str
    stderr: str


def run_command(argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Run:
    """Run ``argv`` to completion; ``os.wait4`` gives this child's own rusage (CPU time, peak RSS)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(seconds=seconds, cpu_seconds=usage.ru_utime + usage.ru_stime,
                   peak_rss_bytes=usage.ru_maxrss * 1024, returncode=process.returncode,
                   stdout=out.read(), stderr=err.read())


def checked(run: Run, what: str) -> Run:
    if run.returncode != 0:
        tail = (run.stderr.strip().splitlines() or [""])[-1]
        raise RuntimeError(f"{what} exited {run.returncode}: {tail}")
    return run


def best_of(argv: Sequence[str], repeats: int, what: str, **kwargs) -> tuple[float, Run]:
    """Median wall time over ``repeats`` runs (the machine is shared, so one run is noisy) and the last run."""
    runs = [checked(run_command(argv, **kwargs), what) for _ in range(max(1, repeats))]
    return statistics.median(r.seconds for r in runs), runs[-1]


def seconds_text(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 100 else f"{seconds:.0f} s"


def ratio_text(peer: float, ours: float) -> str:
    return f"{peer / ours:.1f}x faster" if ours > 0 else ""
