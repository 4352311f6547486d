"""The label store's database engines: SQLite (embedded default) and PostgreSQL (several servers).

``annotate.store.Store`` writes its SQL once, with ``?`` placeholders and the two
dialect words of its migrations (``{SEQ}``, ``{FLOAT}``); an engine owns everything
that differs between databases: connections, how a write transaction excludes other
writers, placeholders, DDL types and the engine's own integrity check. Engines are
found by the scheme of the store's location through a registry, as a third party's
would be (``register_engine``); a plain path is a SQLite file.

Writers: SQLite takes its database-wide write lock up front (``BEGIN IMMEDIATE``).
PostgreSQL takes transaction-scoped advisory locks: structural writes (migrations,
loading tasks, annotators) hold the store's lock exclusively; a submit holds it
shared plus an exclusive lock on the submitting annotator, so one person's submits
arriving at two app servers at once are applied one after the other (the second sees
the first's submission id) while different people's submits run side by side.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from samples import InputError, Registry, private_file, regular_file, use_wal

DEFAULT_PG_SCHEMA = "accord"
POSTGRES_SCHEMES = ("postgresql", "postgres")


@runtime_checkable
class Connection(Protocol):
    """What the store needs of a connection: DB-API ``execute`` / ``executemany`` with ``?`` placeholders,
    rows that index by position and by column name."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any: ...


@runtime_checkable
class Engine(Protocol):
    """One database holding one study's store."""

    name: str
    """``sqlite`` or ``postgresql``: shown by ``accord store status``."""
    location: str
    """Where the store is, for messages: a file path, or a URL without any password."""

    def ddl(self, statement: str) -> str:
        """A migration statement in this engine's words (``{SEQ}``: an auto-numbered key, ``{FLOAT}``)."""

    def read(self) -> Any:
        """A context manager giving a connection for reads (each statement sees committed data)."""

    def write(self, *, shared: bool = False) -> Any:
        """A context manager giving a connection inside one transaction that excludes every other writer,
        or with ``shared`` only structural writers (a submit, which then ``lock``s its annotator)."""

    def lock(self, conn: Connection, scope: str) -> None:
        """Inside a shared write: wait for, then hold until commit, the exclusive lock of ``scope``."""

    def integrity(self) -> str:
        """The database's own consistency check: ``ok`` or what is wrong."""

    def reset_sequence(self, conn: Connection, table: str, column: str) -> None:
        """After rows were inserted with explicit ``column`` values, continue numbering past them."""

    def close(self) -> None: ...


_ENGINES: Registry[Callable[[str], Engine]] = Registry("store engine")


def register_engine(schemes: Sequence[str], factory: Callable[[str], Engine]) -> None:
    """Let store locations with these URL schemes (``scheme://...``) open with ``factory(location)``."""
    for scheme in schemes:
        _ENGINES.register(scheme, factory)


def engine_schemes() -> list[str]:
    return _ENGINES.names()


class StoreUnavailable(InputError):
    """The store's database does not answer (down, restarting, unreachable): the coding app shows a page
    that retries, the CLI one line; nothing acknowledged was lost."""


def scheme_of(location: str | Path) -> str:
    """The engine scheme of a location: a URL's scheme, ``sqlite`` for a plain path."""
    text = str(location)
    return text.split("://", 1)[0].lower() if "://" in text else "sqlite"


def open_engine(location: str | Path) -> Engine:
    scheme = scheme_of(location)
    if scheme not in _ENGINES:
        raise InputError(f"store {redact(str(location))!r}: unknown engine {scheme!r}; expected a SQLite file path or "
                         f"a URL with one of {engine_schemes()}")
    if "://" in str(location):
        check_store_url(str(location), where="store")  # every way in: no password in a URL, ever
    return _ENGINES[scheme](str(location))


def check_store_url(url: str, *, where: str) -> str:
    """A store URL fit for a study file or the environment: a known scheme and no password in it."""
    scheme = scheme_of(url)
    if scheme not in _ENGINES:
        raise InputError(f"{where} {redact(url)!r}: unknown engine {scheme!r}; expected one of {engine_schemes()}")
    if urlsplit(url).password is not None or _query_passwords(url):
        raise InputError(f"{where} {redact(url)!r}: holds a password; passwords never go in URLs here, use "
                         f"PGPASSWORD or ~/.pgpass (libpq reads them)")
    return url


_PASSWORD_KEYS = ("password", "sslpassword")
"""Query parameters libpq takes a secret from (``?password=``): refused and redacted like ``user:pw@``."""


def _query_passwords(url: str) -> list[str]:
    from urllib.parse import parse_qsl

    query = urlsplit(url).query if "://" in url else ""
    return [key for key, _ in parse_qsl(query, keep_blank_values=True) if key.lower() in _PASSWORD_KEYS]


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages)."""
    import re

    parts = urlsplit(url) if "://" in url else None
    if parts is None or (parts.password is None and not _query_passwords(url)):
        return url
    netloc = parts.netloc if parts.password is None else parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    query = re.sub(r"(?i)(^|&)(" + "|".join(_PASSWORD_KEYS) + r")=[^&]*", r"\1\2=***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


# -- SQLite ------------------------------------------------------------------------------------


class SQLiteEngine:
    """One store file in WAL mode; each thread has its own connection."""

    name = "sqlite"

    def __init__(self, location: str | Path) -> None:
        text = str(location)
        path = Path(text.split("://", 1)[1] if "://" in text else text)
        self.path = regular_file(private_file(path), "SQLite store")  # labels map tasks to people: owner-only;
        # a device or FIFO (/dev/zero) is refused by its type, not met as a disk I/O error mid-migration
        self.location = str(self.path)
        self._local = threading.local()
        # Threads of one process (the app's sessions) queue here instead of in SQLite's
        # busy handler, which sleeps in steps of up to 100 ms; other processes still
        # meet the busy timeout.
        self._write_lock = threading.Lock()

    def ddl(self, statement: str) -> str:
        return statement.format(SEQ="INTEGER PRIMARY KEY AUTOINCREMENT", FLOAT="REAL")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=60.0)
                use_wal(conn, timeout_s=60.0)
            except sqlite3.DatabaseError as error:
                raise InputError(f"{self.path}: not a usable SQLite store ({error})") from None
            # FULL: a label a person spent minutes on survives a power cut, not only a crash.
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
        return conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        yield self._conn()

    @contextmanager
    def write(self, *, shared: bool = False) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``: takes the write lock up front so readers never deadlock a writer."""
        conn = self._conn()
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def lock(self, conn: Connection, scope: str) -> None:
        """Every SQLite write is already exclusive."""

    def integrity(self) -> str:
        return str(self._conn().execute("PRAGMA integrity_check").fetchone()[0])

    def reset_sequence(self, conn: Connection, table: str, column: str) -> None:
        """AUTOINCREMENT already continues past the largest explicit key."""

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


register_engine(["sqlite"], SQLiteEngine)


# -- PostgreSQL --------------------------------------------------------------------------------


class _Row(tuple):
    """A result row that indexes by position and by column name, like ``sqlite3.Row``."""

    _names: dict[str, int]

    def __getitem__(self, key):  # type: ignore[override]
        return tuple.__getitem__(self, self._names[key] if isinstance(key, str) else key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], _Row]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> _Row:
        row = _Row(values)
        row._names = names
        return row

    return make


class _PostgresConnection:
    """A psycopg connection speaking the store's ``?`` placeholders (its SQL has no other ``?`` or ``%``)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        with self._conn.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), [tuple(row) for row in rows])
            return cursor


class PostgresEngine:
    """A store in one schema of a PostgreSQL database, shared by every app server of the study.

    The location is a libpq URL (``postgresql://user@host:port/db``, or a socket:
    ``postgresql:///db?host=/run/postgresql``) with an optional ``schema=`` (default
    ``accord``; ``Store.for_study`` names one per study). Credentials come from libpq's
    own sources (PGPASSWORD, ~/.pgpass), never from the URL.
    """

    name = "postgresql"
    POOL_SIZE = 8
    CONNECT_TIMEOUT_S = 10.0

    def __init__(self, location: str) -> None:
        try:
            import psycopg  # noqa: F401
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise InputError("a PostgreSQL store needs psycopg: pip install 'accord[postgres]'") from None
        parts = urlsplit(location)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schemas = [value for key, value in query if key == "schema"]
        self.schema = schemas[-1] if schemas else DEFAULT_PG_SCHEMA
        if not self.schema.replace("_", "").isalnum() or not self.schema.isascii():
            raise InputError(f"store {redact(location)!r}: schema {self.schema!r}; expected letters, digits and _")
        conninfo = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in query if k != "schema"])))
        self.location = redact(location)
        self._lock_key = f"accord-store:{self.schema}"
        self._pool = ConnectionPool(conninfo, min_size=1, max_size=self.POOL_SIZE, open=False,
                                    kwargs={"autocommit": True, "row_factory": _row_factory},
                                    configure=self._configure, name=f"accord-{self.schema}")
        try:
            self._pool.open(wait=True, timeout=self.CONNECT_TIMEOUT_S)
            with self._pool.connection() as conn:  # the schema every connection's search_path names
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._lock_key,))
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        except Exception as error:
            self._pool.close()
            raise StoreUnavailable(f"store {self.location}: cannot open the PostgreSQL database "
                             f"({str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__})") from None

    def ddl(self, statement: str) -> str:
        # Text compares byte by byte as in SQLite, so orders, exports and content hashes are the same on
        # both engines whatever the database's locale.
        statement = statement.format(SEQ="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", FLOAT="DOUBLE PRECISION")
        return re.sub(r"\bTEXT\b", 'TEXT COLLATE "C"', statement)

    def _configure(self, conn: Any) -> None:
        conn.execute(f'SET search_path TO "{self.schema}"')

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """The database gone (stopped, restarting, unreachable) is ``StoreUnavailable``, not a driver error:
        a committed label is in it, an uncommitted one was never acknowledged."""
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            yield
        except (psycopg.OperationalError, PoolTimeout) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise StoreUnavailable(f"store {self.location}: the database is not answering ({first})") from None

    @contextmanager
    def read(self) -> Iterator[_PostgresConnection]:
        with self._answering(), self._pool.connection(timeout=self.CONNECT_TIMEOUT_S) as conn:
            yield _PostgresConnection(conn)

    @contextmanager
    def write(self, *, shared: bool = False) -> Iterator[_PostgresConnection]:
        lock = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        with self._answering(), self._pool.connection(timeout=self.CONNECT_TIMEOUT_S) as conn, conn.transaction():
            conn.execute(f"SELECT {lock}(hashtextextended(%s, 0))", (self._lock_key,))
            yield _PostgresConnection(conn)

    def lock(self, conn: Connection, scope: str) -> None:
        # Taken after the store's shared lock, always in that order: no two writers wait on each other in a cycle.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (f"{self._lock_key}:{scope}",))

    def integrity(self) -> str:
        """PostgreSQL keeps its own pages consistent (WAL, crash recovery); this checks it answers in the schema."""
        with self.read() as conn:
            found = conn.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?",
                                 (self.schema,)).fetchone()[0]
        return "ok" if found else f"schema {self.schema!r} holds no tables"

    def reset_sequence(self, conn: Connection, table: str, column: str) -> None:
        conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                     f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)")

    def close(self) -> None:
        self._pool.close()


register_engine(POSTGRES_SCHEMES, PostgresEngine)
