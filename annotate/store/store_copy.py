"""Copying a store to another engine (``accord store copy``): every table, checked by fingerprint."""

from __future__ import annotations

from annotate.store.core import Store
from annotate.store.rows import TableFingerprint, _table_fingerprint
from annotate.store.schema import TABLES
from samples import InputError


def copy_store(source: Store, target: Store) -> dict[str, TableFingerprint]:
    """Copy every table of ``source`` into the empty ``target`` in one transaction, then check that each
    table's row count and content hash match; on any mismatch nothing is kept in ``target``."""
    before = source.fingerprint()
    with target._write() as tx:
        held = {table: int(tx.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]) for table, _ in TABLES}
        if any(held.values()):
            busy = ", ".join(f"{table} {n}" for table, n in held.items() if n)
            raise InputError(f"store {target.location}: not empty ({busy} rows); copy only into an empty store")
        for table, key in TABLES:
            rows = source._all(f"SELECT * FROM {table} ORDER BY {key}")
            if rows:
                columns = list(rows[0].keys())
                tx.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                               [tuple(row) for row in rows])
        for table in ("submissions", "practice_answers"):
            target.engine.reset_sequence(tx, table, "seq")
        after = {table: _table_fingerprint(tx, table, key) for table, key in TABLES}
        if source.fingerprint() != before:
            raise InputError(f"store {source.location}: changed during the copy (a server still takes labels?); "
                             f"stop the app servers and copy again")
        wrong = [table for table in before if before[table] != after[table]]
        if wrong:
            raise InputError(f"store {target.location}: copy check failed for {wrong} (row counts or content hashes "
                             f"differ); nothing was kept")
    return after
