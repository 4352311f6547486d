"""Family-bias audit: does a judge err differently on responses from different model families?

Follows the EHQ paper's classifier validation (sections 5.3 and 6.1, Table 4):

- per evaluated model, the score from judge labels and from human reference labels
  on the same units (the share of units whose label is in ``positive``), and the
  bias = judge - human, each with a cluster bootstrap interval;
- per family, the contrast (mean bias of the family's models minus the rest's)
  with a pooled-variance t interval over models, and the same contrast adjusted for
  each model's reference positive rate (``agreement.intervals.model_contrast``: a
  judge whose errors depend on the class makes every model's bias follow its
  positive rate, which a raw contrast would read as family bias), an exact
  permutation p over models (every assignment enumerated when there are
  at most ``exact_limit`` of them, else ``n_permutations`` seeded permutations with
  the plus-one correction), Holm-adjusted across families; partial correlations of
  bias with family given the human score, and with the human score given family;
- the pooled score difference (judge-scored minus human-scored rate over every
  audited unit) with a cluster bootstrap interval, and score agreement between
  judge-based and human-based model scores (Pearson r, Spearman, Kendall tau-b,
  largest rank shift, max/min score ratio under each), EHQ's score-impact outputs;
- a judge-family x response-family matrix of false-positive and false-negative
  rates, flagging the cells where judge and response share a family.

The contrast is observational: models are not randomised to families, and family
is confounded with everything else that differs between vendors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from agreement.bootstrap import DEFAULT_SEED
from agreement.estimate import Estimate, cluster_ratio_estimate
from agreement.intervals import ModelContrast, model_contrast
from samples import DEFAULT_LEVEL, ConfidenceInterval, InputError, check_level, held_interval

OBSERVATIONAL_NOTE = (
    "The family contrast is observational: models are not randomly assigned to families, so a contrast "
    "indicates family-associated judge non-invariance, not a causal family effect (as EHQ section 6.1 states)."
)
# Largest number of family assignments enumerated exactly (EHQ: exact for few models,
# else 20,000 deterministic permutations).
EXACT_LIMIT = 20_000
AUDIT_COLUMNS = ("unit", "cluster", "model", "family", "judge", "human")
REFERENCE_RATE = "model's reference positive rate"


@dataclass(frozen=True, kw_only=True)
class ModelBias:
    model: str
    family: str
    n: int
    judge_score: Estimate
    human_score: Estimate
    bias: Estimate
    unscored: int

    @property
    def statistic(self) -> float:
        return self.bias.statistic

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        return self.bias.confidence_interval(level, method)


@dataclass(frozen=True, kw_only=True)
class FamilyContrast:
    family: str
    n_models: int
    statistic: float
    """Mean bias of the family's models minus the mean bias of the other models."""
    p_value: float
    p_holm: float
    method: str
    n_assignments: int
    partial_r_family: float
    """Partial correlation of bias with the family indicator given the human score."""
    partial_r_human: float
    """Partial correlation of bias with the human score given the family indicator."""
    raw: ModelContrast | None = None
    """The contrast with its pooled-variance t interval over models."""
    adjusted: ModelContrast | None = None
    """The contrast at a common reference positive rate (ANCOVA on the models' human scores)."""
    level: float = DEFAULT_LEVEL
    """The level of ``raw``'s and ``adjusted``'s intervals."""
    undefined_reason: str | None = None

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The raw contrast's pooled-variance t interval over models (NaN when there is none); a policy's
        ``contrast = "adjusted"`` reads ``adjusted.confidence_interval()``."""
        if self.raw is not None:
            return self.raw.confidence_interval(level, method)
        held = ConfidenceInterval.undefined(level=self.level, method="pooled-variance t over models (df = models - 2)")
        return held_interval(held, level, method, what="the family contrast")


@dataclass(frozen=True, kw_only=True)
class RankPreservation:
    n: int
    pearson: float
    spearman: float
    kendall: float
    max_rank_shift: float
    ratio_judge: float
    ratio_human: float
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ErrorCell:
    judge: str
    judge_family: str
    response_family: str
    false_positive_rate: Estimate
    false_negative_rate: Estimate
    self_family: bool


@dataclass(frozen=True, kw_only=True)
class AuditResult:
    positive: tuple[str, ...]
    models: tuple[ModelBias, ...]
    contrasts: tuple[FamilyContrast, ...]
    ranks: RankPreservation
    error_matrix: tuple[ErrorCell, ...]
    unscored: int
    pooled_difference: Estimate
    """Judge-scored minus human-scored rate pooled over every audited unit of the judge."""
    note: str = OBSERVATIONAL_NOTE
    reference: str = "human reference"
    """What the ``human`` column holds (a study's audit: the human majority or the resolved reference)."""

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return x if isinstance(x, (int, float)) and math.isfinite(x) else None

        return {
            "positive": list(self.positive), "note": self.note, "unscored": self.unscored, "reference": self.reference,
            "models": [{"model": m.model, "family": m.family, "n": m.n, "unscored": m.unscored,
                        "judge_score": m.judge_score.to_dict(), "human_score": m.human_score.to_dict(),
                        "bias": m.bias.to_dict()} for m in self.models],
            "contrasts": [{"family": c.family, "n_models": c.n_models, "contrast": clean(c.statistic),
                           "p_value": clean(c.p_value), "p_holm": clean(c.p_holm), "method": c.method,
                           "n_assignments": c.n_assignments, "partial_r_family": clean(c.partial_r_family),
                           "partial_r_human": clean(c.partial_r_human), "undefined_reason": c.undefined_reason,
                           "raw": c.raw.to_dict() if c.raw else None,
                           "adjusted": c.adjusted.to_dict() if c.adjusted else None}
                          for c in self.contrasts],
            "pooled_difference": self.pooled_difference.to_dict(),
            "ranks": {"n": self.ranks.n, "pearson": clean(self.ranks.pearson), "spearman": clean(self.ranks.spearman), "kendall": clean(self.ranks.kendall),
                      "max_rank_shift": clean(self.ranks.max_rank_shift), "ratio_judge": clean(self.ranks.ratio_judge),
                      "ratio_human": clean(self.ranks.ratio_human), "reasons": self.ranks.reasons},
            "error_matrix": [{"judge": e.judge, "judge_family": e.judge_family, "response_family": e.response_family,
                              "self_family": e.self_family, "false_positive_rate": e.false_positive_rate.to_dict(),
                              "false_negative_rate": e.false_negative_rate.to_dict()} for e in self.error_matrix],
        }


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (NaN stays NaN and is not counted)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out


def permutation_contrast(bias: np.ndarray, in_family: np.ndarray, *, n_permutations: int, seed: int,
                         exact_limit: int = EXACT_LIMIT) -> tuple[float, float, str, int]:
    """Two-sided permutation p of (mean bias in family - mean bias elsewhere) over models.

    Exact (the observed assignment counted among all C(M, k)) when C(M, k) <=
    ``exact_limit``; otherwise ``n_permutations`` seeded random assignments with the
    plus-one correction (1 + #{|T*| >= |T|}) / (1 + R).
    """
    b = np.asarray(bias, dtype=float)
    mask = np.asarray(in_family, dtype=bool)
    m, k = b.size, int(mask.sum())
    total = b.sum()

    def contrast(sums: np.ndarray) -> np.ndarray:
        return sums / k - (total - sums) / (m - k)

    observed = float(contrast(np.array(b[mask].sum())))
    # Guard float noise so assignments equal to the observed one count as "as extreme".
    tol = 1e-12 * max(1.0, abs(observed))
    n_assign = math.comb(m, k)
    if n_assign <= exact_limit:
        combos = np.array(list(combinations(range(m), k)), dtype=np.intp)
        t = contrast(b[combos].sum(axis=1))
        p = float(np.mean(np.abs(t) >= abs(observed) - tol))
        return observed, p, f"exact enumeration of all {n_assign} assignments", n_assign
    rng = np.random.default_rng(seed)
    chosen = np.argsort(rng.random((n_permutations, m)), axis=1)[:, :k]
    t = contrast(b[chosen].sum(axis=1))
    hits = int(np.sum(np.abs(t) >= abs(observed) - tol))
    return observed, (1 + hits) / (1 + n_permutations), f"{n_permutations} seeded permutations, plus-one", n_permutations


def partial_correlation(y: np.ndarray, x: np.ndarray, z: np.ndarray) -> float:
    """Correlation of y and x after regressing each on [1, z]; NaN when a residual is constant."""
    design = np.column_stack([np.ones_like(z, dtype=float), z])
    ry = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    sy, sx = np.sqrt((ry ** 2).sum()), np.sqrt((rx ** 2).sum())
    if sy < 1e-12 or sx < 1e-12:
        return math.nan
    return float((ry * rx).sum() / (sy * sx))


def rank_preservation(judge_scores: np.ndarray, human_scores: np.ndarray) -> RankPreservation:
    j = np.asarray(judge_scores, dtype=float)
    h = np.asarray(human_scores, dtype=float)
    ok = np.isfinite(j) & np.isfinite(h)
    j, h = j[ok], h[ok]
    reasons: dict[str, str] = {}
    n = int(j.size)
    if n < 3:
        reason = f"{n} model(s) with both scores: rank statistics need at least 3"
        return RankPreservation(n=n, pearson=math.nan, spearman=math.nan, kendall=math.nan, max_rank_shift=math.nan,
                                ratio_judge=math.nan, ratio_human=math.nan,
                                reasons={k: reason for k in ("pearson", "spearman", "kendall", "max_rank_shift",
                                                             "ratio")})
    if np.ptp(j) == 0 or np.ptp(h) == 0:
        reasons["pearson"] = reasons["spearman"] = reasons["kendall"] = (
            "all models have the same score under one of the label sources")
        r = rho = tau = math.nan
    else:
        r = float(stats.pearsonr(j, h).statistic)
        rho = float(stats.spearmanr(j, h).statistic)
        tau = float(stats.kendalltau(j, h).statistic)
    shift = float(np.max(np.abs(stats.rankdata(-j) - stats.rankdata(-h))))

    def ratio(x: np.ndarray, name: str) -> float:
        if x.min() <= 0:
            reasons[f"ratio_{name}"] = f"the lowest {name}-based score is {x.min():.3g}: max/min ratio undefined"
            return math.nan
        return float(x.max() / x.min())

    return RankPreservation(n=n, pearson=r, spearman=rho, kendall=tau, max_rank_shift=shift, ratio_judge=ratio(j, "judge"),
                            ratio_human=ratio(h, "human"), reasons=reasons)


def _check_frame(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in AUDIT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"audit table is missing columns {missing}; expected {list(AUDIT_COLUMNS)} (+ optional weight)")
    return frame


def audit(frame: pd.DataFrame, *, positive: Sequence[str], n_resamples: int = 10_000,
          n_permutations: int = 20_000, seed: int = DEFAULT_SEED, level: float = 0.95,
          exact_limit: int = EXACT_LIMIT, judge: str | None = None,
          judge_families: dict[str, str] | None = None) -> AuditResult:
    """Audit one judge (or several, for the error matrix) against the human reference.

    ``frame`` has one row per (unit, judge): unit, cluster (trajectory), model,
    family (of the evaluated model), judge (label; None/NaN = unscored), human
    (reference label; rows without one are not used), optional ``judge_name``,
    ``weight`` (1/inclusion probability) and ``stratum`` (the sampling stratum:
    a stratified sample is resampled within its strata). ``positive``: the labels the score counts.
    Per-model bias and family contrasts use the rows of ``judge`` (needed when
    ``judge_name`` holds several judges); the error matrix uses every judge's rows,
    with ``judge_families`` mapping judge_name -> family.
    """
    frame = _check_frame(frame)
    level = check_level(level)
    if not positive:
        raise ValueError("positive=(): name at least one label the score counts (e.g. ['ABSTAIN', 'HEDGE'])")
    pos = set(positive)
    data = frame[frame["human"].notna()].copy()
    data["judge_scored"] = data["judge"].notna()
    data["j"] = data["judge"].isin(pos).astype(float)
    data["h"] = data["human"].isin(pos).astype(float)
    data["w"] = data["weight"].astype(float) if "weight" in data.columns else 1.0
    data["cluster"] = pd.factorize(data["cluster"], sort=True)[0]  # integer codes: each bootstrap's np.unique is cheap
    if "judge_name" not in data.columns:
        data["judge_name"] = judge or "judge"
    names = sorted(data["judge_name"].unique())
    if judge is None:
        if len(names) > 1:
            raise ValueError(f"judge=None but the table holds judges {names}: name the one to audit")
        judge = names[0] if names else "judge"
    primary = data[data["judge_name"] == judge]

    models: list[ModelBias] = []
    for (model, family), group in primary.groupby(["model", "family"], sort=True):
        scored = group[group["judge_scored"]]
        seed_m = int(np.random.SeedSequence([seed, len(models)]).generate_state(1)[0])
        args = dict(clusters=scored["cluster"].to_numpy(), weights=scored["w"].to_numpy(float),
                    n_resamples=n_resamples, seed=seed_m, level=level, strata=_strata(scored))
        ones = np.ones(len(scored))
        reason = f"model {model!r} has no unit with both a judge and a human label"
        models.append(ModelBias(
            model=str(model), family=str(family), n=len(scored), unscored=int((~group["judge_scored"]).sum()),
            judge_score=cluster_ratio_estimate(scored["j"].to_numpy(float), ones, empty_reason=reason, **args),
            human_score=cluster_ratio_estimate(scored["h"].to_numpy(float), ones, empty_reason=reason, **args),
            bias=cluster_ratio_estimate((scored["j"] - scored["h"]).to_numpy(float), ones, empty_reason=reason,
                                        difference=True, **args),
        ))

    defined = [m for m in models if m.bias.defined]
    bias = np.array([m.bias.statistic for m in defined])
    human = np.array([m.human_score.statistic for m in defined])
    families = np.array([m.family for m in defined])
    contrasts: list[FamilyContrast] = []
    for index, family in enumerate(sorted(set(families))):
        mask = families == family
        k = int(mask.sum())
        if k == 0 or k == families.size:
            contrasts.append(FamilyContrast(
                family=str(family), n_models=k, statistic=math.nan, p_value=math.nan, p_holm=math.nan, method="",
                n_assignments=0, partial_r_family=math.nan, partial_r_human=math.nan, level=level,
                undefined_reason="every audited model is in this family: no other models to contrast with"))
            continue
        fam_seed = int(np.random.SeedSequence([seed, 7, index]).generate_state(1)[0])
        stat, p, method, n_assign = permutation_contrast(bias, mask, n_permutations=n_permutations, seed=fam_seed,
                                                         exact_limit=exact_limit)
        x = mask.astype(float)
        enough = families.size >= 4
        contrasts.append(FamilyContrast(
            family=str(family), n_models=k, statistic=stat, p_value=p, p_holm=math.nan, method=method,
            n_assignments=n_assign, level=level, raw=model_contrast(bias, mask, level),
            adjusted=model_contrast(bias, mask, level, covariate=human, covariate_name=REFERENCE_RATE),
            partial_r_family=partial_correlation(bias, x, human) if enough else math.nan,
            partial_r_human=partial_correlation(bias, human, x) if enough else math.nan))
    adjusted = holm([c.p_value for c in contrasts])
    contrasts = [FamilyContrast(**{**c.__dict__, "p_holm": float(a)}) for c, a in zip(contrasts, adjusted)]

    ranks = rank_preservation(np.array([m.judge_score.statistic for m in models]),
                              np.array([m.human_score.statistic for m in models]))
    matrix = error_matrix(data, judge_families=judge_families or {}, n_resamples=n_resamples, seed=seed, level=level)
    scored = primary[primary["judge_scored"]]
    pooled = cluster_ratio_estimate(
        (scored["j"] - scored["h"]).to_numpy(float), np.ones(len(scored)), clusters=scored["cluster"].to_numpy(),
        difference=True,
        weights=scored["w"].to_numpy(float), n_resamples=n_resamples, level=level, strata=_strata(scored),
        seed=int(np.random.SeedSequence([seed, 13]).generate_state(1)[0]),
        empty_reason=f"judge {judge!r} has no unit with both a judge and a human label")
    return AuditResult(positive=tuple(positive), models=tuple(models), contrasts=tuple(contrasts), ranks=ranks,
                       error_matrix=tuple(matrix), unscored=int((~primary["judge_scored"]).sum()),
                       pooled_difference=pooled)


def _strata(rows: pd.DataFrame) -> np.ndarray | None:
    """The sampling strata of the rows when the sample was stratified (an optional ``stratum`` column)."""
    if "stratum" not in rows.columns or rows["stratum"].nunique() < 2:
        return None
    return rows["stratum"].astype(str).to_numpy()


def error_matrix(data: pd.DataFrame, *, judge_families: dict[str, str], n_resamples: int, seed: int,
                 level: float) -> list[ErrorCell]:
    """False positive / negative rates of each judge (with its family) on each response family."""
    scored = data[data["judge_scored"]].copy()
    names = scored["judge_name"].unique()
    scored["judge_family"] = scored["judge_name"].map({n: judge_families.get(n, "unknown") for n in names})
    cells: list[ErrorCell] = []
    keys = ["judge_name", "judge_family", "family"]
    for index, ((judge, jf, rf), group) in enumerate(scored.groupby(keys, sort=True)):
        j, h = group["j"].to_numpy(float), group["h"].to_numpy(float)
        args = dict(clusters=group["cluster"].to_numpy(), weights=group["w"].to_numpy(float),
                    n_resamples=n_resamples, level=level, strata=_strata(group))
        s = int(np.random.SeedSequence([seed, 11, index]).generate_state(1)[0])
        cells.append(ErrorCell(
            judge=str(judge), judge_family=str(jf), response_family=str(rf), self_family=(jf == rf and jf != "unknown"),
            false_positive_rate=cluster_ratio_estimate(j * (1 - h), 1 - h, seed=s, **args,
                                                       empty_reason="no human-negative unit in this cell"),
            false_negative_rate=cluster_ratio_estimate((1 - j) * h, h, seed=s + 1, **args,
                                                       empty_reason="no human-positive unit in this cell"),
        ))
    return cells


def read_audit_table(path: Any) -> pd.DataFrame:
    """An audit table from .csv or .jsonl; missing columns are an InputError naming them."""
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    if path.suffix.lower() == ".csv":
        frame = pd.read_csv(path, dtype=str, keep_default_na=False).replace("", None)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        from agreement.study_io import read_rows

        frame = pd.DataFrame(read_rows(path, AUDIT_COLUMNS)).drop(columns="source_line")
    else:
        raise InputError(f"{path}: expected a .csv or .jsonl audit table")
    missing = [c for c in AUDIT_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; expected {list(AUDIT_COLUMNS)} (+ judge_name, weight)")
    if "weight" in frame.columns:
        frame["weight"] = pd.to_numeric(frame["weight"], errors="raise")
    return frame


def format_audit(result: AuditResult, *, simulated: bool = False) -> str:
    from agreement.study_io import SIMULATED_NOTE

    lines = [SIMULATED_NOTE] if simulated else []
    lines.append(f"score = share of labels in {list(result.positive)}; unscored judge rows: {result.unscored}")
    lines.append(f"{'model':<36} {'family':<12} {'n':>5} {'unsc':>5} {'judge':>22} {'human':>22} {'bias':>24}")
    for m in result.models:
        lines.append(f"{m.model[:36]:<36} {m.family[:12]:<12} {m.n:>5} {m.unscored:>5} {m.judge_score.format():>22} "
                     f"{m.human_score.format():>22} {m.bias.format():>24}")
    lines.append("\nfamily contrasts (mean bias of the family minus the rest):")
    for c in result.contrasts:
        if c.undefined_reason:
            lines.append(f"  {c.family}: -- ({c.undefined_reason})")
            continue
        partial = (f"partial r(bias, family | human) = {c.partial_r_family:.3f}, r(bias, human | family) = "
                   f"{c.partial_r_human:.3f}" if math.isfinite(c.partial_r_family)
                   else "partial correlations undefined (need >= 4 models and non-constant residuals)")
        lines.append(f"  {c.family} ({c.n_models} models): {c.statistic:+.3f} {_contrast_interval(c.raw)}, adjusted "
                     f"for the {REFERENCE_RATE} {_contrast_interval(c.adjusted, value=True)}; p = {c.p_value:.4g}, "
                     f"Holm p = {c.p_holm:.4g} [{c.method}]; {partial}")
    lines.append(f"\npooled score difference (judge - human, all units): {result.pooled_difference.format()}")
    r = result.ranks
    lines.append(f"rank preservation over {r.n} models: Pearson {r.pearson:.3f}, Spearman {r.spearman:.3f}, "
                 f"Kendall {r.kendall:.3f}, max rank shift {r.max_rank_shift:g}, max/min ratio judge {r.ratio_judge:.3g} vs human "
                 f"{r.ratio_human:.3g}" + (f" ({'; '.join(sorted(set(r.reasons.values())))})" if r.reasons else ""))
    if result.error_matrix:
        lines.append(f"\njudge (family) x response family (false positive / false negative rate vs the "
                     f"{result.reference}):")
        for e in result.error_matrix:
            flag = "  <- self-family" if e.self_family else ""
            lines.append(f"  {e.judge} ({e.judge_family}) on {e.response_family}: FP {e.false_positive_rate.format()}, "
                         f"FN {e.false_negative_rate.format()}{flag}")
    lines.append(f"\n{result.note}")
    return "\n".join(lines)


def bias_summary(frame: pd.DataFrame, *, positive: Sequence[str], judge: str, level: float) -> dict[str, Any]:
    """Per-model bias (point estimates) and each family's raw and adjusted contrast, without resampling.

    What a second reference changes, shown beside the audit (the resolved reference's
    audit lists the independent majority's numbers this way)."""
    pos = set(positive)
    rows = frame[(frame["judge_name"] == judge) if "judge_name" in frame else slice(None)]
    rows = rows[rows["human"].notna() & rows["judge"].notna()]
    w = rows["weight"].astype(float) if "weight" in rows else pd.Series(1.0, index=rows.index)
    rows = rows.assign(d=(rows["judge"].isin(pos).astype(float) - rows["human"].isin(pos).astype(float)) * w,
                       h=rows["human"].isin(pos).astype(float) * w, w=w)
    per = rows.groupby(["model", "family"], sort=True)[["d", "h", "w"]].sum().reset_index()
    per = per.assign(n=rows.groupby(["model", "family"], sort=True).size().to_numpy())
    bias, human = (per["d"] / per["w"]).to_numpy(), (per["h"] / per["w"]).to_numpy()
    families = per["family"].astype(str).to_numpy()
    return {
        "models": [{"model": str(m), "family": str(f), "n": int(n), "bias": float(b), "human_score": float(h)}
                   for m, f, n, b, h in zip(per["model"], families, per["n"], bias, human)],
        "contrasts": [{"family": f, "raw": model_contrast(bias, families == f, level).to_dict(),
                       "adjusted": model_contrast(bias, families == f, level, covariate=human,
                                                  covariate_name=REFERENCE_RATE).to_dict()}
                      for f in sorted(set(families))],
    }


def format_versus_majority(summary: dict[str, Any]) -> str:
    """The independent majority's per-model bias and family contrasts, beside a resolved-reference audit."""
    def show(x: dict[str, Any]) -> str:
        if x["contrast"] is None:
            return f"-- ({x['undefined_reason']})"
        interval = f" [{x['ci_low']:+.3f}, {x['ci_high']:+.3f}]" if x["ci_low"] is not None \
            else f" ({x['undefined_reason']})"
        return f"{x['contrast']:+.3f}{interval}"

    lines = ["\nthe same judge vs the independent human majority (adjudications not applied; point estimates):"]
    lines += [f"  {m['model'][:36]:<36} {m['family'][:12]:<12} n {m['n']:>5}  bias {m['bias']:+.3f}"
              for m in summary["models"]]
    lines += [f"  {c['family']}: raw {show(c['raw'])}, adjusted {show(c['adjusted'])}" for c in summary["contrasts"]]
    return "\n".join(lines)


def _contrast_interval(contrast: ModelContrast | None, *, value: bool = False) -> str:
    if contrast is None or contrast.undefined_reason:
        return f"-- ({contrast.undefined_reason if contrast else 'not computed'})"
    head = f"{contrast.statistic:+.3f} " if value else ""
    return f"{head}[{contrast.ci_low:+.3f}, {contrast.ci_high:+.3f}]"
