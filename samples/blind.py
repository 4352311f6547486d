"""Blinding: a sample -> annotator tasks, a sealed key, per-annotator orders and an audit.

Tasks carry only an opaque id and the scrubbed display payload. Task ids are
``t_`` + 16 hex of HMAC-SHA256(salt, unit_id), the salt derived from the seed and
the sample file's hash: deterministic for the same sample and seed, unlinkable to
unit ids without the sealed key (which maps them) or the sample plus seed. The
key (``sealed/key.jsonl``, in a 0700 folder) restores every design field.
``blind/audit.json`` says where the scrubber masked what category; the masked
strings themselves go to ``sealed/scrub_detail.json``. The five files are one
generation (``samples.generation``), every file 0600. If any identity string
survives scrubbing, no task is written, the survivors go to ``sealed/leaks.json``
and ``IdentityLeak`` is raised.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections import Counter
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from samples.canonical import file_sha256, sha256_hex
from samples.errors import InputError
from samples.generation import publishing, reading
from samples.jsonl import (
    PRIVATE_DIR,
    private_dir,
    read_models,
    record_bytes,
    write_json,
)
from samples.layout import StudyLayout
from samples.records import BlindTask, KeyEntry, SampledUnit
from samples.sampler import DEFAULT_SEED, check_seed
from samples.scrub import Scrubber, study_terms


class IdentityLeak(InputError):
    """Identity strings survived scrubbing; the blind step wrote no tasks."""


@dataclass(frozen=True, kw_only=True)
class Blinded:
    tasks: list[BlindTask]
    key: list[KeyEntry]
    orders: dict[str, list[str]]
    audit: list[dict]
    detail: list[dict]
    leaks: list[str]


def task_id(salt: bytes, unit_id: str) -> str:
    return "t_" + hmac.new(salt, unit_id.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def annotator_order(task_ids: Sequence[str], annotator: str, seed: int) -> list[str]:
    """A seeded permutation per annotator (independent of Python's hash seed)."""
    stream = int(sha256_hex(["accord-order", annotator])[:16], 16)
    rng = np.random.default_rng([int(seed), stream])
    ordered = sorted(task_ids)
    return [ordered[i] for i in rng.permutation(len(ordered))]


def check_annotators(annotators: Sequence[str]) -> list[str]:
    """The names, each one the coding app and Label Studio accept (refused here, before any task is written)."""
    from annotate.tasks import check_name

    names = [a.strip() for a in annotators]
    if not names or any(not a for a in names):
        raise InputError(f"annotators={list(annotators)!r}: expected one or more non-empty names")
    for name in names:
        check_name(name, parameter="annotator")
    repeated = sorted(a for a, c in Counter(names).items() if c > 1)
    if repeated:
        raise InputError(f"annotators: {repeated} listed more than once")
    return names


def blind(units: Sequence[SampledUnit], *, annotators: Sequence[str], salt: bytes, seed: int = DEFAULT_SEED,
          scrubber: Scrubber | None = None) -> Blinded:
    """Split a sample into scrubbed tasks and key entries; report any surviving identity string."""
    names = check_annotators(annotators)
    if not units:
        raise InputError("blind: the sample is empty")
    if scrubber is None:
        scrubber = Scrubber(extra=study_terms({
            "agent": {u.strata.get("agent", "") for u in units},
            "model": {u.strata.get(f, "") for u in units for f in ("backbone", "family")},
        }))
    tasks, key, audit, detail, leaks = [], [], [], [], []
    for unit in units:
        tid = task_id(salt, unit.unit_id)
        text, hits = scrubber.scrub(unit.text)
        places = {"text": hits}
        turns = None
        if unit.turns is not None:
            turns = []
            for i, turn in enumerate(unit.turns):
                clean, turn_hits = scrubber.scrub(turn)
                turns.append(clean)
                places[f"turns[{i}]"] = turn_hits
        for where, found in places.items():
            if found:
                audit.append({"task_id": tid, "where": where, "masked": dict(sorted(Counter(h.category for h in found).items()))})
                detail.append({"task_id": tid, "where": where, "masked": [[h.category, h.matched] for h in found]})
        for where, shown in [("text", text), *((f"turns[{i}]", t) for i, t in enumerate(turns or []))]:
            leaks += [f"task {tid} {where}: {s!r}" for s in scrubber.leaks(shown)]
        tasks.append(BlindTask(task_id=tid, kind=unit.kind, text=text, turns=turns, focus_turn=unit.focus_turn))
        key.append(KeyEntry(task_id=tid, unit_id=unit.unit_id, trajectory_id=unit.trajectory_id, kind=unit.kind,
                            strata=unit.strata, stratum=unit.stratum, inclusion_prob=unit.inclusion_prob))
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InputError("blind: two units map to the same task id; the sample repeats a unit_id")
    order = np.argsort(ids, kind="stable")
    return Blinded(tasks=[tasks[i] for i in order], key=[key[i] for i in order],
                   orders={a: annotator_order(ids, a, seed) for a in names},
                   audit=sorted(audit, key=lambda r: (r["task_id"], r["where"])),
                   detail=sorted(detail, key=lambda r: (r["task_id"], r["where"])), leaks=leaks)


def blind_study(study: str | Path, *, annotators: Sequence[str], seed: int = DEFAULT_SEED,
                sample_path: str | Path | None = None, scrubber: Scrubber | None = None, replace: bool = False) -> dict:
    """Blind ``STUDY/sample/sample.jsonl`` into ``STUDY/blind/`` and ``STUDY/sealed/``; return a summary.

    An existing sealed key that differs from the new one (another sample or seed) is
    never overwritten unless ``replace``: labels collected against it would lose their units.
    """
    layout = StudyLayout.of(study)
    seed = check_seed(seed)
    if layout.root.exists() and not layout.root.is_dir():
        raise InputError(f"{layout.root}: is a file; expected the study folder")
    sample_path = Path(sample_path) if sample_path else layout.sample
    if sample_path.is_dir():
        raise InputError(f"{sample_path}: is a folder; expected the sample file")
    if not sample_path.is_file():
        raise InputError(f"{sample_path}: sample not found (run `accord sample` first)")
    with reading(layout, "sample") if sample_path == layout.sample else nullcontext(None) as hashes:
        sample_sha = (hashes or {}).get(layout.relative(sample_path)) or file_sha256(sample_path)
        units = list(read_models(sample_path, SampledUnit))
    salt = hashlib.sha256(f"accord-blind|{int(seed)}|{sample_sha}".encode()).digest()
    result = blind(units, annotators=annotators, salt=salt, seed=seed, scrubber=scrubber)
    return _publish(layout, result, sample_sha=sample_sha, seed=int(seed), replace=replace)


def _publish(layout: StudyLayout, result: Blinded, *, sample_sha: str, seed: int, replace: bool) -> dict:
    """Write the blinded sample as one generation: tasks, orders, audit, sealed key and scrub detail
    appear together or not at all (a killed run leaves the previous set), all private (0600)."""
    if result.leaks:
        write_json(layout.blind_leaks, {"leaks": result.leaks, "masked": result.detail})
        raise IdentityLeak(f"blind: {len(result.leaks)} identity string(s) survived scrubbing; no tasks written "
                           f"(details in {layout.blind_leaks}; extend samples/identity_vocabulary.toml)",
                           problems=[leak.split(":")[0] for leak in result.leaks])
    new_key = b"".join(record_bytes(entry) for entry in result.key)
    masked = Counter()
    for row in result.audit:
        masked.update(row["masked"])
    private_dir(layout.sealed_dir)
    os.chmod(layout.sealed_dir, PRIVATE_DIR)  # also a sealed folder made before this was enforced
    with publishing(layout, "blind") as generation:
        old_key = layout.key.read_bytes() if layout.key.is_file() else None
        if old_key is not None and not replace and old_key != new_key:
            raise InputError(f"{layout.key}: a sealed key from another sample or seed exists; labels may refer to it. "
                             "Move it away or pass --replace")
        generation.write_bytes(layout.key, new_key)
        generation.write_bytes(layout.tasks, b"".join(record_bytes(task) for task in result.tasks))
        generation.write_json(layout.orders, result.orders)
        generation.write_json(layout.blind_audit, {
            "sample_sha256": sample_sha, "seed": seed, "tasks": len(result.tasks),
            "tasks_with_masking": len({r["task_id"] for r in result.audit}),
            "masked_by_category": dict(sorted(masked.items())), "masked": result.audit,
            "surviving_identity_strings": 0})
        generation.write_json(layout.scrub_detail, {"leaks": result.leaks, "masked": result.detail})
    layout.blind_leaks.unlink(missing_ok=True)
    return {"tasks": len(result.tasks), "annotators": list(result.orders), "masked_by_category": dict(sorted(masked.items())),
            "tasks_with_masking": len({r["task_id"] for r in result.audit}), "blind_dir": str(layout.blind_dir),
            "key": str(layout.key)}
