"""One row of a label table: the record every table reader returns (``samples.imports`` and the adapters'
label-table formats, such as ``samples.adapters.inspect_logs``), below both so neither imports the other."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from samples.errors import InputError


@dataclass(frozen=True)
class TableRow:
    """One row of a label table and where it came from (``file:line`` or ``file[key]``)."""

    where: str
    values: Mapping[str, Any]

    def get(self, column: str | None, *, required: bool = True) -> Any:
        """The cell of ``column``; a missing or empty required cell is an InputError naming the row."""
        if column is None:
            return None
        value = self.values.get(column)
        if value.__class__ is str and value:  # the common cell, asked per row and column
            return value
        empty = value is None or (isinstance(value, float) and math.isnan(value)) or value == ""
        if empty and required:
            if column not in self.values:
                raise InputError(f"{self.where}: no column {column!r}; columns: {sorted(self.values)}")
            raise InputError(f"{self.where}: column {column!r} is empty")
        return None if empty else value
