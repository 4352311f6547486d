"""The active order (agreement/active_order.py) and the order people are served in under `[sampling] order =
"active"`: the same order in the coding app's queue as computed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agreement.active_order import active_order, cross_family_votes

# Judge j (family qwen) and two judges of other families on 6 units; the other-family labels per unit.
LABELS = {
    "j": {"u0": "yes", "u1": "yes", "u2": "no", "u3": "no", "u4": "yes", "u5": None},
    "k": {"u0": "yes", "u1": "no", "u2": "no", "u3": "yes", "u4": "no", "u5": "no"},
    "l": {"u0": "yes", "u1": "yes", "u2": "no", "u3": "yes", "u4": None, "u5": "no"},
    "j2": {"u0": "no", "u1": "no", "u2": "yes", "u3": "yes", "u4": "no", "u5": "no"},  # j's family: not a vote
}
FAMILIES = {"j": "qwen", "j2": "qwen", "k": "llama", "l": "gemma"}


def test_cross_family_votes_by_hand():
    units, agreeing, voting = cross_family_votes(LABELS, "j", FAMILIES)
    # u5: unscored by j, not ranked. u0: k, l both 'yes' = j -> 2 of 2; u1: k no, l yes -> 1 of 2; u2: 2 of 2;
    # u3: both 'yes' vs j 'no' -> 0 of 2; u4: k 'no', l unscored -> 0 of 1. j2 is j's family: never counted.
    assert units == ["u0", "u1", "u2", "u3", "u4"]
    assert agreeing.tolist() == [2, 1, 2, 0, 0] and voting.tolist() == [2, 2, 2, 2, 1]
    with pytest.raises(ValueError, match="judge='x'"):
        cross_family_votes(LABELS, "x", FAMILIES)


def test_the_order_is_sequential_poisson_sampling_on_the_prediction():
    """Keys U_i / sqrt(f (1 - f)), f = (agreeing + 1/2) / (voting + 1), U from the documented seeded stream,
    recomputed here by hand: f = 5/6, 1/2, 5/6, 1/6, 1/4."""
    units, agreeing, voting = cross_family_votes(LABELS, "j", FAMILIES)
    order = active_order(units, agreeing, voting, judge="j", seed=20261129)
    f = np.array([5 / 6, 1 / 2, 5 / 6, 1 / 6, 1 / 4])
    u = np.random.default_rng([20261129, 26]).random(5)
    key = u / np.sqrt(f * (1 - f))
    assert order.units == tuple(np.array(units)[np.argsort(key)])
    assert np.all(np.diff(order.key) >= 0)
    assert order.predicted == pytest.approx(f[np.argsort(key)])
    # Inclusion probabilities of a prefix: proportional to sqrt(f (1 - f)), summing to the prefix length.
    pi = order.inclusion(2)
    assert pi.sum() == pytest.approx(2.0)
    score = np.sqrt(order.predicted * (1 - order.predicted))
    assert pi / pi.sum() == pytest.approx(score / score.sum())
    # Same inputs, same order; another seed, other draws.
    assert active_order(units, agreeing, voting, judge="j", seed=20261129).units == order.units
    assert active_order(units, agreeing, voting, judge="j", seed=1).key.tolist() != order.key.tolist()


def test_split_units_come_first_far_more_often_than_agreed_ones():
    """Over many seeds the unit where the other families split (f = 1/2, lambda a = 0.5) is served before a unit
    they agree on (f = 5/6, lambda b = sqrt(5/36) = 0.3727) with P(U1 / a < U2 / b) = integral over u of
    min(1, a u / b) = 1 - b / (2 a) = 0.627."""
    first = 0
    for seed in range(2000):
        order = active_order(["agreed", "split"], np.array([2, 1]), np.array([2, 2]), judge="j", seed=seed)
        first += order.units[0] == "split"
    b = np.sqrt(5 / 36)
    assert first / 2000 == pytest.approx(1 - b / (2 * 0.5), abs=0.03)


def test_the_coding_app_serves_the_active_order(tmp_path):
    """Blinding with the active order's ranks: every annotator's queue in the coding app's store is the computed
    order (mapped to task ids through the sealed key); the unit the judge left unscored comes last."""
    from agreement.active_order import publish_active_order
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store
    from annotate.tasks import load_orders, load_tasks
    from samples.blind import blind_study
    from samples.jsonl import write_jsonl
    from samples.layout import StudyLayout
    from samples.records import SampledUnit

    root = tmp_path / "study"
    layout = StudyLayout.of(root)
    units = [SampledUnit(unit_id=u, trajectory_id=f"traj-{u}", kind="escalate_final", text=f"final answer {u}",
                         stratum="all", inclusion_prob=1.0) for u in sorted(LABELS["j"])]
    write_jsonl(layout.sample, units)
    write_jsonl(layout.judge_labels, [{"unit_id": u, "judge": j, "label": label, "parse_status": "ok" if label else
                                       "unscored", "fingerprint": "fp"}
                                      for j, by_unit in LABELS.items() for u, label in by_unit.items()])
    ranking = publish_active_order(layout, judge="j", families=FAMILIES, seed=20261129)
    document = json.loads(layout.active_order.read_text())
    computed = [row["unit_id"] for row in document["units"]]
    units_, agreeing, voting = cross_family_votes(LABELS, "j", FAMILIES)
    assert computed == list(active_order(units_, agreeing, voting, judge="j", seed=20261129).units)
    assert "sequential Poisson sampling" in document["method"] and "1 / pi_i(n)" in document["weighting"]

    blind_study(root, annotators=["ann1", "ann2"], ranking=ranking)
    unit_of = {row["task_id"]: row["unit_id"] for row in map(json.loads, layout.key.read_text().splitlines())}
    tasks = load_tasks(layout.tasks)
    store = Store.for_study(root)
    try:
        store.load_tasks(tasks, load_orders(layout.orders, tasks))
        for name in ("ann1", "ann2"):
            served = [unit_of[t] for t in AnnotatorSession(store, store.add_annotator(name)).order()]
            assert served == computed + ["u5"]
        # Both annotators label the first 4 units served, all 'yes': the report says the order was adaptive and
        # weights the judge's agreement (j's label == 'yes') by the first 4 units' inclusion probabilities.
        tokens = {name: store.rotate_token(name) for name in ("ann1", "ann2")}
        task_of = {u: t for t, u in unit_of.items()}
        for k, unit in enumerate(computed[:4]):
            for name in ("ann1", "ann2"):
                store.submit(tokens[name], task_of[unit], "yes", submission_id=f"submit-{name}-{k:03d}")
    finally:
        store.close()
    from agreement.active import active_mean, labelling_probabilities
    from agreement.report import build_report
    from apps.cli import main

    assert main(["validate", str(root), "--n-resamples", "200"]) == 0
    table = next(t for t in build_report(root).tables if t.title == "Labelling order: adaptive")
    rows = dict(table.rows)
    assert rows["order"].startswith("adaptive: sequential Poisson sampling")
    assert "inverse-probability weights" in rows["weighting"] and "PPI++" in rows["weighting"]
    f = np.array([row["predicted"] for row in document["units"]])
    y = np.array([float(LABELS["j"][u] == "yes") for u in computed])
    expected = active_mean(y, f, labelling_probabilities(f, 4.0), np.arange(5) < 4)
    ci = expected.confidence_interval()
    low, high = ci.low, ci.high
    assert rows["percent agreement of j vs the human majority, weighted"].startswith(
        f"{expected.statistic:.3f} [{low:.3f}, {high:.3f}] (4 of 5 units labelled")
    # The anytime gate takes no early decision on an adaptive prefix: CONTINUE (exit 1) while a planned label is
    # missing, saying why, with the fixed-n verdict beside it.
    assert main(["gate", str(root), "--policy", "data/policies/screening.toml", "--judge", "j", "--sequential"]) == 1
    verdict = json.loads(layout.verdict.read_text())["judges"]["j"]
    assert verdict["verdict"] == "CONTINUE" and verdict["fixed_n_verdict"] in ("ACCEPT", "REJECT")
    assert "adaptive (active) order" in verdict["sequential"]["not_applied"]


def test_label_studio_tasks_carry_the_active_order(labelstudio_server, tmp_path):
    """Pushed in each annotator's order, Label Studio numbers the tasks in the active order (its task list and
    label stream serve by id)."""
    from agreement.active_order import publish_active_order
    from annotate.labelstudio import LabelStudioBackend
    from annotate.tasks import load_orders, load_tasks
    from samples.blind import blind_study
    from samples.jsonl import write_jsonl
    from samples.layout import StudyLayout
    from samples.records import SampledUnit

    root = tmp_path / "study"
    layout = StudyLayout.of(root)
    write_jsonl(layout.sample, [SampledUnit(unit_id=u, trajectory_id=f"traj-{u}", kind="escalate_final",
                                            text=f"final answer {u}", stratum="all", inclusion_prob=1.0)
                                for u in sorted(LABELS["j"])])
    write_jsonl(layout.judge_labels, [{"unit_id": u, "judge": j, "label": label, "parse_status": "ok" if label else
                                       "unscored", "fingerprint": "fp"}
                                      for j, by_unit in LABELS.items() for u, label in by_unit.items()])
    ranking = publish_active_order(layout, judge="j", families=FAMILIES, seed=20261129)
    blind_study(root, annotators=["ann-a", "ann-b"], ranking=ranking)
    computed = [row["unit_id"] for row in json.loads(layout.active_order.read_text())["units"]] + ["u5"]
    unit_of = {row["task_id"]: row["unit_id"] for row in map(json.loads, layout.key.read_text().splitlines())}
    tasks = load_tasks(layout.tasks)
    LabelStudioBackend(study=root, token=labelstudio_server.token, url=labelstudio_server.url,
                       admin_password=labelstudio_server.admin_password).push(tasks, load_orders(layout.orders, tasks))
    state = json.loads(layout.labelstudio_state.read_text(encoding="utf-8"))
    for name in ("ann-a", "ann-b"):
        ls_ids = state["annotators"][name]["projects"]["escalate_final"]["tasks"]
        assert [unit_of[t] for t in sorted(ls_ids, key=ls_ids.get)] == computed
