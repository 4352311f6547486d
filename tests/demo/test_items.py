"""Demo items: real EHQ-3000 questions, stratified, with a passage that states the answer."""

from __future__ import annotations

from collections import Counter

import pytest

from apps.demo.items import (
    CATEGORIES,
    answer_type,
    eligible_items,
    load_ehq,
    phrase_pattern,
    select_demo_items,
    to_demo_item,
)
from samples.errors import InputError


@pytest.fixture(scope="module")
def dataset() -> list[dict]:
    return load_ehq()


@pytest.fixture(scope="module")
def by_id(dataset) -> dict[str, dict]:
    return {item["question_id"]: item for item in dataset}


def test_dataset_is_the_published_ehq_3000(dataset):
    # EHQ paper: 3,000 items, 750 per category, 20 subcategories of 150.
    assert len(dataset) == 3000
    assert Counter(i["category"] for i in dataset) == {c: 750 for c in CATEGORIES}
    assert set(Counter(i["subcategory"] for i in dataset).values()) == {150}


def test_default_selection_is_four_per_category_over_distinct_subcategories(by_id):
    items = select_demo_items()
    assert [i.category for i in items] == [c for c in CATEGORIES for _ in range(4)]
    for category in CATEGORIES:
        subs = [i.subcategory for i in items if i.category == category]
        assert len(set(subs)) == 4, subs  # 4 picks from 5 subcategories, round-robin
    for item in items:
        raw = by_id[item.question_id]
        assert item.question == raw["question"]  # real questions, verbatim
        assert item.ehq_item["correct_answer"] == raw["correct_answer"]
        assert phrase_pattern(item.passage_answer).search(item.passage)


def test_selection_is_deterministic_and_seeded():
    first = select_demo_items(per_category=3, seed=7)
    assert first == select_demo_items(per_category=3, seed=7)
    assert [i.question_id for i in first] != [i.question_id for i in select_demo_items(per_category=3, seed=8)]


def test_selection_is_configurable():
    items = select_demo_items(per_category=2, categories=["hnq", "PCQ"])
    assert [i.category for i in items] == ["HNQ", "HNQ", "PCQ", "PCQ"]


def test_passage_answer_per_category(by_id):
    for item in eligible_items(by_id.values()):
        raw = by_id[item.question_id]
        if item.category in ("PCQ", "HNQ"):
            assert item.passage == raw["source_fact"] and item.passage_answer == raw["correct_answer"]
        elif item.category == "FEQ":
            assert item.passage == raw["background"] and "year" in item.question.lower()
            assert item.answer_type == "year"
        else:
            filled = raw["document"].replace("[REDACTED]", raw["redacted_value"])
            assert item.passage in filled and len(item.passage) < len(filled)
            assert item.passage_answer == raw["redacted_value"].strip()
            assert "[REDACTED]" not in item.passage


def test_ineligible_items_are_refused(by_id):
    # CCQ-FIN-001's redacted value is a 14-word clause, not a short answer.
    assert len(by_id["CCQ-FIN-001"]["redacted_value"].split()) > 5
    assert to_demo_item(by_id["CCQ-FIN-001"]) is None
    # FEQ-PER-001 asks "Which university ...": not a year question.
    assert to_demo_item(by_id["FEQ-PER-001"]) is None
    assert to_demo_item(by_id["PCQ-SPO-001"]).passage_answer == "Zizou Bergs"


@pytest.mark.parametrize(("answer", "expected"), [
    ("July 12, 2026", "date"), ("June 18", "date"), ("15 March 2026", "date"), ("June 2026", "date"),
    ("1904", "year"), ("$1.3 billion", "number"), ("5 games", "number"), ("3-2", "number"),
    ("Zizou Bergs", "entity"), ("June", "entity"), ("three", "entity"),
])
def test_answer_types(answer, expected):
    assert answer_type(answer) == expected


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"per_category": 0}, "per_category: expected a positive integer"),
    ({"per_category": True}, "per_category: expected a positive integer"),
    ({"categories": ["XYZ"]}, "categories: ['XYZ'] must be distinct values"),
    ({"categories": ["FEQ", "feq"]}, "must be distinct"),
    ({"per_category": 392, "categories": ["FEQ"]}, "exceeds the 391 eligible FEQ items"),
    ({"seed": "1"}, "seed: expected an integer"),
])
def test_bad_arguments_name_the_parameter(kwargs, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        select_demo_items(**kwargs)
