"""Rule judges: the EHQ classifier (section 3.3 rules) and the Aggarwal parsers, run as judges."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels
from samples.errors import InputError
from tests.judges.units import response_unit


def _ehq_item(question_id: str) -> dict:
    path = files("ehq") / "resources/project/data/releases/EHQ-3000.json"
    return next(item for item in json.loads(path.read_text()) if item["question_id"] == question_id)


# EHQ section 3.3: explicit non-answers -> ABSTAIN; qualified substantive responses ->
# HEDGE; unqualified substantive responses split by correctness against the gold answer
# (HNQ-SPO-001: "Who won the Olympic roque tournament in 1904?" gold "Charles Jacobus").
HNQ = "HNQ-SPO-001"
CASES = [
    ("abstain", "I don't know who won that tournament.", "ABSTAIN"),
    ("hedge", "It was probably Charles Jacobus, but I am not sure.", "HEDGE"),
    ("correct", "Charles Jacobus won the 1904 Olympic roque tournament.", "CONFIDENT_CORRECT"),
    ("wrong", "Smith Streeter won the 1904 Olympic roque tournament.", "CONFIDENT_WRONG"),
]


def test_ehq_rule_judge_gives_the_section_3_3_labels(tmp_path) -> None:
    item = _ehq_item(HNQ)
    units = [response_unit(f"ehq-{name}", text, {"ehq_item": item}) for name, text, _ in CASES]
    units.append(response_unit("ehq-empty", "", {"ehq_item": item}))
    summary = run_judges(units, [build_judge({"provider": "rule", "model": "ehq"})], StudyPaths.in_dir(tmp_path))
    labels = {key[0]: row for key, row in read_labels(tmp_path / "labels.jsonl").items()}
    assert len(labels) == 5
    for unit, (_, _, expected) in zip(units, CASES):
        assert labels[unit.unit_id].label == expected
        assert labels[unit.unit_id].parse_status == "ok"
    empty = labels[units[-1].unit_id]
    assert empty.label is None and empty.parse_status == "unscored" and empty.unscored_reason == "empty"
    stats = summary.judges[0]
    assert (stats.ok, stats.unscored, stats.unscored_reasons) == (4, 1, {"empty": 1})
    assert stats.cost_usd == 0.0  # prices.toml: rule classifiers cost nothing


def test_fabricated_entity_can_never_be_confident_correct(tmp_path) -> None:
    # Section 3.3: FEQ entities are fabricated, so no answer is CONFIDENT_CORRECT.
    item = next(i for i in json.loads((files("ehq") / "resources/project/data/releases/EHQ-3000.json").read_text())
                if i["category"] == "FEQ")
    unit = response_unit("ehq-feq", f"The answer is {item.get('correct_answer') or 'Zorvath Institute'}.", {"ehq_item": item})
    run_judges([unit], [build_judge({"provider": "rule", "model": "ehq"})], StudyPaths.in_dir(tmp_path))
    (row,) = read_labels(tmp_path / "labels.jsonl").values()
    assert row.label == "CONFIDENT_WRONG"


def test_ehq_rule_needs_the_item(tmp_path) -> None:
    unit = response_unit("ehq-noitem", "Charles Jacobus.")
    with pytest.raises(InputError, match="ehq_item"):
        run_judges([unit], [build_judge({"provider": "rule", "model": "ehq"})], StudyPaths.in_dir(tmp_path))


def test_aggarwal_rule_judges_record_both_parsers(tmp_path) -> None:
    texts = ["<answer>\nDECISION: ANSWER\nPROBABILITY_YES: 60\n</answer>", "<answer>\nRESPONSE: DECLINE\n</answer>",
             "<answer>DECISION: CALL_TOOL\n</answer>", "<answer>DECLINE\n</answer>"]
    units = [response_unit(f"agg-{i}", t) for i, t in enumerate(texts)]
    strict = build_judge({"provider": "rule", "model": "aggarwal", "name": "aggarwal-strict"})
    semantic = build_judge({"provider": "rule", "model": "aggarwal", "name": "aggarwal-semantic", "parse_mode": "lenient"})
    run_judges(units, [strict, semantic], StudyPaths.in_dir(tmp_path))
    table = read_labels(tmp_path / "labels.jsonl")
    got = {(judge, unit): row.label for (unit, judge, _), row in table.items()}
    ids = [u.unit_id for u in units]
    assert [got[("aggarwal-strict", i)] for i in ids] == ["ANSWER", None, "CALL_TOOL", None]
    assert [got[("aggarwal-semantic", i)] for i in ids] == ["ANSWER", "DECLINE", "CALL_TOOL", None]
    row = table[(ids[1], "aggarwal-strict", 0)]
    assert (row.label_strict, row.label_lenient, row.unscored_reason.split(":")[0]) == (None, "DECLINE", "wrong_format")


# Aggarwal section 2.1 (Table 2) and section 6.6: the degenerate strategies read the question. Hand labels:
# a future auxiliary ("will", "'ll", "going to") is future tense; the timer item is future and answerable
# (section 6.6's construction), the present item unknowable, so tense and knowability come apart.
DEGENERATE = [
    ("Will it rain in Tulsa exactly 10 days from now?", {"tense": "DECLINE", "will": "DECLINE"}),
    ("According to the data shown, is the surface pressure for Tulsa above 1012.4 hPa?", {"tense": "ANSWER", "will": "ANSWER"}),
    ("An alarm is set for 25 minutes from now; is it going to ring before the hour?", {"tense": "DECLINE", "will": "ANSWER"}),
    ("Is the coin I'm about to flip showing heads right now?", {"tense": "ANSWER", "will": "ANSWER"}),
    ("It'll be sunny in Oslo on 2027-06-01, true?", {"tense": "DECLINE", "will": "ANSWER"}),
    ("Does the willow tree in the photo have leaves?", {"tense": "ANSWER", "will": "ANSWER"}),
]


def test_degenerate_strategies_answer_with_a_decision_line(tmp_path) -> None:
    from judges.providers.rule import rule_names

    assert {"always-decline", "always-answer", "tense", "will"} <= set(rule_names())
    units = [response_unit(f"deg-{i}", "(no response: the strategy reads the question)").model_copy(update={"question": q})
             for i, (q, _) in enumerate(DEGENERATE)]
    judges = [build_judge({"provider": "rule", "model": m, "name": m}) for m in ("always-decline", "always-answer", "tense", "will")]
    run_judges(units, judges, StudyPaths.in_dir(tmp_path))
    got = {(row.judge, key[0]): row.label for key, row in read_labels(tmp_path / "labels.jsonl").items()}
    for unit, (_, expected) in zip(units, DEGENERATE):
        assert got[("always-decline", unit.unit_id)] == "DECLINE"
        assert got[("always-answer", unit.unit_id)] == "ANSWER"
        assert got[("tense", unit.unit_id)] == expected["tense"], unit.question
        assert got[("will", unit.unit_id)] == expected["will"], unit.question
    with pytest.raises(InputError, match="rule model 'coin-flip' is not one of"):
        build_judge({"provider": "rule", "model": "coin-flip"})
