"""The Label Studio backend against a real Label Studio 1.23.2 server (started by the session fixture).

Labels are made the way an annotator makes them: through the Label Studio API with
the annotator's own token (the browser test does it through the UI), then pulled.
"""

from __future__ import annotations

import json
import stat
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from annotate.labelstudio import (
    CREDENTIALS_RELATIVE_PATH,
    LABELS_RELATIVE_PATH,
    STATE_RELATIVE_PATH,
    LabelStudioBackend,
    display_payload,
    labeling_config,
    load_labelstudio_credentials,
)
from annotate.base import AnnotationBackend, get_backend
from annotate.records import HumanLabel
from apps.cli import main
from samples.errors import InputError
from samples.records import UNIT_KINDS, BlindTask
from samples.schemes import DEFAULT_SCHEME, SCHEMES
from tests.support.servers import free_port

TASKS = [
    BlindTask(task_id="t_traj", kind="identify_trajectory", text="(turns)",
              turns=["[turn 0] search <b>bold</b>", "[turn 1] Wikipedia says 1969 but Britannica says 1971", "[turn 2] ok"]),
    BlindTask(task_id="t_turn", kind="identify_turn", text="(turns)",
              turns=["[turn 0] plan", "[turn 1] I cannot find the 2019 figure"], focus_turn=1),
    BlindTask(task_id="t_esc", kind="escalate_final", text="The answer is 42. <script>alert('x')</script>"),
    BlindTask(task_id="t_cor", kind="correctness", text="References: ['Paris']\nPrediction: Paris"),
    BlindTask(task_id="t_resp", kind="response", text="I am not sure, possibly 12."),
    BlindTask(task_id="t_traj2", kind="identify_trajectory", text="(turns)", turns=["[turn 0] a", "[turn 1] b"]),
]
ORDERS = {
    "ann-a": ["t_traj", "t_turn", "t_esc", "t_cor", "t_resp", "t_traj2"],
    "ann-b": ["t_traj2", "t_resp", "t_cor", "t_esc", "t_turn", "t_traj"],
}


def _write_study(folder: Path, tasks: list[BlindTask] = TASKS, orders: dict[str, list[str]] = ORDERS) -> Path:
    (folder / "blind").mkdir(parents=True, exist_ok=True)
    (folder / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    (folder / "blind" / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    return folder


def _sdk(server_url: str, token: str):
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=server_url, api_key=token)


def _result(label: str, *, first_turn: int | None = None, unsure: bool = False, note: str = "") -> list[dict]:
    items = [{"from_name": "label", "to_name": "display", "type": "choices", "value": {"choices": [label]}}]
    if first_turn is not None:
        items.append({"from_name": "first_turn", "to_name": "display", "type": "number", "value": {"number": first_turn}})
    if unsure:
        items.append({"from_name": "unsure", "to_name": "display", "type": "choices", "value": {"choices": ["unsure"]}})
    if note:
        items.append({"from_name": "note", "to_name": "display", "type": "textarea", "value": {"text": [note]}})
    return items


def _state(study: Path) -> dict:
    return json.loads((study / STATE_RELATIVE_PATH).read_text(encoding="utf-8"))


def _ls_task(study: Path, annotator: str, task_id: str) -> int:
    kind = next(t.kind for t in TASKS if t.task_id == task_id)
    return _state(study)["annotators"][annotator]["projects"][kind]["tasks"][task_id]


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- without a server ----------------------------------------------------------------


@pytest.mark.parametrize("kind", UNIT_KINDS)
def test_labeling_config_offers_exactly_the_scheme_labels(kind):
    root = ET.fromstring(labeling_config(kind, DEFAULT_SCHEME[kind]))
    controls = {element.get("name"): element for element in root.iter() if element.get("name")}
    assert [c.get("value") for c in controls["label"].iter("Choice")] == list(SCHEMES[DEFAULT_SCHEME[kind]].labels)
    assert controls["label"].get("required") == "true"
    assert [c.get("value") for c in controls["unsure"].iter("Choice")] == ["unsure"]
    assert controls["unsure"].get("choice") == "multiple"
    assert controls["note"].tag == "TextArea"
    assert controls["display"].tag == "HyperText"  # display_payload is escaped HTML for every kind
    offered = kind == "identify_trajectory"  # identify_turn's only turn is its focus turn (samples.kinds)
    assert ("first_turn" in controls) == offered
    if offered:
        assert controls["first_turn"].tag == "Number"


def test_display_payload_escapes_agent_markup_and_marks_the_focus_turn():
    turn_task, escalate_task = TASKS[1], TASKS[2]
    shown = display_payload(turn_task)
    assert shown.count("Label this turn") == 1
    assert shown.index("Label this turn") > shown.index("[turn 0] plan")
    assert display_payload(TASKS[0]).count("&lt;b&gt;bold&lt;/b&gt;") == 1
    assert "<b>bold" not in display_payload(TASKS[0])
    # Every kind's text is escaped into the HyperText tag: shown as text, never rendered.
    shown = display_payload(escalate_task)
    assert "The answer is 42. &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in shown and "<script>" not in shown


def test_registered_as_an_annotation_backend(tmp_path):
    backend = get_backend("labelstudio", study=tmp_path, token="a-token", url="http://127.0.0.1:9")
    assert isinstance(backend, AnnotationBackend) and isinstance(backend, LabelStudioBackend)
    with pytest.raises(InputError, match="url 'localhost:8080'"):
        get_backend("labelstudio", study=tmp_path, token="a-token", url="localhost:8080")
    with pytest.raises(InputError, match="is not a folder"):
        get_backend("labelstudio", study=tmp_path / "missing", token="a-token", url="http://127.0.0.1:9")


def test_missing_sdk_gives_a_one_line_install_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "label_studio_sdk", None)
    monkeypatch.setenv("ACCORD_LS_TOKEN", "a-token")
    code, _, err = _cli(capsys, "ls", "status", "--study", str(tmp_path), "--url", "http://127.0.0.1:9")
    assert code == 2 and "pip install 'accord[labelstudio]'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"task_id": "x1", "kind": "escalate_final", "text": "t", "agent": "claude-code"}, "field(s) ['agent'] present"),
        ({"task_id": "x1", "kind": "escalate_final", "text": "t", "judge_label": "yes"}, "field(s) ['judge_label'] present"),
        ({"task_id": "x1", "kind": "poem", "text": "t"}, "field 'kind' is 'poem'"),
    ],
)
def test_push_refuses_bad_task_files_with_one_line(tmp_path, capsys, monkeypatch, line, expected):
    monkeypatch.setenv("ACCORD_LS_TOKEN", "token-never-used")
    study = tmp_path / "study"
    (study / "blind").mkdir(parents=True)
    (study / "blind" / "tasks.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    (study / "blind" / "orders.json").write_text(json.dumps({"a": ["x1"]}), encoding="utf-8")
    code, out, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", f"http://127.0.0.1:{free_port()}")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "tasks.jsonl:1" in err and expected in err


def test_push_refuses_empty_and_duplicated_task_sets(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ACCORD_LS_TOKEN", "token-never-used")
    study = _write_study(tmp_path / "dup", [TASKS[2], TASKS[2]], {"a": ["t_esc"]})
    code, _, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", f"http://127.0.0.1:{free_port()}")
    assert code == 2 and "duplicated task_id 't_esc'" in err and len(err.strip().splitlines()) == 1
    study = _write_study(tmp_path / "empty", [], {"a": ["t_esc"]})
    code, _, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", f"http://127.0.0.1:{free_port()}")
    assert code == 2 and "no tasks" in err and len(err.strip().splitlines()) == 1


def test_server_down_and_missing_token_are_one_line_errors(tmp_path, capsys, monkeypatch):
    study = _write_study(tmp_path / "study")
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.delenv("ACCORD_LS_TOKEN", raising=False)
    code, _, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", url)
    assert code == 2 and "ACCORD_LS_TOKEN" in err and len(err.strip().splitlines()) == 1
    monkeypatch.setenv("ACCORD_LS_TOKEN", "some-token")
    code, _, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", url)
    assert code == 2 and f"Label Studio at {url} is not reachable" in err and len(err.strip().splitlines()) == 1
    assert not (study / STATE_RELATIVE_PATH).exists()
    code, _, err = _cli(capsys, "ls", "pull", "--study", str(study), "--url", url)
    assert code == 2 and "run `accord ls push` first" in err


# -- against the server ----------------------------------------------------------------


@pytest.fixture(scope="module")
def pushed(labelstudio_server, tmp_path_factory) -> Path:  # noqa: F811
    study = _write_study(tmp_path_factory.mktemp("ls-study"))
    backend = LabelStudioBackend(study=study, token=labelstudio_server.token, url=labelstudio_server.url)
    from annotate.tasks import load_orders
    from annotate.tasks import load_tasks

    tasks = load_tasks(study / "blind" / "tasks.jsonl")
    backend.push(tasks, load_orders(study / "blind" / "orders.json", tasks))
    return study


@pytest.mark.labelstudio
def test_push_gives_each_annotator_a_login_and_own_projects_in_their_order(pushed, labelstudio_server):
    credentials_file = pushed / CREDENTIALS_RELATIVE_PATH
    assert stat.S_IMODE(credentials_file.stat().st_mode) == 0o600
    logins = load_labelstudio_credentials(pushed)
    assert sorted(logins) == ["ann-a", "ann-b"]
    state = _state(pushed)
    admin = _sdk(labelstudio_server.url, labelstudio_server.token)
    for name, login in logins.items():
        # The password logs in through the web form, like a person would.
        with httpx.Client(base_url=labelstudio_server.url, follow_redirects=False) as browser:
            browser.get("/user/login/")
            response = browser.post(
                "/user/login/", data={"email": login.email, "password": login.password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
                headers={"Referer": f"{labelstudio_server.url}/user/login/"},
            )
            assert response.status_code == 302
            assert browser.get("/api/current-user/whoami").json()["id"] == login.user_id
        annotator = _sdk(labelstudio_server.url, login.api_token)
        assert annotator.users.whoami().email == login.email
        # The documented limit of open-source Label Studio: every user can list every project,
        # the other annotators' included (the coding app is the strict-blind option).
        others = {p["project_id"] for other, account in state["annotators"].items() if other != name for p in account["projects"].values()}
        assert others <= {project.id for project in annotator.projects.list()}
        projects = state["annotators"][name]["projects"]
        expected_kinds = list(dict.fromkeys(next(t.kind for t in TASKS if t.task_id == tid) for tid in ORDERS[name]))
        assert list(projects) == expected_kinds
        for kind, project in projects.items():
            exported = sorted(
                json.loads(b"".join(admin.projects.exports.download_sync(project["project_id"], export_type="JSON", download_all_tasks=True))),
                key=lambda task: task["id"],
            )
            # Sequential sampling serves tasks by id: the import order is the annotator's order.
            assert [task["data"]["task_id"] for task in exported] == [tid for tid in ORDERS[name] if tid in project["tasks"]]
            for task in exported:
                assert set(task["data"]) == {"task_id", "display"}
                assert task["predictions"] == [] and task["annotations"] == []
            remote = admin.projects.get(project["project_id"])
            assert remote.show_collab_predictions is False
            assert remote.sampling == "Sequential sampling"
            assert "identify" in remote.expert_instruction.lower() or kind not in ("identify_turn", "identify_trajectory")


@pytest.mark.labelstudio
def test_push_again_adds_only_missing_tasks_and_recovers_an_interrupted_import(pushed, labelstudio_server):
    from annotate.tasks import load_orders
    from annotate.tasks import load_tasks

    backend = LabelStudioBackend(study=pushed, token=labelstudio_server.token)
    tasks = load_tasks(pushed / "blind" / "tasks.jsonl")
    orders = load_orders(pushed / "blind" / "orders.json", tasks)
    again = backend.push(tasks, orders)
    assert (again.created, again.already_present) == (0, 12)
    extra = BlindTask(task_id="t_esc2", kind="escalate_final", text="Maybe 7; I could not verify it.")
    more = backend.push([*tasks, extra], {name: [*order, "t_esc2"] for name, order in orders.items()})
    assert (more.created, more.already_present) == (2, 12)
    # An import that reached the server but not the state file: the next push must not duplicate it.
    state = _state(pushed)
    project = state["annotators"]["ann-a"]["projects"]["escalate_final"]
    del project["tasks"]["t_esc2"]
    del state["tasks"]["t_esc2"]
    (pushed / STATE_RELATIVE_PATH).write_text(json.dumps(state), encoding="utf-8")
    recovered = backend.push([*tasks, extra], {name: [*order, "t_esc2"] for name, order in orders.items()})
    assert (recovered.created, recovered.already_present) == (0, 14)
    admin = _sdk(labelstudio_server.url, labelstudio_server.token)
    assert admin.projects.get(project["project_id"]).task_number == 2
    assert backend.status().n_tasks == 7


@pytest.mark.labelstudio
def test_pull_builds_the_labels_table_idempotently_and_edits_update_rows(pushed, labelstudio_server, capsys, monkeypatch):  # noqa: F811
    logins = load_labelstudio_credentials(pushed)
    a = _sdk(labelstudio_server.url, logins["ann-a"].api_token)
    b = _sdk(labelstudio_server.url, logins["ann-b"].api_token)
    admin = _sdk(labelstudio_server.url, labelstudio_server.token)
    a.annotations.create(id=_ls_task(pushed, "ann-a", "t_traj"), result=_result("yes", first_turn=1, unsure=True, note="both named"), lead_time=31.5)
    edited = a.annotations.create(id=_ls_task(pushed, "ann-a", "t_esc"), result=_result("no"))
    a.annotations.create(id=_ls_task(pushed, "ann-a", "t_resp"), result=_result("HEDGE"))
    b.annotations.create(id=_ls_task(pushed, "ann-b", "t_esc"), result=_result("yes", note="names the doubt"))
    b.annotations.create(id=_ls_task(pushed, "ann-b", "t_cor"), result=_result("correct"), was_cancelled=True)
    # Not labels: an admin's annotation in ann-b's project, and a first turn given with a 'no'.
    admin.annotations.create(id=_ls_task(pushed, "ann-b", "t_resp"), result=_result("ABSTAIN"))
    b.annotations.create(id=_ls_task(pushed, "ann-b", "t_traj"), result=_result("no", first_turn=0))

    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    code, out, err = _cli(capsys, "ls", "pull", "--study", str(pushed), "--json")
    assert code == 0, err
    first = json.loads(out)
    assert (first["n_labels"], first["added"], first["updated"], first["removed"]) == (4, 4, 0, 0)
    assert len(first["ignored"]) == 2
    assert any("by user" in reason and "'t_resp'" in reason for reason in first["ignored"])
    assert any("Only a 'yes' has a first recognition turn: leave the first turn empty for 'no'." in reason
               for reason in first["ignored"])
    table = pushed / LABELS_RELATIVE_PATH
    rows = {(row.task_id, row.annotator): row for row in map(HumanLabel.model_validate_json, table.read_text().splitlines())}
    assert sorted(rows) == [("t_esc", "ann-a"), ("t_esc", "ann-b"), ("t_resp", "ann-a"), ("t_traj", "ann-a")]
    traj = rows[("t_traj", "ann-a")]
    assert (traj.label, traj.first_turn, traj.unsure, traj.note, traj.seconds_spent) == ("yes", 1, True, "both named", 31.5)
    assert (traj.backend, traj.role) == ("labelstudio", "independent")
    assert rows[("t_esc", "ann-b")].note == "names the doubt" and rows[("t_esc", "ann-b")].first_turn is None
    assert rows[("t_resp", "ann-a")].label == "HEDGE"
    before = table.read_bytes()

    code, out, _ = _cli(capsys, "ls", "pull", "--study", str(pushed), "--json")
    assert code == 0 and json.loads(out)["unchanged"] == 4
    assert table.read_bytes() == before

    a.annotations.update(id=edited.id, result=_result("yes", unsure=True))
    code, out, _ = _cli(capsys, "ls", "pull", "--study", str(pushed), "--json")
    second = json.loads(out)
    assert (second["n_labels"], second["added"], second["updated"], second["unchanged"]) == (4, 0, 1, 3)
    after = {(row.task_id, row.annotator): row for row in map(HumanLabel.model_validate_json, table.read_text().splitlines())}
    changed = after[("t_esc", "ann-a")]
    assert (changed.label, changed.unsure) == ("yes", True)
    assert changed.created_at == rows[("t_esc", "ann-a")].created_at < changed.updated_at

    code, out, _ = _cli(capsys, "ls", "status", "--study", str(pushed), "--json")
    status = json.loads(out)
    # Status counts tasks with a submitted annotation in each annotator's projects (the admin's one included).
    assert status["labelled"] == {"ann-a": 3, "ann-b": 3}


@pytest.mark.labelstudio
def test_bad_token_and_missing_project_are_one_line_errors(labelstudio_server, tmp_path, capsys, monkeypatch):  # noqa: F811
    study = _write_study(tmp_path / "study", TASKS[2:3], {"solo": ["t_esc"]})
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    code, out, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", labelstudio_server.url)
    assert code == 0, err
    assert "labelstudio_annotators.json" in out

    monkeypatch.setenv("ACCORD_LS_TOKEN", "0123456789abcdef0123456789abcdef01234567")
    for action in ("pull", "status", "push"):
        code, _, err = _cli(capsys, "ls", action, "--study", str(study))
        assert code == 2 and "refused the API token" in err and len(err.strip().splitlines()) == 1

    project_id = _state(study)["annotators"]["solo"]["projects"]["escalate_final"]["project_id"]
    _sdk(labelstudio_server.url, labelstudio_server.token).projects.delete(project_id)
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    for action in ("pull", "status", "push"):
        code, _, err = _cli(capsys, "ls", action, "--study", str(study))
        assert code == 2 and f"project {project_id} of annotator 'solo'" in err and "not found" in err
        assert len(err.strip().splitlines()) == 1
