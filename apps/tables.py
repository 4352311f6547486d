"""Terminal tables whose names a person must type stay whole at 80 columns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def name_column(table: Any, header: str, values: Iterable[str]) -> None:
    """A rich column that never truncates or wraps its values (judge, prompt, annotator, unit kind names): at least
    as wide as the longest one, so the other columns wrap instead."""
    width = max([len(header), *(len(line) for value in values for line in str(value).splitlines())])
    table.add_column(header, no_wrap=True, min_width=width, overflow="fold")
