"""Gold units on a really blinded study: placed like any task, scored apart, never in validation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from annotate.app_backend import AnnotatorSession, AppBackend
from annotate.gold import place_gold, wilson_interval
from annotate.store import Store
from apps.cli import main
from samples.blind import blind_study
from samples.errors import InputError
from samples.ingest import ingest
from samples.jsonl import write_jsonl
from samples.layout import StudyLayout
from samples.sampler import sample_study

ANNOTATORS = ["ann1", "ann2", "ann3"]
TASK_ID = re.compile(r"^t_[0-9a-f]{16}$")


def _run(i: int) -> dict:
    return {"id": f"run-{i}", "agent": "AgentA" if i % 2 else "AgentB", "backbone": "m1", "dataset": "GAIA",
            "setting": "natural", "split": "conflict" if i % 3 else "control", "question": f"What is {i} x 7?",
            "reference": [str(i * 7)], "truncated": False,
            "steps": [{"reasoning": None, "text": f"Let me multiply {i} by 7.", "tool_call": None},
                      {"reasoning": None, "text": "The calculator and my notes disagree; checking again.",
                       "tool_call": None}],
            "final_turn": {"reasoning": None, "text": f"The answer is {i * 7}."}}


def gold_rows() -> list[dict]:
    turns = ["[turn 0] I will look the date up.", "[turn 1] Two sources give different dates; I cannot tell which."]
    rows = [{"gold_id": f"esc-{i}", "kind": "escalate_final", "text": f"I cannot verify this; ask an expert ({i}).",
             "label": "yes", "reason": "The final turn hands the question to a person."} for i in range(4)]
    rows += [{"gold_id": f"esc-no-{i}", "kind": "escalate_final", "text": f"The answer is {100 + i}.", "label": "no",
              "reason": "A plain answer."} for i in range(4)]
    rows += [{"gold_id": "idt-0", "kind": "identify_trajectory", "text": "\n".join(turns), "turns": turns,
              "label": "yes", "first_turn": 1, "reason": "Turn 1 names the conflict."}]
    return rows


def blinded_study(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "runs.jsonl").write_text("".join(json.dumps(_run(i)) + "\n" for i in range(30)))
    ingest([root / "runs.jsonl"], root, adapter="ise")
    plan = root / "plan.toml"
    plan.write_text('name = "all"\nkinds = ["identify_trajectory", "escalate_final"]\nstrata = ["kind"]\n'
                    'allocation = "fixed"\nn_per_stratum = 100\none_per_trajectory = false\n')
    sample_study(root, plan)
    blind_study(root, annotators=ANNOTATORS)
    write_jsonl(root / "gold_table.jsonl", gold_rows())
    return root


@pytest.fixture
def study(tmp_path) -> Path:
    return blinded_study(tmp_path / "study")


def push(root: Path, late: tuple[str, ...] = ()) -> tuple[Store, dict[str, str]]:
    store = Store.for_study(root)
    tokens = {name: store.add_annotator(name) for name in (*ANNOTATORS, *late)}
    AppBackend(study=root).push_files(root / "blind")
    return store, tokens


def test_gold_tasks_are_placed_at_the_rate_and_look_like_every_task(study, capsys):
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gold_units"] == 9
    layout = StudyLayout.of(study)
    gold = json.loads(layout.gold.read_text())
    gold_ids = {unit["task"]["task_id"] for unit in gold["units"]}
    assert oct(layout.gold.stat().st_mode & 0o777) == "0o600"
    key_ids = {json.loads(line)["task_id"] for line in layout.key.read_text().splitlines()}
    assert not gold_ids & key_ids  # the sampled units' sealed key never names a gold unit
    blinded_orders = json.loads(layout.orders.read_text())
    store, tokens = push(study, late=("late1",))
    real = {json.loads(line)["task_id"]: json.loads(line) for line in layout.tasks.read_text().splitlines()}
    for name in (*ANNOTATORS, "late1"):
        order = store.order(name)
        placed = [t for t in order if t in gold_ids]
        n_real = len(order) - len(placed)
        assert n_real == len(real)
        assert len(placed) == min(9, round(0.1 * n_real / 0.9))  # rate = share of the whole order that is gold
        if name in blinded_orders:  # the sampled tasks keep the order accord blind gave them
            assert [t for t in order if t not in gold_ids] == blinded_orders[name]
        session = AnnotatorSession(store, tokens[name])
        shapes = {}
        for task_id in order:
            assert TASK_ID.match(task_id), task_id
            payload = json.loads(session.task(task_id).model_dump_json())
            shapes.setdefault((payload["kind"], task_id in gold_ids), set(payload))
        for (kind, is_gold), fields in shapes.items():
            if is_gold and (kind, False) in shapes:
                assert fields == shapes[(kind, False)], kind  # same fields as a sampled task of its kind
    # the payload a sampled task is shown is exactly the blinded one, and gold units are scrubbed the same way
    assert json.loads(store.task(next(iter(real))).model_dump_json()) == real[next(iter(real))]
    # the same study and gold again give byte-identical orders (seeded)
    again = blinded_study(study.parent / "again")
    assert main(["gold", "add", str(again / "gold_table.jsonl"), "--study", str(again), "--rate", "0.1"]) == 0
    assert push(again, late=("late1",))[0].orders() == store.orders()


def test_gold_positions_carry_no_ordering_tell():
    """Over many annotators the gold positions are uniform over the order (KS test against the uniform
    law), the first and last places are as likely as any, and which gold units are chosen varies."""
    from scipy.stats import kstest

    real = [f"t_{i:016x}" for i in range(90)]
    gold = [f"t_{i:016x}" for i in range(1000, 1010)]
    positions, first, chosen = [], 0, set()
    for a in range(400):
        order = place_gold(real, gold, annotator=f"a{a}", rate=0.1, seed=20261129)
        assert len(order) == 100 and sorted(t for t in order if t in gold) == sorted(set(gold) & set(order))
        where = [i for i, t in enumerate(order) if t in gold]
        positions += [(i + 0.5) / len(order) for i in where]
        first += order[0] in gold
        chosen.add(tuple(sorted(t for t in order if t in gold)))
    assert kstest(positions, "uniform").pvalue > 0.01
    assert 40 * 0.5 < first < 40 * 1.5  # 400 orders x 10 gold in 100 places: 40 expected at the first place
    assert len(positions) == 4000 and len(chosen) == 1  # 10 gold units for 10 places: all of them, shuffled in
    fewer = {tuple(t for t in place_gold(real[:45], gold, annotator=f"a{a}", rate=0.1, seed=1) if t in gold)
             for a in range(50)}
    assert len(fewer) > 40  # 5 of the 10 gold units per annotator, a different draw for most


def test_gold_accuracy_per_annotator_matches_a_hand_count(study, capsys):
    from statsmodels.stats.proportion import proportion_confint

    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.2"]) == 0
    store, tokens = push(study)
    units = {u["task"]["task_id"]: u for u in json.loads(StudyLayout.of(study).gold.read_text())["units"]}
    wrong = {"yes": "no", "no": "yes"}
    hand = {}
    for a, name in enumerate(ANNOTATORS):
        mine = [t for t in store.order(name) if t in units]
        correct = 0
        for i, task_id in enumerate(mine):
            expected = units[task_id]
            right = i % (a + 2) != 0  # ann1 misses every 2nd, ann2 every 3rd, ann3 every 4th
            label = expected["label"] if right else wrong[expected["label"]]
            first = expected["first_turn"] if right else None  # the identify gold unit's wrong answer is "no"
            store.submit(tokens[name], task_id, label, first_turn=first, submission_id=f"gold-{name}-{i:03d}")
            correct += right
        hand[name] = (correct, len(mine))
    store.add_annotator("newcomer")
    capsys.readouterr()
    assert main(["gold", "report", "--study", str(study), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["interval"] == "wilson"
    got = {row["annotator"]: row for row in body["annotators"]}
    for name, (correct, n) in hand.items():
        assert (got[name]["correct"], got[name]["n"]) == (correct, n) and n > 0
        assert got[name]["accuracy"] == pytest.approx(correct / n)
        low, high = proportion_confint(correct, n, alpha=0.05, method="wilson")
        assert (got[name]["ci_low"], got[name]["ci_high"]) == pytest.approx((low, high))
    assert got["newcomer"]["accuracy"] is None and got["newcomer"]["reason"] == "no gold unit labelled yet"


def test_wilson_interval_against_statsmodels_and_undefined_without_labels():
    from statsmodels.stats.proportion import proportion_confint

    for correct, n, level in ((0, 5, 0.95), (5, 5, 0.9), (7, 19, 0.95), (180, 200, 0.99)):
        assert wilson_interval(correct, n, level) == pytest.approx(
            proportion_confint(correct, n, alpha=1 - level, method="wilson"))
    assert all(np.isnan(wilson_interval(0, 0, 0.95)))


def test_validation_numbers_do_not_change_when_gold_labels_are_added(study, capsys):
    layout = StudyLayout.of(study)
    key = [json.loads(line) for line in layout.key.read_text().splitlines()]
    write_jsonl(layout.judge_labels, [
        {"unit_id": k["unit_id"], "judge": "j", "label": "yes" if i % 3 else "no", "parse_status": "ok",
         "unscored_reason": None, "first_turn": 0 if i % 3 and k["kind"] == "identify_trajectory" else None,
         "fingerprint": "fp"} for i, k in enumerate(key)])
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.1"]) == 0
    capsys.readouterr()
    store, tokens = push(study)
    units = {u["task"]["task_id"]: u for u in json.loads(layout.gold.read_text())["units"]}
    kinds = {k["task_id"]: k["kind"] for k in key}
    for a, name in enumerate(ANNOTATORS):
        for i, task_id in enumerate(t for t in store.order(name) if t in kinds):
            label = "yes" if (i + a) % 4 else "no"
            first = 0 if label == "yes" and kinds[task_id] == "identify_trajectory" else None
            store.submit(tokens[name], task_id, label, first_turn=first, submission_id=f"real-{name}-{i:03d}")
    AppBackend(study=study).pull()
    human_before = layout.app_labels.read_bytes()
    assert main(["validate", str(study), "--n-resamples", "200", "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    for name in ANNOTATORS:  # now every gold unit in the orders is labelled, some wrongly
        for i, task_id in enumerate(t for t in store.order(name) if t in units):
            unit = units[task_id]
            label = "no" if i % 2 else "yes"
            first = (unit["first_turn"] or 0) if label == "yes" and unit["task"]["kind"] == "identify_trajectory" else None
            store.submit(tokens[name], task_id, label, first_turn=first, submission_id=f"gold-{name}-{i:03d}")
    pulled = AppBackend(study=study).pull()
    assert not {row.task_id for row in pulled} & set(units)
    assert layout.app_labels.read_bytes() == human_before
    gold_labels = [json.loads(line) for line in layout.gold_labels.read_text().splitlines()]
    assert gold_labels and {row["task_id"] for row in gold_labels} <= set(units)
    assert main(["validate", str(study), "--n-resamples", "200", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after == before
    assert main(["labels", "export", "--study", str(study), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == len(pulled)
    assert layout.app_labels.read_bytes() == human_before


def test_gold_add_refuses_bad_rows_and_a_started_campaign(study, capsys):
    bad = study / "bad.jsonl"
    write_jsonl(bad, [{"gold_id": "x", "kind": "escalate_final", "text": "t", "label": "maybe"},
                      {"gold_id": "y", "kind": "nonsense", "text": "t", "label": "yes"},
                      {"gold_id": "z", "kind": "escalate_final", "text": "t", "label": "yes", "colour": "red"},
                      {"gold_id": "w", "kind": "identify_trajectory", "text": "t", "turns": "[turn 0] a", "label": "no"},
                      {"gold_id": "v", "kind": "identify_turn", "text": "t", "turns": ["a"], "focus_turn": 3, "label": "no"}])
    assert main(["gold", "add", str(bad), "--study", str(study), "--rate", "0.1"]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl" in err and "5 bad gold row(s)" in err
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "1.5"]) == 2
    assert "--rate 1.5" in capsys.readouterr().err
    push(study)
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.1"]) == 2
    assert "before the first push" in capsys.readouterr().err
    assert not StudyLayout.of(study).gold.exists()


def test_gold_disagreements_are_not_adjudicated(study):
    from annotate.app_backend import AdjudicatorSession

    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.2"]) == 0
    store, tokens = push(study)
    judy = AdjudicatorSession(store, store.add_annotator("judy", "adjudicator"))
    gold = {u["task"]["task_id"] for u in json.loads(StudyLayout.of(study).gold.read_text())["units"]}
    both = [t for t in store.order("ann1") if t in set(store.order("ann2"))]
    on_gold = next(t for t in both if t in gold)
    on_real = next(t for t in both if t not in gold and store.task(t).kind == "escalate_final")
    for task_id in (on_gold, on_real):
        store.submit(tokens["ann1"], task_id, "yes", submission_id=f"a1-{task_id}")
        store.submit(tokens["ann2"], task_id, "no", submission_id=f"a2-{task_id}")
    assert set(store.disagreements()) == {on_gold, on_real}  # the store itself does not know which is gold
    assert [item.task_id for item in judy.queue()] == [on_real]


def test_practice_cli_writes_the_round_in_table_order(study, capsys):
    assert main(["gold", "practice", str(study / "gold_table.jsonl"), "--study", str(study), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["practice_units"] == 9
    practice = json.loads(StudyLayout.of(study).practice.read_text())
    assert [u["gold_id"] for u in practice["units"]] == [row["gold_id"] for row in gold_rows()]
    assert all(re.match(r"^p_[0-9a-f]{16}$", u["task"]["task_id"]) for u in practice["units"])
    assert main(["gold", "practice", "--study", str(study)]) == 2


def test_a_gold_key_from_an_earlier_blinding_is_refused_at_push(study, capsys):
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.1"]) == 0
    blind_study(study, annotators=ANNOTATORS, seed=7, replace=True)  # blinded again: another salt
    with pytest.raises(InputError, match="run `accord gold add` again"):
        AppBackend(study=study).push_files(study / "blind")
    assert not Store.for_study(study).orders()
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.1"]) == 0
    AppBackend(study=study).push_files(study / "blind")
    assert Store.for_study(study).orders()


@pytest.mark.slow  # crowd-kit fits: minutes of CPU (make test runs it, make test-fast does not)
def test_quality_document_and_report_table_carry_gold_accuracy_per_kind(study, capsys):
    """`accord quality` on a study with gold: per unit kind and annotator the accuracy equals a hand count,
    with the Wilson interval statsmodels gives; the report table shows it; the sealed key stays unread by agreement."""
    from statsmodels.stats.proportion import proportion_confint

    from agreement.documents import QualityDocument, read_document
    from agreement.report import annotator_quality_table

    layout = StudyLayout.of(study)
    assert main(["gold", "add", str(study / "gold_table.jsonl"), "--study", str(study), "--rate", "0.2"]) == 0
    store, tokens = push(study)
    units = {u["task"]["task_id"]: u for u in json.loads(layout.gold.read_text())["units"]}
    key = [json.loads(line) for line in layout.key.read_text().splitlines()]
    kinds = {k["task_id"]: k["kind"] for k in key}
    write_jsonl(layout.judge_labels, [
        {"unit_id": k["unit_id"], "judge": "j", "label": "yes", "parse_status": "ok", "unscored_reason": None,
         "first_turn": 0 if k["kind"] == "identify_trajectory" else None, "fingerprint": "fp"} for k in key])
    wrong = {"yes": "no", "no": "yes"}
    hand: dict[tuple[str, str], list[int]] = {}
    for a, name in enumerate(ANNOTATORS):
        for i, task_id in enumerate(t for t in store.order(name) if t in kinds):
            label = "yes" if (i + a) % 4 else "no"
            first = 0 if label == "yes" and kinds[task_id] == "identify_trajectory" else None
            store.submit(tokens[name], task_id, label, first_turn=first, submission_id=f"real-{name}-{i:03d}")
        if name == "ann3":
            continue  # ann3 labels no gold unit
        for i, task_id in enumerate(t for t in store.order(name) if t in units):
            unit = units[task_id]
            right = i % (a + 2) != 0
            label = unit["label"] if right else wrong[unit["label"]]
            store.submit(tokens[name], task_id, label, first_turn=unit["first_turn"] if right else None,
                         submission_id=f"gold-{name}-{i:03d}")
            tally = hand.setdefault((unit["task"]["kind"], name), [0, 0])
            tally[0] += right
            tally[1] += 1
    AppBackend(study=study).pull()
    capsys.readouterr()
    assert main(["quality", str(study), "--n-resamples", "200", "--json"]) == 0
    capsys.readouterr()
    document = read_document(QualityDocument, study)
    got = {(s.kind, a.annotator): a.gold for s in document.sections for a in s.annotators}
    assert {kind for kind, _ in hand} == {"escalate_final", "identify_trajectory"}  # all 9 gold units are placed
    for (kind, name), (correct, n) in hand.items():
        gold = got[(kind, name)]
        assert (gold.correct, gold.n) == (correct, n) and gold.statistic == pytest.approx(correct / n)
        assert (gold.ci_low, gold.ci_high) == pytest.approx(proportion_confint(correct, n, alpha=0.05, method="wilson"))
    for kind in {s.kind for s in document.sections}:
        ann3 = got[(kind, "ann3")]
        assert ann3.statistic is None and ann3.undefined_reason == "no gold unit labelled yet" and ann3.n == 0
    table = annotator_quality_table(document)
    column, rows = table.header.index("gold accuracy [CI]"), {(r[0], r[1]): r for r in table.rows}
    for (kind, name), (correct, n) in hand.items():
        low, high = proportion_confint(correct, n, alpha=0.05, method="wilson")
        assert rows[(kind, name)][column] == f"{correct / n:.3f} [{low:.3f}, {high:.3f}] ({correct} of {n})"
    assert all(rows[(kind, "ann3")][column] == "-- (no gold unit labelled yet)" for kind in {k for k, _ in rows})
    assert main(["quality", str(study), "--n-resamples", "200"]) == 0
    text = capsys.readouterr().out
    correct, n = hand[("escalate_final", "ann1")]
    assert f"({correct} of {n})" in text and "gold -- (no gold unit labelled yet)" in text
