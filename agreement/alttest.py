"""The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025).

Leave one annotator out at a time; on each instance ask whether the judge or the
left-out annotator aligns better with the remaining annotators (accuracy for
categories, negative RMSE for numeric scales). The advantage indicators feed a
one-sided one-sample t-test against the cost-benefit margin epsilon; the
annotators' p-values are corrected with Benjamini-Yekutieli at q. The winning rate
is the share of annotators the judge beats; the judge passes at a winning rate of
at least ``min_winning_rate`` (0.5 in the paper). The average advantage probability
rho compares judges.

Conventions follow the authors' reference implementation (AltTest repository,
alt_test_example.ipynb) so the paper's published results reproduce: instances
need ``min_humans_per_instance`` human labels and a judge label; annotators with
fewer than ``min_instances_per_human`` such instances are skipped (not counted);
ties count for both sides; a t-test that is undefined (zero variance) is a loss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats

Scoring = Literal["accuracy", "neg_rmse"]
SCORINGS: tuple[str, ...] = ("accuracy", "neg_rmse")


@dataclass(frozen=True, kw_only=True)
class AnnotatorTest:
    """The judge against one left-out annotator."""

    annotator: str
    n: int
    advantage_probability: float
    human_advantage_probability: float
    mean_difference: float
    t_statistic: float
    p_value: float
    won: bool
    undefined_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class AltTestResult:
    """Winning rate (``statistic``) over ``n`` tested annotators, rho and the pass decision."""

    judge: str
    scoring: str
    epsilon: float
    q: float
    min_winning_rate: float
    statistic: float
    n: int
    advantage_probability: float
    passed: bool
    annotators: tuple[AnnotatorTest, ...]
    n_instances: int
    dropped_instances: dict[str, int] = field(default_factory=dict)
    skipped_annotators: dict[str, str] = field(default_factory=dict)
    undefined_reason: str | None = None

    @property
    def winning_rate(self) -> float:
        return self.statistic

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "judge": self.judge, "scoring": self.scoring, "epsilon": self.epsilon, "q": self.q,
            "min_winning_rate": self.min_winning_rate, "winning_rate": clean(self.statistic), "n": self.n,
            "advantage_probability": clean(self.advantage_probability), "passed": self.passed,
            "n_instances": self.n_instances, "dropped_instances": self.dropped_instances,
            "skipped_annotators": self.skipped_annotators, "undefined_reason": self.undefined_reason,
            "annotators": [
                {"annotator": a.annotator, "n": a.n, "advantage_probability": a.advantage_probability,
                 "human_advantage_probability": a.human_advantage_probability,
                 "mean_difference": a.mean_difference, "t_statistic": clean(a.t_statistic),
                 "p_value": clean(a.p_value), "won": a.won, "undefined_reason": a.undefined_reason}
                for a in self.annotators
            ],
        }


def benjamini_yekutieli(p_values: np.ndarray, q: float) -> np.ndarray:
    """Boolean rejections of the BY step-up procedure at FDR ``q`` (NaN p-values are never rejected)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    harmonic = np.sum(1.0 / np.arange(1, m + 1))
    thresholds = np.arange(1, m + 1) / m * q / harmonic
    below = np.nan_to_num(p[order], nan=np.inf) <= thresholds
    rejected = np.zeros(m, dtype=bool)
    if below.any():
        rejected[order[: np.flatnonzero(below)[-1] + 1]] = True
    return rejected


def _check(*, scoring: str, epsilon: float, q: float, min_humans_per_instance: int,
           min_instances_per_human: int, min_winning_rate: float) -> None:
    if scoring not in SCORINGS:
        raise ValueError(f"scoring={scoring!r}: expected one of {list(SCORINGS)}")
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"epsilon={epsilon!r}: expected a cost-benefit margin in [0, 1)")
    if not 0.0 < q < 1.0:
        raise ValueError(f"q={q!r}: expected an FDR level strictly between 0 and 1")
    if int(min_humans_per_instance) != min_humans_per_instance or min_humans_per_instance < 2:
        raise ValueError(f"min_humans_per_instance={min_humans_per_instance!r}: expected an integer >= 2")
    if int(min_instances_per_human) != min_instances_per_human or min_instances_per_human < 2:
        raise ValueError(f"min_instances_per_human={min_instances_per_human!r}: expected an integer >= 2")
    if not 0.0 < min_winning_rate <= 1.0:
        raise ValueError(f"min_winning_rate={min_winning_rate!r}: expected a share in (0, 1]")


def _encode(humans: Mapping[str, Mapping[str, Any]], judge: Mapping[str, Any], scoring: str):
    """Annotator x instance matrix (NaN = missing) and the judge vector on the same instances."""
    annotators = list(humans)
    instances = sorted({i for labels in humans.values() for i in labels}, key=str)
    index = {inst: k for k, inst in enumerate(instances)}
    if scoring == "accuracy":
        values = sorted({_key(v) for labels in humans.values() for v in labels.values() if v is not None}
                        | {_key(v) for v in judge.values() if v is not None})
        code = {v: float(k) for k, v in enumerate(values)}

        def encode(value: Any, *, who: str, inst: str) -> float:
            return code[_key(value)]
    else:
        def encode(value: Any, *, who: str, inst: str) -> float:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"neg_rmse scoring needs numeric labels: {who} labelled instance {inst!r} {value!r}") from None
            if not math.isfinite(number):
                raise ValueError(f"neg_rmse scoring needs finite labels: {who} labelled instance {inst!r} {value!r}")
            return number

    matrix = np.full((len(annotators), len(instances)), np.nan)
    for row, name in enumerate(annotators):
        for inst, value in humans[name].items():
            if value is not None:
                matrix[row, index[inst]] = encode(value, who=f"annotator {name!r}", inst=inst)
    vector = np.full(len(instances), np.nan)
    for inst, value in judge.items():
        if inst in index and value is not None:
            vector[index[inst]] = encode(value, who="the judge", inst=inst)
    return annotators, instances, matrix, vector


def alt_test(humans: Mapping[str, Mapping[str, Any]], judge: Mapping[str, Any], *, scoring: Scoring,
             epsilon: float, q: float, min_humans_per_instance: int, min_instances_per_human: int,
             min_winning_rate: float, judge_name: str = "judge") -> AltTestResult:
    """Run the alt-test for one judge.

    ``humans`` maps annotator -> {instance: label}; ``judge`` maps instance -> label
    (None = unscored: the instance is dropped and counted). Every threshold is an
    argument: the paper uses epsilon 0.1-0.2, q 0.05, 2 humans per instance, 30
    instances per human and a winning rate of 0.5.
    """
    _check(scoring=scoring, epsilon=epsilon, q=q, min_humans_per_instance=min_humans_per_instance,
           min_instances_per_human=min_instances_per_human, min_winning_rate=min_winning_rate)
    annotators, instances, matrix, vector = _encode(humans, judge, scoring)
    present = ~np.isnan(matrix)
    n_humans = present.sum(axis=0)
    enough = n_humans >= min_humans_per_instance
    judged = ~np.isnan(vector)
    keep = enough & judged
    dropped = {
        "fewer_humans_than_required": int((~enough).sum()),
        "judge_label_missing_or_unscored": int((enough & ~judged).sum()),
    }
    filled = np.where(present, matrix, 0.0)

    tests: list[AnnotatorTest] = []
    skipped: dict[str, str] = {}
    for row, name in enumerate(annotators):
        cols = keep & present[row]
        n = int(cols.sum())
        if n < min_instances_per_human:
            skipped[name] = f"{n} usable instances < min_instances_per_human={min_instances_per_human}"
            continue
        others = np.delete(present[:, cols], row, axis=0)
        other_vals = np.delete(filled[:, cols], row, axis=0)
        own = matrix[row, cols]
        llm = vector[cols]
        if scoring == "accuracy":
            # Same denominator on both sides: compare match counts exactly.
            llm_score = ((other_vals == llm) & others).sum(axis=0)
            human_score = ((other_vals == own) & others).sum(axis=0)
        else:
            # -RMSE comparison == reversed comparison of the summed squared errors.
            llm_score = -(((other_vals - llm) ** 2) * others).sum(axis=0)
            human_score = -(((other_vals - own) ** 2) * others).sum(axis=0)
        w_llm = (llm_score >= human_score).astype(float)
        w_human = (human_score >= llm_score).astype(float)
        diff = w_human - w_llm
        reason = None
        if np.all(diff == diff[0]):
            t_stat, p = math.nan, math.nan
            reason = "t-test undefined: every advantage difference is equal (zero variance)"
        else:
            res = stats.ttest_1samp(diff, epsilon, alternative="less")
            t_stat, p = float(res.statistic), float(res.pvalue)
        tests.append(AnnotatorTest(
            annotator=str(name), n=n, advantage_probability=float(w_llm.mean()),
            human_advantage_probability=float(w_human.mean()), mean_difference=float(diff.mean()),
            t_statistic=t_stat, p_value=p, won=False, undefined_reason=reason))

    common: dict[str, Any] = dict(judge=judge_name, scoring=scoring, epsilon=float(epsilon), q=float(q),
                  min_winning_rate=float(min_winning_rate), n_instances=int(keep.sum()),
                  dropped_instances=dropped, skipped_annotators=skipped)
    if not tests:
        return AltTestResult(statistic=math.nan, n=0, advantage_probability=math.nan, passed=False,
                             annotators=(), undefined_reason="no annotator has enough usable instances", **common)
    rejected = benjamini_yekutieli(np.array([t.p_value for t in tests]), q)
    tests = [AnnotatorTest(**{**t.__dict__, "won": bool(r)}) for t, r in zip(tests, rejected)]
    winning = float(rejected.mean())
    rho = float(np.mean([t.advantage_probability for t in tests]))
    return AltTestResult(statistic=winning, n=len(tests), advantage_probability=rho,
                         passed=bool(winning >= min_winning_rate), annotators=tuple(tests), **common)


def alt_test_table(frame: Any, *, judge: str, humans: list[str] | None = None, unit: str = "unit",
                   rater: str = "rater", label: str = "label", **settings: Any) -> AltTestResult:
    """Alt-test from the long labels table (rows unit, rater, label; missing label = unscored)."""
    rows = frame[[unit, rater, label]]
    raters = humans if humans is not None else sorted(set(rows[rater].unique()) - {judge})
    by_rater = {r: g for r, g in rows.groupby(rater, sort=False)}
    if judge not in by_rater:
        raise ValueError(f"judge={judge!r}: no rows with {rater}={judge!r} in the labels table")
    # tolist(): the same values as iterating the columns, without pandas 3's per-element str iteration
    human_maps = {str(r): {u: v for u, v in zip(by_rater[r][unit].tolist(), by_rater[r][label].tolist())
                           if _present(v)} for r in raters if r in by_rater}
    judge_map = {u: (v if _present(v) else None)
                 for u, v in zip(by_rater[judge][unit].tolist(), by_rater[judge][label].tolist())}
    return alt_test(human_maps, judge_map, judge_name=judge, **settings)


def _key(value: Any) -> tuple[str, str]:
    """Equality key for categorical labels: 1, 1.0 and True-free numbers compare by value, like ``==``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("number", repr(float(value)))
    return (type(value).__name__, str(value))


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))
