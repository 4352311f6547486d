"""The active order people label in: units where judges of different families disagree first, drawn so that every
prefix of the order is a sample with known inclusion probabilities.

``agreement.active`` says how much each unit is worth labelling: the other-family judges'
agreement with the judge gives a prediction f_i of "the judge matches people", and a unit
is worth more the less certain that prediction is (pi_i proportional to sqrt(f_i (1 - f_i)),
``labelling_probabilities``). People label in an order and may stop at any n (the anytime
gate), so the order itself is the draw: sequential Poisson sampling (Ohlsson 1998) gives
unit i the key U_i / lambda_i (U_i uniform, seeded; lambda_i the target size-1 probabilities)
and serves units by increasing key. The first n units of that order are a sample whose
inclusion probabilities are pi_i(n) = ``labelling_probabilities(f, n)`` (exactly so for
Poisson sampling, the approximation Ohlsson shows is close for order sampling), which the
order document records beside each unit's key, so estimates from any prefix can be weighted
by 1 / pi_i(n) (inverse-probability weights) or combined with f as PPI++ does
(``agreement.active.active_mean``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement.active import cross_family_predictor, labelling_probabilities

METHOD = ("adaptive: sequential Poisson sampling (Ohlsson 1998) on the cross-family predictor (units where judges "
          "of other families disagree with the judge first); the first n units have inclusion probabilities "
          "pi_i(n) proportional to sqrt(f_i (1 - f_i)), recorded in sample/active_order.json")
WEIGHTING = ("estimates of the judge's agreement weighted by 1 / pi_i(n) (inverse-probability weights) with the "
             "cross-family prediction as PPI++ control (agreement.active.active_mean)")


@dataclass(frozen=True, kw_only=True)
class ActiveOrder:
    """Units in serving order with what their inclusion probabilities are computed from."""

    judge: str
    units: tuple[str, ...]
    predicted: np.ndarray
    """f_i: P(the judge matches people) from the other-family judges, per unit in serving order."""
    agreeing: np.ndarray
    voting: np.ndarray
    key: np.ndarray
    """U_i / lambda_i, increasing along the order."""
    seed: int

    def inclusion(self, n: int) -> np.ndarray:
        """pi_i(n): the probability each unit is among the first ``n`` served (per unit in serving order)."""
        return labelling_probabilities(self.predicted, float(n))

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "seed": self.seed, "method": METHOD, "weighting": WEIGHTING,
                "units": [{"unit_id": u, "rank": r, "predicted": float(f), "agreeing": int(a), "voting": int(v),
                           "key": float(k)}
                          for r, (u, f, a, v, k) in enumerate(zip(self.units, self.predicted, self.agreeing,
                                                                  self.voting, self.key))]}


def cross_family_votes(labels: Mapping[str, Mapping[str, str | None]], judge: str, families: Mapping[str, str]
                       ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per unit the judge labelled: how many judges of other families gave its label, of how many that labelled it.

    ``labels``: judge -> unit -> label (None: unscored); ``families``: judge -> family.
    """
    if judge not in labels:
        raise ValueError(f"judge={judge!r}: not among the judges with labels {sorted(labels)}")
    others = [j for j in sorted(labels) if j != judge and families.get(j) != families.get(judge)]
    units = sorted(u for u, label in labels[judge].items() if label is not None)
    agreeing = np.zeros(len(units), dtype=np.int64)
    voting = np.zeros(len(units), dtype=np.int64)
    for k, unit in enumerate(units):
        theirs = [labels[j].get(unit) for j in others]
        given = [x for x in theirs if x is not None]
        voting[k] = len(given)
        agreeing[k] = sum(x == labels[judge][unit] for x in given)
    return units, agreeing, voting


def active_order(units: Sequence[str], agreeing: np.ndarray, voting: np.ndarray, *, judge: str, seed: int
                 ) -> ActiveOrder:
    """The serving order: keys U_i / lambda_i, increasing, with lambda_i = sqrt(f_i (1 - f_i)) (the shape of
    ``labelling_probabilities``; only ratios of lambda order the keys)."""
    if len(units) == 0:
        raise ValueError("units: empty; an active order needs the judge's labels on the sampled units")
    f = cross_family_predictor(np.asarray(agreeing), np.asarray(voting))
    u = np.random.default_rng([int(seed), 26]).random(len(units))
    key = u / np.sqrt(f * (1 - f))
    order = np.lexsort((np.asarray(units, dtype=object).astype(str), key))
    return ActiveOrder(judge=judge, units=tuple(units[i] for i in order), predicted=f[order],
                       agreeing=np.asarray(agreeing)[order], voting=np.asarray(voting)[order], key=key[order],
                       seed=int(seed))


def publish_active_order(layout: Any, *, judge: str, families: Mapping[str, str], seed: int) -> dict[str, int]:
    """The study's active order from its judge labels on the sample, written to ``layout.active_order``;
    returns unit id -> rank (for blinding)."""
    from agreement.study_io import read_judge_labels
    from samples import InputError, SampledUnit, read_models, write_json

    sampled = {u.unit_id for u in read_models(layout.sample, SampledUnit)}
    table = read_judge_labels(layout, layout.judge_label_files())
    table = table[(table["sample_index"] == 0) & table["unit_id"].isin(sampled)]
    labels: dict[str, dict[str, str | None]] = {}
    for row in table.itertuples():
        label = row.label if isinstance(getattr(row, "label", None), str) else None
        labels.setdefault(str(row.judge), {})[str(row.unit_id)] = label
    if judge not in labels:
        raise InputError(f"[sampling] order = \"active\": judge {judge!r} has no labels on the sample "
                         f"({layout.relative(layout.sample)}); judges with labels: {sorted(labels)}")
    units, agreeing, voting = cross_family_votes(labels, judge, families)
    if not voting.any():
        raise InputError(f"[sampling] order = \"active\": no judge of another family than {judge!r} "
                         f"({families.get(judge)}) labelled the sample; the active order needs one (judges: "
                         + ", ".join(f"{j} ({families.get(j)})" for j in sorted(labels)) + ")")
    order = active_order(units, agreeing, voting, judge=judge, seed=seed)
    write_json(layout.active_order, order.to_dict())
    return {unit: rank for rank, unit in enumerate(order.units)}


def active_order_rows(root: Any) -> tuple[list[list[str]], str] | None:
    """The report's statement of an adaptive order, (rows, note); None when the study's order was not active: how
    the units were ordered, how estimates are weighted, and the judge's percent agreement with the human majority
    estimated with the known inclusion probabilities of the labelled units (``agreement.active.active_mean``)."""
    import json

    from agreement.active import active_mean
    from agreement.study_io import labels_table, load_study
    from agreement.validation import reference_labels
    from samples import StudyLayout

    layout = StudyLayout.of(root)
    if not layout.active_order.is_file():
        return None
    document = json.loads(layout.active_order.read_text(encoding="utf-8"))
    rows = [["order", document["method"]], ["weighting", document["weighting"]]]
    units = [row["unit_id"] for row in document["units"]]
    predicted = np.array([row["predicted"] for row in document["units"]], dtype=float)
    table = labels_table(load_study(root))
    judged = table[(table["source"] == "judge") & (table["rater"] == document["judge"])].set_index("unit")["label"]
    reference = reference_labels(table, reference="human_majority", tie_policy="exclude").set_index("unit")["label"]
    labelled = np.array([u in reference.index and isinstance(reference.get(u), str) for u in units])
    y = np.array([float(judged.get(u) == reference.get(u)) if ok else 0.0 for u, ok in zip(units, labelled)])
    n = int(labelled.sum())
    try:
        estimate = active_mean(y, predicted, labelling_probabilities(predicted, float(n)), labelled)
        ci = estimate.confidence_interval()
        text = (f"{estimate.statistic:.3f} [{ci.low:.3f}, {ci.high:.3f}] ({n} of {len(units)} units labelled; "
                f"PPI++ lambda {estimate.lam:.2f}; {estimate.method})")
    except ValueError as error:  # too few labelled units for the probabilities' floor
        text = f"-- ({n} of {len(units)} units labelled: {error})"
    rows.append([f"percent agreement of {document['judge']} vs the human majority, weighted", text])
    return rows, f"{layout.relative(layout.active_order)}: each unit's key, prediction and rank"
