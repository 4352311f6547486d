"""The coding app in a real browser (Debian's chromium through Playwright), checked against SQLite."""

from __future__ import annotations

import re

import pytest

from tests.annotate.helpers import raw
from tests.support.browser import browser

pytestmark = pytest.mark.browser
TIMEOUT_MS = 30_000
# Streamlit keeps the previous run's elements (a focused token field included) until a
# run ends; keys pressed before then land in the stale field, so wait for an idle app.
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def sign_in(page, url: str, token: str) -> None:
    page.goto(url)
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(re.compile(r"^(Task|Disagreement) \d+ of \d+$")).wait_for(timeout=TIMEOUT_MS)
    page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
    # The workspace's code loads on first use: keys pressed before its form is drawn are lost.
    page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=TIMEOUT_MS)


def label_button(page, label: str):
    # The label options read "<label> (<key>)".
    return page.get_by_role("radio", name=re.compile(rf"^{re.escape(label)} \(\d\)$"))


def wait_chosen(page, label: str) -> None:
    label_button(page, label).and_(page.locator('[aria-checked="true"]')).wait_for(timeout=TIMEOUT_MS)


def expect_text(page, text: str) -> None:
    page.get_by_text(text, exact=True).wait_for(timeout=TIMEOUT_MS)


def test_annotator_labels_with_mouse_and_keyboard_reloads_resumes_and_edits(running_app):
    study = running_app.study
    db = study.store
    with browser() as context:
        page = context.new_page()
        sign_in(page, running_app.url, study.tokens["alice"])
        expect_text(page, "Task 1 of 6")
        # The codebook is one click away: closed, then open at a click.
        codebook = page.get_by_role("heading", name="Identify: did the agent recognise a specific knowledge gap?")
        assert not codebook.is_visible()
        page.get_by_text("Show the codebook (how to label this unit)").click()
        codebook.wait_for(timeout=TIMEOUT_MS)
        # Task 1 (Identify) with the mouse: "yes", first recognition turn 1, unsure, a note, Submit.
        label_button(page, "yes").click()
        page.get_by_label("First recognition turn (needed for a 'yes')").select_option(label="turn 1")
        page.get_by_text("Unsure (a flag only; it does not change the label)").click()
        # Typed key by key: the label keys (1, 2) and S do nothing while typing in the note.
        page.get_by_role("textbox", name="Note").press_sequentially("turn 1 names both sources")
        page.get_by_role("button", name=re.compile(r"^Submit")).click()
        expect_text(page, "Saved 'yes' (revision 1).")
        expect_text(page, "Task 2 of 6")
        assert codebook.is_hidden() and page.get_by_role("heading", name=re.compile(r"^Escalate: ")).is_visible()  # stays open, for this kind
        # Task 2 (Escalate) with the keyboard only: 2 = "no", S = submit.
        page.keyboard.press("2")
        wait_chosen(page, "no")
        page.keyboard.press("s")
        expect_text(page, "Saved 'no' (revision 1).")
        expect_text(page, "Task 3 of 6")
        # Task 3: keyboard label, mouse submit.
        page.keyboard.press("1")
        wait_chosen(page, "yes")
        page.get_by_role("button", name=re.compile(r"^Submit")).click()
        expect_text(page, "Task 4 of 6")
        page.screenshot(path="/tmp/accord-annotator.png", full_page=True)

        # Reload: a new session, still signed in (test_reading_browser), resumes at the first unlabelled task.
        page.reload()
        expect_text(page, "Task 4 of 6")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=TIMEOUT_MS)
        page.get_by_text(re.compile(r"· 3 of 6 labelled$")).wait_for(timeout=TIMEOUT_MS)
        # Edit task 3: back with the mouse (in the sidebar), then the keyboard: 2 = "no", S = submit.
        page.get_by_role("button", name=re.compile(r"^◀ Previous")).click()
        expect_text(page, "Task 3 of 6")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        page.keyboard.press("2")
        wait_chosen(page, "no")
        page.keyboard.press("s")
        expect_text(page, "Saved 'no' (revision 2).")
        page.get_by_text(re.compile(r"^History of this label \(2 revision")).wait_for(timeout=TIMEOUT_MS)

    assert raw(db, "SELECT task_id, label, first_turn, unsure, note, revisions, backend, role FROM labels WHERE annotator='alice' ORDER BY task_id") == [
        ("t_a1", "yes", 1, 1, "turn 1 names both sources", 1, "app", "independent"),
        ("t_b2", "no", None, 0, "", 1, "app", "independent"),
        ("t_c3", "no", None, 0, "", 2, "app", "independent"),
    ]
    assert raw(db, "SELECT task_id, label FROM submissions WHERE annotator='alice' ORDER BY seq") == [
        ("t_a1", "yes"), ("t_b2", "no"), ("t_c3", "yes"), ("t_c3", "no"),
    ]
    (created, updated, seconds), = raw(db, "SELECT created_at, updated_at, seconds_spent FROM labels WHERE annotator='alice' AND task_id='t_c3'")
    assert created < updated and seconds > 0


def test_double_submit_in_the_browser_adds_one_row(running_app):
    study = running_app.study
    with browser() as context:
        page = context.new_page()
        sign_in(page, running_app.url, study.tokens["carol"])
        expect_text(page, "Task 1 of 3")
        # A refused submit (no label yet) keeps what was typed.
        note = page.get_by_role("textbox", name="Note")
        note.fill("typed before choosing")
        page.get_by_text("Unsure (a flag only; it does not change the label)").click()
        page.keyboard.press("s")
        expect_text(page, "Choose a label first (click it or press its number).")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        assert note.input_value() == "typed before choosing"
        label_button(page, "no").click()
        wait_chosen(page, "no")
        submit = page.get_by_role("button", name=re.compile(r"^Submit"))
        submit.dblclick()
        expect_text(page, "Task 2 of 3")
        page.wait_for_timeout(1000)
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        # The second click was drawn for the first task: ignored, the next task's form stays empty.
        assert page.locator('.accord-label-form [aria-checked="true"]').count() == 0
        assert page.get_by_role("textbox", name="Note").input_value() == ""
    assert raw(study.store, "SELECT task_id, label, unsure, note FROM submissions WHERE annotator='carol'") == [("t_b2", "no", 1, "typed before choosing")]


def test_adjudicator_page_in_the_browser(running_app):
    # Other browser tests never label t_e5 / t_f6 and bob labels nothing else: exactly two disagreements.
    study = running_app.study
    store, tokens = study.store, study.tokens
    store.submit(tokens["alice"], "t_f6", "HEDGE", submission_id="browser-alice-f6", note="generic hedge?")
    store.submit(tokens["bob"], "t_f6", "ABSTAIN", unsure=True, submission_id="browser-bob-f6")
    store.submit(tokens["alice"], "t_e5", "incorrect", submission_id="browser-alice-e5")
    store.submit(tokens["bob"], "t_e5", "correct", submission_id="browser-bob-e5")
    with browser() as context:
        page = context.new_page()
        sign_in(page, running_app.url, tokens["judy"])
        expect_text(page, "Disagreement 1 of 2")
        page.get_by_text("generic hedge?").wait_for(timeout=TIMEOUT_MS)
        page.screenshot(path="/tmp/accord-adjudicator.png", full_page=True)
        # Issue #25: the adjudicator sees each coder's label for the disagreement (blinded as coder 1, 2),
        # the submit moves to the next disagreement, and an "all done" screen follows the last one.
        assert coder_labels(page) == {"coder 1": "HEDGE", "coder 2": "ABSTAIN"}
        label_button(page, "ABSTAIN").click()
        wait_chosen(page, "ABSTAIN")
        page.keyboard.press("s")
        expect_text(page, "Saved 'ABSTAIN' (revision 1).")
        page.get_by_text(re.compile(r"· 1 of 2 disagreements adjudicated$")).wait_for(timeout=TIMEOUT_MS)
        expect_text(page, "Disagreement 2 of 2")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        assert coder_labels(page) == {"coder 1": "incorrect", "coder 2": "correct"}
        assert "alice" not in page.content() and "bob" not in page.content()
        label_button(page, "correct").click()
        wait_chosen(page, "correct")
        page.keyboard.press("s")
        page.get_by_text(re.compile(r"^All 2 disagreements are adjudicated\.")).wait_for(timeout=TIMEOUT_MS)
        expect_text(page, "Saved 'correct' (revision 1).")
    assert raw(store, "SELECT task_id, annotator, role, label FROM labels WHERE role='adjudication' ORDER BY task_id") == [
        ("t_e5", "judy", "adjudication", "correct"), ("t_f6", "judy", "adjudication", "ABSTAIN")]
    assert raw(store, "SELECT annotator, label FROM labels WHERE task_id='t_f6' AND role='independent' ORDER BY annotator") == [("alice", "HEDGE"), ("bob", "ABSTAIN")]


def coder_labels(page) -> dict[str, str]:
    """The independent labels table the adjudicator reads: coder -> label."""
    table = page.locator("table", has_text="coder 1")
    table.wait_for(timeout=TIMEOUT_MS)
    rows = table.locator("tr").all_inner_texts()
    cells = [row.split("\t") for row in rows[1:]]
    return {cell[0].strip(): cell[1].strip() for cell in cells}
