"""Rogan-Gladen and PPI++ against hand derivations and ppi-python."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from agreement.correction import ppi_mean, rogan_gladen, rogan_gladen_point

PPI_VENV = Path(os.environ.get("ACCORD_CACHE", Path.home() / ".cache" / "accord")) / "bench-venvs" / "ppi"


def ppi_case():
    """Deterministic labelled/unlabelled data (no RNG, so the reference values stay valid)."""
    i, j = np.arange(80), np.arange(700)
    y = ((i * 7) % 10 < 3).astype(float)
    f = np.where(i % 5 == 0, 1 - y, y)
    fu = ((j * 13) % 20 < 7).astype(float)
    return y, f, fu, 1.0 + (i % 4), 1.0 + (j % 3) * 0.5


def test_rogan_gladen_hand_derivation():
    # Se = 8/10, Sp = 9/10, observed = 40/100: (0.4 + 0.9 - 1) / (0.8 + 0.9 - 1) = 0.3 / 0.7.
    human = np.array([1] * 10 + [0] * 10, float)
    judge = np.array([1] * 8 + [0] * 2 + [1] * 1 + [0] * 9, float)
    full = np.array([1] * 40 + [0] * 60, float)
    est = rogan_gladen(full, judge, human, n_resamples=2000, seed=1)
    assert est.statistic == pytest.approx(0.3 / 0.7)
    assert est.details["sensitivity"] == pytest.approx(0.8) and est.details["specificity"] == pytest.approx(0.9)
    assert est.ci_low <= est.statistic <= est.ci_high
    again = rogan_gladen(full, judge, human, n_resamples=2000, seed=1)
    assert again == est


def test_rogan_gladen_weights_enter_sensitivity_and_specificity():
    # Positives: unit 0 flagged (weight 3), unit 1 missed (weight 1) -> Se = 3/4.
    # Negatives: unit 2 clean (weight 1), unit 3 flagged (weight 1) -> Sp = 1/2.
    human, judge = np.array([1, 1, 0, 0.0]), np.array([1, 0, 0, 1.0])
    est = rogan_gladen(np.array([1, 0, 0, 0, 1.0]), judge, human, val_weights=np.array([3, 1, 1, 1.0]),
                       n_resamples=200)
    # observed 0.4: (0.4 + 0.5 - 1) / (0.75 + 0.5 - 1) = -0.1 / 0.25 -> clipped to 0.
    assert est.details["sensitivity"] == pytest.approx(0.75) and est.statistic == 0.0


def test_rogan_gladen_undefined_when_judge_uninformative():
    value, reason = rogan_gladen_point(0.3, 0.5, 0.5)
    assert np.isnan(value) and "no information" in reason
    est = rogan_gladen(np.ones(10), np.array([1, 1, 0, 0.0]), np.array([1, 0, 1, 0.0]), n_resamples=200)
    assert not est.defined and est.format() == "--"
    empty = rogan_gladen(np.ones(10), np.array([]), np.array([]), n_resamples=200)
    assert "no validated unit" in empty.undefined_reason


def test_ppi_special_cases_by_hand():
    y, f, fu, _, _ = ppi_case()
    classical = ppi_mean(y, f, fu, lam=0.0)
    assert classical.statistic == pytest.approx(y.mean())
    plain = ppi_mean(y, f, fu, lam=1.0)
    assert plain.statistic == pytest.approx(fu.mean() + (y - f).mean())
    se = np.sqrt(fu.var() / fu.size + (y - f).var() / y.size)
    assert plain.details["se"] == pytest.approx(se)


def test_ppi_interval_of_a_rare_rate_stays_in_zero_one():
    # Issue #25. Classical estimate (lam = 0) of a rate from 20 validated 0/1 labels, one positive: 0.05,
    # SE sqrt(0.05 x 0.95 / 20) = 0.048734 (np.std, ddof 0); normal interval 0.05 -/+ 1.959964 x 0.048734 =
    # [-0.045517, 0.145517]. A rate below 0 is impossible: the bound is cut at 0 and the method says so.
    y = np.zeros(20)
    y[3] = 1.0
    estimate = ppi_mean(y, y.copy(), np.zeros(200), lam=0.0)
    assert estimate.statistic == pytest.approx(0.05)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((0.0, 0.145517), abs=1e-6)
    assert estimate.method.endswith(", clipped to [0, 1]")
    # Scores that are not rates (here up to 5) keep the normal interval as it is.
    scores = ppi_mean(y * 5, y * 5, np.zeros(200), lam=0.0)
    assert scores.ci_low == pytest.approx(0.25 - 1.959964 * np.sqrt(0.05 * 0.95 * 25 / 20), abs=1e-5)
    assert "clipped" not in scores.method


# ppi-python 0.2.3 (isolated venv), ppi_mean_pointestimate / ppi_mean_ci(alpha=0.05) on ppi_case().
PPI_PYTHON = {
    "unweighted": (0.3218185058817538, 0.23445778879090032, 0.40917922297260734),
    "weighted": (0.29576545490983575, 0.2047477536918818, 0.3867831561277897),
}


@pytest.mark.parametrize("weighted", [False, True])
def test_ppi_matches_recorded_ppi_python(weighted):
    y, f, fu, w, wu = ppi_case()
    kw = dict(weights=w, weights_unlabeled=wu) if weighted else {}
    est = ppi_mean(y, f, fu, **kw)
    point, lo, hi = PPI_PYTHON["weighted" if weighted else "unweighted"]
    assert est.statistic == pytest.approx(point, abs=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx((lo, hi), abs=1e-12)


def test_ppi_matches_live_ppi_python_when_installed(tmp_path):
    """Side-by-side run in the isolated venv (scripts/ppi_venv.sh builds it)."""
    python = PPI_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"ppi-python venv not built at {PPI_VENV} (run scripts/ppi_venv.sh); recorded values tested above")
    rng = np.random.default_rng(11)
    y = rng.binomial(1, 0.3, 50).astype(float)
    f = np.where(rng.random(50) < 0.85, y, 1 - y)
    fu = rng.binomial(1, 0.33, 400).astype(float)
    w, wu = rng.uniform(1, 3, 50), rng.uniform(1, 2, 400)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({k: v.tolist() for k, v in dict(y=y, f=f, fu=fu, w=w, wu=wu).items()}))
    script = ("import json,sys,numpy as np\nfrom ppi_py import ppi_mean_pointestimate as p, ppi_mean_ci as c\n"
              "d={k:np.array(v) for k,v in json.load(open(sys.argv[1])).items()}\n"
              "kw=dict(w=d['w'],w_unlabeled=d['wu'])\n"
              "print(json.dumps([float(p(d['y'],d['f'],d['fu'],**kw)[0])]+[float(x[0]) for x in "
              "c(d['y'],d['f'],d['fu'],alpha=0.05,**kw)]))")
    out = subprocess.run([str(python), "-c", script, str(case)], capture_output=True, text=True, check=True)
    point, lo, hi = json.loads(out.stdout)
    est = ppi_mean(y, f, fu, weights=w, weights_unlabeled=wu)
    assert (est.statistic, est.ci_low, est.ci_high) == pytest.approx((point, lo, hi), abs=1e-12)


def test_ppi_undefined_and_argument_errors():
    assert "at least 2" in ppi_mean(np.array([1.0]), np.array([1.0]), np.ones(5)).undefined_reason
    with pytest.raises(ValueError, match="lam"):
        ppi_mean(np.ones(3), np.ones(3), np.ones(5), lam=2.0)
    with pytest.raises(ValueError, match="weights"):
        ppi_mean(np.ones(3), np.ones(3), np.ones(5), weights=np.array([1.0, -1.0, 1.0]))
