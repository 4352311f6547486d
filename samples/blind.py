"""Blinding: a sample -> annotator tasks, a sealed key, per-annotator orders and an audit.

Tasks carry only an opaque id and the scrubbed display payload. Task ids are
``t_`` + 16 hex of HMAC-SHA256(salt, unit_id), the salt derived from the seed and
the sample file's hash: deterministic for the same sample and seed, unlinkable to
unit ids without the sealed key (which maps them) or the sample plus seed. The
key (``sealed/key.jsonl``, in a 0700 folder) restores every design field.
``blind/audit.json`` counts, per task field and in all, what the scrubber masked and
what it kept readable (ordinary words such as "Google translation", terms the study
keeps), by category; the strings themselves and the count of every term go to
``sealed/scrub_detail.json``; a harness's speaker and role names count as "role". Every
scrubbed field, and every pair of consecutive turns (a name split over two), is then
read by an independent leak detector (``samples.leakcheck``); if it finds any identity,
nothing is written and ``IdentityLeak`` names the task and field. The five files are one generation
(``samples.generation``), every file 0600: a killed run leaves the old set or the new.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from samples.canonical import file_sha256, sha256_hex
from samples.documents import BlindAudit, checked
from samples.errors import InputError
from samples.generation import publishing, reading
from samples.jsonl import PRIVATE_DIR, private_dir, read_models, record_bytes
from samples.layout import StudyLayout
from samples.leakcheck import LeakDetector
from samples.names import check_annotator_name
from samples.records import BlindTask, KeyEntry, SampledUnit
from samples.scrub import Hit, Scrubber, check_keep, study_terms
from samples.seed import DEFAULT_SEED, check_seed
from samples.vocabulary import default_vocabulary

_TURN_LINE = re.compile(r"(?m)^\[turn \d+\](?: \(.*\))?$")  # samples.units.render_turn's first line


class IdentityLeak(InputError):
    """The leak detector found identity strings in scrubbed tasks; the blind step wrote nothing."""


@dataclass(frozen=True, kw_only=True)
class Blinded:
    tasks: list[BlindTask]
    key: list[KeyEntry]
    orders: dict[str, list[str]]
    audit: list[dict]
    detail: list[dict]
    leaks: list[str]
    kept_terms: int = 0

    def terms(self) -> dict[str, dict[str, int]]:
        """Every masked and every kept term (compact form) with its count (sealed: the strings themselves)."""
        counts: dict[str, Counter] = {"masked": Counter(), "kept": Counter()}
        for row in self.detail:
            counts["masked"].update(term for _, _, term in row["masked"])
            counts["kept"].update(term for _, _, term, _ in row["kept"])
        return {k: dict(sorted(v.items())) for k, v in counts.items()}

    def audit_document(self, *, sample_sha256: str, seed: int) -> dict:
        """``blind/audit.json``: counts by category only, never the strings."""
        totals: dict[str, Counter] = {"masked": Counter(), "kept": Counter(), "reasons": Counter()}
        for row in self.audit:
            totals["masked"].update(row["masked"])
            totals["kept"].update(row["kept"])
        for row in self.detail:
            totals["reasons"].update(reason for _, _, _, reason in row["kept"])
        return {"sample_sha256": sample_sha256, "seed": int(seed), "tasks": len(self.tasks),
                "tasks_with_masking": len({r["task_id"] for r in self.audit if r["masked"]}),
                "masked_by_category": dict(sorted(totals["masked"].items())),
                "kept_by_category": dict(sorted(totals["kept"].items())),
                "kept_by_reason": dict(sorted(totals["reasons"].items())),
                "study_kept_terms": self.kept_terms, "masked": self.audit,
                "leak_check": "independent detector (samples.leakcheck)", "surviving_identity_strings": len(self.leaks)}


def blinding_salt_for(seed: int, sample_sha256: str) -> bytes:
    """The HMAC salt of a blinding: the seed and the sample file's hash (gold units reuse it)."""
    return hashlib.sha256(f"accord-blind|{int(seed)}|{sample_sha256}".encode()).digest()


def task_id(salt: bytes, unit_id: str) -> str:
    return "t_" + hmac.new(salt, unit_id.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def annotator_order(task_ids: Sequence[str], annotator: str, seed: int) -> list[str]:
    """A seeded permutation per annotator (independent of Python's hash seed)."""
    stream = int(sha256_hex(["accord-order", annotator])[:16], 16)
    rng = np.random.default_rng([int(seed), stream])
    ordered = sorted(task_ids)
    return [ordered[i] for i in rng.permutation(len(ordered))]


def check_annotators(annotators: Sequence[str]) -> list[str]:
    """Names the coding app accepts (``samples.names``), each once."""
    names = [a.strip() if isinstance(a, str) else a for a in annotators]
    if not names or any(not a for a in names):
        raise InputError(f"annotators={list(annotators)!r}: expected one or more non-empty names")
    for name in names:
        check_annotator_name(name, parameter="annotators: name")
    repeated = sorted(a for a, c in Counter(names).items() if c > 1)
    if repeated:
        raise InputError(f"annotators: {repeated} listed more than once")
    return names


def _places(hits: list[Hit]) -> tuple[dict, dict]:
    masked = Counter(h.category for h in hits if h.kept is None)
    kept = Counter(h.category for h in hits if h.kept is not None)
    return dict(sorted(masked.items())), dict(sorted(kept.items()))


def _turn_bodies(text: str) -> tuple[list[str], list[str]]:
    """A unit's text cut at its "[turn N] (role)" lines (``samples.units.render_turn``): (bodies, lines)."""
    return _TURN_LINE.split(text), _TURN_LINE.findall(text)


def _across(scrubber: Scrubber, detector: LeakDetector, parts: list[str], where: str,
            unit: SampledUnit, tid: str) -> tuple[list[str], list[Hit], list[str]]:
    """Names split across consecutive turns: masked in both halves; what still spans two turns is a leak."""
    parts, hits = scrubber.scrub_across(parts)
    return parts, hits, [f"task {tid} (unit {unit.unit_id}) {where} {leak}" for leak in detector.find_across(parts)]


def blind(units: Sequence[SampledUnit], *, annotators: Sequence[str], salt: bytes, seed: int = DEFAULT_SEED,
          scrubber: Scrubber | None = None, keep: Sequence[str] = (), keep_roles: bool = False,
          ranking: Mapping[str, int] | None = None) -> Blinded:
    """Split a sample into scrubbed tasks and key entries; report every identity the leak detector still finds.

    ``keep`` names vendor or harness terms the study leaves readable (never model names
    nor the study's own agent/backbone/family values); ``keep_roles`` leaves a harness's
    speaker and role names readable ("Orchestrator", "*_Expert"), counted in the audit.
    """
    names = check_annotators(annotators)
    if not units:
        raise InputError("blind: the sample is empty")
    extra = study_terms({
        "agent": {u.strata.get("agent", "") for u in units},
        "model": {u.strata.get(f, "") for u in units for f in ("backbone", "family")},
    })
    kept = check_keep(keep, default_vocabulary(), extra)
    if scrubber is None:
        scrubber = Scrubber(extra=extra, keep=kept, keep_roles=keep_roles)
    detector = LeakDetector(extra=extra, keep=kept, keep_roles=keep_roles)
    tasks, key, audit, detail, leaks = [], [], [], [], []
    for unit in units:
        tid = task_id(salt, unit.unit_id)
        text, hits = scrubber.scrub(unit.text)
        bodies, lines = _turn_bodies(text)
        if lines:
            bodies, split_hits, split_leaks = _across(scrubber, detector, bodies, "text", unit, tid)
            text = "".join(b + line for b, line in itertools.zip_longest(bodies, lines, fillvalue=""))
            hits, leaks = hits + split_hits, leaks + split_leaks
        shown = [("text", text, hits)]
        turns = None
        if unit.turns is not None:
            turns, turn_hits = [], []
            for turn in unit.turns:
                clean, found = scrubber.scrub(turn)
                turns.append(clean)
                turn_hits.append(found)
            turns, split_hits, split_leaks = _across(scrubber, detector, turns, "turns", unit, tid)
            leaks += split_leaks
            if split_hits:
                turn_hits[0] = turn_hits[0] + split_hits
            shown += [(f"turns[{i}]", clean, found) for i, (clean, found) in enumerate(zip(turns, turn_hits))]
        question, gold = None, None  # response units: shown to coders, so scrubbed and checked like the text
        if unit.question is not None:
            question, question_hits = scrubber.scrub(unit.question)
            shown.append(("question", question, question_hits))
        if unit.gold_answers is not None:
            gold = []
            for i, answer in enumerate(unit.gold_answers):
                clean, answer_hits = scrubber.scrub(answer)
                gold.append(clean)
                shown.append((f"gold_answers[{i}]", clean, answer_hits))
        for where, clean, found in shown:
            if found:
                masked, kept_here = _places(found)
                audit.append({"task_id": tid, "where": where, "masked": masked, "kept": kept_here})
                detail.append({"task_id": tid, "where": where,
                               "masked": [[h.category, h.matched, h.term] for h in found if h.kept is None],
                               "kept": [[h.category, h.matched, h.term, h.kept] for h in found if h.kept is not None]})
            leaks += [f"task {tid} (unit {unit.unit_id}) {where}: {leak}" for leak in detector.find(clean)]
        tasks.append(BlindTask(task_id=tid, kind=unit.kind, text=text, turns=turns, focus_turn=unit.focus_turn,
                               question=question, gold_answers=gold, truncation=unit.truncation))
        key.append(KeyEntry(task_id=tid, unit_id=unit.unit_id, trajectory_id=unit.trajectory_id, kind=unit.kind,
                            strata=unit.strata, stratum=unit.stratum, inclusion_prob=unit.inclusion_prob))
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InputError("blind: two units map to the same task id; the sample repeats a unit_id")
    order = np.argsort(ids, kind="stable")
    if ranking is None:
        orders = {a: annotator_order(ids, a, seed) for a in names}
    else:  # one order for everyone: the active order's ranks; units it does not rank (unscored by the judge) last
        unit_of = {k.task_id: k.unit_id for k in key}
        shared = sorted(ids, key=lambda t: (ranking.get(unit_of[t], len(ranking)), t))
        orders = {a: list(shared) for a in names}
    return Blinded(tasks=[tasks[i] for i in order], key=[key[i] for i in order], orders=orders,
                   audit=sorted(audit, key=lambda r: (r["task_id"], r["where"])),
                   detail=sorted(detail, key=lambda r: (r["task_id"], r["where"])), leaks=leaks, kept_terms=len(kept))


def blind_study(study: str | Path, *, annotators: Sequence[str], seed: int = DEFAULT_SEED,
                sample_path: str | Path | None = None, scrubber: Scrubber | None = None, replace: bool = False,
                keep: Sequence[str] = (), keep_roles: bool = False, ranking: Mapping[str, int] | None = None) -> dict:
    """Blind ``STUDY/sample/sample.jsonl`` into ``STUDY/blind/`` and ``STUDY/sealed/``; return a summary.

    An existing sealed key that differs from the new one (another sample or seed) is
    never overwritten unless ``replace``: labels collected against it would lose their units.
    ``keep``: vendor or harness names the study leaves readable (``[blinding] keep``);
    ``keep_roles``: a harness's speaker and role names too. ``ranking`` (unit id -> rank): every annotator labels
    in that order instead of a seeded shuffle (``[sampling] order = "active"``).
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
    salt = blinding_salt_for(int(seed), sample_sha)
    result = blind(units, annotators=annotators, salt=salt, seed=seed, scrubber=scrubber, keep=keep,
                   keep_roles=keep_roles, ranking=ranking)
    return _publish(layout, result, sample_sha=sample_sha, seed=int(seed), replace=replace)


def _publish(layout: StudyLayout, result: Blinded, *, sample_sha: str, seed: int, replace: bool) -> dict:
    """Write the blinded sample as one generation: tasks, orders, audit, sealed key and scrub detail
    appear together or not at all (a killed run leaves the previous set), all private (0600)."""
    if result.leaks:
        raise IdentityLeak(f"blind: {len(result.leaks)} identity string(s) survived scrubbing; nothing written "
                           "(add the form to samples/identity_vocabulary.toml, or keep an ordinary vendor word with "
                           "--keep)", problems=result.leaks)
    new_key = b"".join(record_bytes(entry) for entry in result.key)
    private_dir(layout.sealed_dir)
    os.chmod(layout.sealed_dir, PRIVATE_DIR)  # also a sealed folder made before this was enforced
    audit = checked(BlindAudit, result.audit_document(sample_sha256=sample_sha, seed=seed), where=layout.blind_audit)
    with publishing(layout, "blind") as generation:
        old_key = layout.key.read_bytes() if layout.key.is_file() else None
        if old_key is not None and not replace and old_key != new_key:
            raise InputError(f"{layout.key}: a sealed key from another sample or seed exists; labels may refer to it. "
                             "Move it away or pass --replace")
        generation.write_bytes(layout.key, new_key)
        generation.write_bytes(layout.tasks, b"".join(record_bytes(task) for task in result.tasks))
        generation.write_json(layout.orders, result.orders)
        generation.write_json(layout.blind_audit, audit)
        generation.write_json(layout.scrub_detail, {"terms": result.terms(), "masked": result.detail})
    return {"tasks": len(result.tasks), "annotators": list(result.orders), "masked_by_category": audit["masked_by_category"],
            "kept_by_category": audit["kept_by_category"], "tasks_with_masking": audit["tasks_with_masking"],
            "blind_dir": str(layout.blind_dir), "key": str(layout.key)}
