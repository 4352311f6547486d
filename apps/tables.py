"""Terminal tables whose names a person must type stay whole at 80 columns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def name_column(table: Any, header: str, values: Iterable[str]) -> None:
    """A rich column that never truncates or wraps its values (judge, prompt, annotator, unit kind names): at least
    as wide as the longest one, so the other columns wrap instead."""
    width = max([len(header), *(len(line) for value in values for line in str(value).splitlines())])
    table.add_column(header, no_wrap=True, min_width=width, overflow="fold")


def print_rows(console: Any, title: str, name_header: str, columns: list[str], rows: list[list[str]]) -> None:
    """A table of named rows when every column fits the terminal whole; otherwise one block per row ("column:
    value" lines under the name), since squeezing the columns would cut their values to an ellipsis."""
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(title=title)
    name_column(table, name_header, [row[0] for row in rows])
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    if Measurement.get(console, console.options.update(max_width=1_000_000), table).minimum <= console.width:
        console.print(table)
        return
    console.print(title, markup=False, highlight=False)
    for name, *values in rows:
        console.print(f"{name_header} {name}", markup=False, highlight=False, soft_wrap=True)
        for column, value in zip(columns, values, strict=True):
            console.print(f"  {column}: {value}", markup=False, highlight=False, soft_wrap=True)
