"""What the store's reads return (annotators, revisions, submit and load results, table fingerprints) and
how its rows become them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from annotate.engines import Connection
from samples import SIMULATED, HumanLabel

AnnotatorRole = Literal["annotator", "adjudicator"]


ANNOTATOR_ROLES: tuple[str, ...] = ("annotator", "adjudicator")


SUBMIT_BACKENDS: tuple[str, ...] = ("app", SIMULATED)


@dataclass(frozen=True, kw_only=True)
class Annotator:
    name: str
    role: AnnotatorRole
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True, kw_only=True)
class Revision:
    """One submit as it was recorded (the history of one label)."""

    submission_id: str
    task_id: str
    annotator: str
    role: str
    label: str
    first_turn: int | None
    unsure: bool
    note: str
    seconds_spent: float | None
    backend: str
    submitted_at: str
    number: int
    codebook_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class SubmitResult:
    submission_id: str
    created: bool
    revision: int
    label: HumanLabel


@dataclass(frozen=True, kw_only=True)
class LoadReport:
    n_tasks: int
    created: int
    already_present: int
    annotators: tuple[str, ...]
    late: tuple[str, ...] = ()
    """Annotators not named at blind time who were given their seeded order by this load."""


@dataclass(frozen=True, kw_only=True)
class TableFingerprint:
    rows: int
    sha256: str


def _table_fingerprint(conn: Connection, table: str, key: str) -> TableFingerprint:
    digest = hashlib.sha256()
    rows = conn.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
    for row in rows:
        digest.update(json.dumps({name: row[name] for name in row.keys()}, sort_keys=True).encode("utf-8") + b"\n")
    return TableFingerprint(rows=len(rows), sha256=digest.hexdigest())


def _human_label(row: Any) -> HumanLabel:
    return HumanLabel(
        task_id=row["task_id"], annotator=row["annotator"], label=row["label"], first_turn=row["first_turn"],
        unsure=bool(row["unsure"]), note=row["note"], created_at=row["created_at"], updated_at=row["updated_at"],
        seconds_spent=row["seconds_spent"], backend=row["backend"], role=row["role"],
        codebook_sha256=row["codebook_sha256"],
    )


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _revision(row: Any, number: int) -> Revision:
    values = dict(row)
    values["unsure"] = bool(values["unsure"])
    return Revision(**values, number=number)
