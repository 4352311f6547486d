"""What every SQLite file of accord shares (the judges' request cache, the coding app's store)."""

from __future__ import annotations

import sqlite3
import time


def use_wal(conn: sqlite3.Connection, *, timeout_s: float) -> None:
    """Put the database in WAL mode. SQLite answers a journal-mode change that meets another connection
    with "database is locked" at once, without its busy handler (two processes opening a new file
    together), so the switch is retried for up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
