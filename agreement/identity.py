"""The exact call a judge's labels come from, and whether a verdict covers it.

A judge name is not an identity: one name can be run with another prompt, model,
parameters or parser, or on another unit kind (ISE D.2 validated per-turn calls
while the score used whole-trajectory calls). A call identity is the run
fingerprint's parts (``judges.spec.JudgeSpec.fingerprint_parts``, logged by every
run's start event in ``judges/runs.jsonl``) without the unit set and accord
version, plus the unit kind labelled: ``prompt_sha256`` covers the prompt's
``[user]`` rendering templates, the kind names the default template, ``output``
and ``parse_mode`` the parser. Labels with no run-log entry (imports) are known by
their fingerprint, which hashes the imported file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from samples import StudyLayout, sha256_hex

NOT_IDENTITY = ("unit_set", "accord_version", "fingerprint", "judge")
"""Run-fingerprint parts that do not change the call: the units it ran on, the software version, the name."""


def run_parts(layout: StudyLayout) -> dict[str, dict[str, Any]]:
    """Run fingerprint -> its parts, from every start event of the study's judge run log."""
    parts: dict[str, dict[str, Any]] = {}
    if not layout.judge_runs.is_file():
        return parts
    for line in layout.judge_runs.read_text(encoding="utf-8").splitlines():
        event = json.loads(line) if line.strip() else {}
        if event.get("event") == "start":
            for entry in (event.get("judges") or {}).values():
                parts[entry["fingerprint"]] = entry
    return parts


def call_identities(rows: pd.DataFrame, kinds: pd.Series, parts: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct calls behind judge label ``rows`` (unit_id, fingerprint), sorted; ``kinds``: unit -> kind."""
    found = {}
    pairs = pd.DataFrame({"fingerprint": rows["fingerprint"].astype(str).to_numpy(),
                          "kind": rows["unit_id"].map(kinds).astype(str).to_numpy()}).drop_duplicates()
    for fingerprint, kind in pairs.itertuples(index=False):
        known = parts.get(fingerprint)
        call = ({k: v for k, v in known.items() if k not in NOT_IDENTITY} if known is not None
                else {"fingerprint": fingerprint, "provenance": "no run-log entry (imported labels)"})
        call["unit_kind"] = kind
        found[sha256_hex(call)] = call
    return [found[k] for k in sorted(found)]


def unit_kinds(study: Any) -> pd.Series:
    """unit_id -> kind of the study's units (units.jsonl first, then the sealed key). Read once per study and
    passed to each judge's ``judge_identity``: at 1e5 units reading units.jsonl takes about a second."""
    from agreement.study_io import read_rows

    layout = StudyLayout.of(study.root)
    kinds = study.key.drop_duplicates("unit_id").set_index("unit_id")["kind"]
    if layout.units.is_file():
        every = pd.DataFrame(read_rows(layout.units, ("unit_id", "kind"))).drop_duplicates("unit_id")
        kinds = pd.concat([every.set_index("unit_id")["kind"], kinds])
        kinds = kinds[~kinds.index.duplicated()]
    return kinds


def judge_identity(study: Any, judge: str, *, kinds: pd.Series, units: set[str] | None = None) -> dict[str, Any]:
    """``{"calls": [...], "sha256": ...}`` of ``judge``'s labels (sample 0) on ``units`` (None: every unit);
    ``kinds`` is ``unit_kinds(study)``."""
    from agreement.study_io import isin

    layout = StudyLayout.of(study.root)
    rows = study.judge[(study.judge["judge"] == judge) & (study.judge["sample_index"] == 0)]
    if units is not None:
        rows = rows[isin(rows["unit_id"], units)]
    if "fingerprint" not in rows.columns:
        rows = rows.assign(fingerprint="unknown")
    if "projected_from" in rows.columns:  # a trajectory call read on sampled turns is that trajectory call
        rows = rows.assign(unit_id=rows["projected_from"].where(rows["projected_from"].notna(), rows["unit_id"]))
    calls = call_identities(rows, kinds, run_parts(layout))
    return {"calls": calls, "sha256": sha256_hex(calls)}


def call_differences(validated: list[dict[str, Any]], used: list[dict[str, Any]]) -> list[str]:
    """Each call in ``used`` the verdict did not validate, against the closest validated call."""
    out = []
    for call in used:
        if call in validated:
            continue
        if not validated:
            out.append(f"call {call} was never validated")
            continue
        closest = min(validated, key=lambda v: sum(v.get(k) != call.get(k) for k in set(v) | set(call)))
        changed = [f"{k} {closest.get(k)!r} -> {call.get(k)!r}" for k in sorted(set(closest) | set(call))
                   if closest.get(k) != call.get(k)]
        out.append("; ".join(changed))
    return out


def evaluated_families(study: Any) -> set[str]:
    """The model families of the agents whose units were sampled (the sealed key's ``family`` stratum)."""
    return {str(strata.get("family")) for strata in study.key.get("strata", pd.Series(dtype=object))
            if isinstance(strata, Mapping) and strata.get("family")}


def self_family_notes(judge_families: Mapping[str, str], evaluated: Iterable[str]) -> list[str]:
    """One note per judge of the same model family as an evaluated agent: it is validated on its own family's
    outputs and is not an independent external annotator (ASA, seed 003, section 3.1: the retail rubric judge is
    the task agent's own model). Unknown families flag nothing."""
    from samples import UNKNOWN_FAMILY

    families = {f for f in evaluated if f and f != UNKNOWN_FAMILY}
    return [f"self-family judge: {judge} is of model family {family!r}, the family of an evaluated agent; it is "
            "not an independent external annotator" for judge, family in sorted(judge_families.items())
            if family in families]
