"""Bringing labels people already have into a study: their tables, and the units they are about.

A label table is read through a registered table format (CSV, JSONL, Parquet by
suffix; named formats such as the alt-test panels or the mast-lint findings for data
that comes in its own shape), as rows that each know where they came from
(``file:line``). A ``UnitMatcher`` finds the unit a row is about: by unit id, by
(trajectory id, kind, turn) through ``units.jsonl``, or by task id through the
sealed key. A study can also start from labels alone: ``register_units`` writes the
units (known only by id, with strata columns) and a sealed key for them, so
validate, audit, gate and report run with no trajectories at all.

Every problem is collected and reported together (one line each, with its row's
place); nothing is written unless every row is good.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samples.canonical import file_sha256
from samples.errors import InputError
from samples.layout import StudyLayout
from samples.registry import Registry
from samples.table_rows import TableRow

TableReader = Callable[[Path], list[TableRow]]
_FORMATS: Registry[TableReader] = Registry("table format")


def register_table_format(name: str, reader: TableReader) -> None:
    """Add a label-table format (built-ins register through here like third-party ones)."""
    _FORMATS.register(name, reader)


def table_formats() -> list[str]:
    return _FORMATS.names()


def read_table(path: str | Path, *, format: str | None = None) -> list[TableRow]:
    """The rows of a label table; ``format`` defaults to the file's suffix (csv, jsonl, parquet)."""
    path = Path(path)
    name = format or {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}.get(
        path.suffix.lower())
    if name is None:
        raise InputError(f"{path}: unknown table suffix {path.suffix!r}; expected .csv, .jsonl or .parquet, "
                         f"or name a format ({table_formats()})")
    reader = _FORMATS.get_one(name, where="--format")
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a label table file")
    from samples.jsonl import regular_file

    regular_file(path, "label table")
    stat = path.stat()
    key = (str(path.resolve()), name, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if key in _READ:  # a study file names one table per judge and the panel: it is parsed once a process
        return list(_READ[key])
    try:
        rows = reader(path)
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    _READ.clear()  # one table kept: the study files name the same table in a row
    _READ[key] = tuple(rows)
    return rows


_READ: dict[tuple, tuple[TableRow, ...]] = {}


def _csv_rows(path: Path) -> list[TableRow]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, strict=True)
        try:
            header = next(reader, None)
            if not header:
                raise InputError(f"{path}: empty; expected a header row")
            repeated = sorted({h for h in header if header.count(h) > 1})
            if repeated:
                raise InputError(f"{path}:1: column(s) {repeated} appear twice in the header")
            rows = []
            start = reader.line_num + 1  # the line the next record starts on (a quoted field may span lines)
            for record in reader:
                line, start = start, reader.line_num + 1
                if not record:
                    continue
                if len(record) != len(header):
                    raise InputError(f"{path}:{line}: {len(record)} fields; the header has {len(header)}")
                rows.append(TableRow(f"{path}:{line}", dict(zip(header, record))))
        except csv.Error as error:
            if str(error) == "unexpected end of data":
                raise InputError(f"{path}:{start}: a quoted field is never closed (the file ends inside it)") from None
            raise InputError(f"{path}:{reader.line_num}: malformed CSV ({error})") from None
    return rows


def _jsonl_rows(path: Path) -> list[TableRow]:
    from samples.jsonl import json_objects

    rows = [TableRow(f"{path}:{number}", value) for number, value in json_objects(path)]
    return rows


def _parquet_rows(path: Path) -> list[TableRow]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise InputError(f"{path}: not a Parquet file ({error})") from None
    return [TableRow(f"{path}[row {i + 1}]", row) for i, row in enumerate(table.to_pylist())]


def _json_document(path: Path) -> Any:
    from samples.jsonl import decode_json_line

    try:
        return decode_json_line(path.read_bytes())
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None


def _rater_maps(path: Path) -> list[TableRow]:
    """``{rater: {instance: label}}`` (the alt-test panels) as rows (instance, rater, label)."""
    document = _json_document(path)
    if not isinstance(document, dict) or not all(isinstance(v, dict) for v in document.values()):
        raise InputError(f"{path}: expected a JSON object {{rater: {{instance: label}}}}")
    return [TableRow(f"{path}[{rater!r}][{instance!r}]", {"instance": instance, "rater": rater, "label": label})
            for rater, labels in document.items() for instance, label in labels.items()]


def _mast_findings(path: Path) -> list[TableRow]:
    """mast-lint ``raw_findings.json``: one row per (trace, failure mode) with the three votes and the judge's call."""
    document = _json_document(path)
    if not isinstance(document, list):
        raise InputError(f"{path}: expected a JSON list of mast-lint evaluation records")
    rows = []
    for index, record in enumerate(document):
        where = f"{path}[{index}]"
        try:
            gold, report = record["gold"], record["report"]
            trace, votes, fired = gold["trace_id"], gold["votes"], set(report["modes_fired"])
        except (KeyError, TypeError):
            raise InputError(f"{where}: expected gold.trace_id, gold.votes and report.modes_fired") from None
        for mode, trio in votes.items():
            values: dict[str, Any] = {"item": f"{trace}|{mode}", "trace": trace, "mode": mode,
                                      "mas": gold.get("mas_name", "unknown"), "judge": "yes" if mode in fired else "no"}
            values.update({f"annotator_{k}": "yes" if vote else "no" for k, vote in enumerate(trio, start=1)})
            rows.append(TableRow(f"{where}.gold.votes[{mode!r}]", values))
    return rows


def _inspect_scores(path: Path) -> list[TableRow]:
    """inspect_ai evaluation log: one row per (sample, scorer) (``samples.adapters.inspect_logs.score_rows``)."""
    from samples.adapters.inspect_logs import score_rows

    return score_rows(path)


for _name, _reader in (("csv", _csv_rows), ("jsonl", _jsonl_rows), ("parquet", _parquet_rows),
                       ("rater-maps", _rater_maps), ("mast-findings", _mast_findings),
                       ("inspect-scores", _inspect_scores)):
    register_table_format(_name, _reader)


def select(rows: Sequence[TableRow], where: Mapping[str, str] | None) -> list[TableRow]:
    """The rows whose columns hold the given values (``{"rater": "gpt-4o"}``); all rows when ``where`` is empty."""
    if not where:
        return list(rows)
    check_columns(rows, {"where": list(where)}, source=table_of(rows) or "the table")
    return [row for row in rows if all(label_text(row.values.get(k)) == v for k, v in where.items())]


ANY_SCHEME = "any"
"""``scheme = "any"`` on an import: labels are taken as written, no scheme checks them."""


def import_rows(path: str | Path, *, format: str | None, rows: Sequence[TableRow] | None,
                where: Mapping[str, str] | None, scheme: str | None) -> list[TableRow]:
    """The rows a label import reads (the table, or rows already read), kept by ``where``. An unknown
    scheme or no row left is one line, before any row is checked."""
    from samples.schemes import get_scheme

    if scheme not in (None, ANY_SCHEME):
        get_scheme(scheme)
    selected = select(read_table(path, format=format) if rows is None else rows, where)
    if not selected:
        raise InputError(f"{path}: no rows" + (f" with {where}" if where else "") + "; nothing to import")
    return selected


def check_columns(rows: Sequence[TableRow], named: Mapping[str, Iterable[str | None]], *, source: str | Path) -> None:
    """Every column an option names exists in the table: one line naming the option, the missing
    column(s) and the columns that do exist (a typo must not import an annotator or judge with no labels)."""
    named = {option: list(columns) for option, columns in named.items()}
    wanted = {column for columns in named.values() for column in columns if column is not None}
    present: dict[str, None] = {}
    for row in rows:
        present.update(dict.fromkeys(row.values))
        if wanted <= present.keys():  # every named column seen (a CSV's first row): no need to read on
            return
    missing = [(option, column) for option, columns in named.items() for column in columns
               if column is not None and column not in present]
    if missing:
        what = "; ".join(f"{option}: no column {column!r}" for option, column in missing)
        raise InputError(f"{source}: {what}; its columns: {sorted(present)}")


def table_of(rows: Sequence[TableRow]) -> str | None:
    """The file the rows came from (their ``where`` without the line or key)."""
    import re

    return re.sub(r"(:\d+|\[.*)$", "", rows[0].where) if rows else None


def with_id_groups(rows: Sequence[TableRow], column: str, pattern: str | None) -> list[TableRow]:
    """Rows with the named groups of ``pattern`` (matched on ``column``) added as columns."""
    import re

    if pattern is None:
        return list(rows)
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise InputError(f"id_pattern {pattern!r}: not a regular expression ({error})") from None
    if not compiled.groupindex:
        raise InputError(f"id_pattern {pattern!r}: has no named groups (?P<name>...)")
    check_columns(rows, {"unit_column": [column]}, source=table_of(rows) or "the table")
    out = []
    for row in rows:
        found = compiled.fullmatch(label_text(row.get(column)))
        if found is None:
            raise InputError(f"{row.where}: {column} {row.get(column)!r} does not match id_pattern {pattern!r}")
        out.append(TableRow(row.where, {**row.values, **found.groupdict()}))
    return out


def table_source(path: Path) -> str:
    """Provenance of imported labels: the file's name and sha256."""
    return f"{path.name} sha256:{file_sha256(path)}"


# --- matching rows to units -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MatchColumns:
    """Which columns identify a row's unit: a unit id, a task id, or (trajectory, kind, turn)."""

    unit: str | None = None
    task: str | None = None
    trajectory: str | None = None
    kind: str | None = None
    turn: str | None = None

    def __post_init__(self) -> None:
        ways = [self.unit is not None, self.task is not None, self.trajectory is not None]
        if sum(ways) != 1:
            raise InputError("match rows to units by exactly one of --unit-column, --task-column or "
                             "--trajectory-column (with --kind-column and, for identify_turn, --turn-column)")
        if self.trajectory is not None and self.kind is None:
            raise InputError("--trajectory-column needs --kind-column (the unit kind of each row)")


@dataclass
class UnitMatcher:
    """The study's units as the import sees them (ids, kinds, trajectories, task ids from the key)."""

    layout: StudyLayout
    kinds: dict[str, str] = field(default_factory=dict)
    by_place: dict[tuple[str, str, int | None], str] = field(default_factory=dict)
    task_unit: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_study(cls, study: str | Path | StudyLayout) -> UnitMatcher:
        from samples.generation import check_generation
        from samples.jsonl import decode_json_line, iter_jsonl_lines
        from samples.tables import key_entries

        layout = StudyLayout.of(study)
        check_generation(layout, "import")
        matcher = cls(layout=layout)
        if layout.units.is_file():
            for number, line in iter_jsonl_lines(layout.units):
                row = decode_json_line(line)
                try:
                    unit, kind, trajectory = row["unit_id"], row["kind"], row["trajectory_id"]
                except (KeyError, TypeError):
                    raise InputError(f"{layout.units}:{number}: expected unit_id, kind and trajectory_id") from None
                matcher.kinds[unit] = kind
                matcher.by_place[(trajectory, kind, row.get("focus_turn"))] = unit
        if layout.key.is_file():
            for _, entry in key_entries(layout.key):
                matcher.kinds[entry.unit_id] = entry.kind
                matcher.task_unit[entry.task_id] = entry.unit_id
        if not matcher.kinds:
            raise InputError(f"{layout.root}: the study has no units ({layout.units.name}) and no sealed key; "
                             f"import units first (accord import units) or ingest trajectories")
        return matcher

    @classmethod
    def of_records(cls, layout: StudyLayout, units: Sequence[Any], key: Sequence[Any]) -> UnitMatcher:
        """The matcher of units and a key not yet published (``accord import table`` checks every label first)."""
        matcher = cls(layout=layout)
        for unit in units:
            matcher.kinds[unit.unit_id] = unit.kind
            matcher.by_place[(unit.trajectory_id, unit.kind, unit.focus_turn)] = unit.unit_id
        for entry in key:
            matcher.kinds[entry.unit_id] = entry.kind
            matcher.task_unit[entry.task_id] = entry.unit_id
        return matcher

    def knows(self, row: TableRow, columns: MatchColumns) -> bool:
        """Whether the row is about one of the study's units (False for a population row outside a
        labels-only study's units; a malformed row still raises)."""
        if columns.unit is not None:
            return identifier(row.get(columns.unit)) in self.kinds
        if columns.task is not None:
            return identifier(row.get(columns.task)) in self.task_unit
        return self._place(row, columns) in self.by_place

    def _place(self, row: TableRow, columns: MatchColumns) -> tuple[str, str, int | None]:
        trajectory, kind = identifier(row.get(columns.trajectory)), identifier(row.get(columns.kind))
        turn = row.get(columns.turn, required=False)
        if turn is not None:
            try:
                turn = int(turn)
            except (TypeError, ValueError):
                raise InputError(f"{row.where}: column {columns.turn!r}: {turn!r} is not a turn number") from None
        return trajectory, kind, turn

    def unit_of(self, row: TableRow, columns: MatchColumns) -> str:
        """The unit id a row is about; an InputError naming the row when no unit matches."""
        if columns.unit is not None:
            unit = identifier(row.get(columns.unit))
            if unit not in self.kinds:
                raise InputError(f"{row.where}: unit {unit!r} is not a unit of the study")
            return unit
        if columns.task is not None:
            task = identifier(row.get(columns.task))
            if task not in self.task_unit:
                raise InputError(f"{row.where}: task {task!r} is not in the sealed key {self.layout.key}")
            return self.task_unit[task]
        trajectory, kind, turn = place = self._place(row, columns)
        unit = self.by_place.get(place)
        if unit is None:
            raise InputError(f"{row.where}: no {kind} unit of trajectory {trajectory!r}"
                             + (f" at turn {turn}" if turn is not None else ""))
        return unit

    def task_of(self, unit: str) -> str | None:
        """The blinded task id of a sampled unit (None when the unit was not sampled)."""
        if not hasattr(self, "_unit_task"):
            self._unit_task = {u: t for t, u in self.task_unit.items()}
        return self._unit_task.get(unit)


def collect(rows: Iterable[TableRow], convert: Callable[[TableRow], Any]) -> list[Any]:
    """``convert`` every row; every failing row is listed (with its place) in one InputError, one problem
    said once: rows failing the same way are counted after the first one's place, not repeated."""
    out: list[Any] = []
    failed: dict[str, list[str]] = {}  # the problem without its row's place -> the places
    for row in rows:
        try:
            out.append(convert(row))
        except InputError as error:
            text = str(error)
            same = text.removeprefix(f"{row.where}: ")
            failed.setdefault(same, []).append(row.where if same != text else "")
    if failed:
        problems = [f"{places[0]}: {same}" if places[0] else same for same, places in failed.items()]
        problems = [p + (f" (and {len(places) - 1} more row(s) the same)" if len(places) > 1 else "")
                    for p, places in zip(problems, failed.values())]
        count = sum(len(places) for places in failed.values())
        raise InputError(f"{count} row(s) could not be imported; nothing was written", problems=problems)
    return out


def identifier(value: Any) -> str:
    """A unit, task, trajectory or cluster id cell as an id: surrounding whitespace dropped (``"u1 "`` and
    ``"u1"`` are one unit everywhere an import reads ids, as a reader of the table sees them)."""
    return str(value).strip()


def label_text(value: Any) -> str:
    """A label cell as the canonical string labels are compared by (1 and 1.0 both read "1")."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def check_label_types(rows: Sequence[tuple[str, Any]], *, column: str) -> None:
    """Refuse a label column that mixes numbers and words (``1`` beside ``"yes"``): say which rows."""
    numeric = [where for where, v in rows if isinstance(v, (int, float)) and not isinstance(v, bool)]
    textual = [where for where, v in rows if isinstance(v, str)]
    if numeric and textual:
        raise InputError(f"column {column!r} mixes numbers ({numeric[0]}) and text ({textual[0]}); "
                         f"give every label in one form")


# --- labels-only studies ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class UnitRegistration:
    units: int
    kinds: dict[str, int]
    strata: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class RegisteredUnits:
    """The units and sealed key of a labels-only study, built and checked but not yet published."""

    units: list[Any]
    key: list[Any]
    report: UnitRegistration


def register_units(study: str | Path | StudyLayout, rows: Sequence[TableRow], *, unit_column: str, kind: str | None,
                   kind_column: str | None = None, strata_columns: Sequence[str] = (),
                   cluster_column: str | None = None, replace: bool = False,
                   distinct_rows: bool = False) -> UnitRegistration:
    """Register and publish a labels-only study's units and key (``units_from_rows``, then one generation)."""
    layout = StudyLayout.of(study)
    built = units_from_rows(layout, rows, unit_column=unit_column, kind=kind, kind_column=kind_column,
                            strata_columns=strata_columns, cluster_column=cluster_column, replace=replace,
                            distinct_rows=distinct_rows)
    publish_import(layout, [(layout.units, built.units), (layout.key, built.key)])
    return built.report


def units_from_rows(study: str | Path | StudyLayout, rows: Sequence[TableRow], *, unit_column: str, kind: str | None,
                    kind_column: str | None = None, strata_columns: Sequence[str] = (),
                    cluster_column: str | None = None, replace: bool = False,
                    distinct_rows: bool = False) -> RegisteredUnits:
    """Units known only by id (with strata columns) and their sealed key: a study that starts from labels.

    ``replace`` (``accord run`` on a labels-only study, whose units come from its table
    alone) rewrites them. Each distinct unit id becomes a ``Unit`` with no text (nobody reads it here: the
    labels already exist) and a ``KeyEntry`` whose task id is derived from the unit id,
    inclusion probability 1 (every unit is in the "sample"), cluster = the cluster
    column (e.g. the trace a turn belongs to) or the unit itself. ``distinct_rows`` (a table of
    units, one row each): a row repeating an earlier one exactly is an error, never silently merged.
    Nothing is written: the caller publishes (``publish_import``).
    """
    from samples.generation import check_generation
    from samples.kinds import is_kind
    from samples.kinds import kinds as unit_kinds
    from samples.records import KeyEntry, Unit

    layout = StudyLayout.of(study)
    check_generation(layout, "import")  # finishes a killed import's commit, or deletes its temporary files
    if not replace and (layout.units.exists() or layout.key.exists()):
        raise InputError(f"{layout.root}: the study already has units ({layout.units.name} or the sealed key); "
                         f"a labels-only study registers its units once, into an empty study folder")
    if (kind is None) == (kind_column is None):
        raise InputError("give exactly one of --kind (one unit kind for every row) or --kind-column")
    if kind is not None and kind not in unit_kinds():
        raise InputError(f"--kind {kind!r}: not a unit kind; expected one of {list(unit_kinds())}")
    check_columns(rows, {"--unit-column": [unit_column], "--kind-column": [kind_column],
                         "--strata-columns": strata_columns, "--cluster-column": [cluster_column]},
                  source=table_of(rows) or layout.root)
    if distinct_rows:
        first: dict[tuple, str] = {}
        repeats = [f"{row.where} repeats {first[k]}" for row in rows
                   if first.setdefault(k := tuple(sorted((c, label_text(v)) for c, v in row.values.items())),
                                       row.where) != row.where]
        if repeats:
            raise InputError(f"{len(repeats)} exact duplicate row(s) ({'; '.join(repeats[:5])}"
                             + ("; ..." if len(repeats) > 5 else "") + "): a unit table lists each unit once; "
                             "nothing was written")
    units: dict[str, Unit] = {}

    def convert(row: TableRow) -> None:
        unit_id = identifier(row.get(unit_column))
        if not unit_id:
            raise InputError(f"{row.where}: column {unit_column!r} holds only whitespace; expected a unit id")
        unit_kind = kind if kind is not None else identifier(row.get(kind_column))
        if not is_kind(unit_kind):
            raise InputError(f"{row.where}: kind {unit_kind!r} is not a unit kind; expected one of {list(unit_kinds())}")
        strata = {name: label_text(row.get(name)) for name in strata_columns}
        cluster = identifier(row.get(cluster_column)) if cluster_column else unit_id
        unit = Unit(unit_id=unit_id, trajectory_id=cluster, kind=unit_kind, text="", strata=strata)
        known = units.setdefault(unit_id, unit)
        if known is not unit and known != unit:  # the first row of a unit is the unit: no field-wise compare
            raise InputError(f"{row.where}: unit {unit_id!r} appears with another kind, cluster or strata "
                             f"than on an earlier row")

    collect(rows, convert)
    salt = hashlib.sha256(b"accord labels-only study").digest()
    from samples.blind import task_id

    ordered = sorted(units.values(), key=lambda u: u.unit_id)
    key = [KeyEntry(task_id=task_id(salt, u.unit_id), unit_id=u.unit_id, trajectory_id=u.trajectory_id, kind=u.kind,
                    strata=u.strata, stratum="|".join(f"{k}={v}" for k, v in sorted(u.strata.items())) or "all",
                    inclusion_prob=1.0) for u in ordered]
    kinds: dict[str, int] = {}
    for unit in ordered:
        kinds[unit.kind] = kinds.get(unit.kind, 0) + 1
    return RegisteredUnits(units=ordered, key=key, report=UnitRegistration(
        units=len(ordered), kinds=dict(sorted(kinds.items())), strata=tuple(strata_columns)))


def publish_import(study: str | Path | StudyLayout, files: Sequence[tuple[Path, Sequence[Any]]], *,
                   removed: Sequence[Path] = ()) -> None:
    """Publish what an import built as one generation of the ``import`` stage (``samples.generation``):
    a failed or killed import leaves the study as it was, and a rerun starts clean."""
    from samples.generation import publishing
    from samples.jsonl import record_bytes

    layout = StudyLayout.of(study)
    with publishing(layout, "import") as generation:
        for path, records in files:
            generation.write_bytes(path, b"".join(record_bytes(record) for record in records))
        for path in removed:
            generation.remove(path)
