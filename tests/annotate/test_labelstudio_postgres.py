"""Label Studio 1.23.2 on PostgreSQL (``LS_DB=postgres``): accord's push and pull, unchanged, and the rows in PostgreSQL.

The server has its own port, data dir and database on the session's PostgreSQL
cluster; its first start runs every Label Studio migration there (no SQLite template).
"""

from __future__ import annotations

import json
import os
import subprocess

import psycopg
import pytest

from annotate.labelstudio import load_labelstudio_credentials
from tests.annotate.test_labelstudio import (
    TASKS,
    _annotator,
    _cli,
    _ls_task,
    _push,
    _result,
    _rows,
    _state,
    _write_study,
)
from tests.support.labelstudio import REPO, SCRIPT, running_server
from tests.support.servers import free_port

pytestmark = [pytest.mark.labelstudio, pytest.mark.postgres]


def test_push_label_and_pull_through_a_label_studio_whose_tables_are_in_postgresql(postgres_url, tmp_path, capsys, monkeypatch):
    study = _write_study(tmp_path / "study", TASKS[2:4], {"ann-a": ["t_esc", "t_cor"], "ann-b": ["t_cor", "t_esc"]})
    with running_server(pid_file=REPO / ".run" / "labelstudio-postgres-test.pid", database_url=postgres_url) as server:
        assert not (server.data_dir / "label_studio.sqlite3").exists()
        report = _push(server, study)
        assert (report.created, report.already_present) == (4, 0)
        _annotator(server, study, "ann-a").annotations.create(
            id=_ls_task(study, "ann-a", "t_esc"), result=_result("yes", note="stored in postgres"))
        _annotator(server, study, "ann-b").annotations.create(id=_ls_task(study, "ann-b", "t_cor"), result=_result("incorrect"))
        monkeypatch.setenv("ACCORD_LS_TOKEN", server.token)
        code, out, err = _cli(capsys, "ls", "pull", "--study", str(study), "--json")
        assert code == 0, err
        assert (json.loads(out)["n_labels"], json.loads(out)["added"]) == (2, 2)
        rows = _rows(study)
        assert {key: row.label for key, row in rows.items()} == {("t_esc", "ann-a"): "yes", ("t_cor", "ann-b"): "incorrect"}
        assert rows[("t_esc", "ann-a")].note == "stored in postgres"

        # What Label Studio holds is in PostgreSQL: the projects push made and the annotations pull read.
        state = _state(study)
        projects = sorted(p["project_id"] for a in state["annotators"].values() for p in a["projects"].values())
        with psycopg.connect(postgres_url) as database:
            assert sorted(row[0] for row in database.execute("SELECT id FROM project")) == projects
            stored = database.execute(
                "SELECT t.data->>'task_id', u.email, c.result FROM task_completion c"
                " JOIN task t ON t.id = c.task_id JOIN htx_user u ON u.id = c.completed_by_id ORDER BY 1").fetchall()
        email = {name: login.email for name, login in load_labelstudio_credentials(study).annotators.items()}
        assert [(task, who, result[0]["value"]["choices"]) for task, who, result in stored] == [
            ("t_cor", email["ann-b"], ["incorrect"]), ("t_esc", email["ann-a"], ["yes"])]


def test_a_database_that_does_not_answer_is_one_line_and_no_server_starts(postgres, tmp_path):
    env = {**os.environ, "LS_DB": "postgres", "LS_PG_URL": postgres.url("no_such_database"), "LS_PORT": str(free_port()),
           "LS_DATA_DIR": str(tmp_path / "data"), "LS_PID_FILE": str(tmp_path / "labelstudio.pid")}
    done = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "Label Studio's database no_such_database at " in done.stderr and 'database "no_such_database" does not exist' in done.stderr
    assert not (tmp_path / "labelstudio.pid").exists() and not (tmp_path / "data" / "server.log").exists()
