"""One study from its file to its verdict with people labelling in the coding app in Debian's chromium.

The commands are the README's: `accord run STUDY` stops at the human stage and says what to do;
`accord annotators add NAME --study ROOT` prints each token; `accord app --study ROOT` serves the
study's own store; alice and bob sign in and label every task in their order with the keyboard; the
same `accord run STUDY` then reads the store (no export step) and reaches the verdict. What the
browser submitted is what validation counts: the labels table equals the keys each person pressed.
The study is the offline Aggarwal study of tests/study/test_run_offline.py (rule judges, no model).
"""

from __future__ import annotations

import json

import pytest

from agreement.study_io import load_study
from apps.study import load_study_file
from samples.schemes import get_scheme
from tests.annotate.server import coding_app
from tests.annotate.test_browser import IDLE, TIMEOUT_MS, sign_in
from tests.study.helpers import accord, human_labels_match_store, run_json
from tests.study.test_run_offline import study_file  # noqa: F401  (the shared study fixture)
from tests.support.browser import browser

pytestmark = pytest.mark.browser


def _token(capsys, root, name: str) -> str:
    code, out, err = accord(capsys, "annotators", "add", name, "--study", str(root))
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"token for {name} "))
    return lines[at + 1].strip()


def test_people_label_in_chromium_and_the_same_run_reaches_the_verdict(study_file, capsys) -> None:  # noqa: F811
    root = load_study_file(study_file).output
    code, result = run_json(capsys, str(study_file))
    assert code == 0 and result["verdict"] is None and "accord app --study" in result["waiting"]
    tasks = [json.loads(line) for line in (root / "blind" / "tasks.jsonl").read_text().splitlines()]
    labels = get_scheme("ehq4").labels  # the scheme the annotators code under (read as decisions by the label map)
    tokens = {name: _token(capsys, root, name) for name in ("alice", "bob")}

    pressed: dict[tuple[str, int], str] = {}
    with coding_app(root) as url:
        for offset, (name, token) in enumerate(tokens.items()):
            with browser() as context:  # each person in a browser of their own (the session is a cookie)
                page = context.new_page()
                sign_in(page, url, token)
                for position in range(1, len(tasks) + 1):
                    page.get_by_text(f"Task {position} of {len(tasks)}", exact=True).wait_for(timeout=TIMEOUT_MS)
                    page.locator(IDLE).wait_for(timeout=TIMEOUT_MS)
                    page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=TIMEOUT_MS)
                    key = 1 + (position + offset) % 3  # varied labels, and the two people differ on some tasks
                    page.keyboard.press(str(key))
                    page.keyboard.press("s")
                    page.get_by_text(f"Saved '{labels[key - 1]}'", exact=False).first.wait_for(timeout=TIMEOUT_MS)
                    pressed[name, position] = labels[key - 1]

    code, result = run_json(capsys, str(study_file))
    verdict = json.loads((root / "gate" / "verdict.json").read_text())
    assert result["verdict"] == verdict["verdict"] and code == (0 if verdict["verdict"] == "ACCEPT" else 1)
    rows = human_labels_match_store(root)  # the run pulled the store into the study's labels file
    assert len(rows) == 2 * len(tasks) and {r["backend"] for r in rows} == {"app"}
    # What each person pressed, in their order, is what the study's labels hold and validation reads.
    orders = json.loads((root / "blind" / "orders.json").read_text())
    by_task = {(r["annotator"], r["task_id"]): r["label"] for r in rows}
    for name in tokens:
        order = orders[name] if isinstance(orders[name], list) else orders[name]["order"]
        assert [by_task[name, task] for task in order] == [pressed[name, p] for p in range(1, len(order) + 1)]
    study = load_study(root, cluster="trajectory")
    assert set(study.human["annotator"]) == {"alice", "bob"} and len(study.human) == 2 * len(tasks)
    assert (root / "report" / "report.html").is_file()
