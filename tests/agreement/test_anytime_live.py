"""The anytime verdict where people label: the dashboard's line in a real browser, and the coding app's
"study complete" screen once the verdict is decided.

The study is test_sequential_sources.py's: 60 escalate units, two annotators agreeing on every unit, a judge
wrong on the 12 units labelled first, percent agreement floor 0.6 under anytime monitoring. Its path, from
confseq (see that module): after 3 wrong units the floor's upper bound is 0.829 >= 0.6 (undecided); after 7,
0.582 < 0.6: REJECTED at look 7.
"""

from __future__ import annotations

import json

import pytest

from tests.agreement.test_sequential_sources import GIVEN_ORDER, POLICY, TRUTH, _blinded


@pytest.fixture
def labelling(tmp_path):
    """The study with its store, the anytime policy as accord run resolves it, and a labeller of the next k units."""
    from annotate.store import Store

    root = tmp_path / "study"
    tasks, ids = _blinded(root, ("a1", "a2"))
    (root / "policy.toml").write_text(POLICY)
    (root / "study.json").write_text(json.dumps({"gate": {"policy": str(root / "policy.toml")}}))
    store = Store.for_study(root)
    store.load_tasks(tasks, {"a1": ids, "a2": ids})
    tokens = {a: store.add_annotator(a) for a in ("a1", "a2")}
    given = list(GIVEN_ORDER)

    def label(k: int) -> None:
        for _ in range(k):
            i = given.pop(0)
            for a in ("a1", "a2"):
                store.submit(tokens[a], ids[i], TRUTH[i], submission_id=f"submit-{a}-{i:03d}")

    yield root, label, store, tokens
    store.close()


@pytest.mark.browser
def test_the_dashboard_shows_the_anytime_verdict_while_people_label(labelling):
    from tests.support.browser import browser
    from tests.support.servers import serve_accord

    root, label, _, _ = labelling
    label(3)
    with serve_accord(["dashboard", str(root)], name="dashboard-anytime", log_path=root / "dashboard.log") as url, \
            browser() as context:
        page = context.new_page()
        page.goto(url)
        page.get_by_text("Anytime verdict: CONTINUE").wait_for(timeout=90_000)
        page.get_by_text("j: CONTINUE after 3 units").wait_for(timeout=30_000)
        # each criterion with its sequential method and interval, in the table beside the line (drawn after the
        # line: wait for it rather than read it at once)
        page.get_by_text("hedged betting confidence sequence", exact=False).first.wait_for(timeout=30_000)

        label(57)  # the rest: the floor fails at look 7 (confseq: upper bound 0.582 < 0.6)
        page.reload()
        page.get_by_text("Anytime verdict: REJECT").wait_for(timeout=90_000)
        page.get_by_text("j: REJECT at look 7 (n = 7 of 60 units labelled)").wait_for(timeout=30_000)
        page.get_by_role("cell", name="FAIL at look 7").first.wait_for(timeout=30_000)


@pytest.mark.browser
def test_a_decided_study_tells_annotators_no_more_labels_are_needed(labelling, capsys):
    """a3 has all 60 tasks to go; once the anytime gate has REJECTED at look 7 (a1 and a2's first 7 units), a3's
    next page is the "study complete" screen, not a task (and never the verdict: annotators stay blind to it)."""
    from apps.cli import main
    from samples.records import BlindTask
    from tests.annotate.server import coding_app
    from tests.annotate.test_browser import sign_in
    from tests.support.browser import browser

    root, label, store, _ = labelling
    tasks = [BlindTask.model_validate_json(line) for line in (root / "blind" / "tasks.jsonl").read_text().splitlines()]
    ids = [t.task_id for t in tasks]
    store.load_tasks(tasks, {"a1": ids, "a2": ids, "a3": ids})
    token = store.add_annotator("a3")
    label(3)
    policy = str(root / "policy.toml")
    with coding_app(root, name="coding-app-anytime") as url, browser() as context:
        page = context.new_page()
        sign_in(page, url, token)
        page.get_by_text("Task 1 of 60", exact=True).wait_for(timeout=30_000)
        capsys.readouterr()
        assert main(["gate", str(root), "--policy", policy, "--sequential"]) == 1  # CONTINUE after 3 units
        assert "CONTINUE after 3 units" in capsys.readouterr().out
        page.reload()
        page.get_by_text("Task 1 of 60", exact=True).wait_for(timeout=30_000)  # undecided: labelling goes on

        label(4)
        assert main(["gate", str(root), "--policy", policy, "--sequential"]) == 1
        assert "REJECT at look 7 (7 of 7 units)" in capsys.readouterr().out
        page.reload()
        page.get_by_text("This study is complete: no more labels are needed.").wait_for(timeout=30_000)
        assert page.get_by_text("Task 1 of 60", exact=True).count() == 0
        assert page.get_by_text("REJECT").count() == 0


def test_a_decided_study_closes_the_remaining_label_studio_tasks(labelstudio_server, tmp_path, capsys, monkeypatch):
    """Label Studio Community has no task lock, so the tasks nobody labelled are deleted (one Data Manager
    delete_tasks action per project): an annotator's own token can no longer open one, the labelled ones stay, and
    push does not bring them back."""
    import httpx
    from label_studio_sdk import LabelStudio

    from annotate.labelstudio import LabelStudioBackend, load_labelstudio_credentials
    from annotate.tasks import load_orders, load_tasks
    from apps.cli import main
    from samples.layout import StudyLayout
    from tests.support.ls_requests import counted_requests

    root = tmp_path / "study"
    _, ids = _blinded(root, ("ann-a", "ann-b"))
    (root / "policy.toml").write_text(POLICY)
    layout = StudyLayout.of(root)
    tasks = load_tasks(layout.tasks)
    backend = LabelStudioBackend(study=root, token=labelstudio_server.token, url=labelstudio_server.url,
                                 admin_password=labelstudio_server.admin_password)
    backend.push(tasks, load_orders(layout.orders, tasks))
    state = json.loads(layout.labelstudio_state.read_text(encoding="utf-8"))
    credentials = load_labelstudio_credentials(root)

    def ls_task(name: str, i: int) -> int:
        return state["annotators"][name]["projects"]["escalate_final"]["tasks"][ids[i]]

    clients = {name: LabelStudio(base_url=labelstudio_server.url, api_key=credentials.annotators[name].api_token)
               for name in ("ann-a", "ann-b")}
    for i in GIVEN_ORDER[:7]:  # the 7 units at which the anytime gate REJECTS (confseq: 0.582 < 0.6)
        for name, client in clients.items():
            client.annotations.create(id=ls_task(name, i), result=[{"from_name": "label", "to_name": "display",
                                                                    "type": "choices",
                                                                    "value": {"choices": [TRUTH[i]]}}])
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    assert main(["ls", "pull", "--study", str(root)]) == 0
    capsys.readouterr()
    # Not decided yet (no saved anytime verdict): close refuses, one line, nothing deleted.
    assert main(["ls", "close", "--study", str(root)]) == 2
    assert "no decided anytime verdict" in capsys.readouterr().err
    assert main(["gate", str(root), "--policy", str(root / "policy.toml"), "--sequential"]) == 1
    assert "REJECT at look 7 (7 of 7 units)" in capsys.readouterr().out
    with counted_requests(monkeypatch) as sent:
        assert main(["ls", "close", "--study", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["closed"] == {"ann-a": 53, "ann-b": 53}
    # One bulk delete per project (2), never a request per task (106).
    assert (sent["POST /api/dm/actions/"], sent["DELETE /api/tasks/N/"]) == (2, 0), sent

    remaining, labelled = GIVEN_ORDER[7], GIVEN_ORDER[0]
    for name in ("ann-a", "ann-b"):
        with httpx.Client(base_url=labelstudio_server.url,
                          headers={"Authorization": f"Token {credentials.annotators[name].api_token}"}) as person:
            assert person.get(f"/api/tasks/{ls_task(name, remaining)}/").status_code == 404
            assert person.get(f"/api/tasks/{ls_task(name, labelled)}/").status_code == 200
    # Pushing again imports none of the closed tasks, and nobody is waited for.
    again = backend.push(tasks, load_orders(layout.orders, tasks))
    assert again.created == 0
    assert backend.status().missing() == {}
    assert main(["ls", "pull", "--study", str(root)]) == 0
    assert len(StudyLayout.of(root).labelstudio_labels.read_text().splitlines()) == 14
