"""Aggarwal's decision statistics ("Calibrated Enough to Know, Not Calibrated to Act", seed 004).

A model answers a question it cannot know with one of three decisions: ANSWER (commits),
CALL_TOOL or DECLINE (do not). What is counted, as the paper counts it:

- **commitment rate** = ANSWER / every row, unreadable output and failed calls included: the
  paper's 36.8% on the fully fabricated arm is 106/288 (section 3.2), so an unreadable row is a
  non-commitment, never dropped. The rate without failed calls (no content, zero cost; section 2
  drops them) is reported beside it, as ``commit_rate_without_failed``.
- **J** (App. D Table 6) = DECLINE rate on unknowable items - DECLINE rate on answerable ones: a
  tool call is not a decline. ``j_non_commitment`` (any non-ANSWER) is beside it.
- **T** (section 2.1) = share of right actions - share of wrong ones over a composition, right =
  the gold action; an unreadable row is neither.
- A model whose rows are mostly unparsed (more than ``lower_bound_share``) has a commitment rate
  that is a lower bound, not restraint (Qwen3.7-plus, section 3.3): it is flagged.

Probability scoring of stated confidences (Brier, Brier skill, the CORP decomposition of Dimitriadis,
Gneiting and Jordan 2021 by the pool-adjacent-violators algorithm, ECE at several bin counts, AUROC
with ties at half credit), Cohen's h and a TOST equivalence test on rate differences are here too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from samples import DEFAULT_SEED, InputError, StudyLayout

DECISIONS: tuple[str, ...] = ("ANSWER", "CALL_TOOL", "DECLINE")
UNREADABLE = "unreadable"
FAILED = "failed"
OUTCOMES: tuple[str, ...] = (*DECISIONS, UNREADABLE, FAILED)
"""What one row can be: a decision, output no parser could read, or a call that returned nothing at zero cost."""
DEFAULT_LOWER_BOUND_SHARE = 0.5
DEFAULT_ECE_BINS: tuple[int, ...] = (5, 10, 15)


def outcome(label: str | None, *, failed: bool) -> str:
    """One row's outcome from a parser's label (None = unscored) and whether the call failed."""
    if failed:
        return FAILED
    if label is None:
        return UNREADABLE
    if label not in DECISIONS:
        raise InputError(f"decision label {label!r}: expected one of {list(DECISIONS)} or none (unscored)")
    return label


@dataclass(frozen=True, kw_only=True)
class Rate:
    """k of n with its Wilson interval; None when n = 0 (with the reason)."""

    k: int
    n: int
    statistic: float | None
    ci_low: float | None
    ci_high: float | None
    undefined_reason: str | None = None


def rate(k: int, n: int, *, level: float = 0.95) -> Rate:
    if n == 0:
        return Rate(k=0, n=0, statistic=None, ci_low=None, ci_high=None, undefined_reason="no rows")
    from scipy.stats import binomtest

    low, high = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return Rate(k=k, n=n, statistic=k / n, ci_low=float(low), ci_high=float(high))


@dataclass(frozen=True, kw_only=True)
class DecisionTable:
    """The three-way decision table of one group of rows (commit / decline / tool / unparsed / failed)."""

    counts: Mapping[str, int]
    n: int
    commit: Rate
    """ANSWER over every row (the paper's denominator)."""
    commit_without_failed: Rate
    decline: Rate
    tool: Rate
    unparsed: Rate
    """Unreadable output over rows that returned content."""
    lower_bound: bool
    """Mostly unparsed: the commitment rate is a lower bound, not evidence of restraint."""


def decision_table(outcomes: Sequence[str], *, level: float = 0.95,
                   lower_bound_share: float = DEFAULT_LOWER_BOUND_SHARE) -> DecisionTable:
    values = np.asarray(list(outcomes), dtype=object)
    unknown = sorted(set(values.tolist()) - set(OUTCOMES))
    if unknown:
        raise InputError(f"decision outcomes {unknown}: expected {list(OUTCOMES)}")
    counts = {name: int((values == name).sum()) for name in OUTCOMES}
    n = len(values)
    returned = n - counts[FAILED]
    unparsed = rate(counts[UNREADABLE], returned, level=level)
    return DecisionTable(
        counts=counts, n=n, commit=rate(counts["ANSWER"], n, level=level),
        commit_without_failed=rate(counts["ANSWER"], returned, level=level),
        decline=rate(counts["DECLINE"], n, level=level), tool=rate(counts["CALL_TOOL"], n, level=level),
        unparsed=unparsed,
        lower_bound=unparsed.statistic is not None and unparsed.statistic > lower_bound_share,
    )


# --- a composition with gold actions ------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Composition:
    """A decision policy scored on unknowable (gold DECLINE) and answerable (gold ANSWER) items."""

    n_unknowable: int
    n_answerable: int
    j: float | None
    """Youden's J as App. D Table 6: DECLINE rate on unknowable - DECLINE rate on answerable."""
    j_non_commitment: float | None
    """Any non-ANSWER (tool, decline, unreadable) counted as declining."""
    balanced_accuracy: float | None
    t: float | None
    """Share of right actions - share of wrong actions (an unreadable row is neither)."""
    answerable_accuracy: float | None
    """ANSWER rate on the answerable arm (the share answered, not answer correctness)."""
    unparsed: int
    undefined_reason: str | None = None


def composition_scores(outcomes: Sequence[str], gold: Sequence[str]) -> Composition:
    values, truth = np.asarray(list(outcomes), dtype=object), np.asarray(list(gold), dtype=object)
    if len(values) != len(truth):
        raise InputError(f"composition: {len(values)} outcomes for {len(truth)} gold actions")
    bad = sorted(set(truth.tolist()) - {"ANSWER", "DECLINE"})
    if bad:
        raise InputError(f"composition: gold action(s) {bad}; expected ANSWER (answerable) or DECLINE (unknowable)")
    unknowable, answerable = truth == "DECLINE", truth == "ANSWER"
    n_u, n_a = int(unknowable.sum()), int(answerable.sum())
    readable = np.isin(values, DECISIONS)
    unparsed = int((~readable).sum())
    if n_u == 0 or n_a == 0:
        return Composition(n_unknowable=n_u, n_answerable=n_a, j=None, j_non_commitment=None, balanced_accuracy=None,
                           t=None, answerable_accuracy=None, unparsed=unparsed,
                           undefined_reason="J needs both unknowable and answerable items")
    if not readable.any():
        return Composition(n_unknowable=n_u, n_answerable=n_a, j=None, j_non_commitment=None, balanced_accuracy=None,
                           t=None, answerable_accuracy=None, unparsed=unparsed,
                           undefined_reason="no readable decision on any item")
    decline, answer = values == "DECLINE", values == "ANSWER"
    right = values == truth
    wrong = readable & ~right
    return Composition(
        n_unknowable=n_u, n_answerable=n_a,
        j=float(decline[unknowable].mean() - decline[answerable].mean()),
        j_non_commitment=float((~answer)[unknowable].mean() - (~answer)[answerable].mean()),
        balanced_accuracy=float((decline[unknowable].mean() + answer[answerable].mean()) / 2),
        t=float(right.mean() - wrong.mean()), answerable_accuracy=float(answer[answerable].mean()), unparsed=unparsed,
    )


# --- effect sizes and equivalence ---------------------------------------------------------------


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h = 2 asin(sqrt p1) - 2 asin(sqrt p2), the arcsine effect size of two proportions."""
    for name, p in (("p1", p1), ("p2", p2)):
        if not 0.0 <= p <= 1.0:
            raise InputError(f"cohens_h: {name} = {p!r}; expected a proportion in [0, 1]")
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


@dataclass(frozen=True, kw_only=True)
class Equivalence:
    """A paired difference of rates with its (1 - 2 alpha) cluster-bootstrap interval and the TOST verdict."""

    difference: float
    ci_low: float
    ci_high: float
    level: float
    margin: float
    equivalent: bool
    """The whole interval lies inside (-margin, +margin): both one-sided tests reject at alpha."""
    cohens_h: float
    n_clusters: int


def tost_paired_rates(first: Sequence[bool], second: Sequence[bool], clusters: Sequence[str], *, margin: float,
                      level: float = 0.90, n_resamples: int = 2000, seed: int = DEFAULT_SEED) -> Equivalence:
    """TOST on mean(first) - mean(second) over the same rows, resampling clusters (the paper's case-clustered
    bootstrap); ``level`` 0.90 is the interval of two one-sided tests at alpha 0.05."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    if not (len(a) == len(b) == len(clusters)) or len(a) == 0:
        raise InputError(f"tost: {len(a)}, {len(b)} and {len(clusters)} rows; expected the same non-zero number")
    if not 0 < margin < 1:
        raise InputError(f"tost: margin {margin!r}; expected a rate difference in (0, 1)")
    if not 0 < level < 1:
        raise InputError(f"tost: level {level!r}; expected a number in (0, 1)")
    names, index = np.unique(np.asarray(list(clusters), dtype=str), return_inverse=True)
    k = len(names)
    sum_a, sum_b = np.bincount(index, a, minlength=k), np.bincount(index, b, minlength=k)
    size = np.bincount(index, minlength=k).astype(float)
    draws = np.random.default_rng(seed).integers(0, k, size=(n_resamples, k))
    weights = np.zeros((n_resamples, k))
    np.add.at(weights, (np.arange(n_resamples)[:, None], draws), 1.0)  # times each cluster is drawn, per resample
    boot = (weights @ sum_a - weights @ sum_b) / (weights @ size)
    low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    diff = float(a.mean() - b.mean())
    return Equivalence(difference=diff, ci_low=float(low), ci_high=float(high), level=level, margin=margin,
                       equivalent=bool(-margin < low and high < margin), cohens_h=cohens_h(a.mean(), b.mean()),
                       n_clusters=k)


# --- probability scoring ------------------------------------------------------------------------

_PROBABILITY = re.compile(r"^\s*PROBABILITY_YES\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*(%?)", re.MULTILINE)


def stated_probability(text: str | None) -> float | None:
    """The PROBABILITY_YES a response states (0-100, or 0-1 written with a point), as a probability; None when
    it states none (NA, missing) or one outside [0, 100]."""
    match = _PROBABILITY.search(text or "")
    if match is None:
        return None
    value = float(match.group(1))
    if "." in match.group(1) and value <= 1 and not match.group(2):
        return value
    return value / 100 if 0 <= value <= 100 else None


def _pav(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators: the weighted isotonic (non-decreasing) fit of ``y`` already sorted by forecast."""
    values, weights, sizes = [], [], []
    for value, weight in zip(y.tolist(), w.tolist()):
        values.append(value)
        weights.append(weight)
        sizes.append(1)
        while len(values) > 1 and values[-2] > values[-1]:
            total = weights[-2] + weights[-1]
            values[-2] = (values[-2] * weights[-2] + values[-1] * weights[-1]) / total
            weights[-2] = total
            sizes[-2] += sizes[-1]
            del values[-1], weights[-1], sizes[-1]
    return np.repeat(values, sizes)


@dataclass(frozen=True, kw_only=True)
class ProbabilityScores:
    n: int
    base_rate: float | None
    brier: float | None
    brier_skill: float | None
    """1 - Brier / Brier of always forecasting the base rate (undefined when every outcome is the same)."""
    miscalibration: float | None
    """CORP MCB = Brier - Brier of the PAV-recalibrated forecasts."""
    discrimination: float | None
    """CORP DSC = uncertainty - Brier of the PAV-recalibrated forecasts."""
    uncertainty: float | None
    """CORP UNC = base rate x (1 - base rate); Brier = MCB - DSC + UNC."""
    ece: Mapping[int, float | None]
    """Expected calibration error with equal-width bins, per number of bins."""
    auroc: float | None
    """P(forecast of a yes > forecast of a no), ties at half credit."""
    undefined_reason: str | None = None


def probability_scores(forecasts: Sequence[float] | np.ndarray, outcomes: Sequence[bool] | np.ndarray, *,
                       bins: Sequence[int] = DEFAULT_ECE_BINS) -> ProbabilityScores:
    p, y = np.asarray(forecasts, dtype=float), np.asarray(outcomes, dtype=float)
    if len(p) != len(y):
        raise InputError(f"probability scores: {len(p)} forecasts for {len(y)} outcomes")
    if len(p) and (not np.isfinite(p).all() or (p < 0).any() or (p > 1).any()):
        raise InputError("probability scores: forecasts must be probabilities in [0, 1]")
    if any(not isinstance(b, int) or b < 1 for b in bins):
        raise InputError(f"probability scores: bins {list(bins)}; expected positive integers")
    none = {b: None for b in bins}
    if len(p) == 0:
        return ProbabilityScores(n=0, base_rate=None, brier=None, brier_skill=None, miscalibration=None,
                                 discrimination=None, uncertainty=None, ece=none, auroc=None,
                                 undefined_reason="no stated probabilities with a resolved outcome")
    n = len(p)
    base = float(y.mean())
    brier = float(np.mean((p - y) ** 2))
    uncertainty = base * (1 - base)
    # CORP: PAV on the distinct forecast values (ties pooled first), so equal forecasts get equal recalibrations.
    order = np.argsort(p, kind="stable")
    values, first, counts = np.unique(p[order], return_index=True, return_counts=True)
    means = np.add.reduceat(y[order], first) / counts
    recalibrated = np.repeat(_pav(means, counts.astype(float)), counts)
    brier_recal = float(np.mean((recalibrated - y[order]) ** 2))
    ece = {}
    for b in bins:
        index = np.minimum((p * b).astype(int), b - 1)
        gap = np.abs(np.bincount(index, p, minlength=b) - np.bincount(index, y, minlength=b))
        ece[b] = float(gap.sum() / n)
    yes, no = p[y == 1], p[y == 0]
    auroc = None
    if len(yes) and len(no):
        auroc = float(((yes[:, None] > no[None, :]).sum() + 0.5 * (yes[:, None] == no[None, :]).sum()) / (len(yes) * len(no)))
    reason = None if 0 < base < 1 else "every outcome is the same: skill and AUROC are undefined"
    return ProbabilityScores(
        n=n, base_rate=base, brier=brier, brier_skill=(1 - brier / uncertainty) if uncertainty > 0 else None,
        miscalibration=brier - brier_recal, discrimination=uncertainty - brier_recal, uncertainty=uncertainty,
        ece=ece, auroc=auroc, undefined_reason=reason,
    )


# --- a study's decisions ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DecisionSettings:
    """``[decisions]`` of a study file (apps.study.Decisions), as the stage passes it."""

    strict_parser: str
    semantic_parser: str
    roster_dataset: str | None
    composition_dataset: str | None
    cell_field: str
    outcome_field: str | None
    lower_bound_share: float
    margin: float
    level: float
    n_resamples: int
    seed: int


def _jsonl(path: Path) -> list[dict]:
    from samples import decode_json_line, iter_jsonl_lines

    return [decode_json_line(line) for _, line in iter_jsonl_lines(path)] if path.is_file() else []


def _failed(trajectory: Mapping) -> bool:
    """No content returned at zero cost (section 2: a call that failed, never an observation)."""
    if trajectory.get("final_answer"):
        return False
    usage = (trajectory.get("metadata") or {}).get("usage")
    return isinstance(usage, Mapping) and usage.get("cost") == 0 and not usage.get("completion_tokens")


def _record(r: Rate) -> dict:
    return {"k": r.k, "n": r.n, "statistic": r.statistic, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "undefined_reason": r.undefined_reason}


def _row(parser: str, group: str, name: str, table: DecisionTable) -> dict:
    return {"parser": parser, "group": group, "name": name, "counts": dict(table.counts), "n": table.n,
            "commit": _record(table.commit), "commit_without_failed": _record(table.commit_without_failed),
            "decline": _record(table.decline), "tool": _record(table.tool), "unparsed": _record(table.unparsed),
            "lower_bound": table.lower_bound}


def decision_study(layout: StudyLayout, settings: DecisionSettings) -> dict:
    """The decisions document body of a study: every trajectory of the roster dataset is one row (no row left out
    of a denominator), read through the judges' labels of its response unit."""
    from samples import file_sha256, judge_label_rows, response_kinds

    trajectories = _jsonl(layout.trajectories)
    responses = response_kinds()
    unit_of = {u["unit_id"]: u for u in _jsonl(layout.units) if u.get("kind") in responses}
    labels: dict[tuple[str, str], str | None] = {}
    judges: set[str] = set()
    for _, row in judge_label_rows(layout.judge_labels) if layout.judge_labels.is_file() else ():
        unit = unit_of.get(row.unit_id)
        if unit is not None and row.sample_index == 0:
            labels[(row.judge, unit["trajectory_id"])] = row.label
            judges.add(row.judge)
    for name in (settings.strict_parser, settings.semantic_parser):
        if name not in judges:
            raise InputError(f"[decisions]: judge {name!r} has no labels on response units; judges with labels: {sorted(judges)}")
    roster = [t for t in trajectories if settings.roster_dataset in (None, t.get("dataset"))]
    composition = [t for t in trajectories if settings.composition_dataset is not None
                   and t.get("dataset") == settings.composition_dataset]
    if settings.roster_dataset is not None and not roster:
        raise InputError(f"[decisions] roster_dataset {settings.roster_dataset!r}: no trajectories of that dataset; "
                         f"datasets: {sorted({t.get('dataset') for t in trajectories}, key=str)}")
    body: dict = {"strict_parser": settings.strict_parser, "semantic_parser": settings.semantic_parser,
                  "settings": {k: getattr(settings, k) for k in DecisionSettings.__dataclass_fields__}}

    def outcomes(parser: str, rows: Sequence[Mapping]) -> list[str]:
        missing = [t["id"] for t in rows if t.get("final_answer") and (parser, t["id"]) not in labels]
        if missing:
            raise InputError(f"[decisions]: judge {parser!r} has no label for {len(missing)} response(s) with content, "
                             f"e.g. trajectory {missing[0]!r}; rerun the judge stage")
        return [outcome(labels.get((parser, t["id"])), failed=_failed(t)) for t in rows]

    def cell(t: Mapping) -> str:
        return str((t.get("metadata") or {}).get(settings.cell_field, "all"))

    table_rows = []
    by_model: dict[str, dict[str, DecisionTable]] = {}
    for parser in (settings.strict_parser, settings.semantic_parser):
        table_rows.append(_row(parser, "all", "all", decision_table(outcomes(parser, roster), level=settings.level,
                                                                    lower_bound_share=settings.lower_bound_share)))
        for group, key in (("family", lambda t: t.get("family") or "unknown"), ("model", lambda t: t["backbone"]),
                           ("model_cell", lambda t: f"{t['backbone']} | {cell(t)}")):
            for name in sorted({key(t) for t in roster}):
                table = decision_table(outcomes(parser, [t for t in roster if key(t) == name]), level=settings.level,
                                       lower_bound_share=settings.lower_bound_share)
                table_rows.append(_row(parser, group, name, table))
                if group == "model":
                    by_model.setdefault(name, {})[parser] = table
    body["rows"] = table_rows
    semantic = {m: t[settings.semantic_parser] for m, t in by_model.items()}
    body["never_commit"] = sorted(m for m, t in semantic.items() if t.counts["ANSWER"] == 0)
    body["always_commit"] = sorted(m for m, t in semantic.items() if t.counts["ANSWER"] == t.n)
    body["lower_bound_models"] = sorted(m for m, t in by_model.items() if all(x.lower_bound for x in t.values()))
    deltas = []
    for model_cell in sorted({(t["backbone"], cell(t)) for t in roster}):
        rows = [t for t in roster if (t["backbone"], cell(t)) == model_cell]
        strict = decision_table(outcomes(settings.strict_parser, rows)).unparsed.statistic
        sem = decision_table(outcomes(settings.semantic_parser, rows)).unparsed.statistic
        deltas.append({"model": model_cell[0], "cell": model_cell[1], "n": len(rows), "strict_unparsed": strict,
                       "semantic_unparsed": sem,
                       "delta_pp": None if strict is None or sem is None else 100 * (strict - sem)})
    body["parser_deltas"] = deltas
    body["equivalence"] = _equivalence(roster, outcomes, settings)
    body["probability"] = _probability(roster, labels, settings)
    gold = [(t, (t.get("references") or [None])[0]) for t in composition]
    body["composition"] = [
        {"judge": judge, **composition_scores(outcomes(judge, [t for t, _ in gold]), [g for _, g in gold]).__dict__}
        for judge in sorted(judges)] if gold else []
    body["fingerprints"] = {layout.relative(p): file_sha256(p) for p in (layout.trajectories, layout.units, layout.judge_labels)
                            if p.is_file()}
    return body


def _equivalence(roster: Sequence[Mapping], outcomes, settings: DecisionSettings) -> dict:
    """TOST (and Cohen's h) on the commitment rate read by the semantic vs the strict parser, paired by row and
    clustered by case: is the parser choice immaterial to the headline rate within the margin? And Cohen's h of
    each family's commitment rate against the rest of the roster (semantic parser)."""
    if not roster:
        return {}
    strict = [o == "ANSWER" for o in outcomes(settings.strict_parser, roster)]
    semantic = [o == "ANSWER" for o in outcomes(settings.semantic_parser, roster)]
    cases = [str((t.get("metadata") or {}).get("item_id", t["id"])) for t in roster]
    result = tost_paired_rates(semantic, strict, cases, margin=settings.margin, level=0.90,
                               n_resamples=settings.n_resamples, seed=settings.seed)
    committed = np.asarray(semantic)
    families = np.asarray([t.get("family") or "unknown" for t in roster], dtype=object)
    family_h = {str(f): cohens_h(float(committed[families == f].mean()), float(committed[families != f].mean()))
                for f in sorted(set(families.tolist())) if (families != f).any()}
    return {"semantic_minus_strict_commit": result.__dict__, "family_vs_rest_commit_cohens_h": family_h}


def _probability(roster: Sequence[Mapping], labels: Mapping, settings: DecisionSettings) -> dict:
    """Stated PROBABILITY_YES on the rows the semantic parser reads as ANSWER, against the resolved outcome."""
    if settings.outcome_field is None:
        return {}
    forecasts, resolved = [], []
    for t in roster:
        if labels.get((settings.semantic_parser, t["id"])) != "ANSWER":
            continue
        value = (t.get("metadata") or {}).get(settings.outcome_field)
        p = stated_probability(t.get("final_answer"))
        if isinstance(value, bool) and p is not None:
            forecasts.append(p)
            resolved.append(value)
    scores = probability_scores(forecasts, resolved)
    return {"outcome_field": settings.outcome_field, **{k: (dict(v) if isinstance(v, Mapping) else v)
                                                        for k, v in scores.__dict__.items()}}


def _pct(r: Mapping) -> str:
    return "undefined" if r["statistic"] is None else f"{100 * r['statistic']:.1f}% ({r['k']}/{r['n']})"


def summary_lines(doc) -> list[str]:
    """The figures `accord run` prints, from the saved document."""
    lines = []
    for row in doc.rows:
        if row.group == "all":
            c = row.counts
            lines.append(f"{row.parser}: commit {_pct(row.commit.model_dump())}; decline {c['DECLINE']}, tool {c['CALL_TOOL']}, "
                         f"unreadable {c['unreadable']}, failed calls {c['failed']}; without failed calls "
                         f"{_pct(row.commit_without_failed.model_dump())}")
    for row in doc.rows:
        if row.parser == doc.semantic_parser and row.group == "family":
            lines.append(f"  family {row.name}: commit {_pct(row.commit.model_dump())}")
    lines.append(f"never commit: {', '.join(doc.never_commit) or 'none'}; always commit: {', '.join(doc.always_commit) or 'none'}")
    if doc.lower_bound_models:
        lines.append(f"mostly unparsed (commitment is a lower bound): {', '.join(doc.lower_bound_models)}")
    moved = [d for d in doc.parser_deltas if d.delta_pp]
    lines.append(f"strict vs semantic parser: {len(moved)} of {len(doc.parser_deltas)} model x cell(s) differ in unparsed share")
    tost = doc.equivalence.get("semantic_minus_strict_commit")
    if tost:
        lines.append(f"semantic - strict commitment {100 * tost['difference']:+.2f}p, 90% CI [{100 * tost['ci_low']:+.2f}, "
                     f"{100 * tost['ci_high']:+.2f}], margin +/-{100 * tost['margin']:.0f}p: "
                     f"{'equivalent' if tost['equivalent'] else 'not shown equivalent'} (Cohen's h {tost['cohens_h']:+.3f})")
    prob = doc.probability
    if prob.get("n"):
        ece = ", ".join(f"ECE{b} {v:.3f}" for b, v in sorted(prob["ece"].items(), key=lambda kv: int(kv[0]))
                        if v is not None)
        auroc = "undefined" if prob["auroc"] is None else f"{prob['auroc']:.3f}"
        lines.append(f"stated probabilities (n {prob['n']}): Brier {prob['brier']:.3f}, {ece}, AUROC {auroc}")
    for c in doc.composition:
        if c.j is None:
            lines.append(f"  {c.judge}: J undefined ({c.undefined_reason})")
            continue
        lines.append(f"  {c.judge}: J {100 * c.j:+.0f}, any-non-commitment J {100 * c.j_non_commitment:+.0f}, balanced accuracy "
                     f"{c.balanced_accuracy:.3f}, T {100 * c.t:+.1f} on {c.n_unknowable}:{c.n_answerable} unknowable:answerable")
    return lines
