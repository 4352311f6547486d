"""Panels: majority and tie policies, directional disagreements, the reference report."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.majority import majority_vote, vote_counts
from samples.errors import InputError

YES, NO = 0, 1
CATS = ("yes", "no")


def _vote(codes, policy, positive=None, categories=CATS):
    codes = np.asarray(codes)
    units = [f"u{i}" for i in range(codes.shape[0])]
    voters = [f"h{j}" for j in range(codes.shape[1])]
    return majority_vote(codes, units=units, categories=categories, voters=voters, tie_policy=policy,
                         positive=positive)


# Four annotators; rows written so the expected majority can be read off by eye:
#   u0 yes yes no  -      -> yes (2:1)
#   u1 yes no  -   -      -> tie (1:1)
#   u2 no  no  yes yes    -> tie (2:2)
#   u3 -   -   -   -      -> unrated
#   u4 no  -   -   -      -> no  (single rating)
#   u5 no  no  no  yes    -> no  (3:1)
PANEL = [[YES, YES, NO, -1], [YES, NO, -1, -1], [NO, NO, YES, YES], [-1, -1, -1, -1], [NO, -1, -1, -1],
         [NO, NO, NO, YES]]


def test_vote_counts_match_a_python_count():
    rng = np.random.default_rng(1)
    codes = rng.integers(-1, 4, size=(50, 7))
    expected = np.array([[sum(1 for c in row if c == k) for k in range(4)] for row in codes.tolist()])
    assert np.array_equal(vote_counts(codes, 4), expected)


@pytest.mark.parametrize(("policy", "positive", "expected"), [
    ("exclude", None, [YES, -1, -1, -1, NO, NO]),
    ("needs-adjudication", None, [YES, -1, -1, -1, NO, NO]),
    ("positive", "yes", [YES, YES, YES, -1, NO, NO]),
    ("negative", "yes", [YES, NO, NO, -1, NO, NO]),
    ("positive", "no", [YES, NO, NO, -1, NO, NO]),
])
def test_tie_policies(policy, positive, expected):
    vote = _vote(PANEL, policy, positive)
    assert vote.codes.tolist() == expected
    assert (vote.n_ties, vote.n_unrated, vote.n_single, vote.n_units) == (2, 1, 1, 6)
    assert vote.tied_units == ("u1", "u2")
    assert vote.n == sum(1 for c in expected if c >= 0)
    assert vote.needs_adjudication == (policy == "needs-adjudication")


def test_multiclass_ties_and_policy_validation():
    # three categories; u0: a a b c -> a; u1: a b c -> three-way tie; u2: c c b b a -> tie
    codes = [[0, 0, 1, 2, -1], [0, 1, 2, -1, -1], [2, 2, 1, 1, 0]]
    vote = _vote(codes, "exclude", categories=("a", "b", "c"))
    assert vote.codes.tolist() == [0, -1, -1] and vote.n_ties == 2
    with pytest.raises(InputError, match="exactly two categories"):
        _vote(codes, "positive", positive="a", categories=("a", "b", "c"))
    with pytest.raises(InputError, match="positive= one of the categories"):
        _vote(PANEL, "positive", positive="maybe")
    with pytest.raises(InputError, match="tie_policy='coin'"):
        _vote(PANEL, "coin")


# ---- panels on RatingData (need the coefficient engine) ----

from agreement.panels import PanelSettings, class_metrics, compare_pairs, pairwise_raw_agreement, panel_report  # noqa: E402
from agreement.table import RatingData  # noqa: E402

ANALYTIC = PanelSettings(n_resamples=0)


def _data(codes, raters, categories=CATS, clusters=None):
    codes = np.asarray(codes)
    return RatingData(units=np.array([f"u{i}" for i in range(codes.shape[0])], dtype=object), raters=tuple(raters),
                      categories=categories, codes=codes, clusters=clusters)


def test_directional_disagreements_count_each_direction():
    rng = np.random.default_rng(3)
    a = rng.integers(-1, 3, size=400)
    b = rng.integers(-1, 3, size=400)
    data = _data(np.column_stack([a, b]), ("A", "B"), categories=("x", "y", "z"))
    panel = compare_pairs(data, [("A", "B")], settings=ANALYTIC)[("A", "B")]
    both = [(i, j) for i, j in zip(a.tolist(), b.tolist()) if i >= 0 and j >= 0]
    cats = ("x", "y", "z")
    expected = {(cats[i], cats[j]): sum(1 for p in both if p == (i, j)) for i in range(3) for j in range(3) if i != j}
    expected = {cell: count for cell, count in expected.items() if count}
    assert {(x, y): c for x, y, c in panel.disagreements()} == expected
    assert panel.n_units == len(both)
    assert panel.n_only_a == sum(1 for i, j in zip(a.tolist(), b.tolist()) if i >= 0 > j)
    assert panel.n_only_b == sum(1 for i, j in zip(a.tolist(), b.tolist()) if j >= 0 > i)
    # swapping the raters transposes every direction
    swapped = compare_pairs(data, [("B", "A")], settings=ANALYTIC)[("B", "A")]
    assert {(y, x): c for x, y, c in swapped.disagreements()} == expected


def test_pairwise_raw_agreement_matches_a_loop():
    rng = np.random.default_rng(5)
    codes = rng.integers(-1, 3, size=(300, 6))
    raw, shared = pairwise_raw_agreement(codes)
    for i in range(6):
        for j in range(6):
            both = [(x, y) for x, y in zip(codes[:, i].tolist(), codes[:, j].tolist()) if x >= 0 and y >= 0]
            assert shared[i, j] == len(both)
            assert raw[i, j] == pytest.approx(sum(x == y for x, y in both) / len(both), abs=1e-12)


def test_reference_report_matches_scikit_learn():
    from sklearn.metrics import accuracy_score, cohen_kappa_score, precision_recall_fscore_support

    rng = np.random.default_rng(11)
    cats = ("ABSTAIN", "HEDGE", "CONFIDENT_CORRECT", "CONFIDENT_WRONG")
    truth = rng.integers(0, 4, size=(500, 3))
    judge = np.where(rng.random(500) < 0.7, truth[:, 0], rng.integers(0, 4, size=500))
    judge[:7] = -1  # unscored judge rows: counted, never a label
    data = _data(np.column_stack([truth, judge]), ("h1", "h2", "h3", "clf"), categories=cats)
    report = panel_report(data, judges=["clf"], tie_policy="exclude", reference="h1", settings=ANALYTIC)
    ref = report.references[0]
    keep = judge >= 0
    y_true, y_pred = truth[keep, 0], judge[keep]
    precision, recall, f1, support = precision_recall_fscore_support(y_true, y_pred, labels=[0, 1, 2, 3],
                                                                     zero_division=np.nan)
    assert ref.reference == "h1" and ref.agreement.n_units == keep.sum() and ref.agreement.n_only_b == 7
    for k, metrics in enumerate(ref.per_class):
        assert metrics.label == cats[k] and metrics.support == support[k]
        assert (metrics.precision, metrics.recall, metrics.f1) == pytest.approx((precision[k], recall[k], f1[k]))
    assert ref.accuracy == pytest.approx(accuracy_score(y_true, y_pred))
    assert ref.macro_f1 == pytest.approx(f1.mean())
    assert ref.agreement.results["cohen_kappa"].statistic == pytest.approx(cohen_kappa_score(y_true, y_pred))


def test_class_metrics_undefined_is_nan_with_a_reason():
    # cells (reference code, rater code, units): the rater never says "no", the reference never says "maybe"
    cells = np.array([[0, 0, 5], [1, 0, 3]])
    yes, no, maybe = class_metrics(cells, ("yes", "no", "maybe"))
    assert yes.precision == pytest.approx(5 / 8) and yes.recall == 1.0
    assert np.isnan(no.precision) and no.recall == 0.0 and np.isnan(no.f1) and "never gives" in no.undefined_reason
    assert np.isnan(maybe.recall) and "reference never" in maybe.undefined_reason


def test_panel_report_judge_only_and_tie_counts():
    # u0..u3 as in PANEL (first four rows) plus two judges; the report carries the tie counts
    codes = np.array([[YES, YES, NO, -1, YES, YES], [YES, NO, -1, -1, NO, YES], [NO, NO, YES, YES, NO, NO],
                      [NO, -1, -1, -1, NO, NO]])
    data = _data(codes, ("h0", "h1", "h2", "h3", "j0", "j1"))
    report = panel_report(data, judges=["j0", "j1"], tie_policy="positive", positive="yes", settings=ANALYTIC)
    assert report.majority.n_ties == 2 and report.majority.codes.tolist() == [YES, YES, YES, NO]
    assert report.humans == ("h0", "h1", "h2", "h3")
    only_judges = panel_report(data.select_raters(["j0", "j1"]), judges=["j0", "j1"], tie_policy="exclude",
                               settings=ANALYTIC)
    assert only_judges.human_panel is None and only_judges.majority is None
    assert any("no human annotators" in note for note in only_judges.notes)
    assert len(only_judges.judge_pairs[0].pairs) == 1


def test_first_turn_agreement_by_hand():
    from agreement.panels import first_turn_agreement

    nan = float("nan")
    # Units:   u0  u1  u2  u3  u4  u5   u6
    human = [2, 3, 5, 1, 4, nan, 2]
    judge = [2, 4, 8, 1, nan, 3, 1]
    clusters = ["a", "a", "b", "c", "c", "d", "d"]
    # Both given on u0, u1, u2, u3, u6: gaps (judge - human) 0, 1, 3, 0, -1.
    # exact 2/5 = 0.4; within one 4/5 = 0.8; MAD (0+1+3+0+1)/5 = 1.0; mean difference 3/5 = 0.6.
    result = first_turn_agreement(human, judge, clusters, n_resamples=2000)
    assert (result.n, result.n_human_only, result.n_judge_only) == (5, 1, 1)
    assert result.exact.statistic == pytest.approx(0.4)
    assert result.within_one.statistic == pytest.approx(0.8)
    assert result.mean_absolute_difference.statistic == pytest.approx(1.0)
    assert result.mean_difference.statistic == pytest.approx(0.6)
    # Intervals resample the 4 trajectories (a: gaps 0, 1; b: 3; c: 0; d: -1), so the MAD's bootstrap
    # range is [0 (all c), 3 (all b)] and the interval lies inside it around the estimate.
    ci = result.mean_absolute_difference.confidence_interval()
    lo, hi = ci.low, ci.high
    assert 0.0 <= lo < 1.0 < hi <= 3.0
    assert result.exact.details["n_clusters"] == 4
    empty = first_turn_agreement([nan], [1.0], ["a"], n_resamples=200)
    assert empty.n == 0 and empty.exact.undefined_reason.startswith("no unit has both")


def test_study_first_turns_joins_key_humans_and_judge():
    from types import SimpleNamespace

    import pandas as pd

    from agreement.panels import study_first_turns

    # Study frames as agreement.study_io.load_study reads them: task -> unit -> trajectory.
    key = pd.DataFrame({"task_id": ["t1", "t2", "t3"], "unit_id": ["u1", "u2", "u3"],
                        "trajectory_id": ["a", "a", "b"]})
    human = pd.DataFrame({"task_id": ["t1", "t1", "t1", "t2", "t2", "t3", "t3"],
                          "annotator": ["x", "y", "z", "x", "y", "x", "y"],
                          "role": ["independent"] * 6 + ["adjudication"],
                          "first_turn": [2, 4, 3, 5, None, None, 1]})
    judge = pd.DataFrame({"unit_id": ["u1", "u2", "u3", "u1"], "judge": ["j", "j", "j", "j"],
                          "sample_index": [0, 0, 0, 1], "first_turn": [3, 7, 2, 9]})
    # Human turns: u1 median(2, 4, 3) = 3; u2 median(5) = 5; u3 none (the adjudication is kept apart).
    # Judge (sample 0): u1 3, u2 7, u3 2 -> both on u1 (gap 0) and u2 (gap 2); u3 judge only.
    result = study_first_turns(SimpleNamespace(key=key, human=human, judge=judge), "j", n_resamples=200)
    assert (result.n, result.n_human_only, result.n_judge_only) == (2, 0, 1)
    assert result.exact.statistic == pytest.approx(0.5) and result.mean_absolute_difference.statistic == pytest.approx(1.0)
    assert study_first_turns(SimpleNamespace(key=key, human=human.drop(columns="first_turn"), judge=judge),
                             "j").startswith("no first recognition turns")
