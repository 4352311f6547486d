"""Ingest: source files -> ``trajectories.jsonl`` (+ ``units.jsonl``) and ``ingest_manifest.json``.

Records stream from the adapter straight into temporary files, in blocks of a few
MB, so memory stays flat in input size (JSONL inputs of line-based adapters can be
converted on several processes, with the same output bytes). Every bad record is
collected; unless the caller asked to skip bad records, nothing is written and one
``InputError`` lists them all (file, line, field, what was expected). Skipped
records are counted and listed in the manifest.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from samples.adapters import BadRecord, get_adapter
from samples.adapters.base import LineAdapter, Row, RowAdapter
from samples.canonical import file_sha256
from samples.errors import InputError
from samples.jsonl import (
    atomic_writer,
    iter_jsonl_blocks,
    numbered_lines,
    record_bytes,
    row_bytes,
    write_json,
)
from samples.records import UNIT_KINDS, Trajectory
from samples.units import unit_rows

TRAJECTORIES_FILE = "trajectories.jsonl"
UNITS_FILE = "units.jsonl"
MANIFEST_FILE = "ingest_manifest.json"
INPUT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".parquet")


def expand_inputs(inputs: Sequence[str | Path]) -> list[Path]:
    """Files and folders -> the input files, folders searched recursively in sorted order."""
    files: list[Path] = []
    for name in inputs:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in INPUT_SUFFIXES)
            if not found:
                raise InputError(f"{path}: folder holds no {', '.join(INPUT_SUFFIXES)} files")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: input not found")
    return files


@dataclass(frozen=True, kw_only=True)
class IngestResult:
    """What an ingest wrote and skipped (the manifest's content)."""

    n_trajectories: int
    units_by_kind: dict[str, int]
    skipped_units: dict[str, dict[str, int]]
    bad_records: list[str] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)

    def manifest(self, *, adapter: str, options: Mapping[str, str], kinds: Sequence[str],
                 metadata_strata: Sequence[str]) -> dict[str, Any]:
        return {
            "adapter": adapter, "options": dict(sorted(options.items())), "inputs": self.inputs,
            "kinds": list(kinds), "metadata_strata": list(metadata_strata),
            "trajectories": self.n_trajectories, "units_by_kind": self.units_by_kind,
            "units_not_cut": self.skipped_units,
            "bad_records": {"count": len(self.bad_records), "skipped": self.bad_records},
        }


Record = tuple[str, str | None, str | None, int, int, list[str], list[tuple[str, str]]]
"""(where, problem, trajectory id, length of its trajectory line, length of its unit lines,
[unit kind per unit line], [(kind, reason not cut)])."""
Block = tuple[list[Record], bytes, bytes]
"""Records converted together, with their trajectory lines and unit lines, each joined in order."""

_BLOCK_BYTES = 4 << 20
_BLOCK_ITEMS = 256


def _convert(where: str, item: Row | Trajectory | BadRecord, kinds: Sequence[str] | None,
             metadata_strata: Sequence[str]) -> tuple[Record, bytes, bytes]:
    if isinstance(item, BadRecord):
        return (where, str(item), None, 0, 0, [], []), b"", b""
    if isinstance(item, Trajectory):
        trajectory_id, line = item.id, record_bytes(item)
    else:
        trajectory_id, line = item["id"], row_bytes(item)
    if kinds is None:
        return (where, None, trajectory_id, len(line), 0, [], []), line, b""
    units, skips = unit_rows(item.model_dump() if isinstance(item, Trajectory) else item, kinds,
                             metadata_strata=metadata_strata)
    unit_lines = b"".join([row_bytes(u) for u in units])
    return ((where, None, trajectory_id, len(line), len(unit_lines), [u["kind"] for u in units],
             [(s.kind, s.reason) for s in skips]), line, unit_lines)


def _convert_items(items: Iterable[tuple[str, Row | Trajectory | BadRecord]], kinds: Sequence[str] | None,
                   metadata_strata: Sequence[str]) -> Block:
    records, lines, unit_lines = [], [], []
    for where, item in items:
        record, line, units = _convert(where, item, kinds, metadata_strata)
        records.append(record)
        lines.append(line)
        unit_lines.append(units)
    return records, b"".join(lines), b"".join(unit_lines)


def _convert_block(job: tuple) -> Block:
    """Convert a block of JSONL lines (in a worker process when ``workers > 1``).

    A line adapter that gives rows (``RowAdapter``) builds no model instances.
    """
    adapter, path, options, first, block, kinds, metadata_strata = job
    reader = get_adapter(adapter)
    convert_line = reader.convert_row if isinstance(reader, RowAdapter) else reader.convert_line
    path = Path(path)

    def items() -> Iterator[tuple[str, Row | Trajectory | BadRecord]]:
        for number, line in numbered_lines(first, block):
            where = f"{path}:{number}"
            yield where, convert_line(path, options, where, line)

    return _convert_items(items(), kinds, metadata_strata)


def _line_blocks(path: Path, adapter: str, options: dict, kinds, metadata_strata, workers: int) -> Iterator[Block]:
    """A JSONL file of a line adapter, converted in blocks; on ``workers`` processes when > 1, in file
    order, with at most 2 blocks per worker in flight (memory stays flat)."""
    jobs = ((adapter, str(path), options, first, block, kinds, metadata_strata)
            for first, block in iter_jsonl_blocks(path, _BLOCK_BYTES))
    if workers == 1:
        yield from map(_convert_block, jobs)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: deque = deque()
        for job in jobs:
            pending.append(pool.submit(_convert_block, job))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _item_blocks(located: Iterator[tuple[str, Trajectory | BadRecord]], kinds, metadata_strata) -> Iterator[Block]:
    """Items of any other adapter (or file type), converted in blocks of ``_BLOCK_ITEMS``."""
    while items := list(islice(located, _BLOCK_ITEMS)):
        yield _convert_items(items, kinds, metadata_strata)


def ingest(inputs: Sequence[str | Path], out_dir: str | Path, *, adapter: str, options: Mapping[str, str] | None = None,
           kinds: Sequence[str] | None = UNIT_KINDS, metadata_strata: Sequence[str] = (), skip_bad: bool = False,
           workers: int = 1, progress: Callable[[int], None] | None = None) -> IngestResult:
    """Read ``inputs`` through ``adapter`` and write the study's trajectory (and unit) files.

    ``kinds=None`` writes trajectories only. ``workers > 1`` converts JSONL inputs
    of line-based adapters on that many processes (same output bytes). ``progress``
    is called with the number of records read so far, every 1,000 records.
    """
    options = dict(options or {})
    if not inputs:
        raise InputError("ingest: no input files given")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"ingest: workers={workers!r}; expected an integer >= 1")
    if kinds is not None:
        bad_kinds = [k for k in kinds if k not in UNIT_KINDS]
        if bad_kinds:
            raise InputError(f"ingest: kinds {bad_kinds} are not unit kinds; allowed: {list(UNIT_KINDS)}")
    reader = get_adapter(adapter)
    paths = [Path(p) for p in inputs]
    for path in paths:
        if not path.is_file():
            raise InputError(f"{path}: input file not found")
    out_dir = Path(out_dir)
    problems: list[str] = []
    seen: dict[str, str] = {}
    units_by_kind: Counter[str] = Counter()
    skipped: dict[str, Counter[str]] = {}
    count = 0
    read = 0

    def blocks(path: Path) -> Iterator[Block]:
        if isinstance(reader, LineAdapter) and path.suffix.lower() in (".jsonl", ".ndjson"):
            reader.check(options)
            return _line_blocks(path, adapter, options, kinds, metadata_strata, workers)
        return _item_blocks(reader.locate(path, options), kinds, metadata_strata)

    with ExitStack() as stack:
        trajectories_out = stack.enter_context(atomic_writer(out_dir / TRAJECTORIES_FILE))
        units_out = stack.enter_context(atomic_writer(out_dir / UNITS_FILE)) if kinds is not None else None
        for path in paths:
            for records, lines, unit_lines in blocks(path):
                kept: list[tuple[int, int, int, int]] = []  # offsets and lengths of the lines to write
                line_at = unit_at = 0
                for where, problem, trajectory_id, line_size, units_size, unit_kinds, skips in records:
                    read += 1
                    if progress is not None and read % 1000 == 0:
                        progress(read)
                    if problem is not None:
                        problems.append(problem)
                    elif trajectory_id in seen:
                        problems.append(f"{where}: field 'id': trajectory id {trajectory_id!r} repeats "
                                        f"(first at {seen[trajectory_id]})")
                    else:
                        seen[trajectory_id] = where
                        if not problems or skip_bad:
                            kept.append((line_at, line_size, unit_at, units_size))
                            count += 1
                            for kind in unit_kinds:
                                units_by_kind[kind] += 1
                            for kind, reason in skips:
                                skipped.setdefault(kind, Counter())[reason] += 1
                    line_at += line_size
                    unit_at += units_size
                if len(kept) == len(records):  # the usual case: every record of the block is written
                    trajectories_out.write(lines)
                    if units_out is not None:
                        units_out.write(unit_lines)
                    continue
                lines_view, units_view = memoryview(lines), memoryview(unit_lines)
                for line_at, line_size, unit_at, units_size in kept:
                    trajectories_out.write(lines_view[line_at:line_at + line_size])
                    if units_out is not None:
                        units_out.write(units_view[unit_at:unit_at + units_size])
        if progress is not None:
            progress(read)
        if problems and not skip_bad:
            raise InputError(f"ingest: {len(problems)} bad record(s); nothing was written "
                             "(fix them, or pass --skip-bad to skip and list them in the manifest)", problems=problems)
        if count == 0:
            raise InputError(f"ingest: no trajectories read from {[str(p) for p in paths]}")
    result = IngestResult(
        n_trajectories=count, units_by_kind=dict(sorted(units_by_kind.items())),
        skipped_units={k: dict(sorted(v.items())) for k, v in sorted(skipped.items())}, bad_records=problems,
        inputs=[{"path": str(p), "sha256": file_sha256(p), "bytes": p.stat().st_size} for p in paths],
    )
    write_json(out_dir / MANIFEST_FILE, result.manifest(adapter=adapter, options=options, kinds=list(kinds or []),
                                                        metadata_strata=metadata_strata))
    return result
