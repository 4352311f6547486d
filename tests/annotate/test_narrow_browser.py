"""The coding app at 800 px wide in Debian's chromium (issue 25): the sidebar starts folded, the unit gets
the width, the unit kind's question sits above the choices, and Submit is in view under a long unit."""

from __future__ import annotations

import re

import pytest

from annotate.app_backend import AppBackend
from tests.annotate.helpers import write_study
from tests.annotate.long_units import long_tasks
from tests.annotate.server import coding_app
from tests.annotate.test_browser import TIMEOUT_MS, expect_text, sign_in
from tests.support.browser import browser

pytestmark = pytest.mark.browser


def _box(page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


def test_at_800_px_the_unit_has_the_width_and_submit_is_in_view(tmp_path):
    tasks = long_tasks(n_turns=20, tool_bytes=40_000)[:2]  # long identify units (turns with CSV tool output)
    root = write_study(tmp_path / "study", tasks=tasks, orders={"ann": [t.task_id for t in tasks]})
    store = AppBackend(study=root).store
    token = store.add_annotator("ann")
    with coding_app(root) as url, browser() as context:
        page = context.new_page()
        page.set_viewport_size({"width": 800, "height": 700})
        sign_in(page, url, token)
        expect_text(page, "Task 1 of 2")
        page.wait_for_function("() => document.querySelector('.accord-workspace').getBoundingClientRect().left < 100",
                               timeout=TIMEOUT_MS)  # the sidebar folded itself
        page.wait_for_timeout(500)  # its slide is animated
        unit = _box(page, ".accord-reader")  # the turn index and the unit's pane
        assert unit["x"] < 100 and unit["width"] > 700, unit  # the unit was squeezed to 215 px beside the sidebar
        question = page.get_by_text(re.compile(r"^Does the turn you are labelling|^Did the agent recognise"))
        choices = _box(page, ".accord-label-form [role=radiogroup]")
        assert question.bounding_box()["y"] < choices["y"]  # the question right above the choices
        submit = _box(page, ".accord-submit")
        assert submit["y"] + submit["height"] <= 700, submit  # in view without scrolling the page
        page.mouse.wheel(0, 1500)  # and it stays in view while the page scrolls through the unit
        page.wait_for_timeout(300)
        submit = _box(page, ".accord-submit")
        assert 0 <= submit["y"] and submit["y"] + submit["height"] <= 700, submit
        page.keyboard.press("2")
        page.keyboard.press("s")
        expect_text(page, "Task 2 of 2")
        page.screenshot(path=str(tmp_path / "narrow.png"))
        # the folded sidebar opens at a click on Streamlit's arrow, with the navigation in it
        page.locator('[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapsedControl"] button').first.click()
        page.get_by_role("button", name=re.compile("Previous")).wait_for(timeout=TIMEOUT_MS)
