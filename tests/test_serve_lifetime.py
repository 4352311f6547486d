"""`accord app` and `accord dashboard` end their Streamlit server with them, and refuse a port already served.

Through the real CLI in a subprocess: stopping the CLI by its pid (SIGTERM, as `kill PID` does, or SIGKILL)
must close the port the server answered on; a port another process listens on is an error before anything
is printed or started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.annotate.helpers import write_study
from tests.support.servers import free_port, wait_until_answering

REPO = Path(__file__).resolve().parents[1]


def _closed(port: int, timeout: float = 20.0) -> bool:
    """Whether 127.0.0.1:PORT refuses connections within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return True
        time.sleep(0.2)
    return False


def _end(process: subprocess.Popen) -> None:
    """Whatever happened, nothing of the CLI's session (the CLI, its server) outlives the test."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate(timeout=30)


def _start(argv: list[str], port: int, tmp_path: Path) -> subprocess.Popen:
    # the CLI in its own session, so the signal below reaches the CLI's pid only, never the child directly
    process = subprocess.Popen([sys.executable, "-m", "apps", *argv, "--port", str(port)], cwd=tmp_path,
                               env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_until_answering(f"http://127.0.0.1:{port}/_stcore/health", process, timeout=120, what=" ".join(argv))
    return process


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_stopping_accord_app_by_its_pid_closes_the_server(tmp_path, how):
    study = write_study(tmp_path / "study")
    port = free_port()
    process = _start(["app", "--study", str(study)], port, tmp_path)
    try:
        os.kill(process.pid, how)
        process.wait(timeout=30)
        assert _closed(port), f"the Streamlit child kept serving 127.0.0.1:{port} after the CLI got {how.name}"
    finally:
        _end(process)


def test_stopping_accord_dashboard_by_its_pid_closes_the_server(tmp_path):
    study = write_study(tmp_path / "study")
    port = free_port()
    process = _start(["dashboard", str(study)], port, tmp_path)
    try:
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=30) == 0  # stopped on request: not a failure
        assert _closed(port)
    finally:
        _end(process)


@pytest.mark.parametrize("command", ["app", "dashboard"])
def test_a_port_already_served_is_an_error_before_anything_is_printed(tmp_path, command):
    study = write_study(tmp_path / "study")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["app", "--study", str(study)] if command == "app" else ["dashboard", str(study)]
        result = subprocess.run([sys.executable, "-m", "apps", *argv, "--port", str(port)], cwd=tmp_path,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                                timeout=120)
    assert result.returncode == 2 and result.stdout == "", (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and f"127.0.0.1:{port} is already served" in result.stderr, result.stderr
    assert not (study / "labels" / "store.sqlite").exists()  # nothing was loaded either
