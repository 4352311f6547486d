"""Ingest, judge, import and the annotate stage's labels: `accord <stage>` and `accord run` are one driver.

The agreement stages are compared in ``test_one_driver.py``; here the stages that make the units
and the labels. Each test drives one copy of a study with `accord run` and another with the
stage commands given the settings the study file gives, then compares the files byte for byte.
What legitimately differs, and why:

- ``accord run`` ingests each named ``[[source]]`` into ``ingest/NAME/`` and merges them, with a
  manifest listing the sources by name; ``accord ingest`` ingests its one source straight into the
  study, so its manifest is that source's (equal to ``ingest/NAME/ingest_manifest.json``);
- a judge label's ``latency_s`` is the wall time of its call (``samples.records.JudgeLabel``);
- ``.generations/*.json`` record the last generation each stage published: the import commands
  publish one table at a time, `accord run` all of them at once.

The first test also spies on ``apps.drivers.get_stage`` (calling through) during `accord run`: every
stage it runs is reached through its registered driver, once; two more check that every stage of the
shipped studies' run plans is a registered driver and that every stage command module calls
``get_stage``; the last that `accord labels export` writes the gold labels as the stage's pull does.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from samples.layout import StudyLayout
from tests.study.helpers import REPO, accord

POLICY = REPO / "data" / "policies" / "screening.toml"
PLAN = """name = "one-driver"
kinds = ["response"]
strata = ["family"]
allocation = "fixed"
n_per_stratum = 2
one_per_trajectory = false
"""
JUDGES = """[[judge]]
name = "aggarwal-strict"
provider = "rule"
model = "aggarwal"
[[judge]]
name = "aggarwal-semantic"
provider = "rule"
model = "aggarwal"
parse_mode = "lenient"
"""
TRAJECTORY_STUDY = """output = "{output}"
[study]
name = "one-driver-upstream"
[[source]]
name = "aggarwal"
adapter = "responses"
path = "{data}"
kinds = ["response"]
[sampling]
plan = "{plan}"
[blinding]
annotators = ["alice", "bob"]
[annotation]
backend = "app"
[validation]
annotator_quality = false
[gate]
policy = "{policy}"
[[label_map]]
kind = "response"
from_scheme = "ehq4"
to_scheme = "decision"
labels = {{ ABSTAIN = "DECLINE", HEDGE = "ANSWER", CONFIDENT_CORRECT = "ANSWER", CONFIDENT_WRONG = "ANSWER" }}
""" + JUDGES
LABELS_STUDY = """output = "{output}"
[study]
name = "one-driver-import"
[units]
path = "{table}"
unit_column = "id"
kind = "identify_trajectory"
strata_columns = ["family", "model"]
[[human_labels]]
name = "people"
path = "{table}"
unit_column = "id"
annotator_columns = ["ann_1", "ann_2", "ann_3"]
[[judge]]
provider = "import"
name = "judge"
path = "{table}"
unit_column = "id"
output_column = "judge"
[validation]
annotator_quality = false
[gate]
policy = "{policy}"
"""
STAGE_COMMANDS = {"ingest": "ingest", "judge": "judge", "import": "import", "labels": "annotate", "ls": "annotate",
                  "sample": "sample", "blind": "blind", "validate": "validate", "quality": "quality", "audit": "audit",
                  "gate": "gate", "score": "score", "report": "report"}
"""Command module -> the stage it drives (``accord ls`` and ``accord labels`` drive the annotate stage)."""


def _judge_rows(path: Path) -> list[dict]:
    """The labels file's rows without ``latency_s`` (wall time; see the module docstring), in file order."""
    return [{k: v for k, v in json.loads(line).items() if k != "latency_s"} for line in path.read_text().splitlines()]


@pytest.fixture
def aggarwal(shared) -> Path:
    return (shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json").resolve()  # as the study file resolves it


def _study(tmp_path: Path, name: str, template: str, **values: object) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(template.format(output=tmp_path / name, policy=POLICY, **values), encoding="utf-8")
    return path


def _label_as_people(root: Path) -> None:
    """alice and bob label every task in their order through the coding app's session API (made-up labels, in
    EHQ's classes that the study's label map reads as the judges' ANSWER / DECLINE)."""
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    store = Store.for_study(root)
    try:
        for name in ("alice", "bob"):
            session = AnnotatorSession(store, store.add_annotator(name))
            for position, task_id in enumerate(session.order()):
                label = "ABSTAIN" if (position + len(name)) % 3 == 0 else "CONFIDENT_CORRECT"
                session.submit(task_id, label, base_revision=0)
    finally:
        store.close()


def test_ingest_judge_and_the_labels_export_write_what_run_writes(tmp_path, aggarwal, capsys, monkeypatch) -> None:
    import apps.drivers

    (tmp_path / "plan.toml").write_text(PLAN)
    study_file = _study(tmp_path, "by_run", TRAJECTORY_STUDY, data=aggarwal, plan=tmp_path / "plan.toml")
    by_run, by_cli = tmp_path / "by_run", tmp_path / "by_cli"
    called: list[str] = []
    get_stage = apps.drivers.get_stage
    monkeypatch.setattr(apps.drivers, "get_stage", lambda name: called.append(name) or get_stage(name))

    code, out, err = accord(capsys, "run", str(study_file), "--json")
    assert code == 0, err
    ran = [row["stage"] for row in json.loads(out)["stages"]]
    assert ran == ["ingest", "judge", "sample", "blind", "annotate"]  # waiting for people at the human stage
    assert called == ran  # each stage through its registered driver, once, in the order the run lists them

    # The stage commands, with the study file's settings, into another folder.
    assert accord(capsys, "ingest", str(aggarwal), "--adapter", "responses", "--kinds", "response",
                  "--study", str(by_cli), "--json")[0] == 0
    (tmp_path / "judges.toml").write_text(JUDGES)
    assert accord(capsys, "judge", "run", "--study", str(by_cli), "--config", str(tmp_path / "judges.toml"),
                  "--json")[0] == 0
    for name in ("trajectories.jsonl", "units.jsonl"):
        assert (by_run / name).read_bytes() == (by_cli / name).read_bytes(), name
    assert (by_run / "ingest" / "aggarwal" / "ingest_manifest.json").read_bytes() == \
        (by_cli / "ingest_manifest.json").read_bytes()
    merged = json.loads((by_run / "ingest_manifest.json").read_text())
    assert merged["sources"] == {"aggarwal": json.loads((by_cli / "ingest_manifest.json").read_text())}
    judged = _judge_rows(by_cli / "judges" / "labels.jsonl")
    assert len(judged) == 2 * len((by_cli / "units.jsonl").read_text().splitlines())  # two judges, every unit
    assert _judge_rows(by_run / "judges" / "labels.jsonl") == judged

    # The annotate stage's pull: `accord labels export` writes the study's labels file as `accord run` does.
    _label_as_people(by_run)
    human = by_run / "labels" / "human.jsonl"
    assert human.read_bytes() == b""  # the first run's pull: nobody had labelled
    human.unlink()
    code, out, err = accord(capsys, "labels", "export", "--study", str(by_run), "--json")
    assert code == 0, err
    exported = human.read_bytes()
    assert json.loads(out)["rows"] == len(exported.splitlines()) > 0
    human.unlink()
    called.clear()
    code, out, err = accord(capsys, "run", str(study_file), "--json")
    assert code in (0, 1), err
    assert "annotate" in called and human.read_bytes() == exported


def test_the_import_commands_write_what_run_imports(tmp_path, capsys) -> None:
    from tests.study.test_one_driver import _table

    table = _table(tmp_path / "labels.csv")
    by_run, by_cli = tmp_path / "by_run", tmp_path / "by_cli"
    code, _, err = accord(capsys, "run", str(_study(tmp_path, "by_run", LABELS_STUDY, table=table)), "--quiet")
    assert code in (0, 1), err
    by_cli.mkdir()
    study = ("--study", str(by_cli))
    assert accord(capsys, "import", "units", str(table), *study, "--unit-column", "id", "--kind",
                  "identify_trajectory", "--strata-columns", "family,model")[0] == 0
    assert accord(capsys, "import", "human-labels", str(table), *study, "--unit-column", "id",
                  "--annotator-columns", "ann_1,ann_2,ann_3", "--name", "people")[0] == 0
    assert accord(capsys, "import", "judge-labels", str(table), *study, "--unit-column", "id", "--judge", "judge",
                  "--output-column", "judge")[0] == 0
    runs, clis = StudyLayout(by_run), StudyLayout(by_cli)
    for name in (lambda layout: layout.units, lambda layout: layout.key,
                 lambda layout: layout.imported_labels_dir / "people.jsonl",
                 lambda layout: layout.imported_judge_labels_dir / "judge.jsonl"):
        assert name(clis).is_file(), name(clis)
        assert name(runs).read_bytes() == name(clis).read_bytes(), name(clis)
    assert len((clis.imported_labels_dir / "people.jsonl").read_text().splitlines()) == 3 * 120


def test_every_stage_command_calls_the_stage_registry() -> None:
    from apps.drivers import stage_names

    assert set(STAGE_COMMANDS.values()) <= set(stage_names())
    for module in STAGE_COMMANDS:
        tree = ast.parse((REPO / "apps" / "commands" / f"{module}.py").read_text())
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Name) and node.func.id == "get_stage"]
        named = {node.args[0].value for node in calls if node.args and isinstance(node.args[0], ast.Constant)}
        assert STAGE_COMMANDS[module] in named, f"apps/commands/{module}.py does not run get_stage({STAGE_COMMANDS[module]!r})"


def test_every_stage_of_the_shipped_studies_is_a_registered_driver() -> None:
    """The run plans of the shipped study files, which between them have every stage `accord run` knows (generated
    sources, decisions, EHQ, ASA, audit, preference, score, imports): each stage runs a registered driver."""
    from apps.drivers import StageDriver, get_stage
    from apps.stages import build_stages
    from apps.study import load_study_file

    studies = REPO / "data" / "studies"
    files = [REPO / "data" / "demo" / "study.toml", *sorted(studies.glob("*/study.toml")),
             *sorted(studies.glob("ise/*.toml")), *sorted(studies.glob("alttest/*/study.toml"))]
    seen: set[str] = set()
    for study_file in files:
        for stage in build_stages(load_study_file(study_file)):
            driver = get_stage(stage.driver)
            assert isinstance(driver, StageDriver) and driver.name == stage.driver, (study_file, stage.name)
            seen.add(stage.driver)
    assert seen == {"generate", "ingest", "judge", "decisions", "sample", "blind", "annotate", "import", "validate",
                    "quality", "ehq", "asa", "audit", "preference", "gate", "score", "report"}


def test_labels_export_writes_the_gold_labels_as_the_stage_pull_does(tmp_path, capsys) -> None:
    """`accord labels export` to the study's labels file is the annotate stage's pull: the labels of gold units go to
    their own sealed file as `accord run` writes them (before, the export left that file as it was)."""
    from annotate.app_backend import AppBackend
    from tests.annotate.test_gold import ANNOTATORS, blinded_study, push

    study = blinded_study(tmp_path / "study")
    layout = StudyLayout(study)
    assert accord(capsys, "gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.1")[0] == 0
    store, tokens = push(study)
    gold = {u["task"]["task_id"] for u in json.loads(layout.gold.read_text())["units"]}
    for name in ANNOTATORS:
        for i, task_id in enumerate(store.order(name)[:12]):
            kind = store.task(task_id).kind
            label = "yes" if i % 3 else "no"
            store.submit(tokens[name], task_id, label, submission_id=f"{name}-{i:03d}",
                         first_turn=0 if label == "yes" and kind == "identify_trajectory" else None)
    assert gold & {t for name in ANNOTATORS for t in store.order(name)[:12]}  # some gold units were labelled
    store.close()

    assert accord(capsys, "labels", "export", "--study", str(study))[0] == 0
    exported = {path: path.read_bytes() for path in (layout.app_labels, layout.gold_labels)}
    assert all(exported.values())
    for path in exported:
        path.unlink()
    backend = AppBackend(study=study)  # what `accord run`'s annotate stage builds for backend "app"
    try:
        backend.pull()
    finally:
        backend.close()
    assert {path: path.read_bytes() for path in exported} == exported
