"""Loading blinded tasks for an annotation backend, refusing anything not blinded."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from samples import STRATUM_FIELDS, BlindTask, InputError, is_kind
from samples import check_annotator_name as check_name
from samples import unit_kinds as kinds

# Keys that only exist on unblinded records: their presence means blinding did not happen.
_UNBLINDED_KEYS = frozenset(STRATUM_FIELDS) | {
    "unit_id", "trajectory_id", "strata", "stratum", "inclusion_prob", "judge", "judge_label", "label", "reference",
}


def load_tasks(path: str | Path) -> list[BlindTask]:
    """Read ``blind/tasks.jsonl``; every problem is reported at once, with its line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: tasks file not found") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    problems: list[str] = []
    tasks: list[BlindTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{where}: invalid JSON ({error.msg})")
            continue
        if not isinstance(raw, dict):
            problems.append(f"{where}: expected a JSON object, got {type(raw).__name__}")
            continue
        leaked = sorted(_UNBLINDED_KEYS & raw.keys())
        if leaked:
            problems.append(f"{where}: field(s) {leaked} present; tasks must come from `accord blind` (identity/design fields removed)")
            continue
        if not is_kind(raw.get("kind")):
            problems.append(f"{where}: field 'kind' is {raw.get('kind')!r}; expected one of {list(kinds())}")
            continue
        try:
            task = BlindTask.model_validate(raw)
        except ValidationError as error:
            first = error.errors()[0]
            field_name = ".".join(str(p) for p in first["loc"]) or "(record)"
            problems.append(f"{where}: field '{field_name}': {first['msg']}")
            continue
        if task.task_id in seen:
            problems.append(f"{where}: duplicated task_id {task.task_id!r} (first on line {seen[task.task_id]})")
            continue
        seen[task.task_id] = number
        tasks.append(task)
    if problems:
        raise InputError(f"{path}: {len(problems)} bad task record(s)", problems=problems)
    if not tasks:
        raise InputError(f"{path}: no tasks (an empty task set cannot be annotated)")
    return tasks


def check_orders(tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]], *, where: str = "orders") -> None:
    """Every annotator's order is a non-empty list of distinct ids of the given tasks."""
    if not tasks:
        raise InputError("tasks: empty task set (nothing to annotate)")
    if not orders:
        raise InputError(f"{where}: no annotators; expected {{annotator: [task_id, ...]}}")
    known = {task.task_id for task in tasks}
    for annotator, order in orders.items():
        check_name(annotator, parameter=f"{where}: annotator")
        if not isinstance(order, (list, tuple)) or not order or not all(isinstance(t, str) for t in order):
            raise InputError(f"{where}: field {annotator!r}: expected a non-empty list of task ids")
        unknown = [task_id for task_id in order if task_id not in known]
        if unknown:
            raise InputError(f"{where}: field {annotator!r}: task id(s) {unknown[:5]} are not in the tasks file")
        if len(set(order)) != len(order):
            raise InputError(f"{where}: field {annotator!r}: a task id appears more than once")


def load_orders(path: str | Path, tasks: Sequence[BlindTask]) -> dict[str, list[str]]:
    """Read ``blind/orders.json`` ({annotator: [task_id, ...]}) and check it against the tasks."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: orders file not found (written by `accord blind`)") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: invalid JSON at line {error.lineno} ({error.msg})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: expected a JSON object {{annotator: [task_id, ...]}}")
    check_orders(tasks, raw, where=str(path))
    return {annotator: list(order) for annotator, order in raw.items()}
