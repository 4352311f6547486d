"""A real PostgreSQL cluster for tests, started and stopped through ``scripts/postgres.sh``.

``postgres`` is the session fixture: a fresh cluster on a free port of 127.0.0.1 and a
unix socket, pid in ``.run/postgres-tests.pid`` (``postgres-tests-gw0.pid`` in an xdist worker; scripts/stop_services.sh ends a
leftover), removed at the end of the session. It yields a ``PostgresCluster``:
``url(dbname)`` is ``postgresql://postgres@/DBNAME?host=SOCKET_DIR&port=PORT`` (no
password: the cluster trusts local connections) and ``create_database(name)`` makes a
database unless it exists and returns its URL. ``postgres_url`` gives each test a fresh
database of its own, dropped afterwards. A missing PostgreSQL fails the test with the
install command, never a skip.
"""

from __future__ import annotations

import os
import re
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
SCRIPT = REPO / "scripts" / "postgres.sh"
PID_FILE = REPO / ".run" / f"postgres-tests{worker_tag()}.pid"


@dataclass(frozen=True, kw_only=True)
class PostgresCluster:
    host: str  # the unix socket folder, as libpq takes it
    port: int
    user: str
    data_dir: Path
    pid_file: Path = PID_FILE

    def _script(self, *args: str) -> str:
        env = {**os.environ, "PG_DATA_DIR": str(self.data_dir), "PG_SOCKET_DIR": self.host,
               "PG_PORT": str(self.port), "PG_PID_FILE": str(self.pid_file)}
        done = subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip() or done.stdout.strip())
        return done.stdout.strip()

    def url(self, dbname: str) -> str:
        return f"postgresql://{self.user}@/{dbname}?host={self.host}&port={self.port}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` (lower-case letters, digits, _) unless it exists; its URL."""
        return self._script("createdb", name)

    def drop_database(self, name: str) -> None:
        """Drop ``name``, ending any session still connected to it."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url("postgres"), autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def temporary_cluster(pid_file: Path = PID_FILE) -> Iterator[PostgresCluster]:
    """A fresh cluster on a free port for as long as the block runs (tests, benchmarks); RuntimeError
    with scripts/postgres.sh's one line when it cannot start."""
    # Under /tmp itself, not TMPDIR or pytest's tmp_path: as root the server runs as the
    # `postgres` user, which must be able to enter every parent folder (mkdtemp makes 0700).
    base = Path(tempfile.mkdtemp(prefix="accord-postgres-tests-", dir="/tmp"))
    base.chmod(0o755)
    cluster = PostgresCluster(host=str(base / "socket"), port=free_port(), user="postgres", data_dir=base / "data",
                              pid_file=pid_file)
    try:
        cluster._script("start")
        yield cluster
    finally:
        cluster._script("stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    try:
        with temporary_cluster() as cluster:
            yield cluster
    except RuntimeError as error:
        pytest.fail(str(error))


@pytest.fixture
def postgres_url(postgres: PostgresCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a database made for this test alone (named after it), dropped afterwards."""
    name = f"{re.sub(r'[^a-z0-9]+', '_', request.node.name.lower())[:48].strip('_')}_{secrets.token_hex(4)}"
    url = postgres.create_database(name)
    try:
        yield url
    finally:
        postgres.drop_database(name)
