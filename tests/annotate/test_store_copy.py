"""`accord store copy` and `status`: a study's SQLite labels moved into PostgreSQL, checked, and the
same export from both engines; the study then runs on the database."""

from __future__ import annotations

import json

import pytest

from annotate.app_backend import AppBackend
from annotate.store import STORE_URL_ENV, Store
from apps.cli import main
from tests.annotate.helpers import ORDERS, TASKS, raw, write_study


def accord(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def labelled_sqlite_study(tmp_path, monkeypatch):
    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    root = write_study(tmp_path / "study")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    store = backend.store
    tokens = {name: store.add_annotator(name) for name in ("alice", "bob")}
    judy = store.add_annotator("judy", "adjudicator")
    store.submit(tokens["alice"], "t_a1", "yes", first_turn=1, note='a "note", with commas', submission_id="s-0000001",
                 seconds_spent=1.25, codebook_sha256="a" * 64)
    store.submit(tokens["alice"], "t_a1", "no", submission_id="s-0000002", seconds_spent=0.5)  # a revision
    store.submit(tokens["bob"], "t_a1", "yes", first_turn=2, unsure=True, submission_id="s-0000003")
    store.submit(judy, "t_a1", "no", submission_id="s-0000004")
    store.submit_practice(tokens["bob"], "p_1", "no", submission_id="p-0000001", correct=False)
    return root, store, tokens


def test_copy_moves_every_row_checks_hashes_and_the_study_continues_on_postgres(tmp_path, monkeypatch, capsys, postgres_url):
    root, sqlite_store, tokens = labelled_sqlite_study(tmp_path, monkeypatch)
    before = sqlite_store.fingerprint()
    code, out, err = accord(capsys, "labels", "export", "--study", str(root), "--out", str(tmp_path / "sqlite.jsonl"))
    assert code == 0, err

    code, out, err = accord(capsys, "store", "copy", "--study", str(root), "--to", postgres_url, "--json")
    assert code == 0, err
    copied = json.loads(out)
    assert {name: t["rows"] for name, t in copied["tables"].items()} == {
        "annotators": 3, "tasks": len(TASKS), "orders": sum(map(len, ORDERS.values())), "submissions": 4, "labels": 3, "practice_answers": 1}
    assert {name: t["sha256"] for name, t in copied["tables"].items()} == {name: t.sha256 for name, t in before.items()}

    monkeypatch.setenv(STORE_URL_ENV, postgres_url)  # the study now names the database
    pg = Store.for_study(root)
    assert pg.engine.name == "postgresql" and pg.location == copied["target"]
    assert pg.fingerprint() == before and pg.integrity_check() == "ok"
    assert pg.labels() == sqlite_store.labels() and pg.all_revisions() == sqlite_store.all_revisions()
    code, _, err = accord(capsys, "labels", "export", "--study", str(root), "--out", str(tmp_path / "pg.jsonl"))
    assert code == 0, err
    assert (tmp_path / "pg.jsonl").read_bytes() == (tmp_path / "sqlite.jsonl").read_bytes()

    # Tokens hash the same, and numbering continues past the copied history.
    result = pg.submit(tokens["bob"], "t_b2", "no", submission_id="s-0000005")
    assert result.created and raw(pg, "SELECT MAX(seq) FROM submissions") == [(5,)]
    code, out, _ = accord(capsys, "store", "status", "--study", str(root), "--json")
    status = json.loads(out)
    assert (status["engine"], status["integrity"], status["tables"]["submissions"]["rows"]) == ("postgresql", "ok", 5)

    # Into a store that already holds labels: refused, one line, nothing changed.
    code, _, err = accord(capsys, "store", "copy", "--study", str(root))
    assert code == 2 and "not empty" in err and err.count("\n") == 1
    assert pg.fingerprint()["submissions"].rows == 5


def test_copy_refuses_a_password_in_the_url_and_a_missing_target(tmp_path, monkeypatch, capsys):
    root, _, _ = labelled_sqlite_study(tmp_path, monkeypatch)
    code, out, err = accord(capsys, "store", "copy", "--study", str(root), "--to", "postgresql://me:hunter2@db/accord")
    assert code == 2 and "holds a password" in err and "hunter2" not in err + out and err.count("\n") == 1
    code, _, err = accord(capsys, "store", "copy", "--study", str(root))
    assert code == 2 and "no target store" in err
    code, _, err = accord(capsys, "store", "copy", "--study", str(root), "--to", "mysql://db/accord")
    assert code == 2 and "unknown engine 'mysql'" in err


@pytest.mark.slow  # 10 s on 2 idle cores: make test runs it, make test-fast does not
def test_an_unreachable_database_is_one_line(tmp_path, monkeypatch, capsys):
    root = write_study(tmp_path / "study")
    monkeypatch.setenv(STORE_URL_ENV, "postgresql://nobody@127.0.0.1:1/accord?connect_timeout=2")
    code, _, err = accord(capsys, "annotators", "add", "alice", "--study", str(root))
    assert code == 2 and "cannot open the PostgreSQL database" in err and err.count("\n") == 1
