"""`accord gate --sequential` reads labels in the order people gave them, whatever the label source.

One hand-built study: 60 escalate units (labels alternate no/yes), two annotators who agree with each
other on every unit, one judge wrong on exactly 12 units. The order is built so that the 12 wrong units
come FIRST in the order people gave the labels and LAST by id (task ids, unit ids and file order all
put them at the end), so a source whose order were lost would look at them last.

Verdict path (policy: percent agreement vs the human majority, lower bound >= 0.6, anytime), derived
with confseq 0.0.11 (Waudby-Smith & Ramdas' own code, the cross-check venv of test_sequential.py), the
hedged betting confidence sequence at alpha 0.05 on the judge's per-unit agreement:
- wrong units first, x = 0 x 12 then 1 x 48: upper bounds 1, .963, .829, .752, .686, .630, .582 -> the
  upper bound is below 0.6 at look 7 -> the floor FAILS there, and the study is REJECTED at look 7
  (nothing else can decide earlier: a failure of another criterion needs its own evidence against it,
  and the built-ins only gain evidence for the judge once correct units arrive).
- wrong units last, x = 1 x 48 then 0 x 12: the lower bound first reaches 0.6 at look 13 -> the floor
  PASSES at look 13 and the study is never REJECTED (a passed criterion stays passed).
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from apps.cli import main
from samples.jsonl import write_jsonl
from samples.records import BlindTask, KeyEntry

CONFSEQ_VENV = Path(os.environ.get("ACCORD_CACHE", Path.home() / ".cache" / "accord")) / "bench-venvs" / "confseq"
N, WRONG = 60, 12
TRUTH = ["yes" if i % 2 else "no" for i in range(N)]
FLIP = {"yes": "no", "no": "yes"}
WRONG_UNITS = tuple(range(N - WRONG, N))  # the last ids ...
GIVEN_ORDER = WRONG_UNITS + tuple(range(N - WRONG))  # ... labelled first
POLICY = """[policy]
name = "order"
description = "percent agreement floor under anytime monitoring"
level = 0.95
tie_policy = "exclude"
n_resamples = 200
seed = 20261129
monitoring = "anytime"

[[criteria]]
type = "agreement_floor"
coefficient = "percent_agreement"
reference = "human_majority"
min_lower_bound = 0.6
"""


def judge_label(i: int) -> str:
    return FLIP[TRUTH[i]] if i in WRONG_UNITS else TRUTH[i]


def confseq_looks(paths: list[list[float]], floor: float) -> list[tuple[int | None, int | None]]:
    """Per path, (first look with upper < floor, first look with lower >= floor) of confseq's betting CS, 1-based
    (one interpreter for every path: starting confseq's venv costs about a CPU-second)."""
    python = CONFSEQ_VENV / "bin" / "python"
    if not python.exists():
        pytest.fail(f"the confseq cross-check venv is missing at {CONFSEQ_VENV}: run bash scripts/confseq_venv.sh")
    script = ("import json, sys, numpy as np\nfrom confseq.betting import betting_cs\n"
              "bounds = [betting_cs(np.array(x), alpha=0.05, breaks=1000, running_intersection=True, convex_comb=True)"
              " for x in json.load(sys.stdin)]\nprint(json.dumps([[l.tolist(), u.tolist()] for l, u in bounds]))\n")
    done = subprocess.run([str(python), "-c", script], input=json.dumps(paths), capture_output=True, text=True,
                          timeout=300, check=True)
    looks = []
    for low, high in (map(np.array, pair) for pair in json.loads(done.stdout)):
        fail, passed = np.nonzero(high < floor)[0], np.nonzero(low >= floor)[0]
        looks.append(((int(fail[0]) + 1 if fail.size else None), (int(passed[0]) + 1 if passed.size else None)))
    return looks


def test_the_hand_derived_path_is_confseqs():
    """The numbers the docstring derives, recomputed from confseq (not from accord)."""
    wrong_first = [0.0] * WRONG + [1.0] * (N - WRONG)
    first, last = confseq_looks([wrong_first, wrong_first[::-1]], 0.6)
    assert first[0] == 7
    assert last == (None, 13)


def _policy(tmp_path: Path) -> Path:
    path = tmp_path / "order.toml"
    path.write_text(POLICY)
    return path


def _gate(study: Path, policy: Path, capsys) -> tuple[dict, str]:
    capsys.readouterr()
    code = main(["gate", str(study), "--policy", str(policy), "--sequential", "--json"])
    body = json.loads(capsys.readouterr().out)
    assert code == (0 if body["verdict"] == "ACCEPT" else 1)
    main(["gate", str(study), "--policy", str(policy), "--sequential"])
    return body["judges"]["j"]["sequential"], capsys.readouterr().out


def assert_wrong_first(sequential: dict) -> None:
    assert (sequential["outcome"], sequential["decided_at_look"], sequential["units_at_decision"]) == ("REJECT", 7, 7)
    floor = next(c for c in sequential["criteria"] if c["type"] == "agreement_floor")
    assert floor["decision"] == "FAIL"


def assert_wrong_last(sequential: dict, text: str) -> None:
    assert sequential["outcome"] != "REJECT"
    assert "PASS at look 13  percent_agreement vs human majority" in text


def _blinded(root: Path, annotators: tuple[str, ...]) -> tuple[list[BlindTask], list[str]]:
    """Sealed key, tasks, orders and judge labels of the 60 units; task ids sort as unit ids (the wrong ones last)."""
    tasks = [BlindTask(task_id=f"t_{i:016x}", kind="escalate_final", text=f"final turn {i}") for i in range(N)]
    key = [KeyEntry(task_id=t.task_id, unit_id=f"u_{i:020x}", trajectory_id=f"traj{i:03d}", kind="escalate_final",
                    strata={"split": "conflict"}, stratum="split=conflict", inclusion_prob=1.0)
           for i, t in enumerate(tasks)]
    write_jsonl(root / "sealed" / "key.jsonl", [k.model_dump(mode="json") for k in key])
    write_jsonl(root / "blind" / "tasks.jsonl", [t.model_dump(mode="json") for t in tasks])
    (root / "blind" / "orders.json").write_text(json.dumps({name: [t.task_id for t in tasks] for name in annotators}))
    write_jsonl(root / "judges" / "labels.jsonl", [dict(unit_id=k.unit_id, judge="j", label=judge_label(i),
                                                        parse_status="ok", fingerprint="fp")
                                                   for i, k in enumerate(key)])
    return tasks, [t.task_id for t in tasks]


@pytest.mark.parametrize("order", ["given", "reversed"])
def test_the_coding_app_store_is_read_in_submission_order(tmp_path, capsys, order):
    """The store's rows come back by task; the looks must follow when they were submitted."""
    from annotate.store import Store

    root = tmp_path / "study"
    tasks, ids = _blinded(root, ("a1", "a2"))
    store = Store.for_study(root)
    try:
        store.load_tasks(tasks, {"a1": ids, "a2": ids})
        tokens = {a: store.add_annotator(a) for a in ("a1", "a2")}
        for i in GIVEN_ORDER if order == "given" else GIVEN_ORDER[::-1]:
            for a in ("a1", "a2"):
                store.submit(tokens[a], ids[i], TRUTH[i], submission_id=f"submit-{a}-{i:03d}")
    finally:
        store.close()
    sequential, text = _gate(root, _policy(tmp_path), capsys)
    assert sequential["labelling"] == "all 120 planned labels (blind/orders.json) are in"
    if order == "given":
        assert_wrong_first(sequential)
    else:
        assert_wrong_last(sequential, text)


def _table(path: Path, rows: list[int], *, times: dict[int, str] | None = None) -> Path:
    head = "item,a1,a2,j" + (",given_at" if times else "")
    lines = [head] + [f"i{i:03d},{TRUTH[i]},{TRUTH[i]},{judge_label(i)}" + (f",{times[i]}" if times else "")
                      for i in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _import(tmp_path: Path, name: str, table: Path, *extra: str) -> Path:
    study = tmp_path / name
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "item", "--kind",
                 "escalate_final", "--annotator-columns", "a1,a2", "--judge-columns", "j", *extra]) == 0
    return study


def test_an_imported_table_is_read_in_row_order(tmp_path, capsys):
    policy = _policy(tmp_path)
    given = _import(tmp_path, "given", _table(tmp_path / "given.csv", list(GIVEN_ORDER)))
    assert_wrong_first(_gate(given, policy, capsys)[0])
    by_id = _import(tmp_path, "by_id", _table(tmp_path / "by_id.csv", list(range(N))))
    assert_wrong_last(*_gate(by_id, policy, capsys))


def test_an_imported_tables_time_column_orders_it(tmp_path, capsys):
    """Rows by id (wrong units last), times saying the wrong ones were labelled first: the times win. The times
    mix zones and a zoneless one (UTC), so their text order is not their time order."""
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    zones = (timezone(timedelta(hours=2)), None, timezone(timedelta(hours=-5)))
    times = {}
    for k, i in enumerate(GIVEN_ORDER):
        at, zone = start + timedelta(minutes=k), zones[k % 3]
        times[i] = (at.astimezone(zone) if zone else at.replace(tzinfo=None)).isoformat()
    table = _table(tmp_path / "timed.csv", list(range(N)), times=times)
    study = _import(tmp_path, "timed", table, "--time-column", "given_at")
    assert_wrong_first(_gate(study, _policy(tmp_path), capsys)[0])
    rows = [json.loads(line) for line in (study / "labels" / "imported" / "timed.jsonl").read_text().splitlines()]
    first = next(r for r in rows if r["annotator"] == "a1" and r["created_at"] == "2026-01-05T09:00:00.000000+00:00")
    assert first["updated_at"] == first["created_at"]


def test_a_bad_time_is_one_line_naming_the_row_and_column(tmp_path, capsys):
    table = tmp_path / "bad.csv"
    table.write_text("item,a1,a2,j,given_at\ni000,no,no,no,2026-01-05T09:00:00Z\ni001,yes,yes,yes,yesterday\n")
    capsys.readouterr()
    assert main(["import", "table", str(table), "--study", str(tmp_path / "bad"), "--unit-column", "item", "--kind",
                 "escalate_final", "--annotator-columns", "a1,a2", "--judge-columns", "j",
                 "--time-column", "given_at"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.csv:3" in err[0] and "'given_at'" in err[0] and "'yesterday'" in err[0], err
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").rglob("*.jsonl"))
    assert main(["import", "table", str(table), "--study", str(tmp_path / "bad2"), "--unit-column", "item", "--kind",
                 "escalate_final", "--annotator-columns", "a1,a2", "--judge-columns", "j",
                 "--time-column", "when"]) == 2
    assert "--time-column: no column 'when'" in capsys.readouterr().err


@pytest.mark.parametrize("order", ["given", "reversed"])
def test_label_studio_pulls_are_read_in_annotation_order(labelstudio_server, tmp_path, capsys, monkeypatch, order):
    """Annotations made through Label Studio's API in the hand-built order, pulled: the looks follow them."""
    from label_studio_sdk import LabelStudio

    from annotate.labelstudio import LabelStudioBackend, load_labelstudio_credentials
    from annotate.tasks import load_orders, load_tasks
    from samples.layout import StudyLayout

    root = tmp_path / "study"
    _, ids = _blinded(root, ("ann-a", "ann-b"))
    layout = StudyLayout.of(root)
    tasks = load_tasks(layout.tasks)
    LabelStudioBackend(study=root, token=labelstudio_server.token, url=labelstudio_server.url,
                       admin_password=labelstudio_server.admin_password).push(tasks, load_orders(layout.orders, tasks))
    state = json.loads(layout.labelstudio_state.read_text(encoding="utf-8"))
    credentials = load_labelstudio_credentials(root)
    # One client per annotator, as a person keeps one session: a client per annotation only cost set-up.
    clients = {name: LabelStudio(base_url=labelstudio_server.url, api_key=credentials.annotators[name].api_token)
               for name in ("ann-a", "ann-b")}
    for i in GIVEN_ORDER if order == "given" else GIVEN_ORDER[::-1]:
        for name, client in clients.items():
            ls_task = state["annotators"][name]["projects"]["escalate_final"]["tasks"][ids[i]]
            client.annotations.create(id=ls_task, result=[{"from_name": "label", "to_name": "display",
                                                           "type": "choices", "value": {"choices": [TRUTH[i]]}}])
    monkeypatch.setenv("ACCORD_LS_TOKEN", labelstudio_server.token)
    assert main(["ls", "pull", "--study", str(root)]) == 0
    sequential, text = _gate(root, _policy(tmp_path), capsys)
    if order == "given":
        assert_wrong_first(sequential)
    else:
        assert_wrong_last(sequential, text)
