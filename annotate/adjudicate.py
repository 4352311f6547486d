"""The adjudication queue: units whose independent labels disagree.

Following the EHQ protocol, adjudicated labels are stored apart (role
``adjudication``) and never replace an independent label, so initial agreement
is computed on independent labels only. The adjudicator sees the coders' labels,
notes and unsure flags with coders numbered per unit in the order they labelled,
not named.
"""

from __future__ import annotations

from dataclasses import dataclass

from annotate.store import Store
from samples import HumanLabel


@dataclass(frozen=True, kw_only=True)
class CoderLabel:
    coder: int
    label: str
    first_turn: int | None
    unsure: bool
    note: str


@dataclass(frozen=True, kw_only=True)
class Disagreement:
    task_id: str
    kind: str
    coders: tuple[CoderLabel, ...]
    adjudicated: HumanLabel | None


def adjudication_queue(store: Store) -> list[Disagreement]:
    """Every disagreement in the order the units appear to annotators, with its adjudication if any."""
    task_ids = store.disagreements()
    independent: dict[str, list[HumanLabel]] = {}
    adjudicated: dict[str, HumanLabel] = {}
    for label in store.labels():
        if label.role == "independent":
            independent.setdefault(label.task_id, []).append(label)
        else:
            adjudicated[label.task_id] = label
    queue = []
    for task_id in task_ids:
        labels = sorted(independent[task_id], key=lambda row: (row.created_at or "", row.annotator))
        coders = tuple(
            CoderLabel(coder=number, label=row.label, first_turn=row.first_turn, unsure=row.unsure, note=row.note)
            for number, row in enumerate(labels, start=1)
        )
        queue.append(Disagreement(task_id=task_id, kind=store.task(task_id).kind, coders=coders, adjudicated=adjudicated.get(task_id)))
    return queue
