"""Stages that commit as a set: a stage's files are published together, as one generation.

A stage that writes several files (ingest: trajectories, units, manifest; sample:
sample and manifest; blind: tasks, orders, audit, sealed key, scrub detail) writes each
to a unique temporary sibling, then commits:

1. the journal ``.generations/<stage>.pending.json`` (written atomically) names every
   temporary file, the file it becomes and its sha256;
2. each temporary file is renamed over its final name (files the stage no longer
   produces, such as ``units.jsonl`` after ``ingest --no-units``, are removed);
3. the record ``.generations/<stage>.json`` (the generation: each file's sha256 and
   size) replaces the previous one and the journal is removed.

A process killed before step 1 leaves the old generation and temporary files that the
next run of the stage (or the next reader) deletes; killed after it, the journal is
rolled forward by whoever comes next: readers see the old generation or the new, never a
mix. ``check_generation`` is what a reader calls before trusting a stage's files: it
rolls a journal forward, cleans up, and refuses files that differ from the record
(changed by hand, or mixed with another run's). A folder without a record (files from
before generations existed, or written by other tools) is not checked.

Locks (``fcntl.flock``, released by the kernel when a process dies): ``<stage>.lock`` is
held by the one writer of a stage for its whole run; ``<stage>.commit.lock`` exclusively
while a commit or a roll-forward renames files, shared while a reader checks.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from samples.errors import InputError
from samples.jsonl import PRIVATE_FILE, private_dir, temp_sibling, write_json
from samples.layout import StudyLayout

STAGE_FILES: dict[str, Callable[[StudyLayout], list[Path]]] = {
    "ingest": lambda layout: [layout.trajectories, layout.units, layout.ingest_manifest],
    "sample": lambda layout: [layout.sample, layout.sample_manifest],
    "blind": lambda layout: [layout.tasks, layout.orders, layout.blind_audit, layout.key, layout.scrub_detail],
}
"""Every file each stage publishes, in commit order (the stage's own manifest last)."""

CUMULATIVE_STAGES: dict[str, Callable[[StudyLayout], tuple[list[Path], list[Path], tuple[str, ...]]]] = {
    "import": lambda layout: ([layout.units, layout.key],
                              [layout.imported_labels_dir, layout.imported_judge_labels_dir], (".jsonl",)),
    "report": lambda layout: ([], [layout.report_dir], (".html", ".md", ".png")),
}
"""Stages whose files are not a fixed list: the record names what their runs published. Each run of
``accord import`` adds or replaces some files (units and key; one ``*.jsonl`` per import) and the
record carries the rest; ``accord report`` removes what it no longer makes (``Generation.previous``).
Value: (the stage's fixed files, the folders its other files live in, those files' suffixes)."""

_HASH_CHUNK = 8 << 20


def stage_files(layout: StudyLayout, stage: str) -> list[Path]:
    """A stage's files; for a cumulative stage, the files its record names."""
    if stage in CUMULATIVE_STAGES:
        return [layout.root / name for name in _recorded(layout, stage)]
    try:
        return STAGE_FILES[stage](layout)
    except KeyError:
        known = sorted([*STAGE_FILES, *CUMULATIVE_STAGES])
        raise ValueError(f"stage {stage!r}: not a stage that publishes generations; known: {known}") from None


def _recorded(layout: StudyLayout, stage: str) -> dict[str, dict[str, Any]]:
    """{study-relative name: {sha256, bytes}} of the stage's current record ({} without one)."""
    path = _record_path(layout, stage)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return {str(name): {"sha256": str(e["sha256"]), "bytes": int(e["bytes"])} for name, e in record["files"].items()}
    except FileNotFoundError:
        return {}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise InputError(f"{path}: not a generation record; re-run `accord {stage}`") from None


def _may_publish(layout: StudyLayout, stage: str, path: Path) -> bool:
    fixed, folders, suffixes = CUMULATIVE_STAGES[stage](layout)
    return path in fixed or (path.parent in folders and path.suffix in suffixes)


def _record_path(layout: StudyLayout, stage: str) -> Path:
    return layout.generations / f"{stage}.json"


def _journal_path(layout: StudyLayout, stage: str) -> Path:
    return layout.generations / f"{stage}.pending.json"


def _temp_prefix(path: Path) -> str:
    """Temporary siblings of ``path`` are ``.<name>.<random>.tmp`` (as ``samples.jsonl.atomic_writer`` names them)."""
    return f".{path.name}."


def _is_temp(candidate: Path, path: Path) -> bool:
    return candidate.name.startswith(_temp_prefix(path)) and candidate.name.endswith(".tmp")


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


_HELD: set[IO[str]] = set()
"""Lock files this process has open: a forked child (ingest's workers) closes its copies at once,
else a worker outliving a killed ingest would hold the stage's lock (flock locks follow the file
description, which fork shares)."""


def _close_inherited_locks() -> None:
    """In a forked child: point each inherited lock descriptor at /dev/null (the child's copy of the
    lock's file description goes; the descriptor number stays valid for whatever later closes it)."""
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        for handle in list(_HELD):
            os.dup2(null, handle.fileno())
    finally:
        os.close(null)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_inherited_locks)


@contextmanager
def _lock_file(path: Path) -> Iterator[IO[str]]:
    private_dir(path.parent)
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - the lock lives as long as the handle
    _HELD.add(handle)
    try:
        os.chmod(path, PRIVATE_FILE)
        yield handle
    finally:
        _HELD.discard(handle)
        handle.close()


@contextmanager
def _flock(path: Path, how: int) -> Iterator[IO[str]]:
    with _lock_file(path) as handle:
        fcntl.flock(handle, how)
        yield handle


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"
    return f"pid {text}" if text.isdigit() else "another process"


@contextmanager
def stage_lock(layout: StudyLayout, stage: str) -> Iterator[None]:
    """The one writer of ``stage`` in this study; a second one is refused, naming the first's pid."""
    path = layout.locks / f"{stage}.lock"
    with _lock_file(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{layout.root}: another `accord {stage}` ({_holder(path)}) is writing this study; "
                             "wait for it to finish") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield


def _temps(layout: StudyLayout, stage: str) -> Iterator[Path]:
    """Temporary files beside the stage's files, its record and its journal (the writer's own, or a killed run's)."""
    for path in [*stage_files(layout, stage), _record_path(layout, stage), _journal_path(layout, stage)]:
        if path.parent.is_dir():
            yield from (candidate for candidate in path.parent.iterdir() if _is_temp(candidate, path))
    if stage in CUMULATIVE_STAGES:
        fixed, folders, suffixes = CUMULATIVE_STAGES[stage](layout)
        for path in fixed:
            if path.parent.is_dir():
                yield from (c for c in path.parent.iterdir() if _is_temp(c, path))
        for folder in folders:
            if folder.is_dir():
                yield from (c for c in folder.iterdir() if c.name.startswith(".") and c.name.endswith(".tmp")
                            and any(f"{suffix}." in c.name for suffix in suffixes))


def _clean_temps(layout: StudyLayout, stage: str) -> None:
    """Delete temporary files a killed run of ``stage`` left (only while holding the stage lock)."""
    for temp in list(_temps(layout, stage)):
        temp.unlink(missing_ok=True)


def _roll_forward(layout: StudyLayout, stage: str) -> None:
    """Finish a commit whose journal exists (its writer died while renaming); caller holds the commit lock."""
    journal = _journal_path(layout, stage)
    try:
        pending = json.loads(journal.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    for name, entry in pending["files"].items():
        temp = layout.root / entry["temp"]
        if temp.exists():
            os.replace(temp, layout.root / name)
    for name in pending["removed"]:
        (layout.root / name).unlink(missing_ok=True)
    for folder in {(layout.root / name).parent for name in [*pending["files"], *pending["removed"]]}:
        if folder.is_dir():
            _fsync_dir(folder)
    files = {name: {"sha256": e["sha256"], "bytes": e["bytes"]} for name, e in pending["files"].items()}
    record = {"stage": stage, "files": dict(sorted({**pending.get("carried", {}), **files}.items()))}
    write_json(_record_path(layout, stage), record)
    journal.unlink()


class _HashingFile:
    """A write-only temporary file that hashes what it writes (no second pass over a 170 MB table)."""

    def __init__(self, path: Path) -> None:
        self.handle = temp_sibling(path)
        self.temp = path.parent / Path(self.handle.name).name  # relative when the study path is
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.handle.write(data)


class Generation:
    """The files of one run of a stage, written to temporary names and published together by ``commit``.

    Use through ``publishing``; each of the stage's outputs is written (``open``) or
    declared gone (``remove``) before the commit.
    """

    def __init__(self, layout: StudyLayout, stage: str) -> None:
        self.layout, self.stage = layout, stage
        self._cumulative = stage in CUMULATIVE_STAGES
        self._expected = stage_files(layout, stage)
        self._files: dict[Path, _HashingFile] = {}
        self._removed: set[Path] = set()

    def _check(self, path: Path) -> Path:
        path = Path(path)
        if self._cumulative:
            if not _may_publish(self.layout, self.stage, path):
                raise ValueError(f"{path}: not a file stage {self.stage!r} publishes")
        elif path not in self._expected:
            raise ValueError(f"{path}: not a file of stage {self.stage!r} ({[str(p) for p in self._expected]})")
        if path in self._files or path in self._removed:
            raise ValueError(f"{path}: already written in this generation")
        if path.is_dir():
            raise InputError(f"{path}: is a folder; expected a file")
        return path

    def open(self, path: Path) -> _HashingFile:
        """A private (0600) temporary file that becomes ``path`` at the commit."""
        path = self._check(path)
        self._files[path] = _HashingFile(path)
        return self._files[path]

    def previous(self) -> list[Path]:
        """The files the stage's current record names (what the last run published)."""
        return [self.layout.root / name for name in _recorded(self.layout, self.stage)]

    def write_bytes(self, path: Path, data: bytes) -> None:
        self.open(path).write(data)

    def write_json(self, path: Path, obj: Any) -> None:
        """As ``samples.jsonl.write_json`` writes it."""
        text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        self.write_bytes(path, text.encode("utf-8"))

    def remove(self, path: Path) -> None:
        """``path`` is no output of this run: the commit deletes any old copy (and, in a cumulative
        stage, its entry in the record)."""
        self._removed.add(self._check(path))

    def discard(self) -> None:
        for file in self._files.values():
            file.handle.close()
            file.temp.unlink(missing_ok=True)

    def commit(self) -> dict[str, str]:
        """Publish every file at once; returns {study-relative name: sha256}."""
        missing = [] if self._cumulative else [str(p) for p in self._expected
                                                 if p not in self._files and p not in self._removed]
        if missing:
            raise ValueError(f"stage {self.stage!r}: generation lacks {missing}")
        root = self.layout.root
        for file in self._files.values():
            file.handle.flush()
            os.fsync(file.handle.fileno())  # the data is on disk before any name points at it
            file.handle.close()
        rel = {path: path.relative_to(root).as_posix() for path in [*self._expected, *self._files, *self._removed]}
        files = {rel[path]: {"temp": file.temp.relative_to(root).as_posix(), "sha256": file.digest.hexdigest(),
                             "bytes": file.size} for path, file in self._files.items()}
        journal = {"stage": self.stage, "files": files,
                   "removed": sorted(rel[p] for p in {*self._expected, *self._removed} if p in self._removed)}
        if self._cumulative:  # the earlier runs' files this run neither replaced nor removed
            gone = {*files, *journal["removed"]}
            journal["carried"] = {n: e for n, e in _recorded(self.layout, self.stage).items() if n not in gone}
        with _flock(self.layout.locks / f"{self.stage}.commit.lock", fcntl.LOCK_EX):
            write_json(_journal_path(self.layout, self.stage), journal)
            _roll_forward(self.layout, self.stage)
        return {name: entry["sha256"] for name, entry in files.items()}


@contextmanager
def publishing(layout: StudyLayout | str | Path, stage: str) -> Iterator[Generation]:
    """Write one generation of ``stage``: holds the stage lock, finishes or cleans up what a killed
    run left, and commits when the block ends without an error (else nothing changes)."""
    layout = StudyLayout.of(layout)
    private_dir(layout.root)
    with stage_lock(layout, stage):
        with _flock(layout.locks / f"{stage}.commit.lock", fcntl.LOCK_EX):
            _roll_forward(layout, stage)
            _clean_temps(layout, stage)
        generation = Generation(layout, stage)
        try:
            yield generation
            generation.commit()
        except BaseException:
            if not _journal_path(layout, stage).exists():
                generation.discard()
            raise


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_HASH_CHUNK):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def reading(layout: StudyLayout | str | Path, stage: str) -> Iterator[dict[str, str] | None]:
    """``check_generation`` that keeps the generation from being replaced while the block reads it."""
    layout = StudyLayout.of(layout)
    if _journal_path(layout, stage).exists():
        with _flock(layout.locks / f"{stage}.commit.lock", fcntl.LOCK_EX):
            _roll_forward(layout, stage)
    if any(_temps(layout, stage)):
        try:
            with _flock(layout.locks / f"{stage}.lock", fcntl.LOCK_EX | fcntl.LOCK_NB):
                _clean_temps(layout, stage)  # no writer runs: a temporary file left is a killed run's
        except OSError:
            pass  # a writer runs (its files), or the study is read-only
    if not _record_path(layout, stage).exists():
        yield None
        return
    with _flock(layout.locks / f"{stage}.commit.lock", fcntl.LOCK_SH):
        yield _verify(layout, stage)


def _verify(layout: StudyLayout, stage: str) -> dict[str, str]:
    record_path = _record_path(layout, stage)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        files = {name: (str(entry["sha256"]), int(entry["bytes"])) for name, entry in record["files"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise InputError(f"{record_path}: not a generation record; re-run `accord {stage}`") from None
    redo = f"re-run `accord {stage}`"
    hashes = {}
    for path in stage_files(layout, stage):
        name = path.relative_to(layout.root).as_posix()
        if name not in files:
            if path.exists():
                raise InputError(f"{path}: not part of the {stage} generation ({record_path}); remove it or {redo}")
            continue
        sha, size = files[name]
        try:
            actual = path.stat().st_size
        except FileNotFoundError:
            raise InputError(f"{path}: missing from the {stage} generation ({record_path}); {redo}") from None
        if actual != size or (digest := _file_sha256(path)) != sha:
            raise InputError(f"{path}: differs from the {stage} generation it was published with ({record_path}: "
                             f"changed since, or mixed with another run's files); {redo}")
        hashes[name] = digest
    return hashes


def check_generation(layout: StudyLayout | str | Path, stage: str) -> dict[str, str] | None:
    """Check a stage's files against their generation before reading them: {relative name: sha256}, or
    None when the folder has no record (not checked). Rolls forward a killed commit, deletes killed
    runs' temporary files; an ``InputError`` names the first file that differs from the record."""
    with reading(layout, stage) as hashes:
        return hashes
