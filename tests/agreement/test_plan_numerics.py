"""The planner's and the anytime gate's shortcuts equal the direct computations they replace (issue #27).

The operating-point simulation (``agreement.plan.SimulatedStudies``) sums each criterion's squared influence
over cluster slots through one Gram matrix of the four judge x majority cell counts, counted in one pass; the
sequential planner shares the three confidence sequences of the AC1-over-a-constant box between both
constants. Each is checked here against the definition written out directly, on simulated data.
"""

from __future__ import annotations

import numpy as np
import pytest

from agreement.anytime import Stream, _ac1_over_constant
from agreement.plan import Design, SimulatedStudies, Simulator


def _batch(accuracies: np.ndarray):
    """A batch of 40 simulated 60-unit studies (3 annotators, clustered), its kept units and majority."""
    design = Design(positive_rate=0.3, judge_agreement=0.7, human_agreement=0.85, annotators=3,
                    turns_per_trajectory=3.0)
    simulator = Simulator(design, [], level=0.95, studies=40)
    n = 60
    studies = SimulatedStudies(simulator, n, n, accuracies, *simulator._studies(n, np.random.default_rng(5)))
    votes = studies.humans.sum(axis=0)
    keep = (2 * votes != 3)[None].repeat(accuracies.size, axis=0)
    majority = (2 * votes > 3)[None]
    return studies, majority, keep


def test_cells_counted_in_one_pass_equal_four_masked_counts():
    studies, majority, keep = _batch(np.array([0.7, 0.9]))
    judge = studies.judge
    cells = [judge & majority, judge & ~majority, ~judge & majority, ~judge & ~majority]
    one_pass = studies._cells_counted(judge, majority, keep)
    for ours, mask in zip(one_pass, cells, strict=True):
        assert np.array_equal(ours, studies._counted(mask & keep))
    assert np.array_equal(sum(one_pass), studies._counted(keep))  # the cells partition the kept units
    assert all(np.array_equal(a, b) for a, b in zip(one_pass, studies.cell_sums, strict=True))


def test_the_gram_quadratic_form_is_the_summed_squared_influence():
    # The definition: influence per slot = sum_i g_i (cs_i - slot_count s_i), squared and summed over slots.
    studies, _, _ = _batch(np.array([0.6, 0.8, 0.95]))
    cell_sums, slot_count, kept = studies.cell_sums, studies.slot_count, studies.kept
    shares = [s.sum(axis=2) / np.maximum(kept, 1) for s in cell_sums]
    gram = studies._cell_gram(shares)
    rng = np.random.default_rng(1)
    for _ in range(3):
        g = [rng.normal(size=kept.shape) for _ in range(4)]
        influence = sum(gi[..., None] * (cs - slot_count * s[..., None])
                        for gi, cs, s in zip(g, cell_sums, shares, strict=True))
        direct = (influence**2).sum(axis=2)
        form = sum(g[i] * g[j] * gram[i][j] for i in range(4) for j in range(4))
        assert form == pytest.approx(direct, rel=1e-9, abs=1e-9)


def test_the_ac1_box_shared_by_both_constants_is_each_constant_alone():
    rng = np.random.default_rng(3)
    n = 120
    draw = np.array([[1, 1], [1, 0], [0, 1], [0, 0]])[rng.choice(4, p=[0.25, 0.05, 0.07, 0.63], size=n)]
    look = np.arange(n) // 2
    stream = Stream(units=tuple(map(str, range(n))), look=look, looks=int(look[-1]) + 1, judge=draw[:, 0],
                    unscored=np.zeros(n, bool), reference=draw[:, 1], humans=np.zeros((n, 0), np.int64),
                    annotators=(), categories=("no", "yes"), positive="yes", strata=np.array(["all"] * n), bound=2.0)
    both = np.ones(n, bool)
    boxes: dict = {}
    for answer_positive in (False, True):
        shared = _ac1_over_constant(stream, answer_positive, 1, both, 0.05, grid=101, boxes=boxes)
        alone = _ac1_over_constant(stream, answer_positive, 1, both, 0.05, grid=101)
        for a, b in zip(shared, alone):
            assert np.array_equal(a, b, equal_nan=True)
    assert len(boxes) == 1  # the three sequences were computed once for the two constants
