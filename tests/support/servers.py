"""Test servers on loopback: a free port, and an `accord` Streamlit command (coding app, dashboard) served for a test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from judges.local_server import stop_process_group

REPO = Path(__file__).resolve().parents[2]


def worker_tag() -> str:
    """``-gw0``, ``-gw1``... in a pytest-xdist worker, else empty: the suffix of a session service's
    pid file and name, so the servers two workers start never share (or stop) one file."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{worker}" if worker else ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_answering(url: str, process: subprocess.Popen, *, timeout: float, what: str,
                         detail: Callable[[], str] = str) -> None:
    """Poll ``url`` until it answers HTTP 200; fail at once if ``process`` exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before {url} answered: {detail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: {url} did not answer within {timeout} s: {detail()}")
        time.sleep(0.2)


@contextmanager
def serve_accord(command: Sequence[str], *, name: str, log_path: Path, timeout: float = 60.0) -> Iterator[str]:
    """Run `python -m apps COMMAND... --port PORT` in its own process group (pid in .run/NAME.pid)
    until Streamlit's health check answers; yield the URL; stop the group afterwards."""
    port = free_port()
    pid_file = REPO / ".run" / f"{name}.pid"
    pid_file.parent.mkdir(exist_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "apps", *command, "--port", str(port)],
                                   cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    pid_file.write_text(str(process.pid))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{url}/_stcore/health", process, timeout=timeout, what=f"accord {command[0]}",
                             detail=log_path.read_text)
        yield url
    finally:
        stop_process_group(process.pid)
        process.wait()
        pid_file.unlink(missing_ok=True)
