"""Write the human labels table (``HumanLabel`` rows) as CSV, Parquet or JSONL.

One column per ``HumanLabel`` field, rows sorted by (task_id, role, annotator), so
the same labels always give the same file whichever backend produced them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from annotate.records import HumanLabel
from samples.errors import InputError
from samples.jsonl import atomic_writer

EXPORT_FORMATS: tuple[str, ...] = ("csv", "parquet", "jsonl")
COLUMNS: tuple[str, ...] = tuple(HumanLabel.model_fields)


def export_labels(labels: Sequence[HumanLabel], path: str | Path, *, format: str) -> Path:
    """Write ``labels`` to ``path`` in ``format``; returns the path written."""
    if format not in EXPORT_FORMATS:
        raise InputError(f"--format {format!r} is not supported; expected one of {list(EXPORT_FORMATS)}")
    path = Path(path)
    rows = sorted(labels, key=lambda row: (row.task_id, row.role, row.annotator))
    if format == "jsonl":
        with atomic_writer(path) as handle:  # owner-only, never half-written
            handle.write("".join(row.model_dump_json() + "\n" for row in rows).encode("utf-8"))
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    import pandas as pd

    frame = pd.DataFrame([row.model_dump() for row in rows], columns=list(COLUMNS))
    frame["first_turn"] = frame["first_turn"].astype("Int64")
    frame["seconds_spent"] = frame["seconds_spent"].astype("Float64")
    frame["unsure"] = frame["unsure"].astype(bool)
    if format == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path
