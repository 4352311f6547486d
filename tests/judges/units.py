"""Realistic units built directly (the samples adapters are written concurrently)."""

from __future__ import annotations

import hashlib

from samples.records import Unit


def unit_id(trajectory_id: str, kind: str, turn: int | None = None) -> str:
    return "u_" + hashlib.sha256(f"{trajectory_id}|{kind}|{turn}".encode()).hexdigest()[:20]


IDENTIFY_TURNS = [
    "[turn 0] <think>The question asks for the year the Jade Bridge opened. I believe it opened in 1969.</think> "
    "Let me search for the opening year of the Jade Bridge.",
    "[turn 1] The search result from the city archive says the Jade Bridge opened in 1971, while the encyclopedia "
    "entry I found earlier says 1969. These two sources disagree on the opening year.",
    "[turn 2] I will check a third source to settle the year.",
]


def identify_unit(trajectory_id: str = "traj-1", turns: list[str] | None = None) -> Unit:
    turns = turns or IDENTIFY_TURNS
    return Unit(unit_id=unit_id(trajectory_id, "identify_trajectory"), trajectory_id=trajectory_id,
                kind="identify_trajectory", text="\n".join(turns), turns=turns,
                strata={"agent": "Qwen-Agent", "split": "conflict"})


def escalate_unit(trajectory_id: str = "traj-1", text: str | None = None) -> Unit:
    text = text or ("The Jade Bridge opened in 1971 according to the city archive, although one encyclopedia "
                    "gives 1969; the sources disagree, so you may want to verify.")
    return Unit(unit_id=unit_id(trajectory_id, "escalate_final"), trajectory_id=trajectory_id, kind="escalate_final",
                text=text, strata={"agent": "Qwen-Agent", "split": "conflict"})


def correctness_unit(trajectory_id: str = "traj-1") -> Unit:
    text = "References:\n- 1971\n\nPrediction:\nThe Jade Bridge opened in 1971."
    return Unit(unit_id=unit_id(trajectory_id, "correctness"), trajectory_id=trajectory_id, kind="correctness",
                text=text, reference={"references": ["1971"]})


def response_unit(trajectory_id: str, text: str, reference: dict | None = None) -> Unit:
    return Unit(unit_id=unit_id(trajectory_id, "response"), trajectory_id=trajectory_id, kind="response",
                text=text, reference=reference or {})


def escalate_units(n: int, suffix: str = "") -> list[Unit]:
    return [escalate_unit(f"traj-{i}", f"Final answer {i}: the bridge opened in {1900 + i}.{suffix}") for i in range(n)]
