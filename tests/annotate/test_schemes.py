"""Any scheme for any unit kind: a study codes `response` units as `decision` (Aggarwal: ANSWER / CALL_TOOL /
DECLINE) in the coding app and in Label Studio, with that scheme's codebook; a new scheme registers like the built-ins.

The browser tests drive Debian's chromium through Playwright: a person codes a released Aggarwal output
(a tool call) as CALL_TOOL in each backend, and the label comes back in the study's labels table.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from annotate.app_backend import AnnotatorSession, AppBackend
from annotate.codebook import codebook, codebook_sha256, register_codebook
from annotate.labelstudio import labeling_config
from apps.cli import main
from samples.errors import InputError
from samples.kinds import check_schemes, scheme_for
from samples.layout import StudyLayout
from samples.records import BlindTask, HumanLabel
from samples.schemes import SCHEMES, LabelScheme, register_scheme
from tests.annotate.helpers import raw, write_study

# One released output of the Aggarwal scramfull file (anthropic/claude-haiku-4.5 chose the tool), shortened.
TOOL_CALL = ("<answer>\nDECISION: CALL_TOOL\nPROBABILITY_YES: NA\nALLOCATE_PCT: NA\n"
             "REASONING: I need current market data before I can give a directional call.\n</answer>")
QUESTION = "Today is 2026-02-01. Will Cardano (ADAUSDT) be priced HIGHER 30 days from now than its current price of $0.29?"
TASKS = [BlindTask(task_id="t_r1", kind="response", text=TOOL_CALL, question=QUESTION),
         BlindTask(task_id="t_r2", kind="response", text="<answer>\nDECISION: ANSWER\nPROBABILITY_YES: 65\n</answer>",
                   question=QUESTION)]
ORDERS = {"alice": ["t_r1", "t_r2"], "bob": ["t_r2", "t_r1"]}
DECISION_HEADING = "Decision: did the model answer, or decline to commit?"


def decision_study(root: Path, schemes: dict[str, str] | None = None) -> Path:
    """A blinded study whose study file (as `accord run` resolves it) codes response units under `decision`."""
    write_study(root, TASKS, ORDERS)
    resolved = {"annotation": {"backend": "app", "options": {}, "schemes": schemes or {"response": "decision"}}}
    StudyLayout.of(root).resolved_study.write_text(json.dumps(resolved), encoding="utf-8")
    return root


def test_the_study_file_checks_the_scheme_choice(tmp_path):
    assert scheme_for("response") == "ehq4" and scheme_for("response", {"response": "decision"}) == "decision"
    assert check_schemes({"response": "refusal", "escalate_final": "decision"}, where="s") == {
        "response": "refusal", "escalate_final": "decision"}
    with pytest.raises(InputError, match="unknown unit kind 'poem'"):
        check_schemes({"poem": "decision"}, where="s")
    with pytest.raises(InputError, match=r"s\.response: unknown label scheme 'vibes'"):
        check_schemes({"response": "vibes"}, where="s")
    # identify_trajectory asks a first turn for its positive label: a scheme without a positive cannot serve it.
    with pytest.raises(InputError, match="scheme 'ehq4' has no positive label"):
        check_schemes({"identify_trajectory": "ehq4"}, where="s")
    study = tmp_path / "study.toml"
    study.write_text('output = "out"\n[study]\nname = "x"\n[units]\npath = "u.csv"\nunit_column = "u"\nkind = "response"\n'
                     '[annotation]\nschemes = { response = "vibes" }\n[gate]\npolicy = "p.toml"\n', encoding="utf-8")
    assert main(["status", str(study)]) == 2


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_the_store_codes_response_units_under_the_chosen_scheme(tmp_path, engine):
    root = decision_study(tmp_path / "study")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    assert raw(backend.store, "SELECT task_id, scheme FROM tasks ORDER BY task_id") == [("t_r1", "decision"), ("t_r2", "decision")]
    token = backend.store.add_annotator("alice")
    session = AnnotatorSession(backend.store, token)
    assert session.scheme("t_r1") == "decision"
    # An EHQ class is not a decision; CALL_TOOL is, and the label records the decision codebook's version.
    with pytest.raises(InputError, match=r"label 'ABSTAIN' is not one of \['ANSWER', 'CALL_TOOL', 'DECLINE'\]"):
        session.submit("t_r1", "ABSTAIN", base_revision=0)
    session.submit("t_r1", "CALL_TOOL", base_revision=0)
    (label,) = [row for row in backend.pull() if row.task_id == "t_r1"]
    assert (label.label, label.codebook_sha256) == ("CALL_TOOL", codebook_sha256("decision"))
    # The same tasks asked under another scheme are refused: labels given keep their meaning.
    StudyLayout.of(root).resolved_study.write_text(json.dumps({"annotation": {"schemes": {"response": "refusal"}}}))
    with pytest.raises(InputError, match="t_r1.*loaded under label scheme 'decision', now asked under 'refusal'"):
        AppBackend(study=root).push_files(root / "blind")


@pytest.fixture
def commit3():
    """A third party's scheme, registered for one test and removed after it (the registry is process-wide)."""
    from annotate import codebook as codebooks

    name = "commit3"
    register_scheme(LabelScheme(name=name, labels=("COMMIT", "HEDGE", "ABSTAIN"), positive="ABSTAIN",
                                description="A third party's three-way commitment scheme."))
    try:
        yield name
    finally:
        SCHEMES.unregister(name)
        if name in codebooks._REGISTERED:
            codebooks._REGISTERED.unregister(name)


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_new_scheme_registers_like_the_built_ins(tmp_path, engine, commit3):
    name = commit3
    register_scheme(SCHEMES[name])  # the same object again is no conflict
    with pytest.raises(InputError, match="already registered"):
        register_scheme(dataclasses.replace(SCHEMES[name], description="another scheme under the same name"))
    with pytest.raises(InputError, match="positive 'X' is not one of"):
        register_scheme(LabelScheme(name="broken", labels=("A", "B"), positive="X", description=""))
    book = tmp_path / "commit3.md"
    book.write_text("# Commit3: did the model commit?\n\n## Label **COMMIT** if\n\n## Label **HEDGE** if\n\n"
                    "## Label **ABSTAIN** if\n", encoding="utf-8")
    register_codebook(name, book)
    assert codebook(name).startswith("# Commit3")
    root = decision_study(tmp_path / "study", {"response": name})
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    session = AnnotatorSession(backend.store, backend.store.add_annotator("alice"))
    assert session.scheme("t_r2") == name
    session.submit("t_r2", "COMMIT", base_revision=0)
    assert [(r.task_id, r.label) for r in backend.pull()] == [("t_r2", "COMMIT")]
    assert '<Choice value="HEDGE"/>' in labeling_config("response", name)


def test_label_studio_offers_the_decision_labels_for_response_units():
    config = labeling_config("response", "decision")
    assert [m for m in re.findall(r'<Choice value="([^"]+)"/>', config)] == ["ANSWER", "CALL_TOOL", "DECLINE"]


# --- in a real browser ----------------------------------------------------------------------------


@pytest.mark.browser
def test_a_person_codes_a_response_as_call_tool_in_the_coding_app(tmp_path, monkeypatch):
    from annotate.store import STORE_URL_ENV
    from tests.annotate.server import coding_app
    from tests.annotate.test_browser import IDLE, TIMEOUT_MS, expect_text, label_button, sign_in, wait_chosen
    from tests.support.browser import browser

    monkeypatch.delenv(STORE_URL_ENV, raising=False)
    root = decision_study(tmp_path / "study")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    token = backend.store.add_annotator("alice")
    with coding_app(root, name="coding-app-decision") as url, browser() as context:
        page = context.new_page()
        sign_in(page, url, token)
        expect_text(page, "Task 1 of 2")
        # The decision codebook, not the EHQ one, and the three decisions as the labels.
        page.get_by_text("Show the codebook (how to label this unit)").click()
        page.get_by_role("heading", name=DECISION_HEADING).wait_for(timeout=TIMEOUT_MS)
        assert page.get_by_role("heading", name=re.compile("EHQ")).count() == 0
        for label in ("ANSWER", "CALL_TOOL", "DECLINE"):
            assert label_button(page, label).count() == 1, label
        assert label_button(page, "ABSTAIN").count() == 0
        page.get_by_text("REASONING: I need current market data", exact=False).first.wait_for(timeout=TIMEOUT_MS)
        # CALL_TOOL by its key (2), submit by S.
        page.keyboard.press("2")
        wait_chosen(page, "CALL_TOOL")
        page.keyboard.press("s")
        expect_text(page, "Saved 'CALL_TOOL' (revision 1).")
        expect_text(page, "Task 2 of 2")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        label_button(page, "ANSWER").click()
        page.get_by_role("button", name=re.compile(r"^Submit")).click()
        expect_text(page, "Saved 'ANSWER' (revision 1).")
        page.screenshot(path="/tmp/accord-decision-coding-app.png", full_page=True)
    labels = {row.task_id: row for row in backend.pull()}
    assert {t: r.label for t, r in labels.items()} == {"t_r1": "CALL_TOOL", "t_r2": "ANSWER"}
    assert {r.codebook_sha256 for r in labels.values()} == {codebook_sha256("decision")}


@pytest.mark.browser
@pytest.mark.labelstudio
def test_a_person_codes_a_response_as_call_tool_in_label_studio(labelstudio_server, tmp_path, monkeypatch, capsys):
    from annotate.labelstudio import load_labelstudio_credentials, load_labelstudio_state
    from tests.annotate.test_labelstudio_browser import _sign_in
    from tests.support.browser import browser

    root = decision_study(tmp_path / "study")
    orders = {"ui-decider": ["t_r1"]}
    (root / "blind" / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    (root / "blind" / "tasks.jsonl").write_text(TASKS[0].model_dump_json() + "\n", encoding="utf-8")
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    monkeypatch.setenv("ACCORD_LS_ADMIN_PASSWORD", labelstudio_server.admin_password)
    assert main(["ls", "push", "--study", str(root), "--url", labelstudio_server.url]) == 0
    state = load_labelstudio_state(root)
    assert state.schemes == {"response": "decision"}
    project = state.annotators["ui-decider"].projects["response"]
    assert project.codebook_sha256 == codebook_sha256("decision")
    login = load_labelstudio_credentials(root).annotators["ui-decider"]
    with browser() as context:
        page = context.new_page()
        page.set_default_timeout(120_000)
        _sign_in(page, labelstudio_server.url, login.email, login.password)
        page.goto(f"{labelstudio_server.url}/projects/{project.project_id}/data?labeling=1")
        page.get_by_text("Labeling Instructions").wait_for()
        assert page.get_by_role("heading", name=DECISION_HEADING).count() == 1
        page.keyboard.press("Escape")
        page.get_by_text("REASONING: I need current market data", exact=False).first.wait_for()
        assert page.locator('input[type=radio][name="ABSTAIN"]').count() == 0
        page.locator('input[type=radio][name="CALL_TOOL"]').check()
        page.screenshot(path="/tmp/accord-decision-labelstudio.png")
        page.get_by_test_id("bottombar-submit-button").click()
        page.get_by_text("Annotation saved successfully", exact=True).wait_for()
    capsys.readouterr()
    assert main(["ls", "pull", "--study", str(root), "--json"]) == 0
    rows = [HumanLabel.model_validate_json(line) for line in StudyLayout.of(root).labelstudio_labels.read_text().splitlines()]
    assert [(r.task_id, r.annotator, r.label, r.backend) for r in rows] == [("t_r1", "ui-decider", "CALL_TOOL", "labelstudio")]


def test_imported_human_labels_are_checked_against_the_studys_scheme(tmp_path):
    from annotate import HumanColumns, import_human_labels
    from samples.imports import MatchColumns

    root = decision_study(tmp_path / "study")
    table = tmp_path / "labels.csv"
    table.write_text("task,annotator,label\nt_r1,alice,CALL_TOOL\nt_r2,alice,ANSWER\n", encoding="utf-8")
    report = import_human_labels(table, root, match=MatchColumns(task="task"),
                                 columns=HumanColumns(annotator="annotator", label="label"))
    assert report.labels == 2
    table.write_text("task,annotator,label\nt_r1,alice,ABSTAIN\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"label 'ABSTAIN' is not one of \['ANSWER', 'CALL_TOOL', 'DECLINE'\]"):
        import_human_labels(table, root, match=MatchColumns(task="task"),
                            columns=HumanColumns(annotator="annotator", label="label"))
