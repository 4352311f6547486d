"""Start and stop the coding app (`accord app`) on a free loopback port, for browser tests and the benchmark."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def coding_app(study: Path, *, name: str = "coding-app", timeout: float = 60.0) -> Iterator[str]:
    """Run `accord app --study STUDY` in its own process group (pid in .run/NAME.pid); yield its URL."""
    port = free_port()
    pid_file = REPO / ".run" / f"{name}.pid"
    pid_file.parent.mkdir(exist_ok=True)
    log = open(study / f"{name}.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "apps", "app", "--study", str(study), "--port", str(port)],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    pid_file.write_text(str(process.pid))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"accord app exited with {process.returncode}: {(study / f'{name}.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"accord app not healthy after {timeout} s: {(study / f'{name}.log').read_text()}")
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
        log.close()
        pid_file.unlink(missing_ok=True)
