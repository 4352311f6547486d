"""Every page and path of the Streamlit coding app through streamlit's AppTest, checked against the store."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from annotate.app_backend import sign_in
from annotate.store import Store
from tests.annotate.conftest import ENGINE_PARAMS
from tests.annotate.helpers import IDENTITY_MARKERS, ORDERS, TASKS

if TYPE_CHECKING:  # streamlit is imported where an app runs, not when the suite is collected
    from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "apps" / "coding_app.py")


@pytest.fixture
def app(loaded_study, monkeypatch, repo):
    monkeypatch.setenv("ACCORD_STUDY", str(loaded_study.root))
    monkeypatch.chdir(repo)

    from streamlit.testing.v1 import AppTest

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


def component(at: AppTest, name: str = "accord_workspace"):
    (element,) = [e for e in at.get("bidi_component") if e.proto.component_name == name]
    return element


def drawn(at: AppTest) -> dict:
    """The data the workspace component was last drawn with: what the browser shows of it
    (apps/workspace.py; the component's own code draws it in the browser tests)."""
    return json.loads(component(at).proto.json)


def page_text(at: AppTest) -> str:
    """Everything the page holds: widget labels and options, the workspace's data."""
    parts: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if getattr(node, "type", None) == "bidi_component":
            parts.append(proto.json)  # its data, not the component's own code
        elif proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(parts)


def send(at: AppTest, event: str, value: object) -> AppTest:
    """Run the app as after the browser's workspace fires ``event`` with ``value``: Streamlit's
    frontend sends a component's events as a JSON list on one trigger widget per component.
    AppTest has no way to fire a component's events, hence its lower-level run call."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id

    element = component(at)
    states = at._tree.get_widget_states()
    trigger = states.widgets.add()
    trigger.id = _make_trigger_id(element.proto.id, "events")
    trigger.json_trigger_value = json.dumps([{"event": event, "value": value}])
    return at._run(states)


def submit(at: AppTest, **changes: object) -> AppTest:
    """Submit the form drawn last, after changing ``changes`` (label, first_turn, unsure, note)
    in it: the values and the form identity the browser sends."""
    form = drawn(at)["form"]
    return send(at, "submit", {"form": form["id"], **form["values"], **changes})


def shown(at: AppTest) -> dict:
    """The values the form shows."""
    return drawn(at)["form"]["values"]


def message(at: AppTest) -> tuple[str, str] | None:
    """The last click's message in the workspace: (success or error, text)."""
    flash = drawn(at)["flash"]
    return None if flash is None else (flash["kind"], "\n\n".join(flash["messages"]))


def heading(at: AppTest) -> str:
    """'Task k of n' (or 'Disagreement k of n') above the unit."""
    return drawn(at)["progress"]["heading"]


def shown_unit(at: AppTest) -> str:
    """The unit's HTML block (escaped text, numbered turns)."""
    return drawn(at)["unit"]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_data(self, data: str) -> None:
        if self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def table_rows(block: str) -> list[list[str]]:
    """The cells of the tables in an HTML block, row by row (header included), unescaped."""
    parser = _Cells()
    parser.feed(block)
    return parser.rows


def shows_in_order(block: str, texts: list[str]) -> bool:
    positions = [block.find(html.escape(text)) for text in texts]
    return -1 not in positions and positions == sorted(positions)


def go_to(at: AppTest, number: int) -> AppTest:
    return at.number_input(key="jump-to").set_value(number).run()


def test_without_a_study_the_app_says_how_to_start(monkeypatch, repo):
    from streamlit.testing.v1 import AppTest

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
    assert drawn(at)["form"]["turns"] == [0, 1, 2]  # first recognition turn: none or one of these
    submit(at)
    assert message(at) == ("error", "Choose a label first (click it or press its number).")
    submit(at, label="yes")
    assert shown(at)["label"] == "yes"  # a refused submit keeps what was chosen
    kind, text = message(at)
    assert kind == "error" and text == "A 'yes' needs the first turn where the recognition appears: choose its turn number (0 to 2)."
    assert loaded_study.store.labels(annotator="alice") == []
    submit(at, first_turn=1, unsure=True, note="turn 1 names both sources")
    assert message(at) == ("success", "Saved 'yes' (revision 1).")
    assert heading(at) == "Task 2 of 6"
    assert drawn(at)["progress"]["detail"] == "1 of 6 labelled"
    label = store.label("alice", "t_a1")
    assert (label.label, label.first_turn, label.unsure, label.note, label.backend) == ("yes", 1, True, "turn 1 names both sources", "app")
    assert label.seconds_spent is not None and label.seconds_spent >= 0

    submit(at, label="no")
    assert heading(at) == "Task 3 of 6"

    resumed = app("alice")  # a new browser session resumes at the first unlabelled task
    assert heading(resumed) == "Task 3 of 6"
    button(resumed, "◀ Previous").click().run()
    button(resumed, "◀ Previous").click().run()
    assert heading(resumed) == "Task 1 of 6"
    button(resumed, "◀ Previous").click().run()  # nothing before the first task
    assert heading(resumed) == "Task 1 of 6" and message(resumed) == ("error", "This is the first task.")
    assert shown(resumed) == {"label": "yes", "first_turn": 1, "unsure": True, "note": "turn 1 names both sources"}
    submit(resumed, label="no")
    assert message(resumed) == ("success", "Saved 'no' (revision 2).")
    assert heading(resumed) == "Task 1 of 6"  # editing stays on the task
    history = [e for e in resumed.expander if e.label.startswith("History")]
    assert history and "2 revision(s)" in history[0].label
    assert [(r.label, r.first_turn) for r in store.history("alice", "t_a1")] == [("yes", 1), ("no", None)]
    assert store.label("alice", "t_a1").label == "no"
    assert len(store.labels(annotator="alice")) == 2

    submit(resumed)  # a second submit of the same content (a retry) records nothing
    assert message(resumed) == ("success", "Already saved as 'no'; nothing changed.")
    assert len(store.history("alice", "t_a1")) == 2

    button(resumed, "First open task").click().run()
    assert heading(resumed) == "Task 3 of 6"
    go_to(resumed, 6)
    assert heading(resumed) == "Task 6 of 6"
    assert resumed.number_input(key="jump-to").value is None  # empty again for the next jump
    button(resumed, "Next ▶").click().run()  # nothing after the last task
    assert heading(resumed) == "Task 6 of 6" and message(resumed) == ("error", "This is the last task.")
    go_to(resumed, 2)
    assert heading(resumed) == "Task 2 of 6"


def test_a_stale_submit_is_ignored(app, loaded_study):
    # The second click of a double click, or a submit sent before the next task appeared, carries
    # the identity of the form it was drawn for; it must neither label the next task nor repeat.
    store = loaded_study.store
    at = app("alice")
    go_to(at, 2)
    first_form = drawn(at)["form"]
    submit(at, label="no", note="for the second task")
    assert heading(at) == "Task 3 of 6"
    send(at, "submit", {"form": first_form["id"], **first_form["values"], "label": "yes", "note": "for the second task"})
    assert heading(at) == "Task 3 of 6" and message(at) is None
    assert shown(at) == {"label": None, "first_turn": None, "unsure": False, "note": ""}
    assert [(row.task_id, row.label, row.note) for row in store.labels(annotator="alice")] == [("t_b2", "no", "for the second task")]
    assert len(store.history("alice", "t_b2")) == 1


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"label": "maybe"}, "label 'maybe': expected one of ['yes', 'no']"),
        ({"label": "yes", "first_turn": 7}, "first turn 7: expected none or one of [0, 1, 2]"),
        ({"label": "yes", "first_turn": True}, "first turn True: expected none or one of [0, 1, 2]"),
        ({"label": "no", "unsure": "yes"}, "unsure 'yes': expected true or false"),
        ({"label": "no", "note": 3}, "note 3: expected text"),
    ],
)
def test_a_submit_with_values_the_form_does_not_offer_is_refused(app, loaded_study, changes, expected):
    at = app("alice")
    submit(at, **changes)
    assert message(at) == ("error", expected)
    assert heading(at) == "Task 1 of 6"
    assert loaded_study.store.labels(annotator="alice") == []


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
    # The codebook goes with every unit, in a closed <details> the browser opens (test_browser).
    assert drawn(at)["codebook"].startswith(f"<h1>{html.escape(codebook_title, quote=False)}")
    form = drawn(at)["form"]
    assert form["labels"] == labels and form["turns"] is None  # no first recognition turn
    submit(at, label=labels[-1])
    assert message(at) == ("success", f"Saved '{labels[-1]}' (revision 1).")


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
    assert table_rows(drawn(at)["context"]) == [
        ["coder", "label", "first turn", "unsure", "note"],
        ["coder 1", "yes", "", "", "two sources named"],
        ["coder 2", "no", "", "yes", ""],
    ]
    text = page_text(at)
    for secret in ("alice", "bob", *IDENTITY_MARKERS):
        assert secret not in text, secret
    assert "0 of 1 disagreements adjudicated" in text
    assert drawn(at)["form"]["heading"] == "Adjudicated label"
    submit(at, label="yes", note="sources named in the answer")
    assert "Saved 'yes' (revision 1)." in [e.value for e in at.success]  # on the "all done" screen
    button(at, "Review my disagreements").click().run()
    assert drawn(at)["progress"]["detail"] == "1 of 1 disagreements adjudicated"
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
    at = app("alice")
    go_to(at, 2)
    submit(at, label="no", note="typed before choosing", unsure=True)
    assert message(at) == ("success", "Saved 'no' (revision 1).")
    assert heading(at) == "Task 3 of 6"
    assert shown(at) == {"label": None, "first_turn": None, "unsure": False, "note": ""}
    button(at, "◀ Previous").click().run()
    assert heading(at) == "Task 2 of 6"
    assert shown(at) == {"label": "no", "first_turn": None, "unsure": True, "note": "typed before choosing"}
    stored = loaded_study.store.label("alice", "t_b2")
    assert (stored.label, stored.note, stored.unsure) == ("no", "typed before choosing", True)


def test_a_refused_submit_is_redrawn_on_its_own_form_only(app):
    at = app("alice")
    submit(at, label="yes", note="no first turn yet")  # refused: an Identify 'yes' needs its first turn
    assert message(at)[0] == "error" and shown(at)["note"] == "no first turn yet"
    button(at, "Next ▶").click().run()
    button(at, "◀ Previous").click().run()
    assert heading(at) == "Task 1 of 6"
    assert shown(at) == {"label": None, "first_turn": None, "unsure": False, "note": ""}  # nothing was saved


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
    assert message(at) == ("error", "Go to: the list now holds 1 disagreement(s); type a number from 1 to 1.")
    assert heading(at) == "Disagreement 1 of 1"



# -- reading a long unit: the data the workspace draws it from (the drawing: test_reading_browser) --


class _Index(HTMLParser):
    """The turn index's entries: (turn, speaker, tools, length shown, title)."""

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[dict[str, str]] = []
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs) -> None:
        attrs = dict(attrs)
        if tag == "button":
            self.entries.append({"turn": attrs["data-turn"], "title": attrs["title"], "focus": attrs.get("aria-current", "")})
        elif tag == "span" and self.entries:
            self._field = attrs["class"].removeprefix("accord-index-")
            self.entries[-1][self._field] = ""

    def handle_endtag(self, tag: str) -> None:
        self._field = None

    def handle_data(self, data: str) -> None:
        if self._field is not None:
            self.entries[-1][self._field] += data


@pytest.fixture
def long_app(tmp_path, monkeypatch, repo):
    """The coding app on a study of the long tool-using trajectory (tests/annotate/long_units.py)
    with script-injection payloads in a speaker name, a message and a tool result."""
    from streamlit.testing.v1 import AppTest

    from annotate.app_backend import AppBackend
    from tests.annotate.helpers import write_study
    from tests.annotate.long_units import long_tasks

    tasks = long_tasks(injection=True)
    root = write_study(tmp_path / "long", tasks, {"ann": [t.task_id for t in tasks]})
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    token = backend.store.add_annotator("ann")
    monkeypatch.setenv("ACCORD_STUDY", str(root))
    monkeypatch.chdir(repo)
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    at.text_input(key="token_input").input(token)
    button(at, "Sign in").click().run()
    assert not at.exception, at.exception
    return at, backend.store


def test_the_turn_index_lists_each_turn_s_speaker_tools_and_length(long_app):
    from samples.units import numbered_turns
    from tests.annotate.long_units import INJECTION, long_trajectory

    at, _ = long_app
    assert heading(at) == "Task 1 of 2"
    trajectory = long_trajectory(injection=True)
    rendered = numbered_turns(trajectory)  # what the unit shows, by the unit renderer
    agent_steps = trajectory.steps[1:]
    parser = _Index()
    parser.feed(drawn(at)["index"])
    assert [int(e["turn"]) for e in parser.entries] == list(range(50))
    for entry, step, text in zip(parser.entries, agent_steps, rendered, strict=True):
        assert entry["speaker"] == step.role  # unescaped by the parser: the payload is text
        assert entry["tools"] == step.tool_calls[0].name
        assert entry["title"] == f"turn {entry['turn']}: {step.role}, {step.tool_calls[0].name}, {len(text):,} characters"
    assert parser.entries[1]["speaker"] == INJECTION
    assert parser.entries[0]["length"] == f"{len(rendered[0]) / 1000:.1f}k"  # 4,xxx characters read as 4.xk
    assert [e["turn"] for e in parser.entries if e["focus"]] == ["49"]  # the focus turn's entry is marked
    assert drawn(at)["focus"] == 49


def test_long_tool_results_and_reasoning_fold_except_in_the_focus_turn(long_app):
    from apps.workspace import FOLD_CHARS
    from tests.annotate.long_units import long_trajectory

    at, _ = long_app
    unit = drawn(at)["unit"]
    steps = long_trajectory(injection=True).steps[1:]
    # Folded by hand: a reasoning block as rendered (<think>...</think>) and a tool result
    # ("[tool result] " + the result) longer than the fold length, in every turn but the last.
    expected = sum(
        (len(f"<think>{step.reasoning.strip()}</think>") > FOLD_CHARS) + (len("[tool result] " + step.tool_calls[0].result) > FOLD_CHARS)
        for step in steps[:-1]
    )
    assert expected > 49  # every tool result (4,000 characters) and the long reasoning blocks
    assert unit.count('<details class="accord-fold">') == expected
    sections = unit.split('<section class="accord-box accord-turn')[1:]
    assert len(sections) == 50 and "<details" not in sections[-1] and " accord-focus" in sections[-1]
    # A fold shows its kind, its first line and its size; its whole text stays in the page (for find).
    summary = re.search(r'<summary><span class="accord-fold-kind">tool result</span> <span class="accord-fold-preview">(.*?)</span> '
                        r'<span class="accord-fold-size">· ([\d,]+) characters, ([\d,]+) lines · show</span></summary>', sections[0])
    result = "[tool result] " + steps[0].tool_calls[0].result
    assert summary.groups() == ("id,city,price,stock", f"{len(result):,}", f"{result.count(chr(10)) + 1:,}")
    assert html.escape(result) in sections[0]


def test_script_injection_in_a_long_unit_is_escaped_everywhere(long_app):
    from tests.annotate.long_units import INJECTION

    at, _ = long_app
    data = drawn(at)
    for part in ("unit", "index"):
        assert "<script" not in data[part] and "<img" not in data[part], part
        assert html.escape(INJECTION) in data[part] or html.escape(INJECTION, quote=False) in data[part], part


def test_the_first_turn_control_follows_the_unit_s_data(long_app):
    at, store = long_app
    # identify_turn: the focus turn is the turn labelled; there is no first turn to ask for.
    assert drawn(at)["form"]["turns"] is None
    submit(at, label="yes", first_turn=3)
    assert message(at) == ("error", "first turn 3: expected none")
    submit(at, label="yes")
    assert message(at) == ("success", "Saved 'yes' (revision 1).")
    assert (store.label("ann", "t_long_turn").label, store.label("ann", "t_long_turn").first_turn) == ("yes", None)
    # identify_trajectory: offered (only the unit's turn numbers) and required for a 'yes'.
    assert heading(at) == "Task 2 of 2"
    assert drawn(at)["form"]["turns"] == list(range(50))
    submit(at, label="yes")
    assert message(at) == ("error", "A 'yes' needs the first turn where the recognition appears: choose its turn number (0 to 49).")
    submit(at, label="yes", first_turn=50)
    assert message(at) == ("error", f"first turn 50: expected none or one of {list(range(50))}")
    submit(at, label="yes", first_turn=12)  # the last open task: the "all done" screen carries the message
    assert [e.value for e in at.success] == ["Saved 'yes' (revision 1).",
                                             "All 2 tasks are labelled. Thank you: every label is saved, nothing "
                                             "else is needed."]
    assert store.label("ann", "t_long_traj").first_turn == 12


def test_first_turn_choices_by_unit_data():
    """The registry's first-turn rule (samples.kinds) on each kind's data."""
    from apps.workspace import first_turn_choices
    from samples.records import BlindTask

    turns = ["[turn 0] a", "[turn 1] b", "[turn 2] c"]
    assert first_turn_choices(BlindTask(task_id="t", kind="identify_trajectory", text="x", turns=turns)) == [0, 1, 2]
    assert first_turn_choices(BlindTask(task_id="t", kind="identify_turn", text="x", turns=turns, focus_turn=2)) is None
    assert first_turn_choices(BlindTask(task_id="t", kind="escalate_final", text="x")) is None


def test_navigation_is_counted_so_the_unit_takes_the_keyboard_focus_back(app):
    at = app("alice")
    counts = [drawn(at)["navigation"]]
    button(at, "Next ▶").click().run()
    counts.append(drawn(at)["navigation"])
    go_to(at, 4)
    counts.append(drawn(at)["navigation"])
    go_to(at, 4)  # the same task again: still a navigation (the focus left the go-to box)
    counts.append(drawn(at)["navigation"])
    button(at, "First open task").click().run()
    counts.append(drawn(at)["navigation"])
    assert counts == [0, 1, 2, 3, 4]
    submit(at, label="yes", first_turn=0)  # a submit is no navigation; the new task takes the focus by itself
    assert drawn(at)["navigation"] == 4 and heading(at) == "Task 2 of 6"


def test_a_store_refusal_speaks_of_this_task_not_its_id(app, loaded_study):
    store, tokens = loaded_study.store, loaded_study.tokens
    store.submit(tokens["alice"], "t_c3", "yes", submission_id="race-a-c3")
    store.submit(tokens["bob"], "t_c3", "no", submission_id="race-b-c3")
    at = app("judy")
    assert heading(at) == "Disagreement 1 of 1"
    store.submit(tokens["bob"], "t_c3", "yes", submission_id="race-b-c3-agrees")  # resolved since the page was drawn
    submit(at, label="yes")
    # The queue is empty now: the page says so, under the refusal.
    assert [e.value for e in at.error] == ["Not saved: independent labels do not disagree; nothing to adjudicate"]
    assert at.info[0].value == "No disagreements to adjudicate."
    assert "t_c3" not in page_text(at)
    assert store.labels(role="adjudication") == []


def test_sign_in_gives_the_browser_a_session_secret_and_sign_out_takes_it_back(app, loaded_study):
    at = app("alice")
    cookie = json.loads(component(at, "accord_session_cookie").proto.json)
    assert cookie["name"] == "accord_session"
    secret = cookie["value"]
    assert len(secret) >= 40 and secret != loaded_study.tokens["alice"] and loaded_study.tokens["alice"] not in page_text(at)
    button(at, "Sign out").click().run()
    assert json.loads(component(at, "accord_session_cookie").proto.json)["value"] == ""  # the browser drops it
    assert at.text_input(key="token_input")


@pytest.mark.parametrize("engine", ENGINE_PARAMS, indirect=True)
def test_browser_sessions_keep_only_hashes_expire_close_and_end_with_the_token(loaded_study, engine):
    """On either engine: a session secret signs its annotator in on any server of the store (a second
    Store handle stands for a second server) until it is closed, expires, or its token is rotated."""
    import time

    from apps.browser_sessions import BrowserSessions
    from tests.annotate.helpers import raw

    tokens = loaded_study.tokens
    here = BrowserSessions(loaded_study.store, lifetime_s=60.0)
    there = BrowserSessions(Store.for_study(loaded_study.root), lifetime_s=60.0)
    first, second = here.open(tokens["alice"]), here.open(tokens["bob"])
    assert first != second and len(first) >= 40
    assert (there.credential(first), there.credential(second)) == (first, second)
    assert sign_in(Store.for_study(loaded_study.root), first).name == "alice"
    stored = raw(loaded_study.store, "SELECT secret_hash, annotator FROM browser_sessions ORDER BY annotator")
    assert [name for _, name in stored] == ["alice", "bob"] and not {first, second} & {h for h, _ in stored}
    for unknown in (None, "", first[:-1], 42):
        assert there.credential(unknown) is None
    there.close(first)
    assert here.credential(first) is None and here.credential(second) == second
    loaded_study.store.rotate_token("bob")
    assert here.credential(second) is None  # a rotated token ends its sessions
    brief = BrowserSessions(loaded_study.store, lifetime_s=0.05).open(tokens["carol"])
    time.sleep(0.1)
    assert there.credential(brief) is None  # expired after its lifetime
    with pytest.raises(ValueError, match="lifetime_s 0"):
        BrowserSessions(loaded_study.store, lifetime_s=0)


def test_a_label_records_the_codebook_version_the_page_showed(app, loaded_study):
    """The hash is of the codebook file's bytes (read here from the file, not through accord's helper),
    and the page's codebook is that file rendered."""
    import hashlib

    at = app("alice")
    assert heading(at).startswith("Task 1 ") and ORDERS["alice"][0] == "t_a1"  # identify_trajectory: scheme identify
    codebook_file = Path(APP).parents[1] / "annotate" / "codebook" / "identify.md"
    assert "Identify: did the agent recognise a specific knowledge gap?" in drawn(at)["codebook"]
    assert codebook_file.read_text(encoding="utf-8").startswith("# Identify: did the agent recognise")
    at = submit(at, label="no")
    assert message(at)[0] == "success", message(at)
    saved = loaded_study.store.label("alice", "t_a1")
    assert saved.codebook_sha256 == hashlib.sha256(codebook_file.read_bytes()).hexdigest()


def test_the_qualification_round_comes_first_shows_answers_and_is_kept_apart(app, loaded_study, tmp_path):
    """Two practice units before any real unit; after each submit the expected answer and the reason
    are shown; the answers never become labels; once done, the real units start (and stay so)."""
    from annotate.export import export_labels
    from annotate.gold import add_practice
    from samples.jsonl import write_jsonl

    turns = ["[turn 0] I look the year up.", "[turn 1] Two sources give different years; I cannot tell which."]
    table = tmp_path / "practice.jsonl"
    write_jsonl(table, [
        {"gold_id": "p-esc", "kind": "escalate_final", "text": "I cannot check this; please ask an expert.",
         "label": "yes", "reason": "The final turn hands the question to a person."},
        {"gold_id": "p-idt", "kind": "identify_trajectory", "text": "\n".join(turns), "turns": turns,
         "label": "yes", "first_turn": 1, "reason": "Turn 1 names the conflict."},
    ])
    add_practice(loaded_study.root, table)
    at = app("alice")
    assert heading(at) == "Practice 1 of 2"
    assert "ask an expert" in shown_unit(at)
    at = submit(at, label="no")
    kind, text = message(at)
    assert kind == "error" and "you answered 'no'" in text and "expected answer is 'yes'" in text
    assert "hands the question to a person" in text
    assert heading(at) == "Practice 1 of 2"  # stays, so the reason is read beside the unit
    at = button(at, "Next practice unit ▶").click().run()
    assert heading(at) == "Practice 2 of 2"
    at = submit(at, label="yes", first_turn=1)
    kind, text = message(at)
    assert kind == "success" and text.startswith("Right") and "first turn 1" in text
    store = loaded_study.store
    practice_ids = [unit["task"]["task_id"] for unit in
                    json.loads((loaded_study.root / "labels" / "practice.json").read_text())["units"]]
    assert store.labels() == [] and store.practice_results("alice") == dict(zip(practice_ids, (False, True)))
    at = button(at, "Start the real units ▶").click().run()
    assert heading(at).startswith("Task 1 of 6")
    at = submit(at, label="no")
    assert message(at)[0] == "success"
    assert [(row.task_id, row.annotator) for row in store.labels()] == [(ORDERS["alice"][0], "alice")]
    export_labels(store.labels(), tmp_path / "human.jsonl", format="jsonl")
    assert "p_" not in (tmp_path / "human.jsonl").read_text()
    again = app("alice")  # a new session: the round is done, so the real units come at once
    assert heading(again).startswith("Task 2 of 6")
    assert heading(app("bob")) == "Practice 1 of 2"  # each person takes the round
