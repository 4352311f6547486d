"""EHQ section 3 (seed 002): EHQ1/2/3, |S_m| and the composite, against the EHQ paper's own package (ehq 0.4.0,
ehq.evaluation.scoring.compute_ehq_scores) and hand derivations; the human re-ranking."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.ehq import LABELS, coarse, ehq_scores, rerank, truncation_bounds
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
    for trial in range(20):
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


def test_truncation_bounds():
    # 4 records, the 2nd and 4th cut off. Worst: both CONFIDENT_WRONG -> EHQ1 1/4 (the ABSTAIN), EHQ2 1 - 3/4;
    # best: both ABSTAIN -> EHQ1 3/4, EHQ2 1 - 1/4 (the remaining CONFIDENT_WRONG).
    labels = ["ABSTAIN", "CONFIDENT_CORRECT", "CONFIDENT_WRONG", "HEDGE"]
    bounds = truncation_bounds(labels, [False, True, False, True])
    assert bounds == {"ehq1": [0.25, 0.75], "ehq2": [0.25, 0.75]}
    assert truncation_bounds(labels, [False] * 4) == {"ehq1": None, "ehq2": None}
