"""Study folders for the coding-app tests: blinded tasks, orders and a sealed key written directly."""

from __future__ import annotations

import json
from pathlib import Path

from samples.records import BlindTask, KeyEntry

# Strings that exist only in the sealed key: they must never reach an annotator's page.
IDENTITY_MARKERS = ("Qwen-Agent", "qwen3.5-9b", "SECRET-BACKBONE", "conflict-split-marker")

IDENTIFY_TURNS = [
    "[turn 0] Let me search for the release year of the album.",
    "[turn 1] Wikipedia says 1969 but Britannica says 1971; the sources disagree.",
    "[turn 2] I will go with 1969.",
]

TASKS = [
    BlindTask(task_id="t_a1", kind="identify_trajectory", text="\n".join(IDENTIFY_TURNS), turns=IDENTIFY_TURNS),
    BlindTask(task_id="t_b2", kind="escalate_final", text="The album came out in 1969."),
    BlindTask(task_id="t_c3", kind="escalate_final", text="Sources disagree: Wikipedia says 1969 while Britannica says 1971."),
    BlindTask(task_id="t_d4", kind="identify_turn", text="\n".join(IDENTIFY_TURNS), turns=IDENTIFY_TURNS, focus_turn=1),
    BlindTask(task_id="t_e5", kind="correctness", text="References: ['Paris', 'Lyon']\nPrediction: Paris"),
    BlindTask(task_id="t_f6", kind="response", text="Question: Who founded Zorblax Corp?\nResponse: I don't know of any such company."),
]

ORDERS = {
    "alice": ["t_a1", "t_b2", "t_c3", "t_d4", "t_e5", "t_f6"],
    "bob": ["t_c3", "t_a1", "t_f6", "t_b2", "t_e5", "t_d4"],
    "carol": ["t_b2", "t_c3", "t_a1"],
}


def write_study(root: Path, tasks: list[BlindTask] = TASKS, orders: dict[str, list[str]] = ORDERS) -> Path:
    """A study folder with blind/tasks.jsonl, blind/orders.json and a sealed key carrying identity fields."""
    (root / "blind").mkdir(parents=True, exist_ok=True)
    (root / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    (root / "blind" / "orders.json").write_text(json.dumps(orders), encoding="utf-8")
    sealed = root / "sealed"
    sealed.mkdir(mode=0o700, exist_ok=True)
    key = [
        KeyEntry(task_id=t.task_id, unit_id=f"u_{i:020d}", trajectory_id=f"traj-{i}", kind=t.kind,
                 strata={"agent": "Qwen-Agent", "backbone": "qwen3.5-9b", "family": "SECRET-BACKBONE", "split": "conflict-split-marker"},
                 stratum="agent=Qwen-Agent|split=conflict", inclusion_prob=0.5)
        for i, t in enumerate(tasks)
    ]
    (sealed / "key.jsonl").write_text("".join(k.model_dump_json() + "\n" for k in key), encoding="utf-8")
    (sealed / "key.jsonl").chmod(0o600)
    return root


def raw(store, query: str, params: tuple = ()) -> list[tuple]:
    """Rows of a query run straight on the store's database (either engine), as plain tuples."""
    with store.engine.read() as conn:
        return [tuple(row) for row in conn.execute(query, params).fetchall()]
