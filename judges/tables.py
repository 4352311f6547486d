"""Reading units and the judge labels table; appending labels and run-log events.

``labels.jsonl`` is appended one complete line per label while a run goes, so a
killed run keeps every label it finished; a torn last line (the kill landed
mid-write) was never a finished label and is cut off on the next open. The table's
key is (unit_id, judge, sample_index); when a key repeats (a failed call retried by
a later run, a changed fingerprint) the last row wins and ``compact_labels`` rewrites
the file atomically with one row per key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from samples.errors import InputError
from samples.records import SampledUnit, Unit

from judges.records import JudgeLabel

LabelKey = tuple[str, str, int]


def read_units(path: str | Path) -> list[Unit]:
    """Units (or sampled units) from JSONL; errors name the file, line and field."""
    path = Path(path)
    units: list[Unit] = []
    problems: list[str] = []
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: units file not found") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                model = SampledUnit if isinstance(data, dict) and "stratum" in data else Unit
                units.append(model.model_validate(data))
            except json.JSONDecodeError as error:
                problems.append(f"{path}:{number}: not JSON ({error.msg})")
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
    """Cut a last line without its newline: it is a write the kill interrupted."""
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
    """The labels table, last row per (unit_id, judge, sample_index)."""
    return read_label_rows(path)[0]


def read_label_rows(path: str | Path) -> tuple[dict[LabelKey, JudgeLabel], int]:
    """The table (last row per key) and how many rows the file holds (more means repeated keys)."""
    path = Path(path)
    if not path.exists():
        return {}, 0
    _repair_torn_tail(path)
    table: dict[LabelKey, JudgeLabel] = {}
    rows = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                label = JudgeLabel.model_validate_json(line)
            except ValidationError as error:
                raise InputError(f"{path}:{number}: not a JudgeLabel row ({error.errors()[0]['msg']})") from None
            table[(label.unit_id, label.judge, label.sample_index)] = label
            rows += 1
    return table, rows


class _JsonlAppender:
    """An append-only JSONL file: a torn last line is cut on open, every write is flushed."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _repair_torn_tail(self.path)
        self._handle = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._handle.close()


class LabelWriter(_JsonlAppender):
    """Appends one complete JSON line per label."""

    def write(self, label: JudgeLabel) -> None:
        self._handle.write(label.model_dump_json() + "\n")
        self._handle.flush()

    def write_many(self, labels: Iterable[JudgeLabel]) -> None:
        self._handle.write("".join(label.model_dump_json() + "\n" for label in labels))
        self._handle.flush()


def compact_labels(path: str | Path) -> int:
    """Rewrite the table with one row per key (last wins), atomically; returns the row count."""
    path = Path(path)
    table = read_labels(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        handle.write("".join(label.model_dump_json() + "\n" for label in table.values()))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return len(table)


class RunLog(_JsonlAppender):
    """Append-only ``runs.jsonl``: start, retry, call_failed and end events of every run."""

    def event(self, event: str, **fields: Any) -> None:
        self._handle.write(json.dumps({"event": event, **fields}, ensure_ascii=False, sort_keys=True) + "\n")
        self._handle.flush()


def read_run_log(path: str | Path) -> Iterator[dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.endswith("\n") and line.strip():
                yield json.loads(line)
