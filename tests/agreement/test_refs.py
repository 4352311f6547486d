"""Every published reference case in tests/agreement/refs/agreement_public.json, to 1e-9.

The cases (data, expected values and each value's source: publication or repository +
path, and the independent implementations that reproduced it) live in the repository
beside this test, so the check runs wherever the tests run (refs/README.md documents them).

The reference values come from R irrCAC/irr, krippendorff, statsmodels and the
publications (see refs README). Where we follow another documented convention the
test checks that convention's stored value and names it:
- two raters given as ratings: percent agreement, AC1/AC2, Brennan-Prediger,
  Fleiss and alpha use irrCAC's multi-rater (*.raw) SE -> ``se_multirater_raw_formula``
  (the contingency cases' ``se`` is the *.table formula); Scott's pi uses the 2-rater
  table variance -> ``se``; Cohen's kappa the FCE (1969) ASE -> ``se``.
- Conger's kappa: irrCAC's SE (Python irrCAC full precision, R to 5 dp).
- Krippendorff's alpha: R irrCAC krippen.alpha.raw SE and t df = rated units - 1.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from agreement import (
    RatingData,
    compute,
    compute_pairs,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    krippendorff_alpha,
    light_kappa,
    weight_matrix,
)

REFS = Path(__file__).with_name("refs") / "agreement_public.json"
CASES = json.loads(REFS.read_text())
TOL = 1e-9
SUFFIXES = ("linear", "quadratic", "ordinal", "ratio")


def ratings_of(case: dict) -> RatingData:
    """The case as an items x raters matrix (counts tables get exchangeable rater slots)."""
    cats, kind, table = case["category_order"], case["kind"], case["data"]
    if kind.startswith("ratings"):
        rows = table
    elif kind.startswith("counts"):
        width = max(sum(row) for row in table)
        rows = []
        for row in table:
            labels = [c for c, k in zip(cats, row) for _ in range(k)]
            rows.append(labels + [None] * (width - len(labels)))
    else:
        rows = [[cats[i], cats[j]] for i, row in enumerate(table) for j, c in enumerate(row) for _ in range(c)]
    return RatingData.from_matrix(rows, categories=cats, source=case["name"])


def split_metric(metric: str) -> tuple[str, str]:
    for suffix in SUFFIXES:
        if metric.endswith("_" + suffix) and not metric.startswith("krippendorff"):
            return metric[: -len(suffix) - 1], suffix
    return metric, "identity"


def result_for(case: dict, data: RatingData, metric: str):
    """Our result for a reference metric key, or None when the key is not a coefficient of ours."""
    if metric.startswith("krippendorff_alpha_gwet_"):
        return krippendorff_alpha(data, weights=metric.split("_")[3], n_resamples=0)
    if metric.startswith("krippendorff_alpha_"):
        return krippendorff_alpha(data, metric.rsplit("_", 1)[1], n_resamples=0)
    if metric.startswith("cohen_kappa_") and metric.endswith("_weights"):
        matrix = case["weights"][metric[len("cohen_kappa_") : -len("_weights")]]
        return compute(data, ["cohen_kappa"], weights=np.array(matrix), n_resamples=0)["cohen_kappa"]
    base, weights = split_metric(metric)
    if base == "gwet_ac1":
        return gwet_ac1(data, n_resamples=0)
    if base == "gwet_ac2":
        return gwet_ac2(data, weights=weights, n_resamples=0)
    if base in {"percent_agreement", "fleiss_kappa", "brennan_prediger", "conger_kappa", "cohen_kappa", "scott_pi"}:
        return compute(data, [base], weights=weights, n_resamples=0)[base]
    return None


def expected_se(case: dict, metric: str, expected: dict) -> tuple[float | None, float]:
    """(reference SE for our convention, tolerance)."""
    if metric.startswith("conger_kappa"):
        return expected.get("se_irrCAC_py"), TOL
    if case["kind"].startswith("contingency") and not metric.startswith(("cohen_kappa", "scott_pi")):
        return expected.get("se_multirater_raw_formula"), TOL
    return expected.get("se"), TOL


METRIC_CASES = [
    pytest.param(case, metric, id=f"{case['name']}-{metric}")
    for case in CASES
    for metric in case["expected"]
    if metric not in {"fleiss_kappa_per_category", "randolph_free_marginal_kappa", "light_kappa", "conger_exact_kappa_irr"}
]


def test_reference_file_present():
    assert len(CASES) == 14


@pytest.mark.parametrize("case, metric", METRIC_CASES)
def test_reference_value_se_and_ci(case, metric):
    expected = case["expected"][metric]
    data = ratings_of(case)
    if metric.startswith(("cohen_kappa", "scott_pi")) and data.n_raters != 2:
        pytest.fail(f"{metric} given for {data.n_raters} raters")
    result = result_for(case, data, metric)
    assert result is not None, f"no coefficient for {metric}"
    assert result.undefined_reason is None
    assert result.statistic == pytest.approx(expected["value"], abs=TOL)
    for field in ("pa", "pe"):
        if expected.get(field) is not None:
            assert getattr(result, field) == pytest.approx(expected[field], abs=TOL), field
    se, tol = expected_se(case, metric, expected)
    if se is not None:
        assert result.se == pytest.approx(se, abs=tol)
        if metric.startswith("conger_kappa"):
            assert result.se == pytest.approx(expected["se_irrCAC_R"], abs=6e-6)
    if "ci95_t" in expected and se == expected.get("se"):
        ci = result.confidence_interval(0.95, "t")
        low, high = ci.low, ci.high
        assert (low, high) == pytest.approx(tuple(expected["ci95_t"]), abs=TOL)
    elif se is not None:
        # Our convention's SE with the irrCAC interval rule, t quantile from scipy.stats.
        half = stats.t.ppf(0.975, result.df) * se
        ci = result.confidence_interval(0.95, "t")
        low, high = ci.low, ci.high
        assert low == pytest.approx(expected["value"] - half, abs=TOL)
        assert high == pytest.approx(min(1.0, expected["value"] + half), abs=TOL)
    if "ci95_normal" in expected:
        normal = result.confidence_interval(0.95, "normal")
        assert (normal.low, normal.high) == pytest.approx(tuple(expected["ci95_normal"]), abs=TOL)
    if "se0_null" in expected:
        assert result.details["se0_null"] == pytest.approx(expected["se0_null"], abs=TOL)
        if "z_null" in expected:
            assert result.details["z_null"] == pytest.approx(expected["z_null"], abs=1e-8)
    if "se0_fnl1979" in expected:
        assert result.details["se0_fnl1979"] == pytest.approx(expected["se0_fnl1979"], abs=TOL)
        assert result.details["z_fnl1979"] == pytest.approx(expected["z_fnl1979"], abs=1e-8)
    if "n_items" in expected:
        assert result.n_units == expected["n_items"]
    if "n_items_pairable" in expected:
        assert result.details["n_units_pairable"] == expected["n_items_pairable"]


def _printed_tolerance(printed: str) -> float:
    exponent = Decimal(printed.strip()).as_tuple().exponent
    return 0.5 * 10.0 ** int(exponent) + 1e-12


PUBLISHED = [
    pytest.param(case, metric, item, id=f"{case['name']}-{metric}-{item['source'][:30]}")
    for case in CASES
    for metric, expected in case["expected"].items()
    for item in expected.get("published", []) or []
    if item.get("agrees") and item.get("field") == "value" and metric in {m.values[1] for m in METRIC_CASES}
]


@pytest.mark.parametrize("case, metric, item", PUBLISHED)
def test_published_values_to_printed_precision(case, metric, item):
    result = result_for(case, ratings_of(case), metric)
    assert abs(result.statistic - float(item["value"])) <= _printed_tolerance(item["value"])


PER_CATEGORY = [pytest.param(c, id=c["name"]) for c in CASES if "fleiss_kappa_per_category" in c["expected"]]


@pytest.mark.parametrize("case", PER_CATEGORY)
def test_fleiss_per_category_kappas_and_null_se(case):
    expected = case["expected"]["fleiss_kappa_per_category"]
    result = fleiss_kappa(ratings_of(case), n_resamples=0)
    ours = result.details["per_category"]
    for category, value in zip(expected["category_order"], expected["values"]):
        if value is None:
            assert ours[category] is None
        else:
            assert ours[category] == pytest.approx(value, abs=TOL)
    assert result.details["per_category_se0"] == pytest.approx(expected["se0_each"], abs=TOL)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES if "randolph_free_marginal_kappa" in c["expected"]])
def test_randolph_free_marginal_kappa_is_brennan_prediger(case):
    result = compute(ratings_of(case), ["brennan_prediger"], n_resamples=0)["brennan_prediger"]
    assert result.statistic == pytest.approx(case["expected"]["randolph_free_marginal_kappa"]["value"], abs=TOL)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES if "conger_exact_kappa_irr" in c["expected"]])
def test_conger_equals_irr_exact_kappa(case):
    result = compute(ratings_of(case), ["conger_kappa"], n_resamples=0)["conger_kappa"]
    assert result.statistic == pytest.approx(case["expected"]["conger_exact_kappa_irr"]["value"], abs=TOL)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES if "light_kappa" in c["expected"]])
def test_light_kappa_is_mean_of_pairwise_cohen(case):
    """Light (1971) kappa = mean pairwise Cohen: exercises the shared-resample pairwise path."""
    pairs = compute_pairs(ratings_of(case), ["cohen_kappa"], n_resamples=200)
    mean = float(np.mean([r["cohen_kappa"].statistic for r in pairs.values()]))
    assert mean == pytest.approx(case["expected"]["light_kappa"]["value"], abs=TOL)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES])
def test_weight_matrices_match_reference(case):
    data = ratings_of(case)
    for name, matrix in case["weights"].items():
        if name in {"identity", "linear", "quadratic", "ordinal", "ratio"}:
            ours = weight_matrix(name, data.category_scores)
            assert ours == pytest.approx(np.array(matrix), abs=1e-9), name


def test_every_case_has_a_checked_metric():
    checked = {m.values[0]["name"] for m in METRIC_CASES}
    assert checked == {c["name"] for c in CASES}


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES if "light_kappa" in c["expected"]])
def test_light_kappa_coefficient_matches_irr(case):
    data = ratings_of(case)
    result = light_kappa(data, n_resamples=500)
    assert result.statistic == pytest.approx(case["expected"]["light_kappa"]["value"], abs=TOL)
    ci = result.confidence_interval(method="percentile")
    low, high = ci.low, ci.high
    assert low < result.statistic < high
    t = result.confidence_interval(method="t")
    assert math.isnan(result.se) and (t.low, t.high) == (pytest.approx(math.nan, nan_ok=True),) * 2


def test_light_kappa_deletes_incomplete_units_listwise():
    """irr kappam.light drops every unit with a missing rating: same value as the complete units alone."""
    rows = [["a", "a", "b"], ["b", "b", "b"], ["a", "b", "a"], ["a", "a", "a"], ["b", "b", "a"], ["a", None, "b"], ["b", "a", None]]
    with_missing = compute(RatingData.from_matrix(rows), ["light_kappa"], n_resamples=0)["light_kappa"]
    complete = compute(RatingData.from_matrix(rows[:5]), ["light_kappa"], n_resamples=0)["light_kappa"]
    assert with_missing.statistic == pytest.approx(complete.statistic, abs=1e-12)
    # Hand derivation on the five complete units (pairs r1-r2, r1-r3, r2-r3; categories a, b):
    # r1-r2: agree on 4/5, marginals r1 (3a, 2b), r2 (2a, 3b): pe = .24 + .24 = .48, kappa = (.8 - .48)/.52
    # r1-r3: agree on 3/5, r1 (3a, 2b), r3 (3a, 2b): pe = .36 + .16 = .52, kappa = (.6 - .52)/.48
    # r2-r3: agree on 2/5, r2 (2a, 3b), r3 (3a, 2b): pe = .48, kappa = (.4 - .48)/.52
    expected = ((0.8 - 0.48) / 0.52 + (0.6 - 0.52) / 0.48 + (0.4 - 0.48) / 0.52) / 3
    assert complete.statistic == pytest.approx(expected, abs=1e-12)


def test_light_kappa_undefined_when_a_pair_has_no_chance_disagreement():
    rows = [["a", "a", "a"], ["a", "a", "b"], ["a", "a", "a"]]
    result = compute(RatingData.from_matrix(rows), ["light_kappa"], n_resamples=0)["light_kappa"]
    assert math.isnan(result.statistic) and "pe = 1" in result.undefined_reason
