"""Reading long labels files (CSV, JSONL, Parquet, a DataFrame) into factorised columns with line numbers.

Reading CSV uses only ``csv`` + numpy so the CLI starts fast (JSONL lines go through
``samples.jsonl.decode_json_line``, the project's one JSON line reader); pandas and pyarrow
are imported only for DataFrames, Parquet and CSV files above ``_ARROW_CSV_BYTES``.
``agreement.table.load_labels`` turns the columns into ``RatingData``.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from samples import InputError


class _Factorizer:
    """Incremental value -> code map; hashing each distinct value once keeps 10^6-row files fast."""

    def __init__(self, role: str, source: str) -> None:
        self.index: dict[Any, int] = {}
        self.role, self.source = role, source

    def add(self, values: list[Any]) -> np.ndarray:
        index = self.index
        try:
            for value in dict.fromkeys(values):
                if value not in index:
                    index[value] = len(index)
        except TypeError:
            raise InputError(f"{self.source}: {self.role} values must be text or numbers, got a nested value") from None
        return np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))

    @property
    def uniques(self) -> list[Any]:
        return list(self.index)



def _column_index(header: Sequence[str], name: str, role: str, source: str) -> int:
    try:
        return list(header).index(name)
    except ValueError:
        raise InputError(
            f"{source}: missing {role} column {name!r} (columns: {', '.join(map(str, header))})"
        ) from None


_ROLES = ("unit", "rater", "label", "cluster", "weight", "stratum")
# Rows parsed per batch: bounds the Python strings alive at once for 10^6-unit files.
_BATCH = 200_000


class _LongColumns:
    """Factorised columns of a long table, filled batch by batch, with source line numbers."""

    def __init__(self, names: Mapping[str, str | None], source: str, where_kind: str) -> None:
        self.names, self.source, self.where_kind = names, source, where_kind
        self.factorizers = {role: _Factorizer(role, source) for role in _ROLES if names.get(role)}
        self.codes: dict[str, list[np.ndarray]] = {role: [] for role in self.factorizers}
        self.lines: list[np.ndarray] = []

    def add(self, columns: Mapping[str, list[Any]], lines: np.ndarray) -> None:
        for role, factorizer in self.factorizers.items():
            self.codes[role].append(factorizer.add(columns[role]))
        self.lines.append(lines)

    def finish(self) -> tuple[dict[str, tuple[np.ndarray, list[Any]]], np.ndarray]:
        columns = {
            role: (np.concatenate(self.codes[role]) if self.codes[role] else np.zeros(0, dtype=np.int64), f.uniques)
            for role, f in self.factorizers.items()
        }
        lines = np.concatenate(self.lines) if self.lines else np.zeros(0, dtype=np.int64)
        return columns, lines


# Above this size CSV goes through pyarrow's C++ reader: 3 x 10^6 rows took 10-15 s of CPU
# with the csv module and 1.9 s with pyarrow (import included) here. Small files keep
# the csv module so the CLI does not pay pyarrow's ~0.2 s import.
_ARROW_CSV_BYTES = 4 << 20


def _read_csv(path: Path, names: Mapping[str, str | None]) -> _LongColumns:
    if path.stat().st_size > _ARROW_CSV_BYTES:
        return _read_csv_arrow(path, names)
    return _read_csv_strict(path, names)


def _read_csv_strict(path: Path, names: Mapping[str, str | None]) -> _LongColumns:
    """The csv module's strict reader: every malformed row refused with its line, bad UTF-8 with its byte."""
    try:
        return _read_csv_rows(path, names)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except csv.Error as error:
        raise _csv_error(path, error) from None


def _read_csv_rows(path: Path, names: Mapping[str, str | None]) -> _LongColumns:
    table = _LongColumns(names, str(path), "line")
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, strict=True)
        header = next(reader, None)
        if header is None:
            raise InputError(f"{path}: the file is empty (no header row)")
        positions = {role: _column_index(header, col, role, str(path)) for role, col in names.items() if col}
        width = len(header)
        first_line = 2
        while True:
            rows = list(itertools.islice(reader, _BATCH))
            if not rows:
                break
            lines: np.ndarray = np.arange(first_line, first_line + len(rows))
            first_line += len(rows)
            widths = set(map(len, rows))
            if widths != {width}:
                keep = [k for k, row in enumerate(rows) if row]
                bad = next((k for k in keep if len(rows[k]) != width), None)
                if bad is not None:
                    raise InputError(
                        f"{path}, line {lines[bad]}: {len(rows[bad])} fields, expected {width} as in the header"
                    )
                rows, lines = [rows[k] for k in keep], lines[keep]
            table.add({role: [row[p] for row in rows] for role, p in positions.items()}, lines)
    return table


def _not_utf8(path: Path) -> InputError:
    """The first byte of ``path`` that is not UTF-8, with its line (read again in blocks: error path only)."""
    offset, line, carry = 0, 1, b""
    with path.open("rb") as handle:
        while True:
            block = handle.read(1 << 20)
            data, carry = carry + block, b""
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as error:
                if not (block and error.reason == "unexpected end of data"):
                    line += data.count(b"\n", 0, error.start)
                    return InputError(f"{path}, line {line}: not UTF-8 ({error.reason}: byte 0x{data[error.start]:02x} "
                                      f"at offset {offset + error.start})")
                data, carry = data[:error.start], data[error.start:]  # a character cut by the block end
            offset += len(data)
            line += data.count(b"\n")
            if not block:
                return InputError(f"{path}: not UTF-8")


def _csv_error(path: Path, error: csv.Error) -> InputError:
    """The csv module's refusal with the line of the row (read again: error path only)."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, strict=True)
        start = 1
        try:
            for _ in reader:
                start = reader.line_num + 1
        except csv.Error as again:
            if str(again) == "unexpected end of data":
                return InputError(f"{path}, line {start}: a quoted field is never closed (the file ends inside quotes)")
            return InputError(f"{path}, line {reader.line_num}: malformed CSV ({again})")
    return InputError(f"{path}: malformed CSV ({error})")


def _odd_quotes(path: Path) -> bool:
    """An odd number of double quotes: some quoted field is never closed (each field opens and closes
    one, and quotes inside are doubled). pyarrow's reader takes such a field to the end of the file."""
    count = 0
    with path.open("rb") as handle:  # 1 MB blocks: 0.06 s on the 81 MB, 3 x 10^6-row benchmark file
        while block := handle.read(1 << 20):
            count += block.count(b'"')
    return count % 2 == 1


def _read_csv_arrow(path: Path, names: Mapping[str, str | None]) -> _LongColumns:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if _odd_quotes(path):  # the csv module refuses it with the line (or reads it the same way)
        return _read_csv_strict(path, names)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), None)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    if header is None:
        raise InputError(f"{path}: the file is empty (no header row)")
    wanted = {role: col for role, col in names.items() if col}
    for role, col in wanted.items():
        _column_index(header, col, role, str(path))
    try:
        arrow = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(use_threads=False),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(dict.fromkeys(wanted.values())),
                column_types={col: pa.string() for col in wanted.values()},
            ),
        )
    except pa.ArrowInvalid as error:
        if "invalid UTF8" in str(error):
            raise _not_utf8(path) from None
        raise InputError(f"{path}: {str(error).splitlines()[0]}") from None
    table = _LongColumns(names, str(path), "row")
    for role, col in wanted.items():
        encoded = arrow.column(col).combine_chunks().dictionary_encode()
        table.factorizers[role].index = {v: i for i, v in enumerate(encoded.dictionary.to_pylist())}
        table.codes[role].append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    table.lines.append(np.arange(1, arrow.num_rows + 1))
    return table


def _read_jsonl(path: Path, names: Mapping[str, str | None]) -> _LongColumns:
    from samples import decode_json_line, iter_jsonl_lines

    wanted = {role: col for role, col in names.items() if col}
    table = _LongColumns(names, str(path), "line")
    batch: dict[str, list[Any]] = {role: [] for role in wanted}
    lines: list[int] = []
    for line_number, line in iter_jsonl_lines(path):
        try:
            record = decode_json_line(line)  # refuses bad UTF-8 and NaN/Infinity, which JSON has not
        except ValueError as error:
            raise InputError(f"{path}, line {line_number}: {error}") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}, line {line_number}: expected a JSON object, got {type(record).__name__}")
        for role, col in wanted.items():
            if col in record:
                batch[role].append(record[col])
            elif role == "label":
                batch[role].append(None)
            else:
                raise InputError(f"{path}, line {line_number}: missing {role} field {col!r}")
        lines.append(line_number)
        if len(lines) >= _BATCH:
            table.add(batch, np.asarray(lines))
            batch, lines = {role: [] for role in wanted}, []
    if lines:
        table.add(batch, np.asarray(lines))
    return table


def _read_frame(frame: Any, names: Mapping[str, str | None], source: str) -> _LongColumns:
    header = [str(c) for c in frame.columns]
    table = _LongColumns(names, source, "row")
    columns = {
        role: frame.iloc[:, _column_index(header, col, role, source)].tolist() for role, col in names.items() if col
    }
    table.add(columns, np.arange(1, len(frame) + 1))
    return table
