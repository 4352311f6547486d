"""Validation that cannot be tuned on: registration before the labels, versions gated per human sample.

``accord preregister`` appends a record (``agreement.documents.Preregistration``)
of the policy, the judges' calls (``agreement.identity``) and the sample files
while the study has no human label. Every gate then states, per judge, whether
the policy and each of the judge's calls were registered before the human labels
it is gated on, and how many versions (distinct calls) of the judge have been
gated on the same human sample (``StudyLayout.gate_history``): a prompt revised
against the sample that validates it is a new version on the same sample (EHQ
3.3 and 7.3). The ``preregistration`` criterion turns both into a decision.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from samples import InputError, StudyLayout, file_sha256, sha256_hex


def sample_files(layout: StudyLayout) -> dict[str, str]:
    """The files that fix the sample (sealed key, sample, units) -> sha256, those that exist."""
    return {layout.relative(p): file_sha256(p) for p in (layout.key, layout.sample, layout.units) if p.is_file()}


def human_sample_sha256(table: pd.DataFrame) -> str:
    """The human sample a gate reads: the units people labelled (sorted), however many labels each has."""
    return sha256_hex(sorted({str(u) for u in table.loc[table["source"] == "human", "unit"].unique().tolist()}))


def registrations(layout: StudyLayout) -> list[Any]:
    from agreement.documents import Preregistration

    if not layout.preregistration.is_file():
        return []
    out = []
    for number, line in enumerate(layout.preregistration.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(Preregistration.model_validate(json.loads(line)))
            except ValueError as error:
                raise InputError(f"{layout.preregistration}:{number}: not a registration record ({error})") from None
    return out


def preregister(study_root: str | Path, policy: Any, judges: list[str], *, now: datetime | None = None) -> Any:
    """Append a registration of the policy (an ``agreement.gate.Policy``, loaded by the caller), the judges'
    calls on the sample and the sample files."""
    from agreement.documents import Preregistration
    from agreement.identity import judge_identity, unit_kinds
    from agreement.study_io import load_study
    from samples import write_jsonl

    study = load_study(study_root)
    layout = StudyLayout.of(study.root)
    units = set(study.key["unit_id"])
    present = sorted(set(study.judge["judge"]))
    identities = {}
    kinds = unit_kinds(study)
    for judge in judges:
        identity = judge_identity(study, judge, kinds=kinds, units=units)
        if not identity["calls"]:
            raise InputError(f"--judge {judge}: no labels on the sampled units to register; judges present: {present}")
        identities[judge] = identity
    record = Preregistration(
        registered_at=(now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        policy={"path": policy.path, "sha256": policy.sha256, "content": policy.text}, judges=identities,
        sample=sample_files(layout), human_labels=int(len(study.human)))
    write_jsonl(layout.preregistration, [*registrations(layout), record])
    return record


def registration_status(study: Any, policy: Any, judge: str, identity: dict[str, Any], human_sample: str
                        ) -> dict[str, Any]:
    """Whether ``policy`` and each of ``judge``'s calls were registered for this sample while the study had no
    human label (and before the earliest label time known), and the versions of ``judge`` gated on
    ``human_sample`` (this one included)."""
    layout = StudyLayout.of(study.root)
    human = study.human
    stamps = sorted(str(t) for t in human.get("created_at", pd.Series(dtype=object)).dropna())
    first_label = stamps[0] if stamps else None
    unknown_times = len(human) > 0 and len(stamps) < len(human)
    sample = sample_files(layout)
    before = [r for r in registrations(layout) if r.human_labels == 0 and r.sample == sample
              and (first_label is None or r.registered_at < first_label)]
    registered_calls = [c for r in before for c in r.judges.get(judge, {}).get("calls", [])]
    calls = identity["calls"]
    versions = {sha for s, j, sha in _history(layout) if s == human_sample and j == judge} | {identity["sha256"]}
    return {
        "policy_registered_before_labels": any(r.policy["sha256"] == policy.sha256 for r in before),
        "judge_registered_before_labels": bool(calls) and all(c in registered_calls for c in calls),
        "registrations": len(registrations(layout)),
        "first_human_label": first_label, "human_labels_without_time": unknown_times,
        "human_sample_sha256": human_sample, "versions_gated_on_sample": len(versions),
    }


def _history(layout: StudyLayout) -> list[tuple[str, str, str]]:
    if not layout.gate_history.is_file():
        return []
    rows = [json.loads(x) for x in layout.gate_history.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [(r["human_sample_sha256"], r["judge"], r["identity_sha256"]) for r in rows]


def record_gating(layout: StudyLayout, human_sample: str, judge: str, identity_sha: str) -> None:
    """Add (sample, judge, call) to the gate history once; a repeated gate of the same call adds nothing."""
    from samples import write_jsonl

    if (human_sample, judge, identity_sha) in _history(layout):
        return
    rows = [dict(zip(("human_sample_sha256", "judge", "identity_sha256"), h)) for h in _history(layout)]
    write_jsonl(layout.gate_history, [*rows, {"human_sample_sha256": human_sample, "judge": judge,
                                              "identity_sha256": identity_sha}])
