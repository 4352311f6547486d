"""Self-preference cells: bootstrap p-values, Holm across the table, the auditor's one line."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from agreement.preference import cell_flag, multiplicity_note, preference_bias, summary_line

FAMILIES = {"open-1": "openai", "open-2": "openai", "meta-1": "meta", "meta-2": "meta"}


def comparisons(seed: int = 7, questions: int = 40) -> pd.DataFrame:
    """Pairs of one openai and one meta answer (order alternating); two humans label at random; judge gpt-x
    always prefers the openai answer (planted self-preference), judge llama-x labels at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        a, b = ("open-1", "meta-1") if q % 2 else ("meta-2", "open-2")
        unit = f"{q}__{a}__{b}__1"
        base = dict(unit=unit, cluster=str(q), model_a=a, model_b=b)
        for human in ("h1", "h2"):
            rows.append({**base, "source": "human", "rater": human,
                         "label": rng.choice(["model_a", "model_b", "tie"])})
        rows.append({**base, "source": "judge", "rater": "gpt-x",
                     "label": "model_a" if FAMILIES[a] == "openai" else "model_b"})
        rows.append({**base, "source": "judge", "rater": "llama-x", "label": rng.choice(["model_a", "model_b"])})
    return pd.DataFrame(rows)


def cells(**settings):
    return preference_bias(comparisons(**settings), first="model_a", second="model_b", first_label="model_a",
                           second_label="model_b", tie_label="tie", model_families=FAMILIES,
                           judge_families={"gpt-x": "openai", "llama-x": "meta"}, n_resamples=2000, level=0.95)


def test_holm_across_the_cells_matches_statsmodels():
    result = cells()
    assert len(result) == 4  # two judges x two response families
    p = np.array([c.p_value for c in result])
    reject, adjusted, _, _ = multipletests(p, alpha=0.05, method="holm")
    assert np.allclose([c.p_holm for c in result], adjusted, rtol=0, atol=1e-12)
    # the planted cell: a bootstrap that never reaches 0 gives the smallest p, 2 / (B + 1)
    planted = next(c for c in result if c.judge == "gpt-x" and c.response_family == "openai")
    assert planted.p_value == 2 / 2001 and planted.ci_low > 0
    assert reject[result.index(planted)]


def test_the_p_value_is_the_intervals_dual():
    """A cell's interval excludes 0 exactly when its two-sided bootstrap p is below 1 - level (here and on seeds
    where some cell sits near 0)."""
    for seed in range(6):
        for c in cells(seed=seed, questions=24):
            assert (c.ci_low > 0 or c.ci_high < 0) == (c.p_value < 0.05), (seed, c)


def test_the_line_names_the_self_preference_that_survives_holm():
    result = cells()
    line = summary_line(result, 0.95)
    assert line.startswith("self-preference: shown for gpt-x (Holm p ")
    # both of gpt-x's cells exclude 0 (it prefers openai, so it disfavours meta): the line lists both
    assert "gpt-x->openai +" in line and "gpt-x->meta -" in line
    assert "about 0.2 expected by chance at 95%" in line  # 4 cells x 0.05
    planted = next(c for c in result if c.self_family and c.judge == "gpt-x")
    assert cell_flag(planted, 0.95).startswith("interval excludes 0; holds after Holm")
    assert multiplicity_note(result, 0.95).startswith("4 cells at 95%: about 0.2 expected to exclude 0")


def test_nothing_measurable_says_so():
    frame = comparisons()
    frame = frame[frame["rater"] != "gpt-x"]
    result = preference_bias(frame, first="model_a", second="model_b", first_label="model_a",
                             second_label="model_b", tie_label="tie", model_families=FAMILIES,
                             judge_families={"llama-x": "mistral"}, n_resamples=500)
    assert not any(c.self_family for c in result)
    assert summary_line(result, 0.95).startswith("self-preference: not measurable")
    assert all(math.isfinite(c.p_holm) for c in result)
