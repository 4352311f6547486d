"""The Label Studio backend against a real Label Studio 1.23.2 server (started by the session fixture).

Labels are made the way an annotator makes them: through the Label Studio API with
the annotator's own token (the browser test does it through the UI), then pulled.
Blinding is checked the way an annotator would try to break it: with their own
token and session, by listing projects and opening other ids.
"""

from __future__ import annotations

import functools
import hashlib
import json
import ssl
import stat
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from annotate.base import AnnotationBackend, get_backend
from annotate.labelstudio import (
    LabelStudioBackend,
    LabelStudioSettings,
    display_payload,
    labeling_config,
    load_labelstudio_credentials,
)
from apps.cli import main
from samples.errors import InputError
from samples.kinds import DEFAULT_SCHEME
from samples.layout import StudyLayout
from samples.records import UNIT_KINDS, BlindTask, HumanLabel
from samples.schemes import SCHEMES
from tests.support.labelstudio import REPO, running_server
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


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for the tests' clients: httpx loads the CA bundle for each client otherwise (~20 ms of CPU)."""
    return httpx.create_ssl_context()


def _sdk(server_url: str, token: str):
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=server_url, api_key=token, timeout=60,
                       httpx_client=httpx.Client(timeout=60, follow_redirects=True, verify=_tls()))


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
    return json.loads(StudyLayout.of(study).labelstudio_state.read_text(encoding="utf-8"))


def _rows(study: Path) -> dict[tuple[str, str], HumanLabel]:
    lines = StudyLayout.of(study).labelstudio_labels.read_text(encoding="utf-8").splitlines()
    return {(row.task_id, row.annotator): row for row in map(HumanLabel.model_validate_json, lines)}


def _annotator(server, study: Path, name: str):
    return _sdk(server.url, load_labelstudio_credentials(study).annotators[name].api_token)


def _owner(server, study: Path, name: str):
    return _sdk(server.url, load_labelstudio_credentials(study).owners[name].api_token)


def _http(server, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Token {token}"}, verify=_tls())


def _backend(server, study: Path) -> LabelStudioBackend:
    return LabelStudioBackend(study=study, token=server.token, url=server.url, admin_password=server.admin_password)


def _push(server, study: Path):
    from annotate.tasks import load_orders, load_tasks

    layout = StudyLayout.of(study)
    tasks = load_tasks(layout.tasks)
    return _backend(server, study).push(tasks, load_orders(layout.orders, tasks))


def _sign_in(server, email: str, password: str) -> httpx.Client:
    """A browser-like session through Label Studio's login form, as a person signs in."""
    browser = httpx.Client(base_url=server.url, follow_redirects=False, verify=_tls())
    browser.get("/user/login/")
    response = browser.post(
        "/user/login/", data={"email": email, "password": password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
        headers={"Referer": f"{server.url}/user/login/"},
    )
    assert response.status_code == 302
    return browser


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
    assert not StudyLayout.of(study).labelstudio_state.exists()
    code, _, err = _cli(capsys, "ls", "pull", "--study", str(study), "--url", url)
    assert code == 2 and "run `accord ls push` first" in err


def test_settings_model_validates_and_reads_secrets_from_the_environment():
    settings = LabelStudioSettings.model_validate({"url": "http://127.0.0.1:8080/", "token_env": "MY_LS_TOKEN"})
    assert settings.url == "http://127.0.0.1:8080"
    options = settings.backend_options({"MY_LS_TOKEN": " tok-123 ", "ACCORD_LS_ADMIN_PASSWORD": "pw"})
    assert options == {"url": "http://127.0.0.1:8080", "token": "tok-123", "admin_password": "pw", "timeout": 120.0}
    assert settings.backend_options({"MY_LS_TOKEN": "t"})["admin_password"] is None
    with pytest.raises(InputError, match="set MY_LS_TOKEN to the API token"):
        settings.backend_options({})
    with pytest.raises(ValidationError, match="'localhost:8080' is not a server base URL"):
        LabelStudioSettings(url="localhost:8080")
    with pytest.raises(ValidationError, match="token_env"):
        LabelStudioSettings(token_env="not a variable")
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        LabelStudioSettings.model_validate({"token": "secret-in-the-study-file"})
    with pytest.raises(ValidationError, match="timeout_s"):
        LabelStudioSettings(timeout_s=0)


def test_settings_build_the_backend_through_the_registry(tmp_path, monkeypatch):
    settings = LabelStudioSettings(url="http://127.0.0.1:9")
    backend = get_backend("labelstudio", study=tmp_path, **settings.backend_options({"ACCORD_LS_TOKEN": "a-token"}))
    assert isinstance(backend, LabelStudioBackend) and backend.url == "http://127.0.0.1:9" and backend.timeout == 120.0
    # A study file without a url follows ACCORD_LS_URL, as `accord ls` does.
    monkeypatch.setenv("ACCORD_LS_URL", "http://127.0.0.1:10/")
    backend = get_backend("labelstudio", study=tmp_path, **LabelStudioSettings().backend_options({"ACCORD_LS_TOKEN": "t"}))
    assert backend.url == "http://127.0.0.1:10"


# -- against the server ----------------------------------------------------------------


@pytest.fixture(scope="module")
def pushed(labelstudio_server, tmp_path_factory) -> Path:
    study = _write_study(tmp_path_factory.mktemp("ls-study"))
    _push(labelstudio_server, study)
    return study


@pytest.mark.labelstudio
def test_push_gives_each_annotator_a_login_an_organisation_and_only_their_projects(pushed, labelstudio_server):
    layout = StudyLayout.of(pushed)
    assert stat.S_IMODE(layout.labelstudio_credentials.stat().st_mode) == 0o600
    credentials = load_labelstudio_credentials(pushed)
    assert sorted(credentials.annotators) == sorted(credentials.owners) == ["ann-a", "ann-b"]
    state = _state(pushed)
    organizations = {name: account["organization_id"] for name, account in state["annotators"].items()}
    assert len(set(organizations.values())) == 2
    for name, login in credentials.annotators.items():
        # The password logs in through the web form, like a person would, into their own organisation.
        me = _sign_in(labelstudio_server, login.email, login.password).get("/api/current-user/whoami").json()
        assert (me["id"], me["active_organization"]) == (login.user_id, organizations[name])
        annotator = _sdk(labelstudio_server.url, login.api_token)
        assert annotator.users.whoami().email == login.email
        projects = state["annotators"][name]["projects"]
        # The project list holds this annotator's projects and nothing else.
        assert sorted(project.id for project in annotator.projects.list()) == sorted(p["project_id"] for p in projects.values())
        expected_kinds = list(dict.fromkeys(next(t.kind for t in TASKS if t.task_id == tid) for tid in ORDERS[name]))
        assert list(projects) == expected_kinds
        owner = _owner(labelstudio_server, pushed, name)
        for kind, project in projects.items():
            exported = sorted(
                json.loads(b"".join(owner.projects.exports.download_sync(project["project_id"], export_type="JSON", download_all_tasks=True))),
                key=lambda task: task["id"],
            )
            # Sequential sampling serves tasks by id: the import order is the annotator's order.
            assert [task["data"]["task_id"] for task in exported] == [tid for tid in ORDERS[name] if tid in project["tasks"]]
            for task in exported:
                assert set(task["data"]) == {"task_id", "display"}
                assert task["predictions"] == [] and task["annotations"] == []
            remote = owner.projects.get(project["project_id"])
            assert remote.show_collab_predictions is False
            assert remote.sampling == "Sequential sampling"
            assert "identify" in remote.expert_instruction.lower() or kind not in ("identify_turn", "identify_trajectory")


@pytest.mark.labelstudio
def test_no_annotator_can_list_or_open_another_annotators_projects_or_labels(labelstudio_server, tmp_path):
    study = _write_study(tmp_path / "blind", TASKS[2:3], {"one": ["t_esc"], "two": ["t_esc"]})
    _push(labelstudio_server, study)
    credentials = load_labelstudio_credentials(study)
    project = _state(study)["annotators"]["one"]["projects"]["escalate_final"]
    task = project["tasks"]["t_esc"]
    label = _annotator(labelstudio_server, study, "one").annotations.create(id=task, result=_result("yes", note="one's secret note"))
    one = _http(labelstudio_server, credentials.annotators["one"].api_token)
    assert one.get(f"/api/annotations/{label.id}").json()["result"][1]["value"]["text"] == ["one's secret note"]
    # Unfinished work, as the labelling UI autosaves it.
    draft = one.post(f"/api/tasks/{task}/drafts", json={"result": _result("no", note="one's secret draft")})
    assert draft.status_code == 201 and "secret draft" in one.get(f"/api/tasks/{task}/drafts").text
    organization = _state(study)["annotators"]["one"]["organization_id"]
    # Every way in with annotator two's token, the server admin's, and a stranger's who signed up through the invite link.
    stranger = _invite_signup(labelstudio_server)
    intruders = {
        "two": _http(labelstudio_server, credentials.annotators["two"].api_token),
        "admin": _http(labelstudio_server, labelstudio_server.token),
    }
    # Before the next push the stranger's account is not sealed out: Label Studio opens any
    # annotation to a user without a revoked membership in its organisation.
    assert stranger.get(f"/api/annotations/{label.id}").status_code == 200
    _push(labelstudio_server, study)
    intruders["stranger"] = stranger
    for who, client in intruders.items():
        listed = client.get("/api/projects", params={"page_size": 1000}).json()["results"]
        assert project["project_id"] not in {p["id"] for p in listed}, who
        for path in (f"/api/projects/{project['project_id']}", f"/api/tasks/{task}", f"/api/tasks/{task}/annotations/",
                     f"/api/projects/{project['project_id']}/export?exportType=JSON", f"/api/annotations/{label.id}",
                     f"/api/tasks?project={project['project_id']}", f"/api/projects/{project['project_id']}/next/",
                     f"/api/tasks/{task}/drafts", f"/api/drafts/{draft.json()['id']}", f"/api/organizations/{organization}/memberships"):
            response = client.get(path)
            assert response.status_code in (403, 404), (who, path, response.status_code)
            assert "secret" not in response.text
        assert client.post(f"/api/tasks/{task}/annotations/", json={"result": _result("no")}).status_code in (403, 404), who
        assert client.post(f"/api/tasks/{task}/drafts", json={"result": _result("no")}).status_code in (403, 404), who
    assert one.get(f"/api/annotations/{label.id}").status_code == 200
    # Nor can annotator two move into annotator one's organisation on the servers accord starts
    # (scripts/labelstudio_hardening; stock 1.23.2 allows it, see the known-limit test).
    two = credentials.annotators["two"]
    moved = intruders["two"].patch(f"/api/users/{two.user_id}", json={"active_organization": _state(study)["annotators"]["one"]["organization_id"]})
    assert moved.status_code == 405 and "active_organization" in moved.text
    assert intruders["two"].get("/api/current-user/whoami").json()["active_organization"] == _state(study)["annotators"]["two"]["organization_id"]
    assert intruders["two"].get(f"/api/tasks/{task}/annotations/").status_code == 404


def _invite_signup(server) -> httpx.Client:
    """An account made the ordinary way, through the admin organisation's invite link; its API token client."""
    import secrets

    invite = httpx.get(f"{server.url}/api/invite", headers={"Authorization": f"Token {server.token}"}).json()["token"]
    browser = httpx.Client(base_url=server.url, follow_redirects=False, verify=_tls())
    signup = f"/user/signup/?token={invite}"
    browser.get(signup)
    email = f"stranger-{secrets.token_hex(3)}@accord.test"
    response = browser.post(signup, headers={"Referer": f"{server.url}{signup}"},
                            data={"email": email, "password": secrets.token_urlsafe(12), "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
    assert response.status_code == 302
    token = browser.get("/api/current-user/token").json()["token"]
    return _http(server, token)


@pytest.mark.labelstudio
def test_known_limit_on_stock_settings_an_annotator_who_edits_their_organization_reads_its_annotations(tmp_path):
    """Evidence for README's "Label Studio blinding": what stock 1.23.2 leaves open, and accord's server settings close.

    Any user reads any task's drafts by task id. ``PATCH /api/users/{own id}``
    accepts any existing ``active_organization``; the project list and
    ``/api/tasks/{id}/annotations/`` then filter by it alone. Every other object
    stays closed by the revoked membership, and signing in again returns the user
    to their own organisation. A server started by ``scripts/labelstudio.sh``
    refuses both (the isolation test above).
    """
    study = _write_study(tmp_path / "limit", TASKS[2:3], {"one": ["t_esc"], "two": ["t_esc"]})
    with running_server(pid_file=REPO / ".run" / "labelstudio-stock-test.pid", hardened=False) as server:
        _push(server, study)
        credentials, state = load_labelstudio_credentials(study), _state(study)
        project = state["annotators"]["one"]["projects"]["escalate_final"]
        task = project["tasks"]["t_esc"]
        label = _annotator(server, study, "one").annotations.create(id=task, result=_result("yes"))
        two_login = credentials.annotators["two"]
        two = _http(server, two_login.api_token)
        _http(server, credentials.annotators["one"].api_token).post(f"/api/tasks/{task}/drafts", json={"result": _result("no", note="draft")})
        drafts = two.get(f"/api/tasks/{task}/drafts")
        assert drafts.status_code == 200 and drafts.json()[0]["result"][1]["value"]["text"] == ["draft"]
        assert two.get(f"/api/tasks/{task}/annotations/").status_code == 404
        switched = two.patch(f"/api/users/{two_login.user_id}", json={"active_organization": state["annotators"]["one"]["organization_id"]})
        assert switched.status_code == 200
        assert project["project_id"] in {p["id"] for p in two.get("/api/projects").json()["results"]}
        leaked = two.get(f"/api/tasks/{task}/annotations/")
        assert leaked.status_code == 200 and leaked.json()[0]["result"][0]["value"]["choices"] == ["yes"]
        for path in (f"/api/projects/{project['project_id']}", f"/api/tasks/{task}", f"/api/annotations/{label.id}",
                     f"/api/projects/{project['project_id']}/export?exportType=JSON"):
            assert two.get(path).status_code == 403, path
        again = _sign_in(server, two_login.email, two_login.password).get("/api/current-user/whoami").json()
        assert again["active_organization"] == state["annotators"]["two"]["organization_id"]
        assert project["project_id"] not in {p["id"] for p in two.get("/api/projects").json()["results"]}


@pytest.mark.labelstudio
def test_push_again_adds_only_missing_tasks_and_recovers_an_interrupted_import(pushed, labelstudio_server):
    from annotate.tasks import load_orders, load_tasks

    backend = _backend(labelstudio_server, pushed)
    layout = StudyLayout.of(pushed)
    tasks = load_tasks(layout.tasks)
    orders = load_orders(layout.orders, tasks)
    accounts = load_labelstudio_credentials(pushed)
    again = backend.push(tasks, orders)
    assert (again.created, again.already_present, again.details["new_accounts"]) == (0, 12, [])
    assert load_labelstudio_credentials(pushed) == accounts
    extra = BlindTask(task_id="t_esc2", kind="escalate_final", text="Maybe 7; I could not verify it.")
    more = backend.push([*tasks, extra], {name: [*order, "t_esc2"] for name, order in orders.items()})
    assert (more.created, more.already_present) == (2, 12)
    # An import that reached the server but not the state file: the next push must not duplicate it.
    state = _state(pushed)
    project = state["annotators"]["ann-a"]["projects"]["escalate_final"]
    del project["tasks"]["t_esc2"]
    del state["tasks"]["t_esc2"]
    layout.labelstudio_state.write_text(json.dumps(state), encoding="utf-8")
    recovered = backend.push([*tasks, extra], {name: [*order, "t_esc2"] for name, order in orders.items()})
    assert (recovered.created, recovered.already_present) == (0, 14)
    assert _owner(labelstudio_server, pushed, "ann-a").projects.get(project["project_id"]).task_number == 2
    assert backend.status().n_tasks == 7


@pytest.mark.labelstudio
def test_an_annotator_added_later_gets_an_account_and_is_sealed_from_the_others(labelstudio_server, tmp_path):
    study = _write_study(tmp_path / "late", TASKS[2:4], {"first": ["t_esc", "t_cor"]})
    _push(labelstudio_server, study)
    first = _state(study)["annotators"]["first"]
    first_label = _annotator(labelstudio_server, study, "first").annotations.create(
        id=first["projects"]["escalate_final"]["tasks"]["t_esc"], result=_result("no"))
    orders = {"first": ["t_esc", "t_cor"], "late": ["t_cor", "t_esc"]}
    (study / "blind" / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    report = _push(labelstudio_server, study)
    assert (report.created, report.already_present, report.details["new_accounts"]) == (2, 2, ["late"])
    state = _state(study)
    assert state["annotators"]["first"] == {**first, "projects": state["annotators"]["first"]["projects"]}
    assert state["annotators"]["first"]["projects"] == first["projects"]
    late = _http(labelstudio_server, load_labelstudio_credentials(study).annotators["late"].api_token)
    assert late.get(f"/api/annotations/{first_label.id}").status_code == 403
    late_project = state["annotators"]["late"]["projects"]["correctness"]
    late_label = late.post(f"/api/tasks/{late_project['tasks']['t_cor']}/annotations/", json={"result": _result("correct")})
    assert late_label.status_code == 201
    assert _http(labelstudio_server, load_labelstudio_credentials(study).annotators["first"].api_token).get(
        f"/api/annotations/{late_label.json()['id']}").status_code == 403
    again = _push(labelstudio_server, study)
    assert (again.created, again.details["new_accounts"], again.details["revoked_memberships"]) == (0, [], 0)


@pytest.mark.labelstudio
def test_pull_builds_the_labels_table_idempotently_and_edits_update_rows(pushed, labelstudio_server, capsys, monkeypatch):
    a = _annotator(labelstudio_server, pushed, "ann-a")
    b = _annotator(labelstudio_server, pushed, "ann-b")
    a.annotations.create(id=_ls_task(pushed, "ann-a", "t_traj"), result=_result("yes", first_turn=1, unsure=True, note="both named"), lead_time=31.5)
    edited = a.annotations.create(id=_ls_task(pushed, "ann-a", "t_esc"), result=_result("no"))
    a.annotations.create(id=_ls_task(pushed, "ann-a", "t_resp"), result=_result("HEDGE"))
    b.annotations.create(id=_ls_task(pushed, "ann-b", "t_esc"), result=_result("yes", note="names the doubt"))
    b.annotations.create(id=_ls_task(pushed, "ann-b", "t_cor"), result=_result("correct"), was_cancelled=True)
    # Not labels: the organisation owner's annotation in ann-b's project, and a first turn given with a 'no'.
    _owner(labelstudio_server, pushed, "ann-b").annotations.create(id=_ls_task(pushed, "ann-b", "t_resp"), result=_result("ABSTAIN"))
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
    table = StudyLayout.of(pushed).labelstudio_labels
    rows = _rows(pushed)
    assert sorted(rows) == [("t_esc", "ann-a"), ("t_esc", "ann-b"), ("t_resp", "ann-a"), ("t_traj", "ann-a")]
    traj = rows[("t_traj", "ann-a")]
    assert (traj.label, traj.first_turn, traj.unsure, traj.note, traj.seconds_spent) == ("yes", 1, True, "both named", 31.5)
    assert (traj.backend, traj.role) == ("labelstudio", "independent")
    assert rows[("t_esc", "ann-b")].note == "names the doubt" and rows[("t_esc", "ann-b")].first_turn is None
    assert rows[("t_resp", "ann-a")].label == "HEDGE"
    # each label carries the hash of the codebook file pushed as its project's instructions
    codebooks = Path(__file__).resolve().parents[2] / "annotate" / "codebook"
    for (task_id, _), row in rows.items():
        scheme = next(DEFAULT_SCHEME[t.kind] for t in TASKS if t.task_id == task_id)
        assert row.codebook_sha256 == hashlib.sha256((codebooks / f"{scheme}.md").read_bytes()).hexdigest()
    before = table.read_bytes()

    code, out, _ = _cli(capsys, "ls", "pull", "--study", str(pushed), "--json")
    assert code == 0 and json.loads(out)["unchanged"] == 4
    assert table.read_bytes() == before

    a.annotations.update(id=edited.id, result=_result("yes", unsure=True))
    code, out, _ = _cli(capsys, "ls", "pull", "--study", str(pushed), "--json")
    second = json.loads(out)
    assert (second["n_labels"], second["added"], second["updated"], second["unchanged"]) == (4, 0, 1, 3)
    after = _rows(pushed)
    changed = after[("t_esc", "ann-a")]
    assert (changed.label, changed.unsure) == ("yes", True)
    assert changed.created_at == rows[("t_esc", "ann-a")].created_at < changed.updated_at

    code, out, _ = _cli(capsys, "ls", "status", "--study", str(pushed), "--json")
    status = json.loads(out)
    # Status counts tasks with a submitted annotation in each annotator's projects (the owner's one included);
    # assigned is every task of the annotator's order (plus t_esc2 once the push test added it).
    assert status["labelled"] == {"ann-a": 3, "ann-b": 3}
    extra = int("t_esc2" in _state(pushed)["tasks"])
    assert status["assigned"] == {name: len(order) + extra for name, order in ORDERS.items()}


@pytest.mark.labelstudio
def test_bad_token_and_missing_admin_password_are_one_line_errors(labelstudio_server, tmp_path, capsys, monkeypatch):
    study = _write_study(tmp_path / "study", TASKS[2:3], {"solo": ["t_esc"]})
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    monkeypatch.delenv("ACCORD_LS_ADMIN_PASSWORD", raising=False)
    code, _, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", labelstudio_server.url)
    assert code == 2 and "set ACCORD_LS_ADMIN_PASSWORD" in err and labelstudio_server.admin_email in err
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", "not-the-password")
    code, _, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", labelstudio_server.url)
    assert code == 2 and "refused the login of the admin account" in err and len(err.strip().splitlines()) == 1
    assert not StudyLayout.of(study).labelstudio_state.exists()
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", labelstudio_server.admin_password)
    code, out, err = _cli(capsys, "ls", "push", "--study", str(study), "--url", labelstudio_server.url)
    assert code == 0, err
    assert "labelstudio_annotators.json" in out

    monkeypatch.setenv("ACCORD_LS_TOKEN", "0123456789abcdef0123456789abcdef01234567")
    for action in ("pull", "status", "push"):
        code, _, err = _cli(capsys, "ls", action, "--study", str(study))
        assert code == 2 and "refused the API token" in err and len(err.strip().splitlines()) == 1


@pytest.mark.labelstudio
def test_deleted_project_and_lost_task_lose_nothing_pulled_and_push_recreates_them(labelstudio_server, tmp_path, capsys, monkeypatch):
    study = _write_study(tmp_path / "faults", TASKS[2:4], {"solo": ["t_esc", "t_cor"]})
    _push(labelstudio_server, study)
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", labelstudio_server.admin_password)
    solo = _annotator(labelstudio_server, study, "solo")
    projects = _state(study)["annotators"]["solo"]["projects"]
    solo.annotations.create(id=projects["escalate_final"]["tasks"]["t_esc"], result=_result("yes", note="kept"))
    solo.annotations.create(id=projects["correctness"]["tasks"]["t_cor"], result=_result("correct"))
    assert _cli(capsys, "ls", "pull", "--study", str(study))[0] == 0
    table = StudyLayout.of(study).labelstudio_labels
    pulled = table.read_bytes()
    owner = _owner(labelstudio_server, study, "solo")

    # A task deleted in Label Studio: pull names it and writes nothing.
    lost_task = projects["correctness"]["tasks"]["t_cor"]
    owner.tasks.delete(lost_task)
    code, _, err = _cli(capsys, "ls", "pull", "--study", str(study))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"project {projects['correctness']['project_id']} of annotator 'solo' (correctness) has lost 1 task(s): 't_cor' (Label Studio task {lost_task})" in err
    assert labelstudio_server.url in err and "nothing was written" in err
    assert table.read_bytes() == pulled

    # A deleted project: pull and status name it; the table is untouched.
    project_id = projects["escalate_final"]["project_id"]
    owner.projects.delete(project_id)
    for action in ("pull", "status"):
        code, _, err = _cli(capsys, "ls", action, "--study", str(study))
        assert code == 2 and f"project {project_id} of annotator 'solo'" in err and "not found" in err
        assert len(err.strip().splitlines()) == 1
    assert table.read_bytes() == pulled

    # Push re-creates both; the next pull resumes and keeps the labels the server lost.
    code, out, err = _cli(capsys, "ls", "push", "--study", str(study), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["created"] == 2 and report["recreated_projects"] == [f"solo: escalate_final (project {project_id})"]
    code, out, err = _cli(capsys, "ls", "pull", "--study", str(study), "--json")
    assert code == 0, err
    assert (json.loads(out)["kept"], json.loads(out)["removed"]) == (2, 0)
    assert table.read_bytes() == pulled
    # Relabelled in the new project, the new label replaces the kept one.
    state = _state(study)["annotators"]["solo"]["projects"]
    assert state["escalate_final"]["project_id"] != project_id
    solo.annotations.create(id=state["escalate_final"]["tasks"]["t_esc"], result=_result("no"))
    code, out, _ = _cli(capsys, "ls", "pull", "--study", str(study), "--json")
    assert (json.loads(out)["updated"], json.loads(out)["kept"]) == (1, 1)
    assert _rows(study)[("t_esc", "solo")].label == "no"


@pytest.mark.labelstudio
def test_server_down_during_pull_loses_nothing_and_the_next_pull_resumes(labelstudio_server, tmp_path, capsys, monkeypatch):
    study = _write_study(tmp_path / "down", TASKS[2:4], {"solo": ["t_esc", "t_cor"]})
    pid_file = REPO / ".run" / "labelstudio-down-test.pid"
    with running_server(pid_file=pid_file, keep_data=True) as server:
        _push(server, study)
        projects = _state(study)["annotators"]["solo"]["projects"]
        solo = _annotator(server, study, "solo")
        solo.annotations.create(id=projects["escalate_final"]["tasks"]["t_esc"], result=_result("yes"))
        monkeypatch.setenv("ACCORD_LS_TOKEN", server.token)
        assert _cli(capsys, "ls", "pull", "--study", str(study))[0] == 0
    table = StudyLayout.of(study).labelstudio_labels
    pulled = table.read_bytes()
    try:
        for action in ("pull", "status"):
            code, out, err = _cli(capsys, "ls", action, "--study", str(study))
            assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
            assert f"Label Studio at {server.url} is not reachable" in err
        assert table.read_bytes() == pulled
        with running_server(pid_file=pid_file, server=server):
            _annotator(server, study, "solo").annotations.create(id=projects["correctness"]["tasks"]["t_cor"], result=_result("incorrect"))
            code, out, err = _cli(capsys, "ls", "pull", "--study", str(study), "--json")
            assert code == 0, err
            assert (json.loads(out)["added"], json.loads(out)["unchanged"]) == (1, 1)
        assert sorted(_rows(study)) == [("t_cor", "solo"), ("t_esc", "solo")]
    finally:
        import shutil

        shutil.rmtree(server.data_dir, ignore_errors=True)
