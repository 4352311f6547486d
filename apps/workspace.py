"""The coding app's workspace as one Streamlit component (st.components.v2): the last click's
message, progress, the codebook (one click away, opened in the browser), the unit (and, for
the adjudicator, the independent labels) and the label form, drawn by the browser
(apps/workspace.js) and updated in place from one task to the next.

Why not Streamlit's own elements: with five annotators labelling at once on two cores, the
browser's work of re-rendering those elements and mounting a new set of form widgets for
every task dominated the submit round trip (bench_annotate). One component redraws in one
pass only what changed, so the next task's text and its empty form appear together.

Why it stays correct: every submit carries the identity of the form it was drawn for (role,
task, revision). The server acts only on a submit whose identity is the form it drew last,
and then for the task and revision it drew; a stale submit (the second click of a double
click, a submit sent before the next task appeared) is ignored, so it can neither label the
next task nor carry the previous task's note onto it. Values from the browser are checked
like any other input.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from annotate.codebook import codebook_html
from samples.errors import InputError
from samples.kinds import get_kind
from samples.records import BlindTask

_HERE = Path(__file__).parent

WORKSPACE = st.components.v2.component(
    "accord_workspace",
    css=(_HERE / "workspace.css").read_text(encoding="utf-8"),
    js=(_HERE / "workspace.js").read_text(encoding="utf-8"),
    isolate_styles=False,  # in the page's DOM: the page-wide key listener and text search see it
)


def component_key(role: str) -> str:
    """One Streamlit key per role, so the browser keeps one workspace element across tasks."""
    return f"workspace:{role}"


def form_identity(role: str, task_id: str, base_revision: int) -> str:
    return f"{role}:{task_id}:{base_revision}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class FormValues:
    """What the form shows or a submit sent."""

    label: str | None
    first_turn: int | None
    unsure: bool
    note: str


def sent_values(role: str, identity: str, labels: Sequence[str], turns: list[int] | None) -> FormValues | None:
    """Inside the submit callback: the submitted values if the submit was drawn for the form
    ``identity``, None for a stale one; InputError when a value is not one the form offers."""
    value = st.session_state[component_key(role)]  # the component's state, its triggers merged in
    sent = value.get("submit") if isinstance(value, dict) else None
    if not isinstance(sent, dict) or sent.get("form") != identity:
        return None
    label, first_turn, unsure, note = (sent.get(name) for name in ("label", "first_turn", "unsure", "note"))
    if label is not None and label not in labels:
        raise InputError(f"label {label!r}: expected one of {list(labels)}")
    if first_turn is not None and (turns is None or isinstance(first_turn, bool) or first_turn not in turns):
        raise InputError(f"first turn {first_turn!r}: expected none{'' if turns is None else f' or one of {turns}'}")
    if not isinstance(unsure, bool):
        raise InputError(f"unsure {unsure!r}: expected true or false")
    if not isinstance(note, str):
        raise InputError(f"note {note!r}: expected text")
    return FormValues(label=label, first_turn=first_turn, unsure=unsure, note=note)


def task_html(task: BlindTask) -> str:
    """The unit as the annotator sees it (``samples.kinds.annotator_view``: numbered turns with
    the focus turn marked, question and gold answer, ...) as escaped HTML."""
    def box(text: str, *, heading: str = "", focus: bool = False) -> str:
        title = f"<p><strong>{html.escape(heading)}</strong></p>" if heading else ""
        return f'<div class="accord-box{" accord-focus" if focus else ""}">{title}<div class="accord-text">{html.escape(text)}</div></div>'

    view = get_kind(task.kind).annotator_view(task)
    boxes = "".join(box(section.text, heading=section.heading, focus=section.focus) for section in view.sections)
    caption = f'<p class="accord-caption">{html.escape(view.caption)}</p>' if view.caption else ""
    return '<div class="accord-unit">' + caption + boxes + "</div>"


def table_html(title: str, rows: list[dict[str, object]]) -> str:
    """A titled table with every cell escaped."""
    head = "".join(f"<th>{html.escape(str(name))}</th>" for name in rows[0]) if rows else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row.values()) + "</tr>" for row in rows)
    return f"<p><strong>{html.escape(title)}</strong></p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def workspace(
    *, role: str, flash: tuple[str, list[str]] | None, heading: str, detail: str, fraction: float,
    scheme: str, unit_html: str, context_html: str, identity: str, labels: Sequence[str], turns: list[int] | None,
    values: FormValues, on_submit,
) -> None:
    """Draw the workspace; the form is refilled with ``values`` when it is new or they changed."""
    WORKSPACE(
        key=component_key(role),
        data={
            "flash": None if flash is None else {"kind": flash[0], "messages": flash[1]},
            "progress": {"heading": heading, "detail": detail, "fraction": fraction},
            "codebook": codebook_html(scheme),
            "unit": unit_html,
            "context": context_html,
            "form": {
                "id": identity, "heading": "Adjudicated label" if role == "adjudication" else "Your label",
                "labels": list(labels), "turns": turns, "values": dataclasses.asdict(values),
            },
        },
        on_submit_change=on_submit,
    )
