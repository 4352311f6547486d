"""A stratified sample is resampled within its strata for every agreement coefficient (agreement.bootstrap.Design),
and every interval names the clusters and strata it resampled."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from agreement.bootstrap import Design
from agreement.coefficients import compute
from agreement.documents import ValidationDocument, read_document
from agreement.report import validation_tables
from agreement.table import RatingData
from apps.cli import main
from samples.layout import StudyLayout
from tests.agreement.test_study_io import write_ise_study

N = 100  # units per stratum


def _two_strata(seed: int = 1, p_b: float = 0.6, strata: bool = True) -> RatingData:
    """Stratum A: the judge always matches the reference; stratum B: it matches with probability ``p_b``."""
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 2, size=2 * N)
    agree = np.r_[np.ones(N, dtype=bool), rng.random(N) < p_b]
    units = np.array([f"u{i}" for i in range(2 * N)], dtype=object)
    return RatingData(units=units, raters=("judge", "ref"), categories=("no", "yes"),
                      codes=np.column_stack([np.where(agree, ref, 1 - ref), ref]), clusters=units.copy(),
                      strata=np.array(["A"] * N + ["B"] * N, dtype=object) if strata else None)


def test_within_stratum_resampling_removes_the_between_strata_variance():
    """Accuracy p = (p_A + p_B) / 2 with p_A = 1 and p_B observed. Pooled resampling draws 2N units from the
    whole sample: Var = p(1-p) / 2N. Within strata each stratum keeps its N units: Var = sum_s (1/2)^2
    p_s(1-p_s) / N = p_B(1-p_B) / 4N, smaller by the between-strata part (p_A - p_B)^2 / 8N, since the two
    strata's shares differ. Bootstrap SDs (4000 resamples: Monte Carlo error ~1.1%) must match each formula
    within 5%, and kappa's interval narrows the same way."""
    pooled = compute(_two_strata(strata=False), ["percent_agreement", "cohen_kappa"], n_resamples=4000)
    within = compute(_two_strata(), ["percent_agreement", "cohen_kappa"], n_resamples=4000)
    p = pooled["percent_agreement"].statistic
    p_b = 2 * p - 1.0
    assert within["percent_agreement"].statistic == p  # the point estimate does not change
    sd_pooled = math.sqrt(p * (1 - p) / (2 * N))
    sd_within = math.sqrt(p_b * (1 - p_b) / (4 * N))
    assert np.std(pooled["percent_agreement"].bootstrap) == pytest.approx(sd_pooled, rel=0.05)
    assert np.std(within["percent_agreement"].bootstrap) == pytest.approx(sd_within, rel=0.05)
    assert sd_within / sd_pooled < 0.9  # the effect measured is larger than the tolerance
    # The analytic (linearised) SE the t interval uses follows the same design: n/(n-1) times each variance.
    assert pooled["percent_agreement"].se == pytest.approx(sd_pooled * math.sqrt(2 * N / (2 * N - 1)), rel=1e-9)
    assert within["percent_agreement"].se == pytest.approx(sd_within * math.sqrt(N / (N - 1)), rel=1e-9)
    assert np.std(within["cohen_kappa"].bootstrap) < 0.92 * np.std(pooled["cohen_kappa"].bootstrap)
    assert within["cohen_kappa"].details["resampling"] == "200 clusters within 2 strata"
    assert pooled["cohen_kappa"].details["resampling"] == "200 clusters"


def test_every_resample_keeps_each_strata_count():
    data = _two_strata()
    design = Design.build(data, groups=[([0, 1], False)], cluster=True)
    for counts in design.draws(500, seed=3):
        for stratum in (0, 1):
            assert np.allclose(counts[:, design.atom_stratum == stratum].sum(axis=1), N)


def test_clusters_spanning_strata_pool_the_strata_and_say_so():
    data = _two_strata()
    clusters = np.array([f"c{i % N}" for i in range(2 * N)], dtype=object)  # every cluster in both strata
    spanning = RatingData(units=data.units, raters=data.raters, categories=data.categories, codes=data.codes,
                          clusters=clusters, strata=data.strata)
    result = compute(spanning, ["cohen_kappa"], n_resamples=200)["cohen_kappa"]
    assert result.details["resampling"] == "100 clusters; strata not used: a cluster spans several strata"
    assert "n_strata" not in result.details


def test_a_stratified_study_names_its_clusters_and_strata_in_validate_and_gate(tmp_path, capsys):
    """write_ise_study samples 4 strata (agent x split); each unit is one trajectory's unit of its kind."""
    write_ise_study(tmp_path, per_cell=60)  # >= 100 units of a kind: the floors measure (intervals.MIN_UNITS)
    capsys.readouterr()
    assert main(["validate", str(tmp_path), "--n-resamples", "200"]) == 0
    assert "(95% CIs resampling 120 clusters within 4 strata)" in capsys.readouterr().out  # the CLI's section line
    body = json.loads((tmp_path / "validation" / "validation.json").read_text())
    tables, _ = validation_tables(read_document(ValidationDocument, StudyLayout.of(tmp_path)))
    assert "intervals resample clusters = trajectory: " in tables[0].note and "within 4 strata" in tables[0].note
    methods = {r["ci_method"] for s in body["sections"] for j in s["judges_vs_humans"] for p in j["vs_annotators"]
               for r in p["results"].values()}
    assert methods and all(m.endswith("clusters within 4 strata") for m in methods), methods
    policy = tmp_path / "p.toml"
    policy.write_text('[policy]\nname = "t"\ndescription = "t"\nlevel = 0.95\ntie_policy = "exclude"\n'
                      'n_resamples = 200\nseed = 20261129\n\n[[criteria]]\ntype = "agreement_floor"\n'
                      'coefficient = "cohen_kappa"\nreference = "human_majority"\nmin_lower_bound = 0.2\n')
    main(["gate", str(tmp_path), "--policy", str(policy), "--judge", "identify@j", "--json"])
    criteria = json.loads(capsys.readouterr().out)["judges"]["identify@j"]["criteria"]
    stated = {c["type"]: c["ci_method"] for c in criteria}
    assert "within 4 strata" in stated["agreement_floor"], stated
    assert "within 4 strata" in stated["beats_baselines"], stated


@pytest.mark.slow
def test_within_stratum_intervals_cover():
    """Coverage of the 95% interval of accuracy (percentile) under stratified sampling: strata A and B with
    true accuracies 0.97 and 0.7, 60 units each drawn per study, the truth (0.97 + 0.7) / 2 = 0.835. Over
    400 studies the interval must cover at least 93.5% (nominal - 1.5 points; the Monte Carlo SE is 1.1)."""
    rng = np.random.default_rng(20261129)
    n, truth, covered = 60, (0.97 + 0.7) / 2, 0
    units = np.array([f"u{i}" for i in range(2 * n)], dtype=object)
    strata = np.array(["A"] * n + ["B"] * n, dtype=object)
    studies = 400
    for study in range(studies):
        ref = rng.integers(0, 2, size=2 * n)
        agree = np.r_[rng.random(n) < 0.97, rng.random(n) < 0.7]
        data = RatingData(units=units, raters=("judge", "ref"), categories=("no", "yes"),
                          codes=np.column_stack([np.where(agree, ref, 1 - ref), ref]), clusters=units.copy(),
                          strata=strata)
        boot = compute(data, ["percent_agreement"], n_resamples=1000, seed=study)["percent_agreement"].bootstrap
        low, high = np.quantile(boot, [0.025, 0.975])
        covered += low <= truth <= high
    assert covered / studies >= 0.935, covered / studies
