"""The PostgreSQL test cluster itself (tests/support/postgres.py over scripts/postgres.sh), before any store uses it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psycopg
import pytest

from tests.support.postgres import PID_FILE, SCRIPT

pytestmark = pytest.mark.postgres


def test_a_write_is_read_back_from_a_second_connection(postgres_url):
    with psycopg.connect(postgres_url) as writer:
        writer.execute("CREATE TABLE label (task_id text PRIMARY KEY, label text NOT NULL)")
        writer.execute("INSERT INTO label VALUES (%s, %s), (%s, %s)", ("t1", "yes", "t2", "no"))
        with psycopg.connect(postgres_url) as reader:
            # Not committed yet: another session must not see it.
            assert reader.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'label'").fetchone() == (0,)
        writer.commit()
    with psycopg.connect(postgres_url) as reader:
        assert reader.execute("SELECT task_id, label FROM label ORDER BY task_id").fetchall() == [("t1", "yes"), ("t2", "no")]
        assert reader.info.backend_pid != 0 and reader.info.dbname == postgres_url.split("/")[3].split("?")[0]


def test_each_test_gets_a_fresh_database_of_its_own(postgres, postgres_url):
    with psycopg.connect(postgres_url) as connection:
        name = connection.info.dbname
        assert name.startswith("test_each_test_gets_a_fresh_database") and name != "postgres"
        assert connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
    with psycopg.connect(postgres.url("postgres")) as admin:
        # The earlier tests' databases were dropped when they ended.
        assert admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'test%'").fetchall() == [(name,)]


def test_create_database_is_idempotent_and_drop_ends_open_sessions(postgres):
    url = postgres.create_database("cluster_idempotent")
    assert url == postgres.url("cluster_idempotent")
    assert url == f"postgresql://postgres@/cluster_idempotent?host={postgres.host}&port={postgres.port}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE kept (n int)")
    assert postgres.create_database("cluster_idempotent") == url
    lingering = psycopg.connect(url)
    assert lingering.execute("SELECT count(*) FROM kept").fetchone() == (0,)
    postgres.drop_database("cluster_idempotent")
    with psycopg.connect(postgres.url("postgres")) as admin:
        assert admin.execute("SELECT 1 FROM pg_database WHERE datname = 'cluster_idempotent'").fetchone() is None
    with pytest.raises(psycopg.OperationalError):
        lingering.execute("SELECT 1")
    lingering.close()
    with pytest.raises(RuntimeError, match=r"^postgres: database name 'Bad-Name': use up to 63 lower-case letters"):
        postgres.create_database("Bad-Name")


def test_the_server_listens_on_loopback_and_names_this_checkout_for_stop_services(postgres):
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user=postgres.user, dbname="postgres") as connection:
        assert connection.execute("SELECT inet_server_addr()::text, current_setting('listen_addresses')").fetchone() == (
            "127.0.0.1/32", "127.0.0.1")
    pid = int(PID_FILE.read_text())
    command_line = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert Path(command_line[0].decode()).name == "postgres"
    assert f"accord.checkout={SCRIPT.parents[1]}".encode() in command_line


def test_a_missing_postgresql_is_one_line_naming_the_install_command(tmp_path):
    env = {**os.environ, "PG_BIN": str(tmp_path), "PG_DATA_DIR": str(tmp_path / "data"), "PG_PID_FILE": str(tmp_path / "pid")}
    done = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "PostgreSQL is not installed" in done.stderr
    assert "bash scripts/install_system.sh" in done.stderr and not (tmp_path / "data").exists()
