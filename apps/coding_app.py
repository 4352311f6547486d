"""accord coding app: blind annotation of Identify / Escalate units in the browser.

Start it with ``accord app --study DIR`` (which sets ``ACCORD_STUDY``). People
sign in with their personal token; the page only ever talks to the session
object that token opens (annotate.app_backend), so an annotator sees their own
order and labels and nothing else.
"""

from __future__ import annotations

import html
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
# Without transitions a rerun's stale elements would dim at once and flicker back (Streamlit
# delays the dimming so quick reruns never show it), so they keep their opacity.
PAGE_STYLE = """<style>
*, *::before, *::after { transition: none !important; animation: none !important; }
[data-stale="true"] { opacity: 1 !important; }
.accord-caption { font-size: 0.875rem; opacity: 0.7; margin: 0 0 0.5rem 0; }
.accord-box { border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 0.5rem; padding: 0.75rem 1rem; margin-bottom: 0.5rem; }
.accord-focus { border: 2px solid rgba(255, 75, 75, 0.8); }
.accord-text { font-family: "Source Code Pro", monospace; font-size: 0.875rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
</style>"""


@st.cache_resource
def open_store(study: str) -> Store:
    return Store.for_study(study)


def flash(kind: str, message: str) -> None:
    st.session_state.setdefault("flash", []).append((kind, message))


def show_flashes() -> None:
    """The messages of the last click in one alert (an error if any is an error), or an empty
    slot: always one element, so the elements after it keep their place on the page."""
    messages = st.session_state.pop("flash", [])
    if not messages:
        st.empty()
        return
    alert = st.error if any(kind == "error" for kind, _ in messages) else st.success
    alert("\n\n".join(message for _, message in messages))


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


def task_html(task: BlindTask) -> str:
    """The unit's text (numbered turns for Identify) as one escaped HTML block: one element
    for the browser to redraw per task instead of a container, caption and text per turn."""
    def box(text: str, *, heading: str = "", focus: bool = False) -> str:
        title = f"<p><strong>{html.escape(heading)}</strong></p>" if heading else ""
        return f'<div class="accord-box{" accord-focus" if focus else ""}">{title}<div class="accord-text">{html.escape(text)}</div></div>'

    if task.kind in IDENTIFY_KINDS and task.turns:
        caption = "Intermediate turns of the agent (its final answer is not shown)."
        boxes = "".join(
            box(turn, heading=f"turn {number} — the turn you are labelling" if number == task.focus_turn else "", focus=number == task.focus_turn)
            for number, turn in enumerate(task.turns)
        )
    else:
        caption = "The agent's final message to the user." if task.kind == "escalate_final" else ""
        boxes = box(task.text)
    return '<div class="accord-unit">' + (f'<p class="accord-caption">{html.escape(caption)}</p>' if caption else "") + boxes + "</div>"


def render_task(task: BlindTask) -> None:
    # A toggle rather than an expander: a collapsed expander still ships and renders the
    # codebook on every rerun, which slows each submit; the toggle keeps its state across tasks.
    show_codebook = st.toggle("Show the codebook (how to label this unit)", key="show_codebook")
    with st.container():
        if show_codebook:
            with st.container(border=True):
                st.markdown(codebook_for_kind(task.kind))
    st.html(task_html(task))


def first_open(done: list[bool]) -> int | None:
    """The first item not yet labelled (adjudicated), or None when all are."""
    return next((i for i, flag in enumerate(done) if not flag), None)


def worklist(session: AnnotatorSession | AdjudicatorSession) -> tuple[str, str, list[bool]]:
    """The signed-in role's list: (position state key, what an item is called, done flags)."""
    if isinstance(session, AnnotatorSession):
        labelled = session.labelled()
        return "position", "task", [task_id in labelled for task_id in session.order()]
    return "adj_position", "disagreement", [item.adjudicated is not None for item in session.queue()]


def navigation(session: AnnotatorSession | AdjudicatorSession) -> None:
    """Previous / Next (keys P / N), first open item and go-to-number, in the sidebar: outside
    the workspace fragment a submit does not redraw them (above the unit, with a jump list of
    every item, they were about a fifth of the browser's main-thread work per submit, 15 of
    68 ms at 42 tasks, the list growing with the order). None holds state that a submit
    changes: each reads the done flags and the position when clicked."""
    _, what, done = worklist(session)
    if not done:
        return

    def move(step: int) -> None:
        key, _, flags = worklist(session)
        target = st.session_state.get(key, 0) + step
        if 0 <= target < len(flags):
            st.session_state[key] = target
        else:
            flash("error", f"This is the {'first' if step < 0 else 'last'} {what}.")

    def go_to_first_open() -> None:
        key, _, flags = worklist(session)
        target = first_open(flags)
        if target is None:
            flash("success", f"Every {what} is done.")
        else:
            st.session_state[key] = target

    def jump() -> None:
        key, _, flags = worklist(session)
        number = st.session_state["jump-to"]
        st.session_state["jump-to"] = None  # empty again, so typing the same number later jumps again
        if number is None:
            return
        if 1 <= number <= len(flags):
            st.session_state[key] = number - 1
        else:  # the adjudication queue shrank since the page drew the input's bounds
            flash("error", f"Go to: the list now holds {len(flags)} {what}(s); type a number from 1 to {len(flags)}.")

    row = st.container(horizontal=True)
    row.button("◀ Previous", key="previous", shortcut="P", on_click=move, args=(-1,))
    row.button("Next ▶", key="next", shortcut="N", on_click=move, args=(1,))
    st.button(f"First open {what}", key="first-open", on_click=go_to_first_open)
    st.number_input(f"Go to {what} number", min_value=1, max_value=len(done), step=1, value=None, key="jump-to", placeholder=f"1 to {len(done)}", on_change=jump)


# Keys 1..k choose a label without a server round trip: the label is a form widget (a click
# only changes the browser's state), so label + submit costs one rerun instead of two.
# Streamlit's own `shortcut=` exists only on buttons, hence this listener; like Streamlit's,
# it ignores keys typed into a text field or a list.
LABEL_KEYS = """<script>
(() => {
  if (window.accordLabelKeys) return;
  window.accordLabelKeys = true;
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat || !/^[1-9]$/.test(event.key)) return;
    if (event.target.closest && event.target.closest("input, textarea, select, [contenteditable=true], [role=listbox]")) return;
    const option = document.querySelectorAll('[class*="st-key-choice-"] button')[Number(event.key) - 1];
    if (!option) return;
    event.preventDefault();
    if (option.getAttribute("aria-checked") !== "true") option.click();
  });
})();
</script>"""


def label_form(session: AnnotatorSession | AdjudicatorSession, task: BlindTask, *, advance: tuple[str, int] | None) -> None:
    """Label (keys 1..k), first turn (Identify), unsure, note and submit (key S) in one form;
    ``advance`` is (position state key, the position to show after a first label)."""
    current = session.current(task.task_id)
    history = session.history(task.task_id)
    base_revision = len(history)
    role = session.label_role
    key = f"{role}:{task.task_id}:{base_revision}"
    state = st.session_state
    state.setdefault(f"t0:{key}", time.monotonic())
    # Every input is keyed by the task and revision it was drawn for, because the form's values
    # travel with the click. Inputs keyed per role and refilled by the server were cheaper for
    # the browser (5-session submit p95 about 290 instead of 370 ms, bench_annotate) but wrong
    # twice over: the second click of a double click, sent before the next task was drawn,
    # met the next task's callback and labelled it with the previous task's values; and a
    # submit right after the next task appeared could carry the previous task's note, since
    # the browser applies server-set values only after drawing. Keyed per task, a stale click's
    # values land on widgets no longer drawn: it repeats the submit it was drawn for
    # (idempotent) or does nothing, and a new form always starts from the store.
    labels = get_scheme(DEFAULT_SCHEME[task.kind]).labels
    widget = {name: f"{name}:{key}" for name in ("choice", "first", "unsure", "note", "submit")}

    def submit() -> None:
        label = state[widget["choice"]]
        first_turn = state.get(widget["first"]) if label == "yes" else None
        unsure, note = state[widget["unsure"]], state[widget["note"]]
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
        if advance is not None and current is None:  # a first label moves on; an edit stays
            state_key, target = advance
            state[state_key] = target  # a position, not a step: a repeated submit cannot skip an item

    with st.form(f"label-form:{role}", border=False, enter_to_submit=False):
        st.segmented_control(
            "Adjudicated label" if role == "adjudication" else "Your label", options=labels, key=widget["choice"],
            default=current.label if current and current.label in labels else None,
            format_func=lambda label: f"{label} ({labels.index(label) + 1})",
        )
        if task.kind in IDENTIFY_KINDS:
            options = [None, *range(len(task.turns or []))]
            st.selectbox(
                "First recognition turn (for a 'yes')", options=options, key=widget["first"],
                index=options.index(current.first_turn) if current and current.first_turn in options else 0,
                format_func=lambda value: "— none —" if value is None else f"turn {value}",
            )
        st.checkbox("Unsure (a flag only; it does not change the label)", key=widget["unsure"], value=current.unsure if current else False)
        st.text_area("Note", key=widget["note"], value=current.note if current else "")
        st.form_submit_button("Submit", key=widget["submit"], type="primary", shortcut="S", on_click=submit)
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
    position = min(st.session_state["position"], len(order) - 1)
    progress = session.progress()
    st.progress(progress.done / progress.total, text=f"**Task {position + 1} of {len(order)}** · {progress.done} of {progress.total} labelled")
    task = session.task(order[position])
    render_task(task)
    label_form(session, task, advance=("position", min(position + 1, len(order) - 1)))


def adjudicator_page(session: AdjudicatorSession) -> None:
    queue = session.queue()
    if not queue:
        st.info("No disagreements to adjudicate.")
        return
    done = [item.adjudicated is not None for item in queue]
    st.session_state.setdefault("adj_position", first_open(done) or 0)
    position = min(st.session_state["adj_position"], len(queue) - 1)
    st.progress(sum(done) / len(queue), text=f"**Disagreement {position + 1} of {len(queue)}** · {sum(done)} of {len(queue)} disagreements adjudicated")
    item = queue[position]
    task = session.task(item.task_id)
    render_task(task)
    st.markdown("**Independent labels** (coders numbered per unit, in the order they labelled)")
    st.table([
        {"coder": f"coder {c.coder}", "label": c.label, "first turn": "" if c.first_turn is None else c.first_turn,
         "unsure": "yes" if c.unsure else "", "note": c.note}
        for c in item.coders
    ])
    label_form(session, task, advance=None)


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
    st.html(PAGE_STYLE)
    st.html(LABEL_KEYS, unsafe_allow_javascript=True)
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
        st.markdown(f"Signed in as **{session.name}** ({session.role_name})\n\n{SHORTCUTS_HELP}")
        navigation(session)
        st.button("Sign out", on_click=sign_out)
    workspace(store)


main()
