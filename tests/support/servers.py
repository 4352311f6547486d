"""Test servers on loopback: a free port, and an `accord` Streamlit command (coding app, dashboard) served for a test."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"accord {command[0]} exited with {process.returncode}: {log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"accord {command[0]} not healthy after {timeout} s: {log_path.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        pid_file.unlink(missing_ok=True)
