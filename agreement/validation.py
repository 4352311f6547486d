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
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agreement.bootstrap import DEFAULT_SEED
from agreement.estimate import Estimate
from agreement.panels import (
    MAJORITY,
    JudgePairTable,
    PanelReport,
    ReferenceReport,
    PanelSettings,
    compare_pairs,
    panel_report,
    reference_report,
    report_to_dict,
)
from agreement.study_io import SIMULATED_NOTE, Study, labels_table
from samples.errors import InputError
from samples.schemes import DEFAULT_SCHEME, SCHEMES

SUBGROUP_FIELDS = ("setting", "split")


def scheme_of(kinds: list[str], labels: pd.Series) -> tuple[tuple[str, ...] | None, str | None]:
    """Categories and positive label of the kinds' scheme when every label fits it, else inferred."""
    names = {DEFAULT_SCHEME.get(k) for k in kinds}
    present = set(labels.dropna().astype(str))
    if len(names) == 1:
        scheme = SCHEMES[names.pop()]
        if present <= set(scheme.labels):
            return scheme.labels, scheme.positive
    for scheme in SCHEMES.values():
        if present and present <= set(scheme.labels):
            return scheme.labels, scheme.positive
    return None, None


def rating_data(table: pd.DataFrame, *, weighted: bool, categories: tuple[str, ...] | None):
    from agreement.table import load_labels

    frame = table[["unit", "rater", "label", "cluster", "weight"]]
    return load_labels(frame, unit="unit", rater="rater", label="label", cluster="cluster",
                       weight="weight" if weighted else None, categories=categories)


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
        }


def section_to_dict(section: Section, level: float) -> dict[str, Any]:
    body = report_to_dict(section.report, level=level)
    body["subgroup_judge_pairs"] = [
        {"subgroup": t.subgroup, "n_units": t.n_units,
         "pairs": [{"rater_a": p.rater_a, "rater_b": p.rater_b, "n_units": p.n_units,
                    "disagreements": [{"a": a, "b": b, "count": c} for a, b, c in p.disagreements()],
                    "results": {k: _result_brief(v, level) for k, v in p.results.items()}} for p in t.pairs]}
        for t in section.subgroup_pairs]
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
    body.update(kind=section.kind, unscored=section.unscored, positive=section.positive,
                units_per_stratum=section.units_per_stratum)
    return body


def _num(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def _result_brief(result: Any, level: float) -> dict[str, Any]:
    lo, hi = agreement_interval(result, level)
    return {"statistic": _num(result.statistic), "ci_low": _num(lo), "ci_high": _num(hi),
            "undefined_reason": result.undefined_reason}


def agreement_interval(result: Any, level: float) -> tuple[float, float]:
    """The interval the coverage study chose for the coefficient (``agreement.intervals``)."""
    from agreement.intervals import agreement_interval as chosen

    return chosen(result, level)[0]


def agreement_estimate(result: Any, level: float) -> Estimate:
    """An ``AgreementResult`` as an ``Estimate`` (what the gate and the report read)."""
    from agreement.intervals import agreement_interval as chosen

    (lo, hi), method = chosen(result, level)
    clustered = "cluster " if result.details.get("clustered") else ""
    return Estimate(statistic=float(result.statistic), n=int(result.n_units), ci_low=float(lo), ci_high=float(hi),
                    level=level, method=f"{result.coefficient}, {clustered}{method}",
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
                           source=data.source)
        panels = compare_pairs(table, [(name, MAJORITY) for name in constant], settings=settings)
        out[judge] = {name: reference_report(panels[(name, MAJORITY)]) for name in constant
                      if (name, MAJORITY) in panels}
    return out


def _pair_table(data: Any, judges: list[str], mask: np.ndarray, subgroup: str, settings: PanelSettings) -> JudgePairTable:
    part = data.select_raters(judges).select_units(mask)
    pairs = [(a, b) for i, a in enumerate(judges) for b in judges[i + 1:]]
    found = compare_pairs(part, pairs, settings=settings)
    return JudgePairTable(subgroup=subgroup, n_units=part.n_units, pairs=tuple(found[p] for p in pairs if p in found))


def _unscored(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    judges = table[table["source"] == "judge"]
    out = {}
    for judge, group in judges.groupby("rater", sort=True):
        missing = group[group["label"].isna()]
        reasons = Counter(str(r).split(":")[0] if r else "unknown" for r in missing["unscored_reason"])
        out[str(judge)] = {"unscored": int(len(missing)), "total": int(len(group)), "reasons": dict(sorted(reasons.items()))}
    return out


def _section(kind: str, table: pd.DataFrame, *, judges: list[str], tie_policy: str, weighted: bool,
             settings: PanelSettings) -> Section:
    categories, positive = scheme_of(sorted(set(table["kind"])), table["label"])
    data = rating_data(table, weighted=weighted, categories=categories)
    kind_judges = [j for j in judges if j in data.raters]
    binary_positive = positive if data.categories and len(data.categories) == 2 else None
    report = panel_report(data, judges=kind_judges, tie_policy=tie_policy, positive=binary_positive,
                          reference="majority", settings=settings)
    unit_info = table.drop_duplicates("unit").set_index("unit")
    subgroup_tables = []
    if len(kind_judges) >= 2:
        for name in SUBGROUP_FIELDS:
            values = unit_info[name].reindex(list(data.units)).astype(str).to_numpy()
            for value in sorted(set(values)):
                subgroup_tables.append(_pair_table(data, kind_judges, values == value, f"{name}={value}", settings))
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
                   units=tuple(str(u) for u in data.units))


def validate_table(table: pd.DataFrame, *, tie_policy: str, weighted: bool = False, n_resamples: int = 10_000,
                   seed: int = DEFAULT_SEED, level: float = 0.95, fingerprints: dict[str, str] | None = None,
                   ) -> ValidationResult:
    """Validate every judge in a joined labels table (``agreement.study_io.labels_table``)."""
    if table.empty:
        raise InputError("validation: no labels on the sampled units")
    settings = PanelSettings(n_resamples=n_resamples, seed=seed, cluster=True)
    judges = sorted(set(table.loc[table["source"] == "judge", "rater"]))
    humans = sorted(set(table.loc[table["source"] == "human", "rater"]))
    simulated = bool((table["backend"] == "simulated").any())
    kinds = sorted(set(table["kind"]))
    sections = [_section(k, table[table["kind"] == k], judges=judges, tie_policy=tie_policy, weighted=weighted,
                         settings=settings) for k in kinds]
    notes = []
    schemes = {DEFAULT_SCHEME.get(k) for k in kinds}
    if len(kinds) > 1 and len(schemes) == 1:
        sections.append(_section("all", table, judges=judges, tie_policy=tie_policy, weighted=weighted,
                                 settings=settings))
    elif len(kinds) > 1:
        notes.append(f"no overall section: the unit kinds {kinds} use different label schemes, so pooling "
                     f"their labels would compare unlike judgements")
    if simulated:
        notes.insert(0, SIMULATED_NOTE)
    if weighted:
        notes.append("Estimates are reweighted by 1/inclusion probability of the sample design.")
    return ValidationResult(sections=tuple(sections), judges=tuple(judges), humans=tuple(humans),
                            simulated=simulated, weighted=weighted, settings=settings, level=level,
                            tie_policy=tie_policy, fingerprints=dict(fingerprints or {}), notes=tuple(notes))


def validate_study(study: Study, *, tie_policy: str, weighted: bool = False, n_resamples: int = 10_000,
                   seed: int = DEFAULT_SEED, level: float = 0.95, judges: list[str] | None = None) -> ValidationResult:
    table = labels_table(study, judges=judges)
    return validate_table(table, tie_policy=tie_policy, weighted=weighted, n_resamples=n_resamples, seed=seed,
                          level=level, fingerprints=study.fingerprints)


class GateEvidence:
    """The gate's measurements for one judge, computed on demand from the labels table."""

    def __init__(self, table: pd.DataFrame, *, judge: str, tie_policy: str, level: float, n_resamples: int,
                 seed: int, weighted: bool = False) -> None:
        judged = table[(table["source"] == "judge") & (table["rater"] == judge)]
        if judged.empty:
            present = sorted(set(table.loc[table["source"] == "judge", "rater"]))
            raise InputError(f"judge {judge!r} has no labels on the sampled units; judges present: {present}")
        kinds = sorted(set(judged["kind"]))
        self.judge = judge
        self.table = table[table["kind"].isin(kinds) & ((table["source"] == "human") | (table["rater"] == judge))]
        self.level, self.seed, self.n_resamples = level, seed, n_resamples
        self.section = _section("+".join(kinds), self.table, judges=[judge], tie_policy=tie_policy,
                                weighted=weighted, settings=PanelSettings(n_resamples=n_resamples, seed=seed))
        self._data = rating_data(self.table, weighted=weighted, categories=self.section.categories)

    def _vs_humans(self):
        report = self.section.report
        return report.judges_vs_humans[0] if report.judges_vs_humans else None

    def agreement(self, coefficient: str, reference: str) -> Estimate | None:
        versus = self._vs_humans()
        if versus is None or versus.vs_majority is None:
            return None
        if coefficient not in versus.vs_majority.results:
            raise InputError(f"coefficient {coefficient!r} is not computed for judge vs majority; "
                             f"available: {sorted(versus.vs_majority.results)}")
        return agreement_estimate(versus.vs_majority.results[coefficient], self.level)

    def human_ceiling(self, coefficient: str):
        from agreement.panels import ceiling_difference

        return ceiling_difference(self._data, self.judge, list(self.section.report.humans), coefficient,
                                  settings=PanelSettings(n_resamples=self.n_resamples, seed=self.seed))

    def alt_test(self, **settings: Any):
        from agreement.alttest import alt_test_table

        humans = list(self.section.report.humans)
        return alt_test_table(self.table, judge=self.judge, humans=humans, **settings)

    def family_audit(self, positive: list[str]):
        from agreement.audit import audit

        return audit(audit_frame(self.table, self.section, self.judge), positive=positive,
                     n_resamples=self.n_resamples, seed=self.seed, level=self.level, judge=self.judge)

    def unscored(self) -> tuple[int, int]:
        counts = self.section.unscored.get(self.judge, {"unscored": 0, "total": 0})
        return counts["unscored"], counts["total"]

    def units_per_stratum(self) -> dict[str, int]:
        return dict(self.section.units_per_stratum)


def audit_frame(table: pd.DataFrame, section: Section, judge: str, *, model_field: str = "backbone") -> pd.DataFrame:
    """One row per unit the judge saw: its label, the human majority label, model, family, cluster."""
    report = section.report
    if report.majority is None:
        raise InputError("family audit: no human labels, so no human reference")
    majority = pd.Series([report.categories[c] if c >= 0 else None for c in report.majority.codes],
                         index=list(section.units))
    rows = table[(table["source"] == "judge") & (table["rater"] == judge)]
    return pd.DataFrame({
        "unit": rows["unit"].to_numpy(), "cluster": rows["cluster"].to_numpy(),
        "model": rows[model_field].astype(str).to_numpy(), "family": rows["family"].astype(str).to_numpy(),
        "judge": rows["label"].to_numpy(dtype=object), "human": rows["unit"].map(majority).to_numpy(dtype=object),
        "weight": rows["weight"].to_numpy(float), "judge_name": judge,
    })



def _fmt(result: Any, level: float) -> str:
    if result is None:
        return "--"
    if result.undefined_reason or not math.isfinite(result.statistic):
        return f"-- ({result.undefined_reason})"
    lo, hi = agreement_interval(result, level)
    return f"{result.statistic:.3f} [{lo:.3f}, {hi:.3f}]"


def format_validation(result: ValidationResult) -> str:
    """Plain-text summary: the numbers a reader checks first, each beside its baselines."""
    lines = [*result.notes]
    pct = f"{result.level:.0%}"
    for section in result.sections:
        report = section.report
        lines.append(f"\n== {section.kind}: {section.n_units} units, humans {list(report.humans)}, "
                     f"judges {list(report.judges)} ({pct} cluster-bootstrap CIs) ==")
        if report.majority is not None:
            lines.append(f"human majority: {report.majority.n} units, {report.majority.n_ties} ties "
                         f"({report.majority.tie_policy})")
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
            means = "; ".join(f"{k} {v:.3f}" for k, v in versus.mean_vs_annotators.items() if math.isfinite(v))
            lines.append(f"  vs each annotator (mean): {means or '--'}")
            for name, ref in section.baselines.get(versus.judge, {}).items():
                lines.append(f"  baseline {name}: " + "; ".join(f"{k} {_fmt(v, result.level)}"
                                                                  for k, v in ref.agreement.results.items()))
        for ref in report.references:
            lines.append(f"per-class vs {ref.reference} ({ref.rater}): accuracy {ref.accuracy:.3f}, "
                         + ", ".join(f"{c.label}: P {c.precision:.3f} R {c.recall:.3f} F1 {c.f1:.3f}"
                                     for c in ref.per_class))
        for table in (*report.judge_pairs, *section.subgroup_pairs):
            for pair in table.pairs:
                dis = ", ".join(f"{a}->{b}: {n}" for a, b, n in pair.disagreements())
                lines.append(f"judges {pair.rater_a} vs {pair.rater_b} [{table.subgroup or 'all'}, n={pair.n_units}]: "
                             + "; ".join(f"{k} {_fmt(v, result.level)}" for k, v in pair.results.items())
                             + f"; disagreements {dis}")
        for note in report.notes:
            lines.append(f"note: {note}")
    return "\n".join(lines)


def validated_units(table: pd.DataFrame, judge: str, *, tie_policy: str) -> pd.DataFrame:
    """The judge's validation sample as 0/1 values: unit, judge, human (majority), weight, cluster.

    Only units with a scored judge label and a human majority; the positive label is
    the scheme's (yes, correct).
    """
    evidence = GateEvidence(table, judge=judge, tie_policy=tie_policy, level=0.95, n_resamples=0, seed=DEFAULT_SEED)
    section = evidence.section
    if section.positive is None:
        raise InputError(f"judge {judge!r}: labels {list(section.categories)} are not a binary scheme; "
                         f"a rate correction needs a positive label")
    frame = audit_frame(evidence.table, section, judge)
    frame = frame[frame["judge"].notna() & frame["human"].notna()]
    return pd.DataFrame({"unit": frame["unit"], "cluster": frame["cluster"], "weight": frame["weight"],
                         "judge": (frame["judge"] == section.positive).astype(float),
                         "human": (frame["human"] == section.positive).astype(float)}).reset_index(drop=True)
