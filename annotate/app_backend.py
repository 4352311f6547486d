"""What the coding app may show a signed-in person, and the "app" annotation backend.

The Streamlit page talks only to a session object bound to one token: an
annotator session reaches their own order, their own labels and history, and
the blinded task payloads in their order; an adjudicator session reaches the
disagreement queue with the coders' labels (coders numbered, not named). Neither
exposes other annotators' work to an annotator, the sealed key, or any identity
field (the store never holds one: tasks arrive through ``load_tasks``, which
refuses unblinded records).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from annotate.adjudicate import Disagreement, adjudication_queue
from annotate.base import BackendStatus, PushReport, register_backend
from annotate.export import check_not_fewer, copy_command, export_labels
from annotate.gold import (
    GoldKey,
    GoldUnit,
    load_gold,
    load_practice,
    split_labels,
    with_gold,
)
from annotate.store import AppSettings, Revision, Store, SubmitResult, blinding_seed
from annotate.tasks import load_orders, load_tasks
from samples import (
    BlindTask,
    HumanLabel,
    InputError,
    LabelRows,
    StudyLayout,
    register_label_source,
    sha256_hex,
    study_schemes,
)


@dataclass(frozen=True, kw_only=True)
class Progress:
    done: int
    total: int


def submission_id_for(*, annotator: str, task_id: str, base_revision: int, label: str, first_turn: int | None, unsure: bool, note: str) -> str:
    """The same form content sent again from the same page state is the same submission.

    ``base_revision`` is the revision the page showed when the form was drawn, so a
    double click or a retried request repeats the id (a no-op), while a deliberate
    later edit, even back to an earlier value, is a new revision.
    """
    return "s_" + sha256_hex([annotator, task_id, base_revision, label, first_turn, bool(unsure), note])[:32]


class _Session:
    role_name = ""
    label_role = ""

    def __init__(self, store: Store, token: str) -> None:
        self._store = store
        self._token = token
        who = store.authenticate(token)
        if who.role != self.role_name:
            raise InputError(f"token belongs to an {who.role}, not an {self.role_name}")
        self.name = who.name

    def current(self, task_id: str) -> HumanLabel | None:
        return self._store.label(self.name, task_id, role=self.label_role)

    def history(self, task_id: str) -> list[Revision]:
        return self._store.history(self.name, task_id, role=self.label_role)

    def submit(self, task_id: str, label: str, *, base_revision: int, first_turn: int | None = None, unsure: bool = False, note: str = "", seconds_spent: float | None = None) -> SubmitResult:
        """Submit from a page that showed revision ``base_revision`` of this label (see ``submission_id_for``)."""
        submission_id = submission_id_for(
            annotator=self.name, task_id=task_id, base_revision=base_revision, label=label,
            first_turn=first_turn, unsure=unsure, note=note,
        )
        return self._store.submit(
            self._token, task_id, label, submission_id=submission_id, first_turn=first_turn, unsure=unsure,
            note=note, seconds_spent=seconds_spent, codebook_sha256=self._codebook_sha256(task_id),
        )

    def scheme(self, task_id: str) -> str:
        """The label scheme (and so the codebook) the task is coded under, as the store loaded it."""
        scheme = self._store.task_scheme(task_id)
        if scheme is None:
            raise InputError(f"unknown task id {task_id!r}")
        return scheme

    def _codebook_sha256(self, task_id: str) -> str | None:
        """The version of the codebook this process shows for the task's scheme (the page draws
        ``codebook_html`` of the same cached text); None for a task the store does not hold
        (the store then refuses the submit with its own message)."""
        from annotate.codebook import codebook_sha256

        scheme = self._store.task_scheme(task_id)
        return None if scheme is None else codebook_sha256(scheme)


class AnnotatorSession(_Session):
    """An annotator's view: own order, own labels, own history."""

    role_name = "annotator"
    label_role = "independent"

    def order(self) -> list[str]:
        return self._store.order(self.name)

    def progress(self) -> Progress:
        order = self.order()
        done = self._store.labelled_task_ids(self.name) & set(order)
        return Progress(done=len(done), total=len(order))

    def labelled(self) -> set[str]:
        return self._store.labelled_task_ids(self.name)

    def resume_position(self) -> int:
        """The first unlabelled task in the order (the last one when everything is labelled)."""
        order = self.order()
        done = self.labelled()
        return next((i for i, task_id in enumerate(order) if task_id not in done), max(len(order) - 1, 0))

    def task(self, task_id: str) -> BlindTask:
        if task_id not in self.order():
            raise InputError(f"task_id {task_id!r}: not in your order")
        return self._store.task(task_id)

    def practice(self) -> PracticeSession | None:
        """The study's qualification round for this person; None when the study has none."""
        layout = self._store.layout
        practice = load_practice(layout) if layout is not None else None
        return None if practice is None else PracticeSession(self._store, self._token, practice.units)


@dataclass(frozen=True, kw_only=True)
class PracticeResult:
    """A practice answer as recorded, and what to tell the person: (success|error, message)."""

    revision: int
    correct: bool
    feedback: tuple[str, str]


class PracticeSession:
    """One annotator's qualification round: practice units with known answers, before real units.

    Answers go to the store's own practice table (``Store.submit_practice``), never to the
    labels, so nothing exported, counted or validated includes them. After each submit the
    person is told the expected answer and the codebook's reason.
    """

    label_role = "independent"

    def __init__(self, store: Store, token: str, units: Sequence[GoldUnit]) -> None:
        self._store = store
        self._token = token
        self.name = store.authenticate(token).name
        self._units = {unit.task.task_id: unit for unit in units}

    def order(self) -> list[str]:
        return list(self._units)

    def task(self, task_id: str) -> BlindTask:
        return self._unit(task_id).task

    def scheme(self, task_id: str) -> str:
        """The scheme the study codes this practice unit's kind under (``[annotation] schemes``)."""
        from samples import scheme_for, study_schemes

        layout = self._store.layout
        return scheme_for(self._unit(task_id).task.kind, study_schemes(layout) if layout is not None else None)

    def _unit(self, task_id: str) -> GoldUnit:
        if task_id not in self._units:
            raise InputError(f"task_id {task_id!r}: not a practice unit")
        return self._units[task_id]

    def results(self) -> dict[str, bool]:
        """Practice units answered, and whether the first answer was the expected one."""
        return {t: ok for t, ok in self._store.practice_results(self.name).items() if t in self._units}

    def pending(self) -> list[str]:
        done = self.results()
        return [task_id for task_id in self._units if task_id not in done]

    def history(self, task_id: str) -> list[Revision]:
        return self._store.practice_history(self.name, self._unit(task_id).task.task_id)

    def current(self, task_id: str) -> HumanLabel | None:
        history = self.history(task_id)
        if not history:
            return None
        last = history[-1]
        return HumanLabel(task_id=task_id, annotator=self.name, label=last.label, first_turn=last.first_turn,
                          unsure=last.unsure, note=last.note, created_at=history[0].submitted_at,
                          updated_at=last.submitted_at, seconds_spent=last.seconds_spent, backend="app")

    def submit(self, task_id: str, label: str, *, base_revision: int, first_turn: int | None = None, unsure: bool = False,
               note: str = "", seconds_spent: float | None = None) -> PracticeResult:
        from samples import first_turn_problem, get_scheme

        unit = self._unit(task_id)
        scheme = self.scheme(task_id)
        get_scheme(scheme).check(label, where="practice unit")
        problem = first_turn_problem(unit.task.kind, label, first_turn, len(unit.task.turns or []), scheme=scheme)
        if problem:
            raise InputError(problem)
        correct = label == unit.label and (unit.first_turn is None or first_turn == unit.first_turn)
        submission_id = "p" + submission_id_for(annotator=self.name, task_id=task_id, base_revision=base_revision,
                                                label=label, first_turn=first_turn, unsure=unsure, note=note)
        _, revision = self._store.submit_practice(
            self._token, task_id, label, submission_id=submission_id, correct=correct, first_turn=first_turn,
            unsure=unsure, note=note, seconds_spent=seconds_spent)
        expected = f"'{unit.label}'" + ("" if unit.first_turn is None else f" with first turn {unit.first_turn}")
        verdict = "Right" if correct else "Not the expected answer"
        why = f" Why: {unit.reason}" if unit.reason else ""
        text = (f"{verdict}: you answered '{label}'; the expected answer is {expected}.{why} "
                "(Practice: this answer is not a label.)")
        return PracticeResult(revision=revision, correct=correct, feedback=("success" if correct else "error", text))


class AdjudicatorSession(_Session):
    """The adjudicator's view: units where independent labels disagree, coders numbered."""

    role_name = "adjudicator"
    label_role = "adjudication"

    def queue(self) -> list[Disagreement]:
        """Disagreements on sampled units; a gold unit has a known answer, so it is never adjudicated."""
        gold = study_gold_ids(self._store)
        return [item for item in adjudication_queue(self._store) if item.task_id not in gold]

    def task(self, task_id: str) -> BlindTask:
        if task_id not in {item.task_id for item in self.queue()} and self.current(task_id) is None:
            raise InputError(f"task_id {task_id!r}: not in the adjudication queue")
        return self._store.task(task_id)


def study_gold_ids(store: Store) -> frozenset[str]:
    """Task ids of the gold units of the study this store belongs to."""
    layout = store.layout
    gold = load_gold(layout) if layout is not None else None
    return frozenset(gold.task_ids()) if gold is not None else frozenset()


def sign_in(store: Store, token: str) -> AnnotatorSession | AdjudicatorSession:
    """The session a token opens: an annotator's or the adjudicator's."""
    role = store.authenticate(token).role
    return AnnotatorSession(store, token) if role == "annotator" else AdjudicatorSession(store, token)



class AppBackend:
    """The embedded default backend: the coding app's store of one study (SQLite, or PostgreSQL: ``store_location``)."""

    name = "app"

    def __init__(self, *, study: str | Path | None = None, store_path: str | Path | None = None) -> None:
        if (study is None) == (store_path is None):
            raise InputError("AppBackend: give exactly one of study= (a study folder) or store_path= (a store file)")
        self.store = Store.for_study(study) if study is not None else Store.open(store_path)
        self.layout = StudyLayout.of(study) if study is not None else None
        self.labels_path = self.layout.app_labels if self.layout is not None else None
        self._late_seed = blinding_seed(self.layout) if self.layout is not None else None
        self._schemes = study_schemes(self.layout) if self.layout is not None else {}

    allow_fewer_labels: bool = False
    """``accord run --store-moved``: the user moved the store on purpose; its labels replace the study's file."""

    def _check_store_moved(self) -> None:
        """Before loading tasks into a store: refuse one holding fewer labels than the study's labels file or
        its own SQLite file (the store's location changed; ``accord store copy`` needs an empty target)."""
        if self.layout is None or self.allow_fewer_labels:
            return
        held = len(self.store.labels())
        check_not_fewer(self.layout.app_labels, held, source=self.store.location, study=self.layout.root, allowed=False)
        own = self.layout.store
        if own.is_file() and Path(self.store.location) != own.resolve() and Path(self.store.location) != own:
            old = Store.open(own, layout=self.layout)
            try:
                before = len(old.labels())
            finally:
                old.close()
            if before > held:
                raise InputError(f"{own} holds {before} labels but the study's store is now {self.store.location} "
                                 f"({held}): move them ({copy_command(self.layout.root, self.store.location)}), or "
                                 f"pass --store-moved to start from the new store")

    def _gold(self, *, current: bool = False) -> GoldKey | None:
        return load_gold(self.layout, current=current) if self.layout is not None else None

    def push(self, tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]], *,
             late_seed: int | None = None) -> PushReport:
        """Load the tasks; annotators added after blinding get their seeded order (the study's blinding seed).
        A study's gold units (``annotate.gold``) are loaded with them, placed in every order."""
        self._check_store_moved()
        seed = self._late_seed if late_seed is None else late_seed
        placed = with_gold(self._gold(current=True), tasks, orders, late_seed=seed)
        report = self.store.load_tasks(placed.tasks, placed.orders, late_seed=seed, late_order=placed.late_order,
                                       schemes=self._schemes)
        return PushReport(backend=self.name, n_tasks=report.n_tasks, annotators=report.annotators,
                          created=report.created, already_present=report.already_present)

    def push_files(self, blind_dir: str | Path) -> PushReport:
        """Load ``tasks.jsonl`` and ``orders.json`` from a blind folder (refusing unblinded records);
        annotators added after blinding get their seeded order (``Store.load_tasks``)."""
        from samples import check_generation

        layout = StudyLayout(Path(blind_dir).parent)  # a blind folder is its study's blind/
        check_generation(layout, "blind")  # the tasks and orders of one blind run, never a mix
        tasks = load_tasks(layout.tasks)
        return self.push(tasks, load_orders(layout.orders, tasks), late_seed=blinding_seed(layout))

    def pull(self) -> list[HumanLabel]:
        """Every label of the sampled units in the store, saved as the study's coding-app labels file
        when there is a study; labels of gold units go to their own sealed file, never to this table."""
        labels, gold = split_labels(self.store.labels(), self._gold())
        if self.labels_path is not None:
            check_not_fewer(self.labels_path, len(labels), source=self.store.location, study=self.layout.root,
                            allowed=self.allow_fewer_labels)
            export_labels(labels, self.labels_path, format="jsonl")
            if gold:
                export_labels(gold, self.layout.gold_labels, format="jsonl")
        return labels

    def close(self) -> None:
        self.store.close()

    def status(self) -> BackendStatus:
        orders = self.store.orders()
        labelled = {name: len(set(order) & self.store.labelled_task_ids(name)) for name, order in orders.items()}
        return BackendStatus(
            backend=self.name, n_tasks=self.store.n_tasks(), labelled=labelled,
            assigned={name: len(order) for name, order in orders.items()},
            details={"disagreements": len(self.store.disagreements())},
        )

    def close_remaining(self) -> dict[str, int]:
        """Nothing to change in the store: the coding app reads the study's saved anytime verdict and shows annotators
        that the study is complete instead of a task (``apps.coding_app.labelling_closed``)."""
        return {}

    def panel_store(self) -> Store:
        return self.store

    @classmethod
    def labels_digest(cls, layout: StudyLayout) -> str | None:
        """Labels submitted since the last pull live only in the store: its digest."""
        return store_labels_digest(layout)

    @classmethod
    def reports_status(cls, layout: StudyLayout) -> bool:
        return Store.exists_for_study(layout)  # opening a study's store creates it

    @classmethod
    def instructions(cls, layout: StudyLayout, missing: Mapping[str, int]) -> list[str]:
        root = layout.root
        return ["  1. give each annotator a token (once):  " + "; ".join(
                    f"accord annotators add {name} --study {root}" for name in sorted(missing)),
                f"  2. start the coding app:                 accord app --study {root}"]


register_backend("app", AppBackend, settings=AppSettings)


def store_labels_digest(layout: StudyLayout) -> str | None:
    """sha256 of the coding-app store's current labels (read only; None before the store exists)."""
    if not Store.exists_for_study(layout):
        return None
    store = Store.for_study(layout)
    try:
        return sha256_hex([row.model_dump(mode="json") for row in store.labels()])
    finally:
        store.close()


class StoreLabelSource:
    """The coding app's store as a human labels source: every command reads its labels as they are now.

    Rows are cited as ``labels/store.sqlite:N`` (a PostgreSQL store: its redacted URL), N being the row's
    line in the store's export; the export (``labels/human.jsonl``) is then an older copy, left unread.
    A store without labels of sampled units is no source, so a hand-made ``labels/human.jsonl`` still counts.
    """

    name = "app"

    def read(self, layout: StudyLayout) -> LabelRows | None:
        if not Store.exists_for_study(layout):
            return None
        store = Store.for_study(layout)
        try:
            labels, _ = split_labels(store.labels(), load_gold(layout))  # gold labels stay sealed
            name = layout.relative(layout.store) if store.engine.name == "sqlite" else store.location
        finally:
            store.close()
        if not labels:
            return None
        labels.sort(key=lambda row: (row.task_id, row.role, row.annotator))  # the export's order
        rows = [{**row.model_dump(mode="json"), "source_line": n} for n, row in enumerate(labels, start=1)]
        return LabelRows(name=name, rows=rows, digest=sha256_hex([row.model_dump(mode="json") for row in labels]),
                         replaces=(layout.app_labels,))


register_label_source(StoreLabelSource())
