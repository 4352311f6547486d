"""A real Label Studio 1.23.2 server for tests and benchmarks, started headless from its own venv.

``running_server()`` starts one through ``scripts/labelstudio.sh start`` (fresh data
dir, admin account and legacy API token preset by environment at first start, a
free port on 127.0.0.1, pid in ``.run/labelstudio.pid``), waits for ``/health`` and
stops it at the end. Given the ``server`` of an earlier run (its data dir kept
with ``keep_data=True``) it starts that server again on the same port and data.
``hardened=False`` starts Label Studio's stock settings instead of accord's
(``scripts/labelstudio_hardening``). ``database_url`` (a libpq URL) puts Label
Studio's tables in that PostgreSQL database instead of SQLite in the data dir.
``labelstudio_server`` is the module fixture over it: each test module gets a fresh
server copied from the migrated template.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.servers import free_port, worker_tag

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "labelstudio.sh"
PID_FILE = REPO / ".run" / f"labelstudio{worker_tag()}.pid"  # one per xdist worker
# First start runs every migration: about 45 s on an idle 2-core machine, minutes when it is busy.
START_TIMEOUT_S = 600


@dataclass(frozen=True, kw_only=True)
class LabelStudioServer:
    url: str
    token: str
    admin_email: str
    admin_password: str
    data_dir: Path
    database_url: str | None = None


@contextmanager
def running_server(
    *, pid_file: Path = PID_FILE, server: LabelStudioServer | None = None, keep_data: bool = False, hardened: bool = True,
    database_url: str | None = None,
) -> Iterator[LabelStudioServer]:
    if server is None:
        port = free_port()
        server = LabelStudioServer(
            url=f"http://127.0.0.1:{port}", token=secrets.token_hex(16), admin_email="admin@accord.test",
            admin_password=secrets.token_urlsafe(12), data_dir=Path(tempfile.mkdtemp(prefix="accord-labelstudio-")),
            database_url=database_url,
        )
    port, data_dir = int(server.url.rsplit(":", 1)[1]), server.data_dir
    env = {
        **os.environ, "LS_PORT": str(port), "LS_DATA_DIR": str(data_dir), "LS_PID_FILE": str(pid_file),
        "LS_START_TIMEOUT": str(START_TIMEOUT_S), "LS_HARDENED": "1" if hardened else "0", "LABEL_STUDIO_USERNAME": server.admin_email,
        "LABEL_STUDIO_PASSWORD": server.admin_password, "LABEL_STUDIO_USER_TOKEN": server.token,
        "LS_DB": "postgres" if server.database_url else "sqlite", "LS_PG_URL": server.database_url or "",
        # Fast password hashing on the hardened settings (accord_labelstudio_settings.py says why; tests only).
        "ACCORD_LS_TEST_PASSWORD_HASHING": "1",
    }
    started = subprocess.run(["bash", str(SCRIPT), "start"], check=False, env=env, capture_output=True, text=True)
    try:
        if started.returncode != 0:
            raise RuntimeError(f"Label Studio did not start: {started.stderr.strip() or started.stdout.strip()}")
        yield server
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], check=False, env=env, capture_output=True, text=True)
        if not keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def labelstudio_server() -> Iterator[LabelStudioServer]:
    """A fresh server per test module, started from the migrated template (seconds).

    Not one per session: every push seals the study's organisations against every other
    account on the server (one /admin/ form post per user and organisation), so on a
    server shared by the whole session each push costs more than the one before.
    """
    with running_server() as server:
        yield server
