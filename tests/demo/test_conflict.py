"""Controlled conflict/control pairs (ISE section 2.1) and the shipped fixture files."""

from __future__ import annotations

import pytest

from apps.demo import conflict
from apps.demo.conflict import build_instances, build_pair
from apps.demo.fixture import FIXTURE_DIR, build_fixture, load_instances, load_items
from apps.demo.items import eligible_items, phrase_pattern, select_demo_items
from samples.errors import InputError
from samples.records import Trajectory


@pytest.fixture(scope="module")
def pool():
    return eligible_items()


# Hand derivations of each distractor rule for a chosen hash h.
@pytest.mark.parametrize(("function", "answer", "h", "expected"), [
    # shift = 1 + 1 % 11 = 2 months: December -> February of the next year; day 31 clamped to 28 (2026 not leap).
    (conflict._shift_date, "December 31, 2025", 1, ("February 28, 2026", "date_shift_months=+2")),
    # shift = 1 + 10 % 11 = 11 months; no year, day kept.
    (conflict._shift_date, "June 18", 10, ("May 18", "date_shift_months=+11")),
    (conflict._shift_date, "15 March 2026", 0, ("15 April 2026", "date_shift_months=+1")),
    # step = 1 + 1 % 5 = 2, sign from (1 // 5) % 2 = 0 -> negative.
    (conflict._shift_year, "1955", 1, ("1953", "year_shift=-2")),
    # step = 1 + 7 % 5 = 3, (7 // 5) % 2 = 1 -> positive.
    (conflict._shift_year, "2035", 7, ("2038", "year_shift=+3")),
    # ratio 25 %: 3.5 * 0.25 = 0.875 -> 0.9 at one decimal; 3.5 + 0.9 = 4.4.
    (conflict._bump_number, "$3.5 million", 0, ("$4.4 million", "number_bump=+25%")),
    # ratio 100 %: 1,234 + 1,234, separators kept.
    (conflict._bump_number, "1,234 arrests", 2, ("2,468 arrests", "number_bump=+100%")),
    # last number 0715 -> 715 * 0.25 = 178.75 -> 179; 894 zero-padded to 4 digits.
    (conflict._bump_number, "PT-26-0715", 0, ("PT-26-0894", "number_bump=+25%")),
    # 2 * 0.25 = 0.5 rounds to 0 -> at least one unit: 2 + 1.
    (conflict._bump_number, "3-2", 0, ("3-3", "number_bump=+25%")),
])
def test_distractor_rules_by_hand(function, answer, h, expected):
    assert function(answer, h) == expected


def test_every_eligible_item_gives_a_matched_minimal_pair(pool):
    for item in pool:
        conflict_instance, control = build_pair(item, donors=pool)
        gold = phrase_pattern(item.passage_answer)
        distractor = conflict_instance.distractor
        assert distractor and distractor.casefold() != item.passage_answer.casefold()
        # Question and passage count held fixed across the pair.
        assert conflict_instance.question == control.question == item.question
        assert len(conflict_instance.passages) == len(control.passages) == 2
        # Control: two passages consistent with the reference.
        assert control.passages == [item.passage, item.passage]
        # Conflict: one passage states the reference, the other only the distractor.
        position = conflict_instance.distractor_position
        assert conflict_instance.passages[1 - position] == item.passage
        substituted = conflict_instance.passages[position]
        assert not gold.search(substituted) and phrase_pattern(distractor).search(substituted)
        assert conflict_instance.references == control.references == [item.passage_answer]
        assert (conflict_instance.split, control.split) == ("conflict", "control")
        assert conflict_instance.setting == control.setting == "controlled"


def test_entity_distractor_is_another_items_answer(pool):
    by_id = {item.question_id: item for item in pool}
    entities = [item for item in pool if item.answer_type == "entity"][:50]
    for item in entities:
        pair = build_pair(item, donors=pool)[0]
        donor_id = pair.perturbation.removeprefix("entity_swap_from=")
        assert by_id[donor_id].passage_answer == pair.distractor
        assert by_id[donor_id].category == item.category


def test_instances_are_deterministic_and_the_seed_moves_them():
    items = select_demo_items()
    first = build_instances(items)
    assert first == build_instances(items)
    assert [i.instance_id for i in first] == [f"{i.question_id}:{s}" for i in items for s in ("conflict", "control")]
    other = build_instances(items, seed=1)
    assert [i.perturbation for i in first] != [i.perturbation for i in other]


def test_shipped_fixture_is_exactly_what_the_code_builds(tmp_path):
    build_fixture(tmp_path)
    for name in ("items.jsonl", "instances.jsonl", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (FIXTURE_DIR / name).read_bytes(), name
    items = load_items()
    assert items == select_demo_items()
    assert load_instances() == build_instances(items)


def test_a_bad_fixture_row_names_file_line_and_field(tmp_path):
    bad = tmp_path / "items.jsonl"
    lines = (FIXTURE_DIR / "items.jsonl").read_text().splitlines()
    bad.write_text("\n".join([lines[0], lines[1].replace('"question"', '"questio"')]) + "\n")
    with pytest.raises(InputError, match=f"{bad}:2"):
        load_items(bad)


def test_instances_fit_the_trajectory_contract():
    # The strata an instance contributes must be values the Trajectory record accepts.
    for instance in build_instances(select_demo_items(per_category=1)):
        Trajectory(id=instance.instance_id, agent="a", backbone="b", family="f", dataset=instance.dataset,
                   setting=instance.setting, split=instance.split)
