"""Agreement-weight matrices (Gwet 2014, ch. 3; the irrCAC definitions).

Weights are computed from category *scores*: the numeric category values when every
category is a number, else the ranks 1..q of the declared order (irrCAC convention;
irr/sklearn/vcd use ranks of the levels present, refs README item 3). ``ordinal`` is
Gwet's ordinal weight, not Krippendorff's ordinal metric (item 7).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from samples import InputError


def _identity(x: np.ndarray) -> np.ndarray:
    return np.eye(x.size)


def _linear(x: np.ndarray) -> np.ndarray:
    return 1.0 - np.abs(x[:, None] - x[None, :]) / (x.max() - x.min())


def _quadratic(x: np.ndarray) -> np.ndarray:
    return 1.0 - (x[:, None] - x[None, :]) ** 2 / (x.max() - x.min()) ** 2


def _radical(x: np.ndarray) -> np.ndarray:
    return 1.0 - np.sqrt(np.abs(x[:, None] - x[None, :])) / np.sqrt(x.max() - x.min())


def _ratio(x: np.ndarray) -> np.ndarray:
    if x.min() < 0:
        raise InputError(f"weights='ratio' needs non-negative category values, got {x.tolist()}")
    total = x[:, None] + x[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.where(total > 0, (x[:, None] - x[None, :]) / np.where(total > 0, total, 1.0), 0.0) ** 2
    scale = ((x.max() - x.min()) / (x.max() + x.min())) ** 2
    return 1.0 - relative / scale


def _circular(x: np.ndarray) -> np.ndarray:
    span = x.max() - x.min() + 1
    dist = np.sin(np.pi * (x[:, None] - x[None, :]) / span) ** 2
    return 1.0 - dist / dist.max()


def _bipolar(x: np.ndarray) -> np.ndarray:
    lo, hi = x.min(), x.max()
    total = x[:, None] + x[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = (x[:, None] - x[None, :]) ** 2 / ((total - 2 * lo) * (2 * hi - total))
    np.fill_diagonal(dist, 0.0)
    dist = np.nan_to_num(dist, nan=0.0, posinf=0.0)
    return 1.0 - dist / dist.max()


def _ordinal(x: np.ndarray) -> np.ndarray:
    rank = np.arange(1, x.size + 1)
    span = np.abs(rank[:, None] - rank[None, :]) + 1
    dist = span * (span - 1) / 2
    return 1.0 - dist / dist.max()


WEIGHT_FAMILIES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": _identity,
    "linear": _linear,
    "quadratic": _quadratic,
    "ordinal": _ordinal,
    "radical": _radical,
    "ratio": _ratio,
    "circular": _circular,
    "bipolar": _bipolar,
}


def weight_matrix(weights: Any, scores: np.ndarray) -> np.ndarray:
    """The q x q agreement-weight matrix for ``weights`` (a family name or a q x q array)."""
    scores = np.asarray(scores, dtype=float)
    q = scores.size
    if isinstance(weights, str):
        family = WEIGHT_FAMILIES.get(weights)
        if family is None:
            raise InputError(f"weights={weights!r}: expected one of {sorted(WEIGHT_FAMILIES)} or a q x q array")
        if q == 1 or weights == "identity":
            return np.eye(q)
        if np.unique(scores).size != q:
            raise InputError(f"weights={weights!r}: category values must be distinct, got {scores.tolist()}")
        return family(scores)
    matrix = np.asarray(weights, dtype=float)
    if matrix.shape != (q, q):
        raise InputError(f"weights: expected a {q} x {q} matrix (one row per category), got shape {matrix.shape}")
    if not np.isfinite(matrix).all() or matrix.min() < 0 or matrix.max() > 1:
        raise InputError("weights: agreement weights must be finite numbers in [0, 1]")
    if not np.allclose(np.diag(matrix), 1.0):
        raise InputError("weights: agreement weights need 1 on the diagonal (full agreement)")
    return matrix.copy()


def weights_name(weights: Any) -> str:
    return weights if isinstance(weights, str) else "custom"
