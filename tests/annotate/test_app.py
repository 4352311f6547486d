"""Every page and path of the Streamlit coding app through streamlit's AppTest, checked against the store."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.annotate.helpers import IDENTITY_MARKERS, ORDERS, TASKS

APP = str(Path(__file__).resolve().parents[2] / "apps" / "coding_app.py")


@pytest.fixture
def app(loaded_study, monkeypatch, repo):
    monkeypatch.setenv("ACCORD_STUDY", str(loaded_study.root))
    monkeypatch.chdir(repo)

    def start(who: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=30)
        at.run()
        if who is not None:
            at.text_input(key="token_input").input(loaded_study.tokens[who])
            button(at, "Sign in").click().run()
            assert not at.exception, at.exception
        return at

    return start


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert matches, f"no button {label!r}; have {[b.label for b in at.button]}"
    return matches[0]


def page_text(at: AppTest) -> str:
    """Everything the page holds, widget labels and options included."""
    parts: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(parts)


def submit(at: AppTest) -> AppTest:
    return button(at, "Submit").click().run()


def choose(at: AppTest, label: str) -> None:
    """Pick a label in the form (the browser sends it with the next submit)."""
    (control,) = at.button_group
    control.set_value(label)


def chosen(at: AppTest) -> str | None:
    (control,) = at.button_group
    return control.value


def heading(at: AppTest) -> str:
    """'Task k of n' (or 'Disagreement k of n') from the progress line above the unit."""
    return re.match(r"\*\*(.+?)\*\*", at.progress[0].proto.text).group(1)


def shown_unit(at: AppTest) -> str:
    """The unit's HTML block (escaped text, numbered turns)."""
    (block,) = [h.proto.body for h in at.html if h.proto.body.startswith('<div class="accord-unit">')]
    return block


def shows_in_order(block: str, texts: list[str]) -> bool:
    positions = [block.find(html.escape(text)) for text in texts]
    return -1 not in positions and positions == sorted(positions)


def go_to(at: AppTest, number: int) -> AppTest:
    return at.number_input(key="jump-to").set_value(number).run()


def test_without_a_study_the_app_says_how_to_start(monkeypatch, repo):
    monkeypatch.delenv("ACCORD_STUDY", raising=False)
    monkeypatch.chdir(repo)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert "accord app --study DIR" in at.error[0].value


def test_sign_in_refuses_bad_and_empty_tokens(app):
    at = app()
    assert at.title[0].value == "accord coding app"
    at.text_input(key="token_input").input("not-a-token")
    button(at, "Sign in").click().run()
    assert "not recognised" in at.error[0].value
    at.text_input(key="token_input").input("")
    button(at, "Sign in").click().run()
    assert "empty" in at.error[0].value
    assert "token" not in at.session_state


def test_annotator_labels_resumes_navigates_and_edits(app, loaded_study):
    store = loaded_study.store
    at = app("alice")
    assert heading(at) == "Task 1 of 6"
    assert shows_in_order(shown_unit(at), TASKS[0].turns)
    assert at.selectbox(key=[s.key for s in at.selectbox if s.label.startswith("First recognition")][0]).options == ["— none —", "turn 0", "turn 1", "turn 2"]
    submit(at)
    assert "Choose a label first" in at.error[0].value
    choose(at, "yes")
    submit(at)
    assert chosen(at) == "yes"  # a refused submit keeps what was chosen
    assert "first_turn is required" in at.error[0].value
    first = [s for s in at.selectbox if s.label.startswith("First recognition")][0]
    # Form inputs go to the server with the submit (AppTest, like the browser, holds them until then).
    first.set_value(1)
    at.checkbox[0].check()
    at.text_area[0].input("turn 1 names both sources")
    submit(at)
    assert at.success[0].value == "Saved 'yes' (revision 1)."
    assert heading(at) == "Task 2 of 6"
    assert "1 of 6 labelled" in page_text(at)
    label = store.label("alice", "t_a1")
    assert (label.label, label.first_turn, label.unsure, label.note, label.backend) == ("yes", 1, True, "turn 1 names both sources", "app")
    assert label.seconds_spent is not None and label.seconds_spent >= 0

    choose(at, "no")
    submit(at)
    assert heading(at) == "Task 3 of 6"

    resumed = app("alice")  # a new browser session resumes at the first unlabelled task
    assert heading(resumed) == "Task 3 of 6"
    button(resumed, "◀ Previous").click().run()
    button(resumed, "◀ Previous").click().run()
    assert heading(resumed) == "Task 1 of 6"
    button(resumed, "◀ Previous").click().run()  # nothing before the first task
    assert heading(resumed) == "Task 1 of 6" and resumed.error[0].value == "This is the first task."
    assert chosen(resumed) == "yes"
    assert resumed.text_area[0].value == "turn 1 names both sources"
    choose(resumed, "no")
    submit(resumed)
    assert resumed.success[0].value == "Saved 'no' (revision 2)."
    assert heading(resumed) == "Task 1 of 6"  # editing stays on the task
    history = [e for e in resumed.expander if e.label.startswith("History")]
    assert history and "2 revision(s)" in history[0].label
    assert [(r.label, r.first_turn) for r in store.history("alice", "t_a1")] == [("yes", 1), ("no", None)]
    assert store.label("alice", "t_a1").label == "no"
    assert len(store.labels(annotator="alice")) == 2

    submit(resumed)  # a second submit of the same content (double click, retry) records nothing
    assert resumed.success[0].value == "Already saved as 'no'; nothing changed."
    assert len(store.history("alice", "t_a1")) == 2

    button(resumed, "First open task").click().run()
    assert heading(resumed) == "Task 3 of 6"
    go_to(resumed, 6)
    assert heading(resumed) == "Task 6 of 6"
    assert resumed.number_input(key="jump-to").value is None  # empty again for the next jump
    button(resumed, "Next ▶").click().run()  # nothing after the last task
    assert heading(resumed) == "Task 6 of 6" and resumed.error[0].value == "This is the last task."
    go_to(resumed, 2)
    assert heading(resumed) == "Task 2 of 6"


@pytest.mark.parametrize(
    ("position", "codebook_title", "labels"),
    [
        (1, "Escalate: does the final answer pass", ["yes", "no"]),
        (4, "Correctness: does the prediction cover", ["correct", "incorrect"]),
        (5, "Response class: ABSTAIN, HEDGE", ["ABSTAIN", "HEDGE", "CONFIDENT_CORRECT", "CONFIDENT_WRONG"]),
    ],
)
def test_each_unit_kind_shows_its_text_codebook_and_labels(app, position, codebook_title, labels):
    at = app("alice")
    go_to(at, position + 1)
    task = TASKS[[t.task_id for t in TASKS].index(ORDERS["alice"][position])]
    assert shows_in_order(shown_unit(at), [task.text])
    assert not [m for m in at.markdown if m.value.startswith("# ")]  # one click away, not in the way
    at.toggle(key="show_codebook").set_value(True).run()
    (codebook,) = [m for m in at.markdown if m.value.startswith("# ")]
    assert codebook.value.startswith(f"# {codebook_title}")
    assert at.button_group[0].options == [f"{label} ({number})" for number, label in enumerate(labels, start=1)]
    assert not [s for s in at.selectbox if s.label.startswith("First recognition")]
    choose(at, labels[-1])
    submit(at)
    assert at.success[0].value == f"Saved '{labels[-1]}' (revision 1)."


def test_identify_turn_highlights_the_focus_turn(app):
    at = app("alice")
    go_to(at, 4)
    block = shown_unit(at)
    assert "turn 1 — the turn you are labelling" in block
    assert shows_in_order(block, [*TASKS[3].turns[:1], "turn 1 — the turn you are labelling", *TASKS[3].turns[1:]])
    assert block.count("accord-focus") == 1


def test_annotator_never_sees_others_work_or_identity(app, loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    store.submit(tokens["bob"], "t_a1", "yes", first_turn=1, note="BOB-PRIVATE-NOTE", submission_id="bob-a1-0001")
    store.submit(tokens["bob"], "t_b2", "yes", note="BOB-OTHER-NOTE", submission_id="bob-b2-0001")
    at = app("carol")
    seen = []
    for position in range(len(ORDERS["carol"])):
        go_to(at, position + 1)
        seen.append(page_text(at))
    text = "\n".join(seen)
    for secret in ("BOB-PRIVATE-NOTE", "BOB-OTHER-NOTE", "bob", "judy", *IDENTITY_MARKERS, "u_0000", "traj-", "inclusion"):
        assert secret not in text, secret
    assert "0 of 3 labelled" in text
    assert "t_e5" not in text  # a task outside carol's order


def test_adjudicator_sees_disagreements_and_records_apart(app, loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    at = app("judy")
    assert at.info[0].value == "No disagreements to adjudicate."
    store.submit(tokens["alice"], "t_c3", "yes", submission_id="a-c3-00001", note="two sources named")
    store.submit(tokens["bob"], "t_c3", "no", unsure=True, submission_id="b-c3-00001")
    at = app("judy")
    assert heading(at) == "Disagreement 1 of 1"
    assert shows_in_order(shown_unit(at), [TASKS[2].text])
    table = at.table[0].value
    assert list(table["coder"]) == ["coder 1", "coder 2"] and list(table["label"]) == ["yes", "no"]
    assert list(table["unsure"]) == ["", "yes"] and list(table["note"]) == ["two sources named", ""]
    text = page_text(at)
    for secret in ("alice", "bob", *IDENTITY_MARKERS):
        assert secret not in text, secret
    assert "0 of 1 disagreements adjudicated" in text
    choose(at, "yes")
    at.text_area[0].input("sources named in the answer")
    submit(at)
    assert at.success[0].value == "Saved 'yes' (revision 1)."
    assert "1 of 1 disagreements adjudicated" in page_text(at)
    (adjudication,) = store.labels(role="adjudication")
    assert (adjudication.task_id, adjudication.annotator, adjudication.label) == ("t_c3", "judy", "yes")
    assert {(r.annotator, r.label) for r in store.labels(role="independent")} == {("alice", "yes"), ("bob", "no")}


def test_revoked_token_signs_the_session_out(app, loaded_study):
    at = app("bob")
    assert heading(at) == "Task 1 of 6"
    loaded_study.store.revoke("bob")
    button(at, "Next ▶").click().run()
    assert "Signed out" in at.error[0].value and "token" not in at.session_state
    assert at.text_input(key="token_input")


def test_sign_out_returns_to_sign_in(app):
    at = app("alice")
    button(at, "Sign out").click().run()
    assert at.title[0].value == "accord coding app" and "token" not in at.session_state


def test_annotator_without_an_order_is_told(app, loaded_study):
    loaded_study.tokens["dave"] = loaded_study.store.add_annotator("dave")
    at = app("dave")
    assert at.info[0].value == "No tasks are assigned to you yet."


def test_form_starts_empty_per_task_and_refills_from_the_store(app, loaded_study):
    # The form's inputs keep one key per role (redrawn in place): the next task starts
    # empty, and going back shows what was stored.
    at = app("alice")
    go_to(at, 2)
    at.text_area[0].input("typed before choosing")
    at.checkbox[0].check()
    choose(at, "no")
    submit(at)
    assert at.success[0].value == "Saved 'no' (revision 1)."
    assert heading(at) == "Task 3 of 6"
    assert at.text_area[0].value == "" and not at.checkbox[0].value and chosen(at) is None
    button(at, "◀ Previous").click().run()
    assert heading(at) == "Task 2 of 6"
    assert at.text_area[0].value == "typed before choosing" and at.checkbox[0].value and chosen(at) == "no"
    stored = loaded_study.store.label("alice", "t_b2")
    assert (stored.label, stored.note, stored.unsure) == ("no", "typed before choosing", True)



def test_go_to_a_disagreement_that_resolved_since_the_page_was_drawn(app, loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    store.submit(tokens["alice"], "t_c3", "yes", submission_id="gone-a-c3")
    store.submit(tokens["bob"], "t_c3", "no", submission_id="gone-b-c3")
    store.submit(tokens["alice"], "t_b2", "yes", submission_id="gone-a-b2")
    store.submit(tokens["bob"], "t_b2", "no", submission_id="gone-b-b2")
    at = app("judy")
    assert heading(at) == "Disagreement 1 of 2"
    store.submit(tokens["bob"], "t_c3", "yes", submission_id="gone-b-c3-edit")  # bob now agrees
    go_to(at, 2)
    assert at.error[0].value == "Go to: the list now holds 1 disagreement(s); type a number from 1 to 1."
    assert heading(at) == "Disagreement 1 of 1"

