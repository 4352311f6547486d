"""`accord run` on real public data without model servers: stop at the human stage, resume, skip.

The study reads the Aggarwal et al. scramfull responses (../shared/data) with two
rule judges (the paper's strict and semantic parsers, scheme decision), samples and
blinds them for two annotators (who code EHQ's four classes, read as ANSWER/DECLINE
through the study's [[label_map]]), and waits in the coding app's store. The
annotators' labels here come from this test through the same session API the coding
app uses (backend "app").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.study import load_study_file
from tests.study.helpers import REPO, accord, human_labels_match_store, recompute_matches, run_json, snapshot, statuses

PLAN = """name = "offline"
description = "three responses per model family"
kinds = ["response"]
strata = ["family"]
allocation = "fixed"
n_per_stratum = 3
one_per_trajectory = false
"""

STUDY = """output = "out"
[study]
name = "offline"
[[source]]
name = "aggarwal"
adapter = "responses"
path = "{data}"
kinds = ["response"]
[sampling]
plan = "plan.toml"
[blinding]
annotators = ["alice", "bob"]
[annotation]
backend = "app"
[[judge]]
name = "aggarwal-strict"
provider = "rule"
model = "aggarwal"
[[judge]]
name = "aggarwal-semantic"
provider = "rule"
model = "aggarwal"
parse_mode = "lenient"
[validation]
tie_policy = "exclude"
n_resamples = 200
level = 0.95
[audit]
judge = "aggarwal-strict"
positive = ["DECLINE"]
tie_policy = "exclude"
n_resamples = 200
n_permutations = 200
level = 0.95
[gate]
policy = "{policy}"
[[label_map]]
kind = "response"
from_scheme = "ehq4"
to_scheme = "decision"
labels = {{ ABSTAIN = "DECLINE", HEDGE = "ANSWER", CONFIDENT_CORRECT = "ANSWER", CONFIDENT_WRONG = "ANSWER" }}
"""
PIPELINE = ["ingest", "judge", "sample", "blind", "annotate", "validate", "quality", "audit", "gate", "report"]


@pytest.fixture
def study_file(tmp_path, shared) -> Path:
    data = shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json"
    (tmp_path / "plan.toml").write_text(PLAN, encoding="utf-8")
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(data=data, policy=REPO / "data" / "policies" / "screening.toml"), encoding="utf-8")
    return path


def _label_as_people(root: Path, *, edit: bool = False) -> None:
    """alice and bob label every task in their order through the coding app's session API."""
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    store = Store.for_study(root)
    try:
        for name in ("alice", "bob"):
            token = store.rotate_token(name) if any(a.name == name for a in store.annotators()) else store.add_annotator(name)
            session = AnnotatorSession(store, token)
            for position, task_id in enumerate(session.order()):
                text = session.task(task_id).text
                label = "ABSTAIN" if "DECLINE" in text else "CONFIDENT_CORRECT"
                if name == "bob" and position % 4 == 0:
                    label = "HEDGE"
                if edit and name == "alice" and position == 0:
                    label = "HEDGE" if label != "HEDGE" else "ABSTAIN"
                current = session.current(task_id)
                session.submit(task_id, label, base_revision=0 if current is None else len(session.history(task_id)))
    finally:
        store.close()


@pytest.mark.slow  # 10 s on 2 idle cores: make test runs it, make test-fast does not
def test_run_waits_for_people_then_completes_and_skips_what_is_done(study_file, capsys) -> None:
    study = load_study_file(study_file)
    root = study.output

    # 1. No labels yet: every automated stage before the human one runs, then the run stops (exit 0).
    code, result = run_json(capsys, str(study_file))
    assert code == 0
    assert statuses(result) == {"ingest": "ran", "judge": "ran", "sample": "ran", "blind": "ran", "annotate": "waiting"}
    assert "accord annotators add alice" in result["waiting"] and "accord app --study" in result["waiting"]
    # The backend's labels file holds what people have labelled so far: nothing yet.
    assert result["verdict"] is None and (root / "labels" / "human.jsonl").read_text() == ""
    code, out, _ = accord(capsys, "status", str(study_file), "--json")
    status = json.loads(out)
    assert code == 0 and status["waiting"] == result["waiting"]
    tasks = [json.loads(line) for line in (root / "blind" / "tasks.jsonl").read_text().splitlines()]
    assert status["sample"]["sampled"] == len(tasks) == status["labels"]["tasks"]
    assert {n: (r["labelled"], r["assigned"]) for n, r in status["labels"]["annotators"].items()} == {
        "alice": (0, len(tasks)), "bob": (0, len(tasks))}
    assert {row["stage"]: row["state"] for row in status["stages"]}["annotate"] == "pending"

    # 2. People label; the next run resumes at the human stage and finishes.
    before = snapshot(root)
    _label_as_people(root)
    code, result = run_json(capsys, str(study_file))
    verdict = json.loads((root / "gate" / "verdict.json").read_text())
    assert code == (0 if verdict["verdict"] == "ACCEPT" else 1) and result["verdict"] == verdict["verdict"]
    assert statuses(result) == {**{s: "skipped" for s in PIPELINE[:4]}, **{s: "ran" for s in PIPELINE[4:]}}
    after = snapshot(root)
    for name in ("units.jsonl", "judges/labels.jsonl", "judges/runs.jsonl", "sample/sample.jsonl", "sealed/key.jsonl"):
        assert after[name] == before[name], f"{name} was rewritten by a skipped stage"
    rows = human_labels_match_store(root)
    assert len(rows) == 2 * len(tasks) and {r["backend"] for r in rows} == {"app"}
    recompute_matches(root, study)
    assert not verdict["simulated"]
    for name in ("audit/audit.json", "report/report.html", "report/report.md"):
        assert (root / name).is_file(), name

    # 3. Nothing changed: every stage is skipped and no file changes (bytes and mtime).
    before = snapshot(root)
    code, result = run_json(capsys, str(study_file))
    assert set(statuses(result).values()) == {"skipped"} and result["verdict"] == verdict["verdict"]
    assert snapshot(root) == before

    # 4. One annotator edits a label: the human stage and everything computed from labels rerun.
    _label_as_people(root, edit=True)
    code, result = run_json(capsys, str(study_file))
    assert statuses(result) == {**{s: "skipped" for s in PIPELINE[:4]}, **{s: "ran" for s in PIPELINE[4:]}}
    assert human_labels_match_store(root) != rows
    recompute_matches(root, study)

    # 5. A deleted output reruns its stage only; its deterministic bytes leave downstream stages skipped.
    validation = (root / "validation" / "validation.json").read_bytes()
    (root / "validation" / "validation.json").unlink()
    code, result = run_json(capsys, str(study_file))
    assert [s for s, v in statuses(result).items() if v == "ran"] == ["validate"]
    assert (root / "validation" / "validation.json").read_bytes() == validation
    code, out, _ = accord(capsys, "status", str(study_file), "--json")
    assert {row["state"] for row in json.loads(out)["stages"]} == {"done"}


def test_a_study_file_naming_a_postgres_store_runs_on_it_to_the_same_numbers(study_file, tmp_path, capsys,
                                                                             postgres_url, monkeypatch) -> None:
    """`[annotation] options.store` puts the study's store in PostgreSQL (no SQLite file is made); the
    same labels give the same validation bytes as the study on its SQLite file."""
    from annotate.store import STORE_URL_ENV, Store

    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    text = study_file.read_text(encoding="utf-8")
    on_pg = tmp_path / "pg" / "study.toml"
    on_pg.parent.mkdir()
    (on_pg.parent / "plan.toml").write_text((tmp_path / "plan.toml").read_text(encoding="utf-8"), encoding="utf-8")
    on_pg.write_text(text.replace('backend = "app"', f'backend = "app"\noptions = {{ store = "{postgres_url}" }}'),
                     encoding="utf-8")
    results = {}
    for name, path in (("sqlite", study_file), ("postgresql", on_pg)):
        root = load_study_file(path).output
        assert run_json(capsys, str(path))[1]["waiting"]
        store = Store.for_study(root)
        assert store.engine.name == name and store.n_tasks() > 0
        assert (root / "labels" / "store.sqlite").exists() == (name == "sqlite")
        _label_as_people(root)
        run_json(capsys, str(path))
        human_labels_match_store(root)
        validation = json.loads((root / "validation" / "validation.json").read_text(encoding="utf-8"))
        # Input fingerprints differ only where rows carry when they were made (human labels, judge latencies).
        # The store is read where it is (its file, its database): named by its location, not compared.
        inputs = {k: v for k, v in validation.pop("fingerprints").items()
                  if k not in ("labels/human.jsonl", "judges/labels.jsonl", "labels/store.sqlite")
                  and not k.startswith("postgresql://")}
        results[name] = (validation, inputs)
    assert results["postgresql"] == results["sqlite"]

    leaky = tmp_path / "leaky.toml"
    leaky.write_text(text.replace('backend = "app"', 'backend = "app"\noptions = { store = "postgresql://me:pw@db/x" }'),
                     encoding="utf-8")
    code, _, err = accord(capsys, "run", str(leaky))
    assert code == 2 and "holds a password" in err and ":pw@" not in err and err.count("\n") == 1
