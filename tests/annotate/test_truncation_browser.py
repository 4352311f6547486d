"""A truncated response seen by a person in the coding app (Debian's chromium): a notice above the response says it
was cut off and why, and a finished response has none. The units are cut by the real responses adapter from records
with the finish reason a provider reports; the flag is EHQ's truncation rule (samples.truncation)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotate.app_backend import AppBackend
from samples.blind import blind
from samples.ingest import ingest
from samples.records import SampledUnit
from tests.annotate.test_browser import expect_text, label_button, sign_in, wait_chosen
from tests.support.browser import browser

pytestmark = pytest.mark.browser
RECORDS = [
    {"model": "m1", "item_id": "q1", "question": "Who wrote Ulysses?", "reference": ["James Joyce"],
     "response": "It was written by the Irish author <i>James</i>", "finish_reason": "length"},
    {"model": "m1", "item_id": "q2", "question": "Capital of Australia?", "reference": ["Canberra"],
     "response": "The capital is Canberra.", "finish_reason": "stop"},
]


@pytest.fixture
def truncation_app(tmp_path: Path):
    from tests.annotate.server import coding_app

    source = tmp_path / "responses.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    root = tmp_path / "study"
    ingest([source], root, adapter="responses", kinds=["response"])
    units = [SampledUnit(**json.loads(line), stratum="all", inclusion_prob=1.0)
             for line in (root / "units.jsonl").read_text().splitlines()]
    tasks = sorted(blind(units, annotators=["ann"], salt=b"s" * 32).tasks, key=lambda t: t.truncation is None)
    assert tasks[0].truncation and tasks[1].truncation is None
    (root / "blind").mkdir()
    (root / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    (root / "blind" / "orders.json").write_text(json.dumps({"ann": [t.task_id for t in tasks]}))
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    token = backend.store.add_annotator("ann")
    with coding_app(root) as url:
        yield url, token
    backend.store.close()


def test_the_coder_sees_the_truncation_notice_on_the_cut_response_only(truncation_app):
    url, token = truncation_app
    with browser() as context:
        page = context.new_page()
        sign_in(page, url, token)
        expect_text(page, "Task 1 of 2")
        notice = page.get_by_role("alert").filter(has_text="This response was truncated")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text("This response was cut off before it finished: the model hit its token budget "
                                       "(finish_reason 'length').")
        # Above the response it qualifies, and the response's markup is shown, not rendered.
        response = page.get_by_text("It was written by the Irish author <i>James</i>")
        expect(response).to_be_visible()
        assert notice.bounding_box()["y"] < response.bounding_box()["y"]
        label_button(page, "HEDGE").click()
        wait_chosen(page, "HEDGE")
        page.get_by_role("button", name=re.compile(r"^Submit")).click()
        expect_text(page, "Task 2 of 2")
        expect(page.get_by_text("The capital is Canberra.")).to_be_visible()
        expect(page.get_by_text("This response was truncated")).to_have_count(0)
