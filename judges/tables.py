"""Reading units; the judge labels table, its append-only log and the run log.

A run appends every finished label to ``label_log.jsonl``, one complete line per
label in one ``write``, so a killed run keeps every label it finished; a torn last
line (the kill landed mid-write) was never a finished label: readers skip it and
the next run cuts it off. ``labels.jsonl``, the table the other stages read, is
rebuilt from the log: one row per (unit_id, judge, sample_index), the last logged
row winning, sorted by key, written whole through a unique temporary file renamed
over it. A table without a log (written before logs existed) seeds the log. A reader sees the
old table or the new, never half of one nor a repeated key. Only the holder of the
study's judges lock (``judges.lock``) appends, cuts or rebuilds, so nothing is ever
rewritten under a writer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from samples import (
    PRIVATE_FILE,
    InputError,
    JudgeLabel,
    LabelKey,
    SampledUnit,
    Unit,
    atomic_writer,
    judge_label_rows,
    open_rows_file,
    private_dir,
    record_bytes,
)


@contextmanager
def file_errors(path: Path, doing: str) -> Iterator[None]:
    """An OS refusal (permission, a folder where a file belongs, a full disk) as one InputError line."""
    try:
        yield
    except OSError as error:
        raise InputError(f"{error.filename or path}: cannot {doing}: {error.strerror or error}") from None


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> None:
    raise _NonFinite(f"{name} is not a JSON number (the JSON standard has no NaN or Infinity)")


def read_units(path: str | Path) -> list[Unit]:
    """Units (or sampled units) from JSONL; errors name the file, line and field."""
    path = Path(path)
    units: list[Unit] = []
    problems: list[str] = []
    with open_rows_file(path, "units file") as handle:  # by type first: a FIFO would block, /dev/zero fill memory
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line, parse_constant=_refuse_constant)
                model = SampledUnit if isinstance(data, dict) and "stratum" in data else Unit
                units.append(model.model_validate(data))
            except json.JSONDecodeError as error:
                problems.append(f"{path}:{number}: not JSON ({error.msg})")
            except UnicodeDecodeError as error:
                problems.append(f"{path}:{number}: not UTF-8 ({error.reason} at byte {error.start})")
            except _NonFinite as error:
                problems.append(f"{path}:{number}: {error}")
            except ValidationError as error:
                first = error.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "(record)"
                problems.append(f"{path}:{number}: field {field}: {first['msg']}")
    if problems:
        raise InputError(f"{path}: {len(problems)} bad unit record(s)", problems=problems)
    seen: set[str] = set()
    repeated = [u.unit_id for u in units if u.unit_id in seen or seen.add(u.unit_id)]
    if repeated:
        raise InputError(f"{path}: repeated unit_id(s) {sorted(set(repeated))[:10]}")
    return units


def _repair_torn_tail(path: Path) -> None:
    """Cut a last line without its newline: a write the kill interrupted. Lock holders only."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        data = handle.read()
        handle.truncate(data.rfind(b"\n") + 1)


def read_labels(path: str | Path) -> dict[LabelKey, JudgeLabel]:
    """The labels table (or log), last row per (unit_id, judge, sample_index)."""
    return read_label_rows(path)[0]


def read_label_rows(path: str | Path) -> tuple[dict[LabelKey, JudgeLabel], int]:
    """The runner's view of a label log or table (read by ``samples.tables``): the last row per key and how
    many complete rows the file holds; a torn last line is skipped, a missing file holds none.

    Reading never changes the file: a run may be appending to it.
    """
    path = Path(path)
    if not path.exists():
        return {}, 0
    table: dict[LabelKey, JudgeLabel] = {}
    rows = 0
    for _, label in judge_label_rows(path, torn_tail=True):
        table[label.key] = label
        rows += 1
    return table, rows


def table_bytes(table: dict[LabelKey, JudgeLabel]) -> bytes:
    """The labels table file's bytes: one row per key, sorted by (unit_id, judge, sample_index)."""
    return b"".join(record_bytes(table[key]) for key in sorted(table))


def write_label_table(path: str | Path, table: dict[LabelKey, JudgeLabel]) -> bool:
    """Replace the table atomically when its bytes change (lock holders only); True when written."""
    path = Path(path)
    data = table_bytes(table)
    with file_errors(path, "write the judge labels table"):
        if not table and not path.exists():  # a run refused before labelling anything writes no table
            return False
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
        with atomic_writer(path) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    return True


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Delete the temporary siblings of ``path`` a killed rewrite left (lock holders only).

    The names are ``samples.jsonl.atomic_writer``'s; no other process writes them while the lock is held.
    """
    path = Path(path)
    # atomic_writer's unique names, and the fixed name rewrites used before them
    stale = sorted(path.parent.glob(f".{path.name}.*.tmp")) + sorted(path.parent.glob(f"{path.name}.tmp"))
    for temporary in stale:
        temporary.unlink(missing_ok=True)
    return stale


def seed_label_log(table: str | Path, log: str | Path) -> bool:
    """Start a missing log from the table's complete rows, in file order (lock holders only)."""
    table, log = Path(table), Path(log)
    if log.exists() or not table.is_file():
        return False
    with file_errors(log, "start the label log"):
        data = table.read_bytes()
        with atomic_writer(log) as handle:
            handle.write(data[:data.rfind(b"\n") + 1])
    return True


class _JsonlAppender:
    """An append-only JSONL file (lock holders only): a torn last line is cut on open, each
    record goes out in one ``write`` on an O_APPEND descriptor, so lines never interleave.
    The file (and its folder) is created by the first write: a run refused before it writes
    nothing."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self.closed = False
        with file_errors(self.path, "open for appending"):
            _repair_torn_tail(self.path)

    def _append(self, data: bytes) -> None:
        if not data:
            return
        if self._fd is None:
            with file_errors(self.path, "open for appending"):
                private_dir(self.path.parent)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.closed = True


class LabelStore(_JsonlAppender):
    """The label log and the table rebuilt from it, for the one run holding the judges lock.

    Opening removes a killed rewrite's temporaries, seeds a missing log from an older
    table and cuts a torn last line; ``table`` is then the log's last row per key and
    follows every ``write``; ``close`` rewrites the table file from it.
    """

    def __init__(self, table_path: str | Path, log_path: str | Path) -> None:
        self.table_path = Path(table_path)
        if self.table_path.is_dir():  # found now, not after the calls were paid for
            raise InputError(f"{self.table_path}: is a folder; expected the judge labels table (a file)")
        for path in (self.table_path, Path(log_path)):
            remove_stale_temporaries(path)
        seed_label_log(self.table_path, log_path)
        super().__init__(log_path)
        self.table = read_labels(self.path)

    def write(self, label: JudgeLabel) -> None:
        self.write_many((label,))

    def write_many(self, labels: Iterable[JudgeLabel]) -> None:
        labels = list(labels)
        self._append(b"".join(record_bytes(label) for label in labels))
        self.table.update((label.key, label) for label in labels)

    def close(self) -> None:
        """Stop appending and rewrite the table (once; later calls do nothing)."""
        if not self.closed:
            super().close()
            write_label_table(self.table_path, self.table)


def current_labels(table_path: str | Path, log_path: str | Path) -> dict[LabelKey, JudgeLabel]:
    """The labels as of the last finished write, for readers that hold no lock (a dry run)."""
    log_path = Path(log_path)
    return read_labels(log_path if log_path.exists() else table_path)


class RunLog(_JsonlAppender):
    """Append-only ``runs.jsonl``: start, retry, call_failed and end events of every run."""

    def event(self, event: str, **fields: Any) -> None:
        self._append((json.dumps({"event": event, **fields}, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))


def read_run_log(path: str | Path) -> Iterator[dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.endswith("\n") and line.strip():
                yield json.loads(line)
