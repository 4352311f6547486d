"""What a Label Studio project shows (its labeling config, a task's escaped payload) and how an exported
annotation becomes a ``HumanLabel``."""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from annotate.labelstudio.state import LabelStudioState, ProjectState
from samples import BlindTask, HumanLabel, InputError, first_turn_problem, get_kind, get_scheme, is_kind, read_models
from samples import unit_kinds as kinds

# Names of the controls in labelstudio_configs/*.xml; pull reads results by these.
_LABEL, _FIRST_TURN, _UNSURE, _NOTE = "label", "first_turn", "unsure", "note"


def labeling_config(kind: str, scheme: str) -> str:
    """The Label Studio labeling config of a unit kind, offering the labels of ``scheme``."""
    if not is_kind(kind):  # any registered kind, a plugin's included
        raise InputError(f"kind {kind!r} is not a unit kind; expected one of {list(kinds())}")
    template = resources.files("annotate.labelstudio_configs").joinpath(f"{get_kind(kind).labelstudio_config}.xml").read_text(encoding="utf-8")
    choices = "\n".join(f'    <Choice value="{html.escape(label, quote=True)}"/>' for label in get_scheme(scheme).labels)
    return template.replace("{choices}", choices)


def display_payload(task: BlindTask) -> str:
    """What the annotator reads (``samples.kinds.annotator_view``) as escaped HTML for a HyperText tag.

    Every piece of unit text is HTML-escaped: agent output containing markup or scripts
    is displayed, never rendered. The focus turn of an ``identify_turn`` task is highlighted.
    """
    view = get_kind(task.kind).annotator_view(task)
    blocks = []  # the labeling config's own Header says what to read (view.caption is the coding app's)
    for section in view.sections:
        style = ("border-left:4px solid #b91c1c;background:#fef2f2" if section.notice
                 else "border-left:4px solid #d97706;background:#fff7e6" if section.focus else "border-left:4px solid #cbd5e1")
        marker = '<div style="font-weight:bold;color:#b45309">Label this turn</div>' if section.focus else ""
        heading = f'<div style="font-weight:bold">{html.escape(section.heading)}</div>' if section.heading and not section.focus else ""
        blocks.append(
            f'<div style="margin:0 0 10px 0;padding:6px 10px;{style}">{marker}{heading}'
            f'<div style="white-space:pre-wrap;font-family:monospace">{html.escape(section.text)}</div></div>'
        )
    return "".join(blocks)


def _timestamp(value: str | None) -> str | None:
    """Label Studio times as ISO-8601 UTC with microseconds, the coding app's format."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="microseconds")


def _user_id(completed_by: Any) -> int | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    return completed_by if isinstance(completed_by, int) else None


def _results(annotation: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {item.get("from_name"): item.get("value") or {} for item in annotation.get("result") or [] if isinstance(item, dict)}


def _label_from_task(
    task: Mapping[str, Any], *, annotator: str, user_id: int, project: ProjectState, state: LabelStudioState, ignored: list[str]
) -> HumanLabel | None:
    """The annotator's label of one exported task, or None (with the reason in ``ignored`` when it is not a label)."""
    task_id = (task.get("data") or {}).get("task_id")
    where = f"project {project.project_id} (annotator {annotator!r}), Label Studio task {task.get('id')}"
    if task_id not in project.tasks:
        ignored.append(f"{where}: task {task_id!r} was not pushed by accord")
        return None
    where = f"{where}, task {task_id!r}"
    annotations = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
    foreign = [a for a in annotations if _user_id(a.get("completed_by")) != user_id]
    for annotation in foreign:
        ignored.append(f"{where}: annotation {annotation.get('id')} by user {_user_id(annotation.get('completed_by'))}, not the annotator")
    own = sorted((a for a in annotations if a not in foreign), key=lambda a: (a.get("updated_at") or "", a.get("id") or 0))
    if not own:
        return None
    latest = own[-1]
    results = _results(latest)
    info = state.tasks.get(task_id)
    if info is None:
        ignored.append(f"{where}: the state file has no record of this task; run `accord ls push` again")
        return None
    scheme = get_scheme(state.schemes[info.kind])
    chosen = list(results.get(_LABEL, {}).get("choices") or [])
    if len(chosen) != 1 or chosen[0] not in scheme.labels:
        ignored.append(f"{where}: annotation {latest.get('id')} has label {chosen}; expected one of {list(scheme.labels)}")
        return None
    label = chosen[0]
    number = results.get(_FIRST_TURN, {}).get("number")
    first_turn = None if number is None else int(number) if float(number).is_integer() else number
    problem = first_turn_problem(info.kind, label, first_turn, info.n_turns or 0, scheme=scheme.name)
    if problem:
        ignored.append(f"{where}: annotation {latest.get('id')}: {problem}")
        return None
    lead_times = [a.get("lead_time") for a in own if isinstance(a.get("lead_time"), int | float)]
    return HumanLabel(
        task_id=task_id, annotator=annotator, label=label, first_turn=first_turn,
        unsure="unsure" in (results.get(_UNSURE, {}).get("choices") or []),
        note="\n".join(results.get(_NOTE, {}).get("text") or []),
        created_at=min(_timestamp(a.get("created_at")) or "" for a in own),
        updated_at=_timestamp(latest.get("updated_at") or latest.get("created_at")),
        seconds_spent=float(sum(lead_times)) if lead_times else None,
        backend="labelstudio", role="independent", codebook_sha256=project.codebook_sha256,
    )


def _read_table(path: Path) -> dict[tuple[str, str, str], HumanLabel]:
    if not path.exists():
        return {}
    return {(row.task_id, row.annotator, row.role): row for row in read_models(path, HumanLabel)}
