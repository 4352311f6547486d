"""Ingest: source files -> ``trajectories.jsonl`` (+ ``units.jsonl``) and ``ingest_manifest.json``.

Records stream from the adapter straight into temporary files, so memory stays
flat in input size. Every bad record is collected; unless the caller asked to skip
bad records, nothing is written and one ``InputError`` lists them all (file, line,
field, what was expected). Skipped records are counted and listed in the manifest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samples.adapters import BadRecord, get_adapter
from samples.canonical import file_sha256
from samples.errors import InputError
from samples.jsonl import atomic_writer, record_bytes, write_json
from samples.records import UNIT_KINDS
from samples.units import cut_units

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


def ingest(inputs: Sequence[str | Path], out_dir: str | Path, *, adapter: str, options: Mapping[str, str] | None = None,
           kinds: Sequence[str] | None = UNIT_KINDS, metadata_strata: Sequence[str] = (), skip_bad: bool = False,
           progress: Callable[[int], None] | None = None) -> IngestResult:
    """Read ``inputs`` through ``adapter`` and write the study's trajectory (and unit) files.

    ``kinds=None`` writes trajectories only. ``progress`` is called with the number
    of records read so far, every 1,000 records.
    """
    options = dict(options or {})
    if not inputs:
        raise InputError("ingest: no input files given")
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
    with ExitStack() as stack:
        trajectories_out = stack.enter_context(atomic_writer(out_dir / TRAJECTORIES_FILE))
        units_out = stack.enter_context(atomic_writer(out_dir / UNITS_FILE)) if kinds is not None else None
        for path in paths:
            for where, item in reader.read(path, options):
                read += 1
                if progress is not None and read % 1000 == 0:
                    progress(read)
                if isinstance(item, BadRecord):
                    problems.append(str(item))
                    continue
                if item.id in seen:
                    problems.append(f"{where}: field 'id': trajectory id {item.id!r} repeats (first at {seen[item.id]})")
                    continue
                seen[item.id] = where
                if not problems or skip_bad:
                    trajectories_out.write(record_bytes(item))
                    count += 1
                    if units_out is not None:
                        units, skips = cut_units(item, kinds, metadata_strata=metadata_strata)
                        for unit in units:
                            units_out.write(record_bytes(unit))
                            units_by_kind[unit.kind] += 1
                        for skip in skips:
                            skipped.setdefault(skip.kind, Counter())[skip.reason] += 1
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
