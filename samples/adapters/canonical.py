"""``canonical``: accord's own ``Trajectory`` JSONL (what ``accord ingest`` writes).

Re-ingesting a canonical file validates it and rewrites it byte-identically.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import ValidationError

from samples.adapters import register_adapter
from samples.adapters.base import AdapterBase, BadRecord, Item, check_options
from samples.jsonl import iter_jsonl_lines
from samples.records import Trajectory


class CanonicalAdapter(AdapterBase):
    name = "canonical"
    summary = "accord Trajectory JSONL (samples.records.Trajectory per line)"
    options: Mapping[str, str] = {}

    def check(self, options: Mapping[str, str]) -> None:
        check_options(self.name, options, self.options)

    def convert_line(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Item:
        try:
            return Trajectory.model_validate_json(line)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(record)"
            return BadRecord(where=where, message=f"field '{field}': {first['msg']}")

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        self.check(options)
        for number, line in iter_jsonl_lines(path):
            where = f"{path}:{number}"
            yield where, self.convert_line(path, options, where, line)


register_adapter(CanonicalAdapter())
