"""Label Studio in a real browser (Debian chromium via Playwright): an annotator labels a task and pull returns it;
another annotator, signed in, can neither list nor open the first one's project, task or label."""

from __future__ import annotations

import json

import pytest

from annotate.codebook import codebook
from annotate.labelstudio import load_labelstudio_credentials, load_labelstudio_state
from apps.cli import main
from samples.layout import StudyLayout
from samples.records import BlindTask, HumanLabel
from tests.support.browser import browser

SCREENSHOT = "/tmp/accord-labelstudio-annotator.png"
BLIND_SCREENSHOT = "/tmp/accord-labelstudio-other-annotator.png"


def _sign_in(page, url: str, email: str, password: str) -> None:
    page.goto(f"{url}/user/login/")
    page.fill('input[name="email"]', email)
    page.fill('input[name="password"]', password)
    page.click('button[type="submit"]')
    page.wait_for_url(f"{url}/**")


@pytest.mark.browser
@pytest.mark.labelstudio
def test_annotator_labels_in_the_label_studio_ui_and_pull_returns_it(labelstudio_server, tmp_path, monkeypatch, capsys):
    study = tmp_path / "study"
    (study / "blind").mkdir(parents=True)
    tasks = [
        BlindTask(task_id="ui_1", kind="identify_trajectory", text="(turns)",
                  turns=["[turn 0] Let me search.", "[turn 1] Wikipedia says 1969 but <i>Britannica</i> says 1971.", "[turn 2] Going with 1969."]),
        BlindTask(task_id="ui_2", kind="identify_trajectory", text="(turns)", turns=["[turn 0] plan", "[turn 1] done"]),
    ]
    (study / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    (study / "blind" / "orders.json").write_text(json.dumps({"ui-annotator": ["ui_1", "ui_2"]}), encoding="utf-8")
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", labelstudio_server.admin_password)
    assert main(["ls", "push", "--study", str(study), "--url", labelstudio_server.url]) == 0
    login = load_labelstudio_credentials(study).annotators["ui-annotator"]
    project_id = load_labelstudio_state(study).annotators["ui-annotator"].projects["identify_trajectory"].project_id

    with browser() as context:
        page = context.new_page()
        page.set_default_timeout(120_000)
        _sign_in(page, labelstudio_server.url, login.email, login.password)
        page.goto(f"{labelstudio_server.url}/projects/{project_id}/data?labeling=1")
        # The codebook opens as the instructions pop-up, which blocks clicks until closed.
        page.get_by_text("Labeling Instructions").wait_for()
        assert page.get_by_role("heading", name=codebook("identify").splitlines()[0].lstrip("# ")).count() == 1
        page.keyboard.press("Escape")
        # The first task of the annotator's order; the agent's markup shows as text.
        page.get_by_text("[turn 1] Wikipedia says 1969 but <i>Britannica</i> says 1971.").wait_for()
        page.locator('input[type=radio][name="yes"]').check()
        page.locator("input[type=number]").fill("1")
        page.locator('input[type=checkbox][name="unsure"]').check()
        page.locator("textarea").first.fill("both sources named")
        page.screenshot(path=SCREENSHOT)
        page.get_by_test_id("bottombar-submit-button").click()
        page.get_by_text("Annotation saved successfully", exact=True).wait_for()
        # Sequential order: the next task shown is the second one of the order.
        page.get_by_text("[turn 1] done").wait_for()

    capsys.readouterr()
    assert main(["ls", "pull", "--study", str(study), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["n_labels"], report["ignored"]) == (1, [])
    rows = [HumanLabel.model_validate_json(line) for line in StudyLayout.of(study).labelstudio_labels.read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row.task_id, row.annotator, row.label, row.first_turn, row.unsure, row.note) == (
        "ui_1", "ui-annotator", "yes", 1, True, "both sources named")
    assert (row.backend, row.role) == ("labelstudio", "independent")
    assert row.seconds_spent is not None and row.seconds_spent > 0


@pytest.mark.browser
@pytest.mark.labelstudio
def test_another_annotator_signed_in_cannot_list_or_open_the_first_ones_project_task_or_label(labelstudio_server, tmp_path):
    from label_studio_sdk import LabelStudio

    from tests.annotate.test_labelstudio import _backend

    task = BlindTask(task_id="blind_1", kind="escalate_final", text="I think it is 1969, but I could not verify it.")
    study = tmp_path / "blind-study"
    (study / "blind").mkdir(parents=True)
    StudyLayout.of(study).tasks.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    orders = {"ui-one": ["blind_1"], "ui-two": ["blind_1"]}
    _backend(labelstudio_server, study).push([task], orders)
    state, logins = load_labelstudio_state(study), load_labelstudio_credentials(study).annotators
    first = state.annotators["ui-one"].projects["escalate_final"]
    first_task = first.tasks["blind_1"]
    secret = "ui-one says the date is unverified"
    label = LabelStudio(base_url=labelstudio_server.url, api_key=logins["ui-one"].api_token).annotations.create(
        id=first_task, result=[
            {"from_name": "label", "to_name": "display", "type": "choices", "value": {"choices": ["yes"]}},
            {"from_name": "note", "to_name": "display", "type": "textarea", "value": {"text": [secret]}},
        ],
    )
    titles = {}
    for name in orders:
        remote = LabelStudio(base_url=labelstudio_server.url, api_key=logins[name].api_token).projects.get(
            state.annotators[name].projects["escalate_final"].project_id)
        titles[name] = remote.title
    url = labelstudio_server.url

    with browser() as context:
        page = context.new_page()
        page.set_default_timeout(120_000)
        statuses: dict[str, int] = {}
        page.on("response", lambda response: statuses.__setitem__(response.url.split("?")[0].rstrip("/"), response.status))
        _sign_in(page, url, logins["ui-two"].email, logins["ui-two"].password)
        # The project list shows annotator two's own project and not annotator one's.
        page.goto(f"{url}/projects/")
        page.get_by_text(titles["ui-two"]).wait_for()
        assert page.get_by_text(titles["ui-one"]).count() == 0
        # Annotator one's project and task URLs: the server refuses what the page asks for.
        page.goto(f"{url}/projects/{first.project_id}/data?task={first_task}")
        page.wait_for_load_state("networkidle")
        assert statuses.get(f"{url}/api/projects/{first.project_id}") in (403, 404), statuses
        page.screenshot(path=BLIND_SCREENSHOT)
        assert secret not in page.content() and titles["ui-one"] not in page.content()
        for path, refused in ((f"/api/projects/{first.project_id}", (404,)), (f"/api/tasks/{first_task}", (404,)),
                              (f"/api/tasks/{first_task}/annotations/", (404,)), (f"/api/annotations/{label.id}", (403,))):
            response = page.goto(f"{url}{path}")
            assert response.status in refused, (path, response.status)
            assert secret not in page.content()

    with browser() as context:
        # The control: annotator one, signed in the same way, sees their project and their label.
        page = context.new_page()
        page.set_default_timeout(120_000)
        _sign_in(page, url, logins["ui-one"].email, logins["ui-one"].password)
        page.goto(f"{url}/projects/")
        page.get_by_text(titles["ui-one"]).wait_for()
        assert page.get_by_text(titles["ui-two"]).count() == 0
        response = page.goto(f"{url}/api/annotations/{label.id}")
        assert response.status == 200 and secret in page.content()
