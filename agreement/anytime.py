"""The gate under continuous monitoring: a verdict that may be looked at after every label.

With ``[policy] monitoring = "anytime"`` every criterion that has a sequential form is decided by a confidence
sequence or an e-process (``agreement.sequential``), read at every look: once its interval clears the bound the
criterion has PASSED for good, once it lies wholly on the wrong side it has FAILED for good, otherwise it is
undecided. The study is ACCEPTED at the first look where every criterion has passed, REJECTED at the first look
where one has failed, and otherwise CONTINUES, with an estimate of the labels still needed. Because every form is
valid at any stopping time, looking after every label does not inflate the false-accept rate, and there is no "too
small" cutoff: a small study with strong evidence is decided.

Looks are clusters (a trajectory's turns are labelled and resampled together), taken in the order people finished
them: a unit arrives with its last human label (the order of the labels table's human rows: the store's submission
order, an imported table's row order), a cluster with its last unit.

Sequential forms, by criterion type (``SEQUENTIAL_FORMS``; a third-party criterion registers its own the same
way):

- ``agreement_floor``: percent agreement as a bounded mean; Cohen's kappa and Gwet's AC1 (binary schemes) from
  three confidence sequences, on observed agreement and on the judge's and the reference's positive shares, each
  at alpha / 3, combined at the least favourable corner of the box (the coefficients are monotone in the observed
  and the chance agreement), so the combined bound holds whenever all three do.
- ``human_ceiling`` on percent agreement: the per-unit difference (mean judge-annotator minus mean
  annotator-annotator agreement) as a bounded mean.
- ``alt_test``: an e-process per annotator against "the annotator's advantage is at least epsilon", e-BH at q
  across annotators (FDR under any dependence).
- ``unscored_share``: the unscored indicator as a bounded mean.
- ``min_units_per_stratum``: a count.

Other criteria (the family contrast, a kappa or AC1 human ceiling) have no valid sequential form here: they say so
and are evaluated once, by the fixed-n gate, when labelling is complete; until then the study can be REJECTED but
not ACCEPTED.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agreement.sequential import (
    CHANCE_CORRECTED,
    GRID,
    ConfidenceSequence,
    betting_cs,
    chance_corrected_cs,
    e_bh,
    e_process,
    labels_to_decision,
)
from samples import Registry

PASS, FAIL, OPEN = "PASS", "FAIL", "UNDECIDED"
ACCEPT, REJECT, CONTINUE = "ACCEPT", "REJECT", "CONTINUE"
END_ONLY = "no valid sequential form: evaluated once, by the fixed-n gate, when labelling is complete"


@dataclass(frozen=True, kw_only=True)
class Stream:
    """One judge's validation sample in arrival order: per unit codes, and each unit's look.

    ``look[u]`` is the position (0-based) of the unit's cluster in completion order;
    codes index ``categories`` (-1: none). ``humans`` is units x annotators.
    """

    units: tuple[str, ...]
    look: np.ndarray
    looks: int
    judge: np.ndarray
    unscored: np.ndarray
    reference: np.ndarray
    humans: np.ndarray
    annotators: tuple[str, ...]
    categories: tuple[str, ...]
    positive: str | None
    strata: np.ndarray
    bound: float
    """Largest cluster in the sample (fixed before the first look)."""

    def per_look(self, mask: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Score sums and unit counts per look over the units in ``mask``; looks with none are dropped.

        Returns (sums, sizes, look index of each kept entry).
        """
        sums = np.bincount(self.look[mask], weights=score[mask], minlength=self.looks)
        sizes = np.bincount(self.look[mask], minlength=self.looks).astype(float)
        kept = sizes > 0
        return sums[kept], sizes[kept], np.nonzero(kept)[0]


def build_stream(table: pd.DataFrame, judge: str, *, reference: str, tie_policy: str,
                 arrival: pd.Series | None = None) -> Stream:
    """The judge's units from the long labels table, ordered as people completed their clusters.

    ``arrival`` (unit -> a sortable rank of its last human label, e.g. from the labels'
    ``created_at``) overrides the order of the table's human rows.
    """
    from agreement.validation import reference_labels, scheme_of

    judged = table[(table["source"] == "judge") & (table["rater"] == judge)]
    kinds = sorted(set(judged["kind"]))
    table = table[table["kind"].isin(kinds)].reset_index(drop=True)
    humans = table[table["source"] == "human"]
    units = pd.Index(sorted(set(humans["unit"]) & set(judged["unit"])), dtype=object)
    categories, positive = scheme_of(kinds, table["label"])
    if categories is None:
        categories = tuple(sorted(set(table["label"].dropna().astype(str))))
    code = {label: k for k, label in enumerate(categories)}

    if arrival is None:
        arrival = pd.Series(humans.index.to_numpy(), index=humans["unit"].to_numpy()).groupby(level=0).max()
    info = table.drop_duplicates("unit").set_index("unit").reindex(units)
    clusters = info["cluster"].astype(str).to_numpy()
    unit_arrival = arrival.reindex(units).to_numpy()
    cluster_arrival = pd.Series(unit_arrival, index=clusters).groupby(level=0).max().sort_values(kind="stable")
    position = pd.Series(np.arange(cluster_arrival.size), index=cluster_arrival.index)
    look = position.reindex(clusters).to_numpy(dtype=np.int64)

    judge_rows = judged.drop_duplicates("unit").set_index("unit").reindex(units)
    judge_codes = judge_rows["label"].map(code).fillna(-1).to_numpy(dtype=np.int64)
    ref = reference_labels(table, reference=reference, tie_policy=tie_policy).set_index("unit").reindex(units)
    ref_codes = ref["label"].map(code).fillna(-1).to_numpy(dtype=np.int64)
    wide = humans.pivot_table(index="unit", columns="rater", values="label", aggfunc="first").reindex(units)
    human_codes = np.full(wide.shape, -1, dtype=np.int64)
    for label, k in code.items():
        human_codes[(wide == label).to_numpy()] = k
    sizes = np.bincount(look, minlength=cluster_arrival.size) if units.size else np.zeros(0, dtype=np.int64)
    return Stream(units=tuple(str(u) for u in units), look=look, looks=int(cluster_arrival.size),
                  judge=judge_codes, unscored=judge_rows["label"].isna().to_numpy(), reference=ref_codes,
                  humans=human_codes, annotators=tuple(str(c) for c in wide.columns), categories=tuple(categories),
                  positive=positive, strata=info["stratum"].astype(str).to_numpy(),
                  bound=float(sizes.max()) if sizes.size else 1.0)


@dataclass(frozen=True, kw_only=True)
class CriterionPath:
    """One criterion's decision at every look: PASS and FAIL are final; None when it has no sequential form."""

    name: str
    type: str
    method: str
    decisions: np.ndarray | None
    """Per look: PASS, FAIL or UNDECIDED (None: evaluated once, at the end)."""
    statistic: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    threshold: str = ""
    further: int | None = None
    """Extrapolated further units until it would pass (None: not expected to)."""
    details: dict[str, Any] = field(default_factory=dict)

    def decided_at(self) -> int | None:
        """The 0-based look at which the criterion was decided (documents and lines count looks from 1)."""
        if self.decisions is None:
            return None
        hit = np.nonzero(self.decisions != OPEN)[0]
        return int(hit[0]) if hit.size else None


SequentialForm = Callable[[Any, Stream, float], CriterionPath]
SEQUENTIAL_FORMS: Registry[SequentialForm] = Registry("sequential form")


def register_sequential_form(criterion_type: str) -> Callable[[SequentialForm], SequentialForm]:
    """Register the anytime-valid form of a criterion type (built-ins register as third parties would)."""

    def wrap(function: SequentialForm) -> SequentialForm:
        return SEQUENTIAL_FORMS.register(criterion_type, function)

    return wrap


def _spread(stream: Stream, where: np.ndarray, values: np.ndarray, fill: Any) -> np.ndarray:
    """A per-entry path (entries at looks ``where``) carried forward to every look."""
    out = np.full(stream.looks, fill, dtype=object if isinstance(fill, str) else float)
    if where.size:
        index = np.searchsorted(where, np.arange(stream.looks), side="right") - 1
        seen = index >= 0
        out[seen] = np.asarray(values, dtype=out.dtype)[index[seen]]
    return out


def _bounded_mean(stream: Stream, mask: np.ndarray, score: np.ndarray, alpha: float, *, grid: int = GRID
                  ) -> tuple[ConfidenceSequence, np.ndarray]:
    sums, sizes, where = stream.per_look(mask, score)
    return betting_cs(sums, sizes, alpha=alpha, bound=stream.bound, grid=grid), where


def _decide(low: np.ndarray, high: np.ndarray, *, passes: Callable[[np.ndarray, np.ndarray], np.ndarray],
            fails: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """PASS/FAIL/UNDECIDED per entry; the first decision is kept (a CS's bounds only tighten)."""
    decision = np.full(low.size, OPEN, dtype=object)
    finite = np.isfinite(low) & np.isfinite(high)
    decision[finite & fails(low, high)] = FAIL
    decision[finite & passes(low, high)] = PASS
    decided = np.nonzero(decision != OPEN)[0]
    if decided.size:
        decision[decided[0]:] = decision[decided[0]]
    return decision


def agreement_sequence(stream: Stream, coefficient: str, alpha: float, *, grid: int = GRID
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str] | None:
    """Judge-vs-reference ``coefficient`` as (low, high, estimate, looks, method) per look; None without a form."""
    both = (stream.judge >= 0) & (stream.reference >= 0)
    agree = (stream.judge == stream.reference).astype(float)
    if coefficient == "percent_agreement":
        cs, where = _bounded_mean(stream, both, agree, alpha, grid=grid)
        return cs.low, cs.high, cs.statistic, where, cs.method
    if coefficient in CHANCE_CORRECTED and len(stream.categories) == 2 and stream.bound == 1:
        # One unit per cluster: units are independent, so pairs of units bound the coefficient directly.
        k = stream.categories.index(stream.positive) if stream.positive in stream.categories else 1
        order = np.nonzero(both)[0][np.argsort(stream.look[both], kind="stable")]
        cs, second = chance_corrected_cs((stream.judge[order] == k), (stream.reference[order] == k), coefficient,
                                         alpha=alpha, grid=2 * grid - 1)
        return cs.low, cs.high, cs.statistic, stream.look[order][second], cs.method
    if coefficient in CHANCE_CORRECTED and len(stream.categories) == 2:
        # Turns clustered in trajectories: the pair's units would not be independent; bound it from a box.
        k = stream.categories.index(stream.positive) if stream.positive in stream.categories else 1
        (po, where), (judge_pos, _), (ref_pos, _) = [_bounded_mean(stream, both, score, alpha / 3, grid=grid) for score in (
            agree, (stream.judge == k).astype(float), (stream.reference == k).astype(float))]
        low, high, estimate = _chance_corrected(coefficient, po, judge_pos, ref_pos)
        return low, high, estimate, where, (
            f"{coefficient} bounded from three confidence sequences at alpha/3 (observed agreement, judge and "
            f"reference positive shares; least favourable corner); {po.method}")
    return None


def _floor_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    coefficient, floor = criterion.coefficient, criterion.floor
    threshold = f"lower bound of the confidence sequence >= {floor}"
    found = agreement_sequence(stream, coefficient, alpha)
    if found is None:
        return CriterionPath(name=criterion.name, type="agreement_floor", decisions=None, threshold=threshold,
                             method=f"{coefficient} on {len(stream.categories)} categories: {END_ONLY}")
    low, high, estimate, where, method = found
    decisions = _decide(low, high, passes=lambda lo, hi: lo >= floor, fails=lambda lo, hi: hi < floor)
    both = (stream.judge >= 0) & (stream.reference >= 0)
    sizes = np.bincount(stream.look[both], minlength=stream.looks)[where]
    further = labels_to_decision(
        ConfidenceSequence(statistic=estimate, low=low, high=high, n=np.cumsum(sizes), level=1 - alpha),
        floor) if low.size else None
    return CriterionPath(name=criterion.name, type="agreement_floor", method=method,
                         decisions=_spread(stream, where, decisions, OPEN), threshold=threshold,
                         statistic=float(estimate[-1]) if estimate.size else math.nan,
                         ci_low=float(low[-1]) if low.size else math.nan,
                         ci_high=float(high[-1]) if high.size else math.nan, further=further,
                         details={"n_units": int(both.sum())})


def _chance_corrected(coefficient: str, agree: ConfidenceSequence, judge_pos: ConfidenceSequence,
                      ref_pos: ConfidenceSequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds of kappa or AC1 over the box of the three sequences (monotone: up in p_o, down in p_e)."""

    def chance(pj: np.ndarray, pr: np.ndarray) -> np.ndarray:
        if coefficient == "cohen_kappa":
            return pj * pr + (1 - pj) * (1 - pr)
        pi = (pj + pr) / 2
        return 2 * pi * (1 - pi)

    corners = np.stack([chance(a, b) for a in (judge_pos.low, judge_pos.high) for b in (ref_pos.low, ref_pos.high)])
    if coefficient == "gwet_ac1":
        # 2 pi (1 - pi) peaks at pi = 1/2, which may lie inside the box.
        lo_pi, hi_pi = (judge_pos.low + ref_pos.low) / 2, (judge_pos.high + ref_pos.high) / 2
        inside = (lo_pi <= 0.5) & (hi_pi >= 0.5)
        pe_max = np.where(inside, 0.5, corners.max(axis=0))
    else:
        pe_max = corners.max(axis=0)
    pe_min = corners.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(pe_max < 1, (agree.low - pe_max) / (1 - pe_max), np.nan)
        high = np.where(pe_min < 1, (agree.high - pe_min) / (1 - pe_min), np.nan)
        pe = chance(judge_pos.statistic, ref_pos.statistic)
        estimate = np.where(pe < 1, (agree.statistic - pe) / (1 - pe), np.nan)
    return np.clip(low, -1, 1), np.clip(high, -1, 1), estimate


def _ceiling_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    margin = -criterion.margin
    threshold = f"lower bound of the confidence sequence of (judge-annotator - annotator-annotator) >= {margin}"
    if criterion.coefficient != "percent_agreement":
        return CriterionPath(name=criterion.name, type="human_ceiling", decisions=None, threshold=threshold,
                             method=f"human ceiling on {criterion.coefficient}: {END_ONLY}")
    present = stream.humans >= 0
    count = present.sum(axis=1)
    usable = (count >= 2) & (stream.judge >= 0)
    judge_agree = ((stream.humans == stream.judge[:, None]) & present).sum(axis=1) / np.maximum(count, 1)
    same = np.zeros(stream.humans.shape[0])
    for k in range(len(stream.categories)):
        c = (stream.humans == k).sum(axis=1)
        same += c * (c - 1)
    pairs = np.maximum(count * (count - 1), 1)
    difference = judge_agree - same / pairs
    cs, where = _bounded_mean(stream, usable, (difference + 1) / 2, alpha)
    low, high, estimate = 2 * cs.low - 1, 2 * cs.high - 1, 2 * cs.statistic - 1
    decisions = _decide(low, high, passes=lambda lo, hi: lo >= margin, fails=lambda lo, hi: hi < margin)
    return CriterionPath(name=criterion.name, type="human_ceiling", method=f"paired difference as a bounded mean; "
                         f"{cs.method}", decisions=_spread(stream, where, decisions, OPEN), threshold=threshold,
                         statistic=float(estimate[-1]) if estimate.size else math.nan,
                         ci_low=float(low[-1]) if low.size else math.nan,
                         ci_high=float(high[-1]) if high.size else math.nan, details={"n_units": int(usable.sum())})


def _alt_test_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    s = criterion.settings
    threshold = f"e-BH winning rate >= {s['min_winning_rate']} (epsilon {s['epsilon']}, q {s['q']})"
    method = ("per annotator an e-process (GRAPA bets) against 'the annotator's advantage is at least epsilon', "
              "e-BH across annotators")
    if s["scoring"] != "accuracy":
        return CriterionPath(name=criterion.name, type="alt_test", decisions=None, threshold=threshold,
                             method=f"alt-test with {s['scoring']} scoring: {END_ONLY}")
    present = stream.humans >= 0
    enough = (present.sum(axis=1) >= s["min_humans_per_instance"]) & (stream.judge >= 0)
    wealth_rows, count_rows = [], []
    for j, _ in enumerate(stream.annotators):
        rows = enough & present[:, j]
        others = np.delete(stream.humans, j, axis=1)
        other_present = others >= 0
        llm = ((others == stream.judge[:, None]) & other_present).sum(axis=1)
        own = ((others == stream.humans[:, j][:, None]) & other_present).sum(axis=1)
        # The alt-test's advantage difference d = w_human - w_llm; the bet is on -d against -epsilon.
        d = (own >= llm).astype(float) - (llm >= own).astype(float)
        sums = np.bincount(stream.look[rows], weights=-d[rows], minlength=stream.looks)
        sizes = np.bincount(stream.look[rows], minlength=stream.looks).astype(float)
        path = np.ones(stream.looks)
        kept = sizes > 0
        if kept.any():
            path = _spread(stream, np.nonzero(kept)[0], e_process(sums[kept], sizes[kept], shift=s["epsilon"],
                                                                  bound=stream.bound), 1.0)
        wealth_rows.append(path)
        count_rows.append(np.cumsum(sizes))
    wealth, counts = np.array(wealth_rows), np.array(count_rows)
    tested = counts >= s["min_instances_per_human"]
    rates = np.full(stream.looks, np.nan)
    for t in range(stream.looks):
        m = int(tested[:, t].sum())
        if m:
            rates[t] = e_bh(wealth[tested[:, t], t], s["q"]).mean()
    decisions = np.where(np.nan_to_num(rates, nan=-1.0) >= s["min_winning_rate"], PASS, OPEN).astype(object)
    decided = np.nonzero(decisions == PASS)[0]
    if decided.size:
        decisions[decided[0]:] = PASS
    return CriterionPath(name=criterion.name, type="alt_test", method=method, decisions=decisions,
                         threshold=threshold, statistic=float(rates[-1]) if rates.size else math.nan,
                         details={"e_values": {a: float(wealth[j, -1]) for j, a in enumerate(stream.annotators)}
                                  if stream.looks else {}})


def _unscored_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    cap = criterion.cap
    threshold = f"upper bound of the confidence sequence < {cap}"
    everything = np.ones(len(stream.units), dtype=bool)
    cs, where = _bounded_mean(stream, everything, stream.unscored.astype(float), alpha)
    decisions = _decide(cs.low, cs.high, passes=lambda lo, hi: hi < cap, fails=lambda lo, hi: lo >= cap)
    return CriterionPath(name=criterion.name, type="unscored_share", method=cs.method,
                         decisions=_spread(stream, where, decisions, OPEN), threshold=threshold,
                         statistic=float(cs.statistic[-1]) if cs.looks else math.nan,
                         ci_low=float(cs.low[-1]) if cs.looks else math.nan,
                         ci_high=float(cs.high[-1]) if cs.looks else math.nan)


def _strata_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    validated = (stream.judge >= 0) & (stream.reference >= 0)
    names = sorted(set(stream.strata))
    counts = np.array([np.cumsum(np.bincount(stream.look[validated & (stream.strata == s)], minlength=stream.looks))
                       for s in names]) if names else np.zeros((0, stream.looks))
    reached = counts.min(axis=0) >= criterion.minimum if names else np.zeros(stream.looks, dtype=bool)
    return CriterionPath(name=criterion.name, type="min_units_per_stratum", method="design count",
                         decisions=np.where(reached, PASS, OPEN).astype(object),
                         threshold=f"every stratum >= {criterion.minimum} validated units",
                         statistic=float(counts[:, -1].min()) if names and stream.looks else math.nan)


def _tracks_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    bound = criterion.bound
    threshold = f"lower bound of the confidence sequence of cohen_kappa > {bound}"
    found = agreement_sequence(stream, "cohen_kappa", alpha)
    if found is None:
        return CriterionPath(name=criterion.name, type="tracks_input", decisions=None, threshold=threshold,
                             method=f"cohen_kappa on {len(stream.categories)} categories: {END_ONLY}")
    low, high, estimate, where, method = found
    decisions = _decide(low, high, passes=lambda lo, hi: lo > bound, fails=lambda lo, hi: hi <= bound)
    return CriterionPath(name=criterion.name, type="tracks_input", method=method,
                         decisions=_spread(stream, where, decisions, OPEN), threshold=threshold,
                         statistic=float(estimate[-1]) if estimate.size else math.nan,
                         ci_low=float(low[-1]) if low.size else math.nan,
                         ci_high=float(high[-1]) if high.size else math.nan)


def _constant_ac1(answer_positive: bool, reference_share: np.ndarray) -> np.ndarray:
    """AC1 of a rater who always gives one answer, against a reference with positive share p_R:
    p_o = p_R (or 1 - p_R), pi = (1 or 0 + p_R) / 2, p_e = 2 pi (1 - pi)."""
    po = reference_share if answer_positive else 1 - reference_share
    pi = ((1.0 if answer_positive else 0.0) + reference_share) / 2
    pe = 2 * pi * (1 - pi)
    return (po - pe) / (1 - pe)


def _baseline_difference(stream: Stream, coefficient: str, code: int, k: int, both: np.ndarray, alpha: float,
                         boxes: dict[tuple[float, int], Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(low, high, looks): the judge's ``coefficient`` minus always answering ``code``, at ``alpha``."""
    if coefficient == "percent_agreement":
        d = (stream.judge == stream.reference).astype(float) - (stream.reference == code)
        cs, where = _bounded_mean(stream, both, (d + 1) / 2, alpha)
        return 2 * cs.low - 1, 2 * cs.high - 1, where
    if coefficient == "cohen_kappa":
        found = agreement_sequence(stream, "cohen_kappa", alpha)
        return None if found is None else (found[0], found[1], found[3])
    if coefficient == "gwet_ac1":
        return _ac1_over_constant(stream, code == k, k, both, alpha, boxes=boxes)
    return None


_BOX_GRID = 401
"""Points of the reference-share grid searched for the extremes of the judge's AC1 less a constant's."""


def _ac1_over_constant(stream: Stream, answer_positive: bool, k: int, both: np.ndarray, alpha: float, *,
                       grid: int = GRID, boxes: dict[tuple[float, int], Any] | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Judge's AC1 minus always answering one category, bounded over a box of three sequences at alpha / 3.

    Both AC1s move with the reference's positive share p_R (the constant's steeply: about -1.6 per unit of
    p_R at p_R = 0.3), and the judge's share p_J moves with it, so the box is over the observed agreement
    p_o, p_R and the difference p_J - p_R (a bounded mean of J - R, narrow for a judge that tracks the
    reference) rather than over p_J and p_R apart: on simulated screening studies (AC1 0.85, 30% positives)
    it decides at a median of about 240 units where separate sequences for the two AC1s took 428.
    The judge's AC1 (p_o - p_e) / (1 - p_e) rises with p_o and falls with p_e = 2 pi (1 - pi), pi =
    p_R + (p_J - p_R) / 2; so for each p_R its lowest value takes p_o's lower bound and the pi of the
    box nearest 1/2, its highest p_o's upper bound and the pi farthest from 1/2 (an end). Over p_R the
    difference is smooth, searched on a grid that includes the box's ends (exact there, off by a
    second-order term between grid points). ``boxes`` keeps the three sequences, free of the constant, for the other.
    """
    boxes = {} if boxes is None else boxes
    if (alpha, grid) not in boxes:
        agree = (stream.judge == stream.reference).astype(float)
        judge_pos, ref_pos = (stream.judge == k).astype(float), (stream.reference == k).astype(float)
        boxes[alpha, grid] = [_bounded_mean(stream, both, score, alpha / 3, grid=grid) for score in (
            agree, (judge_pos - ref_pos + 1) / 2, ref_pos)]
    (po, where), (shift, _), (share, _) = boxes[alpha, grid]
    t = np.linspace(0.0, 1.0, _BOX_GRID)
    p_r = share.low[:, None] + (share.high - share.low)[:, None] * t[None, :]
    near = p_r + (shift.low - 0.5)[:, None]  # pi's range at this p_R: p_R + (p_J - p_R) / 2, (p_J - p_R) = 2 s - 1
    far = p_r + (shift.high - 0.5)[:, None]
    nearest = np.clip(0.5, np.clip(near, 0, 1), np.clip(far, 0, 1))
    ends = np.stack([np.clip(near, 0, 1), np.clip(far, 0, 1)])
    farthest = np.where(np.abs(ends[0] - 0.5) >= np.abs(ends[1] - 0.5), ends[0], ends[1])
    constant = _constant_ac1(answer_positive, p_r)

    def judge_ac1(p_o: np.ndarray, pi: np.ndarray) -> np.ndarray:
        pe = 2 * pi * (1 - pi)
        return (p_o[:, None] - pe) / (1 - pe)

    low = (judge_ac1(po.low, nearest) - constant).min(axis=1)
    high = (judge_ac1(po.high, farthest) - constant).max(axis=1)
    return np.clip(low, -2, 2), np.clip(high, -2, 2), where


def _baselines_path(criterion: Any, stream: Stream, alpha: float) -> CriterionPath:
    """Judge minus every constant answer: accuracy as a paired bounded difference; kappa (a constant's is 0) from
    the judge's kappa sequence; AC1 over a box of three sequences (``_ac1_over_constant``).

    PASS needs every comparison's lower bound above the bound, an intersection-union test: a false PASS needs
    the one comparison the judge does not win to pass, which its sequence allows with probability at most alpha,
    so each lower bound is at alpha (as the fixed-n gate's paired intervals are at its level, unsplit). FAIL
    needs only one comparison's upper bound at or below it, so the upper bounds are at alpha / comparisons
    and a REJECT of a judge that beats every constant stays within alpha.
    """
    bound = criterion.bound
    threshold = f"every lower bound of the confidence sequence of (judge - baseline) > {bound}"
    if getattr(criterion, "judges", ()) or len(stream.categories) != 2:
        why = "named baseline judges" if getattr(criterion, "judges", ()) else f"{len(stream.categories)} categories"
        return CriterionPath(name=criterion.name, type="beats_baselines", decisions=None, threshold=threshold,
                             method=f"baselines with {why}: {END_ONLY}")
    both = (stream.judge >= 0) & (stream.reference >= 0)
    k = stream.categories.index(stream.positive) if stream.positive in stream.categories else 1
    comparisons = [(c, code) for c in criterion.coefficients for code in range(2)]
    lows, highs, names = [], [], []
    boxes: dict[tuple[float, int], Any] = {}
    for coefficient, code in comparisons:
        lower = _baseline_difference(stream, coefficient, code, k, both, alpha, boxes)
        upper = lower if lower is None or len(comparisons) == 1 else _baseline_difference(
            stream, coefficient, code, k, both, alpha / len(comparisons), boxes)
        if lower is None or upper is None:
            return CriterionPath(name=criterion.name, type="beats_baselines", decisions=None, threshold=threshold,
                                 method=f"baseline comparison on {coefficient}: {END_ONLY}")
        lows.append(_spread(stream, lower[2], lower[0], np.nan))
        highs.append(_spread(stream, upper[2], upper[1], np.nan))
        names.append(f"always {stream.categories[code]!r} on {coefficient}")
    low, high = np.array(lows), np.array(highs)
    passes = np.all(np.nan_to_num(low, nan=-np.inf) > bound, axis=0)
    fails = np.any(np.nan_to_num(high, nan=np.inf) <= bound, axis=0)
    decisions = np.where(fails, FAIL, np.where(passes, PASS, OPEN)).astype(object)
    decided = np.nonzero(decisions != OPEN)[0]
    if decided.size:
        decisions[decided[0]:] = decisions[decided[0]]
    worst = int(np.nanargmin(low[:, -1])) if low.size and np.isfinite(low[:, -1]).any() else 0
    return CriterionPath(name=criterion.name, type="beats_baselines", decisions=decisions, threshold=threshold,
                         method=(f"each difference a confidence sequence, lower bounds at alpha (every one must pass: "
                                 f"an intersection-union test), upper bounds at alpha/{len(comparisons)} (accuracy: "
                                 f"paired bounded difference; kappa: a constant's is 0; AC1: over a box of the observed "
                                 f"agreement, the reference share and the judge's share less it, each at a third)"),
                         ci_low=float(low[worst, -1]) if low.size else math.nan,
                         ci_high=float(high[worst, -1]) if high.size else math.nan,
                         details={"closest_baseline": names[worst] if names else None})


for _type, _form in (("agreement_floor", _floor_path), ("human_ceiling", _ceiling_path), ("alt_test", _alt_test_path),
                     ("unscored_share", _unscored_path), ("min_units_per_stratum", _strata_path),
                     ("tracks_input", _tracks_path), ("beats_baselines", _baselines_path)):
    register_sequential_form(_type)(_form)


@dataclass(frozen=True, kw_only=True)
class SequentialVerdict:
    """The anytime gate's outcome for one judge, with every criterion's path."""

    judge: str
    outcome: str
    """ACCEPT, REJECT or CONTINUE."""
    decided_at: int | None
    """Look (cluster count) at which the outcome was reached; None while it continues."""
    units_at_decision: int | None
    looks: int
    units: int
    complete: bool
    criteria: tuple[CriterionPath, ...]
    further: int | None
    """Extrapolated further units to a decision (None: not expected, or decided)."""
    level: float
    end_only: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        from agreement.study_io import jsonable

        return jsonable({
            "judge": self.judge, "outcome": self.outcome, "decided_at_look": self.decided_at,
            "units_at_decision": self.units_at_decision, "looks": self.looks, "units": self.units,
            "labelling_complete": self.complete, "further_units_estimate": self.further, "level": self.level,
            "end_only": list(self.end_only),
            "criteria": [{"name": c.name, "type": c.type, "method": c.method, "threshold": c.threshold,
                          "decision": None if c.decisions is None else (c.decisions[-1] if c.decisions.size else OPEN),
                          "decided_at_look": None if (at := c.decided_at()) is None else at + 1,
                          "statistic": c.statistic, "ci_low": c.ci_low,
                          "ci_high": c.ci_high, "further_units_estimate": c.further, "details": c.details}
                         for c in self.criteria]})


def sequential_verdict(policy: Any, table: pd.DataFrame, judge: str, *, complete: bool,
                       end_results: dict[str, bool] | None = None,
                       arrival: pd.Series | None = None) -> SequentialVerdict:
    """Every criterion's path for ``judge`` and the first look at which the policy is decided.

    ``end_results`` (criterion name -> passed) are the fixed-n results of the criteria
    with no sequential form; they count only when ``complete`` (labelling has ended).
    """
    s = policy.settings
    reference = next((c.reference for c in policy.criteria if getattr(c, "reference", None)), "human_majority")
    stream = build_stream(table, judge, reference=reference, tie_policy=s["tie_policy"], arrival=arrival)
    paths = criterion_paths(policy, stream)
    sequential = [p for p in paths if p.decisions is not None]
    end_only = tuple(p.name for p in paths if p.decisions is None)
    looks = stream.looks
    units_by_look = np.cumsum(np.bincount(stream.look, minlength=looks)) if looks else np.zeros(0, dtype=np.int64)
    outcome, decided = decide(paths, looks, complete=complete, end_results=end_results)
    further = None
    if outcome == CONTINUE:
        open_paths = [p for p in sequential if p.decisions is not None and p.decisions.size
                      and p.decisions[-1] == OPEN]
        needs = [p.further for p in open_paths if p.further is not None]
        further = max(needs) if needs and len(needs) == len(open_paths) else None
    return SequentialVerdict(judge=judge, outcome=outcome, decided_at=None if decided is None else decided + 1,
                             units_at_decision=None if decided is None else int(units_by_look[decided]),
                             looks=looks, units=len(stream.units), complete=complete, criteria=tuple(paths),
                             further=further, level=s["level"], end_only=end_only)


def criterion_paths(policy: Any, stream: Stream) -> list[CriterionPath]:
    """Each criterion of the policy on the stream, through its registered sequential form (or end-only)."""
    alpha = 1.0 - policy.settings["level"]
    paths = []
    for criterion in policy.criteria:
        form = SEQUENTIAL_FORMS.get(getattr(criterion, "type_name", ""))
        paths.append(form(criterion, stream, alpha) if form else
                     CriterionPath(name=criterion.name, type=getattr(criterion, "type_name", "?"), decisions=None,
                                   method=END_ONLY))
    return paths


def decide(paths: list[CriterionPath], looks: int, *, complete: bool, end_results: dict[str, bool] | None = None
           ) -> tuple[str, int | None]:
    """The policy's outcome and the 0-based look it was reached at: REJECT at the first look a criterion has
    failed, ACCEPT at the first look every criterion has passed (criteria without a sequential form count only
    once labelling is complete, through ``end_results``), else CONTINUE; when complete, undecided is REJECT."""
    failed = np.zeros(looks, dtype=bool)
    passed = np.ones(looks, dtype=bool)
    end_only = [p.name for p in paths if p.decisions is None]
    for p in paths:
        if p.decisions is not None:
            failed |= p.decisions == FAIL
            passed &= p.decisions == PASS
    if end_only:
        ends = end_results or {}
        end_ok = complete and all(ends.get(name, False) for name in end_only)
        if complete and not end_ok and looks:
            failed[-1] = True
        passed &= end_ok
    first_fail, first_pass = np.nonzero(failed)[0], np.nonzero(passed)[0]
    if first_fail.size and (not first_pass.size or first_fail[0] <= first_pass[0]):
        return REJECT, int(first_fail[0])
    if first_pass.size:
        return ACCEPT, int(first_pass[0])
    if complete and looks:
        return REJECT, looks - 1
    return CONTINUE, None


def label_arrival(human: pd.DataFrame) -> pd.Series:
    """unit -> rank of its last independent human label: by ``created_at`` where every row has one, else file order."""
    rows = human[human["role"] == "independent"] if "role" in human else human
    if rows.empty:
        return pd.Series(dtype=float)
    stamps = rows["created_at"] if "created_at" in rows else None
    if stamps is not None and stamps.notna().all() and (stamps.astype(str) != "").all():
        order = stamps.astype(str).rank(method="first").to_numpy()
    else:
        order = np.arange(len(rows), dtype=float)
    return pd.Series(order, index=rows["unit_id"].to_numpy()).groupby(level=0).max()


def labelling_complete(study: Any) -> tuple[bool, str]:
    """Whether every label the study planned is in, and how that was decided.

    A study with annotator orders (``blind/orders.json``) is complete when every
    (annotator, task) pair in them has an independent label; a study without orders
    (imported labels) holds all the labels it will get.
    """
    import json

    from samples import StudyLayout

    orders_path = StudyLayout.of(study.root).orders
    if not orders_path.exists():
        return True, "no annotator orders: the imported labels are all the study has"
    orders = json.loads(orders_path.read_text(encoding="utf-8"))
    human = study.human
    done = set(zip(human.loc[human["role"] == "independent", "annotator"].astype(str),
                   human.loc[human["role"] == "independent", "task_id"].astype(str))) if len(human) else set()
    planned = {(str(a), str(t)) for a, tasks in orders.items() for t in tasks}
    missing = len(planned - done)
    if missing:
        return False, f"{missing} of {len(planned)} planned labels (blind/orders.json) are not in yet"
    return True, f"all {len(planned)} planned labels (blind/orders.json) are in"


ADAPTIVE_ORDER = ("the units are served in an adaptive (active) order, so the labels so far are not a random draw "
                  "of the sample and no confidence sequence holds for them: the verdict waits for every planned "
                  "label and is then the fixed-n one")


def adaptive_order(root: Any) -> str | None:
    """Why the anytime forms do not apply to this study (its units are served in an active order), else None.

    The sequences treat each look's clusters as draws in random order; an order that puts the units
    where judges disagree first makes every prefix a biased draw (weighting each label by its
    inclusion probability would restore it; not done here).
    """
    from samples import StudyLayout

    return ADAPTIVE_ORDER if StudyLayout.of(root).active_order.is_file() else None


@dataclass(frozen=True, kw_only=True)
class SequentialPlanPoint:
    """Units to a decision for a judge of one true agreement, over simulated studies labelled in order."""

    agreement: float
    mean_units: float
    p90_units: float
    accept: float
    reject: float
    undecided: float
    """Share of studies still undecided at ``max_units`` (counted at max_units in the mean)."""


def sequential_plan(policy: Any, design: Any, *, agreements: list[float], max_units: int, studies: int,
                    seed: int) -> tuple[SequentialPlanPoint, ...]:
    """Expected and 90th-percentile units to an anytime decision at each true agreement (``accord plan
    --sequential``): the fixed-n planner's simulated studies (``agreement.plan.Simulator``), each read
    after every trajectory by the policy's sequential forms; criteria without one are ignored here
    (the planner says so), as the fixed-n planner ignores what it cannot simulate."""
    from agreement.plan import Simulator, judge_accuracy_for, planned_criteria

    simulator = Simulator(design, planned_criteria(policy), level=policy.settings["level"], studies=studies,
                          seed=seed)
    rng = np.random.default_rng([seed, max_units, 7])
    cluster, latent, humans, u_judge = simulator._studies(max_units, rng)
    unscored = rng.random((studies, max_units)) < design.unscored_rate
    votes = humans.sum(axis=0)
    m = humans.shape[0]
    reference = np.where(2 * votes == m, -1, (2 * votes > m).astype(np.int64))
    points = []
    for agreement in agreements:
        accuracy = judge_accuracy_for(design, agreement)
        judge = np.where(u_judge < accuracy, latent, ~latent).astype(np.int64)
        units, outcomes = [], []
        for s in range(studies):
            look = cluster[s] - cluster[s, 0]
            sizes = np.bincount(look)
            stream = Stream(units=tuple(map(str, range(max_units))), look=look, looks=int(look[-1]) + 1,
                            judge=np.where(unscored[s], -1, judge[s]), unscored=unscored[s],
                            reference=reference[s], humans=humans[:, s, :].T.astype(np.int64), annotators=tuple(
                                f"a{i}" for i in range(m)), categories=("no", "yes"), positive="yes",
                            strata=np.full(max_units, "all"), bound=float(sizes.max()))
            paths = [p for p in criterion_paths(policy, stream) if p.decisions is not None]
            outcome, decided = decide(paths, stream.looks, complete=False)
            outcomes.append(outcome)
            units.append(int(np.cumsum(sizes)[decided]) if decided is not None else max_units)
        units_array, outcome_array = np.array(units, dtype=float), np.array(outcomes)
        points.append(SequentialPlanPoint(agreement=float(agreement), mean_units=float(units_array.mean()),
                                          p90_units=float(np.quantile(units_array, 0.9)),
                                          accept=float(np.mean(outcome_array == ACCEPT)),
                                          reject=float(np.mean(outcome_array == REJECT)),
                                          undecided=float(np.mean(outcome_array == CONTINUE))))
    return tuple(points)
