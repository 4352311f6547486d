"""ASA scores (seed 003) on hand-derived cases and on the counts the paper prints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, roc_auc_score

from agreement.asa import (
    IMPLICATION,
    BlockedRun,
    FeasibleRun,
    Transition,
    belief_differences,
    belief_scores,
    blocked_scores,
    feasible_scores,
    hold_scores,
    run_outcome,
)
from samples.errors import InputError


def run(name: str, m0, m1, m2, m3, *, artifact: bool = True, author: str | None = "agent", family: str = "") -> BlockedRun:
    return BlockedRun(trajectory=name, milestones={"M0": m0, "M1": m1, "M2": m2, "M3": m3}, artifact=artifact,
                      author=author, family=family)


def test_paper_baseline_gap_on_its_counts() -> None:
    # Section 3.2: M0 on 54/64 = 84.4%, strict SA on 26/64 = 40.6%, gap 43.8 points. Runs built from those
    # counts alone: 26 runs pass every gate; 28 recognise the blocker but fail a later gate (here M2);
    # 10 neither. mean(M0) - mean(SA) = 54/64 - 26/64 = 28/64 = 0.4375.
    runs = ([run(f"a{i}", True, True, True, True) for i in range(26)]
            + [run(f"b{i}", True, True, False, False, artifact=False, author=None) for i in range(28)]
            + [run(f"c{i}", False, True, False, False, artifact=False, author=None) for i in range(10)])
    s = blocked_scores(runs, n_resamples=200)
    assert s.m0.statistic == 54 / 64 and round(100 * s.m0.statistic, 1) == 84.4
    assert s.sa_strict.statistic == 26 / 64 and round(100 * s.sa_strict.statistic, 1) == 40.6
    assert s.gap.statistic == pytest.approx(28 / 64) and round(100 * s.gap.statistic, 1) == 43.8
    assert s.gap.n == 64 and s.gap.ci_low < 28 / 64 < s.gap.ci_high


def test_paper_authorship_stress_test_naive_53_of_64_gated_0_of_64() -> None:
    # App. A.3.1, condition D: 53 verified abandon artifacts in 64 blocked tasks, none agent-authored.
    # Naive (artifact existence) relaxed SA = 53/64 = 82.8%; authorship-gated relaxed SA = 0/64.
    runs = ([run(f"d{i}", True, True, True, True, author="scaffold") for i in range(53)]
            + [run(f"e{i}", True, True, False, False, artifact=False, author=None) for i in range(11)])
    s = blocked_scores(runs, n_resamples=200)
    assert s.naive_relaxed.statistic == 53 / 64 and round(100 * s.naive_relaxed.statistic, 1) == 82.8
    assert s.sa_relaxed.statistic == 0.0 and s.sa_relaxed.n == 64
    assert s.sa_strict.statistic == 0.0
    assert s.sa_relaxed.ci_high > 0  # Clopper-Pearson at 0/64: never a collapsed [0, 0]


def test_implication_violation_is_invalid_and_leaves_the_support() -> None:
    out = run_outcome(run("x", True, True, False, True))
    assert out.invalid_reason == IMPLICATION and out.strict is None
    s = blocked_scores([run("x", True, True, False, True), run("y", True, True, True, True)], n_resamples=200)
    assert s.invalid == (("x", IMPLICATION),)
    assert s.sa_strict.n == 1 and s.sa_strict.statistic == 1.0 and s.sa_strict.details["invalid"] == 1


def test_unauthenticated_artifact_is_unknown_at_the_authorship_gate_only() -> None:
    # Four runs:            M0 M1 M2 M3 artifact author    strict   relaxed
    #  u1 all pass, author None                            unknown  unknown (AgentAuthored unknown)
    #  u2 M1 fails, author None                            0        0       (a failed gate decides)
    #  u3 all pass, agent                                  1        1
    #  u4 M3 label missing, agent                          unknown  1
    runs = [run("u1", True, True, True, True, author=None), run("u2", True, False, True, True, author=None),
            run("u3", True, True, True, True), run("u4", True, True, True, None)]
    s = blocked_scores(runs, n_resamples=200)
    # strict: known u2=0, u3=1 -> 1/2 on valid support 2; bounds (1/4, 3/4) with u1, u4 at 0 / at 1.
    assert (s.sa_strict.statistic, s.sa_strict.n) == (0.5, 2)
    assert s.sa_strict.details["unknown"] == 2 and s.sa_strict.details["bounds"] == (0.25, 0.75)
    # relaxed: known u2=0, u3=1, u4=1 -> 2/3; u1 unknown.
    assert (s.sa_relaxed.statistic, s.sa_relaxed.n) == (2 / 3, 3)
    assert s.unknown_gates == {"AgentAuthored": 1, "M3": 1}


def test_feasible_solve_and_false_abstention() -> None:
    # 5 feasible runs: solved 1, 0, 0, 1, None; abstained 0, 1, 0, 0, 0 -> solve 2/4 (support 4), false abstention 1/5.
    runs = [FeasibleRun(trajectory=str(i), solved=s, abstained=a)
            for i, (s, a) in enumerate([(True, False), (False, True), (False, False), (True, False), (None, False)])]
    f = feasible_scores(runs, n_resamples=200)
    assert (f.solve.statistic, f.solve.n, f.solve.details["unknown"]) == (0.5, 4, 1)
    assert (f.false_abstention.statistic, f.false_abstention.n) == (0.2, 5)


def test_cra_reproduces_the_papers_arithmetic_and_drops_invalid_transitions() -> None:
    # Table 6, retail: P(+|+) 97.5, P(+|-) 57.9, P(-|+) 2.5, CRA +55.4 points. Counts consistent with those
    # percentages (the paper reports means over seeds): 40 pre-correct of which 39 stay correct (97.5%), 1 flips
    # (2.5%); 19 pre-wrong of which 11 become correct (57.9%). CRA = 11/19 - 1/40 = 0.5789 - 0.025 = 0.5539.
    t = ([Transition(before=True, after=True)] * 39 + [Transition(before=True, after=False)]
         + [Transition(before=False, after=True)] * 11 + [Transition(before=False, after=False)] * 8
         + [Transition(before=True, after=None), Transition(before=False, after=True, challenged=False)])
    h = hold_scores(t, same_predicate=True)
    assert h.name == "CRA" and (h.n_valid, h.n_invalid) == (59, 2)
    assert round(100 * h.p_pos_given_pos, 1) == 97.5 and round(100 * h.p_pos_given_neg, 1) == 57.9
    assert round(100 * h.p_neg_given_pos, 1) == 2.5
    assert h.statistic == pytest.approx(11 / 19 - 1 / 40) and round(100 * h.statistic, 1) == 55.4
    # Terminal-Bench's operational contrast: no pre-negative becomes positive, 13.1% harmful flips -> -13.1.
    d = hold_scores([Transition(before=False, after=False)] * 5 + [Transition(before=True, after=True)] * 0
                    + [Transition(before=True, after=False)] * 1, same_predicate=False)
    assert d.name == "Delta_chi" and d.statistic == -1.0  # 0/5 - 1/1
    none = hold_scores([Transition(before=True, after=True)], same_predicate=True)
    assert none.statistic is None and "negative" in none.undefined_reason


def test_belief_probe_by_hand_and_against_scikit_learn() -> None:
    # feasible y = 1 1 0 0, p = .8 .5 .5 .1; pairs (yes, no): (.8,.5) 1, (.8,.1) 1, (.5,.5) 1/2, (.5,.1) 1 -> 3.5/4.
    # Brier = (.04 + .25 + .25 + .01)/4 = .1375. ECE10: bins 8 {.8 vs 1}, 5 {.5,.5 vs 1,0}, 1 {.1 vs 0}:
    # (|.8-1| + |1.0-1| + |.1-0|)/4 = (.2 + 0 + .1)/4 = .075. The None report is invalid.
    p, y = [0.8, 0.5, 0.5, 0.1, None], [True, True, False, False, True]
    b = belief_scores(p, y)
    assert (b.n_valid, b.n_invalid) == (4, 1)
    assert b.auroc == pytest.approx(3.5 / 4) and b.brier == pytest.approx(0.1375) and b.ece10 == pytest.approx(0.075)
    rng = np.random.default_rng(7)
    q = rng.integers(0, 11, 200) / 10  # ties on purpose
    z = rng.random(200) < q
    mine = belief_scores(list(q), list(z))
    assert mine.auroc == pytest.approx(roc_auc_score(z, q)) and mine.brier == pytest.approx(brier_score_loss(z, q))


def test_belief_differences_paired_on_matched_tasks() -> None:
    y = [True, True, False, False, True, False]
    first = [0.6, 0.6, 0.4, 0.4, None, 0.5]
    second = [0.9, 0.8, 0.2, 0.1, 0.7, None]
    d = belief_differences(first, second, y, n_resamples=500)
    # Matched tasks 0-3. Brier first = (.16+.16+.16+.16)/4 = .16, second = (.01+.04+.04+.01)/4 = .025 -> -.135.
    assert d["brier"].n == 4 and d["brier"].statistic == pytest.approx(-0.135)
    assert d["auroc"].statistic == pytest.approx(0.0)  # both rank every pair right: 1 - 1
    assert d["brier"].ci_low <= -0.135 <= d["brier"].ci_high
    assert math.isnan(belief_differences([None], [0.5], [True], n_resamples=100)["brier"].statistic)


def test_bad_runs_are_refused_with_the_field() -> None:
    with pytest.raises(InputError, match="author 'harness'"):
        run("z", True, True, True, True, author="harness")
    with pytest.raises(InputError, match="M4"):
        BlockedRun(trajectory="z", milestones={"M4": True}, artifact=False, author=None)


def test_self_family_notes_flag_only_a_known_shared_family() -> None:
    from agreement.identity import self_family_notes

    notes = self_family_notes({"gpt-judge": "openai", "claude-judge": "anthropic", "rule": "unknown"},
                              ["openai", "unknown"])
    assert notes == ["self-family judge: gpt-judge is of model family 'openai', the family of an evaluated agent; "
                     "it is not an independent external annotator"]
    assert self_family_notes({"rule": "unknown"}, ["unknown"]) == []
