r"""Deterministic JSONL files: canonical bytes out, line-numbered records in.

Every file a study writes goes through ``write_jsonl`` (one fixed-key-order JSON per line,
``\n`` line ends, written to a temporary file and renamed), so the same records
give byte-identical files and a failed write never leaves half a file behind.
Every file is created private (0600, folders 0700) whatever the umask. A stage that
writes several files publishes them together through ``samples.generation``.
Reading streams line by line, so memory stays flat in file size.
"""

from __future__ import annotations

import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec
from pydantic import BaseModel
from pydantic_core import to_json

from samples.canonical import canonical_json
from samples.errors import InputError


def record_bytes(record: BaseModel | dict[str, Any]) -> bytes:
    """One JSONL line with its newline: compact UTF-8, keys in a fixed order.

    A model serialises in its schema's field order (pydantic's Rust serializer:
    several times faster than sorting keys in Python, and just as deterministic);
    free-form dicts inside keep their source order. A plain dict gets sorted keys.
    """
    if isinstance(record, BaseModel):
        return record.__pydantic_serializer__.to_json(record) + b"\n"
    return canonical_json(record) + b"\n"


def row_bytes(row: dict[str, Any] | msgspec.Struct) -> bytes:
    """A model's JSONL line from a row holding its fields in schema order.

    Byte-identical to ``record_bytes(Model.model_validate(row))`` when the row is valid
    by construction; skipping the model instances makes ingest several times faster.
    A dict row goes through the model's own Rust serializer (NaN/inf as null like a
    model); a struct row (``samples.adapters.base``: float-free by construction, so the
    two print it alike) through msgspec, which writes structs without building dicts
    (tests/samples/test_fast_rows.py checks both against the models).
    """
    line = bytearray()
    append_row(line, row)
    return bytes(line)


def append_row(buffer: bytearray, row: dict[str, Any] | msgspec.Struct) -> None:
    """``buffer += row_bytes(row)`` without the intermediate bytes (a struct row is encoded in place)."""
    if isinstance(row, msgspec.Struct):
        _ENCODER.encode_into(row, buffer, -1)
    else:
        buffer += to_json(row, inf_nan_mode="null")
    buffer.append(10)


_ENCODER = msgspec.json.Encoder()


_BUFFER = 1 << 20
"""Read and write buffer: a record is a few KB, so the default 8 KB means a system call per record."""


PRIVATE_FILE = 0o600
"""Mode of every file a study writes: study files can map a task to its model or its judge label,
so only the study's owner reads them, whatever the umask (README: privacy on disk)."""
PRIVATE_DIR = 0o700


def private_dir(path: str | Path) -> Path:
    """Create ``path`` and any missing parents as 0700 folders (whatever the umask); existing ones are kept."""
    path = folder = Path(path)
    missing = []
    while not folder.is_dir() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            if not folder.is_dir():
                raise InputError(f"{folder}: is a file; expected a folder") from None
            continue
        os.chmod(folder, PRIVATE_DIR)
    return path


def writable_folder(path: str | Path, what: str) -> Path:
    """``path`` created 0700 (if missing) and proven writable by a probe file; else one InputError
    naming ``what`` (an output such as ``/proc/self`` or a read-only folder fails here, before any stage)."""
    path = Path(path)
    try:
        private_dir(path)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise InputError(f"{what} {str(path)!r}: accord cannot write there ({error.strerror or error}); expected a "
                         "folder of your own on a writable disk") from None
    return path


def private_file(path: str | Path) -> Path:
    """Create ``path`` empty as a 0600 file (whatever the umask) unless it exists, in a 0700 folder.

    For files other libraries then open (SQLite stores and caches: SQLite gives its -wal and -shm
    files the database file's mode), so they never exist with looser permissions.
    """
    path = Path(path)
    private_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        pass
    return path


def temp_sibling(path: str | Path, *, mode: int = PRIVATE_FILE) -> IO[bytes]:
    """An open temporary file ``.<name>.<random>.tmp`` beside ``path`` (same file system: renames are
    atomic), created with ``mode``; ``handle.name`` is its path."""
    path = Path(path)
    private_dir(path.parent)
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",  # noqa: SIM115
                                         delete=False, buffering=_BUFFER)  # the caller closes it
    os.chmod(handle.name, mode)
    return handle


@contextmanager
def atomic_writer(path: str | Path, *, mode: int = PRIVATE_FILE) -> Iterator[IO[bytes]]:
    """Write ``path`` through a temporary sibling renamed into place on success only.

    ``mode`` defaults to private (0600); a killed writer leaves only its temporary file,
    which a later run of the same stage deletes (``samples.generation``).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a file")
    handle = temp_sibling(path, mode=mode)
    try:
        with handle:
            yield handle
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]], *, mode: int = PRIVATE_FILE) -> int:
    """Write records as canonical JSONL; returns the number of lines."""
    count = 0
    with atomic_writer(path, mode=mode) as handle:
        for record in records:
            handle.write(record_bytes(record))
            count += 1
    return count


def write_json(path: str | Path, obj: Any, *, mode: int = PRIVATE_FILE) -> None:
    """A JSON document with sorted keys and 2-space indent (readable and deterministic)."""
    text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    with atomic_writer(path, mode=mode) as handle:
        handle.write(text.encode("utf-8"))


def _open(path: Path) -> IO[bytes]:
    regular_file(path)
    try:
        return open(path, "rb", buffering=_BUFFER)
    except OSError as error:
        raise InputError(os_error_message(path, error)) from None


_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))

MAX_SETTINGS_BYTES = 16 << 20
"""Largest plan, policy, study, prompt or judges file read (``read_settings``): settings, not data."""


def regular_file(path: str | Path, what: str = "input") -> Path:
    """``path`` if it is a regular file; else one InputError, decided by its type before anything reads
    it: a FIFO would block the open forever and /dev/zero would fill memory."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise InputError(os_error_message(path, error)) from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a folder; expected a file")
    for test, kind in _SPECIAL:
        if test(mode):
            raise InputError(f"{path}: {what} is {kind}, not a regular file")
    return path


def open_rows_file(path: str | Path, what: str) -> IO[bytes]:
    """``path`` opened for reading rows, refused by type first (``regular_file``); a missing or unreadable
    file is one InputError naming ``what``."""
    path = Path(path)
    if path.exists():
        regular_file(path, what)
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what}: {error.strerror or error}") from None

def read_settings(path: str | Path, what: str) -> bytes:
    """The bytes of a small settings file the user named, refused by type and size before reading."""
    path = regular_file(path, what)
    size = path.stat().st_size
    if size > MAX_SETTINGS_BYTES:
        raise InputError(f"{path}: {what} of {size} bytes; expected at most {MAX_SETTINGS_BYTES} (a settings file)")
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_SETTINGS_BYTES + 1)[:MAX_SETTINGS_BYTES]
    except OSError as error:
        raise InputError(os_error_message(path, error)) from None


def os_error_message(path: str | Path, error: OSError) -> str:
    """One line for a file the user named that cannot be opened (missing, a folder, no permission)."""
    if isinstance(error, FileNotFoundError):
        return f"{path}: file not found"
    if isinstance(error, IsADirectoryError):
        return f"{path}: is a folder; expected a file"
    if isinstance(error, NotADirectoryError):
        return f"{path}: a part of the path is a file; expected a folder"
    if isinstance(error, PermissionError):
        return f"{path}: permission denied"
    return f"{path}: cannot be read ({error.strerror or error})"


def iter_jsonl_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) of every non-blank line."""
    with _open(Path(path)) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield number, line


def iter_jsonl_blocks(path: str | Path, size: int = 4 << 20) -> Iterator[tuple[int, bytes]]:
    """(number of its first line, bytes) of blocks of about ``size`` bytes that end at a line end.

    Shipping blocks (not lists of lines) to worker processes keeps the reading process
    light; ``numbered_lines`` splits a block exactly as ``iter_jsonl_lines`` reads a file.
    A line longer than ``size`` is gathered as a list of reads joined once (adding each read
    to the rest and searching it all again made a 50 MB line cost seconds, quadratic in its length).
    """
    number, pending = 1, []  # the reads since the last line end: no newline in them
    with _open(Path(path)) as handle:
        while read := handle.read(size):
            cut = read.rfind(b"\n") + 1
            if cut == 0:
                pending.append(read)
                continue
            block = b"".join([*pending, read[:cut]])
            pending = [read[cut:]]
            yield number, block
            number += count_newlines(block)
    rest = b"".join(pending)
    if rest:
        yield number, rest


def count_newlines(data: bytes) -> int:
    r"""``data.count(b"\n")``, about 5x faster: numpy compares many bytes per instruction, where
    ``bytes.count`` of one byte goes byte by byte (counting took a tenth of ingest time)."""
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))


def numbered_lines(first: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    """``iter_jsonl_lines`` over a block whose first line is number ``first``."""
    for number, line in enumerate(io.BytesIO(block), start=first):
        if line.strip():
            yield number, line


_DECODER = msgspec.json.Decoder()


class _NotFinite(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def json_text(text: str) -> Any:
    """``json.loads`` that refuses what JSON lacks (NaN, Infinity, numbers beyond a float): ValueError."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotFinite as error:
        raise ValueError(f"invalid JSON ({error} is not a finite number; JSON has no NaN or infinity)") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"invalid JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise ValueError("invalid JSON (nested too deeply)") from None


def decode_json_line(line: bytes) -> Any:
    """Parse one JSONL line; ValueError with a readable reason (UTF-8 or JSON).

    msgspec parses about 2.5x faster than ``json.loads`` (0.18 s vs 0.45 s CPU on
    64 MB of trajectories; orjson and pydantic-core's ``from_json`` were slower
    than ``json.loads`` there). What msgspec accepts, ``json.loads`` accepts with
    equal values (duplicate keys, big integers, float rounding: tests/samples);
    anything it refuses (NaN, lone surrogates, bad UTF-8, bad JSON) goes through
    ``json.loads``, which keeps the stdlib's reading and its error messages; a lone
    surrogate escape is refused there (it made every writer fail later), and so are
    NaN, Infinity and numbers too large for a float (JSON has none; the stdlib reads
    them as non-finite floats that later writers turned into null).
    """
    try:
        return _DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 ({error.reason} at byte {error.start})") from None
    value = json_text(text)
    try:  # json.loads keeps an unpaired surrogate escape, which no UTF-8 output can hold
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(r"invalid JSON (a \uD800-\uDFFF escape without its pair is not a character)") from None
    return value


def json_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSONL file; a bad line or a non-object is an InputError naming file:line."""
    decode = _DECODER.decode
    for number, line in iter_jsonl_lines(path):
        try:
            value = decode(line)  # the common case inline (a tenth of reading a 1e5-unit study was calls)
        except (msgspec.DecodeError, RecursionError):
            try:
                value = decode_json_line(line)
            except ValueError as error:
                raise InputError(f"{path}:{number}: {error}") from None
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {type(value).__name__}")
        yield number, value


def json_objects_noting(path: str | Path, problems: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSONL file, for readers that name every bad row at once: a bad line
    or a non-object is appended to ``problems`` ("file:line: ...") and skipped."""
    for number, line in iter_jsonl_lines(path):
        where = f"{path}:{number}"
        try:
            value = decode_json_line(line)
        except ValueError as error:
            problems.append(f"{where}: {error}")
            continue
        if not isinstance(value, dict):
            problems.append(f"{where}: expected a JSON object")
            continue
        yield number, value


Model = TypeVar("Model", bound=BaseModel)


def read_models(path: str | Path, model: type[Model]) -> Iterator[Model]:
    """Stream a JSONL file of ``model`` rows; the first bad row stops with file, line and field."""
    from pydantic import ValidationError

    for number, line in iter_jsonl_lines(path):
        try:
            yield model.model_validate(decode_json_line(line))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(record)"
            raise InputError(f"{path}:{number}: field '{field}': {first['msg']} (expected a {model.__name__} row)") from None
        except ValueError as error:
            raise InputError(f"{path}:{number}: {error}") from None


# Result documents (agreement's study layer and agreement.documents write through these).
def jsonable(obj: Any) -> Any:
    """JSON-safe copy: NaN/inf -> null, numpy scalars and arrays -> Python lists and numbers."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in (obj.tolist() if isinstance(obj, np.ndarray) else obj)]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj if obj is None or isinstance(obj, str) else str(obj)


def write_result(path: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Write a result document atomically (sorted keys, no NaN); return what was written."""
    clean = jsonable(body)
    write_json(path, clean)
    return clean


def read_json(path: Path) -> Any:
    """A JSON file's value; a missing or malformed file is one InputError line naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not valid JSON ({error})") from None
