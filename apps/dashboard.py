"""accord dashboard: the study report, interactively (Streamlit).

Run through `accord dashboard STUDY`, which passes the study folder in the
ACCORD_STUDY environment variable (``ACCORD_STUDY=STUDY streamlit run apps/dashboard.py``). First the
live view while people label (``apps.live``: progress per annotator and per stratum, the
running human-human agreement, the adjudication queue, annotator quality with flags),
then the same content as `accord report`: banners (simulated annotators, unaccepted
scores), the gate verdict, every table (filterable) and the plots. Both are cached on the
modification times of the files they read, so a rerun shows new labels and results
without restarting the app.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from agreement import build_report
from samples import InputError


def study_folder() -> str | None:
    return os.environ.get("ACCORD_STUDY") or None


@st.cache_data(show_spinner="Building the report ...")
def cached_report(folder: str, stamp: tuple[tuple[str, float], ...]):
    """The report content, rebuilt only when a saved result file changes (``stamp``)."""
    return build_report(Path(folder))


def stamp_of(folder: str) -> tuple[tuple[str, float], ...]:
    """Modification times of the stage documents and of every input they record, the store's labels included
    (so staleness shows at once)."""
    from agreement import DOCUMENTS
    from apps.live import live_stamp
    from samples import StudyLayout

    layout = StudyLayout(Path(folder))
    paths = [model.path(layout) for model in DOCUMENTS]
    paths += [layout.key, layout.judge_labels, layout.units, layout.trajectories]
    return tuple((str(p), p.stat().st_mtime) for p in paths if p.is_file()) + live_stamp(folder)


@st.cache_data(show_spinner="Reading the labels ...")
def cached_live(folder: str, stamp: tuple[tuple[str, float], ...]):
    """The live view, recomputed only when a labels file, the store, the orders or the key changes."""
    from apps.live import live_view

    return live_view(Path(folder))


@st.cache_data(show_spinner="Looking at the anytime verdict ...")
def cached_anytime(folder: str, stamp: tuple[tuple[str, float], ...]):
    """The anytime verdict on the labels now (``apps.live.anytime_look``), recomputed when a label or judge file,
    the store or the policy changes."""
    from apps.live import anytime_look

    return anytime_look(Path(folder))


def show_anytime(folder: str) -> None:
    """Under an anytime policy: the verdict now, each judge's look of decision or the labels still expected, and
    each criterion's sequential method and interval."""
    from agreement import criterion_rows, state_lines
    from apps.live import live_stamp
    from samples import StudyLayout

    judges = StudyLayout(Path(folder)).judge_label_files()
    try:
        state = cached_anytime(folder, live_stamp(folder) + tuple((str(p), p.stat().st_mtime) for p in judges))
    except InputError as error:
        st.info(f"Anytime verdict: not available yet ({error})")
        return
    if state is None:
        return
    box = {"ACCEPT": st.success, "REJECT": st.error}.get(state.outcome, st.info)
    head, *rest = state_lines(state)
    box("  \n".join([head.replace("anytime verdict", "Anytime verdict", 1),
                      *[line.strip() for line in rest if not line.startswith("    ")]]))
    rows = [row for verdict in state.verdicts for row in criterion_rows(verdict)]
    if rows:  # a few rows, as text (a data grid draws on a canvas; these are read, not sorted)
        st.table([{"judge": r["judge"], "criterion": r["criterion"], "decision": r["decision"] + r["at"],
                   "sequential interval": r["interval"], "method": r["method"]} for r in rows])


def show_live(folder: str) -> None:
    from apps.live import live_stamp

    st.header("Labelling now")
    show_anytime(folder)
    try:
        view = cached_live(folder, live_stamp(folder))
    except InputError as error:
        st.info(str(error))
        return
    st.metric("Disagreements awaiting adjudication", view.queue, help=f"{view.adjudicated} already adjudicated")
    for note in view.notes:
        st.caption(note)
    for table in view.tables:
        st.subheader(table.title)
        if table.note:
            st.caption(table.note)
        st.dataframe([dict(zip(table.header, row)) for row in table.rows], width="stretch")


def show_cards(cards, per_row: int = 4) -> None:
    """The report's first screen: one card per judge, green for ACCEPT, red for REJECT."""
    for start in range(0, len(cards), per_row):
        for column, card in zip(st.columns(per_row), cards[start:start + per_row]):
            box = column.success if card.verdict == "ACCEPT" else column.error
            box(f"**{card.verdict} {card.judge}** ({card.criteria - card.failed} of {card.criteria} criteria pass)  \n"
                f"`{card.line}`  \n{card.humans}")


def main() -> None:
    st.set_page_config(page_title="accord dashboard", layout="wide")
    st.title("accord dashboard")
    folder = study_folder()
    if not folder:
        st.error("No study folder: run `accord dashboard STUDY` (or set ACCORD_STUDY).")
        return
    try:
        content = cached_report(folder, stamp_of(folder))
    except InputError as error:  # labelling still under way: the live view, then why there are no results yet
        show_live(folder)
        st.header("Results")
        st.error(str(error))
        return
    st.caption(f"Study: {content.study}")
    for banner in content.banners:
        st.warning(banner)
    if content.verdict:
        verdict = content.verdict
        show = st.success if verdict.verdict == "ACCEPT" else st.error
        show(f"Gate verdict: {verdict.verdict} (policy {verdict.policy.name}, sha256 {verdict.policy.sha256[:12]})")
        show_cards(content.cards)
    else:
        st.info("Gate verdict: not run")
    if content.headline is not None:
        st.image(content.headline.png, caption=content.headline.title)
    show_live(folder)
    st.header("Results")
    titles = [t.title for t in content.tables]
    chosen = st.multiselect("Tables", titles, default=titles)
    query = st.text_input("Filter rows containing", "")
    for table in content.tables:
        if table.title not in chosen:
            continue
        st.subheader(table.title)
        if table.note:
            st.caption(table.note)
        rows = [r for r in table.rows if not query or any(query.lower() in str(c).lower() for c in r)]
        st.dataframe([dict(zip(table.header, row)) for row in rows], width="stretch")
    st.header("Plots")
    for figure in content.figures:
        st.subheader(figure.title)
        st.image(figure.png)
    st.header("Fingerprints")
    st.dataframe([{"input": k, "sha256": v} for k, v in content.fingerprints.items()], width="stretch")


main()
