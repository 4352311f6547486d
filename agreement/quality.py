"""Annotator quality: which of the people behind the human reference to trust, and why.

From the independent human labels of a labels table (``agreement.study_io.labels_table``;
adjudications and judges never count), per annotator:

- leave-one-out agreement: the annotator against the majority of the *other*
  annotators (the tie policy decides tied units), Cohen's kappa and Gwet's AC1 with
  cluster-bootstrap intervals. Every annotator's comparison is a column pair of one
  table, so all of them share one resample draw (``agreement.panels.compare_pairs``);
- competence from two latent-class models fitted by crowd-kit (an optional extra):
  Dawid-Skene (the probability of giving the true label, the prior-weighted diagonal
  of the annotator's confusion matrix) and MACE (the posterior probability that the
  annotator knows rather than spams). Fitted parameters carry no sampling interval;
- the median seconds per unit (distribution-free order-statistic interval), the share
  of labels flagged unsure (Clopper-Pearson interval) and the units labelled;
- accuracy on the study's gold units (Wilson score interval), when the caller passes it:
  gold answers live in ``annotate.gold`` (sealed), which this package never imports, so
  ``apps`` computes the figures and hands them in as ``Estimate``s.

Whether an annotator is flagged is the policy's rule (``FlagRule``, a policy's
``[quality]`` table): no threshold lives here. A gate criterion may leave flagged
annotators out of the human ceiling (``human_ceiling`` with ``exclude_flagged = true``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agreement.bootstrap import DEFAULT_SEED
from agreement.estimate import Estimate
from agreement.results import AgreementResult
from samples import InputError, Resampling

LEAVE_ONE_OUT = ("cohen_kappa", "gwet_ac1")
UNMEASURABLE = ("flag", "keep")
INSTALL_HINT = "crowd-kit is not installed: pip install 'accord[quality]'"
NO_INTERVAL = "a fitted model parameter: no sampling interval"


@dataclass(frozen=True, kw_only=True)
class FlagRule:
    """When an annotator is flagged (a policy's ``[quality]`` table).

    Flagged when the upper bound of the annotator's leave-one-out ``coefficient``
    interval lies below ``min_upper_bound``: the evidence shows they agree with the
    others less than the policy accepts. An annotator whose coefficient cannot be
    measured is flagged or kept as ``unmeasurable`` says.
    """

    coefficient: str
    min_upper_bound: float
    unmeasurable: str

    def __post_init__(self) -> None:
        if self.coefficient not in LEAVE_ONE_OUT:
            raise InputError(f"coefficient = {self.coefficient!r}: expected one of {list(LEAVE_ONE_OUT)}")
        bound = self.min_upper_bound
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not -1 <= bound <= 1:
            raise InputError(f"min_upper_bound = {bound!r}: expected a number in [-1, 1]")
        if self.unmeasurable not in UNMEASURABLE:
            raise InputError(f"unmeasurable = {self.unmeasurable!r}: expected 'flag' or 'keep' (what to do with an "
                             f"annotator whose leave-one-out agreement cannot be measured)")

    @classmethod
    def from_table(cls, table: Mapping[str, Any], where: str) -> FlagRule:
        """The rule from a policy's ``[quality]`` table; problems name ``where``."""
        known = {"coefficient", "min_upper_bound", "unmeasurable"}
        if not isinstance(table, Mapping):
            raise InputError(f"{where}: expected a table with {sorted(known)}")
        missing, extra = sorted(known - set(table)), sorted(set(table) - known)
        if missing or extra:
            raise InputError(f"{where}: " + (f"missing {missing}" if missing else f"unknown parameter(s) {extra}")
                             + f"; expected {sorted(known)}")
        try:
            return cls(coefficient=table["coefficient"], min_upper_bound=table["min_upper_bound"],
                       unmeasurable=table["unmeasurable"])
        except InputError as error:
            raise InputError(f"{where}: {error}") from None

    def reasons(self, quality: AnnotatorQuality, level: float) -> tuple[str, ...]:
        """Why ``quality``'s annotator is flagged (empty: not flagged)."""
        result = quality.leave_one_out.get(self.coefficient)
        name = f"leave-one-out {self.coefficient}"
        if result is None or result.undefined_reason or not math.isfinite(result.statistic):
            why = result.undefined_reason if result is not None else quality.undefined_reason
            return (f"{name} cannot be measured ({why})",) if self.unmeasurable == "flag" else ()
        high = result.confidence_interval(level).high
        if not math.isfinite(high):
            return (f"{name} has no interval",) if self.unmeasurable == "flag" else ()
        if high < self.min_upper_bound:
            return (f"{name} {result.statistic:.3f}, upper {level:.0%} bound {high:.3f} < {self.min_upper_bound}",)
        return ()

    def to_dict(self) -> dict[str, Any]:
        return {"coefficient": self.coefficient, "min_upper_bound": self.min_upper_bound,
                "unmeasurable": self.unmeasurable}


@dataclass(frozen=True, kw_only=True)
class AnnotatorQuality:
    """One annotator's quality figures on one set of units."""

    annotator: str
    n_units: int
    """Units the annotator labelled independently."""
    n_compared: int
    """Units with both the annotator's label and a majority of the others (the leave-one-out units)."""
    leave_one_out: Mapping[str, AgreementResult]
    """Coefficient -> the annotator against the others' majority (percent agreement, kappa, AC1)."""
    dawid_skene: Estimate
    mace: Estimate
    seconds: Estimate
    """Median seconds per unit over the labels with a recorded time."""
    unsure: Estimate
    """Share of the annotator's labels flagged unsure."""
    gold: Estimate | None = None
    """Accuracy on the gold units of this kind (``details['correct']``); None: the study has none of this kind."""
    flag_reasons: tuple[str, ...] = ()
    undefined_reason: str | None = None

    @property
    def n(self) -> int:
        return self.n_units

    @property
    def flagged(self) -> bool:
        return bool(self.flag_reasons)


@dataclass(frozen=True, kw_only=True)
class QualitySection:
    """Every annotator's quality on the units of one kind (or a pooled table)."""

    kind: str
    categories: tuple[Any, ...]
    annotators: tuple[AnnotatorQuality, ...]
    n_units: int
    level: float
    tie_policy: str
    rule: FlagRule | None = None
    notes: tuple[str, ...] = ()

    def flagged(self) -> dict[str, str]:
        """Flagged annotator -> why."""
        return {a.annotator: "; ".join(a.flag_reasons) for a in self.annotators if a.flagged}


def _others_name(annotator: str) -> str:
    return f"majority of the others than {annotator}"


def leave_one_out(data: Any, humans: Sequence[str], *, tie_policy: str, positive: Any, settings: Any
                  ) -> dict[str, tuple[int, Mapping[str, AgreementResult] | None]]:
    """Annotator -> (units compared, coefficients vs the others' majority; None when no unit is shared)."""
    from agreement.majority import majority_vote
    from agreement.panels import compare_pairs
    from agreement.table import RatingData

    codes = data.codes[:, [data.rater_index(h) for h in humans]]
    columns, names = [codes[:, i] for i in range(len(humans))], list(humans)
    for i, annotator in enumerate(humans):
        others = [j for j in range(len(humans)) if j != i]
        vote = majority_vote(codes[:, others], units=data.units, categories=data.categories,
                             voters=[humans[j] for j in others], tie_policy=tie_policy, positive=positive)
        columns.append(vote.codes)
        names.append(_others_name(annotator))
    table = RatingData(units=data.units, raters=tuple(names), categories=data.categories,
                       codes=np.column_stack(columns), clusters=data.clusters, unit_weights=None, source=data.source,
                       strata=data.strata)
    panels = compare_pairs(table, [(h, _others_name(h)) for h in humans], settings=settings)
    out: dict[str, tuple[int, Mapping[str, AgreementResult] | None]] = {}
    for h in humans:
        panel = panels.get((h, _others_name(h)))
        out[h] = (panel.n_units, panel.results) if panel is not None else (0, None)
    return out


def competences(frame: pd.DataFrame, *, seed: int) -> dict[str, dict[str, Estimate]]:
    """Dawid-Skene and MACE competence per annotator from crowd-kit, on (task, worker, label) rows.

    Rows are sorted by (task, worker) first, so the fit does not depend on file order.
    Dawid-Skene: sum over true labels k of prior(k) * P(annotator says k | truth k).
    MACE: the posterior probability of knowing (``spamming_[:, 1]``; crowd-kit's defaults,
    ``random_state = seed``).
    """
    workers = sorted(set(frame["worker"]))
    counts = frame.groupby("worker").size()

    def undefined(reason: str) -> dict[str, dict[str, Estimate]]:
        return {w: {m: Estimate(statistic=math.nan, n=int(counts[w]), method=m, undefined_reason=reason)
                    for m in ("dawid_skene", "mace")} for w in workers}

    if len(workers) < 2:
        return undefined(f"needs at least two annotators (got {len(workers)})")
    try:
        from crowdkit.aggregation import MACE, DawidSkene
    except ImportError:
        return undefined(INSTALL_HINT)
    rows = frame[["task", "worker", "label"]].sort_values(["task", "worker"], kind="stable").reset_index(drop=True)
    with warnings.catch_warnings():  # crowd-kit 1.4 uses pandas keywords that pandas 3 deprecates
        warnings.filterwarnings("ignore", module="crowdkit")
        ds = DawidSkene(n_iter=100).fit(rows)
        # crowd-kit seeds every restart with the same int ``random_state``, so its ten default restarts
        # are ten copies of one fit (the first is kept): one restart is the same fit at a tenth of the cost.
        mace = MACE(random_state=seed, n_restarts=1).fit(rows)
    errors, priors = ds.errors_, ds.priors_
    assert errors is not None and priors is not None  # fit() sets them; crowd-kit types them Optional
    knowing = dict(zip(pd.factorize(rows["worker"])[1], mace.spamming_[:, 1]))
    out = {}
    for w in workers:
        diagonal = sum(float(priors[k]) * float(errors.loc[(w, k), k]) if (w, k) in errors.index else 0.0
                       for k in priors.index)
        out[w] = {"dawid_skene": _parameter(diagonal, int(counts[w]), "Dawid-Skene (crowd-kit)"),
                  "mace": _parameter(float(knowing[w]), int(counts[w]), "MACE (crowd-kit)")}
    return out


def _parameter(value: float, n: int, method: str) -> Estimate:
    if not math.isfinite(value):
        return Estimate(statistic=math.nan, n=n, method=method, undefined_reason="the model fit gave no value")
    return Estimate(statistic=value, n=n, method=method, details={"interval": NO_INTERVAL})


def median_seconds(seconds: Sequence[float], level: float) -> Estimate:
    """Median seconds per unit with the distribution-free interval [x_(k), x_(n-k+1)] (binomial order statistics)."""
    from scipy.stats import binom

    x = np.sort(np.asarray([s for s in seconds if s is not None and math.isfinite(s) and s >= 0], dtype=float))
    n = x.size
    if n == 0:
        return Estimate(statistic=math.nan, n=0, level=level, method="median",
                        undefined_reason="no label records the time spent")
    k = int(binom.ppf((1 - level) / 2, n, 0.5))
    low, high = (float(x[k - 1]), float(x[n - k])) if k >= 1 else (math.nan, math.nan)
    return Estimate(statistic=float(np.median(x)), n=n, ci_low=low, ci_high=high, level=level,
                    method="median, order-statistic interval")


def unsure_share(count: int, n: int, level: float) -> Estimate:
    """Share of labels flagged unsure with its Clopper-Pearson interval."""
    from scipy.stats import beta

    if n == 0:
        return Estimate(statistic=math.nan, n=0, level=level, method="share", undefined_reason="no labels")
    tail = (1 - level) / 2
    low = float(beta.ppf(tail, count, n - count + 1)) if count else 0.0
    high = float(beta.ppf(1 - tail, count + 1, n - count)) if count < n else 1.0
    return Estimate(statistic=count / n, n=n, ci_low=low, ci_high=high, level=level,
                    method="share, Clopper-Pearson", details={"unsure": count})


def annotator_quality(table: pd.DataFrame, *, tie_policy: str, level: float = 0.95, n_resamples: int = 10_000,
                      seed: int = DEFAULT_SEED, rule: FlagRule | None = None, kind: str = "all",
                      with_competence: bool = True, gold: Mapping[str, Estimate] | None = None) -> QualitySection:
    """Every annotator's quality on a labels table's independent human rows (one label scheme).

    Optional columns ``seconds_spent`` and ``unsure`` (``quality_table``) give the time
    and unsure figures; without them those are undefined with the reason. ``gold``:
    annotator -> accuracy on the gold units of this kind (None: there are none); an
    annotator missing from it labelled no gold unit, so their accuracy is undefined.
    """
    from agreement.panels import PanelSettings
    from agreement.validation import rating_data, scheme_of

    humans_rows = table[table["source"] == "human"] if "source" in table.columns else table
    humans_rows = humans_rows[humans_rows["label"].notna()]
    humans = tuple(sorted(set(humans_rows["rater"].astype(str))))
    if not humans:
        raise InputError(f"annotator quality ({kind}): no independent human labels")
    categories, positive = scheme_of(sorted(set(humans_rows["kind"])) if "kind" in humans_rows else [],
                                     humans_rows["label"])
    notes: list[str] = []
    loo: dict[str, tuple[int, Mapping[str, AgreementResult] | None]] = {h: (0, None) for h in humans}
    data = None
    if len(humans) >= 2:
        frame = humans_rows.assign(weight=1.0)
        data = rating_data(frame, weighted=False, categories=categories)
        binary_positive = positive if len(data.categories) == 2 else None
        settings = PanelSettings(n_resamples=n_resamples, seed=seed, cluster=True)
        loo = leave_one_out(data, humans, tie_policy=tie_policy, positive=binary_positive, settings=settings)
        missing = "needs at least two other annotators' labels on shared units"
    else:
        missing = f"needs at least two annotators (got {len(humans)})"
        notes.append(f"leave-one-out agreement and competence: {missing}")
    crowd = (competences(humans_rows.rename(columns={"unit": "task", "rater": "worker"})
                         .assign(label=lambda f: f["label"].astype(str)), seed=seed) if with_competence else {})
    skipped = Estimate(statistic=math.nan, n=0, method="competence", undefined_reason="not computed")
    annotators = []
    for h in humans:
        mine = humans_rows[humans_rows["rater"].astype(str) == h]
        seconds = (median_seconds(mine["seconds_spent"].astype(float).tolist(), level) if "seconds_spent" in mine
                   else Estimate(statistic=math.nan, n=0, level=level, method="median",
                                 undefined_reason="the labels table carries no time spent"))
        unsure = (unsure_share(int(mine["unsure"].fillna(False).astype(bool).sum()), len(mine), level)
                  if "unsure" in mine else Estimate(statistic=math.nan, n=len(mine), level=level, method="share",
                                                    undefined_reason="the labels table carries no unsure flags"))
        compared, results = loo[h]
        accuracy = None if gold is None else gold.get(h, Estimate(
            statistic=math.nan, n=0, level=level, method="accuracy on gold, Wilson",
            undefined_reason="no gold unit labelled yet", details={"correct": 0}))
        quality = AnnotatorQuality(
            annotator=h, n_units=int(mine["unit"].nunique()), n_compared=compared, leave_one_out=results or {},
            dawid_skene=crowd.get(h, {}).get("dawid_skene", skipped), mace=crowd.get(h, {}).get("mace", skipped),
            seconds=seconds, unsure=unsure, gold=accuracy, undefined_reason=None if results else missing)
        if rule is not None:
            quality = _with_flags(quality, rule.reasons(quality, level))
        annotators.append(quality)
    return QualitySection(kind=kind, categories=tuple(data.categories) if data is not None else tuple(categories or ()),
                          annotators=tuple(annotators), n_units=int(humans_rows["unit"].nunique()), level=level,
                          tie_policy=tie_policy, rule=rule, notes=tuple(notes))


def _with_flags(quality: AnnotatorQuality, reasons: tuple[str, ...]) -> AnnotatorQuality:
    from dataclasses import replace

    return replace(quality, flag_reasons=reasons)


def flagged_annotators(table: pd.DataFrame, rule: FlagRule, *, tie_policy: str, level: float, n_resamples: int,
                       seed: int) -> dict[str, str]:
    """Annotators the rule flags on a labels table (leave-one-out agreement only), with why; none without humans."""
    if not ((table["source"] == "human") & table["label"].notna()).any():
        return {}
    section = annotator_quality(table, tie_policy=tie_policy, level=level, n_resamples=n_resamples, seed=seed,
                                rule=rule, with_competence=False)
    return section.flagged()


def quality_table(study: Any) -> pd.DataFrame:
    """The study's labels table with each independent human row's ``seconds_spent`` and ``unsure``."""
    from agreement.study_io import labels_table

    table = labels_table(study)
    human = study.human[study.human["role"] == "independent"]
    extra = pd.DataFrame({"unit": human["unit_id"].to_numpy(dtype=object),
                          "rater": human["annotator"].astype(str).to_numpy(dtype=object),
                          "seconds_spent": (human["seconds_spent"] if "seconds_spent" in human
                                            else pd.Series(np.nan, index=human.index)).astype(float).to_numpy(),
                          "unsure": (human["unsure"] if "unsure" in human
                                     else pd.Series(False, index=human.index)).fillna(False).astype(bool).to_numpy()})
    humans = table[table["source"] == "human"].merge(extra, on=["unit", "rater"], how="left")
    return humans.reset_index(drop=True)


def study_quality(study: Any, *, tie_policy: str, level: float, n_resamples: int, seed: int,
                  rule: FlagRule | None, gold: Mapping[str, Mapping[str, Estimate]] | None = None) -> list[QualitySection]:
    """One quality section per unit kind with human labels (none when the study has no human label);
    ``gold``: unit kind -> annotator -> gold accuracy (``annotator_quality``)."""
    from dataclasses import replace

    sections = []
    for kind, rows in quality_table(study).groupby("kind", sort=True):
        accuracy = None if gold is None else gold.get(str(kind))
        section = annotator_quality(rows, tie_policy=tie_policy, level=level, n_resamples=n_resamples, seed=seed,
                                    rule=rule, kind=str(kind), gold=accuracy)
        if gold is not None and accuracy is None:
            section = replace(section, notes=(*section.notes, "the study has no gold unit of this kind"))
        sections.append(section)
    return sections


def _estimate_record(estimate: Estimate) -> dict[str, Any]:
    body = estimate.to_dict()
    return {k: body[k] for k in ("statistic", "ci_low", "ci_high", "undefined_reason")} | {"n": estimate.n}


def section_to_dict(section: QualitySection) -> dict[str, Any]:
    from agreement.validation import _result_brief

    return {
        "kind": section.kind, "n_units": section.n_units, "categories": [str(c) for c in section.categories],
        "notes": list(section.notes),
        "annotators": [{
            "annotator": a.annotator, "units": a.n_units, "compared": a.n_compared,
            "leave_one_out": {k: _result_brief(v, section.level) for k, v in a.leave_one_out.items()},
            "dawid_skene": _estimate_record(a.dawid_skene), "mace": _estimate_record(a.mace),
            "median_seconds": _estimate_record(a.seconds), "unsure": _estimate_record(a.unsure),
            "gold": None if a.gold is None else _estimate_record(a.gold) | {"correct": int(a.gold.details["correct"])},
            "flagged": a.flagged, "flag_reasons": list(a.flag_reasons), "undefined_reason": a.undefined_reason,
        } for a in section.annotators],
    }


def quality_document(sections: Sequence[QualitySection], *, fingerprints: Mapping[str, str], simulated: bool,
                     rule: FlagRule | None, policy: str | None, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The body of ``QualityDocument`` (``agreement.documents``)."""
    from agreement.study_io import HUMAN_LABEL_SOURCES, SIMULATED_NOTE

    notes = [SIMULATED_NOTE] if simulated else []
    if not sections:
        notes.append(f"no human labels, so no annotator quality; {HUMAN_LABEL_SOURCES}")
    if rule is None:
        notes.append("no flag rule: the gate policy has no [quality] table, so no annotator is flagged")
    return {"sections": [section_to_dict(s) for s in sections], "rule": rule.to_dict() if rule else None,
            "policy": policy, "settings": dict(settings), "fingerprints": dict(fingerprints), "simulated": simulated,
            "notes": notes}


@dataclass(frozen=True, kw_only=True)
class QualitySettings:
    """How quality is computed: the gate policy's settings, so its flags are the gate's."""

    tie_policy: str
    level: float
    n_resamples: int
    seed: int = DEFAULT_SEED
    rule: FlagRule | None = None
    policy: str | None = field(default=None)
    """The policy file the settings and the rule came from (None: command-line settings, no rule)."""

    def __post_init__(self) -> None:
        Resampling(n_resamples=self.n_resamples, seed=self.seed, level=self.level)  # raises on a bad value

    def to_dict(self) -> dict[str, Any]:
        return {"tie_policy": self.tie_policy, "level": self.level, "n_resamples": self.n_resamples,
                "seed": self.seed}


def settings_from_policy(policy: Any) -> QualitySettings:
    """The gate policy's settings and flag rule (``policy``: an ``agreement.gate.Policy``, loaded by the caller)."""
    s = policy.settings
    return QualitySettings(tie_policy=s["tie_policy"], level=s["level"], n_resamples=s["n_resamples"],
                           seed=s["seed"], rule=policy.quality, policy=policy.path)


def run_quality(study: Any, settings: QualitySettings,
                gold: Mapping[str, Mapping[str, Estimate]] | None = None) -> dict[str, Any]:
    """Every section of a study's annotator quality as the ``QualityDocument`` body; ``gold``: unit kind ->
    annotator -> accuracy on gold units (``apps.live.gold_estimates``; None: the study has no gold units)."""
    sections = study_quality(study, tie_policy=settings.tie_policy, level=settings.level,
                             n_resamples=settings.n_resamples, seed=settings.seed, rule=settings.rule, gold=gold)
    body = quality_document(sections, fingerprints=study.fingerprints, simulated=study.simulated, rule=settings.rule,
                            policy=settings.policy, settings=settings.to_dict())
    if gold is None:
        body["notes"].append("no gold units, so no gold accuracy (accord gold add)")
    return body


def format_quality(body: Mapping[str, Any]) -> str:
    """Plain text: one line per annotator and section."""
    lines = list(body.get("notes", []))

    def num(block: Mapping[str, Any], digits: int = 3) -> str:
        value = block.get("statistic")
        if value is None:
            return f"-- ({block.get('undefined_reason')})" if block.get("undefined_reason") else "--"
        text = f"{value:.{digits}f}"
        if block.get("ci_low") is not None and block.get("ci_high") is not None:
            text += f" [{block['ci_low']:.{digits}f}, {block['ci_high']:.{digits}f}]"
        return text

    for section in body["sections"]:
        lines.append(f"\n== {section['kind']}: {section['n_units']} units ==")
        for a in section["annotators"]:
            loo = "; ".join(f"{k} {num(v)}" for k, v in a["leave_one_out"].items() if k in LEAVE_ONE_OUT)
            flag = f"  FLAGGED: {'; '.join(a['flag_reasons'])}" if a["flagged"] else ""
            gold = (f"; gold {num(a['gold'])} ({a['gold']['correct']} of {a['gold']['n']})"
                    if a.get("gold") and a["gold"]["statistic"] is not None
                    else f"; gold {num(a['gold'])}" if a.get("gold") else "")
            lines.append(f"{a['annotator']}: {a['units']} units; vs others' majority ({a['compared']}): "
                         f"{loo or '--'}; Dawid-Skene {num(a['dawid_skene'])}; MACE {num(a['mace'])}; "
                         f"median s/unit {num(a['median_seconds'], 1)}; unsure {num(a['unsure'])}{gold}{flag}")
    return "\n".join(lines)
