"""A killed `accord run` takes the llama-server it started with it.

Through the real CLI in a subprocess on the demo study (its generators call the local models, so the
run starts its own llama-server when none is running): `kill PID` (SIGTERM) or a closed terminal
(SIGHUP) must end the run as Ctrl-C does, stopping that server, instead of leaving it serving unowned
(what a `kill` of `make demo` did).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judges.local_server import stop_process_group
from tests.support.demo import reduced_demo

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 600  # llama-server loading both models on a loaded 2-core machine


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie has stopped


@pytest.mark.llama
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_killing_accord_run_stops_the_llama_server_it_started(tmp_path, how):
    study = reduced_demo(tmp_path)
    run_dir = tmp_path / ".run"
    state = run_dir / "llama-server.json"
    process = subprocess.Popen([sys.executable, "-m", "apps", "run", str(study), "--output", str(tmp_path / "out")],
                               cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), "ACCORD_RUN_DIR": str(run_dir)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    server_pid = None
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not state.exists():  # written once the server answers with both models loaded
            assert process.poll() is None, f"accord run ended before its server was ready: {process.communicate()}"
            assert time.monotonic() < deadline, "accord run's llama-server never became ready"
            time.sleep(0.5)
        server_pid = json.loads(state.read_text())["pid"]
        assert _alive(server_pid)
        os.kill(process.pid, how)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 130 and "accord run: interrupted" in stderr, stderr[-2000:]
        assert "Traceback" not in stderr
        assert not _alive(server_pid), "the llama-server accord run started outlived it"
        assert not state.exists()  # `accord judges stop` and the next run see no server
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
        if server_pid is not None and _alive(server_pid):
            stop_process_group(server_pid)
