"""accord coding app: blind annotation of Identify / Escalate units in the browser.

Start it with ``accord app --study DIR`` (which sets ``ACCORD_STUDY``). People
sign in with their personal token; the page only ever talks to the session
object that token opens (annotate.app_backend), so an annotator sees their own
order and labels and nothing else.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import streamlit as st

from annotate.app_backend import AdjudicatorSession, AnnotatorSession, sign_in
from annotate.codebook import codebook_for_kind
from annotate.store import IDENTIFY_KINDS, Store
from samples.errors import InputError
from samples.records import BlindTask
from samples.schemes import DEFAULT_SCHEME, SCHEMES, get_scheme

SHORTCUTS_HELP = "Keys: **1**, **2**, ... choose a label · **S** submit · **N** next · **P** previous"


@st.cache_resource
def open_store(study: str) -> Store:
    return Store.for_study(study)


def flash(kind: str, message: str) -> None:
    st.session_state.setdefault("flash", []).append((kind, message))


def show_flashes() -> None:
    with st.container():
        for kind, message in st.session_state.pop("flash", []):
            (st.success if kind == "success" else st.error)(message)


def sign_in_page(store: Store) -> None:
    st.title("accord coding app")
    st.write("Sign in with the personal token you were given.")
    with st.form("sign-in"):
        token = st.text_input("Token", type="password", key="token_input")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        try:
            sign_in(store, token)
        except InputError as error:
            st.error(str(error))
            return
        st.session_state["token"] = token.strip()
        st.rerun()


def sign_out() -> None:
    for key in list(st.session_state):
        del st.session_state[key]


def render_task(task: BlindTask) -> None:
    with st.container():
        _render_task(task)


def _render_task(task: BlindTask) -> None:
    # A toggle rather than an expander: a collapsed expander still ships and renders the
    # codebook on every rerun, which slows each submit; the toggle keeps its state across tasks.
    if st.toggle("Show the codebook (how to label this unit)", key="show_codebook"):
        with st.container(border=True):
            st.markdown(codebook_for_kind(task.kind))
    if task.kind in IDENTIFY_KINDS and task.turns:
        st.caption("Intermediate turns of the agent (its final answer is not shown).")
        for number, turn in enumerate(task.turns):
            with st.container(border=True):
                if number == task.focus_turn:
                    st.markdown(f"**turn {number} — the turn you are labelling**")
                st.text(turn)
    elif task.kind == "escalate_final":
        st.caption("The agent's final message to the user.")
        with st.container(border=True):
            st.text(task.text)
    else:
        with st.container(border=True):
            st.text(task.text)


def navigator(count: int, state_key: str, done: list[bool], what: str) -> int:
    position = min(max(st.session_state[state_key], 0), count - 1)

    def go(to: int) -> None:
        st.session_state[state_key] = min(max(to, 0), count - 1)

    left, middle, right, jump = st.columns([1, 1, 1, 3])
    left.button("◀ Previous", key=f"prev:{state_key}", shortcut="P", on_click=go, args=(position - 1,), disabled=position == 0)
    right.button("Next ▶", key=f"next:{state_key}", shortcut="N", on_click=go, args=(position + 1,), disabled=position == count - 1)
    first_open = next((i for i, flag in enumerate(done) if not flag), None)
    middle.button("First open", key=f"open:{state_key}", on_click=go, args=(first_open or 0,), disabled=first_open is None)
    jump.selectbox(
        f"Go to {what}", options=range(count), index=position, key=f"jump:{state_key}:{position}",
        format_func=lambda i: f"#{i + 1} {'✓' if done[i] else '·'}", label_visibility="collapsed",
        on_change=lambda: go(st.session_state[f"jump:{state_key}:{position}"]),
    )
    return position


def label_form(session: AnnotatorSession | AdjudicatorSession, task: BlindTask, *, advance: tuple[str, int] | None) -> None:
    """Label buttons (keys 1..k), first turn (Identify), unsure, note and submit (key S)."""
    current = session.current(task.task_id)
    history = session.history(task.task_id)
    base_revision = len(history)
    key = f"{session.label_role}:{task.task_id}:{base_revision}"
    state = st.session_state
    state.setdefault(f"label:{key}", current.label if current else None)
    state.setdefault(f"t0:{key}", time.monotonic())
    labels = get_scheme(DEFAULT_SCHEME[task.kind]).labels
    chosen = state[f"label:{key}"]

    def choose(label: str) -> None:
        state[f"label:{key}"] = label

    st.markdown("**Adjudicated label**" if session.label_role == "adjudication" else "**Your label**")
    columns = st.columns(max(len(s.labels) for s in SCHEMES.values()))
    for number, (column, label) in enumerate(zip(columns, labels, strict=False), start=1):
        column.button(
            label, key=f"choose:{session.label_role}:{number}", shortcut=str(number), on_click=choose, args=(label,),
            type="primary" if chosen == label else "secondary", width="stretch",
        )
    inputs = st.container()
    if task.kind in IDENTIFY_KINDS:
        options = [None, *range(len(task.turns or []))]
        initial = current.first_turn if current and current.first_turn in options else None
        inputs.selectbox(
            "First recognition turn (for a 'yes')", options=options, index=options.index(initial), key=f"first:{key}",
            format_func=lambda value: "— none —" if value is None else f"turn {value}",
        )
    inputs.checkbox("Unsure (a flag only; it does not change the label)", value=current.unsure if current else False, key=f"unsure:{key}")
    inputs.text_area("Note", value=current.note if current else "", key=f"note:{key}")

    def submit() -> None:
        label = state[f"label:{key}"]
        first_turn = state.get(f"first:{key}") if label == "yes" else None
        unsure, note = state[f"unsure:{key}"], state[f"note:{key}"]
        if label is None:
            flash("error", "Choose a label first (click it or press its number).")
            return
        if current is not None and (current.label, current.first_turn, current.unsure, current.note) == (label, first_turn, unsure, note):
            flash("success", f"Already saved as '{label}'; nothing changed.")
            return
        try:
            result = session.submit(
                task.task_id, label, base_revision=base_revision,
                first_turn=first_turn, unsure=unsure, note=note,
                seconds_spent=round(time.monotonic() - state[f"t0:{key}"], 3),
            )
        except InputError as error:
            flash("error", str(error))
            return
        flash("success", f"Saved '{label}' (revision {result.revision}).")
        if advance is not None:
            state_key, count = advance
            state[state_key] = min(state[state_key] + 1, count - 1)

    # Widgets with shortcuts keep one key and one place on the page (variable content sits
    # in containers): the browser binds a shortcut per key combination, and a widget that
    # is replaced rather than updated can drop the new binding.
    st.button("Submit", key=f"submit:{session.label_role}", type="primary", shortcut="S", on_click=submit)
    if history:
        with st.expander(f"History of this label ({len(history)} revision(s); the latest counts)"):
            for revision in reversed(history):
                turn = "" if revision.first_turn is None else f", first turn {revision.first_turn}"
                flags = ", unsure" if revision.unsure else ""
                note_text = f" — {revision.note}" if revision.note else ""
                st.markdown(f"{revision.number}. `{revision.submitted_at[:19]}` **{revision.label}**{turn}{flags}{note_text}")


def annotator_page(session: AnnotatorSession) -> None:
    order = session.order()
    if not order:
        st.info("No tasks are assigned to you yet.")
        return
    st.session_state.setdefault("position", session.resume_position())
    labelled = session.labelled()
    done = [task_id in labelled for task_id in order]
    progress = session.progress()
    st.progress(progress.done / progress.total, text=f"{progress.done} of {progress.total} labelled")
    position = navigator(len(order), "position", done, "task")
    task = session.task(order[position])
    st.subheader(f"Task {position + 1} of {len(order)}")
    render_task(task)
    label_form(session, task, advance=("position", len(order)) if not done[position] else None)


def adjudicator_page(session: AdjudicatorSession) -> None:
    queue = session.queue()
    if not queue:
        st.info("No disagreements to adjudicate.")
        return
    done = [item.adjudicated is not None for item in queue]
    st.session_state.setdefault("adj_position", next((i for i, flag in enumerate(done) if not flag), 0))
    st.progress(sum(done) / len(queue), text=f"{sum(done)} of {len(queue)} disagreements adjudicated")
    position = navigator(len(queue), "adj_position", done, "disagreement")
    item = queue[position]
    st.subheader(f"Disagreement {position + 1} of {len(queue)}")
    render_task(session.task(item.task_id))
    st.markdown("**Independent labels** (coders numbered per unit, in the order they labelled)")
    st.table([
        {"coder": f"coder {c.coder}", "label": c.label, "first turn": "" if c.first_turn is None else c.first_turn,
         "unsure": "yes" if c.unsure else "", "note": c.note}
        for c in item.coders
    ])
    label_form(session, session.task(item.task_id), advance=None)


def main() -> None:
    st.set_page_config(page_title="accord coding app", layout="wide")
    study = os.environ.get("ACCORD_STUDY")
    if not study or not Path(study).is_dir():
        st.error("No study folder: start the app with `accord app --study DIR`.")
        return
    try:
        store = open_store(study)
    except InputError as error:
        st.error(str(error))
        return
    show_flashes()
    token = st.session_state.get("token")
    if token is None:
        sign_in_page(store)
        return
    try:
        session = sign_in(store, token)
    except InputError as error:
        sign_out()
        st.error(f"Signed out: {error}")
        sign_in_page(store)
        return
    with st.sidebar:
        st.markdown(f"Signed in as **{session.name}** ({session.role_name})")
        st.markdown(SHORTCUTS_HELP)
        st.button("Sign out", on_click=sign_out)
    if isinstance(session, AnnotatorSession):
        annotator_page(session)
    else:
        adjudicator_page(session)


main()
