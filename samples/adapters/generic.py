"""``generic``: JSONL, CSV or Parquet rows with a column mapping.

Options map canonical fields to source columns, ``<field>=<column>``, or set a
constant, ``const.<field>=<value>``. Fields: id (required), agent, backbone,
family, dataset, setting, split, question, references, final_answer, messages.
``messages`` names a column holding an OpenAI message list (a list or its JSON
text), converted as ``openai-messages`` does; otherwise ``final_answer`` becomes
a single final step (one of the two is required). Unmapped columns go to
``metadata``. Parquet is read batch by batch and CSV row by row, so memory stays
flat in file size.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from samples.adapters import register_adapter
from samples.adapters.base import (
    AdapterBase,
    BadRecord,
    FieldProblem,
    Item,
    convert,
    get_str,
    iter_source,
    string_list,
)
from samples.adapters.openai_messages import messages_to_steps
from samples.errors import InputError
from samples.jsonl import json_text, os_error_message, regular_file
from samples.records import Step, Trajectory
from samples.vocabulary import infer_family

FIELDS = ("id", "agent", "backbone", "family", "dataset", "setting", "split", "question", "references",
          "final_answer", "messages")
OPTIONS = {**{f: "source column for this field" for f in FIELDS},
           **{f"const.{f}": "constant value for this field" for f in FIELDS if f not in ("id", "messages", "final_answer")}}


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv_rows(path)
    elif suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            reader = pq.ParquetFile(path)
        except OSError as error:
            if isinstance(error, FileNotFoundError | IsADirectoryError | PermissionError):
                raise InputError(os_error_message(path, error)) from None
            raise InputError(f"{path}: not a readable Parquet file ({error})") from None
        except pa.ArrowException as error:
            raise InputError(f"{path}: not a readable Parquet file ({error})") from None
        row = 0
        for batch in reader.iter_batches(batch_size=4096):
            for record in batch.to_pylist():
                yield f"{path}[row {row}]", record
                row += 1
    else:
        yield from iter_source(path)


def _csv_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """CSV rows as {header: cell}, named by the line they end on. A row with more or fewer cells
    than the header is a bad record (the csv module would pad or fold it silently); an unterminated
    quote or a repeated header name stops the file with its line."""
    # the csv module refuses fields over 128 KiB by default; trajectories hold longer texts
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    regular_file(path)
    try:
        handle = open(path, newline="", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as error:
        raise InputError(os_error_message(path, error)) from None
    with handle:
        reader = csv.reader(handle, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                return
            repeated = sorted({name for name in header if header.count(name) > 1})
            if repeated:
                yield f"{path}:1", BadRecord(where=f"{path}:1", message=f"header names {repeated} more than once")
                return
            for cells in reader:
                where = f"{path}:{reader.line_num}"
                if not cells:
                    continue  # a blank line
                if len(cells) != len(header):
                    yield where, BadRecord(where=where, message=f"row has {len(cells)} cell(s); the header has "
                                                                f"{len(header)} (a stray or missing comma, or a quote?)")
                    continue
                yield where, dict(zip(header, cells, strict=True))
        except UnicodeDecodeError as error:
            yield str(path), BadRecord(where=str(path), message=f"not UTF-8 ({error.reason} at byte {error.start})")
        except csv.Error as error:
            where = f"{path}:{reader.line_num}"
            yield where, BadRecord(where=where, message=f"invalid CSV ({error}; an unterminated quote?)")


def _json_cells(row: dict[str, Any], used: set[str]) -> dict[str, Any]:
    """Unmapped cells as JSON-safe metadata (Parquet dates or bytes as text); NaN is refused, naming its column."""
    cells = {}
    for key, value in row.items():
        if key in used:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise FieldProblem(str(key), "a finite number or null (JSON has no NaN or infinity)", value)
        cells[str(key)] = value
    try:
        return json.loads(json.dumps(cells, default=str, allow_nan=False))
    except ValueError:
        raise FieldProblem("metadata", "cells without NaN or infinity (inside lists or maps too)", None) from None


def _mapping(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InputError(f"adapter 'generic': unknown option(s) {unknown}; map fields as <field>=<column> or "
                         f"const.<field>=<value>, fields: {list(FIELDS)}")
    columns = {k: v for k, v in options.items() if not k.startswith("const.")}
    constants = {k[len("const."):]: v for k, v in options.items() if k.startswith("const.")}
    if "id" not in columns:
        raise InputError("adapter 'generic': option 'id=<column>' is required (the column holding the run id)")
    if "messages" not in columns and "final_answer" not in columns:
        raise InputError("adapter 'generic': map 'messages=<column>' or 'final_answer=<column>'")
    return columns, constants


class GenericAdapter(AdapterBase):
    name = "generic"
    summary = "JSONL / CSV / Parquet rows with a column mapping (<field>=<column>, const.<field>=<value>)"
    options = OPTIONS

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        columns, constants = _mapping(options)

        def value(row: dict[str, Any], field: str, default: str | None) -> str | None:
            if field in columns:
                if columns[field] not in row:
                    raise FieldProblem(columns[field], f"a column (mapped to '{field}')", missing=True)
                return get_str(row, columns[field], required=default is None, default=default, numbers=True)
            return constants.get(field, default)

        def build(row: dict[str, Any]) -> Trajectory:
            if "messages" in columns:
                messages = row.get(columns["messages"])
                if isinstance(messages, str):
                    try:
                        messages = json_text(messages)
                    except ValueError as error:
                        raise FieldProblem(columns["messages"], f"a JSON message list ({error})", messages) from None
                if not isinstance(messages, list):
                    raise FieldProblem(columns["messages"], "a message list", messages)
                steps, final_answer = messages_to_steps(messages, columns["messages"])
            else:
                final_answer = value(row, "final_answer", None)
                steps = [Step(index=0, role="assistant", text=final_answer, is_final=True)]
            references: Any = constants.get("references")
            if "references" in columns:
                references = row.get(columns["references"])
                if isinstance(references, str) and references.startswith("["):
                    try:
                        references = json_text(references)
                    except ValueError:
                        pass  # a reference that starts with "[" but is no JSON list: kept as text
            backbone = value(row, "backbone", "unknown")
            used = set(columns.values())
            return Trajectory(
                id=value(row, "id", None), agent=value(row, "agent", "unknown"), backbone=backbone,
                family=value(row, "family", "") or infer_family(backbone), dataset=value(row, "dataset", path.stem),
                setting=value(row, "setting", "other"), split=value(row, "split", "none"),
                question=value(row, "question", ""), references=string_list(references, "references"),
                steps=steps, final_answer=final_answer, truncated=final_answer is None,
                metadata=_json_cells(row, used),
            )

        for where, raw in _rows(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, build, raw))


register_adapter(GenericAdapter())
