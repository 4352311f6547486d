"""The family audit of a study folder: the study's labels and human reference into ``agreement.audit``.

The study layer over the audit statistics (``agreement.audit`` reads a frame, never a
study), beside validation, whose reference labels it uses: `accord audit STUDY` and
`accord run` call it through the audit stage driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from agreement.audit import AuditResult, audit, bias_summary
from agreement.study_io import isin, labels_table
from agreement.validation import REFERENCES, _judge_rows, reference_labels
from samples import InputError


def audit_study(study: Any, *, judge: str | None, positive: Sequence[str], tie_policy: str, model_field: str,
                n_resamples: int, n_permutations: int, seed: int, level: float,
                judge_families: dict[str, str] | None, reference: str = "resolved",
                model_families: dict[str, str] | None = None) -> tuple[AuditResult, dict[str, Any]]:
    """Audit one judge of a study folder (``agreement.study_io.Study``); return the result and its document.

    The judge's bias and family contrasts are against ``reference`` ("human_majority"
    or "resolved": the adjudicated label where one exists, else the majority); the
    error matrix covers every judge of the study on the same reference.
    ``model_families`` (evaluated model -> family) overrides the units' family
    stratum, which an import may leave "unknown". The document
    carries the study's input fingerprints, so a later reader can tell when the labels
    it was computed from have changed.
    """
    if reference not in REFERENCES:
        raise InputError(f"--reference {reference!r}: expected one of {list(REFERENCES)}")
    table = labels_table(study)
    judges = sorted(set(table.loc[table["source"] == "judge", "rater"].unique()))
    if judge is None and len(judges) != 1:
        raise InputError(f"--judge: the study has judges {judges}; name the one to audit")
    judge = judge or judges[0]
    if judge not in judges:
        raise InputError(f"judge {judge!r} has no labels on the sampled units; judges present: {judges}")
    _check_positive(table, judge, positive)
    labels = reference_labels(table, reference=reference, tie_policy=tie_policy)
    if labels.empty:
        raise InputError("family audit: no human labels, so no human reference")
    human = pd.Series(labels["label"].to_numpy(dtype=object), index=labels["unit"].astype(str))
    frame = pd.concat([_judge_rows(table, name, human=human, model_field=model_field) for name in judges],
                      ignore_index=True)
    if model_families:
        unknown = sorted(set(model_families) - set(frame["model"]))
        if unknown:
            raise InputError(f"model families: model(s) {unknown} are not models of the study's units "
                             f"({model_field}); models: {sorted(set(frame['model']))}")
        frame["family"] = frame["model"].map(model_families).fillna(frame["family"]).astype(str)
    try:
        result = audit(frame, positive=positive, n_resamples=n_resamples, n_permutations=n_permutations, seed=seed,
                       level=level, judge=judge, judge_families=judge_families or None)
    except ValueError as error:
        raise InputError(f"audit of {judge!r}: {error}") from None
    result = replace(result, reference=reference.replace("_", " "))
    adjudicated = int(labels["adjudicated"].sum()) if reference == "resolved" else 0
    body = {**result.to_dict(), "simulated": study.simulated, "fingerprints": study.fingerprints,
            "cluster": study.cluster, "adjudicated_units": adjudicated}
    if adjudicated:  # both references side by side: what the adjudications changed
        majority = reference_labels(table, reference="human_majority", tie_policy=tie_policy)
        rows = _judge_rows(table, judge, human=pd.Series(majority["label"].to_numpy(dtype=object),
                                                          index=majority["unit"].astype(str)), model_field=model_field)
        body["versus_majority"] = bias_summary(rows, positive=positive, judge=judge, level=level)
    return result, body


def _check_positive(table: pd.DataFrame, judge: str, positive: Sequence[str]) -> None:
    """Each positive label is one the audited judge's units can carry: a label of their kinds' schemes
    (``samples.kinds`` -> ``samples.schemes``) or one found on those units. A typo would otherwise
    audit a score that is 0 everywhere. A label-free scheme (no closed label set) accepts any label."""
    from samples import DEFAULT_SCHEME, get_scheme

    units = table.loc[table["rater"] == judge, "unit"]
    if units.empty:
        return  # an unknown judge: GateEvidence names it
    rows = table[isin(table["unit"], units)]
    schemes = [get_scheme(DEFAULT_SCHEME[kind]) for kind in sorted(set(rows["kind"].dropna().unique()))]
    if not schemes or any(not scheme.labels for scheme in schemes):
        return
    allowed = dict.fromkeys([label for scheme in schemes for label in scheme.labels]
                            + sorted(set(rows["label"].dropna().astype(str).unique())))
    for label in positive:
        if label not in allowed:
            names = ", ".join(repr(scheme.name) for scheme in dict.fromkeys(schemes))
            raise InputError(f"positive label {label!r}: not a label of judge {judge!r}'s units "
                             f"(scheme {names}); allowed: {list(allowed)}")
