"""Validation of a study's judges against its human annotators (``accord validate``).

Per unit kind (and over all units when a study has several kinds) it reports,
with cluster-bootstrap intervals by trajectory (``agreement.panels``):
human-human agreement (ISE Table 7 left), each judge vs the human majority and
vs each annotator (Table 7 right), every judge pair overall and per setting and
split (Table 6) with directional disagreements, per-class precision/recall/F1
against the human majority, unscored counts per judge, and degenerate baselines
(always-positive, always-negative, majority class) scored on the same units as
each judge, so a judge's number is read against what a judge with no
understanding would score (Aggarwal et al., section 2). ``weighted=True``
reweights every estimate by 1/inclusion probability.

Each judge is also scored against the resolved reference (EHQ section 6.1): per
unit the adjudicated label where one exists, else the independent majority under
the tie policy, side by side with the initial majority; initial human-human
agreement always uses independent labels only. The adjudication counts (units
adjudicated, changed, ties resolved, still tied) travel in every section.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from agreement.bootstrap import DEFAULT_SEED
from agreement.estimate import Estimate
from agreement.majority import MajorityVote, majority_vote
from agreement.panels import (
    MAJORITY,
    JudgePairTable,
    PanelReport,
    PanelSettings,
    ReferenceReport,
    compare_pairs,
    judge_pair_table,
    panel_report,
    reference_report,
    report_to_dict,
)
from agreement.study_io import HUMAN_LABEL_SOURCES, SIMULATED_NOTE, Study, isin, labels_table
from agreement.table import labels_of
from samples import DEFAULT_SCHEME, SCHEMES, InputError
from samples import simulated as simulated_rows

SUBGROUP_FIELDS = ("setting", "split")
RESOLVED = "resolved reference"
REFERENCES = ("human_majority", "resolved")
"""What a judge can be scored against: the initial independent majority, or the resolved reference."""


def scheme_of(kinds: list[str], labels: pd.Series) -> tuple[tuple[str, ...] | None, str | None]:
    """Categories and positive label of the kinds' scheme when every label fits it, else inferred."""
    names = {DEFAULT_SCHEME.get(k) for k in kinds}
    present = set(labels.dropna().astype(str).unique())
    if len(names) == 1 and (name := names.pop()) is not None:  # one known kind's scheme (an unknown kind has none)
        scheme = SCHEMES[name]
        if present <= set(scheme.labels):
            return scheme.labels, scheme.positive
    for scheme in SCHEMES.values():
        if present and present <= set(scheme.labels):
            return scheme.labels, scheme.positive
    return None, None


def rating_data(table: pd.DataFrame, *, weighted: bool, categories: tuple[str, ...] | None):
    from agreement.table import load_labels

    stratified = "stratum" in table.columns
    frame = table[["unit", "rater", "label", "cluster", "weight", *(["stratum"] if stratified else [])]]
    return load_labels(frame, unit="unit", rater="rater", label="label", cluster="cluster",
                       weight="weight" if weighted else None, categories=categories,
                       stratum="stratum" if stratified else None)


@dataclass(frozen=True, kw_only=True)
class AdjudicationCounts:
    """How adjudication moved the reference away from the initial independent majority."""

    n_adjudicated: int
    """Units with an adjudicated label (the latest adjudication counts)."""
    n_changed: int
    """Adjudicated units whose initial majority was a different label."""
    n_confirmed: int
    """Adjudicated units whose initial majority was the same label."""
    n_resolved_ties: int
    """Adjudicated units whose initial vote was tied."""
    n_still_tied: int
    """Tied units without an adjudication (the tie policy decides them)."""
    n_without_votes: int
    """Adjudicated units no annotator labelled independently."""

    def to_dict(self) -> dict[str, int]:
        return {"n_adjudicated": self.n_adjudicated, "n_changed": self.n_changed, "n_confirmed": self.n_confirmed,
                "n_resolved_ties": self.n_resolved_ties, "n_still_tied": self.n_still_tied,
                "n_without_votes": self.n_without_votes}


def resolve(majority: MajorityVote, adjudicated: Sequence[Any], *, units: Sequence[Any], categories: Sequence[Any],
            where: Sequence[Any] | None = None) -> tuple[np.ndarray, AdjudicationCounts]:
    """Resolved reference codes (-1: none): the adjudicated label where one exists, else the majority.

    ``adjudicated`` holds one label or None per unit of ``majority`` (in ``units``
    order); ``where`` the rows' ``file:line``, named when a label is outside ``categories``.
    """
    cats = list(categories)
    given = np.array([a is not None and not (isinstance(a, float) and math.isnan(a)) for a in adjudicated], dtype=bool)
    codes = np.full(len(given), -1, dtype=np.int64)
    for i in np.flatnonzero(given):
        if adjudicated[i] not in cats:
            place = f"{where[i]}: " if where is not None else ""
            raise InputError(f"{place}adjudicated label {adjudicated[i]!r} of unit {units[i]!r} is not in the "
                             f"scheme's labels {cats}")
        codes[i] = cats.index(adjudicated[i])
    initial = np.where(majority.tied, -1, majority.codes)
    voted = initial >= 0
    counts = AdjudicationCounts(
        n_adjudicated=int(given.sum()), n_changed=int((given & voted & (codes != initial)).sum()),
        n_confirmed=int((given & voted & (codes == initial)).sum()), n_resolved_ties=int((given & majority.tied).sum()),
        n_still_tied=int((~given & majority.tied).sum()), n_without_votes=int((given & ~voted & ~majority.tied).sum()))
    return np.where(given, codes, majority.codes), counts


@dataclass(frozen=True, kw_only=True)
class Section:
    """Validation of the units of one kind (or all units: kind 'all')."""

    kind: str
    categories: tuple[str, ...]
    positive: str | None
    report: PanelReport
    subgroup_pairs: tuple[Any, ...]
    baselines: dict[str, dict[str, ReferenceReport]]
    unscored: dict[str, dict[str, Any]]
    n_units: int
    units_per_stratum: dict[str, int]
    units: tuple[str, ...]
    """Unit ids in the order of the report's majority codes."""
    adjudication: AdjudicationCounts | None = None
    """None when the section has no human majority (no human labels)."""
    resolved: tuple[ReferenceReport, ...] = ()
    """Each judge against the resolved reference (``rater_b`` = RESOLVED), beside ``report.references``."""

    def versus(self, judge: str, reference: str) -> ReferenceReport | None:
        """The judge scored against ``reference`` ("human_majority" or "resolved"), None if unmeasured."""
        if reference not in REFERENCES:
            raise InputError(f"reference {reference!r}: expected one of {list(REFERENCES)}")
        reports = self.report.references if reference == "human_majority" else self.resolved
        return next((r for r in reports if r.rater == judge), None)


@dataclass(frozen=True, kw_only=True)
class ValidationResult:
    sections: tuple[Section, ...]
    judges: tuple[str, ...]
    humans: tuple[str, ...]
    simulated: bool
    weighted: bool
    settings: PanelSettings
    level: float
    tie_policy: str
    fingerprints: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    population: tuple[PopulationPairs, ...] = ()
    """Judge-judge agreement over every unit the judges labelled (ISE Table 6), per unit kind."""

    def section(self, kind: str) -> Section:
        for s in self.sections:
            if s.kind == kind:
                return s
        raise KeyError(kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judges": list(self.judges), "humans": list(self.humans), "simulated": self.simulated,
            "weighted": self.weighted, "tie_policy": self.tie_policy, "level": self.level,
            "fingerprints": self.fingerprints, "notes": list(self.notes),
            "sections": [section_to_dict(s, self.level) for s in self.sections],
            "population_judge_pairs": [
                {"kind": p.kind, "n_units": p.n_units, "judges": list(p.judges),
                 "groups": [_pair_group_to_dict(t, self.level) for t in p.tables]} for p in self.population],
        }


def _pair_group_to_dict(table: JudgePairTable, level: float) -> dict[str, Any]:
    return {"subgroup": table.subgroup, "n_units": table.n_units,
            "pairs": [{"rater_a": p.rater_a, "rater_b": p.rater_b, "n_units": p.n_units,
                       "disagreements": [{"a": a, "b": b, "count": c} for a, b, c in p.disagreements()],
                       "results": {k: _result_brief(v, level) for k, v in p.results.items()}} for p in table.pairs]}


def section_to_dict(section: Section, level: float) -> dict[str, Any]:
    body = report_to_dict(section.report, level=level)
    body["subgroup_judge_pairs"] = [_pair_group_to_dict(t, level) for t in section.subgroup_pairs]
    body["baselines"] = {
        judge: {name: {"accuracy": _num(r.accuracy), "macro_f1": _num(r.macro_f1),
                       "results": {k: _result_brief(v, level) for k, v in r.agreement.results.items()},
                       "per_class": [{"label": c.label, "precision": _num(c.precision), "recall": _num(c.recall),
                                      "f1": _num(c.f1), "undefined_reason": c.undefined_reason}
                                     for c in r.per_class]}
                for name, r in baselines.items()}
        for judge, baselines in section.baselines.items()}
    body["confusion_matrices"] = [
        {"rater": r.rater, "reference": r.reference, "labels": [str(c) for c in section.categories],
         "rows": r.reference, "columns": r.rater, "counts": np.asarray(r.confusion).tolist()}
        for r in section.report.references]
    body["adjudication"] = None if section.adjudication is None else section.adjudication.to_dict()
    # The same serializer as the majority's reference reports: one shape for both references.
    body["resolved_references"] = report_to_dict(replace(section.report, references=section.resolved),
                                                 level=level)["references"]
    body["judges_vs_references"] = [
        {"judge": judge, **{name: _reference_brief(section.versus(judge, name), level) for name in REFERENCES}}
        for judge in section.report.judges]
    body.update(kind=section.kind, unscored=section.unscored, positive=section.positive,
                units_per_stratum=section.units_per_stratum)
    return body


def _reference_brief(ref: ReferenceReport | None, level: float) -> dict[str, Any] | None:
    """Accuracy, macro F1, coefficients with intervals and per-class P/R/F1 against one reference."""
    if ref is None:
        return None
    return {"reference": ref.reference, "n_units": ref.agreement.n_units, "accuracy": _num(ref.accuracy),
            "macro_f1": _num(ref.macro_f1),
            "results": {k: _result_brief(v, level) for k, v in ref.agreement.results.items()},
            "per_class": [{"label": c.label, "support": c.support, "precision": _num(c.precision),
                           "recall": _num(c.recall), "f1": _num(c.f1), "undefined_reason": c.undefined_reason}
                          for c in ref.per_class]}


def _num(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _result_brief(result: Any, level: float) -> dict[str, Any]:
    ci = result.confidence_interval(level)
    return {"statistic": _num(result.statistic), "ci_low": _num(ci.low), "ci_high": _num(ci.high),
            "undefined_reason": result.undefined_reason}


def agreement_estimate(result: Any, level: float) -> Estimate:
    """An ``AgreementResult`` as an ``Estimate`` (what the gate and the report read)."""
    ci = result.confidence_interval(level)
    clustered = "cluster " if result.details.get("clustered") else ""
    return Estimate(statistic=float(result.statistic), n=int(result.n_units), ci_low=float(ci.low),
                    ci_high=float(ci.high), level=level, method=f"{result.coefficient}, {clustered}{ci.method}",
                    undefined_reason=result.undefined_reason)


def _baselines(data: Any, report: PanelReport, positive: str | None, settings: PanelSettings
               ) -> dict[str, dict[str, ReferenceReport]]:
    """Degenerate raters scored against the majority on exactly the units each judge scored."""
    if report.majority is None:
        return {}
    cats = list(report.categories)
    majority = report.majority.codes
    rated = majority[majority >= 0]
    constant: dict[str, int] = {}
    if positive is not None and len(cats) == 2:
        constant["always-positive"] = cats.index(positive)
        constant["always-negative"] = 1 - cats.index(positive)
    if rated.size:
        top = int(np.bincount(rated, minlength=len(cats)).argmax())
        constant[f"majority class ({cats[top]})"] = top
    out: dict[str, dict[str, ReferenceReport]] = {}
    for judge in report.judges:
        scored = data.codes[:, data.rater_index(judge)] >= 0
        names = [*constant, MAJORITY]
        columns = [np.where(scored, code, -1) for code in constant.values()] + [majority]
        table = type(data)(units=data.units, raters=tuple(names), categories=data.categories,
                           codes=np.column_stack(columns), clusters=data.clusters, unit_weights=data.unit_weights,
                           source=data.source, strata=data.strata)
        panels = compare_pairs(table, [(name, MAJORITY) for name in constant], settings=settings)
        out[judge] = {name: reference_report(panels[(name, MAJORITY)]) for name in constant
                      if (name, MAJORITY) in panels}
    return out


def _unscored(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    judges = table[table["source"] == "judge"]
    out = {}
    for judge, group in judges.groupby("rater", sort=True):
        missing = group[group["label"].isna()]
        reasons = Counter(str(r).split(":")[0] if r else "unknown" for r in missing["unscored_reason"])
        out[str(judge)] = {"unscored": len(missing), "total": len(group), "reasons": dict(sorted(reasons.items()))}
    return out


def _section_data(table: pd.DataFrame, *, weighted: bool) -> Any:
    """The section's rating data in its scheme's categories; built once and shared with `_section` (at 1e5
    units each build is about a second)."""
    categories, _ = scheme_of(sorted(set(table["kind"].unique())), table["label"])
    if categories is None:  # labels imported as found (scheme "any"): nominal categories, as the reference's
        categories = tuple(sorted(set(table["label"].dropna().astype(str).unique()))) or None
    return rating_data(table, weighted=weighted, categories=categories)


def _section(kind: str, table: pd.DataFrame, data: Any, *, judges: list[str], tie_policy: str,
             settings: PanelSettings) -> Section:
    """``data`` is ``_section_data(table)``."""
    _, positive = scheme_of(sorted(set(table["kind"].unique())), table["label"])
    kind_judges = [j for j in judges if j in data.raters]
    binary_positive = positive if data.categories and len(data.categories) == 2 else None
    report = panel_report(data, judges=kind_judges, tie_policy=tie_policy, positive=binary_positive,
                          reference="majority", settings=settings)
    unit_info = table.drop_duplicates("unit").set_index("unit")
    subgroup_tables = []
    if len(kind_judges) >= 2:
        # The same units give the same table: a subgroup that is every unit (or another subgroup's units) is
        # computed once and reused under its own name.
        done = {np.ones(data.n_units, dtype=bool).tobytes(): report.judge_pairs[0]}
        for name in SUBGROUP_FIELDS:
            values = unit_info[name].reindex(list(data.units)).astype(str).to_numpy()
            for value in sorted(set(values)):
                mask = values == value
                found = done.get(mask.tobytes()) or judge_pair_table(data, kind_judges, mask, "", settings)
                done.setdefault(mask.tobytes(), found)
                subgroup_tables.append(replace(found, subgroup=f"{name}={value}"))
    adjudication, resolved = _resolved(data, report, unit_info, kind_judges, settings)
    per_stratum: dict[str, int] = {}
    if report.majority is not None:
        with_majority = report.majority.codes >= 0
        judged = np.zeros(data.n_units, dtype=bool)
        for j in kind_judges:
            judged |= data.codes[:, data.rater_index(j)] >= 0
        strata = unit_info["stratum"].reindex(list(data.units)).astype(str).to_numpy()
        for value in sorted(set(strata)):
            per_stratum[value] = int((with_majority & judged & (strata == value)).sum())
    return Section(kind=kind, categories=tuple(data.categories), positive=binary_positive, report=report,
                   subgroup_pairs=tuple(subgroup_tables),
                   baselines=_baselines(data, report, binary_positive, settings),
                   unscored=_unscored(table), n_units=int(data.n_units), units_per_stratum=per_stratum,
                   units=tuple(str(u) for u in data.units), adjudication=adjudication, resolved=resolved)


def _resolved(data: Any, report: PanelReport, unit_info: pd.DataFrame, judges: list[str], settings: PanelSettings
              ) -> tuple[AdjudicationCounts | None, tuple[ReferenceReport, ...]]:
    """Adjudication counts and each judge against the resolved reference (same settings as the majority's)."""
    if report.majority is None:
        return None, ()
    if RESOLVED in data.raters:
        raise InputError(f"{data.source}: the rater name {RESOLVED!r} is reserved for the resolved reference")
    units = list(data.units)
    adjudicated = unit_info["adjudicated"].reindex(units) if "adjudicated" in unit_info else pd.Series(None, units)
    where = unit_info["adjudicated_where"].reindex(units).tolist() if "adjudicated_where" in unit_info else None
    codes, counts = resolve(report.majority, adjudicated.tolist(), units=units, categories=data.categories,
                            where=where)
    if not judges:
        return counts, ()
    table = type(data)(units=data.units, raters=(*judges, RESOLVED), categories=data.categories,
                       codes=np.column_stack([data.codes[:, data.rater_index(j)] for j in judges] + [codes]),
                       clusters=data.clusters, unit_weights=data.unit_weights, source=data.source,
                       strata=data.strata)
    panels = compare_pairs(table, [(j, RESOLVED) for j in judges], settings=settings)
    return counts, tuple(reference_report(panels[(j, RESOLVED)]) for j in judges if (j, RESOLVED) in panels)


@dataclass(frozen=True, kw_only=True)
class PopulationPairs:
    """Judge-judge agreement on every unit of one kind the judges labelled, not only the human sample."""

    kind: str
    n_units: int
    judges: tuple[str, ...]
    tables: tuple[JudgePairTable, ...]
    """All units first (subgroup None), then one table per setting and per split value."""


def population_table(study: Study, *, judges: Sequence[str] | None = None,
                     sample_index: int = 0) -> pd.DataFrame | None:
    """Judge rows over every unit in units.jsonl: unit, rater, label (None = unscored), cluster, weight, kind,
    and the STRATUM_FIELDS; judge labels on units the file does not list are left out. None when the study
    has no units.jsonl (it started from imported labels)."""
    from agreement.study_io import read_rows, strata_columns
    from samples import StudyLayout

    layout = StudyLayout.of(study.root)
    if not layout.units.is_file():
        return None
    units = pd.DataFrame(read_rows(layout.units, ("unit_id", "trajectory_id", "kind"))).drop_duplicates("unit_id")
    info = pd.concat([units[["unit_id", "trajectory_id", "kind"]], strata_columns(units)], axis=1).set_index("unit_id")
    judge = study.judge[study.judge["sample_index"] == sample_index]
    if judges is not None:
        judge = judge[judge["judge"].isin(list(judges))]
    table = pd.DataFrame({"unit": judge["unit_id"].to_numpy(), "rater": judge["judge"].astype(str).to_numpy(),
                          "label": judge["label"].where(judge["parse_status"] == "ok").to_numpy(dtype=object)})
    table = table.join(info, on="unit", how="inner").rename(columns={"trajectory_id": "cluster"})
    table["weight"] = 1.0
    return table.reset_index(drop=True)


def population_judge_pairs(table: pd.DataFrame, *, settings: PanelSettings) -> tuple[PopulationPairs, ...]:
    """ISE Table 6 over the population: every pair of judges sharing units of a kind, overall and per
    setting and split, with directional disagreement counts (``population_table`` rows)."""
    out = []
    for kind in sorted(set(table["kind"].unique())):
        part = table[table["kind"] == kind]
        judges = sorted(set(part["rater"].unique()))
        if len(judges) < 2:
            continue
        categories, _ = scheme_of([kind], part["label"])
        data = rating_data(part, weighted=False, categories=categories
                           or tuple(sorted(set(part["label"].dropna().astype(str).unique()))) or None)
        unit_info = part.drop_duplicates("unit").set_index("unit")
        tables = [judge_pair_table(data, judges, np.ones(data.n_units, dtype=bool), None, settings)]
        for name in SUBGROUP_FIELDS:
            values = unit_info[name].reindex(list(data.units)).astype(str).to_numpy()
            for value in sorted(set(values)):
                tables.append(judge_pair_table(data, judges, values == value, f"{name}={value}", settings))
        out.append(PopulationPairs(kind=kind, n_units=int(data.n_units), judges=tuple(judges), tables=tuple(tables)))
    return tuple(out)


def validate_table(table: pd.DataFrame, *, tie_policy: str, weighted: bool = False, n_resamples: int = 10_000,
                   seed: int = DEFAULT_SEED, level: float = 0.95, fingerprints: dict[str, str] | None = None,
                   population: pd.DataFrame | None = None) -> ValidationResult:
    """Validate every judge in a joined labels table (``agreement.study_io.labels_table``); with
    ``population`` (``population_table``), also the judge-judge table over every judged unit."""
    if table.empty:
        raise InputError("validation: no labels on the sampled units")
    if not (table["source"] == "human").any():
        raise InputError(f"validation: no human labels on the sampled units; {HUMAN_LABEL_SOURCES}")
    settings = PanelSettings(n_resamples=n_resamples, seed=seed, cluster=True)
    judges = sorted(set(table.loc[table["source"] == "judge", "rater"].unique()))
    humans = sorted(set(table.loc[table["source"] == "human", "rater"].unique()))
    simulated = simulated_rows(table["backend"])
    labelled = set(table.loc[table["source"] == "human", "kind"].unique())
    notes = [f"kind {k}: no human labels, so its judges are not validated"
             for k in sorted(set(table["kind"].unique()) - labelled)]
    table = table[table["kind"].isin(labelled)]
    kinds = sorted(labelled)
    parts = {k: table[table["kind"] == k] for k in kinds}
    sections = [_section(k, part, _section_data(part, weighted=weighted), judges=judges, tie_policy=tie_policy,
                         settings=settings) for k, part in parts.items()]
    schemes = {DEFAULT_SCHEME.get(k) for k in kinds}
    if len(kinds) > 1 and len(schemes) == 1:
        sections.append(_section("all", table, _section_data(table, weighted=weighted), judges=judges,
                                 tie_policy=tie_policy, settings=settings))
    elif len(kinds) > 1:
        notes.append(f"no overall section: the unit kinds {kinds} use different label schemes, so pooling "
                     f"their labels would compare unlike judgements")
    if simulated:
        notes.insert(0, SIMULATED_NOTE)
    if weighted:
        notes.append("Estimates are reweighted by 1/inclusion probability of the sample design.")
    pairs = () if population is None else population_judge_pairs(population, settings=settings)
    return ValidationResult(sections=tuple(sections), judges=tuple(judges), humans=tuple(humans),
                            simulated=simulated, weighted=weighted, settings=settings, level=level,
                            tie_policy=tie_policy, fingerprints=dict(fingerprints or {}), notes=tuple(notes),
                            population=pairs)


def validate_study(study: Study, *, tie_policy: str, weighted: bool = False, n_resamples: int = 10_000,
                   seed: int = DEFAULT_SEED, level: float = 0.95, judges: list[str] | None = None) -> ValidationResult:
    table = labels_table(study, judges=judges)
    return validate_table(table, tie_policy=tie_policy, weighted=weighted, n_resamples=n_resamples, seed=seed,
                          level=level, fingerprints=study.fingerprints, population=population_table(study, judges=judges))


UNKNOWN_CODEBOOK = "unknown"
"""The version name of human labels that do not record their codebook (imports, older stores, simulated panels)."""


def codebook_versions(table: pd.DataFrame) -> dict[str, int]:
    """Independent human labels per codebook version (sha256, or ``UNKNOWN_CODEBOOK``), largest first."""
    human = table.loc[table["source"] == "human", "codebook_sha256"]
    counts = Counter(UNKNOWN_CODEBOOK if pd.isna(v) else str(v) for v in human)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


@dataclass(frozen=True, kw_only=True)
class CodebookSplit:
    """Validation restricted to the human labels given under one codebook version."""

    version: str
    n_labels: int
    n_units: int
    result: ValidationResult


def validate_by_codebook(table: pd.DataFrame, **settings: Any) -> tuple[CodebookSplit, ...]:
    """One validation per codebook version: that version's independent human labels and the
    judge rows of the units they cover, so a codebook changed mid-study shows whether the
    human reference (and each judge's agreement with it) moved with it. ``settings`` are
    ``validate_table``'s."""
    if "codebook_sha256" not in table.columns:
        raise InputError("validation by codebook: the labels table has no codebook_sha256 column")
    version = table["codebook_sha256"].map(lambda v: UNKNOWN_CODEBOOK if pd.isna(v) else str(v))
    human = table["source"] == "human"
    splits = []
    for name, n_labels in codebook_versions(table).items():
        mine = human & (version == name)
        units = set(table.loc[mine, "unit"].unique())
        part = table[mine | (~human & isin(table["unit"], units))]
        splits.append(CodebookSplit(version=name, n_labels=n_labels, n_units=len(units),
                                    result=validate_table(part, **settings)))
    return tuple(splits)


@dataclass(frozen=True, kw_only=True)
class BaselineComparison:
    """The judge against the degenerate and named baselines; ``undefined_reason`` when some cannot be formed."""

    differences: tuple[Any, ...]
    """``agreement.panels.BaselineDifference`` per (baseline, coefficient)."""
    undefined_reason: str | None = None


class GateEvidence:
    """The gate's measurements for one judge, computed on demand from the labels table.

    A judge whose units carry no human label is still evidence: every measurement
    against people is undefined with ``missing_reason``, so each such criterion fails
    with that reason (the gate rejects; it never stops on a study that merely lacks labels).
    """

    def __init__(self, table: pd.DataFrame, *, judge: str, tie_policy: str, level: float, n_resamples: int,
                 seed: int, weighted: bool = False, registration: dict[str, Any] | None = None) -> None:
        judged = table.loc[(table["source"] == "judge") & (table["rater"] == judge), "kind"]
        if judged.empty:
            present = sorted(set(table.loc[table["source"] == "judge", "rater"].unique()))
            raise InputError(f"judge {judge!r} has no labels on the sampled units; judges present: {present}")
        kinds = sorted(set(judged.unique()))
        self.judge = judge
        self._other_judges = table.loc[(table["source"] == "judge") & (table["rater"] != judge)
                                       & table["kind"].isin(kinds), ["unit", "rater", "label"]]  # the baselines
        self.table = table[table["kind"].isin(kinds) & ((table["source"] == "human") | (table["rater"] == judge))]
        self.level, self.seed, self.n_resamples = level, seed, n_resamples
        self.tie_policy, self.weighted = tie_policy, weighted
        self.missing_reason = None if (self.table["source"] == "human").any() else \
            f"no human labels on the judge's units (kinds {kinds}); {HUMAN_LABEL_SOURCES}"
        self.kinds = kinds
        self.registration = registration
        """``agreement.preregistration.registration_status`` of this judge (None: not known)."""
        self.section: Section | None = None
        if self.missing_reason is None:
            self._data = _section_data(self.table, weighted=weighted)
            self.section = _section("+".join(kinds), self.table, self._data, judges=[judge], tie_policy=tie_policy,
                                    settings=PanelSettings(n_resamples=n_resamples, seed=seed))

    @property
    def scheme_labels(self) -> tuple[str, ...]:
        """The labels the judge is compared in: the section's categories, else its kinds' default scheme."""
        if self.section is not None:
            return tuple(str(c) for c in self.section.categories)
        labels, _ = scheme_of(self.kinds, self.table["label"])
        return tuple(labels or sorted(set(self.table["label"].dropna().astype(str).unique())))

    def _vs_humans(self):
        report = self.section.report if self.section is not None else None
        return report.judges_vs_humans[0] if report is not None and report.judges_vs_humans else None

    def agreement(self, coefficient: str, reference: str) -> Estimate | None:
        """Judge vs ``reference`` ("human_majority" or "resolved"); NaN with the reason when unmeasurable."""
        if reference not in REFERENCES:
            raise InputError(f"reference {reference!r}: expected one of {list(REFERENCES)}")
        if self.section is None:
            return Estimate(statistic=math.nan, n=0, level=self.level, method=coefficient,
                            undefined_reason=self.missing_reason)
        found = self.section.versus(self.judge, reference)
        if found is None:
            return None
        if coefficient not in found.agreement.results:
            raise InputError(f"coefficient {coefficient!r} is not computed for judge vs {reference}; "
                             f"available: {sorted(found.agreement.results)}")
        return agreement_estimate(found.agreement.results[coefficient], self.level)

    def human_ceiling(self, coefficient: str):
        from agreement.panels import CeilingDifference, ceiling_difference

        if self.section is None:
            return CeilingDifference.undefined(coefficient, self.missing_reason or "no human labels")
        return ceiling_difference(self._data, self.judge, list(self.section.report.humans), coefficient,
                                  settings=PanelSettings(n_resamples=self.n_resamples, seed=self.seed))

    def alt_test(self, **settings: Any):
        from agreement.alttest import alt_test_table

        humans = list(self.section.report.humans) if self.section is not None else []
        result = alt_test_table(self.table, judge=self.judge, humans=humans, **settings)
        if self.section is None:
            result = replace(result, undefined_reason=self.missing_reason)
        return result

    def family_audit(self, positive: list[str], *, reference: str = "resolved"):
        from agreement.audit import audit

        frame = audit_frame(self.table, self.section, self.judge, reference=reference) \
            if self.section is not None else _judge_rows(self.table, self.judge, human=None)
        result = audit(frame, positive=positive, n_resamples=self.n_resamples, seed=self.seed, level=self.level,
                       judge=self.judge)
        return result if self.section is not None else replace(result, note=f"{self.missing_reason}. {result.note}")

    def unscored(self) -> tuple[int, int]:
        if self.section is None:
            rows = self.table[self.table["source"] == "judge"]
            return int(rows["label"].isna().sum()), len(rows)
        counts = self.section.unscored.get(self.judge, {"unscored": 0, "total": 0})
        return counts["unscored"], counts["total"]

    def units_per_stratum(self) -> dict[str, int]:
        return dict(self.section.units_per_stratum) if self.section is not None else {}

    def baselines(self, coefficients: Sequence[str], reference: str, judges: Sequence[str] = ()) -> Any:
        """The judge against every constant answer and each named baseline judge (``BaselineComparison``).

        Every label of the scheme is a constant answer; the one the reference gives most
        often on the judged units is the majority-class rule. A named baseline judge is
        compared on the units both it and the judge labelled.
        """
        from agreement.panels import PanelSettings, baseline_differences

        if self.section is None:
            return BaselineComparison(differences=(), undefined_reason=self.missing_reason)
        data = self._data
        judge = data.codes[:, data.rater_index(self.judge)]
        ref = reference_labels(self.table, reference=reference, tie_policy=self.tie_policy)
        labels = ref.set_index("unit")["label"].reindex([str(u) for u in data.units])
        cats = list(data.categories)
        reference_codes = np.array([cats.index(x) if x in cats else -1 for x in labels.tolist()], dtype=np.int64)
        rated = reference_codes[(judge >= 0) & (reference_codes >= 0)]
        if rated.size == 0:
            return BaselineComparison(differences=(), undefined_reason="no unit has both a judge label and a "
                                      f"{reference.replace('_', ' ')} label")
        top = int(np.bincount(rated, minlength=len(cats)).argmax())
        columns: dict[str, np.ndarray] = {}
        for k, label in enumerate(cats):
            name = f"always {label}" + (" (majority class)" if k == top else "")
            columns[name] = np.full(data.n_units, k, dtype=np.int64)
        missing = []
        for name in judges:
            if name == self.judge:
                continue
            rows = self._other_judges[self._other_judges["rater"] == name]
            if rows.empty:
                missing.append(name)
                continue
            outside = sorted(set(rows["label"].dropna().astype(str).unique()) - {str(c) for c in cats})
            if outside:
                raise InputError(f"baseline judge {name!r}: labels {outside} are not in the scheme's labels {cats}")
            by_unit = rows.drop_duplicates("unit").set_index("unit")["label"].reindex(list(data.units))
            columns[f"judge {name}"] = np.array([cats.index(x) if x in cats else -1 for x in by_unit.tolist()],
                                                dtype=np.int64)
        settings = PanelSettings(n_resamples=self.n_resamples, seed=self.seed)
        differences = baseline_differences(data, judge, reference_codes, columns, list(coefficients),
                                           settings=settings)
        present = sorted(set(self._other_judges["rater"].unique()))
        reason = (f"baseline judge(s) {missing} have no labels on the judge's units; judges present: {present}"
                  if missing else None)
        return BaselineComparison(differences=tuple(differences), undefined_reason=reason)

    def without_annotators(self, names: Sequence[str]) -> GateEvidence:
        """The same evidence with these annotators' labels left out (a policy excluding flagged annotators)."""
        table = self.table[~((self.table["source"] == "human") & self.table["rater"].isin(list(names)))]
        return GateEvidence(table, judge=self.judge, tie_policy=self.tie_policy, level=self.level,
                            n_resamples=self.n_resamples, seed=self.seed, weighted=self.weighted,
                            registration=self.registration)


def reference_labels(table: pd.DataFrame, *, reference: str, tie_policy: str) -> pd.DataFrame:
    """The reference label per unit that has human labels, for ``reference`` "human_majority" or "resolved".

    One row per unit (in unit order within each kind): unit, kind, label (None where
    the reference has none: an excluded tie, or no label), tied (the independent vote
    was tied), adjudicated (the resolved label is an adjudication). "human_majority" is
    the independent majority under ``tie_policy``; "resolved" is the adjudicated label
    where one exists, else that majority. The same rules as ``validate`` and the gate.
    """
    if reference not in REFERENCES:
        raise InputError(f"reference {reference!r}: expected one of {list(REFERENCES)}")
    humans = table.loc[table["source"] == "human", ["unit", "rater", "label", "kind"]]  # the columns read
    frames = []
    for kind, rows in humans.groupby("kind", sort=True):
        categories, positive = scheme_of([kind], rows["label"])
        if categories is None:
            categories = tuple(sorted(set(rows["label"].dropna().astype(str).unique())))
        binary_positive = positive if len(categories) == 2 else None
        wide = rows.pivot(index="unit", columns="rater", values="label")
        codes = np.full(wide.shape, -1, dtype=np.int64)
        for k, label in enumerate(categories):
            codes[(wide == label).to_numpy()] = k
        units = [str(u) for u in wide.index.tolist()]  # a list first: iterating an Arrow index is per element
        vote = majority_vote(codes, units=units, categories=categories, voters=[str(c) for c in wide.columns],
                             tie_policy=tie_policy, positive=binary_positive)
        # The first row of each unit, as filtering to the human units first gives (every unit of ``wide`` has one).
        columns = ["unit", *(c for c in ("adjudicated", "adjudicated_where") if c in table.columns)]
        info = table[columns].drop_duplicates("unit").set_index("unit").reindex(wide.index)
        adjudicated = info["adjudicated"] if "adjudicated" in info else pd.Series(None, index=wide.index)
        where = info["adjudicated_where"].tolist() if "adjudicated_where" in info else None
        resolved, _ = resolve(vote, adjudicated.tolist(), units=units, categories=categories, where=where)
        chosen = vote.codes if reference == "human_majority" else resolved
        given = adjudicated.notna().to_numpy() & (reference == "resolved")
        frames.append(pd.DataFrame({"unit": units, "kind": kind,
                                    "label": pd.Series(labels_of(chosen, categories), dtype=object),
                                    "tied": vote.tied, "adjudicated": given}))
    if not frames:
        return pd.DataFrame({"unit": [], "kind": [], "label": [], "tied": [], "adjudicated": []})
    return pd.concat(frames, ignore_index=True)


def audit_frame(table: pd.DataFrame, section: Section, judge: str, *, model_field: str = "backbone",
                reference: str = "human_majority") -> pd.DataFrame:
    """One row per unit the judge saw: its label, the reference label, model, family, cluster.

    ``reference`` "human_majority" is the independent majority; "resolved" the
    adjudicated label where one exists, else that majority (a two-coder tie that was
    adjudicated stays in the audit instead of dropping out)."""
    if reference not in REFERENCES:
        raise InputError(f"reference {reference!r}: expected one of {list(REFERENCES)}")
    report = section.report if section is not None else None
    if report is None or report.majority is None:
        raise InputError("family audit: no human labels, so no human reference")
    if reference == "resolved":
        resolved = reference_labels(table, reference="resolved", tie_policy=report.majority.tie_policy)
        labels = pd.Series(resolved["label"].to_numpy(dtype=object), index=resolved["unit"].astype(str))
    else:
        labels = pd.Series(labels_of(report.majority.codes, report.categories), index=list(section.units))
    return _judge_rows(table, judge, human=labels, model_field=model_field)


def _judge_rows(table: pd.DataFrame, judge: str, *, human: pd.Series | None,
                model_field: str = "backbone") -> pd.DataFrame:
    if model_field not in table.columns:
        fixed = {"unit", "rater", "label", "source", "backend", "source_file", "codebook_sha256", "cluster", "weight",
                 "kind", "stratum", "adjudicated", "adjudicated_where", "sample_index", "inclusion_prob",
                 "unscored_reason", "trajectory_id"}
        raise InputError(f"--model-field {model_field!r}: not a stratum of the study's units; strata: "
                         f"{sorted(c for c in table.columns if c not in fixed)}")
    read = list(dict.fromkeys(["unit", "cluster", model_field, "family", "label", "weight", "stratum"]))
    rows = table.loc[(table["source"] == "judge") & (table["rater"] == judge), read]
    labels = rows["unit"].map(human).to_numpy(dtype=object) if human is not None else np.full(len(rows), None)
    return pd.DataFrame({
        "unit": rows["unit"].to_numpy(), "cluster": rows["cluster"].to_numpy(),
        "model": rows[model_field].astype(str).to_numpy(), "family": rows["family"].astype(str).to_numpy(),
        "judge": rows["label"].to_numpy(dtype=object), "human": labels,
        "weight": rows["weight"].to_numpy(float), "judge_name": judge, "stratum": rows["stratum"].astype(str).to_numpy(),
    })


def _fmt(result: Any, level: float) -> str:
    if result is None:
        return "--"
    if result.undefined_reason or not math.isfinite(result.statistic):
        return f"-- ({result.undefined_reason})"
    ci = result.confidence_interval(level)
    return f"{result.statistic:.3f} [{ci.low:.3f}, {ci.high:.3f}]"


def format_validation(result: ValidationResult) -> str:
    """Plain-text summary: the numbers a reader checks first, each beside its baselines."""
    lines = [*result.notes]
    pct = f"{result.level:.0%}"
    for section in result.sections:
        report = section.report
        over = next((r.details.get("resampling") for v in report.judges_vs_humans if v.vs_majority is not None
                     for r in v.vs_majority.results.values() if r.details.get("resampling")), None)
        lines.append(f"\n== {section.kind}: {section.n_units} units, humans {list(report.humans)}, "
                     f"judges {list(report.judges)} ({pct} CIs" + (f" resampling {over}" if over else "") + ") ==")
        if report.majority is not None:
            lines.append(f"human majority: {report.majority.n} units, {report.majority.n_ties} ties "
                         f"({report.majority.tie_policy})")
        if section.adjudication is not None:
            a = section.adjudication
            lines.append(f"adjudication: {a.n_adjudicated} units adjudicated ({a.n_changed} changed the majority, "
                         f"{a.n_confirmed} confirmed it, {a.n_resolved_ties} resolved a tie), {a.n_still_tied} still tied")
        if report.human_panel is not None:
            hp = report.human_panel
            lines.append(f"human vs human: mean pairwise raw {hp.mean_pairwise_agreement:.3f}; "
                         + "; ".join(f"{k} {_fmt(v, result.level)}" for k, v in hp.results.items()))
        for versus in report.judges_vs_humans:
            counts = section.unscored.get(versus.judge, {})
            lines.append(f"judge {versus.judge}: unscored {counts.get('unscored', 0)} of {counts.get('total', 0)}")
            if versus.vs_majority is not None:
                lines.append("  vs majority: " + "; ".join(f"{k} {_fmt(v, result.level)}"
                                                           for k, v in versus.vs_majority.results.items()))
            resolved = section.versus(versus.judge, "resolved")
            if resolved is not None:
                lines.append("  vs resolved: " + "; ".join(f"{k} {_fmt(v, result.level)}"
                                                           for k, v in resolved.agreement.results.items()))
            means = "; ".join(f"{k} {v:.3f}" for k, v in versus.mean_vs_annotators.items() if math.isfinite(v))
            lines.append(f"  vs each annotator (mean): {means or '--'}")
            for name, ref in section.baselines.get(versus.judge, {}).items():
                lines.append(f"  baseline {name}: " + "; ".join(f"{k} {_fmt(v, result.level)}"
                                                                  for k, v in ref.agreement.results.items()))
        for ref in (*report.references, *section.resolved):
            lines.append(f"per-class vs {ref.reference} ({ref.rater}): accuracy {ref.accuracy:.3f}, "
                         + ", ".join(f"{c.label}: P {c.precision:.3f} R {c.recall:.3f} F1 {c.f1:.3f}"
                                     for c in ref.per_class))
        lines += _pair_lines((*report.judge_pairs, *section.subgroup_pairs), result.level)
        for note in report.notes:
            lines.append(f"note: {note}")
    for population in result.population:
        lines.append(f"\n== judge-judge over the population: {population.kind}, {population.n_units} judged units ==")
        lines += _pair_lines(population.tables, result.level)
    return "\n".join(lines)


def _pair_lines(tables: Sequence[JudgePairTable], level: float) -> list[str]:
    lines = []
    for table in tables:
        for pair in table.pairs:
            dis = ", ".join(f"{a}->{b}: {n}" for a, b, n in pair.disagreements())
            lines.append(f"judges {pair.rater_a} vs {pair.rater_b} [{table.subgroup or 'all'}, n={pair.n_units}]: "
                         + "; ".join(f"{k} {_fmt(v, level)}" for k, v in pair.results.items())
                         + f"; disagreements {dis}")
    return lines


def validated_units(table: pd.DataFrame, judge: str, *, tie_policy: str, reference: str = "resolved") -> pd.DataFrame:
    """The judge's validation sample as 0/1 values: unit, judge, human (the reference), weight, cluster.

    Only units with a scored judge label and a reference label (``reference``
    "resolved": the adjudicated label where one exists, else the majority; or
    "human_majority"); the positive label is the scheme's (yes, correct).
    """
    evidence = GateEvidence(table, judge=judge, tie_policy=tie_policy, level=0.95, n_resamples=0, seed=DEFAULT_SEED)
    section = evidence.section
    if section is None:
        raise InputError(f"judge {judge!r}: {evidence.missing_reason}")
    if section.positive is None:
        raise InputError(f"judge {judge!r}: labels {list(section.categories)} are not a binary scheme; "
                         f"a rate correction needs a positive label")
    frame = audit_frame(evidence.table, section, judge, reference=reference)
    frame = frame[frame["judge"].notna() & frame["human"].notna()]
    return pd.DataFrame({"unit": frame["unit"], "cluster": frame["cluster"], "weight": frame["weight"],
                         "judge": (frame["judge"] == section.positive).astype(float),
                         "human": (frame["human"] == section.positive).astype(float)}).reset_index(drop=True)
