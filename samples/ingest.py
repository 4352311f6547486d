"""Ingest: source files -> ``trajectories.jsonl`` (+ ``units.jsonl``) and ``ingest_manifest.json``.

Records stream from the adapter straight into temporary files, so memory stays
flat in input size (JSONL inputs of line-based adapters can be converted on
several processes, in bounded chunks, with the same output bytes). Every bad record is collected; unless the caller asked to skip
bad records, nothing is written and one ``InputError`` lists them all (file, line,
field, what was expected). Skipped records are counted and listed in the manifest.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samples.adapters import BadRecord, get_adapter
from samples.adapters.base import LineAdapter, Row, RowAdapter
from samples.canonical import file_sha256
from samples.errors import InputError
from samples.jsonl import (
    atomic_writer,
    iter_jsonl_blocks,
    iter_jsonl_lines,
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


Converted = tuple[str, str | None, str | None, bytes | None, bytes, list[str], list[tuple[str, str]]]
"""(where, problem, trajectory id, trajectory line, unit lines, [unit kind per line], [(kind, reason not cut)])."""

_BLOCK_BYTES = 4 << 20


def _convert(where: str, item: Row | Trajectory | BadRecord, kinds: Sequence[str] | None,
             metadata_strata: Sequence[str]) -> Converted:
    if isinstance(item, BadRecord):
        return where, str(item), None, None, b"", [], []
    if isinstance(item, Trajectory):
        trajectory_id, line = item.id, record_bytes(item)
    else:
        trajectory_id, line = item["id"], row_bytes(item)
    if kinds is None:
        return where, None, trajectory_id, line, b"", [], []
    units, skips = unit_rows(item.model_dump() if isinstance(item, Trajectory) else item, kinds,
                             metadata_strata=metadata_strata)
    return (where, None, trajectory_id, line, b"".join([row_bytes(u) for u in units]), [u["kind"] for u in units],
            [(s.kind, s.reason) for s in skips])


def _line_converter(reader: LineAdapter) -> Callable[..., Row | Trajectory | BadRecord]:
    """Rows where the adapter gives them (no model instances), else Trajectories."""
    return reader.convert_row if isinstance(reader, RowAdapter) else reader.convert_line


def _convert_lines(reader: LineAdapter, path: Path, options: dict, numbered: Iterable[tuple[int, bytes]],
                   kinds: Sequence[str] | None, metadata_strata: Sequence[str]) -> Iterator[Converted]:
    convert_line = _line_converter(reader)
    for number, line in numbered:
        where = f"{path}:{number}"
        yield _convert(where, convert_line(path, options, where, line), kinds, metadata_strata)


def _convert_block(job: tuple) -> list[Converted]:
    """Worker: convert a block of JSONL lines (runs in a child process)."""
    adapter, path, options, first, block, kinds, metadata_strata = job
    return list(_convert_lines(get_adapter(adapter), Path(path), options, numbered_lines(first, block), kinds,
                               metadata_strata))


def _parallel(path: Path, adapter: str, options: dict, kinds, metadata_strata, workers: int) -> Iterator[Converted]:
    """Convert a JSONL file on ``workers`` processes, in file order, with at most 2 blocks per worker in flight."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: deque = deque()
        for first, block in iter_jsonl_blocks(path, _BLOCK_BYTES):
            pending.append(pool.submit(_convert_block, (adapter, str(path), options, first, block, kinds, metadata_strata)))
            if len(pending) >= 2 * workers:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


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

    def records(path: Path) -> Iterator[Converted]:
        if isinstance(reader, LineAdapter) and path.suffix.lower() in (".jsonl", ".ndjson"):
            reader.check(options)
            if workers > 1:
                return _parallel(path, adapter, options, kinds, metadata_strata, workers)
            if isinstance(reader, RowAdapter):
                return _convert_lines(reader, path, options, iter_jsonl_lines(path), kinds, metadata_strata)
        return (_convert(where, item, kinds, metadata_strata) for where, item in reader.locate(path, options))

    with ExitStack() as stack:
        trajectories_out = stack.enter_context(atomic_writer(out_dir / TRAJECTORIES_FILE))
        units_out = stack.enter_context(atomic_writer(out_dir / UNITS_FILE)) if kinds is not None else None
        for path in paths:
            for where, problem, trajectory_id, line, unit_lines, unit_kinds, skips in records(path):
                read += 1
                if progress is not None and read % 1000 == 0:
                    progress(read)
                if problem is not None:
                    problems.append(problem)
                    continue
                if trajectory_id in seen:
                    problems.append(f"{where}: field 'id': trajectory id {trajectory_id!r} repeats (first at {seen[trajectory_id]})")
                    continue
                seen[trajectory_id] = where
                if not problems or skip_bad:
                    trajectories_out.write(line)
                    count += 1
                    if units_out is not None:
                        units_out.write(unit_lines)
                        units_by_kind.update(unit_kinds)
                        for kind, reason in skips:
                            skipped.setdefault(kind, Counter())[reason] += 1
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
