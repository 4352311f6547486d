"""``canonical``: accord's own ``Trajectory`` JSONL (what ``accord ingest`` writes).

Re-ingesting a canonical file validates it and rewrites it byte-identically.

Fast path: msgspec decodes a whole block into structs that mirror the models field for
field (same order, defaults and forbidden extra keys, strict types); a record they
accept, with valid setting, split and step indexes and no float in its free-form
values, is written as decoded. Anything else goes through the model, which names the
problem (tests/samples/test_fast_rows.py checks the two agree).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec
from pydantic import ValidationError

from samples.adapters import register_adapter
from samples.adapters.base import AdapterBase, BadRecord, Item, block_items, check_options, plain_json
from samples.jsonl import decode_json_line, iter_jsonl_lines
from samples.records import SETTINGS, SPLITS, Trajectory


class _ToolCall(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    name: str
    arguments: dict[str, Any] | str = {}
    result: str | None = None
    success: bool | None = None


class _Step(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    index: int
    role: str
    reasoning: str | None = None
    text: str | None = None
    tool_calls: list[_ToolCall] = []
    is_final: bool = False


class _Trajectory(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    id: str
    agent: str
    backbone: str
    family: str
    dataset: str
    setting: str = "other"
    split: str = "none"
    question: str = ""
    references: list[str] = []
    steps: list[_Step] = []
    final_answer: str | None = None
    truncated: bool = False
    metadata: dict[str, Any] = {}


_DECODER = msgspec.json.Decoder(_Trajectory)


def _valid(record: _Trajectory) -> _Trajectory | None:
    """The record when the model would accept it as decoded (and msgspec writes it as the model does)."""
    if record.setting not in SETTINGS or record.split not in SPLITS or not plain_json(record.metadata):
        return None
    for step in record.steps:
        if step.index < 0:
            return None
        for call in step.tool_calls:
            if type(call.arguments) is dict and not plain_json(call.arguments):
                return None
    return record


def _line_row(line: bytes) -> _Trajectory | None:
    try:
        return _valid(_DECODER.decode(line))
    except (msgspec.DecodeError, RecursionError):
        return None


def _block_rows(block: bytes) -> list[_Trajectory | None] | None:
    try:
        return [_valid(record) for record in _DECODER.decode_lines(block)]
    except (msgspec.DecodeError, RecursionError):
        return None


class CanonicalAdapter(AdapterBase):
    name = "canonical"
    summary = "accord Trajectory JSONL (samples.records.Trajectory per line)"
    options: Mapping[str, str] = {}

    def check(self, options: Mapping[str, str]) -> None:
        check_options(self.name, options, self.options)

    def convert_line(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Item:
        try:  # decoded first: pydantic's own JSON parser reads NaN and Infinity, which JSON lacks
            return Trajectory.model_validate(decode_json_line(line))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(record)"
            return BadRecord(where=where, message=f"field '{field}': {first['msg']}")
        except ValueError as error:
            return BadRecord(where=where, message=str(error))
        except RecursionError:
            return BadRecord(where=where, message="record nested too deeply")

    convert_row = convert_line

    def convert_block(self, path: Path, options: Mapping[str, str], first: int,
                      block: bytes) -> list[tuple[int, _Trajectory | Item]]:
        return block_items(first, block, _block_rows, _line_row,
                           lambda number, line: self.convert_line(path, options, f"{path}:{number}", line))

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        self.check(options)
        for number, line in iter_jsonl_lines(path):
            where = f"{path}:{number}"
            yield where, self.convert_line(path, options, where, line)


register_adapter(CanonicalAdapter())
