"""Self-preference in pairwise judging: does a judge favour answers from its own model family?

Each unit is a comparison of two answers (model A's and model B's); a rater says
which is better or calls a tie. For a response family F and the comparisons where
exactly one of the two answers comes from F, a rater's *F-share* on a comparison is
1 when it prefers the F answer, 0 when it prefers the other and 1/2 for a tie. The
judge's preference for F is its mean F-share over those comparisons; the humans'
is, on the same comparisons, the mean over comparisons of the human raters' mean
F-share. Their difference (judge minus humans) is the judge's bias towards F:
positive means the judge prefers F's answers more often than the human experts do
on the same pairs. Self-preference is the bias towards the judge's own family.

Intervals come from a cluster bootstrap over questions (both turns of a question
and every pair built on it move together), vectorised as multinomial cluster
weights: ratio = (W @ per-cluster differences) / (W @ per-cluster counts).

A table of judges x families is many tests at once: at 95% about one cell in twenty
excludes 0 by chance alone. Each cell's two-sided bootstrap p-value (the percentile
interval's dual) is Holm-adjusted across every defined cell of the table. Holm, not
BH: a flagged cell is a claim about one named judge, so the guarantee wanted is that
no such claim is false (family-wise), and Holm gives it under any dependence (the
cells share comparisons and human labels); BH's false-discovery rate suits screening.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from agreement.audit import holm
from agreement.bootstrap import DEFAULT_SEED
from samples import ConfidenceInterval, InputError, Resampling, held_interval

INTERVAL_METHOD = "cluster bootstrap percentile over questions"


@dataclass(frozen=True, kw_only=True)
class FamilyBias:
    """A judge's preference for one response family against the humans' on the same comparisons."""

    judge: str
    judge_family: str
    response_family: str
    statistic: float
    n: int
    judge_share: float
    human_share: float
    ci_low: float
    ci_high: float
    level: float
    self_family: bool
    p_value: float = math.nan
    p_holm: float = math.nan
    undefined_reason: str | None = None

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The interval the bias was computed with (it keeps bounds, not resamples)."""
        held = ConfidenceInterval(low=self.ci_low, high=self.ci_high, level=self.level, method=INTERVAL_METHOD)
        return held_interval(held, level, method, what="the family bias")

    def to_dict(self) -> dict:
        return asdict(self)


def _undefined(judge: str, judge_family: str, family: str, level: float, reason: str) -> FamilyBias:
    nan = math.nan
    return FamilyBias(judge=judge, judge_family=judge_family, response_family=family, statistic=nan, n=0,
                      judge_share=nan, human_share=nan, ci_low=nan, ci_high=nan, level=level,
                      self_family=judge_family == family, undefined_reason=reason)


def preference_bias(table: pd.DataFrame, *, first: str, second: str, first_label: str, second_label: str,
                    tie_label: str, model_families: Mapping[str, str], judge_families: Mapping[str, str],
                    n_resamples: int = 2000, seed: int = DEFAULT_SEED, level: float = 0.95) -> list[FamilyBias]:
    """Every judge's bias towards every response family (long labels table of ``agreement.study_io``).

    ``first``/``second`` name the table columns holding the two compared models;
    ``*_label`` the labels meaning "the first is better", "the second is better", "tie".
    """
    Resampling(n_resamples=n_resamples, seed=seed, level=level)  # raises on a bad value
    for column in (first, second):
        if column not in table.columns:
            raise InputError(f"preference: no column {column!r} in the labels table (a stratum of the units)")
    unknown = sorted((set(table[first]) | set(table[second])) - set(model_families))
    if unknown:
        raise InputError(f"preference: model(s) {unknown} have no family; add them to model_families")
    share = {first_label: 1.0, second_label: 0.0, tie_label: 0.5}
    labels = table["label"]
    bad = sorted({str(v) for v in labels.dropna() if v not in share})
    if bad:
        raise InputError(f"preference: label(s) {bad} are not {first_label!r}, {second_label!r} or {tie_label!r}")
    frame = table.assign(first_share=labels.map(share).astype(float),
                         fam_a=table[first].map(model_families), fam_b=table[second].map(model_families))
    units = frame.drop_duplicates("unit").set_index("unit")[["cluster", "fam_a", "fam_b"]]
    human = frame[(frame["source"] == "human")].groupby("unit")["first_share"].mean()
    results = []
    rng_seed = np.random.SeedSequence(seed)
    for judge in sorted(set(frame.loc[frame["source"] == "judge", "rater"])):
        judge_family = judge_families.get(judge)
        if judge_family is None:
            raise InputError(f"preference: judge {judge!r} has no family; add it to judge_families")
        mine = frame[(frame["source"] == "judge") & (frame["rater"] == judge)].set_index("unit")["first_share"]
        both = units.join(pd.DataFrame({"judge": mine, "human": human}), how="inner").dropna(subset=["judge", "human"])
        for family in sorted(set(model_families.values())):
            in_a, in_b = (both["fam_a"] == family).to_numpy(), (both["fam_b"] == family).to_numpy()
            one = in_a ^ in_b
            if not one.any():
                results.append(_undefined(judge, judge_family, family, level,
                                          f"no comparison with exactly one {family} answer"))
                continue
            sign = np.where(in_a[one], 1.0, -1.0)   # F-share = first-share when F is first, else 1 - first-share
            offset = np.where(in_a[one], 0.0, 1.0)
            judge_share = offset + sign * both["judge"].to_numpy()[one]
            human_share = offset + sign * both["human"].to_numpy()[one]
            diff = judge_share - human_share
            clusters, index = np.unique(both["cluster"].to_numpy()[one], return_inverse=True)
            sums, counts = np.bincount(index, weights=diff), np.bincount(index).astype(float)
            rng = np.random.default_rng(rng_seed.spawn(1)[0])
            weights = rng.multinomial(len(clusters), np.full(len(clusters), 1 / len(clusters)), size=n_resamples)
            boot = (weights @ sums) / (weights @ counts)
            low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
            tail = min(np.count_nonzero(boot <= 0), np.count_nonzero(boot >= 0))
            results.append(FamilyBias(judge=judge, judge_family=judge_family, response_family=family,
                                      statistic=float(diff.mean()), n=int(one.sum()),
                                      judge_share=float(judge_share.mean()), human_share=float(human_share.mean()),
                                      ci_low=float(low), ci_high=float(high), level=level,
                                      self_family=judge_family == family,
                                      p_value=min(1.0, 2 * (1 + tail) / (n_resamples + 1))
                                      if len(clusters) > 1 else math.nan,
                                      undefined_reason=None if len(clusters) > 1 else
                                      "one question only: no interval"))
    adjusted = holm([r.p_value for r in results])
    return [replace(r, p_holm=float(a)) for r, a in zip(results, adjusted)]


def self_preference(results: Sequence[FamilyBias]) -> list[FamilyBias]:
    """Each judge's bias towards its own family (where it judged such comparisons)."""
    return [r for r in results if r.self_family]


def preference_study(study: Any, *, first: str, second: str, first_label: str, second_label: str, tie_label: str,
                     model_families: Mapping[str, str], judge_families: Mapping[str, str], n_resamples: int,
                     seed: int, level: float) -> dict[str, Any]:
    """The preference audit of a study folder (``agreement.study_io.Study``) as its document body."""
    from agreement.study_io import labels_table

    results = preference_bias(labels_table(study), first=first, second=second, first_label=first_label,
                              second_label=second_label, tie_label=tie_label, model_families=model_families,
                              judge_families=judge_families, n_resamples=n_resamples, seed=seed, level=level)
    return {"cells": [r.to_dict() for r in results], "level": level, "n_resamples": n_resamples,
            "fingerprints": study.fingerprints, "simulated": study.simulated,
            "note": "bias = judge's preference for the response family minus the human experts' on the same "
                    "comparisons (cluster bootstrap over questions); self-family cells are self-preference."}



def _excludes_zero(cell: Any) -> bool:
    return cell.ci_low is not None and cell.ci_high is not None and (cell.ci_low > 0 or cell.ci_high < 0)


def _holds(cell: Any, level: float) -> bool:
    return _excludes_zero(cell) and _finite(cell.p_holm) and cell.p_holm < 1 - level


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def cell_flag(cell: Any, level: float) -> str:
    """The table's flag for a cell: whether its interval excludes 0 and whether that survives Holm."""
    if not _excludes_zero(cell):
        return ""
    if not _finite(cell.p_holm):
        return "interval excludes 0 (no adjusted p)"
    verdict = "holds" if _holds(cell, level) else "does not hold"
    return f"interval excludes 0; {verdict} after Holm (p {cell.p_holm:.3g})"


def multiplicity_note(cells: Sequence[Any], level: float) -> str:
    """How many cells would exclude 0 by chance, and the adjustment used (the report's table note)."""
    tested = [c for c in cells if _finite(c.p_value)]
    return (f"{len(tested)} cells at {level:.0%}: about {len(tested) * (1 - level):.1f} expected to exclude 0 by "
            f"chance alone. Flagged cells are tested again with p-values Holm-adjusted across the {len(tested)} "
            "(family-wise: a flag is a claim about one named judge, and Holm needs no independence between cells "
            "that share comparisons and human labels).")


def summary_line(cells: Sequence[Any], level: float) -> str:
    """The auditor's answer in one line: the self-preference verdict, what was measured, the flagged cells and
    whether they survive Holm's adjustment (the audit command, `accord run` and the report's first screen)."""
    def signed(c: Any) -> str:
        return f"{c.statistic:+.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]"

    own = [c for c in cells if c.self_family]
    measured = [c for c in own if _finite(c.statistic) and c.ci_low is not None and c.ci_high is not None]
    tested = [c for c in cells if _finite(c.p_value)]
    flagged = [c for c in tested if _excludes_zero(c)]
    if not measured:
        return (f"self-preference: not measurable (no judge's family is among the answers' families in {len(cells)} "
                "judge x family cells)")
    shown = [c for c in measured if c.ci_low > 0 and _holds(c, level)]
    verdict = ("shown for " + ", ".join(f"{c.judge} (Holm p {c.p_holm:.3g})" for c in shown)) if shown else "none shown"
    line = (f"self-preference: {verdict}. Measured: each judge's preference for its own family's answers minus the "
            f"human experts' on the same pairs ({level:.0%} cluster-bootstrap CI): "
            + ", ".join(f"{c.judge} {signed(c)}" for c in measured)
            + f". {len(flagged)} of {len(tested)} judge x family cells exclude 0 (about "
              f"{len(tested) * (1 - level):.1f} expected by chance at {level:.0%})")
    if flagged:
        held = [c for c in flagged if _holds(c, level)]
        line += (": " + ", ".join(f"{c.judge}->{c.response_family} {signed(c)} (Holm p {c.p_holm:.3g})"
                                  for c in flagged)
                 + f"; {len(held)} of them hold after Holm's adjustment across the {len(tested)}")
    return line + "."
