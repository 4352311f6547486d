"""Two coding-app servers on one PostgreSQL store, in a real browser (Debian's chromium).

The two servers stand for two machines behind a proxy: both listen on 127.0.0.1, so the
browser's session cookie reaches either, as it would through one public host name. A
person signed in at one server is signed in at the other (the session lives in the
store), sees the same queue and labels, and their submits taken by both servers at the
same moment are each stored once; an annotator at one server and the adjudicator at the
other see each other's work.
"""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from annotate.app_backend import AppBackend
from annotate.store import STORE_URL_ENV
from tests.annotate.helpers import raw, write_study
from tests.annotate.server import coding_app
from tests.annotate.test_browser import IDLE, TIMEOUT_MS, expect_text, sign_in, wait_chosen
from tests.support.browser import browser

pytestmark = pytest.mark.browser


def ready(page) -> None:
    page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
    page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=TIMEOUT_MS)


def choose(page, key: str, label: str) -> None:
    ready(page)
    page.keyboard.press(key)
    wait_chosen(page, label)


def label_and_submit(page, key: str, label: str) -> None:
    choose(page, key, label)
    page.keyboard.press("s")
    expect_text(page, f"Saved '{label}' (revision 1).")


def test_two_app_servers_share_sign_in_queue_labels_and_adjudication(tmp_path, monkeypatch, postgres_url):
    monkeypatch.setenv(STORE_URL_ENV, postgres_url)  # both servers (child processes) open the same database
    root = write_study(tmp_path / "study")
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    store = backend.store
    assert store.engine.name == "postgresql"
    tokens = {name: store.add_annotator(name) for name in ("alice", "bob")}
    tokens["judy"] = store.add_annotator("judy", "adjudicator")
    with ExitStack() as stack:
        server_a = stack.enter_context(coding_app(root, name="coding-app-a"))
        server_b = stack.enter_context(coding_app(root, name="coding-app-b"))
        context = stack.enter_context(browser())
        at_a = context.new_page()
        sign_in(at_a, server_a, tokens["alice"])
        expect_text(at_a, "Task 1 of 6")
        label_and_submit(at_a, "2", "no")
        expect_text(at_a, "Task 2 of 6")

        # Server B: signed in by the same browser's session (no token typed), at her first open task.
        at_b = context.new_page()
        at_b.goto(server_b)
        expect_text(at_b, "Task 2 of 6")
        at_b.get_by_text("Signed in as alice (annotator)", exact=False).first.wait_for(timeout=TIMEOUT_MS)
        label_and_submit(at_b, "1", "yes")
        expect_text(at_b, "Task 3 of 6")

        # Both servers take one of her submits at the same moment.
        ready(at_a)
        at_a.keyboard.press("n")
        expect_text(at_a, "Task 3 of 6")
        ready(at_b)
        at_b.keyboard.press("n")
        expect_text(at_b, "Task 4 of 6")
        choose(at_a, "1", "yes")
        choose(at_b, "2", "no")
        at_a.keyboard.press("s")
        at_b.keyboard.press("s")
        expect_text(at_a, "Saved 'yes' (revision 1).")
        expect_text(at_b, "Saved 'no' (revision 1).")
        at_a.reload()
        at_a.get_by_text("4 of 6 labelled", exact=False).first.wait_for(timeout=TIMEOUT_MS)

        # Bob at server B disagrees with alice on t_c3 (his first task); judy adjudicates at server A.
        for page in (at_a, at_b):
            page.close()
        context.clear_cookies()  # another person at this computer
        bob = context.new_page()
        sign_in(bob, server_b, tokens["bob"])
        expect_text(bob, "Task 1 of 6")
        label_and_submit(bob, "2", "no")
        bob.close()
        context.clear_cookies()
        judy = context.new_page()
        sign_in(judy, server_a, tokens["judy"])
        expect_text(judy, "Disagreement 1 of 1")
        label_and_submit(judy, "1", "yes")

    assert raw(store, "SELECT task_id, label, revisions FROM labels WHERE annotator = 'alice' ORDER BY task_id") == [
        ("t_a1", "no", 1), ("t_b2", "yes", 1), ("t_c3", "yes", 1), ("t_d4", "no", 1)]
    assert raw(store, "SELECT COUNT(*), COUNT(DISTINCT submission_id) FROM submissions WHERE annotator = 'alice'") == [(4, 4)]
    assert raw(store, "SELECT task_id, annotator, label FROM labels WHERE role = 'adjudication'") == [("t_c3", "judy", "yes")]
    assert store.integrity_check() == "ok"
