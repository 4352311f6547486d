"""The judge-scored benchmark: ISE Eq. 1-3 per (agent, backbone, dataset, split).

Definitions (ISE section 2.2). D = D+ (conflict) u D- (control); g_i = 1[i in D+];
the Identify judge gives g_hat_i and the first recognition turn t*_i (-1 when
g_hat_i = 0), counted over the intermediate assistant turns [turn 0], [turn 1], ...

- Eq. 1 Identify: P = sum[g_hat=1, g=1] / sum[g_hat=1], R = sum[g_hat=1, g=1] / sum[g=1],
  F1 = 2PR/(P+R) = 2TP/(2TP+FP+FN), jointly over conflict and control.
- Eq. 2 Solve: b_i = 1[exists a tool call at a turn > t*_i, no exact-duplicate
  (name, args) call in the trajectory, trunc_i = 0]; R_Solve = sum b_i g_hat_i / sum g_hat_i
  (conflict split).
- Eq. 3 Escalate: R_Escalate = sum_{D+} [a_i=1, c_i=0] / sum_{D+} [c_i=0]; conditioned on
  the answer being wrong (c_i = 0), never on Identify. A truncated trajectory has no
  final turn, so it cannot escalate (a_i = 0) and is incorrect (c_i = 0).

Each rate carries a 10,000-resample percentile bootstrap interval (ISE Table 1) and
conflict-vs-control tests (two-sided two-proportion z for binary accuracy, Welch's t
for continuous scores). An empty cell is undefined ("--" with the reason); an
empirical zero is 0.0 (ISE Table 5 rule). Unscored judge labels leave the
denominator of the metric they feed and are counted per cell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import pandas as pd

from agreement.bootstrap import DEFAULT_SEED
from agreement.estimate import (
    Estimate,
    mean_estimate,
    percentile_interval,
    proportion_estimate,
    undefined,
    zero_one_interval,
)
from samples import canonical_json, check_level, check_resamples

if TYPE_CHECKING:
    from samples import Trajectory

class Draws(TypedDict):
    """The resampling keywords every estimate of a cell takes."""

    n_resamples: int
    level: float


CELL_KEYS: tuple[str, ...] = ("agent", "backbone", "dataset", "split")
# Columns of the per-trajectory instance table the scorer reads.
INSTANCE_COLUMNS: tuple[str, ...] = (
    "trajectory_id", "agent", "backbone", "family", "dataset", "setting", "split",
    "flag", "first_turn", "last_tool_turn", "duplicate_free", "truncated", "correct", "escalate",
)


@dataclass(frozen=True, kw_only=True)
class ToolFacts:
    """What Eq. 2 needs from a trajectory's tool calls."""

    last_tool_turn: int
    """Intermediate-turn index of the last tool call; -2 when there is none (never > t* >= -1)."""
    n_tool_calls: int
    n_distinct_calls: int
    truncated: bool

    @property
    def duplicate_free(self) -> bool:
        return self.n_distinct_calls == self.n_tool_calls


def tool_facts(trajectory: Any) -> ToolFacts:
    """Tool-call turns and the exact-duplicate check of Eq. 2 for one ``samples.records.Trajectory``."""
    from samples import is_turn

    calls: list[tuple[int, bytes]] = []
    # Turns are numbered as the Identify judge sees them (samples.units): non-final agent steps.
    for turn, step in enumerate(s for s in trajectory.steps if is_turn(s)):
        for call in step.tool_calls:
            calls.append((turn, canonical_json([call.name, call.arguments])))
    return ToolFacts(
        last_tool_turn=max((t for t, _ in calls), default=-2),
        n_tool_calls=len(calls),
        n_distinct_calls=len({key for _, key in calls}),
        truncated=bool(trajectory.truncated),
    )


def solve_indicator(first_turn: np.ndarray, last_tool_turn: np.ndarray, duplicate_free: np.ndarray,
                    truncated: np.ndarray) -> np.ndarray:
    """Eq. 2's b_i: a call after t*_i (i.e. the last call is after it), no duplicate, clean end."""
    return (np.asarray(last_tool_turn) > np.asarray(first_turn)) & np.asarray(duplicate_free, bool) & ~np.asarray(
        truncated, bool)


def f1_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    denom = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), np.nan)


def identify_estimates(flag: np.ndarray, conflict: np.ndarray, *, n_resamples: int, seed: int,
                       level: float) -> dict[str, Estimate]:
    """Eq. 1 precision, recall and F1 with a multinomial (= instance-resampling) bootstrap."""
    flag = np.asarray(flag, dtype=float)
    conflict = np.asarray(conflict, dtype=bool)
    scored = ~np.isnan(flag)
    f = flag[scored] == 1
    g = conflict[scored]
    tp, fp, fn, tn = (int((f & g).sum()), int((f & ~g).sum()), int((~f & g).sum()), int((~f & ~g).sum()))
    n = tp + fp + fn + tn
    method = "percentile bootstrap"
    if n == 0:
        reason = "no scored Identify label in this cell"
        return {k: undefined(reason, level=level, method=method) for k in ("precision", "recall", "f1")}
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, np.array([tp, fp, fn, tn], float) / n, size=check_resamples(n_resamples))
    btp, bfp, bfn = draws[:, 0].astype(float), draws[:, 1].astype(float), draws[:, 2].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = {
            "precision": np.where(btp + bfp > 0, btp / np.maximum(btp + bfp, 1), np.nan),
            "recall": np.where(btp + bfn > 0, btp / np.maximum(btp + bfn, 1), np.nan),
            "f1": f1_counts(btp, bfp, bfn),
        }
    points = {
        "precision": (tp / (tp + fp) if tp + fp else math.nan, tp + fp,
                      "the judge flagged no instance in this cell (precision 0/0)"),
        "recall": (tp / (tp + fn) if tp + fn else math.nan, tp + fn, "no conflict instance in this cell"),
        "f1": (float(f1_counts(np.array(tp), np.array(fp), np.array(fn))), n,
               "no flagged and no conflict instance (F1 0/0)"),
    }
    out: dict[str, Estimate] = {}
    counts = {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    for name, (value, denom, reason) in points.items():
        if not math.isfinite(value):
            out[name] = undefined(reason, n=denom, level=level, method=method, **counts)
            continue
        lo, hi, dropped = percentile_interval(reps[name], level)
        used = method
        if value in (0.0, 1.0):
            # The bootstrap of 0 or 1 has no spread. Precision and recall are shares of their denominators;
            # F1 = 2q / (1 + q) with q = tp / (tp + fp + fn), increasing in q: Clopper-Pearson on q, mapped.
            m = denom if name != "f1" else tp + fp + fn
            lo, hi = zero_one_interval(value, m, level)
            if name == "f1":
                lo, hi = 2 * lo / (1 + lo), 2 * hi / (1 + hi)
            used = "Clopper-Pearson (a share of 0 or 1)"
        out[name] = Estimate(statistic=value, n=denom, ci_low=lo, ci_high=hi, level=level, method=used,
                             details={**counts, "undefined_resamples": dropped, "n_resamples": n_resamples})
    return out


def rate(indicator: np.ndarray, eligible: np.ndarray, *, n_resamples: int, seed: int, level: float,
         empty_reason: str) -> Estimate:
    """Share of ``indicator`` among ``eligible`` rows (NaN indicator = unscored, excluded and counted)."""
    ind = np.asarray(indicator, dtype=float)
    elig = np.asarray(eligible, dtype=bool)
    scored = elig & ~np.isnan(ind)
    est = proportion_estimate(int((ind[scored] == 1).sum()), int(scored.sum()), n_resamples=n_resamples,
                              seed=seed, level=level, empty_reason=empty_reason)
    unscored = int((elig & np.isnan(ind)).sum())
    return Estimate(**{**est.__dict__, "details": {**est.details, "unscored": unscored}})


@dataclass(frozen=True, kw_only=True)
class ContrastTest:
    """Conflict vs control comparison of a cell's accuracy."""

    test: str
    statistic: float
    p_value: float
    undefined_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        from agreement.study_io import jsonable

        return {"test": self.test, "statistic": jsonable(self.statistic), "p_value": jsonable(self.p_value),
                "undefined_reason": self.undefined_reason}


def two_proportion_z(x1: int, n1: int, x2: int, n2: int) -> ContrastTest:
    """Two-sided pooled two-proportion z-test."""
    if n1 == 0 or n2 == 0:
        return ContrastTest(test="two-proportion z", statistic=math.nan, p_value=math.nan,
                            undefined_reason="a split has no scored instance")
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return ContrastTest(test="two-proportion z", statistic=math.nan, p_value=math.nan,
                            undefined_reason="both splits are all-0 or all-1 (zero pooled variance)")
    z = (x1 / n1 - x2 / n2) / se
    from scipy import stats  # here, not at the top: `accord report` imports this module and never tests

    return ContrastTest(test="two-proportion z", statistic=z, p_value=float(2 * stats.norm.sf(abs(z))))


def welch_t(a: np.ndarray, b: np.ndarray) -> ContrastTest:
    if a.size < 2 or b.size < 2:
        return ContrastTest(test="Welch t", statistic=math.nan, p_value=math.nan,
                            undefined_reason="a split has fewer than 2 scored instances")
    if np.var(a) == 0 and np.var(b) == 0:
        return ContrastTest(test="Welch t", statistic=math.nan, p_value=math.nan,
                            undefined_reason="both splits have zero variance")
    from scipy import stats

    res = stats.ttest_ind(a, b, equal_var=False)
    return ContrastTest(test="Welch t", statistic=float(res.statistic), p_value=float(res.pvalue))


def accuracy_contrast(conflict: np.ndarray, control: np.ndarray) -> ContrastTest:
    conflict, control = conflict[~np.isnan(conflict)], control[~np.isnan(control)]
    if np.isin(conflict, (0.0, 1.0)).all() and np.isin(control, (0.0, 1.0)).all():
        return two_proportion_z(int(conflict.sum()), conflict.size, int(control.sum()), control.size)
    return welch_t(conflict, control)


@dataclass(frozen=True, kw_only=True)
class ScoreRow:
    """One (agent, backbone, dataset, split) cell of the benchmark."""

    key: dict[str, str]
    n_instances: int
    accuracy: Estimate
    identify_precision: Estimate
    identify_recall: Estimate
    identify_f1: Estimate
    first_turn: Estimate
    """Mean first-recognition turn t* over the flagged conflict instances."""
    solve: Estimate
    escalate: Estimate
    contrast: ContrastTest | None
    unscored: dict[str, int]
    corrected: dict[str, dict[str, Estimate]] = field(default_factory=dict)
    """metric -> Rogan-Gladen and PPI++ corrections of a judge-scored rate."""
    not_correctable: dict[str, str] = field(default_factory=dict)
    """metric -> why neither correction applies to it."""

    METRICS = ("accuracy", "identify_precision", "identify_recall", "identify_f1", "first_turn", "solve", "escalate")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "n_instances": self.n_instances, "unscored": self.unscored,
                               "contrast": self.contrast.to_dict() if self.contrast else None}
        for name in self.METRICS:
            out[name] = getattr(self, name).to_dict()
        out["corrected"] = {m: {k: e.to_dict() for k, e in v.items()} for m, v in self.corrected.items()}
        out["not_correctable"] = dict(self.not_correctable)
        return out


def cell_seed(seed: int, key: Iterable[str], metric: str) -> int:
    """Per-cell, per-metric seeds: results do not depend on which other cells exist."""
    digest = np.frombuffer(canonical_json([seed, list(key), metric]), dtype=np.uint8)
    return int(np.random.SeedSequence([seed, *digest.tolist()]).generate_state(1)[0])


def check_instances(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in INSTANCE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"instance table is missing columns {missing}; expected {list(INSTANCE_COLUMNS)}")
    bad = sorted(set(frame["split"]) - {"conflict", "control"})
    if bad:
        raise ValueError(f"column 'split': values {bad} are not conflict/control; ISE scoring needs matched splits")
    return frame


def score_table(instances: pd.DataFrame, *, n_resamples: int = 10_000, seed: int = DEFAULT_SEED,
                level: float = 0.95) -> list[ScoreRow]:
    """Eq. 1-3 and task accuracy for every (agent, backbone, dataset, split) cell."""
    frame = check_instances(instances).copy()
    # A truncated run gave no final answer: it is incorrect, whatever the correctness table says.
    truncated = frame["truncated"].to_numpy(bool)
    frame["correct"] = np.where(truncated, 0.0, frame["correct"].to_numpy(dtype=float))
    level = check_level(level)
    check_resamples(n_resamples)
    rows: list[ScoreRow] = []
    for (agent, backbone, dataset), group in frame.groupby(["agent", "backbone", "dataset"], sort=True):
        conflict = (group["split"] == "conflict").to_numpy()
        flag = group["flag"].to_numpy(dtype=float)
        ident = identify_estimates(flag, conflict, n_resamples=n_resamples, level=level,
                                   seed=cell_seed(seed, (agent, backbone, dataset), "identify"))
        correct = group["correct"].to_numpy(dtype=float)
        contrast = accuracy_contrast(correct[conflict], correct[~conflict])
        for split in ("conflict", "control"):
            mask = (group["split"] == split).to_numpy()
            key = {"agent": agent, "backbone": backbone, "dataset": dataset, "split": split}
            sub = group[mask]
            draws = Draws(n_resamples=n_resamples, level=level)
            acc_values = sub["correct"].to_numpy(dtype=float)
            acc_values = acc_values[~np.isnan(acc_values)]
            acc_seed = cell_seed(seed, key.values(), "accuracy")
            if np.isin(acc_values, (0.0, 1.0)).all():
                accuracy = proportion_estimate(int(acc_values.sum()), acc_values.size, seed=acc_seed,
                                               empty_reason=f"no scored instance on the {split} split", **draws)
            else:
                accuracy = mean_estimate(acc_values, seed=acc_seed,
                                         empty_reason=f"no scored instance on the {split} split", **draws)
            unscored = {
                "identify": int(np.isnan(sub["flag"].to_numpy(dtype=float)).sum()),
                "correctness": int(np.isnan(sub["correct"].to_numpy(dtype=float)).sum()),
                "escalate": int((np.isnan(sub["escalate"].to_numpy(dtype=float))
                                 & ~sub["truncated"].to_numpy(bool)).sum()),
            }
            if split == "conflict":
                flags = sub["flag"].to_numpy(dtype=float)
                b = solve_indicator(sub["first_turn"].to_numpy(dtype=float), sub["last_tool_turn"].to_numpy(float),
                                    sub["duplicate_free"].to_numpy(bool), sub["truncated"].to_numpy(bool))
                # A flagged instance without a recognition turn cannot be checked for "a call after t*".
                unknown = np.isnan(flags) | ((flags == 1) & np.isnan(sub["first_turn"].to_numpy(dtype=float)))
                solve = rate(np.where(unknown, np.nan, b.astype(float)), flags == 1,
                             seed=cell_seed(seed, key.values(), "solve"),
                             empty_reason="the judge flagged no conflict instance (Solve denominator is 0)", **draws)
                c = sub["correct"].to_numpy(dtype=float)
                a = np.where(sub["truncated"].to_numpy(bool), 0.0, sub["escalate"].to_numpy(dtype=float))
                escalate = rate(a, c == 0, seed=cell_seed(seed, key.values(), "escalate"),
                                empty_reason="no incorrect conflict instance (Escalate denominator is 0)", **draws)
                turns = sub["first_turn"].to_numpy(dtype=float)[flags == 1]
                first_turn = mean_estimate(turns[~np.isnan(turns)], seed=cell_seed(seed, key.values(), "first_turn"),
                                           empty_reason="no flagged conflict instance with a recognition turn", **draws)
                identify = ident
                row_contrast = contrast
            else:
                reason = "undefined on the control split (no expected gap; ISE Table 5)"
                solve = undefined(reason, level=level)
                escalate = undefined(reason, level=level)
                joint = "Identify is computed jointly over conflict and control: see the conflict row"
                identify = {k: undefined(joint, level=level) for k in ("precision", "recall", "f1")}
                first_turn = undefined(reason, level=level)
                row_contrast = None
            rows.append(ScoreRow(key=key, n_instances=int(mask.sum()), accuracy=accuracy,
                                 identify_precision=identify["precision"], identify_recall=identify["recall"],
                                 identify_f1=identify["f1"], first_turn=first_turn, solve=solve, escalate=escalate,
                                 contrast=row_contrast, unscored=unscored))
    return rows



def binary_rate_corrections(full: pd.DataFrame, validation: pd.DataFrame | None, *, n_resamples: int, seed: int,
                            level: float) -> dict[str, Estimate]:
    """Rogan-Gladen and PPI++ corrections of the share of ``full['value'] == 1``.

    ``full``: the rate's denominator units (columns unit, value 0/1) judged over the
    full set; ``validation``: the judge's validated units (unit, judge, human 0/1,
    weight, cluster). Rogan-Gladen uses the judge's sensitivity and specificity over
    the whole validation sample; PPI++ uses the validated units inside ``full``.
    """
    from agreement.correction import ppi_mean, rogan_gladen

    if validation is None or validation.empty:
        reason = "no human-validated units for this judge (no sealed key / human labels, or no overlap)"
        return {"rogan_gladen": undefined(reason, level=level), "ppi": undefined(reason, level=level)}
    values = full["value"].to_numpy(float)
    rg = rogan_gladen(values, validation["judge"].to_numpy(float), validation["human"].to_numpy(float),
                      val_clusters=validation["cluster"].to_numpy(), val_weights=validation["weight"].to_numpy(float),
                      n_resamples=n_resamples, seed=seed, level=level)
    inside = validation[validation["unit"].isin(set(full["unit"]))]
    ppi = ppi_mean(inside["human"].to_numpy(float), inside["judge"].to_numpy(float), values,
                   weights=inside["weight"].to_numpy(float) if len(inside) else None, level=level)
    return {"rogan_gladen": rg, "ppi": ppi}


# --- the study-level benchmark (accord score) -------------------------------------------------

# Why Rogan-Gladen and PPI++ (both correct the share of one judge's binary label over a fixed set of
# units) do not apply to these judge-scored rates of a conflict row.
NOT_CORRECTABLE: dict[str, str] = {
    "identify_precision": "its denominator (the flagged instances) is chosen by the judge, so the rate is not a "
                          "share of one fixed set of units",
    "identify_f1": "it combines precision and recall, not a single share of judged units",
    "first_turn": "a mean turn index t*, not a binary rate",
    "solve": "it combines the Identify flag and t* with tool-call facts over a judge-chosen denominator",
}

_LABEL_VALUE = {"yes": 1.0, "no": 0.0, "correct": 1.0, "incorrect": 0.0}


def _judge_values(rows: pd.DataFrame, judge: str, kind_units: pd.Series, *, kind: str, root: Any) -> pd.DataFrame:
    """Per trajectory: the judge's 0/1 value (NaN unscored or never judged) and first turn.

    A scored row whose label is not one of the kind's scheme is an error naming its file:line, as on
    the sampled units (``agreement.study_io.one_scheme_per_kind``): never read as unscored."""
    from samples import InputError, get_scheme, scheme_for

    mine = rows[(rows["judge"] == judge) & (rows["sample_index"] == 0)].drop_duplicates("unit_id", keep="last")
    by_unit = mine.set_index("unit_id")
    labels = by_unit["label"].where(by_unit["parse_status"] == "ok")
    scheme = get_scheme(scheme_for(kind))
    off = mine[(mine["parse_status"] == "ok") & mine["unit_id"].isin(set(kind_units.dropna()))
               & ~mine["label"].isin(scheme.labels)]
    if len(off):
        row = off.iloc[0]
        raise InputError(f"{root}/{row['source_file']}:{row['source_line']}: unit {row['unit_id']!r}: judge {judge!r} "
                         f"label {row['label']!r} is not a label of unit kind {kind!r}'s scheme {scheme.name!r} "
                         f"{list(scheme.labels)}; a label row outside the scheme is an error, not a category")
    value = kind_units.map(labels.map(lambda x: _LABEL_VALUE.get(x, math.nan) if isinstance(x, str) else math.nan))
    first = kind_units.map(by_unit["first_turn"]) if "first_turn" in by_unit else pd.Series(math.nan, kind_units.index)
    return pd.DataFrame({"value": value.astype(float), "first_turn": pd.to_numeric(first, errors="coerce"),
                         "unit": kind_units})


def instance_table(root: Any, *, identify_judge: str, escalate_judge: str, correctness_judge: str | None = None,
                   correctness_field: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One row per conflict/control trajectory with the facts Eq. 1-3 need (INSTANCE_COLUMNS)."""
    from agreement.study_io import read_judge_labels, read_rows
    from samples import InputError, StudyLayout, Trajectory, read_models

    layout = StudyLayout.of(root)
    if (correctness_judge is None) == (correctness_field is None):
        raise InputError("give exactly one of --correctness-judge (a judge over correctness units) or "
                         "--correctness-field (a Trajectory.metadata field holding 0/1 or a score)")
    trajectories = list(read_models(layout.trajectories, Trajectory))
    units = pd.DataFrame(read_rows(layout.units, ("unit_id", "trajectory_id", "kind")))
    files = layout.judge_label_files()
    if not files:
        raise InputError(f"{layout.judge_labels}: missing; scoring needs judge labels (accord judge run)")
    labels = read_judge_labels(layout, files)
    known = set(labels["judge"])
    for name in filter(None, (identify_judge, escalate_judge, correctness_judge)):
        if name not in known:
            raise InputError(f"{layout.judges_dir}: no labels from judge {name!r}; judges present: {sorted(known)}")
    notes: list[str] = []
    ids = [t.id for t in trajectories]

    def units_of(kind: str) -> pd.Series:
        sub = units[units["kind"] == kind].drop_duplicates("trajectory_id").set_index("trajectory_id")["unit_id"]
        return pd.Series(ids, index=ids).map(sub)

    ident = _judge_values(labels, identify_judge, units_of("identify_trajectory"), kind="identify_trajectory",
                          root=layout.root)
    escal = _judge_values(labels, escalate_judge, units_of("escalate_final"), kind="escalate_final",
                          root=layout.root)
    facts = [tool_facts(t) for t in trajectories]
    frame = pd.DataFrame({
        "trajectory_id": ids, "agent": [t.agent for t in trajectories], "backbone": [t.backbone for t in trajectories],
        "family": [t.family for t in trajectories], "dataset": [t.dataset for t in trajectories],
        "setting": [t.setting for t in trajectories], "split": [t.split for t in trajectories],
        "flag": ident["value"].to_numpy(), "first_turn": ident["first_turn"].to_numpy(),
        "last_tool_turn": [f.last_tool_turn for f in facts], "duplicate_free": [f.duplicate_free for f in facts],
        "truncated": [f.truncated for f in facts], "escalate": escal["value"].to_numpy(),
        "identify_unit": ident["unit"].to_numpy(), "escalate_unit": escal["unit"].to_numpy(),
    })
    if correctness_judge is not None:
        corr = _judge_values(labels, correctness_judge, units_of("correctness"), kind="correctness",
                              root=layout.root)
        frame["correct"] = corr["value"].to_numpy()
        frame["correctness_unit"] = corr["unit"].to_numpy()
    elif correctness_field is not None:  # always, by the exactly-one check above
        frame["correct"] = [_metadata_score(t, correctness_field, layout.trajectories) for t in trajectories]
        frame["correctness_unit"] = None
    outside = frame["split"] == "none"
    if outside.all():
        raise InputError(f"{layout.trajectories}: every trajectory has split 'none'; ISE scoring needs matched "
                         f"conflict and control splits")
    if outside.any():
        notes.append(f"{int(outside.sum())} trajectories with split 'none' are outside the ISE design and not scored")
    return frame[~outside].reset_index(drop=True), notes


def _metadata_score(trajectory: Trajectory, field: str, path: Path) -> float:
    value = trajectory.metadata.get(field)
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    from samples import InputError

    raise InputError(f"{path}: trajectory {trajectory.id!r} metadata[{field!r}] = {value!r}: expected a bool or a number")


def check_verdict(study: Any, judges: list[str], *, force: bool) -> dict[str, Any]:
    """The gate verdicts the score rests on; refuses unaccepted judges unless ``force``.

    A judge counts as accepted when the verdict says ACCEPT for it, its labels on the
    sampled units are byte-for-byte those the gate saw, every call its labels come
    from is a call the verdict validated (``agreement.identity``: prompt, model,
    parameters, parser, unit kind; any other call is an input error naming the
    difference), and no input of the verdict has changed since (a stale verdict
    accepts nothing).
    """
    from agreement.documents import VerdictDocument, read_document, stale_reasons
    from agreement.gate import ACCEPT, judge_sample_fingerprint
    from agreement.study_io import labels_table
    from samples import StudyLayout, file_sha256

    layout = StudyLayout.of(study.root)
    path = layout.verdict
    problems: list[str] = []
    wrong_call: list[str] = []
    document = read_document(VerdictDocument, layout)
    if document is not None:
        problems += stale_reasons(document, layout)
        table = labels_table(study)
        for judge in judges:
            verdict = document.judges.get(judge)
            if verdict is None:
                problems.append(f"judge {judge!r} was not gated")
            elif verdict.verdict != ACCEPT:
                problems.append(f"judge {judge!r} was rejected by policy {document.policy.name!r}")
            elif getattr(verdict, "judge_sample_sha256", None) != judge_sample_fingerprint(table, judge):
                problems.append(f"judge {judge!r}'s labels on the sample changed since the gate ran")
            else:
                wrong_call += other_calls(study, verdict, judge)
    else:
        problems.append(f"no gate verdict at {path} (run accord gate first)")
    if wrong_call and not force:
        from samples import InputError

        raise InputError(f"{path}: " + "; ".join(wrong_call) + "; gate this call, or --force to score it UNACCEPTED")
    problems += wrong_call
    if problems and not force:
        raise GateRefusal("; ".join(problems))
    return {
        "accepted": not problems, "forced": bool(force and problems), "problems": problems,
        "verdict_file_sha256": file_sha256(path) if path.is_file() else None,
        "policy": {"name": document.policy.name, "sha256": document.policy.sha256} if document else None,
    }


def other_calls(study: Any, verdict: Any, judge: str) -> list[str]:
    """How the calls behind ``judge``'s labels differ from those its verdict validated (empty: the same)."""
    from agreement.identity import call_differences, judge_identity, unit_kinds

    validated = (verdict.judge_identity or {}).get("calls")
    if validated is None:
        return [f"judge {judge!r}: the verdict names no validated call (gated before calls were recorded; "
                f"rerun accord gate)"]
    used = judge_identity(study, judge, kinds=unit_kinds(study))["calls"]
    return [f"judge {judge!r}: the ACCEPT is for another call ({d})" for d in call_differences(validated, used)]


def refuse_other_calls(study_root: Any) -> None:
    """An accepted score whose judges' labels now come from calls the verdict did not validate is an input
    error naming the difference (``accord report``); a score forced UNACCEPTED says so itself."""
    from agreement.documents import ScoreDocument, VerdictDocument, read_document
    from agreement.study_io import load_study
    from samples import InputError, StudyLayout

    layout = StudyLayout.of(study_root)
    score, verdict = read_document(ScoreDocument, layout), read_document(VerdictDocument, layout)
    if score is None or verdict is None or not score.accepted:
        return
    study = load_study(layout.root)
    names = [j for j in score.judges.values() if not j.startswith("metadata:")]
    wrong = [d for j in names if j in verdict.judges for d in other_calls(study, verdict.judges[j], j)]
    if wrong:
        raise InputError(f"{layout.score}: " + "; ".join(wrong) + "; gate this call and rerun accord score")


class GateRefusal(Exception):
    """The score was asked of a judge the gate did not accept (exit 1 unless --force)."""


def score_study(study_root: Any, *, identify_judge: str, escalate_judge: str, correctness_judge: str | None = None,
                correctness_field: str | None = None, force: bool = False, tie_policy: str | None = None,
                n_resamples: int = 10_000, seed: int = DEFAULT_SEED, level: float = 0.95,
                reference: str = "resolved") -> dict[str, Any]:
    """The judge-scored benchmark table with bias-corrected rates and its provenance.

    The corrections read each judge's errors against ``reference`` ("resolved": the
    adjudicated label where one exists, else the majority; or "human_majority")."""
    from pathlib import Path

    from agreement.study_io import SIMULATED_NOTE, labels_table, load_study
    from agreement.validation import validated_units
    from samples import InputError

    root = Path(study_root)
    study = load_study(root)
    judges = [j for j in (identify_judge, escalate_judge, correctness_judge) if j]
    provenance = check_verdict(study, judges, force=force)
    frame, notes = instance_table(root, identify_judge=identify_judge, escalate_judge=escalate_judge,
                                  correctness_judge=correctness_judge, correctness_field=correctness_field)
    rows = score_table(frame, n_resamples=n_resamples, seed=seed, level=level)
    policy_ties = None
    from agreement.documents import VerdictDocument, read_document

    verdict_document = read_document(VerdictDocument, root)
    if verdict_document is not None:
        policy_ties = (getattr(verdict_document.policy, "settings", None) or {}).get("tie_policy")
    ties = tie_policy or policy_ties or "exclude"
    table = labels_table(study)
    validation: dict[str, pd.DataFrame | None] = {}
    for judge in judges:
        try:
            validation[judge] = validated_units(table, judge, tie_policy=ties, reference=reference)
        except InputError as error:
            validation[judge] = None
            notes.append(f"no bias correction for {judge!r}: {error}")
    frame = frame.copy()
    frame["correct"] = np.where(frame["truncated"].to_numpy(bool), 0.0, frame["correct"].to_numpy(float))
    for row in rows:
        cell = frame[(frame["agent"] == row.key["agent"]) & (frame["backbone"] == row.key["backbone"])
                     & (frame["dataset"] == row.key["dataset"])]
        draws = Draws(n_resamples=n_resamples, level=level)
        split = cell[cell["split"] == row.key["split"]]
        if correctness_judge:  # the truncated runs' accuracy 0 is a rule, not the judge's: left out
            scored = split[split["correct"].notna() & ~split["truncated"]]
            row.corrected["accuracy"] = binary_rate_corrections(
                pd.DataFrame({"unit": scored["correctness_unit"], "value": scored["correct"]}),
                validation[correctness_judge], seed=cell_seed(seed, row.key.values(), "rg_accuracy"), **draws)
        if row.key["split"] != "conflict":
            continue
        flagged = split[split["flag"].notna()]
        row.corrected["identify_recall"] = binary_rate_corrections(
            pd.DataFrame({"unit": flagged["identify_unit"], "value": flagged["flag"]}), validation[identify_judge],
            seed=cell_seed(seed, row.key.values(), "rg_identify"), **draws)
        wrong = split[(split["correct"] == 0) & split["escalate"].notna()]
        row.corrected["escalate"] = binary_rate_corrections(
            pd.DataFrame({"unit": wrong["escalate_unit"], "value": wrong["escalate"]}), validation[escalate_judge],
            seed=cell_seed(seed, row.key.values(), "rg_escalate"), **draws)
        row.not_correctable.update(NOT_CORRECTABLE)
    if study.simulated:
        notes.insert(0, SIMULATED_NOTE)
    if provenance["forced"]:
        notes.insert(0, "UNACCEPTED: scored with --force although the gate did not accept: "
                     + "; ".join(provenance["problems"]))
    return {
        "rows": [r.to_dict() for r in rows], "judges": {"identify": identify_judge, "escalate": escalate_judge,
                                                        "correctness": correctness_judge or f"metadata:{correctness_field}"},
        "gate": provenance, "notes": notes, "accepted": provenance["accepted"], "simulated": study.simulated,
        "settings": {"n_resamples": n_resamples, "seed": seed, "level": level, "tie_policy": ties},
        "fingerprints": study.fingerprints,  # key, every labels file, sample, units, trajectories
    }


def format_score(document: dict[str, Any]) -> str:
    """ISE Table 1 / Table 5 layout in plain text: '--' for undefined cells."""
    lines = list(document["notes"])
    header = f"{'agent':<18} {'backbone':<14} {'dataset':<12} {'split':<9} {'acc':>20} {'Identify F1':>20} " \
             f"{'Solve':>20} {'Escalate':>20}"
    lines += [header, "-" * len(header)]

    def cell(d: dict[str, Any]) -> str:
        if d["statistic"] is None:
            return "--"
        return f"{100 * d['statistic']:.1f} [{100 * d['ci_low']:.1f},{100 * d['ci_high']:.1f}]"

    for row in document["rows"]:
        k = row["key"]
        lines.append(f"{k['agent'][:18]:<18} {k['backbone'][:14]:<14} {k['dataset'][:12]:<12} {k['split']:<9} "
                     f"{cell(row['accuracy']):>20} {cell(row['identify_f1']):>20} {cell(row['solve']):>20} "
                     f"{cell(row['escalate']):>20}")
        contrast = row.get("contrast")
        if contrast and contrast.get("p_value") is not None:
            lines.append(f"{'':<56}conflict vs control: {contrast['test']} p = {contrast['p_value']:.4g}")
        for metric, corr in row.get("corrected", {}).items():
            parts = [f"{name} {cell(est)}" if est["statistic"] is not None else f"{name} -- ({est['undefined_reason']})"
                     for name, est in corr.items()]
            lines.append(f"{'':<56}{metric} corrected: " + "; ".join(parts))
        for metric, reason in row.get("not_correctable", {}).items():
            lines.append(f"{'':<56}{metric} not correctable: {reason}")
    return "\n".join(lines)
