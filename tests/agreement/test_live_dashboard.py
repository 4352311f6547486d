"""The dashboard's live view while people label: read from the coding app's real store, refreshed without a restart."""

from __future__ import annotations

import json
import os

import pytest

from samples.jsonl import write_jsonl
from samples.records import BlindTask

ANNOTATORS = ("ann1", "ann2", "ann3")
POLICY = """[policy]
name = "live"
description = "test: the live view's settings and flag rule"
level = 0.95
tie_policy = "exclude"
n_resamples = 200
seed = 20261129

[[criteria]]
type = "human_ceiling"
coefficient = "gwet_ac1"
margin = 0.1
exclude_flagged = true

[quality]
coefficient = "gwet_ac1"
min_upper_bound = 0.5
unmeasurable = "keep"
"""


def _dashboard() -> str:
    return os.path.join(os.path.dirname(__file__), "..", "..", "apps", "dashboard.py")


@pytest.fixture()
def labelling(tmp_path):
    """A blinded study of 8 escalate tasks in two strata, each annotator ordered all of them, and its store."""
    from annotate.store import Store

    root = tmp_path / "study"
    tasks = [f"t_{i:016x}" for i in range(8)]
    key = [{"task_id": t, "unit_id": f"u{i}", "trajectory_id": f"traj{i // 2}", "kind": "escalate_final",
            "strata": {"split": "conflict" if i < 4 else "control"},
            "stratum": "split=conflict" if i < 4 else "split=control", "inclusion_prob": 1.0}
           for i, t in enumerate(tasks)]
    write_jsonl(root / "sealed" / "key.jsonl", key)
    orders = {a: list(tasks) for a in ANNOTATORS}
    (root / "blind").mkdir(parents=True)
    (root / "blind" / "orders.json").write_text(json.dumps(orders))
    (root / "policy.toml").write_text(POLICY)
    (root / "study.json").write_text(json.dumps({"gate": {"policy": str(root / "policy.toml")}}))
    store = Store.for_study(root)
    store.load_tasks([BlindTask(task_id=t, kind="escalate_final", text=f"final turn {i}") for i, t in enumerate(tasks)],
                     orders)
    tokens = {a: store.add_annotator(a) for a in ANNOTATORS}
    truth = ["yes", "no"] * 4
    flip = {"yes": "no", "no": "yes"}

    def label(annotator: str, indices, *, wrong: bool = False) -> None:
        for i in indices:
            value = flip[truth[i]] if wrong else truth[i]
            store.submit(tokens[annotator], tasks[i], value, submission_id=f"submit-{annotator}-{i}", seconds_spent=10.0 + i)

    label("ann1", range(8))
    label("ann2", range(4), wrong=True)  # ann2 says the opposite of ann1 every time
    # A stale export of the store (an older copy of the same rows) must not count twice.
    write_jsonl(root / "labels" / "human.jsonl", [l.model_dump(mode="json") for l in store.labels()[:2]])
    yield root, label, store
    store.close()


def _table(app, header: str) -> list[dict]:
    frames = [f.value for f in app.dataframe if header in f.value.columns]
    assert frames, f"no table with column {header!r}"
    return frames[0].to_dict("records")


@pytest.mark.slow  # 10 s on 2 idle cores: make test runs it, make test-fast does not
def test_live_view_follows_the_store_without_restarting(labelling, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, label, _ = labelling
    monkeypatch.setenv("ACCORD_STUDY", str(root))
    app = AppTest.from_file(_dashboard(), default_timeout=120)
    app.run()
    assert not app.exception
    progress = {r["annotator"]: r for r in _table(app, "labelled outside the order")}
    assert {a: (r["assigned"], r["labelled"], r["done"]) for a, r in progress.items()} == {
        "ann1": ("8", "8", "100%"), "ann2": ("8", "4", "50%"), "ann3": ("8", "0", "0%")}
    strata = {r["stratum"]: r for r in _table(app, "assigned labels")}
    # conflict: tasks 0-3 x 3 annotators = 12 assigned, ann1 4 + ann2 4 labelled; control: 12 assigned, ann1's 4.
    assert (strata["split=conflict"]["labelled"], strata["split=control"]["labelled"]) == ("8", "4")
    assert app.metric[0].value == "4"  # tasks 0-3: ann1 and ann2 disagree, nobody adjudicated yet
    running = _table(app, "units with two labels")
    assert any(r["coefficient"] == "gwet_ac1" and r["units with two labels"] == "4 of 8" for r in running)
    quality = {r["annotator"]: r for r in _table(app, "AC1 vs others [CI]")}
    assert set(quality) == {"ann1", "ann2"}  # ann3 has no label yet
    assert quality["ann2"]["flag"].startswith("FLAGGED: leave-one-out gwet_ac1")
    assert quality["ann1"]["median s/unit [CI]"].startswith("13.500")  # 10..17 s: median 13.5
    assert any("Results" == h.value for h in app.header) and "nothing to report" in app.error[0].value

    label("ann3", range(8))  # ann3 agrees with ann1: the majority of the others now exists for everyone
    app.run()
    assert not app.exception
    progress = {r["annotator"]: r for r in _table(app, "labelled outside the order")}
    assert progress["ann3"]["labelled"] == "8"
    quality = {r["annotator"]: r for r in _table(app, "AC1 vs others [CI]")}
    assert set(quality) == set(ANNOTATORS)
    assert quality["ann3"]["flag"] == "" and quality["ann2"]["flag"].startswith("FLAGGED")
    running = _table(app, "units with two labels")
    assert any(r["coefficient"] == "gwet_ac1" and r["units with two labels"] == "8 of 8" for r in running)


def test_live_view_before_blinding_says_what_is_missing(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ACCORD_STUDY", str(tmp_path))
    app = AppTest.from_file(_dashboard(), default_timeout=60).run()
    assert not app.exception
    assert any("the live view starts once the study is blinded" in i.value for i in app.info)


def test_live_view_without_gold_units_says_so(labelling):
    from apps.live import live_view

    root, _, _ = labelling
    view = live_view(root)
    assert "no gold units, so no gold accuracy (accord gold add)" in view.notes
    assert not any(t.title == "Gold units" for t in view.tables)
    quality = next(t for t in view.tables if t.title == "Annotator quality")
    column = quality.header.index("gold accuracy [CI]")
    assert {row[column] for row in quality.rows} == {"-- (no gold units)"}


@pytest.fixture()
def labelling_with_gold(tmp_path):
    """Four sampled escalate tasks plus four gold units (sealed gold key) in every order, and the store."""
    from annotate.gold import GoldKey, GoldUnit
    from annotate.store import Store
    from samples.jsonl import write_json
    from samples.layout import StudyLayout

    root = tmp_path / "study"
    layout = StudyLayout.of(root)
    tasks = [f"t_{i:016x}" for i in range(4)]
    write_jsonl(layout.key, [{"task_id": t, "unit_id": f"u{i}", "trajectory_id": f"traj{i}", "kind": "escalate_final",
                              "strata": {}, "stratum": "all", "inclusion_prob": 1.0} for i, t in enumerate(tasks)])
    expected = ["yes", "no", "yes", "no"]
    gold = [GoldUnit(gold_id=f"g{i}", label=label,
                     task=BlindTask(task_id=f"t_{0xabc0 + i:016x}", kind="escalate_final", text=f"gold turn {i}"))
            for i, label in enumerate(expected)]
    write_json(layout.gold, GoldKey(rate=0.5, seed=1, sample_sha256="0" * 64, source="gold.jsonl",
                                    source_sha256="0" * 64, units=gold).model_dump(mode="json"))
    gold_ids = [u.task.task_id for u in gold]
    orders = {a: [*tasks, *gold_ids] for a in ANNOTATORS}
    store = Store.for_study(root)
    store.load_tasks([*(BlindTask(task_id=t, kind="escalate_final", text=f"final turn {i}") for i, t in enumerate(tasks)),
                      *(u.task for u in gold)], orders)
    tokens = {a: store.add_annotator(a) for a in ANNOTATORS}
    for a in ("ann1", "ann2"):
        for i, t in enumerate(tasks):
            store.submit(tokens[a], t, expected[i], submission_id=f"real-{a}-{i}")
    flip = {"yes": "no", "no": "yes"}
    # Hand count: ann1 gets gold 0, 1, 2 right and 3 wrong (3 of 4); ann2 labels gold 0 and 1, both wrong (0 of 2);
    # ann3 labels no gold unit.
    for i, answer in enumerate([expected[0], expected[1], expected[2], flip[expected[3]]]):
        store.submit(tokens["ann1"], gold_ids[i], answer, submission_id=f"gold-ann1-{i}")
    for i in (0, 1):
        store.submit(tokens["ann2"], gold_ids[i], flip[expected[i]], submission_id=f"gold-ann2-{i}")
    yield root, store, tokens, gold_ids
    store.close()


def test_live_view_shows_gold_accuracy_per_annotator(labelling_with_gold, monkeypatch):
    from statsmodels.stats.proportion import proportion_confint
    from streamlit.testing.v1 import AppTest

    root, store, tokens, gold_ids = labelling_with_gold
    monkeypatch.setenv("ACCORD_STUDY", str(root))
    app = AppTest.from_file(_dashboard(), default_timeout=120)
    app.run()
    assert not app.exception
    gold = {r["annotator"]: r for r in _table(app, "gold units labelled")}
    low, high = proportion_confint(3, 4, alpha=0.05, method="wilson")  # independent reference (statsmodels)
    assert (gold["ann1"]["gold units labelled"], gold["ann1"]["correct"]) == ("4", "3")
    assert gold["ann1"]["gold accuracy [CI]"] == f"0.750 [{low:.3f}, {high:.3f}]"
    low, high = proportion_confint(0, 2, alpha=0.05, method="wilson")
    assert gold["ann2"]["gold accuracy [CI]"] == f"0.000 [{low:.3f}, {high:.3f}]"
    assert gold["ann3"]["gold accuracy [CI]"] == "-- (no gold unit labelled yet)" and gold["ann3"]["correct"] == "0"
    # Gold labels stay out of agreement: only the four sampled units count.
    running = _table(app, "units with two labels")
    assert all(r["units with two labels"] == "4 of 4" for r in running if r["coefficient"] != "--")
    quality = {r["annotator"]: r for r in _table(app, "AC1 vs others [CI]")}
    low, high = proportion_confint(3, 4, alpha=0.05, method="wilson")
    assert quality["ann1"]["gold accuracy [CI]"] == f"0.750 [{low:.3f}, {high:.3f}] (3 of 4)"
    assert quality["ann1"]["units"] == "4"  # the sampled units only

    store.submit(tokens["ann3"], gold_ids[3], "no", submission_id="gold-ann3-3")  # right: gold 3 expects "no"
    app.run()
    assert not app.exception
    gold = {r["annotator"]: r for r in _table(app, "gold units labelled")}
    low, high = proportion_confint(1, 1, alpha=0.05, method="wilson")
    assert gold["ann3"]["gold accuracy [CI]"] == f"1.000 [{low:.3f}, {high:.3f}]"
