"""Canonical JSON and content hashes: the identity of requests, inputs and runs.

Every fingerprint, cache key and opaque id in accord is a sha256 over the canonical
JSON below, so the same content hashes the same across processes and machines
(sorted keys, no insignificant whitespace, UTF-8, no NaN).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> bytes:
    """Deterministic JSON bytes: sorted keys, compact separators, NaN refused."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(obj: Any) -> str:
    """sha256 of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def file_sha256(path: str | Path, *, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
