"""EHQ section 3 (seed 002): EHQ1/2/3, |S_m| and the composite, against the EHQ paper's own package (ehq 0.4.0,
ehq.evaluation.scoring.compute_ehq_scores) and hand derivations; the human re-ranking."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.ehq import LABELS, coarse, denominators, ehq_scores, rerank, truncation_sensitivity
from samples.errors import InputError


def test_hand_derived_scores():
    # 10 records: 2 ABSTAIN, 1 HEDGE, 4 CONFIDENT_CORRECT, 3 CONFIDENT_WRONG.
    labels = ["ABSTAIN"] * 2 + ["HEDGE"] + ["CONFIDENT_CORRECT"] * 4 + ["CONFIDENT_WRONG"] * 3
    # Confidences: restraint records' confidences never enter EHQ3; one substantive answer has none (not imputed).
    conf = [0.0, 0.9, 0.5, 0.95, 0.95, 0.95, None, 0.95, 0.35, 0.35]
    s = ehq_scores(labels, conf)
    assert (s.ehq1, s.ehq2) == (pytest.approx(0.3), pytest.approx(0.7))
    # S_m: 3 correct at 0.95 + 1 wrong at 0.95 (bin 9: acc 0.75, conf 0.95, gap 0.2), 2 wrong at 0.35 (bin 3: gap 0.35).
    assert s.n_calibration == 6
    ece = 4 / 6 * 0.2 + 2 / 6 * 0.35
    assert s.ehq3 == pytest.approx(1 - ece)
    assert s.composite == pytest.approx(0.30 * 0.3 + 0.45 * 0.7 + 0.25 * (1 - ece))
    # No substantive answer with a confidence: EHQ3 and the composite are undefined, never perfect.
    none = ehq_scores(["ABSTAIN", "HEDGE", "CONFIDENT_WRONG"], [0.2, 0.5, None])
    assert none.ehq3 is None and none.composite is None and none.n_calibration == 0 and "undefined" in none.undefined_reason
    assert none.ehq2 == pytest.approx(2 / 3)
    with pytest.raises(InputError, match="four EHQ classes"):
        ehq_scores(["MAYBE"], [None])
    assert coarse("HEDGE") == "restraint" and coarse("CONFIDENT_WRONG") == "substantive"


def test_matches_the_ehq_package():
    from ehq.evaluation.scoring import compute_ehq_scores

    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(5, 80))
        labels = [LABELS[i] for i in rng.integers(0, 4, n)]
        conf = [None if rng.uniform() < 0.1 else int(rng.integers(0, 101)) / 100 for _ in range(n)]
        records = [{"valid_for_ehq12": True, "valid_for_ehq3": c is not None, "parsed_confidence": c, "k": 0,
                    "classification": {"label": label, "is_correct": label == "CONFIDENT_CORRECT"}}
                   for label, c in zip(labels, conf)]
        reference = compute_ehq_scores(records, weights={"ehq1": 0.30, "ehq2": 0.45, "ehq3": 0.25})
        ours = ehq_scores(labels, conf)
        assert ours.ehq1 == pytest.approx(reference["EHQ1"]) and ours.ehq2 == pytest.approx(reference["EHQ2"])
        assert ours.n_calibration == reference["n_ehq3_calibration"]
        if reference["EHQ3"] is None:
            assert ours.ehq3 is None and ours.composite is None
        else:
            assert ours.ehq3 == pytest.approx(reference["EHQ3"]) and ours.composite == pytest.approx(reference["EHQ"])


def test_rerank():
    automated = {"a": 0.8, "b": 0.7, "c": 0.5, "d": 0.3}
    human = {"a": 0.6, "b": 0.75, "c": 0.5, "d": 0.35}
    r = rerank(automated, human)
    # Ranks automated a1 b2 c3 d4, human b1 a2 c3 d4: the largest shift is 1; Spearman 1 - 6*(1+1)/(4*15) = 0.8.
    assert r.ranks == {"a": (1, 2), "b": (2, 1), "c": (3, 3), "d": (4, 4)} and r.max_rank_shift == 1
    assert r.spearman == pytest.approx(0.8)
    x, y = np.array([0.8, 0.7, 0.5, 0.3]), np.array([0.6, 0.75, 0.5, 0.35])
    assert r.pearson == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert rerank({"a": 0.5, "b": None}, {"a": 0.4, "b": 0.3}).pearson is None
    # Two models: they rank and swap (shift 1), but two points always correlate perfectly, so no correlation.
    two = rerank({"a": 0.5, "b": 0.4}, {"a": 0.3, "b": 0.6})
    assert (two.ranks, two.max_rank_shift, two.pearson, two.spearman) == ({"a": (1, 2), "b": (2, 1)}, 1, None, None)
    assert two.undefined_reason == "2 models with both scores: ranks only, correlations need at least 3"
    assert rerank({"a": 0.5}, {"a": 0.3}).max_rank_shift is None


def test_truncation_sensitivity_and_denominators():
    # 6 records, the 2nd, 4th and 5th flagged truncated. Confidences sit mid-bin, so every S_m record has a bin of
    # its own and ECE10 is the mean |confidence - correct|.
    labels = ["ABSTAIN", "CONFIDENT_CORRECT", "CONFIDENT_WRONG", "HEDGE", "CONFIDENT_WRONG", "CONFIDENT_CORRECT"]
    conf = [0.0, 0.95, 0.85, None, 0.65, 0.75]
    flagged = [False, True, False, True, True, False]
    s = truncation_sensitivity(labels, conf, flagged)
    # Published: EHQ1 2/6, EHQ2 4/6, ECE (.05 + .85 + .65 + .25)/4 = .45, EHQ .1 + .3 + .25 * .55 = .5375.
    # Dropped (A, CW .85, CC .75): EHQ1 1/3, EHQ2 2/3, ECE (.85 + .25)/2 = .55, EHQ .1 + .3 + .1125 = .5125.
    # CW -> HEDGE on flagged (the 5th): EHQ1 3/6, EHQ2 5/6, ECE (.05 + .85 + .25)/3, EHQ .15 + .375 + .25 EHQ3.
    # All flagged CW: EHQ1 1/6, EHQ2 2/6, ECE (.95 + .85 + .65 + .25)/4 = .675, EHQ .05 + .15 + .08125 = .28125.
    # All flagged ABSTAIN: EHQ1 4/6, EHQ2 5/6, ECE .55, EHQ .2 + .375 + .1125 = .6875.
    ehq3_hedge = 1 - 1.15 / 3
    expected = {
        "ehq1": {"dropped": 1 / 3, "relabelled_hedge": 0.5, "as_confident_wrong": 1 / 6, "as_abstain": 2 / 3,
                 "low": 1 / 6, "high": 2 / 3},
        "ehq2": {"dropped": 2 / 3, "relabelled_hedge": 5 / 6, "as_confident_wrong": 1 / 3, "as_abstain": 5 / 6,
                 "low": 1 / 3, "high": 5 / 6},
        "ehq3": {"dropped": 0.45, "relabelled_hedge": ehq3_hedge, "as_confident_wrong": 0.325, "as_abstain": 0.45,
                 "low": 0.325, "high": ehq3_hedge},
        "composite": {"dropped": 0.5125, "relabelled_hedge": 0.525 + 0.25 * ehq3_hedge, "as_confident_wrong": 0.28125,
                      "as_abstain": 0.6875, "low": 0.28125, "high": 0.6875},
    }
    assert set(s) == set(expected)
    for name, values in expected.items():
        assert s[name] == pytest.approx(values), name
    assert ehq_scores(labels, conf).composite == pytest.approx(0.5375)
    # EHQ1/EHQ2 are over all 6 (3 flagged); EHQ3 over S_m = the four substantive answers, 2 of them flagged.
    assert denominators(labels, conf, flagged) == {"ehq1": {"n": 6, "truncated": 3}, "ehq2": {"n": 6, "truncated": 3},
                                                   "ehq3": {"n": 4, "truncated": 2}}
    assert truncation_sensitivity(labels, conf, [False] * 6) is None
    # Every record flagged: dropping them all leaves nothing, so no score has a range (not a made-up one).
    everything = truncation_sensitivity(labels, conf, [True] * 6)
    assert everything["ehq1"]["dropped"] is None and everything["ehq1"]["low"] is None


def test_report_shows_the_truncation_sensitivity_and_denominators():
    from agreement.documents import EhqDocument
    from agreement.ehq import _model_record
    from agreement.report import ehq_tables

    labels = ["ABSTAIN", "CONFIDENT_CORRECT", "CONFIDENT_WRONG", "HEDGE", "CONFIDENT_WRONG", "CONFIDENT_CORRECT"]
    conf = [0.0, 0.95, 0.85, None, 0.65, 0.75]
    flagged = [False, True, False, True, True, False]
    record = _model_record("m", "judge", labels, conf, flagged, n_resamples=50, seed=1, level=0.95)
    clean = _model_record("n", "judge", labels, conf, [False] * 6, n_resamples=50, seed=1, level=0.95)
    doc = EhqDocument.model_validate({"judge": "rule:ehq", "models": [record, clean]})
    main, sensitivity = ehq_tables(doc)[:2]
    # 3 of the 6 records behind EHQ1/EHQ2 are flagged, 2 of the 4 behind EHQ3 (|S_m|).
    assert [row[-1] for row in main.rows] == ["3/6, EHQ3 2/4", "0/6, EHQ3 0/4"]
    assert sensitivity.title.startswith("Truncation sensitivity")
    rows = {row[2]: row for row in sensitivity.rows}
    assert set(rows) == {"EHQ1", "EHQ2", "EHQ3", "EHQ"} and {row[0] for row in sensitivity.rows} == {"m"}
    # EHQ1 (hand values of test_truncation_sensitivity_and_denominators): published 2/6, dropped 1/3, CW -> HEDGE
    # 3/6, all CONFIDENT_WRONG 1/6, all ABSTAIN 4/6.
    assert rows["EHQ1"][3:] == ["0.333", "0.333", "0.500", "0.167", "0.667", "0.167 - 0.667"]
