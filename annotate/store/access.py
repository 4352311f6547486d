"""The checks inside the store's transactions: who a token is, which tasks they may label, whether a label
fits the task's scheme; and the rows those checks read."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from annotate.engines import Connection
from annotate.store.rows import Annotator
from samples import InputError, first_turn_offered, first_turn_problem, get_scheme


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def hash_token(token: str) -> str:
    """Tokens are 192-bit random strings, so a plain sha256 cannot be brute-forced; no slow KDF needed."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _insert_order(conn: Connection, annotator: str, order: Sequence[str]) -> None:
    conn.executemany("INSERT INTO orders (annotator, position, task_id) VALUES (?, ?, ?)",
                     [(annotator, position, task_id) for position, task_id in enumerate(order)])


def _authenticate(conn: Connection, token: str) -> Annotator:
    """The annotator a credential stands for: their token, or a browser session secret opened with it."""
    if not isinstance(token, str) or not token.strip():
        raise InputError("token: empty; paste the token printed by `accord annotators add`")
    digest = hash_token(token.strip())
    row = conn.execute("SELECT name, role, created_at, revoked_at FROM annotators WHERE token_hash = ?", (digest,)).fetchone()
    if row is None:
        row = conn.execute(
            """SELECT a.name, a.role, a.created_at, a.revoked_at FROM browser_sessions AS s
               JOIN annotators AS a ON a.name = s.annotator AND a.token_hash = s.token_hash
               WHERE s.secret_hash = ? AND s.expires_at > ?""", (digest, now_iso())).fetchone()
    if row is None:
        raise InputError("token: not recognised (revoked, rotated or mistyped)")
    return Annotator(**dict(row))


def _task_row(conn: Connection, task_id: str) -> Any:
    row = conn.execute("SELECT task_id, kind, scheme, payload FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        raise InputError(f"task_id {task_id!r}: not in the store")
    return row


def _check_label(task: Any, label: str, first_turn: int | None) -> None:
    where = f"task {task['task_id']!r}"
    get_scheme(task["scheme"]).check(label, where=where)
    n_turns = len(json.loads(task["payload"]).get("turns") or []) if first_turn_offered(task["kind"]) else 0
    problem = first_turn_problem(task["kind"], label, first_turn, n_turns, scheme=task["scheme"])
    if problem:
        raise InputError(f"{where}: {problem}")


def _check_access(conn: Connection, who: Annotator, role: str, task_id: str) -> None:
    if role == "independent":
        if not conn.execute("SELECT 1 FROM orders WHERE annotator = ? AND task_id = ?", (who.name, task_id)).fetchone():
            raise InputError(f"task_id {task_id!r}: not in annotator {who.name!r}'s order")
        return
    distinct = conn.execute(
        "SELECT COUNT(DISTINCT label) FROM labels WHERE task_id = ? AND role = 'independent'", (task_id,)
    ).fetchone()[0]
    if distinct < 2:
        raise InputError(f"task_id {task_id!r}: independent labels do not disagree; nothing to adjudicate")


def _label_row(conn: Connection, task_id: str, annotator: str, role: str) -> Any | None:
    return conn.execute(
        "SELECT * FROM labels WHERE task_id = ? AND annotator = ? AND role = ?", (task_id, annotator, role)
    ).fetchone()
