"""An annotator labels a task in the real Label Studio UI (Debian chromium via Playwright); pull returns it."""

from __future__ import annotations

import json

import pytest

from annotate.codebook import codebook
from annotate.labelstudio import LABELS_RELATIVE_PATH, load_labelstudio_credentials
from annotate.records import HumanLabel
from apps.cli import main
from samples.records import BlindTask
from tests.support.browser import browser

SCREENSHOT = "/tmp/accord-labelstudio-annotator.png"


@pytest.mark.browser
@pytest.mark.labelstudio
def test_annotator_labels_in_the_label_studio_ui_and_pull_returns_it(labelstudio_server, tmp_path, monkeypatch, capsys):  # noqa: F811
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
    assert main(["ls", "push", "--study", str(study), "--url", labelstudio_server.url]) == 0
    login = load_labelstudio_credentials(study)["ui-annotator"]
    project_id = json.loads((study / "labels" / "labelstudio_state.json").read_text())["annotators"]["ui-annotator"]["projects"][
        "identify_trajectory"]["project_id"]

    with browser() as context:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(login.login_url)
        page.fill('input[name="email"]', login.email)
        page.fill('input[name="password"]', login.password)
        page.click('button[type="submit"]')
        page.wait_for_url(f"{labelstudio_server.url}/**")
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
    rows = [HumanLabel.model_validate_json(line) for line in (study / LABELS_RELATIVE_PATH).read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert (row.task_id, row.annotator, row.label, row.first_turn, row.unsure, row.note) == (
        "ui_1", "ui-annotator", "yes", 1, True, "both sources named")
    assert (row.backend, row.role) == ("labelstudio", "independent")
    assert row.seconds_spent is not None and row.seconds_spent > 0
