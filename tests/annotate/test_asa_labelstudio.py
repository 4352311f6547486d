"""ASA milestone units (seed 003) through a real Label Studio server: pushed with the protected reference in
their data, asked under the milestone scheme's labelling view, labelled (through the API and in chromium) and
pulled back as the scheme's labels. The tasks are the constructed ASA study's own blind tasks
(tests/annotate/test_asa_browser.py: run 5, trap family, late_abandon: M0 = 1 and M2 = 0 by construction)."""

from __future__ import annotations

import hashlib
import html
import json
from pathlib import Path

import pytest

from annotate.labelstudio import labeling_config, load_labelstudio_credentials, load_labelstudio_state
from apps.cli import main
from samples.kinds import get_kind
from samples.layout import StudyLayout
from samples.records import HumanLabel
from tests.annotate.test_asa_browser import asa_tasks  # noqa: F401 (the fixture)
from tests.annotate.test_labelstudio import _result, _sdk  # noqa: F401
from tests.annotate.test_labelstudio_browser import _sign_in
from tests.support.browser import browser

pytestmark = pytest.mark.labelstudio
CODEBOOK = Path(__file__).resolve().parents[2] / "annotate" / "codebook" / "milestone.md"
REFERENCE_LINES = ("Blocker family: trap", "Forbidden state changes: book_reservation, cancel_reservation",
                   "Abandon artifact written by: agent")


def _push(study: Path, tasks, annotator: str, server, monkeypatch) -> None:
    (study / "blind").mkdir(parents=True)
    (study / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    (study / "blind" / "orders.json").write_text(json.dumps({annotator: [t.task_id for t in tasks]}), encoding="utf-8")
    monkeypatch.setenv("ACCORD_LS_TOKEN", server.token)
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", server.admin_password)
    assert main(["ls", "push", "--study", str(study), "--url", server.url]) == 0


def _pulled(study: Path, capsys) -> tuple[dict, dict[str, HumanLabel]]:
    capsys.readouterr()
    assert main(["ls", "pull", "--study", str(study), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [HumanLabel.model_validate_json(line) for line in StudyLayout.of(study).labelstudio_labels.read_text().splitlines()]
    return report, {row.task_id: row for row in rows}


def test_asa_tasks_carry_the_reference_are_asked_as_milestones_and_pull_back_as_scheme_labels(
        asa_tasks, labelstudio_server, tmp_path, monkeypatch, capsys):  # noqa: F811
    m2, m0 = asa_tasks["asa_m2"], asa_tasks["asa_m0"]
    study = tmp_path / "study"
    _push(study, [m2, m0], "asa-coder", labelstudio_server, monkeypatch)
    state = load_labelstudio_state(study).annotators["asa-coder"].projects
    assert sorted(state) == ["asa_m0", "asa_m2"]  # one project per kind: each asks its own milestone
    login = load_labelstudio_credentials(study).owners["asa-coder"]
    owner = _sdk(labelstudio_server.url, login.api_token)
    for task, kind in ((m2, "asa_m2"), (m0, "asa_m0")):
        project = owner.projects.get(state[kind].project_id)
        # The labelling view is the milestone scheme's: the display, the kind's question, yes / no.
        assert project.label_config.strip() == labeling_config(kind, "milestone").strip()
        assert html.escape(get_kind(kind).question) in project.label_config
        exported = json.loads(b"".join(owner.projects.exports.download_sync(
            state[kind].project_id, export_type="JSON", download_all_tasks=True)))
        assert [t["data"]["task_id"] for t in exported] == [task.task_id]
        display = exported[0]["data"]["display"]
        for line in REFERENCE_LINES:  # the protected reference travels in the task's data, escaped
            assert html.escape(line) in display
        assert html.escape(task.question[:40]) in display  # and the task request
    coder = _sdk(labelstudio_server.url, load_labelstudio_credentials(study).annotators["asa-coder"].api_token)
    coder.annotations.create(id=state["asa_m2"].tasks[m2.task_id], result=_result("no"))
    coder.annotations.create(id=state["asa_m0"].tasks[m0.task_id], result=_result("maybe"))  # not a milestone label
    report, rows = _pulled(study, capsys)
    assert report["n_labels"] == 1 and len(report["ignored"]) == 1 and "'maybe'" in report["ignored"][0]
    assert (rows[m2.task_id].label, rows[m2.task_id].backend) == ("no", "labelstudio")
    assert rows[m2.task_id].codebook_sha256 == hashlib.sha256(CODEBOOK.read_bytes()).hexdigest()


@pytest.mark.browser
def test_an_annotator_reads_the_reference_in_label_studio_and_labels_an_asa_unit(
        asa_tasks, labelstudio_server, tmp_path, monkeypatch, capsys):  # noqa: F811
    m2 = asa_tasks["asa_m2"]
    study = tmp_path / "study"
    _push(study, [m2], "asa-ui", labelstudio_server, monkeypatch)
    login = load_labelstudio_credentials(study).annotators["asa-ui"]
    project_id = load_labelstudio_state(study).annotators["asa-ui"].projects["asa_m2"].project_id
    with browser() as context:
        page = context.new_page()
        page.set_default_timeout(120_000)
        _sign_in(page, labelstudio_server.url, login.email, login.password)
        page.goto(f"{labelstudio_server.url}/projects/{project_id}/data?labeling=1")
        page.get_by_text("Labeling Instructions").wait_for()
        page.keyboard.press("Escape")
        for line in REFERENCE_LINES:
            page.get_by_text(line).first.wait_for()
        # The milestone question heads the choices (the view's Header above the yes / no radios).
        question = page.get_by_role("heading", name=get_kind("asa_m2").question, exact=True)
        choice = page.locator('input[type=radio][name="no"]')
        assert question.bounding_box()["y"] < choice.bounding_box()["y"]
        page.screenshot(path="/tmp/accord-asa-labelstudio.png", full_page=True)
        choice.check()
        page.get_by_test_id("bottombar-submit-button").click()
        page.get_by_text("Annotation saved successfully", exact=True).wait_for()
    report, rows = _pulled(study, capsys)
    assert (report["n_labels"], report["ignored"]) == (1, [])
    assert (rows[m2.task_id].label, rows[m2.task_id].annotator) == ("no", "asa-ui")
