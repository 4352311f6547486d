"""The one shape of a confidence interval, and the one default confidence level.

Every statistics result's ``confidence_interval(level=None, method=None)`` returns a
``ConfidenceInterval``: ``None`` asks for the interval the gate, the report and the
written documents use; another level or method is computed when the result holds what
it needs (bootstrap resamples, a standard error), else a ValueError names what is allowed.
It lives on the ground floor so annotate/ (gold accuracy) and agreement/ share it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_LEVEL = 0.95
"""The confidence level of every interval unless a study, policy or command names another."""


def check_level(level: object, *, parameter: str = "level") -> float:
    """``level`` as a float strictly between 0 and 1, else an ``InputError`` naming the parameter and the value."""
    from samples.errors import InputError

    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.0 < float(level) < 1.0:
        raise InputError(f"{parameter}={level!r}: expected a confidence level strictly between 0 and 1")
    return float(level)


@dataclass(frozen=True, kw_only=True)
class ConfidenceInterval:
    """``low``/``high`` at ``level`` by ``method`` (the procedure, e.g. "BCa bootstrap over 120 clusters").

    NaN bounds mean undefined (no finite statistic, no usable resample); a gate criterion
    never passes on them.
    """

    low: float
    high: float
    level: float
    method: str

    def __post_init__(self) -> None:
        check_level(self.level)
        if not isinstance(self.method, str):
            raise ValueError(f"method={self.method!r}: expected the name of the interval procedure")
        if math.isfinite(self.low) and math.isfinite(self.high) and self.low > self.high:
            raise ValueError(f"low={self.low!r} > high={self.high!r}: expected low <= high")

    @property
    def defined(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @classmethod
    def undefined(cls, *, level: float, method: str) -> ConfidenceInterval:
        return cls(low=math.nan, high=math.nan, level=level, method=method)


def held_interval(held: ConfidenceInterval, level: float | None, method: str | None, *,
                  what: str) -> ConfidenceInterval:
    """``held`` when the request is None or matches it; a result that keeps only bounds cannot give another.

    ``what`` names the result in the message ("a Wilson interval", "the family bias").
    """
    if level is not None and check_level(level) != held.level:
        raise ValueError(f"level={level!r}: {what} holds only its {held.level} interval; recompute the result "
                         f"at {level} (allowed: None or {held.level})")
    if method is not None and method != held.method:
        raise ValueError(f"method={method!r}: {what} holds only its {held.method!r} interval "
                         f"(allowed: None or {held.method!r})")
    return held
