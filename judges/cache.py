"""Content-addressed request cache in SQLite: sha256(canonical request) -> response.

Only successful responses are stored, so a failure is always retried and a rerun
costs zero calls for everything that once succeeded. Each ``put`` commits at once: a
run killed right after a call never pays for that call again. The schema evolves
only through the append-only, named migrations below.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from samples import InputError, canonical_json, private_file, sha256_hex, use_wal

# Append-only: never edit or reorder an applied migration; add a new named one.
MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_responses",
        """
        CREATE TABLE responses (
            key TEXT PRIMARY KEY,          -- sha256 of the canonical request JSON
            request TEXT NOT NULL,         -- the canonical request JSON
            response TEXT NOT NULL,        -- the provider's raw JSON body
            created_at REAL NOT NULL
        )
        """,
    ),
)


# SQLite's answers for a file that is not (or no longer) a database: a stranger's file or a corrupt cache.
_FOREIGN_FILE = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


def request_key(request: Mapping[str, Any]) -> str:
    return sha256_hex(request)


_USER_PLACEHOLDER = "\x00accord-user-text\x00"


class RequestKeyer:
    """``request_key`` for many requests that differ only in the user text, without re-encoding the rest.

    A judge's requests share a long system prompt; encoding it 10,000 times dominated a
    warm rerun. The canonical bytes before and after the user text are identical for
    every unit, so the hash state of the prefix is computed once and copied. The key is
    byte-for-byte ``sha256(canonical_json(request))`` (tests compare both).
    """

    def __init__(self, template: Mapping[str, Any]) -> None:
        blob = canonical_json(template)
        marker = json.dumps(_USER_PLACEHOLDER, ensure_ascii=False)[1:-1].encode("utf-8")
        if blob.count(marker) != 1:
            raise ValueError("the template must contain the user placeholder exactly once")
        prefix, self._suffix = blob.split(marker)
        self._head = hashlib.sha256(prefix)

    placeholder = _USER_PLACEHOLDER

    def key(self, user: str) -> str:
        digest = self._head.copy()
        digest.update(json.dumps(user, ensure_ascii=False)[1:-1].encode("utf-8"))
        digest.update(self._suffix)
        return digest.hexdigest()


class RequestCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            private_file(self.path)  # cached prompts hold the units' text: owner-only
            self._db = sqlite3.connect(self.path, timeout=30.0)
            self._check_ours()
            use_wal(self._db, timeout_s=30.0)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except OSError as error:  # no permission, a file where a folder belongs
            raise InputError(f"{error.filename or self.path}: cannot open the request cache: {error.strerror}") from None
        except sqlite3.DatabaseError as error:
            if getattr(error, "sqlite_errorname", None) in _FOREIGN_FILE:
                raise self._foreign(str(error)) from None
            raise InputError(f"{self.path}: not a usable request cache ({error})") from None  # a folder, read-only

    def _foreign(self, what: str) -> InputError:
        return InputError(f"{self.path}: not an accord request cache: {what}; move it away to start a new cache")

    def _check_ours(self) -> None:
        """Refuse, before anything is written to it, a database that holds tables but no accord migrations
        (another program's SQLite file): creating ours in it would change someone else's data."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "migrations" not in tables:
            raise self._foreign(f"a SQLite database with other tables ({', '.join(sorted(tables))})")

    def _migrate(self) -> None:
        """Apply missing migrations in one write transaction, checked inside it: two runs opening a new
        cache at once apply each migration once."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            applied = {row[0] for row in self._db.execute("SELECT name FROM migrations")}
            for name, sql in MIGRATIONS:
                if name not in applied:
                    self._db.execute(sql)
                    self._db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
        except BaseException:
            self._db.rollback()
            raise
        self._db.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Cached responses for ``keys`` (missing keys absent), in chunked IN queries."""
        keys = list(keys)
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), 900):
            chunk = keys[start:start + 900]
            marks = ",".join("?" * len(chunk))
            for key, body in self._db.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk):
                found[key] = json.loads(body)
        return found

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?)",
                (key, canonical_json(request).decode("utf-8"), json.dumps(response, ensure_ascii=False), time.time()),
            )

    def put_many(self, rows: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]]) -> int:
        now = time.time()
        with self._db:
            cursor = self._db.executemany(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?)",
                ((k, canonical_json(q).decode("utf-8"), json.dumps(r, ensure_ascii=False), now) for k, q, r in rows),
            )
        return cursor.rowcount

    def request_for(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT request FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()
