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

Reading a long unit (20-50 turns, long tool output): the unit scrolls in its own pane beside a
turn index (number, speaker, tools called, length), so the page stays one screen and the form
stays reachable; blocks longer than FOLD_CHARS (tool results, reasoning, a page a web agent
read) arrive folded to a one-line preview, except in the focus turn; the browser adds find in
the unit, the focus turn one key (F) away, a sticky head (message, progress, task number), a
new task opening at its top and the keyboard focus back on the unit after any navigation.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import re
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from annotate import codebook_html, question
from samples import BlindTask, InputError, first_turn_offered, get_kind

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


def first_turn_choices(task: BlindTask) -> list[int] | None:
    """The turn numbers a 'yes' must name as its first recognition turn, or None where the unit
    kind has no first turn to ask for (``samples.kinds``: an ``identify_turn``'s focus turn is
    the turn labelled) or the unit no numbered turns. Offered means required for a 'yes'."""
    if not task.turns or not first_turn_offered(task.kind):
        return None
    return list(range(len(task.turns)))


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


# Blocks of a turn longer than this fold to a one-line preview (an expandable <details>):
# tool results such as a CSV dump of hundreds of rows, reasoning, a page a web agent read.
# About 20 lines of the unit's width; most agent messages and ledger updates stay open.
FOLD_CHARS = 1500
PREVIEW_CHARS = 160
_TURN_HEADER = re.compile(r"\[turn \d+\](?: \((?P<speaker>.*)\))?$")
_TOOL_LINE = re.compile(r"^(?=\[tool (?:call|result)\] )", re.MULTILINE)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_BLOCK_KINDS = {"[tool call] ": "tool call", "[tool result] ": "tool result"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class TurnBlock:
    """One part of a turn as samples.units renders it: its "[turn i] (speaker)" header, a message,
    reasoning, a tool call or a tool result."""

    kind: str
    text: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class TurnOutline:
    """What the turn index shows of a turn, and the blocks the unit draws."""

    number: int
    speaker: str
    tools: tuple[str, ...]
    length: int
    blocks: tuple[TurnBlock, ...]


def outline_turn(number: int, text: str) -> TurnOutline:
    """Split a rendered turn (samples.units: "[turn i] (speaker)", reasoning, text, then
    "[tool call] name args" / "[tool result] ..." lines) into its blocks; the blocks' texts
    are the turn's text in order (but for the line breaks between them), so nothing is dropped
    when a turn is not in that form."""
    first, _, rest = text.partition("\n")
    header = _TURN_HEADER.match(first)
    blocks = [TurnBlock(kind="header", text=first)] if header else []
    for chunk in _TOOL_LINE.split(rest if header else text):
        chunk = chunk.removesuffix("\n")
        kind = next((name for prefix, name in _BLOCK_KINDS.items() if chunk.startswith(prefix)), None)
        if kind is not None:
            blocks.append(TurnBlock(kind=kind, text=chunk))
            continue
        start = 0
        for think in _THINK.finditer(chunk):
            blocks.append(TurnBlock(kind="message", text=chunk[start:think.start()].strip("\n")))
            blocks.append(TurnBlock(kind="reasoning", text=think.group()))
            start = think.end()
        blocks.append(TurnBlock(kind="message", text=chunk[start:].strip("\n")))
    speaker = header.group("speaker") if header and header.group("speaker") else "agent"
    tools = tuple(block.text.removeprefix("[tool call] ").split(" ", 1)[0] for block in blocks if block.kind == "tool call")
    return TurnOutline(number=number, speaker=speaker, tools=tools, length=len(text),
                       blocks=tuple(block for block in blocks if block.text))


def first_line(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The first non-blank line of ``text``, cut at ``limit`` characters (a folded block's preview)."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _size(length: int) -> str:
    return str(length) if length < 1000 else f"{length / 1000:.1f}k" if length < 10_000 else f"{length // 1000}k"


def _block_html(block: TurnBlock, *, fold: bool) -> str:
    text = f'<div class="accord-text">{html.escape(block.text)}</div>'
    if not fold or block.kind == "header" or len(block.text) <= FOLD_CHARS:
        return text
    preview = first_line(block.text.removeprefix("[tool result] ").removeprefix("<think>"))
    lines = block.text.count("\n") + 1
    return (
        f'<details class="accord-fold"><summary><span class="accord-fold-kind">{block.kind}</span> '
        f'<span class="accord-fold-preview">{html.escape(preview)}</span> '
        f'<span class="accord-fold-size">· {len(block.text):,} characters, {lines:,} lines · show</span></summary>{text}</details>'
    )


def task_html(task: BlindTask) -> str:
    """The unit as the annotator sees it (``samples.kinds.annotator_view``: numbered turns with
    the focus turn marked, question and gold answer, ...) as escaped HTML: a numbered turn is
    one section, its long blocks folded unless it is the focus turn."""
    view = get_kind(task.kind).annotator_view(task)
    parts = []
    for section in view.sections:
        if section.turn is None:
            title = f"<p><strong>{html.escape(section.heading)}</strong></p>" if section.heading else ""
            box = ('class="accord-box accord-notice" role="alert"' if section.notice
                   else f'class="accord-box{" accord-focus" if section.focus else ""}"')
            parts.append(f'<div {box}>{title}'
                         f'<div class="accord-text">{html.escape(section.text)}</div></div>')
            continue
        title = (f'<p class="accord-labelling"><strong>{html.escape(section.heading)}</strong></p>'
                 if section.heading else "")
        blocks = "".join(_block_html(block, fold=not section.focus)
                         for block in outline_turn(section.turn, section.text).blocks)
        parts.append(f'<section class="accord-box accord-turn{" accord-focus" if section.focus else ""}" '
                     f'data-turn="{section.turn}" tabindex="-1" aria-label="turn {section.turn}">{title}{blocks}</section>')
    caption = f'<p class="accord-caption">{html.escape(view.caption)}</p>' if view.caption else ""
    return '<div class="accord-unit">' + caption + "".join(parts) + "</div>"


def _turn_sections(task: BlindTask) -> list:
    return [s for s in get_kind(task.kind).annotator_view(task).sections if s.turn is not None]


def index_html(task: BlindTask) -> str:
    """The turn index (number, speaker, tools called, length) as escaped HTML buttons; empty
    for a unit without numbered turns."""
    sections = _turn_sections(task)
    if not sections:
        return ""
    rows = []
    for section in sections:
        number = section.turn
        outline = outline_turn(number, section.text)
        tools = ", ".join(outline.tools)
        marked = ' class="accord-index-focus" aria-current="true"' if section.focus else ""
        rows.append(
            f'<li><button type="button" data-turn="{number}"{marked} '
            f'title="turn {number}: {html.escape(outline.speaker)}{", " + html.escape(tools) if tools else ""}, {outline.length:,} characters">'
            f'<span class="accord-index-number">{number}</span><span class="accord-index-speaker">{html.escape(outline.speaker)}</span>'
            f'<span class="accord-index-tools">{html.escape(tools)}</span><span class="accord-index-length">{_size(outline.length)}</span>'
            "</button></li>"
        )
    return f'<p class="accord-index-title">Turns ({len(sections)}) · click to jump</p><ol>{"".join(rows)}</ol>'


@functools.lru_cache(maxsize=16)
def _unit_view(task_json: str) -> dict[str, object]:
    """The index and unit HTML of a task (and its focus turn), kept for its next reruns: about
    20 ms for a 50-turn unit with 200 KB of tool output, redrawn on every submit and navigation
    otherwise. Keyed by the task's whole payload, so every field an annotator sees counts."""
    task = BlindTask.model_validate_json(task_json)
    focus = next((s.turn for s in _turn_sections(task) if s.focus), None)
    return {"index": index_html(task), "unit": task_html(task), "focus": focus}


def table_html(title: str, rows: list[dict[str, object]]) -> str:
    """A titled table with every cell escaped."""
    head = "".join(f"<th>{html.escape(str(name))}</th>" for name in rows[0]) if rows else ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row.values()) + "</tr>" for row in rows)
    return f"<p><strong>{html.escape(title)}</strong></p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def workspace(
    *, role: str, flash: tuple[str, list[str]] | None, heading: str, detail: str, fraction: float,
    scheme: str, task: BlindTask, context_html: str, identity: str, labels: Sequence[str], turns: list[int] | None,
    values: FormValues, navigation: int, on_submit,
) -> None:
    """Draw the workspace; the form is refilled with ``values`` when it is new or they changed.
    A new unit opens at its top; a new unit or a changed ``navigation`` count (any click in the
    navigation) gives the keyboard focus back to the unit."""
    WORKSPACE(
        key=component_key(role),
        data={
            "flash": None if flash is None else {"kind": flash[0], "messages": flash[1]},
            "progress": {"heading": heading, "detail": detail, "fraction": fraction},
            "codebook": codebook_html(scheme),
            **_unit_view(task.model_copy(update={"task_id": "drawn"}).model_dump_json()),
            "context": context_html,
            "navigation": navigation,
            "form": {
                "id": identity, "heading": "Adjudicated label" if role == "adjudication" else "Your label",
                "question": question(task.kind, scheme),
                "labels": list(labels), "turns": turns, "values": dataclasses.asdict(values),
            },
        },
        on_submit_change=on_submit,
    )
