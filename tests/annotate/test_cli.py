"""`accord annotators`, `accord labels export` and `accord app` through the real dispatcher."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd

from annotate.store import Store, hash_token
from apps.cli import main
from tests.annotate.helpers import raw, write_study

# The store commands run on both store engines (tests/annotate/conftest.py).
BOTH_ENGINES = True


def accord(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_annotators_add_list_rotate_revoke(tmp_path, capsys, engine):
    study = write_study(tmp_path / "study")
    code, out, _ = accord(capsys, "annotators", "add", "alice", "--study", str(study), "--json")
    assert code == 0
    token = json.loads(out)["token"]
    store = Store.for_study(study)
    assert store.authenticate(token).name == "alice"
    assert raw(store, "SELECT token_hash FROM annotators") == [(hash_token(token),)]
    code, out, _ = accord(capsys, "annotators", "add", "judy", "--role", "adjudicator", "--study", str(study))
    assert code == 0 and "shown once" in out
    code, _, err = accord(capsys, "annotators", "add", "alice", "--study", str(study))
    assert code == 2 and "already exists" in err and err.count("\n") == 1
    code, out, _ = accord(capsys, "annotators", "list", "--study", str(study), "--json")
    assert [(r["name"], r["role"], r["active"]) for r in json.loads(out)] == [("alice", "annotator", True), ("judy", "adjudicator", True)]
    code, out, _ = accord(capsys, "annotators", "rotate", "alice", "--study", str(study), "--json")
    new = json.loads(out)["token"]
    assert new != token and store.authenticate(new).name == "alice"
    assert accord(capsys, "annotators", "revoke", "alice", "--study", str(study))[0] == 0
    code, out, _ = accord(capsys, "annotators", "list", "--study", str(study))
    assert "revoked" in out.splitlines()[0]
    code, _, err = accord(capsys, "annotators", "revoke", "--study", str(study))
    assert code == 2 and "a NAME is required" in err
    code, _, err = accord(capsys, "annotators", "list", "--study", str(tmp_path / "missing"))
    assert code == 2 and "not a folder" in err


def test_labels_export_writes_every_format(tmp_path, capsys, engine):
    study = write_study(tmp_path / "study")
    store = Store.for_study(study)
    from annotate.app_backend import AppBackend

    AppBackend(study=study).push_files(study / "blind")
    alice = store.add_annotator("alice")
    store.submit(alice, "t_b2", "no", submission_id="cli-000001", note="bare")
    store.submit(alice, "t_a1", "yes", first_turn=1, submission_id="cli-000002")
    code, out, _ = accord(capsys, "labels", "export", "--study", str(study), "--json")
    assert code == 0 and json.loads(out) == {"path": str(study / "labels" / "human.jsonl"), "rows": 2, "independent": 2, "adjudication": 0}
    lines = [json.loads(line) for line in (study / "labels" / "human.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["label"], r["first_turn"], r["backend"], r["role"]) for r in lines] == [
        ("t_a1", "yes", 1, "app", "independent"), ("t_b2", "no", None, "app", "independent"),
    ]
    out_path = tmp_path / "out.parquet"
    assert accord(capsys, "labels", "export", "--study", str(study), "--format", "parquet", "--out", str(out_path))[0] == 0
    frame = pd.read_parquet(out_path)
    assert list(frame.columns) == ["task_id", "annotator", "label", "first_turn", "unsure", "note", "created_at", "updated_at", "seconds_spent", "backend", "role", "source", "codebook_sha256"]
    assert list(frame["label"]) == ["yes", "no"]
    assert accord(capsys, "labels", "export", "--study", str(study), "--format", "csv")[0] == 0
    assert pd.read_csv(study / "labels" / "human.csv")["note"].fillna("").tolist() == ["", "bare"]


def test_app_refuses_a_study_without_blinded_tasks(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = accord(capsys, "app", "--study", str(tmp_path / "empty"))
    assert code == 2 and "run `accord blind` first" in err


def test_app_refuses_unblinded_tasks_before_starting(tmp_path, capsys):
    study = write_study(tmp_path / "study")
    tasks = study / "blind" / "tasks.jsonl"
    first = json.loads(tasks.read_text().splitlines()[0])
    tasks.write_text(json.dumps(first | {"agent": "Claude Code", "split": "conflict"}) + "\n")
    code, _, err = accord(capsys, "app", "--study", str(study))
    assert code == 2 and "['agent', 'split'] present" in err
    assert Store.for_study(study).n_tasks() == 0


def test_cli_lists_the_commands_with_summaries():
    out = subprocess.run([sys.executable, "-m", "apps", "--help"], capture_output=True, text=True, check=True).stdout
    assert "annotators   Manage coding-app annotators" in out
    assert "labels       Export the human labels table" in out
    assert "app          Run the coding app" in out


def test_app_without_streamlit_gives_the_install_hint(tmp_path, capsys, monkeypatch):
    # Streamlit cannot be uninstalled for one test: hide it from the import system instead.
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "streamlit" else real_find_spec(name, *a))
    study = write_study(tmp_path / "study")
    code, _, err = accord(capsys, "app", "--study", str(study))
    assert code == 2 and err.strip() == "accord app: error: the coding app needs Streamlit: pip install 'accord[app]'"


def blinded_study(root, annotators, *, seed=20261129):
    """A real `accord blind` of eight Escalate units (plain text, nothing to scrub)."""
    from samples.blind import blind_study
    from samples.jsonl import write_jsonl
    from samples.layout import StudyLayout
    from samples.records import SampledUnit

    units = [SampledUnit(unit_id=f"u_{i:020d}", trajectory_id=f"traj-{i}", kind="escalate_final",
                         text=f"The answer is {i}.", strata={"split": "none"}, stratum="all", inclusion_prob=1.0)
             for i in range(8)]
    write_jsonl(StudyLayout.of(root).sample, units)
    blind_study(root, annotators=annotators, seed=seed)
    return root


def test_a_late_annotator_gets_the_order_blinding_would_have_given_and_nobody_else_changes(tmp_path, capsys, engine):
    from annotate.app_backend import AppBackend, sign_in

    study = blinded_study(tmp_path / "study", ["ann1", "ann2"])
    # The reference: the same sample blinded with alice named at blind time (same seed).
    named = json.loads((blinded_study(tmp_path / "named", ["ann1", "ann2", "alice"]) / "blind" / "orders.json").read_text())
    blind_time = json.loads((study / "blind" / "orders.json").read_text())
    AppBackend(study=study).push_files(study / "blind")  # the app was started before alice joined
    store = Store.for_study(study)
    before = store.orders()
    assert before == blind_time and "alice" not in before
    code, out, _ = accord(capsys, "annotators", "add", "alice", "--study", str(study), "--json")
    assert code == 0 and json.loads(out)["assigned"] == 8
    after = store.orders()
    assert after["alice"] == named["alice"] and sorted(after["alice"]) == sorted(blind_time["ann1"])
    assert {k: v for k, v in after.items() if k != "alice"} == before  # nobody else's order changed
    assert json.loads((study / "blind" / "orders.json").read_text()) == blind_time  # no re-blinding
    # The app shows alice her tasks and takes her label; restarting the app keeps her order.
    session = sign_in(store, json.loads(out)["token"])
    assert session.order() == named["alice"] and session.progress().total == 8
    session.submit(named["alice"][0], "yes", base_revision=0)
    AppBackend(study=study).push_files(study / "blind")
    assert store.orders() == after and store.labelled_task_ids("alice") == {named["alice"][0]}
    code, out, _ = accord(capsys, "annotators", "list", "--study", str(study), "--json")
    assert {r["name"]: (r["assigned"], r["labelled"]) for r in json.loads(out)}["alice"] == (8, 1)


def test_an_annotator_added_before_blinding_gets_the_seeded_order_when_the_app_loads_tasks(tmp_path, capsys, engine):
    from annotate.app_backend import AppBackend

    root = tmp_path / "study"
    root.mkdir()
    assert accord(capsys, "annotators", "add", "bea", "--study", str(root))[0] == 0  # nothing blinded yet
    blinded_study(root, ["ann1"])
    named = json.loads((blinded_study(tmp_path / "named", ["ann1", "bea"]) / "blind" / "orders.json").read_text())
    report = AppBackend(study=root).push_files(root / "blind")
    assert report.annotators == ("ann1", "bea")
    assert Store.for_study(root).orders() == named


def test_late_annotator_refusals_leave_the_store_as_it_was(tmp_path, capsys, engine):
    study = blinded_study(tmp_path / "study", ["ann1"])
    for bad in ("al ice", "_x", "a" * 65, "human majority", "bob/../eve"):
        code, _, err = accord(capsys, "annotators", "add", bad, "--study", str(study))
        assert code == 2 and "not a valid annotator name" in err and err.count("\n") == 1
    (study / "blind" / "audit.json").unlink()  # a blinded folder written by hand: no seed to order by
    (study / ".generations" / "blind.json").unlink()  # (and no generation record: readers check one that exists)
    code, _, err = accord(capsys, "annotators", "add", "dan", "--study", str(study))
    assert code == 2 and "no blinding seed recorded; 'dan' was not named at blind time" in err
    store = Store.for_study(study)
    assert store.annotators() == [] and store.n_tasks() == 0
    assert accord(capsys, "annotators", "add", "ann1", "--study", str(study))[0] == 0  # named at blind time: fine
    assert len(store.order("ann1")) == 8


def test_the_coding_app_shows_a_late_annotator_her_tasks(tmp_path, capsys, monkeypatch, repo):
    from streamlit.testing.v1 import AppTest

    from tests.annotate.test_app import button, drawn

    study = blinded_study(tmp_path / "study", ["ann1", "ann2"])
    code, out, _ = accord(capsys, "annotators", "add", "alice", "--study", str(study), "--json")
    assert code == 0
    monkeypatch.setenv("ACCORD_STUDY", str(study))
    monkeypatch.chdir(repo)
    at = AppTest.from_file(str(repo / "apps" / "coding_app.py"), default_timeout=30)
    at.run()
    at.text_input(key="token_input").input(json.loads(out)["token"])
    button(at, "Sign in").click().run()
    assert not at.exception, at.exception
    assert not [i.value for i in at.info]  # not "No tasks are assigned to you yet."
    progress = drawn(at)["progress"]
    assert progress["heading"] == "Task 1 of 8" and progress["detail"] == "0 of 8 labelled"


def test_status_names_labels_given_under_more_than_one_codebook_version(tmp_path, capsys):
    """Two labels under codebook A, one under B, one without a version: status counts them by hand's count."""
    from pathlib import Path

    from samples.jsonl import write_jsonl
    from samples.layout import StudyLayout
    from samples.records import HumanLabel

    demo = Path(__file__).resolve().parents[2] / "data" / "demo" / "study.toml"
    out = tmp_path / "out"
    a, b = "a" * 64, "b" * 64
    rows = [HumanLabel(task_id=f"t_{i}", annotator="alice", label="yes", created_at=None, updated_at=None,
                       backend="app", codebook_sha256=version) for i, version in enumerate((a, a, b, None))]
    write_jsonl(StudyLayout.of(out).app_labels, rows)
    code, text, err = accord(capsys, "status", str(demo), "--output", str(out), "--json")
    assert code == 0, err
    labels = json.loads(text)["labels"]
    assert labels["codebook_versions"] == {a: 2, b: 1, "unknown": 1}
    assert "3 codebook versions" in labels["codebook_note"] and "--by-codebook" in labels["codebook_note"]
    code, text, _ = accord(capsys, "status", str(demo), "--output", str(out))
    assert code == 0 and "3 codebook versions" in " ".join(text.split())
    write_jsonl(StudyLayout.of(out).app_labels, rows[:2])
    code, text, _ = accord(capsys, "status", str(demo), "--output", str(out), "--json")
    assert json.loads(text)["labels"]["codebook_note"] is None
