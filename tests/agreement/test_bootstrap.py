"""The vectorised bootstrap: every resample equals the coefficient recomputed on the expanded
resampled table, clusters are resampled whole, draws are exact multinomials, intervals follow
their textbook definitions, undefined resamples are counted and seeds reproduce bytes."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from agreement import RatingData, cohen_kappa, compute
from agreement.bootstrap import Design
from samples.errors import InputError

NAMES = ["percent_agreement", "fleiss_kappa", "gwet_ac1", "conger_kappa", "krippendorff_alpha"]


def panel(seed: int, n: int, raters: int, q: int, missing: float = 0.15, clusters: int | None = None) -> RatingData:
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, q, n)
    ratings = np.where(rng.random((n, raters)) < 0.7, latent[:, None], rng.integers(0, q, (n, raters))).astype(object)
    ratings[rng.random((n, raters)) < missing] = None
    cluster_ids = None if clusters is None else [f"c{i % clusters}" for i in range(n)]
    return RatingData.from_matrix(ratings, categories=list(range(q)), clusters=cluster_ids)


def expand(design: Design, counts: np.ndarray) -> np.ndarray:
    """The resampled table: each atom's units repeated as often as the atom was drawn."""
    rows = []
    for atom, times in enumerate(counts.astype(int)):
        entries = np.flatnonzero(design.entry_atom == atom)
        for entry in entries:
            rows += [design.codes[design.entry_pattern[entry]]] * (times * int(design.entry_count[entry]))
    return np.array(rows)


@pytest.mark.parametrize("clusters", [None, 7])
def test_each_resample_equals_the_coefficient_of_the_resampled_table(clusters):
    data = panel(1, 40, 4, 3, clusters=clusters)
    results = compute(data, NAMES, n_resamples=25, seed=11)
    design = Design.build(data, groups=[(list(range(4)), False)], cluster=True)
    counts = np.concatenate(list(design.draws(25, 11)))
    for b in range(25):
        codes = expand(design, counts[b])
        if clusters:
            drawn_sizes = counts[b] @ np.add.reduceat(design.entry_count, design.atom_start)
            assert drawn_sizes == codes.shape[0]
            assert counts[b].sum() == clusters
        resampled = RatingData(units=np.arange(codes.shape[0]), raters=data.raters, categories=data.categories, codes=codes)
        direct = compute(resampled, NAMES, n_resamples=0)
        for name in NAMES:
            expected = direct[name].statistic
            got = results[name].bootstrap[b]
            assert (math.isnan(expected) and math.isnan(got)) or got == pytest.approx(expected, abs=1e-12), (name, b)


@pytest.mark.parametrize("n, raters, q", [(500, 3, 2), (60, 8, 4)])
def test_draws_are_multinomial_over_units(n, raters, q):
    data = panel(2, n, raters, q, missing=0.0)
    design = Design.build(data, groups=[(list(range(raters)), False)], cluster=False)
    counts = np.concatenate(list(design.draws(4000, 5)))
    assert counts.shape == (4000, design.n_atoms)
    assert np.all(counts.sum(axis=1) == n)
    expected = design.atom_multiplicity
    # Each atom count is Binomial(n, m/n): mean m, variance m (1 - m/n).
    se = np.sqrt(expected * (1 - expected / n) / counts.shape[0])
    assert np.all(np.abs(counts.mean(axis=0) - expected) < 5 * se + 1e-12)
    variance = expected * (1 - expected / n)
    assert np.allclose(counts.var(axis=0), variance, rtol=0.15, atol=0.05)


def test_clustered_se_of_duplicated_units_equals_unclustered_se_of_originals():
    """k identical copies of each unit in one cluster: cluster totals are k x unit terms, so the
    linearised cluster SE equals the plain SE of the originals and df = clusters - 1."""
    data = panel(3, 50, 3, 3)
    copies = 3
    codes = np.repeat(data.codes, copies, axis=0)
    clustered = RatingData(
        units=np.arange(codes.shape[0]), raters=data.raters, categories=data.categories, codes=codes,
        clusters=np.repeat([f"c{i}" for i in range(50)], copies),
    )
    names = ["percent_agreement", "fleiss_kappa", "gwet_ac1", "brennan_prediger", "conger_kappa"]
    plain = compute(data, names, n_resamples=0)
    grouped = compute(clustered, names, n_resamples=0)
    ignored = compute(clustered, names, n_resamples=0, cluster=False)
    for name in names:
        assert grouped[name].statistic == pytest.approx(plain[name].statistic, abs=1e-12)
        assert grouped[name].se == pytest.approx(plain[name].se, rel=1e-10)
        assert grouped[name].df == plain[name].df == 49
        assert ignored[name].se < grouped[name].se
        assert grouped[name].details["n_clusters"] == 50


def test_singleton_clusters_change_nothing():
    data = panel(4, 80, 3, 2)
    singletons = RatingData(units=data.units, raters=data.raters, categories=data.categories, codes=data.codes,
                            clusters=[f"u{i}" for i in range(80)])
    names = ["percent_agreement", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha"]
    a, b = compute(data, names, n_resamples=0), compute(singletons, names, n_resamples=0)
    for name in names:
        assert a[name].se == pytest.approx(b[name].se, rel=1e-12)


def test_bootstrap_spread_matches_analytic_se():
    data = panel(5, 600, 3, 3, missing=0.1)
    results = compute(data, ["fleiss_kappa", "gwet_ac1", "krippendorff_alpha"], n_resamples=4000, seed=9)
    for result in results.values():
        assert np.nanstd(result.bootstrap) == pytest.approx(result.se, rel=0.12)


def test_percentile_and_bca_intervals_follow_their_definitions():
    data = panel(6, 45, 3, 3)
    result = compute(data, ["fleiss_kappa"], n_resamples=2000, seed=3)["fleiss_kappa"]
    draws = result.bootstrap
    ci = result.confidence_interval(0.9, "percentile")
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(draws, [0.05, 0.95])))
    # Independent BCa (Efron 1987): jackknife by recomputing without each unit.
    jack = np.array([
        compute(data.select_units(np.arange(data.n_units) != i), ["fleiss_kappa"], n_resamples=0)["fleiss_kappa"].statistic
        for i in range(data.n_units)
    ])
    z0 = stats.norm.ppf((np.sum(draws < result.statistic) + 0.5 * np.sum(draws == result.statistic)) / draws.size)
    d = jack.mean() - jack
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    z = stats.norm.ppf([0.025, 0.975])
    levels = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    ci = result.confidence_interval(0.95, "bca")
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(draws, levels)), abs=1e-12)


def test_undefined_resamples_are_nan_and_counted():
    # One unit of category 1 among 11 of category 0: resamples without it have pe = 1.
    rows = [[0, 0]] * 11 + [[1, 1]]
    result = compute(RatingData.from_matrix(rows), ["fleiss_kappa"], n_resamples=2000, seed=1)["fleiss_kappa"]
    missing_unit = np.isnan(result.bootstrap)
    assert result.bootstrap_undefined == int(missing_unit.sum()) == result.details["bootstrap_undefined"]
    # P(unit never drawn in 12 draws) = (11/12)^12 = 0.352.
    assert missing_unit.mean() == pytest.approx((11 / 12) ** 12, abs=0.04)
    ci = result.confidence_interval(method="percentile")
    low, high = ci.low, ci.high
    assert (low, high) == pytest.approx(tuple(np.quantile(result.bootstrap[~missing_unit], [0.025, 0.975])))


def test_undefined_point_estimate_gives_nan_and_reason():
    result = compute(RatingData.from_matrix([[0, 0], [0, 0], [0, 0]], categories=[0, 1]), ["fleiss_kappa", "cohen_kappa"], n_resamples=100)
    for r in result.values():
        assert math.isnan(r.statistic) and "pe = 1" in r.undefined_reason
        ci = r.confidence_interval(method="percentile")
        assert math.isnan(ci.low) and math.isnan(ci.high)


def test_seeds():
    data = panel(7, 100, 3, 2, clusters=20)
    a = compute(data, NAMES, n_resamples=500, seed=1)
    b = compute(data, NAMES, n_resamples=500, seed=1)
    c = compute(data, NAMES, n_resamples=500, seed=2)
    for name in NAMES:
        assert a[name].bootstrap.tobytes() == b[name].bootstrap.tobytes()
        assert a[name].bootstrap.tobytes() != c[name].bootstrap.tobytes()


def test_byte_identical_across_processes_and_hash_seeds(tmp_path):
    csv = tmp_path / "labels.csv"
    rng = np.random.default_rng(0)
    lines = ["unit,rater,label,trajectory"] + [
        f"u{i},{r},{rng.choice(['yes', 'no'])},t{i // 4}" for i in range(60) for r in ("ann", "bob", "judge")
    ]
    csv.write_text("\n".join(lines))
    code = (
        "import hashlib; from agreement import load_labels, compute;"
        f"d = load_labels({str(csv)!r}, cluster='trajectory');"
        "r = compute(d, n_resamples=1000);"
        "print(hashlib.sha256(b''.join(v.bootstrap.tobytes() for v in r.values())).hexdigest())"
    )
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("0", "12345")
    }
    assert len(digests) == 1 and len(digests.pop()) == 64


def test_no_resamples_means_no_bootstrap_interval():
    result = compute(panel(8, 30, 3, 2), ["gwet_ac1"], n_resamples=0)["gwet_ac1"]
    assert result.bootstrap is None
    with pytest.raises(InputError, match="without bootstrap"):
        result.confidence_interval(method="percentile")
    with pytest.raises(InputError, match="method='wald'"):
        result.confidence_interval(method="wald")
    with pytest.raises(InputError, match="level=1.5"):
        result.confidence_interval(level=1.5)


def test_argument_validation():
    data = panel(9, 20, 3, 2)
    with pytest.raises(InputError, match="n_resamples=-1"):
        compute(data, ["gwet_ac1"], n_resamples=-1)
    with pytest.raises(InputError, match="unknown"):
        compute(data, ["kappa_of_my_own"])
    with pytest.raises(InputError, match="cohen_kappa needs exactly 2 raters; got 3"):
        cohen_kappa(data)
    batch = compute(data, ["cohen_kappa", "scott_pi", "gwet_ac1"], n_resamples=10)
    assert math.isnan(batch["cohen_kappa"].statistic) and "exactly 2 raters" in batch["cohen_kappa"].undefined_reason
    assert math.isnan(batch["scott_pi"].statistic) and batch["gwet_ac1"].undefined_reason is None
    with pytest.raises(InputError, match="weights='cubic'"):
        compute(data, ["fleiss_kappa"], weights="cubic")
    with pytest.raises(InputError, match="alpha_level='circular'"):
        compute(data, ["krippendorff_alpha"], alpha_level="circular")


def test_integer_unit_weights_equal_duplicated_units():
    """A unit of weight w counts like w copies of it (point estimates; SEs treat it as one unit).

    Krippendorff's alpha differs: its (n.. - 1)/n.. term counts the values actually rated."""
    data = panel(10, 40, 3, 3)
    weights = np.random.default_rng(1).integers(1, 4, data.n_units)
    weighted = RatingData(units=data.units, raters=data.raters, categories=data.categories, codes=data.codes,
                          unit_weights=weights.astype(float))
    copies = RatingData(units=np.arange(weights.sum()), raters=data.raters, categories=data.categories,
                        codes=np.repeat(data.codes, weights, axis=0))
    names = [n for n in NAMES if n != "krippendorff_alpha"] + ["brennan_prediger"]
    a, b = compute(weighted, names, n_resamples=200), compute(copies, names, n_resamples=0)
    for name in names:
        assert a[name].statistic == pytest.approx(b[name].statistic, abs=1e-12), name
        assert a[name].df == data.n_units - 1
        assert np.isfinite(a[name].se) and np.nanstd(a[name].bootstrap) > 0


def test_ordinal_alpha_has_no_analytic_se_but_a_bootstrap_interval():
    data = panel(11, 60, 3, 4)
    result = compute(data, ["krippendorff_alpha"], alpha_level="ordinal", n_resamples=1000)["krippendorff_alpha"]
    assert math.isnan(result.se) and "ordinal" in result.details["se_undefined_reason"]
    t = result.confidence_interval(method="t")
    assert math.isnan(t.low) and math.isnan(t.high)
    ci = result.confidence_interval(method="percentile")
    low, high = ci.low, ci.high
    assert low < result.statistic < high


def test_fleiss_null_se_needs_equal_raters_per_unit():
    result = compute(panel(12, 50, 4, 3, missing=0.2), ["fleiss_kappa"], n_resamples=0)["fleiss_kappa"]
    assert math.isnan(result.details["se0_fnl1979"])
    assert "same number" in result.details["se0_fnl1979_undefined_reason"]
    assert set(result.details["per_category"]) == {0, 1, 2}


def test_constant_unit_weights_change_nothing():
    """Weights enter as ratios: a common weight leaves statistics and SEs unchanged."""
    data = panel(13, 70, 3, 3, clusters=12)
    scaled = RatingData(units=data.units, raters=data.raters, categories=data.categories, codes=data.codes,
                        clusters=data.clusters, unit_weights=np.full(data.n_units, 7.5))
    names = NAMES + ["brennan_prediger"]
    a, b = compute(data, names, n_resamples=0), compute(scaled, names, n_resamples=0)
    for name in names:
        assert b[name].statistic == pytest.approx(a[name].statistic, abs=1e-12), name
        assert b[name].se == pytest.approx(a[name].se, rel=1e-10), name
