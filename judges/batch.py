"""Batch submission files: OpenAI Batch API and Anthropic Message Batches.

At benchmark scale, users submit requests as a batch and read the results back later.
``write_batch`` writes, per judge, the provider's documented request file plus a
sidecar of the canonical requests; ``import_batch_results`` reads the provider's
result file and stores each *successful* body in the request cache under the same key
a live call would use. The next ``accord judge run`` then builds the labels table
from the cache with zero calls, exactly as after a live run; failed entries are not
cached, so that run calls them (or they go into the next batch).

Formats (as documented by the providers):
- OpenAI input, one line per request: ``{"custom_id", "method": "POST",
  "url": "/v1/chat/completions", "body": {...}}``; output lines: ``{"id", "custom_id",
  "response": {"status_code", "request_id", "body"}, "error"}``.
- Anthropic ``messages.batches.create(requests=[...])`` takes ``{"custom_id", "params"}``
  items (written one per line); result lines: ``{"custom_id", "result": {"type":
  "succeeded", "message": {...}}}`` or type ``errored`` / ``canceled`` / ``expired``.
``custom_id`` is the request's cache key (64 hex characters: within Anthropic's
``^[a-zA-Z0-9_-]{1,64}$``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judges.cache import RequestCache
from judges.providers.base import (
    ANTHROPIC_API,
    OPENAI_API,
    CallError,
    ProviderConfig,
    get_provider,
    make_provider,
    provider_names,
)
from judges.spec import JudgeSpec
from samples import InputError, Unit, atomic_writer, json_objects

# One request line per documented batch format (ProviderKind.batch_format): OpenAI's Batch API, Anthropic's Message Batches.
_LINES: dict[str, Callable[[str, Any], dict[str, Any]]] = {
    OPENAI_API: lambda key, body: {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body},
    ANTHROPIC_API: lambda key, body: {"custom_id": key, "params": body},
}


def _format(spec: JudgeSpec) -> str:
    fmt = get_provider(spec.provider).batch_format
    if fmt is None:
        with_batches = [name for name in provider_names() if get_provider(name).batch_format is not None]
        raise InputError(f"judge {spec.name!r}: batch files exist for providers {with_batches}, not {spec.provider!r}")
    return fmt


def write_batch(units: Sequence[Unit], judges: Sequence[JudgeSpec], out_dir: str | Path, *,
                cache_path: str | Path) -> list[dict[str, Any]]:
    """Write ``<judge>.<format>-batch.jsonl`` + ``.requests.jsonl`` for every uncached request."""
    from judges.runner import build_tasks
    from samples import private_dir

    out_dir = private_dir(out_dir)  # 0700: the requests carry the units' text
    cache = RequestCache(cache_path)
    written = []
    try:
        for spec in judges:
            fmt = _format(spec)
            provider = make_provider(spec.provider, spec.connection)
            tasks, _ = build_tasks(spec, provider, [u for u in units if u.kind in spec.unit_kinds])
            cached = cache.get_many(t.key for t in tasks)
            todo = [t for t in tasks if t.key not in cached]
            stem = spec.name.replace("/", "_").replace(":", "_").replace("@", "_")
            batch_file = out_dir / f"{stem}.{fmt}-batch.jsonl"
            sidecar = out_dir / f"{stem}.requests.jsonl"
            # Each file through a unique temporary sibling: a killed write leaves the old file or none.
            with atomic_writer(batch_file) as out, atomic_writer(sidecar) as side:
                for task in todo:
                    body = task.request["body"]
                    line = _LINES[fmt](task.key, body)
                    out.write((json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))
                    side.write((json.dumps({"custom_id": task.key, "request": task.request}, ensure_ascii=False)
                                + "\n").encode("utf-8"))
            written.append({"judge": spec.name, "format": fmt, "batch_file": str(batch_file), "requests_file": str(sidecar),
                            "requests": len(todo), "already_cached": len(tasks) - len(todo)})
    finally:
        cache.close()
    return written


def _read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of a batch file; read through samples.jsonl, which refuses special files
    by type, bad UTF-8 and bad JSON naming file:line."""
    rows = []
    for number, row in json_objects(path):
        if "custom_id" not in row:
            raise InputError(f"{path}:{number}: expected an object with custom_id")
        rows.append((number, row))
    return rows


def _result_body(row: dict[str, Any], where: str) -> tuple[dict[str, Any] | None, str]:
    """(successful body, status) from one result line of either provider's format."""
    if "result" in row:
        result = row["result"] or {}
        kind = result.get("type")
        if kind == "succeeded":
            return result.get("message"), "succeeded"
        if kind in ("errored", "canceled", "expired"):
            return None, kind
        raise InputError(f"{where}: result.type {kind!r} is not succeeded, errored, canceled or expired")
    if "response" in row or "error" in row:
        response = row.get("response") or {}
        if row.get("error") or response.get("status_code") != 200:
            return None, f"error {response.get('status_code') or (row.get('error') or {}).get('code')}"
        return response.get("body"), "succeeded"
    raise InputError(f"{where}: neither an OpenAI batch output line (response/error) nor an Anthropic result line (result)")


def import_batch_results(results_file: str | Path, requests_file: str | Path, *, cache_path: str | Path) -> dict[str, Any]:
    """Store the successful results in the cache; returns counts by outcome."""
    results_file, requests_file = Path(results_file), Path(requests_file)
    requests = {row["custom_id"]: row["request"] for _, row in _read_jsonl(requests_file)}
    outcomes: Counter = Counter()
    readers: dict[tuple[str, str], Any] = {}
    rows = []
    for number, row in _read_jsonl(results_file):
        where = f"{results_file}:{number}"
        request = requests.get(row["custom_id"])
        if request is None:
            raise InputError(f"{where}: custom_id {row['custom_id']!r} is not in {requests_file}")
        body, status = _result_body(row, where)
        outcomes[status] += 1
        if body is not None:
            reader_key = (request["provider"], request.get("api", OPENAI_API))
            if reader_key not in readers:
                readers[reader_key] = make_provider(request["provider"], _connection_for(request))
            try:
                readers[reader_key].completion_from_raw(body)
            except CallError as error:
                raise InputError(f"{where}: {error.detail}") from None
            rows.append((row["custom_id"], request, body))
    cache = RequestCache(cache_path)
    try:
        stored = cache.put_many(rows)
    finally:
        cache.close()
    return {"results": sum(outcomes.values()), "outcomes": dict(sorted(outcomes.items())), "cached": stored}


def _connection_for(request: dict[str, Any]):
    # Only the body shape matters here; no call is made, so any base URL will do.
    return ProviderConfig(base_url="http://127.0.0.1:9", api=request.get("api", OPENAI_API))
