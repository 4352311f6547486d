"""accord coding app: blind annotation of Identify / Escalate units in the browser.

Start it with ``accord app --study DIR`` (which sets ``ACCORD_STUDY``). People
sign in with their personal token; the page only ever talks to the session
object that token opens (annotate.app_backend), so an annotator sees their own
order and labels and nothing else. A reload keeps the tab signed in
(apps/browser_sessions.py). Messages name what the person sees (the task's
number, a turn), never the store's ids.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import streamlit as st

from annotate import (
    AdjudicatorSession,
    AnnotatorSession,
    PracticeResult,
    PracticeSession,
    Store,
    StoreUnavailable,
    sign_in,
)
from apps.browser_sessions import COOKIE, BrowserSessions, keep_cookie
from apps.workspace import (
    FormValues,
    first_turn_choices,
    form_identity,
    sent_values,
    table_html,
    workspace,
)
from samples import BlindTask, InputError, first_turn_problem, get_scheme

SHORTCUTS_HELP = (
    "Keys: **1**, **2**, ... choose a label · **S** submit · **N** next · **P** previous · "
    "**F** the turn you are labelling · **/** find in the unit (**Enter** next match, **Esc** back to the unit)"
)
# Streamlit animates fades, hovers and its running indicator; on a loaded machine those
# frames took about a quarter of the browser's CPU per submit (bench_annotate, 5 sessions).
# Without transitions a rerun's stale elements would dim at once and flicker back (Streamlit
# delays the dimming so quick reruns never show it), so they keep their opacity.
PAGE_STYLE = """<style>
*, *::before, *::after { transition: none !important; animation: none !important; }
[data-stale="true"] { opacity: 1 !important; }
</style>"""


@st.cache_resource
def open_store(study: str) -> Store:
    return Store.for_study(study)


def browser_sessions() -> BrowserSessions:
    """The study's sign-ins kept over a reload, in its store (shared by every app server of it)."""
    return BrowserSessions(open_store(os.environ["ACCORD_STUDY"]))


def flash(kind: str, message: str) -> None:
    st.session_state.setdefault("flash", []).append((kind, message))


def pop_flashes() -> tuple[str, list[str]] | None:
    """The messages of the last click as (kind, messages), an error if any is one; None if none."""
    messages = st.session_state.pop("flash", [])
    if not messages:
        return None
    return ("error" if any(kind == "error" for kind, _ in messages) else "success", [message for _, message in messages])


def show_flashes() -> None:
    """On pages without the workspace (sign in, nothing to label): the messages as one alert."""
    flashes = pop_flashes()
    if flashes is not None:
        (st.error if flashes[0] == "error" else st.success)("\n\n".join(flashes[1]))


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
        remember(token.strip())
        st.rerun()


def remember(token: str) -> None:
    """Sign this tab in with ``token``, and its browser for the next reload."""
    st.session_state["token"] = token
    st.session_state["browser_session"] = browser_sessions().open(token)


def sign_out() -> None:
    browser_sessions().close(st.session_state.get("browser_session"))
    for key in list(st.session_state):
        del st.session_state[key]


def navigated() -> None:
    """Count a navigation click, so the workspace gives the keyboard focus back to the unit (and leave the
    "all done" screen for the item chosen)."""
    st.session_state["navigation"] = st.session_state.get("navigation", 0) + 1
    st.session_state.pop("finished", None)


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
        navigated()
        key, _, flags = worklist(session)
        target = st.session_state.get(key, 0) + step
        if 0 <= target < len(flags):
            st.session_state[key] = target
        else:
            flash("error", f"This is the {'first' if step < 0 else 'last'} {what}.")

    def go_to_first_open() -> None:
        navigated()
        key, _, flags = worklist(session)
        target = first_open(flags)
        if target is None:
            flash("success", f"Every {what} is done.")
        else:
            st.session_state[key] = target

    def jump() -> None:
        navigated()
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


def label_workspace(
    session: AnnotatorSession | AdjudicatorSession | PracticeSession, task: BlindTask, *, heading: str, detail: str, fraction: float,
    context_html: str = "", advance: tuple[str, int] | None,
) -> None:
    """The workspace (apps/workspace.py: the last click's message, progress, the codebook, the
    unit, ``context_html``, and the form: label by keys 1..k, first turn for Identify, unsure,
    note, submit by key S), then the label's history; ``advance`` is (position state key, the
    position to show after a first label)."""
    current = session.current(task.task_id)
    history = session.history(task.task_id)
    base_revision = len(history)
    role = session.label_role
    identity = form_identity(role, task.task_id, base_revision)
    state = st.session_state
    state.setdefault(f"t0:{identity}", time.monotonic())
    scheme = session.scheme(task.task_id)
    labels = get_scheme(scheme).labels
    turns = first_turn_choices(task)
    stored = FormValues(
        label=current.label if current and current.label in labels else None,
        first_turn=current.first_turn if current else None,
        unsure=current.unsure if current else False,
        note=current.note if current else "",
    )
    # A refused submit's values are drawn again on its own form; drawing any other drops them.
    draft_identity, draft = state.get("draft", (None, None))
    if draft_identity != identity:
        state.pop("draft", None)
    values = draft if draft_identity == identity else stored

    def submit() -> None:
        try:
            sent = sent_values(role, identity, labels, turns)
        except InputError as error:
            flash("error", str(error))
            return
        if sent is None:
            return  # drawn for a form no longer shown (apps/workspace.py)
        state["draft"] = (identity, sent)
        if sent.label is None:
            flash("error", "Choose a label first (click it or press its number).")
            return
        positive = get_scheme(scheme).positive
        sent = dataclasses.replace(sent, first_turn=sent.first_turn if sent.label == positive else None)
        problem = first_turn_problem(task.kind, sent.label, sent.first_turn, len(task.turns or []), scheme=scheme)
        if problem:
            flash("error", problem)
            return
        if current is not None and sent == stored:
            flash("success", f"Already saved as '{sent.label}'; nothing changed.")
            return
        try:
            result = session.submit(
                task.task_id, sent.label, base_revision=base_revision,
                first_turn=sent.first_turn, unsure=sent.unsure, note=sent.note,
                seconds_spent=round(time.monotonic() - state[f"t0:{identity}"], 3),
            )
        except InputError as error:
            flash("error", f"Not saved: {plain(str(error), task.task_id)}")
            return
        del state["draft"]
        if isinstance(result, PracticeResult):
            flash(*result.feedback)  # the expected answer and the codebook's reason
        else:
            flash("success", f"Saved '{sent.label}' (revision {result.revision}).")
        if advance is not None and current is None:  # a first label moves on; an edit stays
            state_key, target = advance
            state[state_key] = target  # a position, not a step: a repeated submit cannot skip an item
            if first_open(worklist(session)[2]) is None:
                state["finished"] = True  # that was the last open item: the "all done" screen

    workspace(
        role=role, flash=pop_flashes(), heading=heading, detail=detail, fraction=fraction, scheme=scheme,
        task=task, context_html=context_html, identity=identity, labels=labels, turns=turns,
        values=values, navigation=state.get("navigation", 0), on_submit=submit,
    )
    if history:
        with st.expander(f"History of this label ({len(history)} revision(s); the latest counts)"):
            for revision in reversed(history):
                turn = "" if revision.first_turn is None else f", first turn {revision.first_turn}"
                flags = ", unsure" if revision.unsure else ""
                note_text = f" — {revision.note}" if revision.note else ""
                st.markdown(f"{revision.number}. `{revision.submitted_at[:19]}` **{revision.label}**{turn}{flags}{note_text}")


def practice_page(practice: PracticeSession) -> None:
    """The qualification round, before any real unit: each practice unit in turn, the expected
    answer and its reason after each submit; "Start the real units" once all are answered."""
    state = st.session_state
    order = practice.order()
    pending = practice.pending()
    state.setdefault("practice_position", order.index(pending[0]) if pending else 0)
    position = min(state["practice_position"], len(order) - 1)
    answered = len(order) - len(pending)
    label_workspace(
        practice, practice.task(order[position]), heading=f"Practice {position + 1} of {len(order)}",
        detail=f"{answered} of {len(order)} practice units answered (practice answers are not labels)",
        fraction=answered / len(order), advance=None,
    )
    if order[position] not in pending:
        if position + 1 < len(order):
            st.button("Next practice unit ▶", key="practice-next", on_click=lambda: state.update(practice_position=position + 1))
        elif not pending:
            st.button("Start the real units ▶", key="practice-over", type="primary",
                      on_click=lambda: state.update(practice_over=True))


def finished_page(what: str, total: int, done: str) -> None:
    """After the last open item: everything is saved, and the way back to any item."""
    show_flashes()
    st.success(f"All {total} {what}s are {done}. Thank you: every label is saved, nothing else is needed.")
    st.button(f"Review my {what}s", key="review", on_click=navigated)


@st.cache_data(show_spinner=False)
def _decided(study: str, stamp: float | None) -> bool:
    from agreement import study_decided

    return stamp is not None and study_decided(study) is not None


def labelling_closed() -> bool:
    """Whether the study's saved anytime verdict is decided for every judge (``agreement.monitor.study_decided``);
    read again only when the verdict file changes."""
    from samples import StudyLayout

    study = os.environ["ACCORD_STUDY"]
    verdict = StudyLayout.of(study).verdict
    return _decided(study, verdict.stat().st_mtime if verdict.is_file() else None)


def annotator_page(session: AnnotatorSession) -> None:
    if labelling_closed():  # the verdict stays sealed: annotators learn only that their work is done
        from agreement import COMPLETE_MESSAGE

        show_flashes()
        st.success(COMPLETE_MESSAGE)
        return
    practice = None if st.session_state.get("practice_over") else session.practice()
    if practice is not None and (practice.pending() or "practice_position" in st.session_state):
        practice_page(practice)
        return
    order = session.order()
    if not order:
        show_flashes()
        st.info("No tasks are assigned to you yet.")
        return
    if st.session_state.get("finished"):
        finished_page("task", len(order), "labelled")
        return
    st.session_state.setdefault("position", session.resume_position())
    position = min(st.session_state["position"], len(order) - 1)
    progress = session.progress()
    label_workspace(
        session, session.task(order[position]), heading=f"Task {position + 1} of {len(order)}",
        detail=f"{progress.done} of {progress.total} labelled", fraction=progress.done / progress.total,
        advance=("position", min(position + 1, len(order) - 1)),
    )


def adjudicator_page(session: AdjudicatorSession) -> None:
    queue = session.queue()
    if not queue:
        show_flashes()
        st.info("No disagreements to adjudicate.")
        return
    if st.session_state.get("finished"):
        finished_page("disagreement", len(queue), "adjudicated")
        return
    done = [item.adjudicated is not None for item in queue]
    st.session_state.setdefault("adj_position", first_open(done) or 0)
    position = min(st.session_state["adj_position"], len(queue) - 1)
    # After a first adjudication: the next open disagreement (after this one, else the first open one).
    open_ = [i for i, flag in enumerate(done) if not flag and i != position]
    following = next((i for i in open_ if i > position), open_[0] if open_ else position)
    item = queue[position]
    coders = table_html("Independent labels (coders numbered per unit, in the order they labelled)", [
        {"coder": f"coder {c.coder}", "label": c.label, "first turn": "" if c.first_turn is None else c.first_turn,
         "unsure": "yes" if c.unsure else "", "note": c.note}
        for c in item.coders
    ])
    label_workspace(
        session, session.task(item.task_id), heading=f"Disagreement {position + 1} of {len(queue)}",
        detail=f"{sum(done)} of {len(queue)} disagreements adjudicated", fraction=sum(done) / len(queue),
        context_html=coders, advance=("adj_position", following),
    )


def plain(message: str, task_id: str) -> str:
    """A store's refusal in the annotator's words: it is about the task they are on, so the
    store's "task_id 't_...': " prefix goes, and any other mention of the id reads "this task"."""
    for prefix in (f"task_id {task_id!r}: ", f"task {task_id!r}: "):
        message = message.replace(prefix, "")
    return message.replace(repr(task_id), "this task")


def signed_in(store: Store) -> AnnotatorSession | AdjudicatorSession | None:
    """The session of this browser tab's token, checked against the store on every run (a
    revoked token signs the tab out at its next click); None after signing the tab out. A tab
    that is not signed in yet takes the sign-in its browser kept over a reload."""
    token = st.session_state.get("token")
    if token is None:
        secret = st.context.cookies.get(COOKIE)
        token = browser_sessions().credential(secret)
        if token is None:
            return None
        st.session_state["token"], st.session_state["browser_session"] = token, secret
    try:
        return sign_in(store, token)
    except StoreUnavailable:
        raise  # the database is down, not the token: the tab stays signed in (database_unavailable)
    except InputError as error:
        sign_out()
        flash("error", f"Signed out: {error}")
        return None


# A fragment: a submit reruns only this function, so the server skips the page set-up and
# the sidebar and the browser redraws only this part.
@st.fragment
def work(store: Store) -> None:
    session = signed_in(store)
    if session is None:
        st.rerun()
    if isinstance(session, AnnotatorSession):
        annotator_page(session)
    else:
        adjudicator_page(session)


def main() -> None:
    st.set_page_config(page_title="accord coding app", layout="wide")
    st.html(PAGE_STYLE)
    study = os.environ.get("ACCORD_STUDY")
    if not study or not Path(study).is_dir():
        st.error("No study folder: start the app with `accord app --study DIR`.")
        return
    try:
        store = open_store(study)
        page(store)
    except StoreUnavailable:
        database_unavailable()
    except InputError as error:
        st.error(str(error))


def page(store: Store) -> None:
    session = signed_in(store)
    keep_cookie(st.session_state.get("browser_session"))
    if session is None:
        show_flashes()
        sign_in_page(store)
        return
    with st.sidebar:
        st.markdown(f"Signed in as **{session.name}** ({session.role_name})\n\n{SHORTCUTS_HELP}")
        navigation(session)
        st.button("Sign out", on_click=sign_out)
    work(store)


DATABASE_RETRY_S = 5


def database_unavailable() -> None:
    """While the store's database is down: a plain page that tries again, never a traceback. Labels
    already saved are in the database; a submit it did not acknowledge said "Not saved" and kept its form.
    The browser asks again every few seconds (a timed fragment); the server holds no thread waiting."""
    st.warning(f"The label database is not answering right now. Labels already saved are safe. This page tries "
               f"again every {DATABASE_RETRY_S} seconds; you can also reload it.")
    st.session_state["database_down_at"] = time.monotonic()
    retry_database()


@st.fragment(run_every=DATABASE_RETRY_S)
def retry_database() -> None:
    if time.monotonic() - st.session_state.get("database_down_at", 0.0) < DATABASE_RETRY_S / 2:
        return  # drawn with the page just now: the next tick asks
    try:
        open_store(os.environ["ACCORD_STUDY"]).n_tasks()
    except InputError:
        return
    st.rerun(scope="app")  # back: the whole page again


main()
