"""Importing human labels people already have (CSV, JSONL, Parquet or a named format) into a study.

Rows are matched to units (``samples.imports.UnitMatcher``: unit id, task id, or
trajectory + kind + turn), checked against the unit kind's label scheme (unless the
study says ``scheme = "any"``), and written as ``HumanLabel`` rows (backend
``import``, with the source file's name and sha256) to
``labels/imported/NAME.jsonl``, one of the study's human label files, so validate,
audit, gate and report read them like the coding app's and Label Studio's. Either
every row imports or nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from samples import (
    ANY_SCHEME,
    HumanLabel,
    InputError,
    MatchColumns,
    StudyLayout,
    TableRow,
    UnitMatcher,
    check_annotator_name,
    check_columns,
    check_label_types,
    collect,
    get_scheme,
    import_rows,
    label_text,
    scheme_for,
    study_schemes,
    table_source,
)


@dataclass(frozen=True, kw_only=True)
class HumanColumns:
    """Where a table keeps its labels: long (one annotator column) or wide (one column per annotator)."""

    annotator: str | None = None
    label: str | None = None
    annotators: tuple[str, ...] = ()
    first_turn: str | None = None
    unsure: str | None = None
    note: str | None = None
    role: str | None = None
    time: str | None = None
    """When each label was given (ISO-8601): the order the anytime gate reads labels in; else the table's row order."""

    def __post_init__(self) -> None:
        if bool(self.annotators) == (self.annotator is not None):
            raise InputError("give --annotator-column with --label-column (one row per label), or "
                             "--annotator-columns A,B,... (one label column per annotator), not both")
        if self.annotator is not None and self.label is None:
            raise InputError("--annotator-column needs --label-column")
        for name in self.annotators:  # a wide table's column names are its annotators' names
            check_annotator_name(name, parameter="--annotator-columns: column")


@dataclass(frozen=True, kw_only=True)
class ImportReport:
    path: Path
    written: Path
    labels: int
    annotators: tuple[str, ...]
    units: int


def _name(value: str, where: str) -> str:
    """The coding app's annotator-name rule (``samples.names``), so no import path lets markup into a name."""
    return check_annotator_name(value, parameter=f"{where}: annotator name")


def _check_label(label: str, kind: str, scheme: str | None, where: str, schemes: Mapping[str, str] | None) -> str:
    name = scheme or scheme_for(kind, schemes)
    if name == ANY_SCHEME:
        return label
    known = get_scheme(name)
    if label in known.labels:  # as the scheme spells it (checked per imported label: the common case first)
        return label
    return known.canonical(label) or known.check(label, where=where)


def _time(value: object, where: str, column: str) -> str:
    """A time cell as ISO-8601 UTC with microseconds (the coding app's and Label Studio's format, so times from
    every backend sort together); a time without a zone is read as UTC, as Label Studio's are."""
    from datetime import UTC, datetime

    try:
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(label_text(value))
    except ValueError:
        raise InputError(f"{where}: column {column!r}: {value!r} is not an ISO-8601 time "
                         f"(e.g. 2026-01-31T14:05:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="microseconds")


def _flag(value: object, where: str, column: str) -> bool:
    text = label_text(value).lower() if value is not None else ""
    if text in ("", "0", "no", "false"):
        return False
    if text in ("1", "yes", "true"):
        return True
    raise InputError(f"{where}: column {column!r}: {value!r} is not a yes/no flag")


def human_labels_from_rows(rows: Sequence[TableRow], matcher: UnitMatcher, *, match: MatchColumns,
                           columns: HumanColumns, scheme: str | None, source: str,
                           schemes: Mapping[str, str] | None = None) -> list[HumanLabel]:
    """HumanLabel rows from table rows; every bad row is listed in one InputError. Labels are checked against
    ``scheme``, else the scheme the study codes the unit's kind under (``schemes``: ``[annotation] schemes``)."""
    cells = [(row.where, row.values.get(c)) for row in rows for c in (columns.annotators or (columns.label,))]
    check_label_types([(w, v) for w, v in cells if v not in (None, "")], column=columns.label or "annotator columns")

    checked: dict[tuple[str, str], str] = {}  # (cell, unit kind) -> its label: each distinct good cell checked once

    def convert(row: TableRow) -> list[HumanLabel]:
        unit = matcher.unit_of(row, match)
        task = matcher.task_of(unit)
        if task is None:
            raise InputError(f"{row.where}: unit {unit!r} is not in the sealed key (not sampled); human labels "
                             f"belong to sampled units")
        kind = matcher.kinds[unit]
        if columns.annotators:
            pairs = [(name, row.get(name, required=False)) for name in columns.annotators]
            pairs = [(name, value) for name, value in pairs if value is not None]
        else:
            pairs = [(_name(label_text(row.get(columns.annotator)), row.where), row.get(columns.label))]
        first = row.get(columns.first_turn, required=False)
        if first is not None:
            try:
                first = int(first)
            except (TypeError, ValueError):
                raise InputError(f"{row.where}: column {columns.first_turn!r}: {first!r} is not a turn number") from None
        role = label_text(row.get(columns.role)) if columns.role else "independent"
        if role not in ("independent", "adjudication"):
            raise InputError(f"{row.where}: column {columns.role!r}: {role!r}; expected independent or adjudication")
        given = _time(row.get(columns.time), row.where, columns.time) if columns.time else None
        out = []
        for annotator, value in pairs:
            text = label_text(value)
            label = checked.get((text, kind)) or checked.setdefault(
                (text, kind), _check_label(text, kind, scheme, row.where, schemes))
            out.append(HumanLabel(task_id=task, annotator=annotator, label=label, first_turn=first,
                                  unsure=_flag(row.get(columns.unsure, required=False), row.where, columns.unsure or ""),
                                  note=str(row.get(columns.note, required=False) or ""), created_at=given,
                                  updated_at=given, backend="import", role=role, source=source))
        return out

    groups = collect(rows, convert)
    seen: dict[tuple[str, str, str], str] = {}
    problems = []
    for row, group in zip(rows, groups):
        for label in group:
            key = (label.task_id, label.annotator, label.role)
            if key in seen:
                problems.append(f"{row.where}: annotator {label.annotator!r} labels the same unit as {seen[key]}")
            seen.setdefault(key, row.where)
    if problems:
        raise InputError("duplicate labels; nothing was written", problems=problems)
    return [label for group in groups for label in group]


def import_human_labels(path: str | Path, study: str | Path, *, match: MatchColumns, columns: HumanColumns,
                        scheme: str | None = None, format: str | None = None, name: str | None = None,
                        where: dict[str, str] | None = None, rows: Sequence[TableRow] | None = None) -> ImportReport:
    """Import a table of human labels into ``study`` (replacing an earlier import of the same name).

    ``rows``: the table's rows already read (and selected) by the caller; ``path`` still names the source.
    """
    from samples import publish_import

    report, labels = human_import(path, study, match=match, columns=columns, scheme=scheme, format=format,
                                  name=name, where=where, rows=rows)
    publish_import(study, [(report.written, labels)])
    return report


def human_import(path: str | Path, study: str | Path, *, match: MatchColumns, columns: HumanColumns,
                 scheme: str | None = None, format: str | None = None, name: str | None = None,
                 where: dict[str, str] | None = None, rows: Sequence[TableRow] | None = None,
                 matcher: UnitMatcher | None = None) -> tuple[ImportReport, list[HumanLabel]]:
    """The labels an import would write, every row checked, nothing written (``matcher``: units not yet
    published, for ``accord import table``)."""
    path, layout = Path(path), StudyLayout.of(study)
    name = _name(name or path.stem, "--name")
    rows = import_rows(path, format=format, rows=rows, where=where, scheme=scheme)
    check_columns(rows, {"--unit-column": [match.unit], "--task-column": [match.task],
                         "--trajectory-column": [match.trajectory], "--kind-column": [match.kind],
                         "--turn-column": [match.turn], "--annotator-column": [columns.annotator],
                         "--label-column": [columns.label], "--annotator-columns": columns.annotators,
                         "--first-turn-column": [columns.first_turn], "--unsure-column": [columns.unsure],
                         "--note-column": [columns.note], "--role-column": [columns.role],
                         "--time-column": [columns.time]}, source=path)
    labels = human_labels_from_rows(rows, matcher or UnitMatcher.for_study(layout), match=match, columns=columns,
                                    scheme=scheme, schemes=study_schemes(layout), source=table_source(path))
    # Kept in the table's row order: without a time column it is the order the anytime gate reads labels in.
    target = layout.imported_labels_dir / f"{name}.jsonl"
    return ImportReport(path=path, written=target, labels=len(labels), annotators=tuple(sorted({r.annotator for r in labels})),
                        units=len({r.task_id for r in labels})), labels
