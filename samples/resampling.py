"""The resampling settings of every interval (n_resamples, seed, level), validated once, here.

The CLI's options, the study file's sections and a gate policy's head each build a
``Resampling``; the statistics engine takes its fields. A bad value fails where the
object is built, with a message naming the parameter, the value and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from samples.errors import InputError
from samples.intervals import DEFAULT_LEVEL, check_level
from samples.seed import DEFAULT_SEED, check_seed

MIN_RESAMPLES = 100
MAX_RESAMPLES = 1_000_000
"""Resample and permutation counts accepted everywhere (CLI, study files, policies): 100x the default
bounds the time and memory a typo (``--n-resamples 10000000000``) could ask for."""


def check_resamples(n_resamples: object, *, parameter: str = "n_resamples", allow_zero: bool = False) -> int:
    """A resample or permutation count in [MIN_RESAMPLES, MAX_RESAMPLES] (or 0 where ``allow_zero``: no bootstrap)."""
    value = float(n_resamples) if isinstance(n_resamples, Real) and not isinstance(n_resamples, bool) else math.nan
    count = int(value) if value.is_integer() else -1
    if MIN_RESAMPLES <= count <= MAX_RESAMPLES or (allow_zero and count == 0):
        return count
    zero = " or 0 (no bootstrap)" if allow_zero else ""
    raise InputError(f"{parameter}={n_resamples!r}: expected an integer from {MIN_RESAMPLES} to {MAX_RESAMPLES}{zero}")


@dataclass(frozen=True, kw_only=True)
class Resampling:
    """How an interval is resampled: ``n_resamples`` draws (0 only where ``allow_zero``: analytic intervals),
    from ``seed``, at confidence ``level``."""

    n_resamples: int
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL
    allow_zero: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_resamples", check_resamples(self.n_resamples, allow_zero=self.allow_zero))
        object.__setattr__(self, "seed", check_seed(self.seed))
        object.__setattr__(self, "level", check_level(self.level))
