"""The one reader of each shared record table: the judge labels and the sealed key.

Several stages read ``judges/labels.jsonl`` (and the imported judge label files) and
``sealed/key.jsonl``: the sampler's judge strata, the runner's resume, validation, the
score, EHQ, ASA, the decision tables, status and the live view. Each reads them here,
as typed records (``samples.records.JudgeLabel``, ``KeyEntry``) with one set of error
messages (``file:line``, the field, what was expected), and keeps only its own view
(a dict per judge, a pandas table, the runner's last row per key), so no two stages can
parse the same file differently. ``tests/test_one_reader.py`` holds every other module
to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from samples.errors import InputError
from samples.jsonl import open_rows_file
from samples.records import JudgeLabel, KeyEntry

_Row = TypeVar("_Row", bound=BaseModel)


def _problem(error: ValidationError) -> str:
    """A validation error as what the row lacks: the JSON error, or the first bad field and what it needs."""
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return f"Invalid JSON: {first['msg'].removeprefix('Invalid JSON: ')}"
    field = ".".join(str(part) for part in first["loc"]) or "(record)"
    return f"field {field!r}: {first['msg']}"


def _rows(path: Path, model: type[_Row], *, torn_tail: bool) -> Iterator[tuple[int, _Row]]:
    """(line number, record) of every non-blank line; every bad line is named in one InputError at the end.

    ``torn_tail``: a last line without its newline is a write a kill interrupted (an
    append-only log, ``judges.tables``), never a finished row, so it is skipped.
    """
    problems: list[str] = []
    with open_rows_file(path, f"{model.__name__} file") as handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip() or (torn_tail and not line.endswith(b"\n")):
                    continue
                try:
                    row = model.model_validate_json(line)
                except ValidationError as error:
                    problems.append(f"{path}:{number}: not a {model.__name__} row ({_problem(error)})")
                    continue
                yield number, row
        except OSError as error:  # a folder where the file belongs reads as EISDIR here
            raise InputError(f"{path}: cannot read {model.__name__} rows: {error.strerror or error}") from None
    if problems:
        raise InputError(f"{path}: {len(problems)} bad {model.__name__} row(s)", problems=problems)


def judge_label_rows(path: str | Path, *, torn_tail: bool = False) -> Iterator[tuple[int, JudgeLabel]]:
    """(line number, JudgeLabel) of a judge labels file (the table, the label log or an imported file)."""
    return _rows(Path(path), JudgeLabel, torn_tail=torn_tail)


def key_entries(path: str | Path) -> Iterator[tuple[int, KeyEntry]]:
    """(line number, KeyEntry) of a sealed key file."""
    return _rows(Path(path), KeyEntry, torn_tail=False)
