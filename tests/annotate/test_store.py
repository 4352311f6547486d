"""The coding-app store through its plain Python API, checked against raw SQL, on both engines."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from annotate import get_backend
from annotate.app_backend import AdjudicatorSession, AnnotatorSession, AppBackend, sign_in, submission_id_for
from annotate.base import AnnotationBackend
from annotate.engines import open_engine
from annotate.export import export_labels
from annotate.store import MIGRATIONS, Store
from annotate.tasks import load_orders
from samples.errors import InputError
from samples.records import HumanLabel
from tests.annotate.helpers import ORDERS, TASKS, raw, write_study

BOTH_ENGINES = True


def test_open_creates_store_with_named_migrations(store_location, engine):
    store = Store.open(store_location)
    if engine == "sqlite":
        assert raw(store, "PRAGMA journal_mode") == [("wal",)]
    assert store.engine.name == engine
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    Store.open(store_location)  # reopening applies nothing twice
    assert raw(store, "SELECT COUNT(*) FROM migrations") == [(len(MIGRATIONS),)]
    assert store.integrity_check() == "ok"


def test_token_is_shown_once_and_only_its_hash_is_kept(store_location, engine):
    store = Store.open(store_location)
    token = store.add_annotator("alice")
    assert store.authenticate(token).name == "alice"
    assert raw(store, "SELECT COUNT(*) FROM annotators WHERE token_hash = ?", (token,)) == [(0,)]
    if engine == "sqlite":
        store.close()
        for path in (store_location, store_location.with_name(store_location.name + "-wal")):
            if path.exists():
                assert token.encode() not in path.read_bytes()
    else:  # no column of any table holds the token
        tables = [row[0] for row in raw(store, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]
        for table in tables:
            assert raw(store, f"SELECT COUNT(*) FROM {table} AS t WHERE strpos(t::text, ?) > 0", (token,)) == [(0,)], table
    with pytest.raises(InputError, match="not recognised"):
        store.authenticate(token + "x")
    with pytest.raises(InputError, match="already exists"):
        store.add_annotator("alice")
    with pytest.raises(InputError, match="not a valid annotator name"):
        store.add_annotator("bad name; drop table")
    with pytest.raises(InputError, match="role 'boss'"):
        store.add_annotator("zed", "boss")


def test_revoke_and_rotate(loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    store.revoke("carol")
    with pytest.raises(InputError, match="not recognised"):
        store.authenticate(tokens["carol"])
    new = store.rotate_token("carol")
    assert store.authenticate(new).name == "carol"
    with pytest.raises(InputError, match="unknown annotator"):
        store.revoke("nobody")


def test_push_is_idempotent_and_refuses_changes(loaded_study):
    backend = AppBackend(study=loaded_study.root)
    report = backend.push_files(loaded_study.root / "blind")
    assert (report.n_tasks, report.created, report.already_present) == (6, 0, 6)
    assert loaded_study.store.orders() == ORDERS
    changed = [TASKS[0].model_copy(update={"text": "something else"}), *TASKS[1:]]
    with pytest.raises(InputError, match="t_a1.*different content"):
        backend.push(changed, ORDERS)
    with pytest.raises(InputError, match="orders\\['alice'\\]: differs"):
        backend.push(TASKS, {**ORDERS, "alice": list(reversed(ORDERS["alice"]))})


def test_push_refuses_unblinded_tasks_and_bad_files(tmp_path):
    root = write_study(tmp_path / "study")
    lines = (root / "blind" / "tasks.jsonl").read_text().splitlines()
    leaked = json.loads(lines[1]) | {"backbone": "gpt-5"}
    (root / "blind" / "tasks.jsonl").write_text("\n".join([lines[0], json.dumps(leaked), *lines[2:]]) + "\n")
    backend = AppBackend(study=root)
    with pytest.raises(InputError, match=r"tasks.jsonl:2: field\(s\) \['backbone'\] present"):
        backend.push_files(root / "blind")
    (root / "blind" / "tasks.jsonl").write_text(lines[0] + "\n" + lines[0] + "\n")
    with pytest.raises(InputError, match="duplicated task_id 't_a1'"):
        backend.push_files(root / "blind")
    (root / "blind" / "tasks.jsonl").write_text(json.dumps(json.loads(lines[0]) | {"kind": "poem"}) + "\n")
    with pytest.raises(InputError, match="field 'kind' is 'poem'"):
        backend.push_files(root / "blind")
    (root / "blind" / "tasks.jsonl").write_text("\n")
    with pytest.raises(InputError, match="no tasks"):
        backend.push_files(root / "blind")
    with pytest.raises(InputError, match="empty task set"):
        backend.push([], {})
    assert backend.store.n_tasks() == 0


def test_orders_file_errors_name_the_field(tmp_path):
    root = write_study(tmp_path / "study")
    orders = root / "blind" / "orders.json"
    orders.write_text(json.dumps({"alice": ["t_a1", "t_zz"]}))
    with pytest.raises(InputError, match=r"orders.json: field 'alice': task id\(s\) \['t_zz'\]"):
        load_orders(orders, TASKS)
    orders.write_text(json.dumps({"alice": ["t_a1", "t_a1"]}))
    with pytest.raises(InputError, match="appears more than once"):
        load_orders(orders, TASKS)
    orders.write_text("{not json")
    with pytest.raises(InputError, match="invalid JSON at line 1"):
        load_orders(orders, TASKS)


def test_submit_validates_labels_first_turn_and_access(loaded_study):
    store, alice = loaded_study.store, loaded_study.tokens["alice"]

    def submit(task_id, label, **kw):
        return store.submit(alice, task_id, label, submission_id=f"sub-{task_id}-{label}-{kw}", **kw)

    with pytest.raises(InputError, match="label 'maybe' is not one of \\['yes', 'no'\\]"):
        submit("t_b2", "maybe")
    with pytest.raises(InputError, match=r"task 't_a1': A 'yes' needs the first turn where the recognition appears: choose its turn number \(0 to 2\)"):
        submit("t_a1", "yes")
    with pytest.raises(InputError, match="There is no turn 3 in this unit: choose a turn from 0 to 2"):
        submit("t_a1", "yes", first_turn=3)
    with pytest.raises(InputError, match="Only a 'yes' has a first recognition turn: leave the first turn empty for 'no'"):
        submit("t_a1", "no", first_turn=1)
    with pytest.raises(InputError, match="This unit has no first turn to give"):
        submit("t_b2", "yes", first_turn=0)
    with pytest.raises(InputError, match="not in the store"):
        submit("t_nope", "yes")
    with pytest.raises(InputError, match="not in annotator 'carol'"):
        store.submit(loaded_study.tokens["carol"], "t_e5", "correct", submission_id="carol-e5-1")
    with pytest.raises(InputError, match="not recognised"):
        store.submit("forged-token", "t_b2", "no", submission_id="forged-1")
    assert raw(store, "SELECT COUNT(*) FROM submissions") == [(0,)]
    result = submit("t_a1", "yes", first_turn=1)
    assert result.created and result.revision == 1 and result.label.first_turn == 1
    assert submit("t_f6", "ABSTAIN").label.label == "ABSTAIN"


def test_submit_is_idempotent_by_submission_id(loaded_study):
    store, alice = loaded_study.store, loaded_study.tokens["alice"]
    first = store.submit(alice, "t_b2", "no", submission_id="click-0001", note="bare answer", seconds_spent=4.5)
    again = store.submit(alice, "t_b2", "no", submission_id="click-0001", note="bare answer", seconds_spent=9.0)
    assert first.created and not again.created
    assert raw(store, "SELECT COUNT(*) FROM submissions") == [(1,)]
    assert raw(store, "SELECT seconds_spent FROM labels") == [(4.5,)]
    with pytest.raises(InputError, match="already used for a different label"):
        store.submit(alice, "t_b2", "yes", submission_id="click-0001")


def test_edits_keep_history_and_the_latest_counts(loaded_study):
    store, alice = loaded_study.store, loaded_study.tokens["alice"]
    store.submit(alice, "t_c3", "no", submission_id="edit-0001", seconds_spent=2.0)
    store.submit(alice, "t_c3", "yes", submission_id="edit-0002", unsure=True, note="sources named", seconds_spent=3.0)
    history = store.history("alice", "t_c3")
    assert [(r.number, r.label, r.unsure) for r in history] == [(1, "no", False), (2, "yes", True)]
    label = store.label("alice", "t_c3")
    # created_at is the first submit, updated_at the second; seconds add up (2 + 3).
    assert label.label == "yes" and label.unsure and label.note == "sources named"
    assert label.created_at == history[0].submitted_at and label.updated_at == history[1].submitted_at
    assert label.seconds_spent == 5.0
    assert raw(store, "SELECT label, revisions FROM labels WHERE task_id='t_c3'") == [("yes", 2)]


def test_adjudication_is_kept_apart_from_independent_labels(loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    judy = tokens["judy"]
    store.submit(tokens["alice"], "t_b2", "no", submission_id="a-b2-0001")
    store.submit(tokens["bob"], "t_b2", "no", submission_id="b-b2-0001")
    with pytest.raises(InputError, match="do not disagree"):
        store.submit(judy, "t_b2", "no", submission_id="j-b2-0001")
    store.submit(tokens["carol"], "t_b2", "yes", submission_id="c-b2-0001", note="names two sources?")
    store.submit(tokens["alice"], "t_c3", "yes", submission_id="a-c3-0001")
    store.submit(tokens["bob"], "t_c3", "yes", submission_id="b-c3-0001")
    assert store.disagreements() == ["t_b2"]
    result = store.submit(judy, "t_b2", "no", submission_id="j-b2-0002", note="bare answer")
    assert result.label.role == "adjudication"
    independent = store.labels(role="independent")
    assert {(r.annotator, r.label) for r in independent if r.task_id == "t_b2"} == {("alice", "no"), ("bob", "no"), ("carol", "yes")}
    assert [(r.annotator, r.label) for r in store.labels(role="adjudication")] == [("judy", "no")]
    session = sign_in(store, judy)
    assert isinstance(session, AdjudicatorSession)
    (item,) = session.queue()
    assert [(c.coder, c.label) for c in item.coders] == [(1, "no"), (2, "no"), (3, "yes")]
    assert item.adjudicated.label == "no"
    assert "carol" not in repr(item.coders)


def test_annotator_session_sees_only_own_work(loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    store.submit(tokens["bob"], "t_a1", "yes", first_turn=1, note="bob's secret note", submission_id="b-a1-0001")
    carol = sign_in(store, tokens["carol"])
    assert isinstance(carol, AnnotatorSession) and carol.order() == ORDERS["carol"]
    assert carol.current("t_a1") is None and carol.history("t_a1") == []
    assert carol.progress().done == 0
    with pytest.raises(InputError, match="not in your order"):
        carol.task("t_e5")
    assert not hasattr(carol, "queue")
    with pytest.raises(InputError, match="belongs to an annotator"):
        AdjudicatorSession(store, tokens["carol"])


def test_session_submission_ids_make_double_clicks_no_ops(loaded_study):
    alice = sign_in(loaded_study.store, loaded_study.tokens["alice"])
    first = alice.submit("t_b2", "no", base_revision=0, note="x")
    double = alice.submit("t_b2", "no", base_revision=0, note="x")
    assert first.created and not double.created
    edit_back = alice.submit("t_b2", "no", base_revision=1, note="x")
    assert edit_back.created and edit_back.revision == 2
    assert submission_id_for(annotator="alice", task_id="t_b2", base_revision=0, label="no", first_turn=None, unsure=False, note="x") == first.submission_id


def test_resume_position_is_first_unlabelled(loaded_study):
    alice = sign_in(loaded_study.store, loaded_study.tokens["alice"])
    assert alice.resume_position() == 0
    alice.submit("t_a1", "no", base_revision=0)
    alice.submit("t_c3", "yes", base_revision=0)
    assert alice.resume_position() == 1
    assert alice.progress().done == 2


def test_backend_registered_pull_status_and_export_round_trip(loaded_study, tmp_path):
    store, tokens = loaded_study.store, loaded_study.tokens
    store.submit(tokens["alice"], "t_a1", "yes", first_turn=1, unsure=True, note='comma, "quote"', submission_id="x-0000001", seconds_spent=1.25)
    store.submit(tokens["bob"], "t_a1", "no", submission_id="x-0000002")
    store.submit(tokens["judy"], "t_a1", "yes", first_turn=2, submission_id="x-0000003")
    backend = get_backend("app", study=loaded_study.root)
    assert isinstance(backend, AnnotationBackend)
    status = backend.status()
    assert (status.n_tasks, dict(status.labelled), status.details["disagreements"]) == (6, {"alice": 1, "bob": 1, "carol": 0}, 1)
    assert status.missing() == {name: n - status.labelled[name] for name, n in status.assigned.items()}
    pulled = backend.pull()
    assert backend.pull() == pulled and len(pulled) == 3
    for fmt in ("csv", "parquet", "jsonl"):
        path = export_labels(pulled, tmp_path / f"human.{fmt}", format=fmt)
        if fmt == "jsonl":
            back = [HumanLabel.model_validate_json(line) for line in path.read_text().splitlines()]
        else:
            nullable = ("first_turn", "seconds_spent", "source", "created_at", "updated_at", "codebook_sha256")
            frame = pd.read_csv(path, keep_default_na=False, na_values={k: [""] for k in nullable}) if fmt == "csv" else pd.read_parquet(path)
            back = [HumanLabel.model_validate({k: (None if pd.isna(v) else v) if k in nullable else v
                                               for k, v in row.items()}) for row in frame.to_dict("records")]
        assert back == sorted(pulled, key=lambda r: (r.task_id, r.role, r.annotator)), fmt
        assert export_labels(pulled, tmp_path / f"again.{fmt}", format=fmt).read_bytes() == path.read_bytes()
    with pytest.raises(InputError, match="--format 'xlsx'"):
        export_labels(pulled, tmp_path / "x.xlsx", format="xlsx")


def test_simulated_backend_is_recorded_and_unknown_backend_refused(loaded_study):
    store, alice = loaded_study.store, loaded_study.tokens["alice"]
    assert store.submit(alice, "t_b2", "no", submission_id="sim-00001", backend="simulated").label.backend == "simulated"
    with pytest.raises(InputError, match="backend 'labelstudio' is not allowed"):
        store.submit(alice, "t_b2", "no", submission_id="sim-00002", backend="labelstudio")


def test_corrupt_store_file_is_a_clear_error(tmp_path):
    path = tmp_path / "store.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="not a usable SQLite store"):
        Store.open(path)


def test_codebook_version_migration_keeps_old_labels_and_records_new_ones(store_location, tmp_path):
    """A store made before migration 0002 keeps its labels (version unknown); later submits record
    the codebook sha256 in the label and in its history; a malformed hash is refused."""
    engine = open_engine(store_location)
    with engine.write() as conn:  # the store as 0001_initial left it
        conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for statement in MIGRATIONS[0][1]:
            conn.execute(engine.ddl(statement))
        conn.execute("INSERT INTO migrations VALUES ('0001_initial', 'then')")
    engine.close()
    store = Store.open(store_location)
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert store.applied_migrations()[:2] == ["0001_initial", "0002_codebook_sha256"]
    store.load_tasks(TASKS, ORDERS)
    token = store.add_annotator("alice")
    old = store.submit(token, "t_b2", "no", submission_id="cb-0000001")
    assert old.label.codebook_sha256 is None
    first, second = "1" * 64, "2" * 64
    store.submit(token, "t_b2", "yes", submission_id="cb-0000002", codebook_sha256=first)
    again = store.submit(token, "t_b2", "no", submission_id="cb-0000003", codebook_sha256=second)
    assert again.label.codebook_sha256 == second
    assert [r.codebook_sha256 for r in store.history("alice", "t_b2")] == [None, first, second]
    assert raw(store, "SELECT codebook_sha256 FROM labels") == [(second,)]
    with pytest.raises(InputError, match="codebook_sha256 'ABC'"):
        store.submit(token, "t_c3", "no", submission_id="cb-0000004", codebook_sha256="ABC")
    exported = tmp_path / "human.jsonl"
    export_labels(store.labels(), exported, format="jsonl")
    assert json.loads(exported.read_text())["codebook_sha256"] == second
