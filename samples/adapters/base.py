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

from pydantic import ValidationError

from samples.jsonl import decode_json_line, iter_jsonl_lines
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
            decoded = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
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

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder; expected a file") from None
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


def check_options(adapter: str, options: Mapping[str, str], allowed: Mapping[str, str]) -> None:
    from samples.errors import InputError

    unknown = sorted(set(options) - set(allowed))
    if unknown:
        known = ", ".join(f"{k} ({v})" for k, v in sorted(allowed.items())) or "none"
        raise InputError(f"adapter {adapter!r}: unknown option(s) {unknown}; known: {known}")
