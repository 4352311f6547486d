"""Write the human labels table (``HumanLabel`` rows) as CSV, Parquet or JSONL.

One column per ``HumanLabel`` field, rows sorted by (task_id, role, annotator), so
the same labels always give the same file whichever backend produced them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from samples import HumanLabel, InputError, atomic_writer

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
    import io

    import pandas as pd

    frame = pd.DataFrame([row.model_dump() for row in rows], columns=list(COLUMNS))
    frame["first_turn"] = frame["first_turn"].astype("Int64")
    frame["seconds_spent"] = frame["seconds_spent"].astype("Float64")
    frame["unsure"] = frame["unsure"].astype(bool)
    buffer = io.BytesIO()
    if format == "csv":
        buffer.write(frame.to_csv(index=False).encode("utf-8"))
    else:
        frame.to_parquet(buffer, index=False)
    with atomic_writer(path) as handle:  # 0600 in a 0700 folder like the JSONL: labels name people
        handle.write(buffer.getvalue())
    return path


def check_not_fewer(path: Path, labels: int, *, source: str, study: Path, allowed: bool) -> None:
    """Refuse to rewrite the study's labels file from a store holding fewer labels than the file: a
    changed store location (``ACCORD_STORE_URL``, ``[annotation] options.store``) opens another, emptier
    store, and rewriting would drop the labels people gave. ``allowed``: the user said so (``--store-moved``)."""
    if allowed or not path.is_file():
        return
    with open(path, "rb") as handle:
        held = sum(1 for line in handle if line.strip())
    if labels < held:
        raise InputError(f"{path} holds {held} labels but the store {source} holds {labels}: the store's location "
                         f"changed? move the labels into it ({copy_command(study, source)}), or pass "
                         f"--store-moved to replace the file with the store's labels")


def copy_command(study: Path, target: str) -> str:
    """The command that moves a study's labels from its SQLite file into ``target`` (a redacted URL)."""
    return f"accord store copy --study {study}" + (f" --to {target}" if "://" in target else "")
