"""Family-bias audit: planted bias found, null p uniform, exact p by enumeration, real parsers."""

from __future__ import annotations

import json
import math
import re
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from agreement.audit import (
    OBSERVATIONAL_NOTE,
    audit,
    holm,
    partial_correlation,
    permutation_contrast,
    rank_preservation,
)
from samples.errors import InputError


def simulate(seed, *, planted=0.0, families=("a", "a", "a", "b", "b", "b", "c", "c", "c", "d", "d", "d"),
             units=60):
    """Units per model; the judge copies the human label with 10% noise, plus false positives on family 'a'."""
    rng = np.random.default_rng(seed)
    rows = []
    for m, fam in enumerate(families):
        p = rng.uniform(0.2, 0.6)
        for u in range(units):
            h = rng.random() < p
            j = h if rng.random() < 0.9 else not h
            if fam == "a" and not h and rng.random() < planted:
                j = True
            rows.append(dict(unit=f"{m}-{u}", cluster=f"{m}-{u // 3}", model=f"m{m:02d}", family=fam,
                             judge="yes" if j else "no", human="yes" if h else "no"))
    return pd.DataFrame(rows)


def test_planted_bias_is_detected():
    result = audit(simulate(1, planted=0.6), positive=["yes"], n_resamples=500)
    by_family = {c.family: c for c in result.contrasts}
    assert by_family["a"].statistic > 0.15
    assert by_family["a"].p_value <= 0.01 and by_family["a"].p_holm <= 0.05
    assert by_family["a"].method.startswith("exact enumeration of all 220")
    assert by_family["a"].partial_r_family > 0.5
    assert result.note == OBSERVATIONAL_NOTE and "observational" in result.note


def test_exact_p_by_independent_enumeration():
    bias = np.array([0.21, -0.03, 0.15, 0.02, -0.08, 0.11])
    mask = np.array([True, False, True, False, False, False])
    observed, p, method, n = permutation_contrast(bias, mask, n_permutations=1000, seed=1)
    # Enumerate all 720 orderings of the family labels (each distinct assignment appears 2!*4! times).
    stats = []
    for perm in permutations(range(6)):
        m = mask[list(perm)]
        stats.append(bias[m].mean() - bias[~m].mean())
    stats = np.array(stats)
    assert observed == pytest.approx(bias[mask].mean() - bias[~mask].mean())
    assert p == pytest.approx(np.mean(np.abs(stats) >= abs(observed) - 1e-12))
    assert n == 15 and "exact" in method


def test_null_p_values_are_uniform_over_seeds():
    """Exact permutation p under the null: P(p <= a) <= a (up to binomial noise) at several a."""
    ps = []
    for seed in range(400):
        bias = np.random.default_rng(seed).normal(0, 0.05, 10)
        ps.append(permutation_contrast(bias, np.arange(10) < 3, n_permutations=1000, seed=seed)[1])
    ps = np.array(ps)
    for a in (0.05, 0.1, 0.25, 0.5):
        assert np.mean(ps <= a) <= a + 2.6 * math.sqrt(a * (1 - a) / ps.size)
        assert np.mean(ps <= a) >= a - 2.6 * math.sqrt(a * (1 - a) / ps.size) - 1 / 120
    # Monte Carlo branch with the plus-one correction (C(30, 10) is too many to enumerate).
    mc = [permutation_contrast(np.random.default_rng(s).normal(0, 1, 30), np.arange(30) < 10,
                               n_permutations=500, seed=s)[1] for s in range(200)]
    assert min(mc) >= 1 / 501 and np.mean(np.array(mc) <= 0.1) <= 0.1 + 2.6 * math.sqrt(0.09 / 200)


def test_no_planted_bias_contrast_not_significant():
    result = audit(simulate(5, planted=0.0), positive=["yes"], n_resamples=500)
    assert all(c.p_holm > 0.05 for c in result.contrasts)


def test_holm_matches_statsmodels():
    p = np.array([0.01, 0.04, 0.03, 0.2, 0.005])
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])


def test_partial_correlation_matches_precision_matrix_formula():
    rng = np.random.default_rng(2)
    z = rng.normal(size=40)
    x = z + rng.normal(size=40)
    y = 0.5 * x - z + rng.normal(size=40)
    precision = np.linalg.inv(np.corrcoef(np.vstack([y, x, z])))
    expected = -precision[0, 1] / math.sqrt(precision[0, 0] * precision[1, 1])
    assert partial_correlation(y, x, z) == pytest.approx(expected)


def test_rank_preservation_hand_example():
    # Ranks (descending) judge 4,3,2,1 vs human 3,4,2,1: sum d^2 = 2 -> rho = 1 - 6*2/(4*15) = 0.8.
    ranks = rank_preservation(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.2, 0.1, 0.3, 0.4]))
    assert ranks.spearman == pytest.approx(0.8)
    assert ranks.kendall == pytest.approx(4 / 6)  # 5 concordant, 1 discordant pair
    assert ranks.max_rank_shift == 1.0
    assert ranks.ratio_judge == pytest.approx(0.4 / 0.1) and ranks.ratio_human == pytest.approx(0.4 / 0.1)
    assert ranks.pearson == pytest.approx(stats.pearsonr([0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.3, 0.4]).statistic)
    # Hand: deviations (-.15,-.05,.05,.15) vs (-.05,-.15,.05,.15): sxy = .04, sxx = syy = .05 -> r = 0.8.
    assert ranks.pearson == pytest.approx(0.8)
    flat = rank_preservation(np.array([0.2, 0.2, 0.2]), np.array([0.1, 0.2, 0.3]))
    assert math.isnan(flat.pearson) and "pearson" in flat.reasons
    zero = rank_preservation(np.array([0.0, 0.2, 0.3]), np.array([0.1, 0.2, 0.3]))
    assert math.isnan(zero.ratio_judge) and "ratio_judge" in zero.reasons


def test_error_matrix_flags_self_family_and_counts_errors():
    rows = []
    # judge "gpt" (family openai) on openai responses: 2 negatives, 1 false positive; 2 positives, 0 missed.
    for i, (h, j) in enumerate([("no", "yes"), ("no", "no"), ("yes", "yes"), ("yes", "yes")]):
        rows.append(dict(unit=f"o{i}", cluster=f"o{i}", model="gpt-x", family="openai", judge=j, human=h,
                         judge_name="gpt"))
    # on anthropic responses: 1 negative (correct), 2 positives, 1 missed.
    for i, (h, j) in enumerate([("no", "no"), ("yes", "no"), ("yes", "yes")]):
        rows.append(dict(unit=f"a{i}", cluster=f"a{i}", model="claude-x", family="anthropic", judge=j, human=h,
                         judge_name="gpt"))
    result = audit(pd.DataFrame(rows), positive=["yes"], n_resamples=200, judge="gpt",
                   judge_families={"gpt": "openai"})
    cells = {(c.judge_family, c.response_family): c for c in result.error_matrix}
    assert cells[("openai", "openai")].self_family and not cells[("openai", "anthropic")].self_family
    assert cells[("openai", "openai")].false_positive_rate.statistic == pytest.approx(1 / 2)
    assert cells[("openai", "openai")].false_negative_rate.statistic == 0.0
    assert cells[("openai", "anthropic")].false_negative_rate.statistic == pytest.approx(1 / 2)


def test_pooled_score_difference_over_all_units():
    # Model x: judge yes,yes,no vs human yes,no,no (+1 false positive); model y: judge no,no vs human yes,no
    # (-1 missed); an unscored row does not count. Pooled over the 5 scored units: (1 - 1) / 5 = 0, while the
    # per-model biases are +1/3 and -1/2. Unit clusters -> the bootstrap interval straddles 0.
    rows = [dict(unit=f"x{i}", cluster=f"x{i}", model="x", family="a", judge=j, human=h)
            for i, (j, h) in enumerate([("yes", "yes"), ("yes", "no"), ("no", "no")])]
    rows += [dict(unit=f"y{i}", cluster=f"y{i}", model="y", family="b", judge=j, human=h)
             for i, (j, h) in enumerate([("no", "yes"), ("no", "no"), (None, "yes")])]
    result = audit(pd.DataFrame(rows), positive=["yes"], n_resamples=500)
    pooled = result.pooled_difference
    assert pooled.statistic == pytest.approx(0.0) and pooled.n == 5
    assert pooled.ci_low < 0 < pooled.ci_high
    # The model-x units alone: judge 2 yes vs human 1 yes out of 3 -> +1/3.
    only_x = audit(pd.DataFrame(rows[:3]), positive=["yes"], n_resamples=200).pooled_difference
    assert only_x.statistic == pytest.approx(1 / 3)
    assert audit(pd.DataFrame(rows), positive=["yes"], n_resamples=500).to_dict()["pooled_difference"] \
        == result.to_dict()["pooled_difference"]


def test_unscored_judge_rows_are_counted_not_scored():
    frame = simulate(3, units=20)
    frame.loc[frame.index[:7], "judge"] = None
    result = audit(frame, positive=["yes"], n_resamples=200)
    assert result.unscored == 7 and sum(m.unscored for m in result.models) == 7
    assert sum(m.n for m in result.models) == len(frame) - 7


def strict(raw):
    """The Aggarwal strict parser: only an explicit 'DECISION: ANSWER|DECLINE' line counts."""
    match = re.search(r"DECISION:\s*(ANSWER|DECLINE)\b", raw or "")
    return match.group(1) if match else None


def semantic(raw):
    """The semantic parser: DECISION/RESPONSE prefixes or a bare leading label; any other
    decision (CALL_TOOL) is non-commitment (the paper's any-ANSWER definition)."""
    if not raw:
        return None
    match = re.search(r"(?:(?:DECISION|RESPONSE)\s*:\s*|<answer>\s*)\**\s*(ANSWER|DECLINE|CALL_TOOL)\b", raw)
    if not match:
        return None
    return "ANSWER" if match.group(1) == "ANSWER" else "DECLINE"


def test_aggarwal_strict_vs_semantic_parser_per_family(shared):
    rows = json.loads((shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json").read_text())
    frame = pd.DataFrame([dict(unit=f"{r['model']}|{r['id']}", cluster=r["id"], model=r["model"],
                               family=r["model"].split("/")[0], judge=strict(r["raw"]), human=semantic(r["raw"]))
                          for r in rows])
    result = audit(frame, positive=["ANSWER"], n_resamples=1000)
    # Independent count: rows the semantic parser reads but the strict one does not.
    expected_unscored = frame[frame["human"].notna()].groupby("model")["judge"].apply(lambda s: int(s.isna().sum()))
    assert {m.model: m.unscored for m in result.models} == expected_unscored.to_dict()
    by_model = {m.model: m for m in result.models}
    assert by_model["deepseek/deepseek-v3.2"].unscored >= 20  # CALL_TOOL outputs the strict parser cannot read
    assert by_model["x-ai/grok-4.3"].unscored == 0
    # Where the strict parser reads a decision it agrees with the semantic one on commitment:
    # no bias for any model, so no family contrast, and the model ranking is preserved.
    assert all(m.bias.statistic == 0.0 for m in result.models if m.bias.defined)
    assert all(c.statistic == pytest.approx(0.0) and c.p_value == 1.0 for c in result.contrasts if not c.undefined_reason)
    assert result.ranks.max_rank_shift == 0.0
    # The committed (ANSWER) rate per model, from the semantic parser, matches a direct count.
    direct = frame[frame["judge"].notna() & frame["human"].notna()].groupby("model")["human"].apply(
        lambda s: float((s == "ANSWER").mean()))
    for model, value in direct.items():
        assert by_model[model].human_score.statistic == pytest.approx(value)


def test_audit_cli_on_a_table(tmp_path, capsys):
    from apps.cli import main

    frame = simulate(2, planted=0.6)
    path = tmp_path / "audit.csv"
    frame.to_csv(path, index=False)
    assert main(["audit", "--table", str(path), "--positive", "yes", "--n-resamples", "200", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert {c["family"] for c in body["contrasts"]} == {"a", "b", "c", "d"}
    assert "observational" in body["note"] and (tmp_path / "audit.audit.json").is_file()
    frame.drop(columns="human").to_csv(path, index=False)
    assert main(["audit", "--table", str(path), "--positive", "yes"]) == 2
    assert "missing column(s) ['human']" in capsys.readouterr().err


@pytest.mark.slow
def test_full_audit_null_p_values_are_uniform_over_seeds():
    """The whole audit on constructed data without planted bias: family-a p is (super-)uniform."""
    ps = np.array([next(c.p_value for c in audit(simulate(seed, units=30), positive=["yes"], n_resamples=100).contrasts
                        if c.family == "a") for seed in range(200)])
    for a in (0.05, 0.1, 0.25, 0.5):
        assert np.mean(ps <= a) <= a + 2.6 * math.sqrt(a * (1 - a) / ps.size)
    assert np.mean(ps <= 0.5) >= 0.5 - 2.6 * math.sqrt(0.25 / ps.size) - 0.05


def _labels(kind: str, rows: list[tuple[str, str, str | None]]) -> pd.DataFrame:
    """A labels table (agreement.study_io.labels_table's columns that the check reads): unit, rater, label, kind."""
    return pd.DataFrame([{"unit": u, "rater": r, "label": x, "kind": kind} for u, r, x in rows])


def test_positive_labels_are_checked_against_the_judged_units_scheme():
    from agreement.study_audit import _check_positive

    table = _labels("response", [("u1", "j", "ABSTAIN"), ("u1", "ann", "HEDGE"), ("u2", "j", None)])
    _check_positive(table, "j", ["ABSTAIN", "CONFIDENT_WRONG"])  # ehq4 labels, used or not
    with pytest.raises(InputError) as caught:
        _check_positive(table, "j", ["ABSTAIN", "NOT_A_LABEL"])
    assert str(caught.value) == ("positive label 'NOT_A_LABEL': not a label of judge 'j''s units (scheme 'ehq4'); "
                                 "allowed: ['ABSTAIN', 'HEDGE', 'CONFIDENT_CORRECT', 'CONFIDENT_WRONG']")
    # labels imported as found (scheme = "any" at import) are labels of those units
    imported = _labels("response", [("u1", "j", "maybe"), ("u1", "ann", "ABSTAIN")])
    _check_positive(imported, "j", ["maybe"])


def test_a_label_free_scheme_accepts_any_positive():
    import dataclasses

    from agreement.study_audit import _check_positive
    from samples import kinds, schemes

    # Straight into the registries (register_scheme and register_kind refuse a scheme without two labels).
    schemes.SCHEMES.register("free", schemes.LabelScheme(name="free", labels=(), positive=None,
                                                         description="no closed label set"))
    kinds._KINDS.register("free_response", dataclasses.replace(kinds.get_kind("response"), name="free_response",
                                                               scheme="free"))
    try:
        _check_positive(_labels("free_response", [("u1", "j", "x"), ("u1", "ann", "y")]), "j", ["anything at all"])
    finally:
        kinds._KINDS.unregister("free_response")
        schemes.SCHEMES.unregister("free")
