"""Reading a long unit in the coding app: a real 43-turn Who&When trajectory in Debian's chromium.

The study holds units cut from Who&When Hand-Crafted/10.json (44 history entries: the
question, then 43 agent turns) by the real adapter and unit cutter: an ``identify_turn``
unit on the last turn (its context is all 43 turns), the ``identify_trajectory`` unit and a
short Escalate unit; then the synthetic 50-turn tool-using unit of tests/annotate/long_units.py
with script-injection payloads. Expected values (turn count, which blocks fold, how often a word
occurs) are read from the source JSON with plain ``json`` here, not from the app.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotate.app_backend import AppBackend
from annotate.store import Store
from samples.ingest import ingest
from samples.jsonl import read_models
from samples.records import BlindTask, Trajectory
from samples.units import numbered_turns
from tests.annotate.helpers import raw
from tests.annotate.long_units import INJECTION, long_tasks
from tests.annotate.test_browser import (
    IDLE,
    TIMEOUT_MS,
    expect_text,
    label_button,
    sign_in,
    wait_chosen,
)
from tests.support.browser import browser

pytestmark = pytest.mark.browser
RUN = Path("who_and_when") / "Hand-Crafted" / "10.json"
PANE = ".accord-pane"


@dataclass
class WhoAndWhenApp:
    url: str
    tokens: dict[str, str]
    store: Store
    contents: list[str]  # the agent turns' contents, from the source file


@pytest.fixture(scope="module")
def who_and_when_app(shared: Path, tmp_path_factory) -> WhoAndWhenApp:
    from tests.annotate.server import coding_app

    source = shared / "data" / RUN
    if not source.is_file():
        pytest.skip(f"the Who&When run {source} is not in the shared data folder")
    raw = json.loads(source.read_text(encoding="utf-8"))
    contents = [turn["content"] for turn in raw["history"] if turn["role"] != "human"]
    assert len(contents) == 43
    root = tmp_path_factory.mktemp("reading") / "study"
    ingest([source], root / "population", adapter="who-and-when")
    (trajectory,) = read_models(root / "population" / "trajectories.jsonl", Trajectory)
    turns = numbered_turns(trajectory)
    tasks = [
        BlindTask(task_id="t_turn", kind="identify_turn", text=turns[42], turns=turns, focus_turn=42),
        BlindTask(task_id="t_traj", kind="identify_trajectory", text="\n\n".join(turns), turns=turns),
        BlindTask(task_id="t_final", kind="escalate_final", text="Whole Foods Market and Mariano's."),
        long_tasks(injection=True)[0],  # the synthetic 50-turn unit with script-injection payloads
    ]
    (root / "blind").mkdir(parents=True)
    (root / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    order = [t.task_id for t in tasks]
    names = ("ann", "ben", "cat", "dan", "eve")
    (root / "blind" / "orders.json").write_text(json.dumps({name: order for name in names}), encoding="utf-8")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    tokens = {name: backend.store.add_annotator(name) for name in names}
    with coding_app(root) as url:
        yield WhoAndWhenApp(url=url, tokens=tokens, store=backend.store, contents=contents)


def turn(page, number: int):
    return page.locator(f'{PANE} .accord-turn[data-turn="{number}"]')


def active(page) -> str:
    """Where the keyboard focus is: the unit's pane, a turn in it, or another element's tag."""
    return page.evaluate("""() => {
        const node = document.activeElement;
        if (node.classList.contains("accord-pane")) return "pane";
        if (node.classList.contains("accord-turn")) return `turn ${node.dataset.turn}`;
        return node.tagName.toLowerCase();
    }""")


def test_a_long_unit_opens_at_its_top_with_the_focus_turn_one_key_away(who_and_when_app):
    app = who_and_when_app
    with browser() as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1280, "height": 900})
        sign_in(page, app.url, app.tokens["ann"])
        expect_text(page, "Task 1 of 4")
        # At its top: turn 0 in view, the focus turn (42, the last) not yet; the index lists all
        # 43 turns and shows the focus turn's entry marked, in view; the focus in the unit.
        expect(turn(page, 0)).to_be_in_viewport()
        expect(turn(page, 42)).not_to_be_in_viewport()
        assert page.locator(PANE).evaluate("pane => pane.scrollTop") == 0
        entries = page.locator(".accord-index button[data-turn]")
        expect(entries).to_have_count(43)
        marked = page.locator('.accord-index button[aria-current="true"]')
        expect(marked).to_have_attribute("data-turn", "42")
        expect(marked).to_be_in_viewport()
        expect(page.get_by_role("button", name="Go to turn 42, the turn you are labelling (F)")).to_be_in_viewport()
        assert active(page) == "pane"
        # The page is no longer a 32,000 px scroll: the unit scrolls in its own pane, so the
        # label form is reachable without scrolling past 43 turns.
        assert page.evaluate("document.querySelector('[data-testid=stMain]').scrollHeight") < 3 * 900
        # One key away: F brings the focus turn into view, marked, with the keyboard focus on it.
        page.keyboard.press("f")
        expect(turn(page, 42)).to_be_in_viewport()
        expect(turn(page, 42)).to_have_class(re.compile(r"\baccord-focus\b"))
        assert turn(page, 42).get_by_text("turn 42 — the turn you are labelling").is_visible()
        assert active(page) == "turn 42"
        # The index jumps anywhere: each entry names its turn's speaker and length.
        entry = page.locator('.accord-index button[data-turn="3"]')
        expect(entry).to_contain_text("WebSurfer")
        length = len("[turn 3] (WebSurfer)\n") + len(app.contents[3].strip())  # 4,122 characters
        expect(entry).to_contain_text(f"{length / 1000:.1f}k")
        entry.click()
        expect(turn(page, 3)).to_be_in_viewport()
        expect(turn(page, 42)).not_to_be_in_viewport()
        # identify_turn has no first turn to ask for: its focus turn is the turn.
        assert page.locator(".accord-label-form select").count() == 0


def test_long_blocks_arrive_folded_with_a_preview_and_expand(who_and_when_app):
    from apps.workspace import FOLD_CHARS  # imports streamlit: here, not when the suite is collected

    app = who_and_when_app
    # Folded: every turn whose text is longer than the fold length, except the focus turn.
    expected = [i for i, content in enumerate(app.contents) if len(content.strip()) > FOLD_CHARS and i != 42]
    assert len(expected) >= 5
    with browser() as context:
        page = context.new_page()
        sign_in(page, app.url, app.tokens["ben"])
        expect_text(page, "Task 1 of 4")
        folds = page.locator(f"{PANE} details.accord-fold")
        expect(folds).to_have_count(len(expected))
        folded_turns = [int(n) for n in page.locator(f"{PANE} .accord-turn:has(> details.accord-fold)").evaluate_all("nodes => nodes.map((n) => n.dataset.turn)")]
        assert folded_turns == expected
        first = turn(page, expected[0]).locator("details.accord-fold")
        content = app.contents[expected[0]].strip()
        summary = first.locator("summary")
        expect(summary).to_contain_text(content.splitlines()[0].strip()[:40])
        expect(summary).to_contain_text(f"{len(content):,} characters")
        body = first.locator(".accord-text")
        expect(body).to_be_hidden()
        summary.click()
        expect(body).to_be_visible()
        assert body.inner_text() == content
        summary.click()
        expect(body).to_be_hidden()
        # The focus turn is never folded: its whole text is visible.
        page.keyboard.press("f")
        assert turn(page, 42).locator("details").count() == 0
        expect(turn(page, 42).locator(".accord-text").last).to_be_visible()


def test_find_marks_every_match_opens_folds_and_escape_returns_to_the_unit(who_and_when_app):
    from apps.workspace import FOLD_CHARS  # imports streamlit: here, not when the suite is collected

    app = who_and_when_app
    word = "Lincoln Park"
    expected = sum(content.lower().count(word.lower()) for content in app.contents)
    first_turn = next(i for i, content in enumerate(app.contents) if word.lower() in content.lower())
    assert len(app.contents[first_turn].strip()) > FOLD_CHARS  # its first match sits in a folded block
    with browser() as context:
        page = context.new_page()
        sign_in(page, app.url, app.tokens["cat"])
        expect_text(page, "Task 1 of 4")
        page.keyboard.press("/")
        find = page.get_by_role("searchbox", name="Find in this unit")
        expect(find).to_be_focused()
        find.press_sequentially(word)  # typed: the label keys and S do nothing while typing
        count = page.locator(".accord-find-count")
        expect(count).to_have_text(f"1 of {expected}")
        expect(page.locator(f"{PANE} mark.accord-hit")).to_have_count(expected)
        current = page.locator(f"{PANE} mark.accord-hit-current")
        expect(current).to_have_text(re.compile(re.escape(word), re.IGNORECASE))
        expect(current).to_be_in_viewport()
        fold = turn(page, first_turn).locator("details.accord-fold")
        expect(fold).to_have_attribute("open", "")
        find.press("Enter")
        expect(count).to_have_text(f"2 of {expected}")
        find.press("Shift+Enter")
        find.press("Shift+Enter")
        expect(count).to_have_text(f"{expected} of {expected}")  # wraps around
        expect(current).to_be_in_viewport()
        assert page.locator(".accord-label-form [aria-checked=true]").count() == 0
        find.press("Escape")
        assert active(page) == "pane"
        page.keyboard.press("2")
        wait_chosen(page, "no")
        page.get_by_role("searchbox", name="Find in this unit").fill("no such words in this run")
        expect(count).to_have_text("no match")
        # The next task opens at its top with an empty find, not at a match of the last query.
        page.get_by_role("searchbox", name="Find in this unit").fill(word)
        expect(count).to_have_text(f"1 of {expected}")
        page.get_by_role("searchbox", name="Find in this unit").press("Escape")
        page.keyboard.press("n")
        expect_text(page, "Task 2 of 4")
        expect(page.get_by_role("searchbox", name="Find in this unit")).to_have_value("")
        expect(page.locator(f"{PANE} mark")).to_have_count(0)
        assert page.locator(PANE).evaluate("pane => pane.scrollTop") == 0
    assert raw(app.store, "SELECT COUNT(*) FROM submissions WHERE annotator = 'cat'") == [(0,)]


def test_focus_returns_to_the_unit_after_navigation_and_each_task_opens_at_its_top(who_and_when_app):
    app = who_and_when_app
    with browser() as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1280, "height": 800})
        sign_in(page, app.url, app.tokens["dan"])
        expect_text(page, "Task 1 of 4")
        page.locator(PANE).evaluate("pane => { pane.scrollTop = pane.scrollHeight; }")
        # Go to task number: the box has the keyboard focus until the task changes, then the unit has it.
        jump = page.get_by_label("Go to task number")
        jump.fill("2")
        jump.press("Enter")
        expect_text(page, "Task 2 of 4")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        expect(page.locator(PANE)).to_be_focused()
        assert page.locator(PANE).evaluate("pane => pane.scrollTop") == 0  # the new task at its top
        expect(turn(page, 0)).to_be_in_viewport()
        # So 2 chooses a label and S submits (identify_trajectory: 'no' needs no first turn).
        page.keyboard.press("2")
        wait_chosen(page, "no")
        assert jump.input_value() == ""
        # Submit from the bottom of the page: the confirmation and the task number stay in view.
        page.evaluate("document.querySelector('[data-testid=stMain]').scrollTop = 1e6")
        page.keyboard.press("s")
        expect_text(page, "Saved 'no' (revision 1).")
        expect_text(page, "Task 3 of 4")
        expect(page.get_by_text("Saved 'no' (revision 1).", exact=True)).to_be_in_viewport()
        expect(page.get_by_text("Task 3 of 4", exact=True)).to_be_in_viewport()
        expect(page.locator(PANE)).to_be_focused()
        # A sidebar button keeps no focus either: back with Previous, then keys act on the unit.
        page.get_by_role("button", name=re.compile(r"^◀ Previous")).click()
        expect_text(page, "Task 2 of 4")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        expect(page.locator(PANE)).to_be_focused()
        # identify_trajectory asks for the first recognition turn, from the unit's turns only,
        # and refuses a 'yes' without one in the annotator's words.
        select = page.get_by_label("First recognition turn (needed for a 'yes')")
        assert select.locator("option").all_inner_texts() == ["— none —", *[f"turn {i}" for i in range(43)]]
        page.keyboard.press("1")
        wait_chosen(page, "yes")
        page.keyboard.press("s")
        expect_text(page, "A 'yes' needs the first turn where the recognition appears: choose its turn number (0 to 42).")
        assert "t_traj" not in page.locator('[data-testid="stMain"]').inner_text()
        select.select_option(label="turn 8")
        page.get_by_role("button", name=re.compile(r"^Submit")).click()
        expect_text(page, "Saved 'yes' (revision 2).")
    assert raw(app.store, "SELECT task_id, label, first_turn, revisions FROM labels WHERE annotator = 'dan'") == [("t_traj", "yes", 8, 2)]


def test_a_reload_keeps_the_annotator_signed_in_without_the_token_in_the_url(who_and_when_app):
    app = who_and_when_app
    token = app.tokens["eve"]
    with browser() as context:
        page = context.new_page()
        sign_in(page, app.url, token)
        expect_text(page, "Task 1 of 4")
        label_button(page, "no").click()
        page.keyboard.press("s")
        expect_text(page, "Task 2 of 4")
        page.reload()
        expect_text(page, "Task 2 of 4")  # signed in, resumed at the first unlabelled task
        page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=TIMEOUT_MS)
        assert page.get_by_label("Token").count() == 0
        assert token not in page.url
        cookies = {c["name"]: c["value"] for c in context.cookies()}
        assert "accord_session" in cookies and token not in json.dumps(cookies)
        assert page.evaluate("JSON.stringify(Object.entries(localStorage)) + JSON.stringify(Object.entries(sessionStorage))").count(token) == 0
        secret = cookies["accord_session"]
    with browser() as other:
        # Another browser: without the cookie, or with a made-up one, it is not signed in; with
        # the secret it is (the cookie alone carries the sign-in).
        page = other.new_page()
        page.goto(app.url)
        expect(page.get_by_label("Token")).to_be_visible(timeout=TIMEOUT_MS)
        other.add_cookies([{"name": "accord_session", "value": secret[:-4] + "AAAA", "url": app.url}])
        page.reload()
        expect(page.get_by_label("Token")).to_be_visible(timeout=TIMEOUT_MS)
        # The sign-in page drops a cookie it does not accept; wait for that before setting the
        # real one, or the page's late clean-up would delete the real cookie too.
        page.wait_for_function("!document.cookie.includes('accord_session=')", timeout=TIMEOUT_MS)
        other.add_cookies([{"name": "accord_session", "value": secret, "url": app.url}])
        page.reload()
        expect_text(page, "Task 2 of 4")
        expect(page.get_by_text("Signed in as eve")).to_be_visible()
        # Signing out ends it: a reload asks for the token again.
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("Token")).to_be_visible(timeout=TIMEOUT_MS)
        assert "accord_session" not in {c["name"] for c in other.cookies()}
        page.reload()
        expect(page.get_by_label("Token")).to_be_visible(timeout=TIMEOUT_MS)
    with browser() as replay:
        # The signed-out secret opens nothing, even sent again.
        replay.add_cookies([{"name": "accord_session", "value": secret, "url": app.url}])
        page = replay.new_page()
        page.goto(app.url)
        expect(page.get_by_label("Token")).to_be_visible(timeout=TIMEOUT_MS)


def test_script_injection_in_a_long_unit_shows_as_text_and_never_runs(who_and_when_app):
    app = who_and_when_app
    with browser() as context:
        page = context.new_page()
        sign_in(page, app.url, app.tokens["ann"])
        jump = page.get_by_label("Go to task number")
        jump.fill("4")
        jump.press("Enter")
        expect_text(page, "Task 4 of 4")
        page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
        hostile = turn(page, 1)
        expect(hostile).to_contain_text(f"[turn 1] ({INJECTION})")  # the speaker, as text
        expect(page.locator('.accord-index button[data-turn="1"] .accord-index-speaker')).to_have_text(INJECTION)
        hostile.locator("details.accord-fold summary", has_text="tool result").click()
        expect(hostile.locator("details.accord-fold[open] .accord-text")).to_contain_text(f"[tool result] {INJECTION}")
        page.keyboard.press("/")
        page.get_by_role("searchbox", name="Find in this unit").fill("<script>")
        expect(page.locator(".accord-find-count")).to_have_text("1 of 3")  # speaker, message, tool result
        assert page.locator(f"{PANE} script, {PANE} img, .accord-index script, .accord-index img").count() == 0
        assert page.evaluate("window.__accordInjected") is None
