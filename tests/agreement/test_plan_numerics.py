"""The anytime gate's shortcut equals the direct computation it replaces (issue #27): the sequential planner
shares the three confidence sequences of the AC1-over-a-constant box between both constants; checked against
each constant computed alone, on simulated data.
"""

from __future__ import annotations

import numpy as np

from agreement.anytime import Stream, _ac1_over_constant


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
