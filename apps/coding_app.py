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
from samples.schemes import DEFAULT_SCHEME, get_scheme

SHORTCUTS_HELP = "Keys: **1**, **2**, ... choose a label · **S** submit · **N** next · **P** previous"
# Streamlit animates fades, hovers and its running indicator; on a loaded machine those
# frames took about a quarter of the browser's CPU per submit (bench_annotate, 5 sessions).
NO_MOTION = "<style>*, *::before, *::after { transition: none !important; animation: none !important; }</style>"


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

    bar = st.container(horizontal=True, vertical_alignment="center")
    bar.button("◀ Previous", key=f"prev:{state_key}", shortcut="P", on_click=go, args=(position - 1,), disabled=position == 0)
    first_open = next((i for i, flag in enumerate(done) if not flag), None)
    bar.button("First open", key=f"open:{state_key}", on_click=go, args=(first_open or 0,), disabled=first_open is None)
    bar.button("Next ▶", key=f"next:{state_key}", shortcut="N", on_click=go, args=(position + 1,), disabled=position == count - 1)
    # One key for the jump list, its value set from the position: a key per position
    # would make the browser build a new select widget on every move and every submit.
    jump_key = f"jump:{state_key}"
    st.session_state[jump_key] = position
    bar.selectbox(
        f"Go to {what}", options=range(count), key=jump_key,
        format_func=lambda i: f"#{i + 1} {'✓' if done[i] else '·'}", label_visibility="collapsed",
        on_change=lambda: go(st.session_state[jump_key]),
    )
    return position


# A fragment inside the workspace fragment: choosing a label redraws only these buttons.
@st.fragment
def label_buttons(role: str, state_key: str, labels: tuple[str, ...]) -> None:
    def choose(label: str) -> None:
        st.session_state[state_key] = label

    chosen = st.session_state[state_key]
    # One horizontal container rather than columns: fewer elements for the browser to redraw.
    row = st.container(horizontal=True)
    for number, label in enumerate(labels, start=1):
        row.button(
            label, key=f"choose:{role}:{number}", shortcut=str(number), on_click=choose, args=(label,),
            type="primary" if chosen == label else "secondary", width="stretch",
        )


def label_form(session: AnnotatorSession | AdjudicatorSession, task: BlindTask, *, advance: tuple[str, int] | None) -> None:
    """Label buttons (keys 1..k), first turn (Identify), unsure, note and submit (key S)."""
    current = session.current(task.task_id)
    history = session.history(task.task_id)
    base_revision = len(history)
    key = f"{session.label_role}:{task.task_id}:{base_revision}"
    state = st.session_state
    state.setdefault(f"label:{key}", current.label if current else None)
    state.setdefault(f"t0:{key}", time.monotonic())
    st.markdown("**Adjudicated label**" if session.label_role == "adjudication" else "**Your label**")
    label_buttons(session.label_role, f"label:{key}", get_scheme(DEFAULT_SCHEME[task.kind]).labels)
    # The inputs keep one key per role and are refilled from the stored label when the form
    # moves to another task or revision, so the browser updates them in place instead of
    # building new widgets (keys per task would rebuild them on every submit).
    role = session.label_role
    if state.get(f"form:{role}") != key:
        state[f"form:{role}"] = key
        state[f"first:{role}"] = current.first_turn if current else None
        state[f"unsure:{role}"] = current.unsure if current else False
        state[f"note:{role}"] = current.note if current else ""
    inputs = st.container()
    if task.kind in IDENTIFY_KINDS:
        options = [None, *range(len(task.turns or []))]
        if state[f"first:{role}"] not in options:
            state[f"first:{role}"] = None
        inputs.selectbox(
            "First recognition turn (for a 'yes')", options=options, key=f"first:{role}",
            format_func=lambda value: "— none —" if value is None else f"turn {value}", placeholder="— none —",
        )
    inputs.checkbox("Unsure (a flag only; it does not change the label)", key=f"unsure:{role}")
    inputs.text_area("Note", key=f"note:{role}")

    def submit() -> None:
        label = state[f"label:{key}"]
        first_turn = state.get(f"first:{role}") if label == "yes" else None
        unsure, note = state[f"unsure:{role}"], state[f"note:{role}"]
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


def signed_in(store: Store) -> AnnotatorSession | AdjudicatorSession | None:
    """The session of this browser tab's token, checked against the store on every run (a
    revoked token signs the tab out at its next click); None after signing the tab out."""
    token = st.session_state.get("token")
    if token is None:
        return None
    try:
        return sign_in(store, token)
    except InputError as error:
        sign_out()
        flash("error", f"Signed out: {error}")
        return None


# A fragment: a click inside it (label, submit, move) reruns only this function, so the
# server skips the page set-up and the sidebar and the browser redraws only this part.
@st.fragment
def workspace(store: Store) -> None:
    session = signed_in(store)
    if session is None:
        st.rerun()
    show_flashes()
    if isinstance(session, AnnotatorSession):
        annotator_page(session)
    else:
        adjudicator_page(session)


def main() -> None:
    st.set_page_config(page_title="accord coding app", layout="wide")
    st.html(NO_MOTION)
    study = os.environ.get("ACCORD_STUDY")
    if not study or not Path(study).is_dir():
        st.error("No study folder: start the app with `accord app --study DIR`.")
        return
    try:
        store = open_store(study)
    except InputError as error:
        st.error(str(error))
        return
    session = signed_in(store)
    if session is None:
        show_flashes()
        sign_in_page(store)
        return
    with st.sidebar:
        st.markdown(f"Signed in as **{session.name}** ({session.role_name})")
        st.markdown(SHORTCUTS_HELP)
        st.button("Sign out", on_click=sign_out)
    workspace(store)


main()
