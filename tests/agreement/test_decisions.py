"""Aggarwal's decision statistics (agreement.decisions) on hand-derived cases, cross-checked against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agreement.decisions import (
    cohens_h,
    composition_scores,
    decision_table,
    outcome,
    probability_scores,
    stated_probability,
    tost_paired_rates,
)
from samples.errors import InputError


def test_every_row_stays_in_the_commitment_denominator():
    # 3 ANSWER, 2 CALL_TOOL, 1 DECLINE, 3 unreadable, 1 failed call = 10 rows.
    rows = ["ANSWER"] * 3 + ["CALL_TOOL"] * 2 + ["DECLINE"] + ["unreadable"] * 3 + ["failed"]
    table = decision_table(rows)
    assert table.counts == {"ANSWER": 3, "CALL_TOOL": 2, "DECLINE": 1, "unreadable": 3, "failed": 1}
    assert (table.commit.k, table.commit.n, table.commit.statistic) == (3, 10, 0.3)
    assert (table.commit_without_failed.n, table.commit_without_failed.statistic) == (9, 3 / 9)
    # A tool call is not a decline; unparsed is over rows that returned content (3/9).
    assert (table.decline.statistic, table.tool.statistic, table.unparsed.statistic) == (0.1, 0.2, 3 / 9)
    assert table.lower_bound is False
    assert decision_table(["unreadable"] * 2 + ["DECLINE"]).lower_bound is True  # 2/3 unparsed
    # Wilson 95% for 3/10 (Agresti & Coull 1998 formula): centre (3 + 1.96^2/2)/(10 + 1.96^2), half-width below.
    z = 1.959963984540054
    centre = (3 + z * z / 2) / (10 + z * z)
    half = z * math.sqrt(0.3 * 0.7 / 10 + z * z / 400) / (1 + z * z / 10)
    assert table.commit.ci_low == pytest.approx(centre - half) and table.commit.ci_high == pytest.approx(centre + half)
    empty = decision_table([])
    assert empty.commit.statistic is None and empty.commit.undefined_reason == "no rows"
    assert outcome(None, failed=False) == "unreadable" and outcome(None, failed=True) == "failed"
    with pytest.raises(InputError, match="decision label 'MAYBE'"):
        outcome("MAYBE", failed=False)


def test_composition_scores_as_the_paper_defines_them():
    # 6 unknowable (gold DECLINE), 2 answerable (gold ANSWER): a 3:1 composition.
    gold = ["DECLINE"] * 6 + ["ANSWER"] * 2
    always_decline = composition_scores(["DECLINE"] * 8, gold)
    # J = 6/6 - 2/2 = 0; T = 6/8 right - 2/8 wrong = +0.5 (section 2.1: T = +50 at 3:1).
    assert (always_decline.j, always_decline.t, always_decline.balanced_accuracy) == (0.0, 0.5, 0.5)
    # Unknowable arm: declines 3, calls a tool twice, answers once; answerable arm: answers once, unreadable once.
    mixed = composition_scores(["DECLINE"] * 3 + ["CALL_TOOL"] * 2 + ["ANSWER"] + ["ANSWER", "unreadable"], gold)
    # unknowable: DECLINE 3/6; answerable: ANSWER 1/2, unreadable 1/2.
    assert mixed.j == pytest.approx(3 / 6 - 0 / 2)                   # decline rate only (App. D Table 6)
    assert mixed.j_non_commitment == pytest.approx(5 / 6 - 1 / 2)    # any non-ANSWER
    assert mixed.balanced_accuracy == pytest.approx((3 / 6 + 1 / 2) / 2)
    # right: 3 declines + 1 answer = 4; wrong: 2 tools + 1 answer on unknowable = 3; unreadable neither.
    assert mixed.t == pytest.approx((4 - 3) / 8) and mixed.unparsed == 1
    none = composition_scores(["DECLINE"] * 2, ["DECLINE"] * 2)
    assert none.j is None and "both unknowable and answerable" in none.undefined_reason
    with pytest.raises(InputError, match="gold action"):
        composition_scores(["DECLINE"], ["CALL_TOOL"])


def test_cohens_h_and_tost():
    # h(0.5, 0.25) = 2 asin(sqrt .5) - 2 asin(.5) = pi/2 - pi/3 = pi/6.
    assert cohens_h(0.5, 0.25) == pytest.approx(math.pi / 6)
    with pytest.raises(InputError, match="p1 = 1.5"):
        cohens_h(1.5, 0.2)
    same = [True, False, True, True] * 10
    clusters = [f"c{i % 10}" for i in range(40)]
    equal = tost_paired_rates(same, same, clusters, margin=0.05)
    assert (equal.difference, equal.ci_low, equal.ci_high, equal.equivalent) == (0.0, 0.0, 0.0, True)
    # One side answers on 8 extra rows of 40: a +20p difference is never inside +/-5p.
    other = list(same)
    flipped = [i for i, v in enumerate(same) if not v][:8]
    for i in flipped:
        other[i] = True
    far = tost_paired_rates(other, same, clusters, margin=0.05)
    assert far.difference == pytest.approx(0.2) and not far.equivalent and far.ci_low <= 0.2 <= far.ci_high
    again = tost_paired_rates(other, same, clusters, margin=0.05)
    assert (again.ci_low, again.ci_high) == (far.ci_low, far.ci_high)  # the fixed seed
    with pytest.raises(InputError, match="margin"):
        tost_paired_rates(same, same, clusters, margin=0)


def test_stated_probability():
    assert stated_probability("<answer>\nDECISION: ANSWER\nPROBABILITY_YES: 65\nALLOCATE_PCT: 40") == 0.65
    assert stated_probability("PROBABILITY_YES: 0.3") == 0.3
    assert stated_probability("PROBABILITY_YES: 7%") == 0.07
    assert stated_probability("PROBABILITY_YES: NA") is None and stated_probability(None) is None
    assert stated_probability("PROBABILITY_YES: 140") is None


def test_probability_scores_match_scikit_learn():
    from sklearn.isotonic import IsotonicRegression
    from sklearn.metrics import brier_score_loss, roc_auc_score

    rng = np.random.default_rng(7)
    p = np.round(rng.uniform(0, 1, 400), 1)  # ties, as stated percentages have
    y = rng.uniform(0, 1, 400) < p ** 2
    scores = probability_scores(p, y)
    assert scores.brier == pytest.approx(brier_score_loss(y, p))
    assert scores.auroc == pytest.approx(roc_auc_score(y, p))
    recalibrated = IsotonicRegression(y_min=0, y_max=1).fit(p, y).predict(p)
    brier_recal = float(np.mean((recalibrated - y) ** 2))
    base = y.mean()
    assert scores.uncertainty == pytest.approx(base * (1 - base))
    assert scores.miscalibration == pytest.approx(scores.brier - brier_recal)
    assert scores.discrimination == pytest.approx(scores.uncertainty - brier_recal)
    assert scores.brier == pytest.approx(scores.miscalibration - scores.discrimination + scores.uncertainty)
    assert scores.brier_skill == pytest.approx(1 - scores.brier / (base * (1 - base)))
    for bins in (5, 10, 15):  # ECE written out: per equal-width bin, share of rows x |mean forecast - mean outcome|
        edges = np.minimum((p * bins).astype(int), bins - 1)
        hand = sum((edges == b).mean() * abs(p[edges == b].mean() - y[edges == b].mean()) for b in range(bins) if (edges == b).any())
        assert scores.ece[bins] == pytest.approx(hand)
    # Hand case: forecasts 0.2, 0.8 on outcomes 0, 1: Brier 0.04, AUROC 1; ECE10 = |0.2 - 0|/2 + |0.8 - 1|/2 = 0.2.
    tiny = probability_scores([0.2, 0.8], [False, True])
    assert (tiny.brier, tiny.auroc, tiny.ece[10]) == (pytest.approx(0.04), 1.0, pytest.approx(0.2))
    flat = probability_scores([0.3, 0.6], [True, True])
    assert flat.brier_skill is None and flat.auroc is None and "every outcome is the same" in flat.undefined_reason
    assert probability_scores([], []).brier is None
