"""`accord run` with `backend = "labelstudio"` on a real Label Studio server, to the verdict.

The study is test_run_offline's (real Aggarwal responses, two rule judges, two
annotators). The first run pushes the blinded tasks to Label Studio and waits; the
annotators label through Label Studio's API with their own tokens, as the labelling page
does; the next run pulls and goes on to the verdict. The same labels given through the
coding app give the same validation numbers: the backend changes where people label,
never what is computed from their labels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agreement.documents import ValidationDocument, VerdictDocument, read_document
from annotate.labelstudio import load_labelstudio_credentials
from samples.layout import StudyLayout
from samples.records import HumanLabel
from tests.study.helpers import REPO, run_json, statuses
from tests.study.test_run_offline import PLAN, STUDY


def _label_for(text: str, annotator: str, position: int) -> str:
    label = "ABSTAIN" if "DECLINE" in text else "CONFIDENT_CORRECT"
    return "HEDGE" if annotator == "bob" and position % 4 == 0 else label


def _study(tmp_path: Path, shared: Path, name: str, annotation: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "plan.toml").write_text(PLAN, encoding="utf-8")
    data = shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json"
    text = STUDY.format(data=data, policy=REPO / "data" / "policies" / "screening.toml")
    text = text.replace('[annotation]\nbackend = "app"\n', annotation)
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _label_in_labelstudio(server, root: Path) -> None:
    from label_studio_sdk import LabelStudio

    layout = StudyLayout(root)
    tasks = {json.loads(line)["task_id"]: json.loads(line) for line in layout.tasks.read_text().splitlines()}
    orders = json.loads(layout.orders.read_text())
    state = json.loads(layout.labelstudio_state.read_text())
    credentials = load_labelstudio_credentials(root)
    for name in ("alice", "bob"):
        client = LabelStudio(base_url=server.url, api_key=credentials.annotators[name].api_token)
        projects = state["annotators"][name]["projects"]
        for position, task_id in enumerate(orders[name]):
            kind = tasks[task_id]["kind"]
            label = _label_for(tasks[task_id]["text"], name, position)
            result = [{"from_name": "label", "to_name": "display", "type": "choices", "value": {"choices": [label]}}]
            client.annotations.create(id=projects[kind]["tasks"][task_id], result=result)


def _label_in_the_app(root: Path) -> None:
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    store = Store.open(StudyLayout(root).store)
    try:
        for name in ("alice", "bob"):
            session = AnnotatorSession(store, store.add_annotator(name))
            for position, task_id in enumerate(session.order()):
                session.submit(task_id, _label_for(session.task(task_id).text, name, position), base_revision=0)
    finally:
        store.close()


@pytest.mark.labelstudio
def test_labelstudio_study_runs_to_the_verdict_and_matches_the_coding_app(labelstudio_server, tmp_path, shared,
                                                                        capsys, monkeypatch):
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", labelstudio_server.admin_password)
    ls_file = _study(tmp_path, shared, "ls", f'[annotation]\nbackend = "labelstudio"\noptions = {{ url = '
                                             f'"{labelstudio_server.url}" }}\n')
    code, first = run_json(capsys, str(ls_file))
    assert code == 0 and first["waiting"] and statuses(first)["annotate"] == "waiting"
    assert "Label Studio" in first["waiting"]
    root = tmp_path / "ls" / "out"
    _label_in_labelstudio(labelstudio_server, root)
    code, second = run_json(capsys, str(ls_file))
    verdict = read_document(VerdictDocument, root)
    assert verdict is not None and code == (0 if verdict.verdict == "ACCEPT" else 1) and second["waiting"] is None
    rows = [HumanLabel.model_validate_json(line) for line in StudyLayout(root).labelstudio_labels.read_text().splitlines()]
    assert {r.backend for r in rows} == {"labelstudio"} and len(rows) == 2 * len(json.loads(
        StudyLayout(root).orders.read_text())["alice"])

    app_file = _study(tmp_path, shared, "app", '[annotation]\nbackend = "app"\n')
    assert run_json(capsys, str(app_file))[1]["waiting"]
    app_root = tmp_path / "app" / "out"
    _label_in_the_app(app_root)
    run_json(capsys, str(app_file))
    by_ls, by_app = read_document(ValidationDocument, root), read_document(ValidationDocument, app_root)
    def numbers(doc: ValidationDocument) -> list:
        return [(s.kind, {n: r.statistic for n, r in s.human_panel.results.items()},
                 [(v.judge, {n: r.statistic for n, r in v.vs_majority.results.items()}) for v in s.judges_vs_humans])
                for s in doc.sections]
    assert numbers(by_ls) == numbers(by_app)
    assert read_document(VerdictDocument, app_root).verdict == verdict.verdict
