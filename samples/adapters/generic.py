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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from samples.adapters import register_adapter
from samples.adapters.base import AdapterBase, BadRecord, FieldProblem, Item, convert, get_str, iter_source, string_list
from samples.adapters.openai_messages import messages_to_steps
from samples.errors import InputError
from samples.records import Step, Trajectory
from samples.vocabulary import infer_family

FIELDS = ("id", "agent", "backbone", "family", "dataset", "setting", "split", "question", "references",
          "final_answer", "messages")
OPTIONS = {**{f: "source column for this field" for f in FIELDS},
           **{f"const.{f}": "constant value for this field" for f in FIELDS if f not in ("id", "messages", "final_answer")}}


def _rows(path: Path) -> Iterator[tuple[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        # the csv module refuses fields over 128 KiB by default; trajectories hold longer texts
        csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
        try:
            handle = open(path, newline="", encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"{path}: file not found") from None
        with handle:
            try:
                for number, row in enumerate(csv.DictReader(handle), start=2):
                    yield f"{path}:{number}", row
            except UnicodeDecodeError as error:
                yield str(path), BadRecord(where=str(path), message=f"not UTF-8 ({error.reason} at byte {error.start})")
            except csv.Error as error:
                yield str(path), BadRecord(where=str(path), message=f"invalid CSV ({error})")
    elif suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            reader = pq.ParquetFile(path)
        except FileNotFoundError:
            raise InputError(f"{path}: file not found") from None
        except (pa.ArrowException, OSError) as error:
            raise InputError(f"{path}: not a readable Parquet file ({error})") from None
        row = 0
        for batch in reader.iter_batches(batch_size=4096):
            for record in batch.to_pylist():
                yield f"{path}[row {row}]", record
                row += 1
    else:
        yield from iter_source(path)


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
                        messages = json.loads(messages)
                    except json.JSONDecodeError as error:
                        raise FieldProblem(columns["messages"], f"a JSON message list ({error.msg})", messages) from None
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
                        references = json.loads(references)
                    except json.JSONDecodeError:
                        pass
            backbone = value(row, "backbone", "unknown")
            used = set(columns.values())
            return Trajectory(
                id=value(row, "id", None), agent=value(row, "agent", "unknown"), backbone=backbone,
                family=value(row, "family", "") or infer_family(backbone), dataset=value(row, "dataset", path.stem),
                setting=value(row, "setting", "other"), split=value(row, "split", "none"),
                question=value(row, "question", ""), references=string_list(references, "references"),
                steps=steps, final_answer=final_answer, truncated=final_answer is None,
                # Parquet cells may be dates or bytes: keep them as JSON-safe text
                metadata=json.loads(json.dumps({str(k): v for k, v in row.items() if k not in used}, default=str)),
            )

        for where, raw in _rows(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, build, raw))


register_adapter(GenericAdapter())
