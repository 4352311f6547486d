"""Agreement panels: the tables the seed papers report, from one labels table.

- human majority per unit with an explicit tie policy (``agreement.majority``);
- human-human: mean pairwise raw agreement, Fleiss' kappa, Gwet's AC1 and
  Krippendorff's alpha over the annotators (ISE Table 7, left);
- judge vs humans: each judge against the human majority and against each
  annotator (raw, Cohen's kappa, AC1; ISE Table 7, right, and the "agrees with each
  individual annotator on average" figure);
- judge-judge pairs: raw, kappa, AC1 per pair, overall and per subgroup, with the
  directional disagreement counts (ISE Table 6 and its "GPT-5 says no where Sonnet
  says yes on 1,334 instances");
- against a reference rater (the majority or a named rater): confusion matrix,
  per-class precision, recall and F1, accuracy (EHQ's classifier validation).

Two-rater coefficients come from the engine's ``compute_pairs`` and follow its
missing-data conventions: raw agreement and Cohen's kappa use the units both raters
labelled; AC1's chance term uses every unit either labelled (Gwet 2014). A judge's
unscored rows are missing, counted in ``missing_by_rater`` and ``n_only_a``/``n_only_b``,
never a label. Every result is an ``AgreementResult`` with its analytic SE; the human
panel, judge vs majority, judge pairs and reference reports also carry the bootstrap
resamples (one shared draw per table: judges, majority and reference are columns of
one small table whose units collapse to a few rating patterns). Judge vs each
annotator carries analytic SEs only: with many annotators, a shared draw would have
one atom per unit and cost B x n per table, the price the human panel pays once.
Every kappa carries the Byrt-Bishop-Carlin prevalence and bias indices beside it
(the engine sets them for two raters and two categories; the human panel reports
their mean over annotator pairs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from agreement.bootstrap import DEFAULT_SEED
from agreement.intervals import bootstrap_interval, method_for
from agreement.majority import MajorityVote, check_tie_policy, majority_vote
from agreement.results import AgreementResult
from agreement.table import RatingData
from samples import DEFAULT_LEVEL, ConfidenceInterval, InputError, Resampling, check_level

PANEL_COEFFICIENTS = ("percent_agreement", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha")
PAIR_COEFFICIENTS = ("percent_agreement", "cohen_kappa", "gwet_ac1")
MAJORITY = "human majority"


@dataclass(frozen=True, kw_only=True)
class PanelSettings:
    """How every coefficient in a report is computed (recorded in the report)."""

    weights: Any = "identity"
    """A weight family name or a q x q agreement-weight array (applies to every weighted coefficient)."""
    alpha_level: str = "nominal"
    """Krippendorff's alpha metric: nominal, ordinal, interval or ratio."""
    n_resamples: int = 10_000
    seed: int = DEFAULT_SEED
    cluster: bool = True
    """Resample whole clusters (and cluster the analytic SEs) when the data carry cluster ids."""
    pair_coefficients: tuple[str, ...] = PAIR_COEFFICIENTS
    """Two-rater coefficients; open-vocabulary (free-text) labels may drop cohen_kappa, whose
    per-unit statistics grow with the square of the number of categories."""
    panel_coefficients: tuple[str, ...] | None = None
    """Human-human panel coefficients (any registered ones; those that do not fit the number of
    annotators come back undefined with the reason). None: PANEL_COEFFICIENTS, plus Cohen's
    kappa when there are exactly two annotators (the two-coder statistic EHQ reports)."""

    def __post_init__(self) -> None:
        Resampling(n_resamples=self.n_resamples, seed=self.seed, allow_zero=True)  # raises on a bad value
        from agreement.coefficients import ALPHA_LEVELS
        from agreement.weights import WEIGHT_FAMILIES

        if isinstance(self.weights, str) and self.weights not in WEIGHT_FAMILIES:
            raise InputError(f"weights={self.weights!r}: expected one of {sorted(WEIGHT_FAMILIES)} or a q x q array")
        if self.alpha_level not in ALPHA_LEVELS:
            raise InputError(f"alpha_level={self.alpha_level!r}: expected one of {list(ALPHA_LEVELS)}")
        unknown = [c for c in self.pair_coefficients if c not in PAIR_COEFFICIENTS]
        if unknown or "percent_agreement" not in self.pair_coefficients:
            raise InputError(f"pair_coefficients={list(self.pair_coefficients)}: expected percent_agreement plus "
                             f"any of {list(PAIR_COEFFICIENTS[1:])}")
        if self.panel_coefficients is not None:
            from agreement.coefficients import COEFFICIENTS

            unknown = [c for c in self.panel_coefficients if c not in COEFFICIENTS]
            if unknown or not self.panel_coefficients:
                raise InputError(f"panel_coefficients={list(self.panel_coefficients)}: expected names from "
                                 f"{sorted(COEFFICIENTS)}")

    def human_coefficients(self, n_annotators: int) -> list[str]:
        """The human-human panel's coefficients for ``n_annotators`` annotators."""
        if self.panel_coefficients is not None:
            return list(self.panel_coefficients)
        return list(PANEL_COEFFICIENTS) + (["cohen_kappa"] if n_annotators == 2 else [])


@dataclass(frozen=True, kw_only=True)
class PairPanel:
    """Two raters: coefficients, confusion matrix and directional disagreements."""

    rater_a: str
    rater_b: str
    categories: tuple[Any, ...]
    n_units: int
    """Units both raters labelled (raw agreement and Cohen's kappa use exactly these)."""
    n_only_a: int
    """Units only ``rater_a`` labelled (``rater_b`` missing or unscored)."""
    n_only_b: int
    cells: np.ndarray
    """(k, 3) nonzero cells of the confusion matrix over the units both labelled: (code by
    ``rater_a``, code by ``rater_b``, units), sorted. Sparse, because open vocabularies
    (free-text labels) have thousands of categories."""
    results: Mapping[str, AgreementResult]

    @property
    def n(self) -> int:
        return self.n_units

    @property
    def confusion(self) -> np.ndarray:
        """Dense (q, q) counts: rows ``rater_a``'s label, columns ``rater_b``'s."""
        q = len(self.categories)
        dense = np.zeros((q, q), dtype=np.int64)
        dense[self.cells[:, 0], self.cells[:, 1]] = self.cells[:, 2]
        return dense

    def disagreements(self) -> list[tuple[Any, Any, int]]:
        """Directional disagreement counts: (label by a, label by b, units) for every nonzero off-diagonal cell."""
        return [(self.categories[i], self.categories[j], int(c)) for i, j, c in self.cells.tolist() if i != j]


@dataclass(frozen=True, kw_only=True)
class HumanPanel:
    """Agreement among the human annotators (ISE Table 7, "human vs human")."""

    raters: tuple[str, ...]
    n_units: int
    """Units with at least one human rating."""
    n_pairable: int
    """Units with at least two human ratings (the ones agreement can use)."""
    n_missing: int
    """Empty (unit, annotator) cells among the rated units."""
    pairwise_agreement: Mapping[tuple[str, str], float]
    """Raw agreement of each annotator pair over the units both rated (NaN: no shared unit)."""
    mean_pairwise_agreement: float
    """Mean of ``pairwise_agreement`` over pairs sharing a unit (ISE's "mean pairwise raw agreement")."""
    prevalence_index: float | None
    """Mean over annotator pairs of the Byrt-Bishop-Carlin prevalence index (two categories only)."""
    bias_index: float | None
    """Mean over annotator pairs of the absolute bias index (a pair's sign depends on its order)."""
    results: Mapping[str, AgreementResult]


@dataclass(frozen=True, kw_only=True)
class JudgeVsHumans:
    """One judge against the human majority and against each annotator."""

    judge: str
    vs_majority: PairPanel | None
    """None when no unit has both a majority label and a judge label (reason in ``undefined_reason``)."""
    vs_annotators: tuple[PairPanel, ...]
    """Per annotator; analytic SEs and t intervals (no bootstrap: see the module docstring)."""
    mean_vs_annotators: Mapping[str, float]
    """Coefficient -> mean statistic over annotators where it is defined (NaN if none)."""
    undefined_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class JudgePairTable:
    """Every judge pair on one subgroup of units (``subgroup`` None = all units)."""

    subgroup: str | None
    n_units: int
    pairs: tuple[PairPanel, ...]


@dataclass(frozen=True, kw_only=True)
class ClassMetrics:
    """Precision, recall and F1 of one class against the reference (NaN + reason when undefined)."""

    label: Any
    support: int
    """Units the reference puts in this class."""
    predicted: int
    """Units the rater puts in this class."""
    precision: float
    recall: float
    f1: float
    undefined_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReferenceReport:
    """A rater scored against a reference (EHQ's classifier validation)."""

    rater: str
    reference: str
    agreement: PairPanel
    """``rater_a`` = the rater, ``rater_b`` = the reference (accuracy = its raw agreement)."""
    per_class: tuple[ClassMetrics, ...]
    accuracy: float
    macro_f1: float
    """Mean F1 over classes where it is defined (NaN if none)."""

    @property
    def confusion(self) -> np.ndarray:
        """Dense (q, q) counts: rows the reference's label, columns the rater's."""
        return self.agreement.confusion.T


@dataclass(frozen=True, kw_only=True)
class PanelReport:
    """Everything ``accord agree`` prints, computed once."""

    source: str
    humans: tuple[str, ...]
    judges: tuple[str, ...]
    categories: tuple[Any, ...]
    n_units: int
    n_ratings: int
    missing_by_rater: Mapping[str, int]
    """Units each rater did not label (a judge's unscored rows included)."""
    settings: PanelSettings
    majority: MajorityVote | None
    human_panel: HumanPanel | None
    judges_vs_humans: tuple[JudgeVsHumans, ...]
    judge_pairs: tuple[JudgePairTable, ...]
    references: tuple[ReferenceReport, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Why a panel is absent or incomplete (e.g. fewer than two humans, tied units awaiting adjudication)."""


def compare_pairs(table: RatingData, pairs: Sequence[tuple[str, str]], *, settings: PanelSettings,
                  resample: bool = True) -> dict[tuple[str, str], PairPanel]:
    """Pair panels for ``pairs`` of ``table``'s raters, on one shared resample draw.

    Uses the engine's ``compute_pairs``: the table's units collapse to rating patterns
    once, and every pair's coefficients are slices of the same resamples. Pairs that
    share no labelled unit are left out (the caller says why).
    """
    from agreement import compute_pairs

    codes, q = table.codes, table.n_categories
    column = {r: i for i, r in enumerate(table.raters)}
    shared = [(a, b) for a, b in pairs if np.any((codes[:, column[a]] >= 0) & (codes[:, column[b]] >= 0))]
    if not shared:
        return {}
    results = compute_pairs(table, list(settings.pair_coefficients), shared, weights=settings.weights,
                            alpha_level=settings.alpha_level, n_resamples=settings.n_resamples if resample else 0,
                            seed=settings.seed, cluster=settings.cluster)
    panels = {}
    for a, b in shared:
        ca, cb = codes[:, column[a]], codes[:, column[b]]
        both = (ca >= 0) & (cb >= 0)
        keys, counts = np.unique(ca[both].astype(np.int64) * q + cb[both], return_counts=True)
        panels[(a, b)] = PairPanel(rater_a=a, rater_b=b, categories=table.categories, n_units=int(both.sum()),
                                   n_only_a=int(((ca >= 0) & (cb < 0)).sum()),
                                   n_only_b=int(((cb >= 0) & (ca < 0)).sum()),
                                   cells=np.column_stack([keys // q, keys % q, counts]), results=results[(a, b)])
    return panels


def pairwise_raw_agreement(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r, r) raw agreement and shared-unit counts for every rater pair, vectorised over units."""
    present = codes >= 0
    shared = present.T.astype(np.int64) @ present.astype(np.int64)
    same = np.zeros_like(shared)
    for start in range(0, codes.shape[0], 50_000):  # bounds the n x r x r boolean block
        block = codes[start:start + 50_000]
        same += ((block[:, :, None] == block[:, None, :]) & (block[:, :, None] >= 0)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(shared > 0, same / np.maximum(shared, 1), np.nan), shared


def _mean_pair_indices(data: RatingData, shared: np.ndarray) -> tuple[float | None, float | None]:
    """Mean Byrt-Bishop-Carlin prevalence and |bias| over rater pairs sharing a unit (binary only)."""
    from agreement import prevalence_bias_indices

    if data.n_categories != 2:
        return None, None
    indices = [prevalence_bias_indices(data, [a, b]) for i, a in enumerate(data.raters)
               for j, b in enumerate(data.raters) if i < j and shared[i, j] > 0]
    if not indices:
        return None, None
    return (float(np.mean([x.prevalence_index for x in indices])),
            float(np.mean([abs(x.bias_index) for x in indices])))


def human_panel(data: RatingData, humans: Sequence[str], *, settings: PanelSettings) -> HumanPanel:
    """Human-human agreement over the units at least one annotator rated."""
    from agreement import compute

    if len(humans) < 2:
        raise InputError(f"humans={list(humans)}: the human-human panel needs at least two annotators")
    sub = data.select_raters(humans)
    sub = sub.select_units(np.asarray((sub.codes >= 0).any(axis=1)))
    raw, shared = pairwise_raw_agreement(sub.codes)
    upper = np.triu_indices(len(humans), k=1)
    defined = raw[upper][shared[upper] > 0]
    prevalence, bias = _mean_pair_indices(sub, shared)
    results = compute(sub, settings.human_coefficients(len(humans)), weights=settings.weights,
                      alpha_level=settings.alpha_level, n_resamples=settings.n_resamples, seed=settings.seed,
                      cluster=settings.cluster)
    return HumanPanel(raters=tuple(humans), n_units=sub.n_units,
                      n_pairable=int(((sub.codes >= 0).sum(axis=1) >= 2).sum()), n_missing=int((sub.codes < 0).sum()),
                      pairwise_agreement={(humans[i], humans[j]): float(raw[i, j]) for i, j in zip(*upper)},
                      mean_pairwise_agreement=float(defined.mean()) if defined.size else math.nan,
                      prevalence_index=prevalence, bias_index=bias, results=results)


def _mean_statistics(panels: Sequence[PairPanel], names: Sequence[str]) -> dict[str, float]:
    means = {}
    for name in names:
        values = np.array([p.results[name].statistic for p in panels], dtype=float)
        values = values[np.isfinite(values)]
        means[name] = float(values.mean()) if values.size else math.nan
    return means


def class_metrics(cells: np.ndarray, categories: Sequence[Any]) -> tuple[ClassMetrics, ...]:
    """Per-class precision/recall/F1 from confusion cells (reference code, rater code, count)."""
    cells = np.asarray(cells, dtype=np.int64).reshape(-1, 3)
    q = len(categories)
    support = np.bincount(cells[:, 0], weights=cells[:, 2], minlength=q)
    predicted = np.bincount(cells[:, 1], weights=cells[:, 2], minlength=q)
    hit = cells[:, 0] == cells[:, 1]
    tp = np.bincount(cells[hit, 0], weights=cells[hit, 2], minlength=q)
    out = []
    for k, label in enumerate(categories):
        reasons = []
        precision = tp[k] / predicted[k] if predicted[k] else math.nan
        recall = tp[k] / support[k] if support[k] else math.nan
        if not predicted[k]:
            reasons.append("the rater never gives this label (precision undefined)")
        if not support[k]:
            reasons.append("the reference never gives this label (recall undefined)")
        if math.isnan(precision) or math.isnan(recall):
            f1 = math.nan
        elif precision + recall == 0:
            f1 = 0.0
        else:
            f1 = 2 * precision * recall / (precision + recall)
        out.append(ClassMetrics(label=label, support=int(support[k]), predicted=int(predicted[k]),
                                precision=float(precision), recall=float(recall), f1=float(f1),
                                undefined_reason="; ".join(reasons) or None))
    return tuple(out)


def reference_report(panel: PairPanel) -> ReferenceReport:
    """``panel.rater_a`` scored against ``panel.rater_b`` as the reference."""
    per_class = class_metrics(panel.cells[:, [1, 0, 2]], panel.categories)
    f1 = np.array([c.f1 for c in per_class])
    f1 = f1[np.isfinite(f1)]
    hits = panel.cells[panel.cells[:, 0] == panel.cells[:, 1], 2].sum()
    return ReferenceReport(rater=panel.rater_a, reference=panel.rater_b, agreement=panel, per_class=per_class,
                           accuracy=float(hits / panel.n_units),
                           macro_f1=float(f1.mean()) if f1.size else math.nan)


def _subgroup_masks(data: RatingData, subgroups: Mapping[Any, Any] | None) -> list[tuple[str, np.ndarray]]:
    if not subgroups:
        return []
    groups = np.array([str(subgroups.get(u, "")) for u in data.units.tolist()], dtype=object)
    missing = np.flatnonzero(groups == "")
    if missing.size:
        raise InputError(f"subgroups: unit {data.units[missing[0]]!r} has no subgroup value")
    return [(str(g), groups == g) for g in sorted(set(groups.tolist()))]


def _with_columns(data: RatingData, names: Sequence[str], columns: Sequence[np.ndarray]) -> RatingData:
    return RatingData(units=data.units, raters=tuple(names), categories=data.categories,
                      codes=np.column_stack(columns), clusters=data.clusters, unit_weights=data.unit_weights,
                      source=data.source, strata=data.strata)


def judge_pair_table(data: RatingData, judges: Sequence[str], mask: np.ndarray, subgroup: str | None,
                     settings: PanelSettings) -> JudgePairTable:
    """Every pair of ``judges`` on the units of ``mask``: its resamples depend on those units and judges only."""
    part = data.select_raters(list(judges)).select_units(mask)
    pairs = [(a, b) for i, a in enumerate(judges) for b in judges[i + 1:]]
    found = compare_pairs(part, pairs, settings=settings)
    return JudgePairTable(subgroup=subgroup, n_units=part.n_units, pairs=tuple(found[p] for p in pairs if p in found))


def panel_report(data: RatingData, *, judges: Sequence[str] = (), tie_policy: str, positive: Any = None,
                 reference: str | None = "majority", subgroups: Mapping[Any, Any] | None = None,
                 subgroup_name: str = "subgroup", settings: PanelSettings | None = None) -> PanelReport:
    """All panels for ``data``: raters not in ``judges`` are the humans.

    ``reference`` is "majority" (the human majority), a rater name, or None (no
    reference report). ``subgroups`` maps unit id -> subgroup value for the
    per-subgroup judge-judge tables.
    """
    settings = settings or PanelSettings()
    check_tie_policy(tie_policy, data.categories, positive)
    judges = tuple(dict.fromkeys(str(j) for j in judges))
    for judge in judges:
        data.rater_index(judge)
    if MAJORITY in data.raters:
        raise InputError(f"{data.source}: the rater name {MAJORITY!r} is reserved for the human majority")
    if reference not in (None, "majority"):
        data.rater_index(reference)
    humans = tuple(r for r in data.raters if r not in judges)
    notes: list[str] = []
    majority = panel = None
    if humans:
        majority = majority_vote(data.codes[:, [data.rater_index(h) for h in humans]], units=data.units,
                                 categories=data.categories, voters=humans, tie_policy=tie_policy, positive=positive)
        if majority.needs_adjudication:
            notes.append(f"{majority.n_ties} tied unit(s) await adjudication; the judge-vs-majority panel "
                         "leaves them out until then")
    if len(humans) >= 2:
        panel = human_panel(data, humans, settings=settings)
    else:
        notes.append(f"human-human panel: needs at least two human annotators, got {len(humans)}")
    if judges and not humans:
        notes.append("judge vs humans: no human annotators (every rater is a --judge)")

    # One shared-resample table for everything bootstrapped: judges, the majority, a named reference.
    names = list(judges)
    columns = [data.codes[:, data.rater_index(j)] for j in judges]
    if majority is not None:
        names.append(MAJORITY)
        columns.append(majority.codes)
    named = reference if reference not in (None, "majority") else None
    if named is not None and named not in names:
        names.append(named)
        columns.append(data.codes[:, data.rater_index(named)])
    judge_pairs = [(a, b) for i, a in enumerate(judges) for b in judges[i + 1:]]
    wanted = [(j, MAJORITY) for j in judges if majority is not None]
    wanted += [(j, named) for j in judges if named is not None and j != named]
    compared = compare_pairs(_with_columns(data, names, columns), wanted, settings=settings) if len(names) >= 2 else {}

    versus = []
    if judges and humans:
        annotators = compare_pairs(data, [(j, h) for j in judges for h in humans], settings=settings,
                                   resample=False)
        for judge in judges:
            mine = tuple(annotators[(judge, h)] for h in humans if (judge, h) in annotators)
            vs_majority = compared.get((judge, MAJORITY))
            versus.append(JudgeVsHumans(
                judge=judge, vs_majority=vs_majority, vs_annotators=mine,
                mean_vs_annotators=_mean_statistics(mine, settings.pair_coefficients),
                undefined_reason=None if vs_majority else f"no unit has both a {judge!r} label and a human majority"))
    tables = []
    if judge_pairs:
        # Every judge-pair table, all units included, from the judges' columns alone: the same pairs on the same
        # units draw the same resamples, so two identical subsets (or a subset that is every unit) get one interval.
        everyone = np.ones(data.n_units, dtype=bool)
        for value, mask in [(None, everyone), *_subgroup_masks(data, subgroups)]:
            tables.append(judge_pair_table(data, judges, mask, None if value is None else f"{subgroup_name}={value}",
                                           settings))
    references = []
    if reference is not None and judges:
        target = MAJORITY if reference == "majority" else reference
        if reference == "majority" and majority is None:
            notes.append("reference report: no human majority (no human annotators)")
        else:
            for judge in (j for j in judges if j != target):
                if (judge, target) in compared:
                    references.append(reference_report(compared[(judge, target)]))
                else:
                    notes.append(f"reference report: {judge!r} and {target!r} share no labelled unit")
    missing = (data.codes < 0).sum(axis=0)
    return PanelReport(source=data.source, humans=humans, judges=judges, categories=data.categories,
                       n_units=data.n_units, n_ratings=data.n_ratings,
                       missing_by_rater={r: int(m) for r, m in zip(data.raters, missing)}, settings=settings,
                       majority=majority, human_panel=panel, judges_vs_humans=tuple(versus),
                       judge_pairs=tuple(tables), references=tuple(references), notes=tuple(notes))


def _number(value: Any) -> float | int | None:
    """JSON number at full precision; NaN/inf become null (the reason travels beside it)."""
    if value is None:
        return None
    value = float(value) if not isinstance(value, (int, np.integer)) else int(value)
    return value if not isinstance(value, float) or math.isfinite(value) else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return _number(value)
    return value if value is None or isinstance(value, str) else str(value)


def result_to_dict(result: AgreementResult, *, level: float = 0.95) -> dict[str, Any]:
    """One coefficient for ``--json``: full precision, null + reason where undefined."""
    t = result.confidence_interval(level, "t")
    out: dict[str, Any] = {
        "coefficient": result.coefficient,
        "statistic": _number(result.statistic),
        "undefined_reason": result.undefined_reason,
        "pa": _number(result.pa), "pe": _number(result.pe),
        "se": _number(result.se), "se_method": result.se_method, "df": _number(result.df),
        "n_units": result.n_units, "n_raters": result.n_raters,
        "prevalence_index": _number(result.prevalence_index), "bias_index": _number(result.bias_index),
        "ci_level": level,
        "ci_t": [_number(t.low), _number(t.high)],
    }
    # The interval every view shows and the gate decides on (agreement.intervals: chosen by coverage).
    chosen = result.confidence_interval(level)
    out.update(ci_low=_number(chosen.low), ci_high=_number(chosen.high), ci_method=chosen.method)
    if result.bootstrap is not None:
        percentile = result.confidence_interval(level, "percentile")
        out["ci_percentile"] = [_number(percentile.low), _number(percentile.high)]
        out["n_resamples"] = int(result.bootstrap.size)
        out["bootstrap_undefined"] = result.bootstrap_undefined
    out["details"] = {k: _jsonable(v) for k, v in result.details.items() if k != "jackknife"}
    return out


def _pair_to_dict(panel: PairPanel | None, level: float) -> dict[str, Any] | None:
    if panel is None:
        return None
    return {
        "rater_a": panel.rater_a, "rater_b": panel.rater_b, "n_units": panel.n_units,
        "n_only_a": panel.n_only_a, "n_only_b": panel.n_only_b,
        "confusion": [{"a": _jsonable(panel.categories[i]), "b": _jsonable(panel.categories[j]), "count": c}
                      for i, j, c in panel.cells.tolist()],
        "disagreements": [{"a": _jsonable(a), "b": _jsonable(b), "count": c} for a, b, c in panel.disagreements()],
        "results": {k: result_to_dict(v, level=level) for k, v in panel.results.items()},
    }


def report_to_dict(report: PanelReport, *, level: float = 0.95) -> dict[str, Any]:
    """The whole report as JSON-able data (what ``accord agree --json`` prints)."""
    majority = report.majority
    human = report.human_panel
    return {
        "source": report.source,
        "humans": list(report.humans), "judges": list(report.judges),
        "categories": _jsonable(report.categories),
        "n_units": report.n_units, "n_ratings": report.n_ratings,
        "missing_by_rater": dict(report.missing_by_rater),
        "settings": {"weights": report.settings.weights, "alpha_level": report.settings.alpha_level,
                     "n_resamples": report.settings.n_resamples,
                     "seed": report.settings.seed, "cluster": report.settings.cluster, "ci_level": level},
        "majority": None if majority is None else {
            "tie_policy": majority.tie_policy, "n_units": majority.n_units, "n_with_majority": majority.n,
            "n_ties": majority.n_ties, "n_unrated": majority.n_unrated, "n_single": majority.n_single,
            "tied_units": _jsonable(majority.tied_units), "needs_adjudication": majority.needs_adjudication,
        },
        "human_panel": None if human is None else {
            "raters": list(human.raters), "n_units": human.n_units, "n_pairable": human.n_pairable,
            "n_missing": human.n_missing, "mean_pairwise_agreement": _number(human.mean_pairwise_agreement),
            "prevalence_index": _number(human.prevalence_index), "bias_index": _number(human.bias_index),
            "pairwise_agreement": [{"a": a, "b": b, "agreement": _number(v)}
                                   for (a, b), v in human.pairwise_agreement.items()],
            "results": {k: result_to_dict(v, level=level) for k, v in human.results.items()},
        },
        "judges_vs_humans": [{
            "judge": j.judge, "undefined_reason": j.undefined_reason,
            "vs_majority": _pair_to_dict(j.vs_majority, level),
            "vs_annotators": [_pair_to_dict(p, level) for p in j.vs_annotators],
            "mean_vs_annotators": {k: _number(v) for k, v in j.mean_vs_annotators.items()},
        } for j in report.judges_vs_humans],
        "judge_pairs": [{"subgroup": t.subgroup, "n_units": t.n_units,
                         "pairs": [_pair_to_dict(p, level) for p in t.pairs]} for t in report.judge_pairs],
        "references": [{
            "rater": r.rater, "reference": r.reference, "accuracy": _number(r.accuracy),
            "macro_f1": _number(r.macro_f1), "agreement": _pair_to_dict(r.agreement, level),
            "per_class": [{"label": _jsonable(c.label), "support": c.support, "predicted": c.predicted,
                           "precision": _number(c.precision), "recall": _number(c.recall), "f1": _number(c.f1),
                           "undefined_reason": c.undefined_reason} for c in r.per_class],
        } for r in report.references],
        "notes": list(report.notes),
    }


PAIRED_METHODS = ("percentile", "bca", "t_boot")


def paired_interval(result: CeilingDifference | BaselineDifference, level: float | None, method: str | None
                    ) -> ConfidenceInterval:
    """A paired difference's interval, its method naming what each resample drew (clusters, strata)."""
    level = DEFAULT_LEVEL if level is None else check_level(level)
    method = method_for("human_ceiling") if method is None else method
    if method not in PAIRED_METHODS:
        raise ValueError(f"method={method!r}: a paired bootstrap difference has intervals {list(PAIRED_METHODS)}")
    low, high = bootstrap_interval(result.statistic, result.bootstrap, result.jackknife, level, method,
                                   df=result.n_clusters - 1)
    name = f"paired cluster bootstrap, {method}" + (f" over {result.resampling}" if result.resampling else "")
    return ConfidenceInterval(low=low, high=high, level=level, method=name)


@dataclass(frozen=True, kw_only=True)
class CeilingDifference:
    """Judge-annotator minus annotator-annotator agreement, with its paired cluster bootstrap.

    ``statistic`` = mean over annotators h of coef(judge, h) minus mean over annotator
    pairs of coef(h, h'); every pair is computed on one shared resample draw over the
    same units (whole clusters), so each replicate is the difference on the same
    resampled units and the interval accounts for the correlation between the two means.
    """

    coefficient: str
    statistic: float
    judge_mean: float
    human_mean: float
    n: int
    """Units rated by the judge or an annotator (the resampled units)."""
    n_clusters: int
    annotators: int
    annotator_pairs: int
    bootstrap: np.ndarray
    jackknife: tuple[np.ndarray, np.ndarray] | None
    undefined_reason: str | None = None
    resampling: str = ""
    """What each paired resample drew (``agreement.bootstrap.Design.resampling``)."""

    @classmethod
    def undefined(cls, coefficient: str, reason: str, *, annotators: int = 0, annotator_pairs: int = 0
                  ) -> CeilingDifference:
        return cls(coefficient=coefficient, statistic=math.nan, judge_mean=math.nan, human_mean=math.nan, n=0,
                   n_clusters=0, annotators=annotators, annotator_pairs=annotator_pairs, bootstrap=np.zeros(0),
                   jackknife=None, undefined_reason=reason)

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The paired-bootstrap interval; None: ``DEFAULT_LEVEL`` and the gate's method for paired differences."""
        return paired_interval(self, level, method)


def ceiling_difference(data: RatingData, judge: str, humans: Sequence[str], coefficient: str, *,
                       settings: PanelSettings) -> CeilingDifference:
    """The human-ceiling difference for ``judge`` (see ``CeilingDifference``)."""
    from agreement import compute_pairs

    humans = [h for h in humans if h != judge]
    if len(humans) < 2:
        reason = f"needs a judge and at least two annotators (got {len(humans)})"
        return CeilingDifference.undefined(coefficient, reason, annotators=len(humans))
    if coefficient not in PAIR_COEFFICIENTS:
        raise InputError(f"coefficient={coefficient!r}: the human ceiling compares pairwise coefficients "
                         f"{list(PAIR_COEFFICIENTS)}")
    judge_pairs = [(judge, h) for h in humans]
    human_pairs = [(a, b) for i, a in enumerate(humans) for b in humans[i + 1:]]
    results = compute_pairs(data, [coefficient], judge_pairs + human_pairs, weights=settings.weights,
                            alpha_level=settings.alpha_level, n_resamples=settings.n_resamples, seed=settings.seed,
                            cluster=settings.cluster)
    judged = [results[p][coefficient] for p in judge_pairs if math.isfinite(results[p][coefficient].statistic)]
    paired = [results[p][coefficient] for p in human_pairs if math.isfinite(results[p][coefficient].statistic)]
    if not judged or not paired:
        side = "judge-annotator" if not judged else "annotator-annotator"
        return CeilingDifference.undefined(coefficient, f"no {side} pair shares a unit with a defined {coefficient}",
                                           annotators=len(humans), annotator_pairs=len(paired))

    def difference(values: list[np.ndarray | float | None], split: int) -> np.ndarray:
        stacked = np.asarray(values, dtype=float)
        return stacked[:split].mean(axis=0) - stacked[split:].mean(axis=0)

    every = judged + paired
    statistic = float(difference([r.statistic for r in every], len(judged)))
    boot = difference([r.bootstrap for r in every], len(judged)) if settings.n_resamples else np.zeros(0)
    jackknife = None
    if settings.n_resamples and all(r.details.get("jackknife") is not None for r in every):
        counts = every[0].details["jackknife"][1]
        jackknife = (difference([r.details["jackknife"][0] for r in every], len(judged)), counts)
    any_result = every[0]
    rated = (data.codes[:, [data.rater_index(r) for r in (judge, *humans)]] >= 0).any(axis=1)
    return CeilingDifference(coefficient=coefficient, statistic=statistic,
                             judge_mean=float(np.mean([r.statistic for r in judged])),
                             human_mean=float(np.mean([r.statistic for r in paired])), n=int(rated.sum()),
                             n_clusters=int(any_result.details.get("n_clusters", int(rated.sum()))),
                             annotators=len(judged), annotator_pairs=len(paired), bootstrap=boot,
                             jackknife=jackknife, resampling=str(any_result.details.get("resampling", "")))


@dataclass(frozen=True, kw_only=True)
class FirstTurnAgreement:
    """Human first recognition turn against the judge's t*, on units where both give one.

    Solve depends on t* (the last tool turn must come after it), so a judge that flags
    the right trajectories at the wrong turn still biases Solve. Each figure carries a
    cluster-bootstrap interval (whole trajectories resampled).
    """

    n: int
    """Units with a human and a judge first turn."""
    n_human_only: int
    n_judge_only: int
    exact: Any
    """Share of units where the turns are equal (an ``Estimate``)."""
    within_one: Any
    """Share of units where they differ by at most one turn."""
    mean_absolute_difference: Any
    """Mean |human - judge| in turns."""
    mean_difference: Any
    """Mean (judge - human): positive when the judge recognises later."""


def first_turn_agreement(human: Sequence[float], judge: Sequence[float], clusters: Sequence[Any], *,
                         n_resamples: int = 10_000, seed: int = DEFAULT_SEED, level: float = 0.95
                         ) -> FirstTurnAgreement:
    """``human``/``judge``: one first turn per unit (NaN = no recognition); ``clusters``: trajectory per unit."""
    from agreement.estimate import cluster_ratio_estimate

    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    groups = np.asarray(clusters)
    if not h.shape == j.shape == groups.shape:
        raise InputError(f"first_turn_agreement: human, judge and clusters need one value per unit "
                         f"(got {h.size}, {j.size}, {groups.size})")
    both = ~np.isnan(h) & ~np.isnan(j)
    gap = j[both] - h[both]
    ones = np.ones(gap.size)
    reason = "no unit has both a human and a judge first turn"

    def estimate(values: np.ndarray, salt: int) -> Any:
        return cluster_ratio_estimate(values, ones, groups[both], n_resamples=n_resamples, level=level,
                                      seed=int(np.random.SeedSequence([seed, salt]).generate_state(1)[0]),
                                      empty_reason=reason)

    return FirstTurnAgreement(n=int(both.sum()), n_human_only=int((~np.isnan(h) & np.isnan(j)).sum()),
                              n_judge_only=int((np.isnan(h) & ~np.isnan(j)).sum()),
                              exact=estimate((gap == 0).astype(float), 1),
                              within_one=estimate((np.abs(gap) <= 1).astype(float), 2),
                              mean_absolute_difference=estimate(np.abs(gap), 3), mean_difference=estimate(gap, 4))


def study_first_turns(study: Any, judge: str, **settings: Any) -> FirstTurnAgreement | str:
    """``first_turn_agreement`` of ``judge`` on a study's sampled units, or the reason it cannot be formed.

    The human first turn of a unit is the median of its independent annotators' first turns
    (those who gave one); the judge's is its t* (sample 0; -1 = no recognition).
    """
    from agreement.study_io import isin

    human, judged = study.human, study.judge
    if "first_turn" not in human.columns or "first_turn" not in judged.columns:
        return "no first recognition turns in the human or the judge labels"
    key = study.key.drop_duplicates("task_id").set_index("task_id")
    independent = human[(human["role"] == "independent") & isin(human["task_id"], key.index)]
    turns = independent.assign(unit=independent["task_id"].map(key["unit_id"]),
                               turn=independent["first_turn"].astype(float))
    turns = turns[turns["turn"] >= 0]
    mine = judged[(judged["judge"] == judge) & (judged["sample_index"] == 0)
                  & isin(judged["unit_id"], key["unit_id"].unique())]
    if mine.empty or turns.empty:
        return f"no first recognition turn from {'judge ' + repr(judge) if mine.empty else 'any annotator'}"
    units = sorted(set(mine["unit_id"].unique()))
    human_turn = turns.groupby("unit")["turn"].median().reindex(units)
    judge_turn = mine.drop_duplicates("unit_id").set_index("unit_id")["first_turn"].astype(float).reindex(units)
    judge_turn = judge_turn.where(judge_turn >= 0)
    clusters = key.drop_duplicates("unit_id").set_index("unit_id")["trajectory_id"].reindex(units)
    return first_turn_agreement(human_turn.to_numpy(), judge_turn.to_numpy(), clusters.to_numpy(), **settings)


@dataclass(frozen=True, kw_only=True)
class BaselineDifference:
    """Judge minus a baseline rater, both against the same reference, with a paired cluster bootstrap.

    Both coefficients come from one shared resample draw over the same units (whole
    clusters), so each replicate is the difference on the same resampled units: a
    constant rater that matches the reference as often as the judge gives a difference
    of 0 in every replicate, never a lucky interval.
    """

    baseline: str
    coefficient: str
    statistic: float
    judge_value: float
    baseline_value: float
    n: int
    """Units both the judge and the baseline labelled that have a reference label."""
    n_clusters: int
    bootstrap: np.ndarray
    jackknife: tuple[np.ndarray, np.ndarray] | None
    undefined_reason: str | None = None
    resampling: str = ""
    """What each paired resample drew (``agreement.bootstrap.Design.resampling``)."""

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The paired-bootstrap interval; None: ``DEFAULT_LEVEL`` and the gate's method for paired differences."""
        return paired_interval(self, level, method)


def baseline_differences(data: RatingData, judge: np.ndarray, reference: np.ndarray,
                         baselines: Mapping[str, np.ndarray], coefficients: Sequence[str], *,
                         settings: PanelSettings) -> list[BaselineDifference]:
    """Each baseline against the judge on the units both labelled, every difference on one shared draw.

    ``judge``, ``reference`` and each baseline are code columns over ``data``'s units
    (-1 = no label; ``data`` gives units, categories, clusters and weights). The judge is
    restricted to the units each baseline labelled and the baseline to the units the
    judge labelled, so a rule that abstains more never wins by abstaining.
    """
    unknown = [c for c in coefficients if c not in PAIR_COEFFICIENTS]
    if unknown:
        raise InputError(f"coefficients={unknown}: baselines are compared on {list(PAIR_COEFFICIENTS)}")
    names, columns, pairs = ["reference"], [reference], []
    for i, codes in enumerate(baselines.values()):
        both = (judge >= 0) & (codes >= 0)
        names += [f"judge#{i}", f"baseline#{i}"]
        columns += [np.where(both, judge, -1), np.where(both, codes, -1)]
        pairs += [(f"judge#{i}", "reference"), (f"baseline#{i}", "reference")]
    table = type(data)(units=data.units, raters=tuple(names), categories=data.categories,
                       codes=np.column_stack(columns), clusters=data.clusters, unit_weights=data.unit_weights,
                       source=data.source, strata=data.strata)
    # Only the coefficients compared (a pair's result depends on its columns and the draw alone, not the others).
    wanted = tuple(c for c in PAIR_COEFFICIENTS if c in coefficients or c == "percent_agreement")
    found = compare_pairs(table, pairs, settings=replace(settings, pair_coefficients=wanted))
    out = []
    for i, name in enumerate(baselines):
        shared = (table.codes[:, 2 * i + 1] >= 0) & (reference >= 0)
        for coefficient in coefficients:
            mine, theirs = found.get((f"judge#{i}", "reference")), found.get((f"baseline#{i}", "reference"))
            if mine is None or theirs is None or not shared.any():
                out.append(BaselineDifference(
                    baseline=name, coefficient=coefficient, statistic=math.nan, judge_value=math.nan,
                    baseline_value=math.nan, n=0, n_clusters=0, bootstrap=np.zeros(0), jackknife=None,
                    undefined_reason=f"no unit has a label from the judge, from {name} and from the reference"))
                continue
            a, b = mine.results[coefficient], theirs.results[coefficient]
            reason = a.undefined_reason or b.undefined_reason
            statistic = a.statistic - b.statistic
            boot = a.bootstrap - b.bootstrap if a.bootstrap is not None and b.bootstrap is not None \
                else np.zeros(0)
            jackknife = None
            ja, jb = a.details.get("jackknife"), b.details.get("jackknife")
            if ja is not None and jb is not None and np.shape(ja[0]) == np.shape(jb[0]):
                jackknife = (ja[0] - jb[0], ja[1])
            out.append(BaselineDifference(
                baseline=name, coefficient=coefficient, statistic=float(statistic), judge_value=float(a.statistic),
                baseline_value=float(b.statistic), n=int(shared.sum()),
                n_clusters=int(a.details.get("n_clusters", int(shared.sum()))), bootstrap=boot, jackknife=jackknife,
                resampling=str(a.details.get("resampling", "")),
                undefined_reason=None if math.isfinite(statistic) else
                (reason or f"{coefficient} is undefined for the judge or {name}")))
    return out
