"""``Store``: one study's annotators, blinded tasks and orders, submissions and browser sessions on one engine."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from annotate.engines import Engine, open_engine
from annotate.store.access import (
    _authenticate,
    _check_access,
    _check_label,
    _insert_order,
    _label_row,
    _task_row,
    hash_token,
    now_iso,
)
from annotate.store.rows import (
    ANNOTATOR_ROLES,
    SUBMIT_BACKENDS,
    Annotator,
    AnnotatorRole,
    LoadReport,
    Revision,
    SubmitResult,
    TableFingerprint,
    _human_label,
    _is_sha256,
    _revision,
    _table_fingerprint,
)
from annotate.store.schema import MIGRATIONS, TABLES
from annotate.store.study import store_location
from annotate.tasks import check_name, check_orders
from samples import BlindTask, HumanLabel, InputError, StudyLayout, scheme_for


class Store:
    """One study's store on its engine; safe to share between threads (the app's sessions)."""

    def __init__(self, engine: Engine, *, layout: StudyLayout | None = None) -> None:
        self.engine = engine
        self.layout = layout
        """The study folder the store belongs to; None for a store opened on its own."""

    @classmethod
    def open(cls, location: str | Path, *, layout: StudyLayout | None = None) -> Store:
        """A SQLite file path, or a URL of a registered engine (``postgresql://...``)."""
        store = cls(open_engine(location), layout=layout)
        store._migrate()
        return store

    @classmethod
    def for_study(cls, study: str | Path | StudyLayout) -> Store:
        layout = StudyLayout.of(study)
        if not layout.root.is_dir():
            raise InputError(f"--study {str(layout.root)!r}: not a folder")
        return cls.open(store_location(layout), layout=layout)

    @classmethod
    def exists_for_study(cls, study: str | Path | StudyLayout) -> bool:
        """Whether the study has a store yet (a database store always exists once it is named)."""
        layout = StudyLayout.of(study)
        location = store_location(layout)
        return layout.store.is_file() if isinstance(location, Path) else True

    @property
    def location(self) -> str:
        return self.engine.location

    # -- connection and schema -------------------------------------------------

    def close(self) -> None:
        self.engine.close()

    def _read(self):
        return self.engine.read()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._read() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._read() as conn:
            return conn.execute(sql, params).fetchone()

    def _write(self, *, shared: bool = False):
        return self.engine.write(shared=shared)

    def _migrate(self) -> None:
        with self._write() as tx:  # one transaction: two servers starting at once migrate once
            tx.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            applied = {row[0] for row in tx.execute("SELECT name FROM migrations").fetchall()}
            for name, statements in MIGRATIONS:
                if name in applied:
                    continue
                for statement in statements:
                    tx.execute(self.engine.ddl(statement))
                tx.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, now_iso()))

    def applied_migrations(self) -> list[str]:
        with self._read() as conn:
            applied = {row[0] for row in conn.execute("SELECT name FROM migrations").fetchall()}
        return [name for name, _ in MIGRATIONS if name in applied] + sorted(applied - {n for n, _ in MIGRATIONS})

    def integrity_check(self) -> str:
        """``ok`` when the engine's own check passes and every label is its owner's latest revision
        (its revision count, last sequence number and values match the submissions history)."""
        engine = self.engine.integrity()
        if engine != "ok":
            return engine
        with self._read() as conn:
            broken = conn.execute(
                """SELECT l.task_id, l.annotator, l.role FROM labels AS l
                   LEFT JOIN (SELECT task_id, annotator, role, COUNT(*) AS n, MAX(seq) AS last
                              FROM submissions GROUP BY task_id, annotator, role) AS h
                     ON h.task_id = l.task_id AND h.annotator = l.annotator AND h.role = l.role
                   LEFT JOIN submissions AS s ON s.seq = l.last_seq
                   WHERE h.n IS NULL OR h.n <> l.revisions OR h.last <> l.last_seq OR s.label <> l.label
                   ORDER BY l.task_id, l.annotator, l.role"""
            ).fetchall()
            orphans = conn.execute(
                """SELECT COUNT(*) FROM (SELECT DISTINCT task_id, annotator, role FROM submissions) AS h
                   WHERE NOT EXISTS (SELECT 1 FROM labels AS l WHERE l.task_id = h.task_id
                                     AND l.annotator = h.annotator AND l.role = h.role)"""
            ).fetchone()[0]
        problems = [f"label ({row[0]}, {row[1]}, {row[2]}) does not match its history" for row in broken[:5]]
        if orphans:
            problems.append(f"{orphans} submission history(ies) without a current label")
        return "; ".join(problems) or "ok"

    def fingerprint(self) -> dict[str, TableFingerprint]:
        """Per table: its row count and the sha256 of its rows in key order (values as JSON), the same on
        every engine for the same content; what ``copy_store`` compares after a copy."""
        with self._read() as conn:
            return {table: _table_fingerprint(conn, table, key) for table, key in TABLES}

    def data_version(self) -> tuple[int, ...]:
        """Changes whenever a label, task, order or annotator is added or changed (the live view's refresh signal)."""
        with self._read() as conn:
            row = conn.execute(
                """SELECT (SELECT COALESCE(MAX(seq), 0) FROM submissions), (SELECT COUNT(*) FROM tasks),
                          (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM annotators),
                          (SELECT COUNT(*) FROM annotators WHERE revoked_at IS NOT NULL)"""
            ).fetchone()
        return tuple(int(value) for value in row)

    # -- annotators ------------------------------------------------------------

    def add_annotator(self, name: str, role: AnnotatorRole = "annotator") -> str:
        """Create an annotator and return their token; only its hash is stored, so show it once."""
        check_name(name)
        if role not in ANNOTATOR_ROLES:
            raise InputError(f"role {role!r} is not allowed; expected one of {list(ANNOTATOR_ROLES)}")
        token = secrets.token_urlsafe(24)
        with self._write() as tx:
            if tx.execute("SELECT 1 FROM annotators WHERE name = ?", (name,)).fetchone():
                raise InputError(f"annotator {name!r} already exists; use `accord annotators rotate {name}` for a new token")
            tx.execute(
                "INSERT INTO annotators (name, role, token_hash, created_at) VALUES (?, ?, ?, ?)",
                (name, role, hash_token(token), now_iso()),
            )
        return token

    def rotate_token(self, name: str) -> str:
        """Replace a lost token (the old one stops working); labels are kept."""
        token = secrets.token_urlsafe(24)
        with self._write() as tx:
            updated = tx.execute(
                "UPDATE annotators SET token_hash = ?, revoked_at = NULL WHERE name = ?", (hash_token(token), name)
            ).rowcount
            tx.execute("DELETE FROM browser_sessions WHERE annotator = ?", (name,))
        if not updated:
            raise InputError(f"unknown annotator {name!r}")
        return token

    def revoke(self, name: str) -> None:
        with self._write() as tx:
            updated = tx.execute(
                "UPDATE annotators SET token_hash = NULL, revoked_at = ? WHERE name = ?", (now_iso(), name)
            ).rowcount
            tx.execute("DELETE FROM browser_sessions WHERE annotator = ?", (name,))
        if not updated:
            raise InputError(f"unknown annotator {name!r}")

    def annotators(self) -> list[Annotator]:
        rows = self._all("SELECT name, role, created_at, revoked_at FROM annotators ORDER BY name")
        return [Annotator(**dict(row)) for row in rows]

    def authenticate(self, token: str) -> Annotator:
        with self._read() as conn:
            return _authenticate(conn, token)

    # -- tasks and orders ------------------------------------------------------

    def load_tasks(self, tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]], *,
                   late_seed: int | None = None, late_order: Callable[[str], Sequence[str]] | None = None,
                   schemes: Mapping[str, str] | None = None) -> LoadReport:
        """Add blinded tasks and per-annotator orders; loading the same set again changes nothing.

        A task id already present with another payload, or an annotator whose stored
        order differs, is refused: labels already given must keep meaning what they meant.
        With ``late_seed`` (the blinding seed), every annotator of the store who has no
        order yet gets ``annotator_order(tasks, name, late_seed)`` in the same transaction,
        or ``late_order(name)`` when given (the gold units placed in it: ``annotate.gold``).
        Each task is coded under ``samples.kinds.scheme_for(kind, schemes)`` (the study's
        ``[annotation] schemes``); a loaded task asked for under another scheme is refused.
        """
        from samples import annotator_order

        check_orders(tasks, orders)
        loaded_at = now_iso()
        with self._write() as tx:
            # One read of what is loaded and one batch of inserts: a database across a network answers
            # each statement in a round trip, so per-task statements would take minutes for a large sample.
            present = {row[0]: (row[1], row[2]) for row in tx.execute("SELECT task_id, payload, scheme FROM tasks").fetchall()}
            new_rows = []
            for task in tasks:
                payload = task.model_dump_json()
                scheme = scheme_for(task.kind, schemes)
                if task.task_id in present:
                    if present[task.task_id][0] != payload:
                        raise InputError(f"task {task.task_id!r}: already in the store with different content; a loaded task cannot change")
                    if present[task.task_id][1] != scheme:
                        raise InputError(f"task {task.task_id!r}: loaded under label scheme {present[task.task_id][1]!r}, now "
                                         f"asked under {scheme!r}; labels given must keep their meaning: code the new "
                                         "scheme in a new study folder")
                    continue
                new_rows.append((task.task_id, task.kind, scheme, payload, loaded_at))
            if new_rows:
                tx.executemany("INSERT INTO tasks (task_id, kind, scheme, payload, loaded_at) VALUES (?, ?, ?, ?, ?)", new_rows)
            created = len(new_rows)
            stored_orders: dict[str, list[str]] = {}
            for annotator, task_id in tx.execute("SELECT annotator, task_id FROM orders ORDER BY annotator, position").fetchall():
                stored_orders.setdefault(annotator, []).append(task_id)
            for annotator, order in orders.items():
                stored = stored_orders.get(annotator)
                if stored and stored != list(order):
                    raise InputError(f"orders[{annotator!r}]: differs from the order already in the store; an order cannot change once loaded")
                if not stored:
                    _insert_order(tx, annotator, order)
            late: list[str] = []
            if late_seed is not None:
                unordered = tx.execute(
                    """SELECT name FROM annotators WHERE role = 'annotator'
                       AND name NOT IN (SELECT DISTINCT annotator FROM orders) ORDER BY name"""
                ).fetchall()
                ids = [task.task_id for task in tasks]
                for (name,) in unordered:
                    _insert_order(tx, name, late_order(name) if late_order else annotator_order(ids, name, late_seed))
                    late.append(name)
        return LoadReport(n_tasks=len(tasks), created=created, already_present=len(tasks) - created,
                          annotators=tuple(sorted({*orders, *late})), late=tuple(late))

    def task(self, task_id: str) -> BlindTask:
        row = self._one("SELECT payload FROM tasks WHERE task_id = ?", (task_id,))
        if row is None:
            raise InputError(f"unknown task id {task_id!r}")
        return BlindTask.model_validate_json(row[0])

    def task_scheme(self, task_id: str) -> str | None:
        """The label scheme a task is coded under (None for a task not in the store)."""
        row = self._one("SELECT scheme FROM tasks WHERE task_id = ?", (task_id,))
        return None if row is None else str(row[0])

    def task_kind(self, task_id: str) -> str | None:
        """A task's unit kind without reading its payload (None for a task not in the store)."""
        row = self._one("SELECT kind FROM tasks WHERE task_id = ?", (task_id,))
        return None if row is None else str(row[0])

    def n_tasks(self) -> int:
        return int(self._one("SELECT COUNT(*) FROM tasks")[0])

    def order(self, annotator: str) -> list[str]:
        rows = self._all("SELECT task_id FROM orders WHERE annotator = ? ORDER BY position", (annotator,))
        return [row[0] for row in rows]

    def orders(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for row in self._all("SELECT annotator, task_id FROM orders ORDER BY annotator, position"):
            result.setdefault(row[0], []).append(row[1])
        return result

    # -- labels ----------------------------------------------------------------

    def submit(
        self,
        token: str,
        task_id: str,
        label: str,
        *,
        submission_id: str,
        first_turn: int | None = None,
        unsure: bool = False,
        note: str = "",
        seconds_spent: float | None = None,
        backend: str = "app",
        codebook_sha256: str | None = None,
    ) -> SubmitResult:
        """Record one label in one transaction; the same ``submission_id`` again is a no-op.

        Annotators label tasks in their own order (role ``independent``); an
        adjudicator labels tasks on which independent labels disagree (role
        ``adjudication``, kept apart). ``backend`` is ``app`` for people and
        ``simulated`` for simulated panels, which are never counted as human.
        ``codebook_sha256`` is the version of the codebook the person was shown
        (``annotate.codebook.codebook_sha256``); None when unknown. A repeated
        submission id keeps the version its first arrival recorded.
        """
        if not isinstance(submission_id, str) or not 8 <= len(submission_id) <= 128:
            raise InputError(f"submission_id {submission_id!r}: expected a string of 8-128 characters")
        if backend not in SUBMIT_BACKENDS:
            raise InputError(f"backend {backend!r} is not allowed; expected one of {list(SUBMIT_BACKENDS)}")
        if seconds_spent is not None and not seconds_spent >= 0:
            raise InputError(f"seconds_spent {seconds_spent!r}: expected a number >= 0 or None")
        if not isinstance(note, str):
            raise InputError(f"note {note!r}: expected a string")
        if codebook_sha256 is not None and not _is_sha256(codebook_sha256):
            raise InputError(f"codebook_sha256 {codebook_sha256!r}: expected 64 lowercase hex characters or None")
        with self._write(shared=True) as tx:
            who = _authenticate(tx, token)
            self.engine.lock(tx, who.name)  # one person's submits one at a time, whichever server takes them
            role = "adjudication" if who.role == "adjudicator" else "independent"
            values = (task_id, who.name, role, label, first_turn, int(bool(unsure)), note, backend)
            existing = tx.execute(
                "SELECT task_id, annotator, role, label, first_turn, unsure, note, backend FROM submissions WHERE submission_id = ?",
                (submission_id,),
            ).fetchone()
            if existing is not None:
                if tuple(existing) != values:
                    raise InputError(f"submission_id {submission_id!r} was already used for a different label")
                current = _label_row(tx, task_id, who.name, role)
                return SubmitResult(submission_id=submission_id, created=False, revision=current["revisions"], label=_human_label(current))
            task = _task_row(tx, task_id)
            _check_label(task, label, first_turn)
            _check_access(tx, who, role, task_id)
            now = now_iso()
            seq = tx.execute(
                """INSERT INTO submissions (submission_id, task_id, annotator, role, label, first_turn, unsure, note,
                   seconds_spent, backend, submitted_at, codebook_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   RETURNING seq""",
                (submission_id, *values[:7], seconds_spent, backend, now, codebook_sha256),
            ).fetchone()[0]
            tx.execute(
                """INSERT INTO labels (task_id, annotator, role, label, first_turn, unsure, note, created_at, updated_at,
                       seconds_spent, backend, revisions, last_seq, codebook_sha256)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
                   ON CONFLICT (task_id, annotator, role) DO UPDATE SET
                       label = excluded.label, first_turn = excluded.first_turn, unsure = excluded.unsure,
                       note = excluded.note, updated_at = excluded.updated_at, backend = excluded.backend,
                       codebook_sha256 = excluded.codebook_sha256,
                       seconds_spent = CASE WHEN excluded.seconds_spent IS NULL THEN labels.seconds_spent
                                            ELSE COALESCE(labels.seconds_spent, 0) + excluded.seconds_spent END,
                       revisions = labels.revisions + 1, last_seq = excluded.last_seq""",
                (*values[:7], now, now, seconds_spent, backend, seq, codebook_sha256),
            )
            current = _label_row(tx, task_id, who.name, role)
        return SubmitResult(submission_id=submission_id, created=True, revision=current["revisions"], label=_human_label(current))

    def submit_practice(self, token: str, task_id: str, label: str, *, submission_id: str, correct: bool,
                        first_turn: int | None = None, unsure: bool = False, note: str = "",
                        seconds_spent: float | None = None) -> tuple[bool, int]:
        """Record one answer to a practice unit (checked by the caller against the unit's scheme);
        the same ``submission_id`` again is a no-op. Returns (created, revision number)."""
        if not isinstance(submission_id, str) or not 8 <= len(submission_id) <= 128:
            raise InputError(f"submission_id {submission_id!r}: expected a string of 8-128 characters")
        with self._write(shared=True) as tx:
            who = _authenticate(tx, token)
            self.engine.lock(tx, who.name)
            created = tx.execute("SELECT 1 FROM practice_answers WHERE submission_id = ?", (submission_id,)).fetchone() is None
            if created:
                tx.execute(
                    """INSERT INTO practice_answers (submission_id, task_id, annotator, label, first_turn, unsure, note,
                       seconds_spent, correct, submitted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (submission_id, task_id, who.name, label, first_turn, int(bool(unsure)), note, seconds_spent,
                     int(bool(correct)), now_iso()),
                )
            revision = tx.execute("SELECT COUNT(*) FROM practice_answers WHERE annotator = ? AND task_id = ?",
                                  (who.name, task_id)).fetchone()[0]
        return created, int(revision)

    def practice_history(self, annotator: str, task_id: str) -> list[Revision]:
        """One person's answers to one practice unit, oldest first."""
        rows = self._all(
            """SELECT submission_id, task_id, annotator, 'practice' AS role, label, first_turn, unsure, note, seconds_spent,
                      'app' AS backend, submitted_at FROM practice_answers WHERE annotator = ? AND task_id = ? ORDER BY seq""",
            (annotator, task_id),
        )
        return [_revision(row, number) for number, row in enumerate(rows, start=1)]

    def practice_results(self, annotator: str) -> dict[str, bool]:
        """Per practice unit answered: whether the first answer was the expected one."""
        rows = self._all(
            "SELECT task_id, correct FROM practice_answers WHERE annotator = ? ORDER BY seq", (annotator,))
        results: dict[str, bool] = {}
        for task_id, correct in rows:
            results.setdefault(task_id, bool(correct))
        return results

    def history(self, annotator: str, task_id: str, *, role: str = "independent") -> list[Revision]:
        rows = self._all(
            """SELECT submission_id, task_id, annotator, role, label, first_turn, unsure, note, seconds_spent, backend,
                      submitted_at, codebook_sha256 FROM submissions WHERE annotator = ? AND task_id = ? AND role = ? ORDER BY seq""",
            (annotator, task_id, role),
        )
        return [_revision(row, number) for number, row in enumerate(rows, start=1)]

    def all_revisions(self) -> list[Revision]:
        rows = self._all(
            """SELECT submission_id, task_id, annotator, role, label, first_turn, unsure, note, seconds_spent, backend,
                      submitted_at, codebook_sha256 FROM submissions ORDER BY seq"""
        )
        numbers: dict[tuple[str, str, str], int] = {}
        revisions = []
        for row in rows:
            owner = (row["task_id"], row["annotator"], row["role"])
            numbers[owner] = numbers.get(owner, 0) + 1
            revisions.append(_revision(row, numbers[owner]))
        return revisions

    def label(self, annotator: str, task_id: str, *, role: str = "independent") -> HumanLabel | None:
        with self._read() as conn:
            row = _label_row(conn, task_id, annotator, role)
        return None if row is None else _human_label(row)

    def labels(self, *, annotator: str | None = None, role: str | None = None) -> list[HumanLabel]:
        """The labels table: the latest revision per (task, annotator, role), in a stable order."""
        where = {"annotator": annotator, "role": role}
        chosen = [column for column, value in where.items() if value is not None]
        clause = f" WHERE {' AND '.join(f'{column} = ?' for column in chosen)}" if chosen else ""
        rows = self._all(f"SELECT * FROM labels{clause} ORDER BY task_id, role, annotator", [where[c] for c in chosen])
        return [_human_label(row) for row in rows]

    def labelled_task_ids(self, annotator: str, *, role: str = "independent") -> set[str]:
        rows = self._all("SELECT task_id FROM labels WHERE annotator = ? AND role = ?", (annotator, role))
        return {row[0] for row in rows}

    def counts(self) -> dict[str, int]:
        """Independent labels per annotator (the status of the app backend)."""
        rows = self._all("SELECT annotator, COUNT(*) FROM labels WHERE role = 'independent' GROUP BY annotator ORDER BY annotator")
        return {row[0]: int(row[1]) for row in rows}

    def disagreements(self) -> list[str]:
        """Task ids whose latest independent labels are not all the same (the adjudication queue)."""
        rows = self._all(
            """SELECT l.task_id FROM labels AS l JOIN orders AS o ON o.annotator = l.annotator AND o.task_id = l.task_id
               WHERE l.role = 'independent' GROUP BY l.task_id HAVING COUNT(DISTINCT l.label) > 1
               ORDER BY MIN(o.position), l.task_id"""
        )
        return [row[0] for row in rows]

    # -- browser sessions (apps.browser_sessions) --------------------------------------

    def open_browser_session(self, token: str, *, lifetime_s: float) -> str:
        """A new random secret standing for ``token`` for ``lifetime_s`` seconds, usable on every app server of
        the store; only its hash is kept. Expired sessions are dropped on the way."""
        if not lifetime_s > 0:
            raise InputError(f"lifetime_s {lifetime_s!r}: expected a number of seconds > 0")
        secret = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        with self._write(shared=True) as tx:
            who = _authenticate(tx, token)
            tx.execute("DELETE FROM browser_sessions WHERE annotator = ? AND expires_at <= ?", (who.name, now_iso()))
            tx.execute(
                """INSERT INTO browser_sessions (secret_hash, annotator, token_hash, created_at, expires_at)
                   SELECT ?, name, token_hash, ?, ? FROM annotators WHERE name = ?""",
                (hash_token(secret), now.isoformat(timespec="microseconds"),
                 (now + timedelta(seconds=lifetime_s)).isoformat(timespec="microseconds"), who.name),
            )
        return secret

    def close_browser_session(self, secret: str) -> None:
        with self._write(shared=True) as tx:
            tx.execute("DELETE FROM browser_sessions WHERE secret_hash = ?", (hash_token(secret),))

    def browser_session_valid(self, secret: str) -> bool:
        """Whether a secret still signs its browser in (known, unexpired, its token neither rotated nor revoked)."""
        try:
            self.authenticate(secret)
        except InputError:
            return False
        return True
