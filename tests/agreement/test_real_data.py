"""Panels on real public data, checked against hand computations and independent libraries.

MAD (MAST, mast-lint): 14 real multi-agent traces x failure modes, three human votes
each and an LLM judge's findings. The human-human and judge-vs-majority panels are
checked against plain-Python computations from the raw JSON written out below.

alttest (Calderon et al., ACL 2025): ten real annotation datasets with 3 to 50
annotators (missing ratings) and four to six LLM judges. Every panel runs on every
dataset and is cross-checked against statsmodels, scikit-learn and krippendorff.
Free-text labels (kilogram: "a bird in flight", "bird", ...) have no categories to
agree on; accord compares labels as exact strings, so the test treats each distinct
normalised answer (casefolded, whitespace collapsed, trailing punctuation and a
leading article dropped) as one nominal category: agreement then means "gave the
same name", a deliberately strict reading that the checks below hold to.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agreement.panels import MAJORITY, PanelSettings, panel_report
from agreement.table import load_labels

ALTTEST = ("10k_prompts", "cebab_aspects", "cebab_stars", "framing", "kilogram", "lesion", "lgbteen", "mtbench",
           "summeval", "wax")
ORDINAL = {"10k_prompts", "cebab_stars", "summeval", "lesion"}
FREE_TEXT = {"kilogram"}
# kilogram has 993 tangrams and 4,124 distinct normalised answers. The engine's per-pattern statistics
# for weighted agreement cost O(patterns x q^2) even with identity weights (about 15 s per coefficient
# on the full set), so the free-text check runs on the first 50 tangrams (sorted ids; q about 300).
FREE_TEXT_UNITS = 50
ANALYTIC = PanelSettings(n_resamples=0)
TOL = 1e-9


# ---------------------------------------------------------------- MAD ----

@pytest.fixture(scope="module")
def mad(shared: Path) -> list[dict]:
    return json.loads((shared / "data/mad_mast_lint/evals/raw_findings.json").read_text())


def _mad_items(traces: list[dict]) -> list[tuple[str, str, list[bool], bool]]:
    """(trace, failure mode, three human votes, judge fired) for every trace x mode."""
    return [(t["gold"]["trace_id"], mode, votes, mode in t["report"]["modes_fired"])
            for t in traces for mode, votes in t["gold"]["votes"].items()]


def _mad_table(items) -> pd.DataFrame:
    rows = []
    for trace, mode, votes, fired in items:
        unit = f"{trace}/{mode}"
        rows += [(unit, f"annotator_{k}", "yes" if v else "no", trace) for k, v in enumerate(votes)]
        rows.append((unit, "judge", "yes" if fired else "no", trace))
    return pd.DataFrame(rows, columns=["unit", "rater", "label", "trace"])


def _hand_human_panel(votes: list[list[bool]]) -> dict[str, float]:
    """Three raters, two categories, no missing votes; formulas written out.

    mean pairwise raw = mean over the 3 annotator pairs of the share of items they agree on.
    Fleiss (1971): P_i = sum_k n_ik (n_ik - 1) / (m (m - 1)); Pbar = mean P_i; p_k = sum_i n_ik / (N m);
        Pe = sum_k p_k^2; kappa = (Pbar - Pe) / (1 - Pe).
    Gwet AC1 (2008): pa = Pbar; pe = sum_k p_k (1 - p_k) / (q - 1) with q = 2; (pa - pe) / (1 - pe).
    Krippendorff alpha (nominal): coincidences o_ck = sum_u (pairs c,k within u) / (m_u - 1);
        n_c = sum_k o_ck; alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k.
    """
    n, m = len(votes), 3
    pairs = [(0, 1), (0, 2), (1, 2)]
    raw = sum(sum(v[a] == v[b] for v in votes) / n for a, b in pairs) / 3
    yes = [sum(v) for v in votes]
    p_i = [(y * (y - 1) + (m - y) * (m - y - 1)) / (m * (m - 1)) for y in yes]
    pbar = sum(p_i) / n
    p_yes = sum(yes) / (n * m)
    pe_fleiss = p_yes**2 + (1 - p_yes) ** 2
    pe_ac1 = (p_yes * (1 - p_yes) + (1 - p_yes) * p_yes) / (2 - 1)
    # coincidence matrix: within a unit with y yes and m - y no votes, ordered pairs (yes, no) = y (m - y)
    o_yes_no = sum(y * (m - y) for y in yes) / (m - 1)
    o_yes_yes = sum(y * (y - 1) for y in yes) / (m - 1)
    o_no_no = sum((m - y) * (m - y - 1) for y in yes) / (m - 1)
    n_yes, n_no = o_yes_yes + o_yes_no, o_no_no + o_yes_no
    total = n_yes + n_no
    alpha = 1 - (total - 1) * (2 * o_yes_no) / (2 * n_yes * n_no)
    return {"raw": raw, "fleiss_kappa": (pbar - pe_fleiss) / (1 - pe_fleiss), "percent_agreement": pbar,
            "gwet_ac1": (pbar - pe_ac1) / (1 - pe_ac1), "krippendorff_alpha": alpha}


def _hand_pair(a: list[bool], b: list[bool]) -> dict[str, float]:
    """Two raters, yes/no: raw agreement, Cohen's kappa, Gwet's AC1, Byrt-Bishop-Carlin indices.

    kappa: pe = pa_yes pb_yes + pa_no pb_no.  AC1: pi = (pa_yes + pb_yes) / 2, pe = 2 pi (1 - pi).
    PI = |both yes - both no| / n; BI = |a yes b no - a no b yes| / n (reported as absolute values).
    """
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe_k = pa * pb + (1 - pa) * (1 - pb)
    pi = (pa + pb) / 2
    pe_g = 2 * pi * (1 - pi)
    both_yes = sum(x and y for x, y in zip(a, b))
    both_no = sum(not x and not y for x, y in zip(a, b))
    a_only = sum(x and not y for x, y in zip(a, b))
    b_only = sum(y and not x for x, y in zip(a, b))
    return {"percent_agreement": po, "cohen_kappa": (po - pe_k) / (1 - pe_k), "gwet_ac1": (po - pe_g) / (1 - pe_g),
            "pi": abs(both_yes - both_no) / n, "bi": abs(a_only - b_only) / n, "a_yes_b_no": a_only,
            "a_no_b_yes": b_only, "both_yes": both_yes, "both_no": both_no}


def test_mad_panels_match_the_hand_computation(mad):
    items = _mad_items(mad)
    assert len(items) == 184  # README: 184 trace x mode items
    data = load_labels(_mad_table(items), cluster="trace")
    report = panel_report(data, judges=["judge"], tie_policy="exclude", settings=ANALYTIC)

    votes = [v for _, _, v, _ in items]
    hand = _hand_human_panel(votes)
    human = report.human_panel
    assert human.n_units == 184 and human.n_pairable == 184 and human.n_missing == 0
    assert human.mean_pairwise_agreement == pytest.approx(hand["raw"], abs=TOL)
    for name in ("percent_agreement", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha"):
        assert human.results[name].statistic == pytest.approx(hand[name], abs=TOL), name
    # beside Fleiss' kappa: Byrt-Bishop-Carlin indices averaged over the three annotator pairs
    pairs = [_hand_pair([v[a] for v in votes], [v[b] for v in votes]) for a, b in ((0, 1), (0, 2), (1, 2))]
    signed = [(p["both_yes"] - p["both_no"]) / 184 for p in pairs]
    assert abs(human.prevalence_index) == pytest.approx(abs(sum(signed) / 3), abs=TOL)
    assert human.bias_index == pytest.approx(sum(p["bi"] for p in pairs) / 3, abs=TOL)

    # Three votes on a binary label never tie; the majority must equal the dataset's own `present` field.
    majority = [sum(v) >= 2 for v in votes]
    present = [t["gold"]["present"][mode] for t in mad for mode in t["gold"]["votes"]]
    assert majority == present
    assert report.majority.n_ties == 0 and report.majority.n == 184
    judge = [fired for *_, fired in items]
    pair = _hand_pair(judge, majority)
    vs = report.judges_vs_humans[0].vs_majority
    assert (vs.rater_a, vs.rater_b, vs.n_units) == ("judge", MAJORITY, 184)
    for name in ("percent_agreement", "cohen_kappa", "gwet_ac1"):
        assert vs.results[name].statistic == pytest.approx(pair[name], abs=TOL), name
    kappa = vs.results["cohen_kappa"]
    assert abs(kappa.prevalence_index) == pytest.approx(pair["pi"], abs=TOL)
    assert abs(kappa.bias_index) == pytest.approx(pair["bi"], abs=TOL)
    directional = {(a, b): c for a, b, c in vs.disagreements()}
    expected = {("yes", "no"): pair["a_yes_b_no"], ("no", "yes"): pair["a_no_b_yes"]}
    assert directional == {cell: count for cell, count in expected.items() if count}
    assert vs.confusion.sum() == 184 and np.trace(vs.confusion) == round(pair["percent_agreement"] * 184)

    # judge vs each annotator, and the mean over the three (ISE: "agrees with each annotator on average")
    per = [_hand_pair(judge, [v[k] for v in votes]) for k in range(3)]
    annotators = report.judges_vs_humans[0].vs_annotators
    for k, panel in enumerate(annotators):
        assert panel.rater_b == f"annotator_{k}"
        assert panel.results["cohen_kappa"].statistic == pytest.approx(per[k]["cohen_kappa"], abs=TOL)
    mean = report.judges_vs_humans[0].mean_vs_annotators
    assert mean["percent_agreement"] == pytest.approx(sum(p["percent_agreement"] for p in per) / 3, abs=TOL)

    # reference report: the judge against the majority, precision/recall of "yes" by hand
    ref = report.references[0]
    tp = sum(j and m for j, m in zip(judge, majority))
    yes = next(c for c in ref.per_class if c.label == "yes")
    assert yes.precision == pytest.approx(tp / sum(judge), abs=TOL)
    assert yes.recall == pytest.approx(tp / sum(majority), abs=TOL)
    assert ref.accuracy == pytest.approx(pair["percent_agreement"], abs=TOL)


def test_mad_bootstrap_resamples_whole_traces(mad):
    data = load_labels(_mad_table(_mad_items(mad)), cluster="trace")
    settings = PanelSettings(n_resamples=2_000)
    first = panel_report(data, judges=["judge"], tie_policy="exclude", settings=settings)
    again = panel_report(data, judges=["judge"], tie_policy="exclude", settings=settings)
    kappa = first.human_panel.results["fleiss_kappa"]
    ci = kappa.confidence_interval(0.95, "percentile")
    low, high = ci.low, ci.high
    assert low < kappa.statistic < high
    assert np.array_equal(kappa.bootstrap, again.human_panel.results["fleiss_kappa"].bootstrap)
    iid = panel_report(load_labels(_mad_table(_mad_items(mad))), judges=["judge"], tie_policy="exclude",
                       settings=settings).human_panel.results["fleiss_kappa"]
    # 14 traces of ~13 correlated modes: the cluster bootstrap cannot be the i.i.d. one
    assert not np.array_equal(kappa.bootstrap, iid.bootstrap)


# ------------------------------------------------------------- alttest ----

_ARTICLE = re.compile(r"^(a|an|the)\s+")


def normalise_free_text(label: str) -> str:
    text = " ".join(label.casefold().split()).rstrip(".!?,;:")
    return _ARTICLE.sub("", text)


def load_alttest(folder: Path) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Long table (unit, rater, label) of humans and LLMs, the human and the LLM rater names."""
    humans = json.loads((folder / "human_annotations.json").read_text())
    llms = json.loads((folder / "llm_annotations.json").read_text())
    free = folder.name in FREE_TEXT
    rows = []
    for group in (humans, llms):
        for rater, labels in group.items():
            for unit, label in labels.items():
                rows.append((unit, rater, normalise_free_text(label) if free else str(label)))
    return pd.DataFrame(rows, columns=["unit", "rater", "label"]), sorted(humans), sorted(llms)


def _hand_majority(codes: np.ndarray) -> np.ndarray:
    out = np.full(codes.shape[0], -1)
    for i, row in enumerate(codes.tolist()):
        ranked = Counter(c for c in row if c >= 0).most_common()
        if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            out[i] = ranked[0][0]
    return out


def _hand_ac1(codes: np.ndarray, q: int) -> float:
    """Gwet (2014) AC1 with missing ratings: pa over units with >= 2 ratings; pi_k over units with >= 1."""
    pa_terms, pi = [], np.zeros(q)
    rated = 0
    for row in codes.tolist():
        present = [c for c in row if c >= 0]
        if not present:
            continue
        rated += 1
        counts = Counter(present)
        for k, c in counts.items():
            pi[k] += c / len(present)
        if len(present) >= 2:
            pa_terms.append(sum(c * (c - 1) for c in counts.values()) / (len(present) * (len(present) - 1)))
    pa = sum(pa_terms) / len(pa_terms)
    pi /= rated
    pe = float((pi * (1 - pi)).sum()) / (q - 1)
    return (pa - pe) / (1 - pe)


@pytest.mark.parametrize("name", ALTTEST)
def test_alttest_panels_agree_with_independent_libraries(shared, name):
    import krippendorff
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import fleiss_kappa

    table, humans, llms = load_alttest(shared / "data/alttest" / name)
    if name in FREE_TEXT:
        table = table[table["unit"].isin(sorted(set(table["unit"]))[:FREE_TEXT_UNITS])]
        humans = sorted(set(table["rater"]) & set(humans))
    data = load_labels(table)
    q = data.n_categories
    settings = ANALYTIC
    if name in FREE_TEXT:
        # Free text: one nominal category per distinct normalised answer (thousands). Cohen's kappa is
        # left out: its per-unit statistics grow with q^2, and with an open vocabulary pe -> 0 so kappa
        # adds nothing to raw agreement; AC1 and alpha stay linear in q.
        assert q == table["label"].nunique() > 200
        settings = PanelSettings(n_resamples=0, pair_coefficients=("percent_agreement", "gwet_ac1"))
    report = panel_report(data, judges=llms, tie_policy="exclude", settings=settings)
    assert sorted(report.humans) == humans

    # human-human: Krippendorff's alpha over all data (krippendorff package handles missing values)
    human_codes = data.select_raters(humans).codes
    rated = (human_codes >= 0).any(axis=1)
    hc = human_codes[rated]
    reliability = np.where(hc >= 0, hc, np.nan).T.astype(float)
    panel = report.human_panel
    expected_alpha = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal",
                                        value_domain=list(range(q)))
    assert panel.results["krippendorff_alpha"].statistic == pytest.approx(expected_alpha, abs=TOL)
    assert panel.results["gwet_ac1"].statistic == pytest.approx(_hand_ac1(hc, q), abs=TOL)
    # Fleiss: statsmodels needs the same number of ratings per unit; check on the units with the modal count
    n_ratings = (hc >= 0).sum(axis=1)
    m = Counter(n_ratings.tolist()).most_common(1)[0][0]
    keep = n_ratings == m
    counts = np.stack([(hc[keep] == k).sum(axis=1) for k in range(q)], axis=1)
    sub = data.select_raters(humans).select_units(np.flatnonzero(rated)[keep])
    from agreement.panels import human_panel

    mine = human_panel(sub, humans, settings=ANALYTIC).results["fleiss_kappa"].statistic
    assert mine == pytest.approx(fleiss_kappa(counts, method="fleiss"), abs=TOL)

    # judge vs majority (majority recomputed here with Counter, ties excluded) and judge-judge
    majority = _hand_majority(human_codes)
    assert np.array_equal(report.majority.codes, majority)
    labels = list(range(q))
    for versus in report.judges_vs_humans:
        judge = data.codes[:, data.rater_index(versus.judge)]
        both = (judge >= 0) & (majority >= 0)
        result = versus.vs_majority.results
        assert versus.vs_majority.n_units == both.sum()
        assert result["percent_agreement"].statistic == pytest.approx((judge[both] == majority[both]).mean(), abs=TOL)
        pair = np.column_stack([judge, majority])
        assert result["gwet_ac1"].statistic == pytest.approx(_hand_ac1(pair, q), abs=TOL), versus.judge
        if name not in FREE_TEXT:
            expected = cohen_kappa_score(judge[both], majority[both], labels=labels)
            assert result["cohen_kappa"].statistic == pytest.approx(expected, abs=TOL), versus.judge
    for a, b in combinations(llms, 2):
        pair = next(p for p in report.judge_pairs[0].pairs if {p.rater_a, p.rater_b} == {a, b})
        ca, cb = data.codes[:, data.rater_index(pair.rater_a)], data.codes[:, data.rater_index(pair.rater_b)]
        both = (ca >= 0) & (cb >= 0)
        assert pair.results["percent_agreement"].statistic == pytest.approx((ca[both] == cb[both]).mean(), abs=TOL)
        if name not in FREE_TEXT:
            expected = cohen_kappa_score(ca[both], cb[both], labels=labels)
            assert pair.results["cohen_kappa"].statistic == pytest.approx(expected, abs=TOL), (a, b)
        assert sum(c for *_, c in pair.disagreements()) == int((ca[both] != cb[both]).sum())


@pytest.mark.parametrize("name", sorted(ORDINAL))
def test_alttest_ordinal_weights_agree_with_independent_libraries(shared, name):
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    table, humans, llms = load_alttest(shared / "data/alttest" / name)
    data = load_labels(table)
    values = np.array([float(c) for c in data.categories])
    assert np.array_equal(values, np.arange(values[0], values[0] + len(values)))  # consecutive: rank = value
    report = panel_report(data, judges=llms, tie_policy="exclude",
                          settings=PanelSettings(weights="quadratic", alpha_level="interval", n_resamples=0))
    hc = data.select_raters(humans).codes
    reliability = np.where(hc >= 0, values[np.maximum(hc, 0)], np.nan).T
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="interval")
    # Gwet's quadratic weights reproduce Krippendorff's interval metric (refs README, item 7)
    assert report.human_panel.results["krippendorff_alpha"].statistic == pytest.approx(expected, abs=TOL)
    pair = report.judge_pairs[0].pairs[0]
    ca, cb = data.codes[:, data.rater_index(pair.rater_a)], data.codes[:, data.rater_index(pair.rater_b)]
    both = (ca >= 0) & (cb >= 0)
    expected = cohen_kappa_score(ca[both], cb[both], labels=list(range(len(values))), weights="quadratic")
    assert pair.results["cohen_kappa"].statistic == pytest.approx(expected, abs=TOL)
    assert math.isfinite(report.judges_vs_humans[0].vs_majority.results["gwet_ac1"].statistic)
