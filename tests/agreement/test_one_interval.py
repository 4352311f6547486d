"""One interval per statistic (issues #25, #27): for every result type with ``confidence_interval()``, the
interval in the written document, the one the gate criterion compares and the one the result returns are the
same numbers, and every ``confidence_interval()`` has one signature returning a ``ConfidenceInterval``."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pandas as pd
import pytest

from agreement.active import active_mean, labelling_probabilities
from agreement.audit import audit
from agreement.documents import ValidationDocument, read_document
from agreement.estimate import Estimate
from agreement.gate import evaluate, load_policy
from agreement.preference import preference_bias
from agreement.sequential import betting_cs
from agreement.study_io import labels_table, load_study
from agreement.validation import GateEvidence
from annotate.gold import gold_accuracy
from apps.cli import main
from samples import ConfidenceInterval
from tests.agreement.test_audit import simulate
from tests.agreement.test_gate import HEAD, own, policy
from tests.agreement.test_study_io import write_ise_study

JUDGE = "identify@j"
RESAMPLES = 300
LEVEL = 0.95


def result_types() -> list[type]:
    """Every class in the engine (and gold accuracy) that defines ``confidence_interval``."""
    import agreement.active
    import agreement.audit
    import agreement.estimate
    import agreement.intervals
    import agreement.panels
    import agreement.preference
    import agreement.results
    import agreement.sequential
    import annotate.gold

    modules = (agreement.active, agreement.audit, agreement.estimate, agreement.intervals, agreement.panels,
               agreement.preference, agreement.results, agreement.sequential, annotate.gold)
    return sorted({cls for m in modules for cls in vars(m).values()
                   if inspect.isclass(cls) and "confidence_interval" in vars(cls)}, key=lambda c: c.__name__)


def test_every_confidence_interval_has_one_signature():
    types = result_types()
    assert len(types) >= 10, types
    for cls in types:
        signature = inspect.signature(cls.confidence_interval)
        assert list(signature.parameters) == ["self", "level", "method"], cls
        assert signature.parameters["level"].default is None and signature.parameters["method"].default is None
        assert signature.return_annotation in ("ConfidenceInterval", ConfidenceInterval), cls


def same(ci: ConfidenceInterval, low: float | None, high: float | None) -> None:
    """Equal numbers, None in a document standing for an undefined (NaN) bound."""
    assert (ci.low, ci.high) == (math.nan if low is None else low, math.nan if high is None else high) or (
        math.isnan(ci.low) and low is None and math.isnan(ci.high) and high is None), (ci, low, high)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-interval") / "study"  # 127 validated units: above MIN_UNITS
    write_ise_study(root, judge_accuracy=0.97, human_accuracy=0.82, unscored=4, sample_share=0.8)
    return root


def test_agreement_ceiling_and_baselines_one_interval(study, tmp_path):
    """validation.json, gate/verdict.json and confidence_interval() give the same bounds and method."""
    floors = "".join(f'\n[[criteria]]\ntype = "agreement_floor"\ncoefficient = "{c}"\nreference = "human_majority"\n'
                     f"min_lower_bound = 0.1\n" for c in ("gwet_ac1", "percent_agreement", "cohen_kappa"))
    ceiling = '\n[[criteria]]\ntype = "human_ceiling"\ncoefficient = "percent_agreement"\nmargin = 0.2\n'
    path = tmp_path / "policy.toml"
    path.write_text(HEAD.replace("n_resamples = 300", f"n_resamples = {RESAMPLES}") + floors + ceiling)
    assert main(["validate", str(study), "--n-resamples", str(RESAMPLES)]) == 0
    assert main(["gate", str(study), "--policy", str(path), "--judge", JUDGE]) in (0, 1)
    criteria = json.loads((study / "gate" / "verdict.json").read_text())["judges"][JUDGE]["criteria"]
    by_type: dict[str, list[dict]] = {}
    for row in criteria:
        by_type.setdefault(row["type"], []).append(row)

    table = labels_table(load_study(study))
    evidence = GateEvidence(table, judge=JUDGE, tie_policy="exclude", level=LEVEL, n_resamples=RESAMPLES,
                            seed=20261129)
    section = next(s for s in read_document(ValidationDocument, study).sections
                   if any(v.judge == JUDGE for v in s.judges_vs_humans))
    written = next(v for v in section.judges_vs_humans if v.judge == JUDGE).vs_majority.results
    raw = evidence.section.versus(JUDGE, "human_majority").agreement.results
    floors_by_coefficient = {row["details"].get("coefficient") or row["name"].split(" ")[0]: row
                             for row in by_type["agreement_floor"]}
    for coefficient in ("gwet_ac1", "percent_agreement", "cohen_kappa"):
        ci = raw[coefficient].confidence_interval(LEVEL)
        assert ci.defined, coefficient
        record, row = written[coefficient], floors_by_coefficient[coefficient]
        same(ci, record.ci_low, record.ci_high)
        same(ci, row["ci_low"], row["ci_high"])
        assert record.ci_method == ci.method and row["ci_method"].endswith(ci.method), (record.ci_method, ci.method)
        held = evidence.agreement(coefficient, "human_majority").confidence_interval()
        assert (held.low, held.high, held.level) == (ci.low, ci.high, ci.level)

    difference = evidence.human_ceiling("percent_agreement")
    ci = difference.confidence_interval(LEVEL)
    (row,) = by_type["human_ceiling"]
    assert ci.defined and row["ci_method"] == ci.method and row["ci_level"] == ci.level
    same(ci, row["ci_low"], row["ci_high"])

    (row,) = by_type["beats_baselines"]
    coefficients = tuple(dict.fromkeys(cell["coefficient"] for cell in row["details"]["baselines"]))
    comparison = evidence.baselines(coefficients, "human_majority", ())
    measured = {(d.baseline, d.coefficient): d.confidence_interval(LEVEL) for d in comparison.differences}
    assert len(row["details"]["baselines"]) == len(measured) >= 2
    for cell in row["details"]["baselines"]:
        ci = measured[(cell["baseline"], cell["coefficient"])]
        same(ci, cell["ci_low"], cell["ci_high"])
    binding = min((c for c in measured.values() if c.defined), key=lambda c: c.low)
    same(binding, row["ci_low"], row["ci_high"])
    assert row["ci_method"] == binding.method


class AuditEvidence:
    judge = "judge"
    level = LEVEL

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def family_audit(self, positive, *, reference):
        return audit(self.frame, positive=positive, n_resamples=RESAMPLES)


@pytest.mark.parametrize("contrast", ["raw", "adjusted"])
def test_family_contrast_one_interval(tmp_path, contrast):
    """The audit document's contrasts and model biases, the gate's family_contrast rows and the results agree."""
    frame = simulate(3)
    pol = load_policy(policy(tmp_path, f'type = "family_contrast"\npositive = ["yes"]\nmax_abs_contrast = 0.5\n'
                                       f'contrast = "{contrast}"'))
    result = evaluate(own(pol), AuditEvidence(frame), fingerprints={}, simulated=False).results[0]
    found = audit(frame, positive=["yes"], n_resamples=RESAMPLES)
    document = found.to_dict()
    for c, written in zip(found.contrasts, document["contrasts"], strict=True):
        assert c.family == written["family"]
        same(c.confidence_interval(), written["raw"]["ci_low"], written["raw"]["ci_high"])
        chosen = getattr(c, contrast).confidence_interval()
        row = result.details["contrasts"][c.family]
        same(chosen, row["ci_low"], row["ci_high"])
        assert chosen.level == LEVEL
    assert result.ci_method.startswith(min(
        (getattr(c, contrast).confidence_interval() for c in found.contrasts),
        key=lambda ci: -max(abs(ci.low), abs(ci.high))).method)
    for m, written in zip(found.models, document["models"], strict=True):
        same(m.confidence_interval(), written["bias"]["ci_low"], written["bias"]["ci_high"])


def test_held_intervals_match_their_documents():
    """Results that keep bounds (family bias, gold accuracy, estimates, active estimates, confidence sequences)
    return them, as their documents write them; another level is computed where the result can, else refused."""
    rng = np.random.default_rng(5)
    rows = []
    for q in range(40):
        a, b = ("gpt-4", "claude") if q % 2 else ("claude", "gpt-4")
        for rater, source in (("judge-gpt", "judge"), ("h1", "human"), ("h2", "human")):
            rows.append({"unit": f"u{q}", "cluster": f"q{q}", "model_a": a, "model_b": b, "source": source,
                         "rater": rater, "label": str(rng.choice(["A", "B", "tie"]))})
    cells = preference_bias(pd.DataFrame(rows), first="model_a", second="model_b", first_label="A",
                            second_label="B", tie_label="tie", model_families={"gpt-4": "openai", "claude": "anthropic"},
                            judge_families={"judge-gpt": "openai"}, n_resamples=200)
    for cell in cells:
        written = cell.to_dict()
        same(cell.confidence_interval(), written["ci_low"], written["ci_high"])
        with pytest.raises(ValueError, match=r"level=0\.9: the family bias holds only its 0\.95 interval"):
            cell.confidence_interval(0.9)

    (gold,) = gold_accuracy([], _EmptyGold(), annotators=["ann"])
    ci = gold.confidence_interval()
    assert not ci.defined and gold.to_dict()["ci_low"] is None and ci.method == gold.to_dict()["interval"]

    estimate = Estimate(statistic=0.5, n=10, ci_low=0.2, ci_high=0.8, level=0.9, method="percentile bootstrap")
    same(estimate.confidence_interval(), estimate.to_dict()["ci_low"], estimate.to_dict()["ci_high"])
    with pytest.raises(ValueError, match="method='bca'"):
        estimate.confidence_interval(method="bca")

    predicted = np.full(200, 0.7)
    labelled = np.arange(200) < 100
    active = active_mean(np.where(labelled, 1.0, 0.0) * (np.arange(200) % 3 > 0), predicted,
                         labelling_probabilities(predicted, 100.0), labelled)
    # z(0.975) = 1.959964, z(0.95) = 1.644854: the 90% interval is narrower by their ratio.
    wide, narrow = active.confidence_interval(), active.confidence_interval(0.9)
    assert wide.level == active.level == 0.95 and narrow.level == 0.9
    assert (narrow.high - narrow.low) / (wide.high - wide.low) == pytest.approx(1.644854 / 1.959964, rel=1e-6)

    sequence = betting_cs(np.array([3.0, 2.0, 4.0, 1.0]), np.array([4.0, 4.0, 4.0, 4.0]), alpha=0.05)
    last = sequence.confidence_interval()
    assert (last.low, last.high) == (float(sequence.low[-1]), float(sequence.high[-1])) and last.level == 0.95


class _EmptyGold:
    units: list = []
