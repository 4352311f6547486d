"""Ingest: source files -> ``trajectories.jsonl`` (+ ``units.jsonl``) and ``ingest_manifest.json``.

Records stream from the adapter straight into temporary files, in blocks of 256 KB,
so memory stays flat in input size (JSONL inputs of line-based adapters can be
converted on several processes, with the same output bytes). A ``BlockAdapter`` (ise,
canonical) decodes a whole block into typed msgspec structs and writes them with
msgspec; other records go through dict rows or models and the models' serializer:
the same bytes either way (tests/samples/test_fast_rows.py). Every bad record is
collected; unless the caller asked to skip bad records, nothing is written and one
``InputError`` lists them all (file, line, field, what was expected). Skipped
records are counted and listed in the manifest.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any

import msgspec
from pydantic_core import PydanticSerializationError

from samples.adapters import BadRecord, get_adapter
from samples.adapters.base import BlockAdapter, LineAdapter, Row, RowAdapter
from samples.canonical import file_sha256
from samples.errors import InputError
from samples.generation import publishing
from samples.jsonl import (
    append_row,
    iter_jsonl_blocks,
    numbered_lines,
    os_error_message,
    record_bytes,
    regular_file,
)
from samples.kinds import is_kind
from samples.kinds import kinds as registered_kinds
from samples.layout import StudyLayout
from samples.records import UNIT_KINDS, Trajectory
from samples.units import unit_rows

TRAJECTORIES_FILE = StudyLayout(Path()).trajectories.name
UNITS_FILE = StudyLayout(Path()).units.name
MANIFEST_FILE = StudyLayout(Path()).ingest_manifest.name
INPUT_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".parquet", ".eval")


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


Record = tuple[str, str | None, str | None, int, int, list[str], list[tuple[str, str]], tuple[str, ...]]
"""(where, problem, trajectory id, length of its trajectory line, length of its unit lines,
[unit kind per unit line], [(kind, reason not cut)], the metadata strata its units carry)."""
Block = tuple[list[Record], bytes, bytes]
"""Records converted together, with their trajectory lines and unit lines, each joined in order."""

_MISSING = "(missing)"
"""The stratum value ``samples.units`` gives a unit whose trajectory lacks a metadata stratum."""
_BLOCK_BYTES = 256 << 10
"""Input bytes converted together: what 256 KB of JSONL decodes into stays in a core's L2 cache
(ingest ran about 1.3x faster than with 1 MB blocks here, and 64 KB was slower again)."""
_BLOCK_ITEMS = 256
_HASH_CHUNK = 8 << 20


def _convert_items(items: Iterable[tuple[str, msgspec.Struct | Row | Trajectory | BadRecord]],
                   kinds: Sequence[str] | None, metadata_strata: Sequence[str]) -> Block:
    records: list[Record] = []
    lines, unit_lines = bytearray(), bytearray()
    for where, item in items:
        if isinstance(item, BadRecord):
            records.append((where, str(item), None, 0, 0, [], [], ()))
            continue
        line_at, units_at = len(lines), len(unit_lines)
        try:
            trajectory_id, fields = _append_trajectory(lines, item, kinds is not None)
            units, skips = unit_rows(fields, kinds, metadata_strata=metadata_strata) if kinds is not None else ([], [])
            for unit in units:
                append_row(unit_lines, unit)
        except PydanticSerializationError as error:  # e.g. nested deeper than the models write
            del lines[line_at:], unit_lines[units_at:]
            records.append((where, f"{where}: cannot be written as JSON ({error})", None, 0, 0, [], [], ()))
            continue
        carried = tuple(k for k in metadata_strata if units[0]["strata"].get(k, _MISSING) != _MISSING) if units else ()
        records.append((where, None, trajectory_id, len(lines) - line_at, len(unit_lines) - units_at,
                        [u["kind"] for u in units], [(s.kind, s.reason) for s in skips], carried))
    return records, bytes(lines), bytes(unit_lines)


def _append_trajectory(lines: bytearray, item: msgspec.Struct | Row | Trajectory, fields: bool) -> tuple[str, Any]:
    """Append a record's trajectory line; its id and (when ``fields``) its fields for cutting units."""
    if isinstance(item, Trajectory):
        lines += record_bytes(item)
        return item.id, item.model_dump() if fields else None
    append_row(lines, item)
    if isinstance(item, msgspec.Struct):
        return item.id, msgspec.to_builtins(item) if fields else None
    return item["id"], item


@cache
def _converts_blocks(adapter: str) -> bool:
    """Whether the adapter is a ``BlockAdapter``: a Protocol check walks every member, so once per adapter."""
    return isinstance(get_adapter(adapter), BlockAdapter)


def _convert_block(job: tuple) -> Block:
    """Convert a block of JSONL lines (in a worker process when ``workers > 1``).

    A ``BlockAdapter`` converts the block at once; a ``RowAdapter`` line by line, with
    no model instances.
    """
    adapter, path, options, first, block, kinds, metadata_strata = job
    reader = get_adapter(adapter)
    if _converts_blocks(adapter):
        items = [(f"{path}:{number}", item) for number, item in reader.convert_block(Path(path), options, first, block)]
        return _convert_items(items, kinds, metadata_strata)
    convert_line = reader.convert_row if isinstance(reader, RowAdapter) else reader.convert_line
    path = Path(path)

    def lines() -> Iterator[tuple[str, Row | Trajectory | BadRecord]]:
        for number, line in numbered_lines(first, block):
            where = f"{path}:{number}"
            yield where, convert_line(path, options, where, line)

    return _convert_items(lines(), kinds, metadata_strata)


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

    # fork while ingest's hashing thread runs: the workers touch nothing that thread locks
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_die_with_parent,
                             initargs=(os.getpid(),)) as pool:
        pending: deque = deque()
        for job in jobs:
            pending.append(pool.submit(_convert_block, job))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _die_with_parent(parent: int) -> None:
    """A worker's first act: ask the kernel to kill it when ingest dies (PR_SET_PDEATHSIG), so a
    killed ingest leaves no workers behind; if ingest died before this ran, exit now."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG (linux/prctl.h)
    except (OSError, AttributeError):  # not Linux: workers then end when they next read from a dead parent
        pass
    if os.getppid() != parent:
        os._exit(1)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _item_blocks(located: Iterator[tuple[str, Trajectory | BadRecord]], kinds, metadata_strata) -> Iterator[Block]:
    """Items of any other adapter (or file type), converted in blocks of ``_BLOCK_ITEMS``."""
    while items := list(islice(located, _BLOCK_ITEMS)):
        yield _convert_items(items, kinds, metadata_strata)


def ingest(inputs: Sequence[str | Path], out_dir: str | Path, *, adapter: str, options: Mapping[str, str] | None = None,
           kinds: Sequence[str] | None = UNIT_KINDS, metadata_strata: Sequence[str] = (), skip_bad: bool = False,
           workers: int = 1, progress: Callable[[int], None] | None = None) -> IngestResult:
    """Read ``inputs`` through ``adapter`` and write the study's trajectory (and unit) files.

    ``kinds=None`` writes trajectories only (and removes an older ``units.jsonl``).
    ``workers > 1`` converts JSONL inputs of line-based adapters on that many processes,
    at most one per usable core (same output bytes). ``progress`` is called with the
    number of records read so far, every 1,000 records. The trajectories, units and
    manifest are published together as one generation (``samples.generation``).
    """
    options = dict(options or {})
    if not inputs:
        raise InputError("ingest: no input files given")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"ingest: workers={workers!r}; expected an integer >= 1")
    workers = min(workers, usable_cores())
    if kinds is not None:
        bad_kinds = [k for k in kinds if not is_kind(k)]
        if bad_kinds:
            raise InputError(f"ingest: kinds {bad_kinds} are not unit kinds; allowed: {list(registered_kinds())}")
        if not kinds:
            raise InputError(f"ingest: no unit kinds given; allowed: {list(registered_kinds())} (or write trajectories only)")
    reader = get_adapter(adapter)
    paths = [Path(p) for p in inputs]
    for path in paths:
        regular_file(path, "trajectory file")  # by type first: opening a FIFO would wait forever
        try:
            with open(path, "rb"):
                pass
        except OSError as error:
            raise InputError(os_error_message(path, error)) from None
    layout = StudyLayout.of(out_dir)
    if layout.root.exists() and not layout.root.is_dir():
        raise InputError(f"{layout.root}: is a file; expected the study folder")
    problems: list[str] = []
    seen: dict[str, str] = {}
    units_by_kind: Counter[str] = Counter()
    skipped: dict[str, Counter[str]] = {}
    strata_seen: set[str] = set()
    count = 0
    read = 0

    def blocks(path: Path) -> Iterator[Block]:
        if isinstance(reader, LineAdapter) and path.suffix.lower() in (".jsonl", ".ndjson"):
            reader.check(options)
            return _line_blocks(path, adapter, options, kinds, metadata_strata, workers)
        return _item_blocks(reader.locate(path, options), kinds, metadata_strata)

    with publishing(layout, "ingest") as generation, ExitStack() as stack:
        # The inputs' sha256 on a helper thread while they convert: hashlib and reads release the
        # GIL, so on a second core it costs no wall time (as a pass after ingest it was a tenth of
        # it). Large chunks: the thread then rarely waits for the GIL; feeding it each block
        # instead handed the GIL back and forth so often that ingest got slower than hashing inline.
        hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-sha256")
        stack.callback(hashing.shutdown, wait=False, cancel_futures=True)  # an error need not wait for it
        hashes = [hashing.submit(file_sha256, p, chunk=_HASH_CHUNK) for p in paths]
        trajectories_out = generation.open(layout.trajectories)
        units_out = generation.open(layout.units) if kinds is not None else None
        if units_out is None:
            generation.remove(layout.units)  # units of an older ingest would no longer match the trajectories
        for path in paths:
            for records, lines, unit_lines in blocks(path):
                kept: list[tuple[int, int, int, int]] = []  # offsets and lengths of the lines to write
                line_at = unit_at = 0
                for where, problem, trajectory_id, line_size, units_size, unit_kinds, skips, carried in records:
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
                            strata_seen.update(carried)
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
        unseen = [k for k in metadata_strata if k not in strata_seen]
        if kinds is not None and sum(units_by_kind.values()) and unseen:
            raise InputError(f"ingest: --metadata-stratum {unseen}: no trajectory's metadata has this key "
                             "(a typo? every unit would be in stratum '(missing)'); nothing was written")
        # Inside the stack: leaving it cancels the hashes the thread has not started yet.
        inputs = [{"path": str(p), "sha256": digest.result(), "bytes": p.stat().st_size}
                  for p, digest in zip(paths, hashes, strict=True)]
        result = IngestResult(
            n_trajectories=count, units_by_kind=dict(sorted(units_by_kind.items())),
            skipped_units={k: dict(sorted(v.items())) for k, v in sorted(skipped.items())}, bad_records=problems,
            inputs=inputs,
        )
        generation.write_json(layout.ingest_manifest, result.manifest(
            adapter=adapter, options=options, kinds=list(kinds or []), metadata_strata=metadata_strata))
    return result
