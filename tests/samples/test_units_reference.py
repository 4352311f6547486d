"""Metadata that a scorer or rule judge needs reaches Unit.reference, never the shown text."""

from __future__ import annotations

from samples.records import Step, Trajectory
from samples.units import cut_units


def test_ehq_item_is_carried_into_response_unit_reference() -> None:
    item = {"question_id": "HNQ-0001", "correct_answer": "Paris", "question": "Capital of France?"}
    trajectory = Trajectory(
        id="r1", agent="closed-book", backbone="smollm2", family="smollm", dataset="EHQ-3000",
        steps=[Step(index=0, role="assistant", text="It is Paris.", is_final=True)],
        final_answer="It is Paris.", metadata={"ehq_item": item, "free": "not carried"},
    )
    units, skips = cut_units(trajectory, ["response"])
    assert skips == []
    (unit,) = units
    assert unit.reference["ehq_item"] == item
    assert "free" not in unit.reference
    assert "HNQ-0001" not in unit.text
