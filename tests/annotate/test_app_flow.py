"""The coding app as a person meets it (issue 25): the question above the choices, an "all done" screen
after the last unit and the last disagreement, and the adjudicator moved on to the next disagreement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.annotate.test_app import APP, button, drawn, heading, submit

if TYPE_CHECKING:  # streamlit is imported where an app runs, not when the suite is collected
    from streamlit.testing.v1 import AppTest


@pytest.fixture
def app(loaded_study, monkeypatch, repo):
    """The coding app in AppTest, signed in as a person of ``loaded_study`` (as tests/annotate/test_app.py's)."""
    monkeypatch.setenv("ACCORD_STUDY", str(loaded_study.root))
    monkeypatch.chdir(repo)
    from streamlit.testing.v1 import AppTest

    def start(who: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=30)
        at.run()
        at.text_input(key="token_input").input(loaded_study.tokens[who])
        button(at, "Sign in").click().run()
        assert not at.exception, at.exception
        return at

    return start


def _success(at) -> list[str]:
    return [element.value for element in at.success]


def test_the_question_of_each_unit_kind_sits_above_the_choices(app):
    at = app("alice")  # alice's order: t_a1 identify_trajectory, t_b2 escalate_final, ..., t_d4 identify_turn
    assert drawn(at)["form"]["question"] == "Did the agent recognise a specific knowledge gap in any of these turns?"
    from tests.annotate.test_app import go_to

    go_to(at, 2)
    # escalate: the codebook's title (annotate/codebook/escalate.md), the label definitions stay in the codebook
    assert drawn(at)["form"]["question"] == "Does the final answer pass a specific uncertainty on to the user?"
    go_to(at, 4)
    assert drawn(at)["form"]["question"].startswith("Does the turn you are labelling (marked) recognise")


def test_an_all_done_screen_follows_the_last_unit(app):
    at = app("carol")  # three tasks: t_b2, t_c3 (escalate), t_a1 (identify)
    for number in (1, 2, 3):
        assert heading(at) == f"Task {number} of 3"
        submit(at, label="no")
        assert not at.exception, at.exception
    assert any("All 3 tasks are labelled" in text for text in _success(at)), _success(at)
    assert any("Saved 'no'" in text for text in _success(at))
    button(at, "Review my tasks").click().run()
    assert heading(at) == "Task 3 of 3" and drawn(at)["form"]["values"]["label"] == "no"


def test_the_adjudicator_moves_to_the_next_disagreement_then_is_told_all_are_done(app, loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    for task, (a, b) in (("t_c3", ("yes", "no")), ("t_b2", ("no", "yes"))):
        store.submit(tokens["alice"], task, a, submission_id=f"alice-{task}-1")
        store.submit(tokens["bob"], task, b, submission_id=f"bob-{task}-01")
    at = app("judy")
    assert heading(at) == "Disagreement 1 of 2"
    submit(at, label="yes")
    assert heading(at) == "Disagreement 2 of 2"  # moved on, as an annotator's first label does
    assert drawn(at)["progress"]["detail"] == "1 of 2 disagreements adjudicated"
    submit(at, label="no")
    assert any("All 2 disagreements are adjudicated" in text for text in _success(at)), _success(at)
    assert len(store.labels(role="adjudication")) == 2
