"""What every adapter shares: the Protocol, bad-record reports and field readers.

An adapter turns one source file into a stream of ``Trajectory`` or ``BadRecord``
items. It never raises for a bad record: it yields a ``BadRecord`` naming the file,
line (or array index), field and what was expected, so ingest can report every
problem at once. Helpers here read fields with those messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec
from pydantic import ValidationError

from samples.jsonl import (
    count_newlines,
    decode_json_line,
    iter_jsonl_lines,
    json_text,
    numbered_lines,
    os_error_message,
    regular_file,
)
from samples.records import Trajectory


@dataclass(frozen=True, kw_only=True)
class BadRecord:
    """A source record that could not become a Trajectory."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


Item = Trajectory | BadRecord
Row = dict[str, Any]
"""A Trajectory as a plain dict of its fields in the model's order, valid by construction
(serialised by ``samples.jsonl.row_bytes`` byte-identically to the model)."""


# Struct rows: the fast paths' Trajectory rows (these, or an adapter's own mirror of the
# models such as the canonical adapter's). msgspec decodes a source straight into structs
# and writes them without building dicts (decoding, building and writing were each
# several times faster than with dicts); ``gc=False`` because they never hold a reference
# cycle and tracking them cost the garbage collector a large share of ingest time.
# Field order is the model's (tests/samples check it). msgspec prints floats unlike
# pydantic (1e300 vs 1e+300), so a struct row never holds a float (nor very deep
# nesting): an adapter builds one only when ``plain_json`` holds for its free-form
# values, and a dict row otherwise.

class ToolCallRow(msgspec.Struct, gc=False):
    """A ``ToolCall`` row. Adapters may decode a source's call into it, then normalise
    ``arguments`` (an object or the raw string) and ``result`` (text or None) in place."""

    name: str
    arguments: dict[str, Any] | str | None = None
    result: Any = None
    success: bool | None = None


class StepRow(msgspec.Struct, gc=False):
    """A ``Step`` row."""

    index: int
    role: str
    reasoning: str | None
    text: str | None
    tool_calls: list[ToolCallRow]
    is_final: bool


class TrajectoryRow(msgspec.Struct, gc=False):
    """A ``Trajectory`` row, valid by construction (written by ``samples.jsonl.row_bytes``)."""

    id: str
    agent: str
    backbone: str
    family: str
    dataset: str
    setting: str
    split: str
    question: str
    references: list[str]
    steps: list[StepRow]
    final_answer: str | None
    truncated: bool
    metadata: dict[str, Any]


_PLAIN_DEPTH = 64
"""Deepest nesting a struct row holds: far inside what pydantic parses (200 levels) and writes (255)."""


def plain_json(value: Any, depth: int = _PLAIN_DEPTH) -> bool:
    """True when ``value`` (decoded JSON) holds no float and nests at most ``depth`` levels:
    then msgspec writes it exactly as pydantic does, and the models could read it back."""
    kind = type(value)
    if kind is dict:
        items = value.values()
    elif kind is list:
        items = value
    else:
        return kind is not float
    if depth == 0:
        return False
    for item in items:
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is float or not plain_json(item, depth - 1):
            return False
    return True


@runtime_checkable
class Adapter(Protocol):
    """Reads one source file into ``Trajectory | BadRecord`` items, in file order.

    ``locate`` yields each item with ``where``, the record's place ("file:line" or
    "file[index]"), which ingest needs to name a repeated id; ``read`` yields the
    items alone (``AdapterBase`` derives it from ``locate``).
    ``options`` are adapter-specific ``key=value`` strings from the command line
    (e.g. a column mapping); an adapter rejects options it does not know.
    """

    name: str
    summary: str
    options: Mapping[str, str]

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]: ...

    def read(self, path: Path, options: Mapping[str, str]) -> Iterator[Item]: ...


class AdapterBase:
    """Mixin for adapters: ``read`` is ``locate`` without the places."""

    def read(self, path: Path, options: Mapping[str, str]) -> Iterator[Item]:
        return (item for _, item in self.locate(path, options))  # type: ignore[attr-defined]


@runtime_checkable
class LineAdapter(Adapter, Protocol):
    """An adapter whose JSONL records are independent lines: ingest may convert them
    on several processes (``workers``), in order, with identical output."""

    def check(self, options: Mapping[str, str]) -> None: ...

    def convert_line(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Item: ...


@runtime_checkable
class RowAdapter(LineAdapter, Protocol):
    """A line adapter that can also give each JSONL record as a ``Row`` (or a ``Trajectory``,
    e.g. when only the model can name the problem): ingest then builds no model instances,
    which are most of the cost of converting a record."""

    def convert_row(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Row | Item: ...


@runtime_checkable
class BlockAdapter(RowAdapter, Protocol):
    """A row adapter that converts a whole block of JSONL lines at once (one decoder call
    for the block in the usual case): ingest then prefers ``convert_block``.

    It gives ``(line number, item)`` for every non-blank line, in order, exactly what
    ``convert_row`` gives line by line (a struct row standing for the same row or model).
    """

    def convert_block(self, path: Path, options: Mapping[str, str], first: int,
                      block: bytes) -> list[tuple[int, msgspec.Struct | Row | Item]]: ...


class FieldProblem(ValueError):
    """A field is missing or has the wrong type; ``field`` names it."""

    def __init__(self, field: str, expected: str, got: Any = None, *, missing: bool = False) -> None:
        self.field = field
        detail = "missing" if missing else f"got {type(got).__name__} {_short(got)}"
        super().__init__(f"field '{field}': expected {expected}, {detail}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def get_str(obj: Mapping[str, Any], key: str, *, required: bool = True, default: str | None = None,
            field: str | None = None, numbers: bool = False) -> str | None:
    """A string field; ``numbers=True`` also accepts a number (ids stored as ints) as its decimal text."""
    name = field or key
    if key not in obj or obj[key] is None:
        if required:
            raise FieldProblem(name, "a string", missing=True)
        return default
    value = obj[key]
    if isinstance(value, str):
        return value
    if numbers and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise FieldProblem(name, "a string or a number" if numbers else "a string", value)


def get_list(obj: Mapping[str, Any], key: str, *, required: bool = True, field: str | None = None) -> list[Any]:
    name = field or key
    if key not in obj or obj[key] is None:
        if required:
            raise FieldProblem(name, "a list", missing=True)
        return []
    value = obj[key]
    if not isinstance(value, list):
        raise FieldProblem(name, "a list", value)
    return value


def get_dict(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldProblem(field, "a JSON object", value)
    return value


def string_list(value: Any, field: str) -> list[str]:
    """References and similar: a string, a number or a list of them -> list of strings."""
    if value is None:
        return []
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    raise FieldProblem(field, "a string or a list of strings", value)


def text_of(value: Any, field: str) -> str | None:
    """Message content: a string, None, or OpenAI-style parts [{"type": "text", "text": ...}]."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for i, part in enumerate(value):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise FieldProblem(f"{field}[{i}]", "a string or a {'text': ...} part", part)
        return "\n".join(parts)
    raise FieldProblem(field, "a string or a list of text parts", value)


def parse_arguments(value: Any, field: str) -> dict[str, Any] | str:
    """Tool-call arguments: an object, or a JSON string decoded when it holds an object."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json_text(value)
        except ValueError:  # not JSON (NaN and Infinity are not either): the string as the agent wrote it
            return value
        return decoded if isinstance(decoded, dict) else value
    raise FieldProblem(field, "an object or a JSON string", value)


def result_text(value: Any) -> str | None:
    """A tool result as the agent saw it: strings verbatim, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


_CONVERSION_ERRORS = (FieldProblem, ValidationError, TypeError, ValueError, KeyError, AttributeError, IndexError)


def convert(where: str, build: Callable[[Any], Row | Trajectory], raw: Any) -> Row | Item:
    """Run one record's conversion; a problem becomes a BadRecord, never an exception."""
    try:
        if not isinstance(raw, dict):
            return BadRecord(where=where, message=f"expected a JSON object, got {type(raw).__name__}")
        return build(raw)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(record)"
        return BadRecord(where=where, message=f"field '{field}': {first['msg']}")
    except RecursionError:
        return BadRecord(where=where, message="record nested too deeply")
    except _CONVERSION_ERRORS as error:
        return BadRecord(where=where, message=str(error) or type(error).__name__)


def iter_source(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, parsed record) for a .jsonl file (line by line) or a .json document.

    A .json file holding an array yields its elements (``file[i]``); an object
    yields itself. Unparseable lines/documents yield a ``BadRecord`` in place of
    the record.
    """
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for number, line in iter_jsonl_lines(path):
            where = f"{path}:{number}"
            try:
                yield where, decode_json_line(line)
            except ValueError as error:
                yield where, BadRecord(where=where, message=str(error))
        return
    from samples.errors import InputError

    regular_file(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise InputError(os_error_message(path, error)) from None
    try:
        document = decode_json_line(raw)
    except ValueError as error:
        yield str(path), BadRecord(where=str(path), message=str(error))
        return
    if isinstance(document, list):
        for index, record in enumerate(document):
            yield f"{path}[{index}]", record
    else:
        yield str(path), document


def line_item(where: str, line: bytes, build: Callable[[Any], Row | Trajectory]) -> Row | Item:
    """One JSONL line through ``build``: undecodable lines become a BadRecord too."""
    try:
        raw = decode_json_line(line)
    except ValueError as error:
        return BadRecord(where=where, message=str(error))
    return convert(where, build, raw)


def _utf8(data: bytes) -> bool:
    """msgspec does not check UTF-8 in the keys and values a struct skips; the careful paths refuse bad UTF-8."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def block_items(first: int, block: bytes, fast_block: Callable[[bytes], list[Any] | None],
                fast_line: Callable[[bytes], Any], careful: Callable[[int, bytes], Any]) -> list[tuple[int, Any]]:
    """``BlockAdapter.convert_block`` from an adapter's three ways of converting.

    ``fast_block`` decodes the whole block at once (a row, or None where the careful way
    must decide, per line; None for the block when any line does not decode);
    ``fast_line`` does the same for one line, for blocks that need the line reader (a
    line that does not decode, blank lines); ``careful(number, line)`` converts a line
    the fast ways left, naming its problems.
    """
    numbered = None
    rows = fast_block(block) if _utf8(block) else None
    if rows is not None and len(rows) != count_newlines(block) + (not block.endswith(b"\n")):
        rows = None  # blank lines, which the block decoder skips: numbering needs the line reader
    if rows is None:
        numbered = list(numbered_lines(first, block))
        rows = [fast_line(line) if _utf8(line) else None for _, line in numbered]
    items = []
    for offset, fast in enumerate(rows):
        if fast is not None:
            items.append((first + offset if numbered is None else numbered[offset][0], fast))
            continue
        if numbered is None:
            numbered = list(numbered_lines(first, block))
        number, line = numbered[offset]
        items.append((number, careful(number, line)))
    return items


def check_options(adapter: str, options: Mapping[str, str], allowed: Mapping[str, str]) -> None:
    from samples.errors import InputError

    unknown = sorted(set(options) - set(allowed))
    if unknown:
        known = ", ".join(f"{k} ({v})" for k, v in sorted(allowed.items())) or "none"
        raise InputError(f"adapter {adapter!r}: unknown option(s) {unknown}; known: {known}")
