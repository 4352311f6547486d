"""``agreement.shared_results``: inside the block a repeated computation is the earlier one, and only a
computation on the same ratings and settings is; the numbers are those computed without it."""

from __future__ import annotations

import numpy as np
import pytest

from agreement import RatingData, compute_pairs, compute_subsets, shared_results


def _data(seed: int = 5, *, names: tuple[str, ...] = ("a", "b", "c", "judge")) -> RatingData:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=120)
    matrix = np.where(rng.random((120, 4)) < 0.75, truth[:, None], rng.integers(0, 3, size=(120, 4)))
    matrix = matrix.astype(object)
    matrix[rng.random((120, 4)) < 0.1] = None  # some missing labels
    return RatingData.from_matrix(matrix, raters=list(names), clusters=[f"t{i // 3}" for i in range(120)])


PAIRS = [("a", "judge"), ("b", "judge")]


def _same(x, y) -> None:
    for pair in x:
        for name in x[pair]:
            r, s = x[pair][name], y[pair][name]
            assert np.array_equal(r.bootstrap, s.bootstrap, equal_nan=True)
            assert (r.statistic == s.statistic or (np.isnan(r.statistic) and np.isnan(s.statistic)))
            assert r.se == s.se or (np.isnan(r.se) and np.isnan(s.se))


def test_a_repeated_computation_is_the_earlier_one_and_equals_the_unshared_numbers():
    data = _data()
    alone = compute_pairs(data, ["percent_agreement", "cohen_kappa"], PAIRS, n_resamples=300, seed=9)
    with shared_results():
        first = compute_pairs(data, ["percent_agreement", "cohen_kappa"], PAIRS, n_resamples=300, seed=9)
        again = compute_pairs(_data(), ["percent_agreement", "cohen_kappa"], PAIRS, n_resamples=300, seed=9)
        # the same rater columns, in the same order, without rater c beside them: the same computation
        narrower = compute_pairs(data.select_raters(["a", "b", "judge"]), ["percent_agreement", "cohen_kappa"],
                                 PAIRS, n_resamples=300, seed=9)
    assert again[("a", "judge")]["cohen_kappa"] is first[("a", "judge")]["cohen_kappa"]
    assert narrower[("b", "judge")]["percent_agreement"] is first[("b", "judge")]["percent_agreement"]
    _same(first, alone)
    _same(compute_pairs(data.select_raters(["a", "b", "judge"]), ["percent_agreement", "cohen_kappa"], PAIRS,
                        n_resamples=300, seed=9), alone)  # computed anew outside the block: the same numbers
    again[("a", "judge")].pop("cohen_kappa")  # a caller changing its dict does not change what is shared
    with shared_results():
        fresh = compute_pairs(data, ["percent_agreement", "cohen_kappa"], PAIRS, n_resamples=300, seed=9)
    assert fresh[("a", "judge")]["cohen_kappa"] is not first[("a", "judge")]["cohen_kappa"]  # a new block


@pytest.mark.parametrize("change", ["seed", "resamples", "labels", "names", "coefficients", "clusters"])
def test_a_computation_on_other_inputs_is_not_shared(change):
    data = _data()
    kwargs = {"n_resamples": 200, "seed": 9}
    names = ["percent_agreement", "gwet_ac1"]
    with shared_results():
        first = compute_subsets(data, {"panel": ["a", "b", "c"]}, names, **kwargs)
        other_data, other_names, other = data, names, dict(kwargs)
        if change == "seed":
            other["seed"] = 10
        elif change == "resamples":
            other["n_resamples"] = 201
        elif change == "labels":
            other_data = _data(6)
        elif change == "names":  # the same labels under other rater names: results name their raters
            other_data = _data(names=("x", "b", "c", "judge"))
        elif change == "coefficients":
            other_names = ["percent_agreement", "fleiss_kappa"]
        else:
            other_data = RatingData(units=data.units, raters=data.raters, categories=data.categories,
                                    codes=data.codes, clusters=np.array([f"u{i}" for i in range(120)], dtype=object))
        raters = ["x", "b", "c"] if change == "names" else ["a", "b", "c"]
        second = compute_subsets(other_data, {"panel": raters}, other_names, **other)
    assert second["panel"]["percent_agreement"] is not first["panel"]["percent_agreement"]
    expected = compute_subsets(other_data, {"panel": raters}, other_names, **other)  # outside: computed anew
    assert np.array_equal(second["panel"]["percent_agreement"].bootstrap,
                          expected["panel"]["percent_agreement"].bootstrap, equal_nan=True)


def test_shared_results_are_read_only():
    with shared_results():
        result = compute_pairs(_data(), ["percent_agreement"], PAIRS, n_resamples=100, seed=9)[("a", "judge")]
    values, counts = result["percent_agreement"].details["jackknife"]
    for array in (result["percent_agreement"].bootstrap, values, counts):
        with pytest.raises(ValueError):
            array[0] = 0.0
