"""Seeded synthetic rating panels, written in the formats accord and its peers read.

A panel has a latent true label per unit (prevalence ``prevalence`` for the first
category), raters that copy it with probability ``accuracy`` and otherwise draw a
category uniformly, an optional share of missing ratings, and units nested in
clusters (trajectories). The same panel is written as accord's long CSV and as a
judgecheck panel directory, so both tools measure identical data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agreement.bootstrap import DEFAULT_SEED


@dataclass(frozen=True, kw_only=True)
class Panel:
    """Ratings as an items x raters code matrix (-1 missing) plus names."""

    codes: np.ndarray
    raters: tuple[str, ...]
    categories: tuple[str, ...]
    clusters: np.ndarray

    @property
    def n_units(self) -> int:
        return int(self.codes.shape[0])

    def unit_ids(self) -> np.ndarray:
        width = len(str(self.n_units - 1))
        return np.char.add("u", np.char.zfill(np.arange(self.n_units).astype(str), width))


def make_panel(n_units: int, n_raters: int, *, categories: tuple[str, ...] = ("yes", "no"),
               prevalence: float = 0.3, accuracy: float = 0.85, missing: float = 0.0,
               units_per_cluster: int = 3, seed: int = DEFAULT_SEED, rater_prefix: str = "r") -> Panel:
    """A reproducible panel; every unit keeps at least one rating."""
    if n_units < 1 or n_raters < 1:
        raise ValueError(f"n_units={n_units}, n_raters={n_raters}: both must be >= 1")
    if not 0.0 <= missing < 1.0:
        raise ValueError(f"missing={missing!r}: expected a share in [0, 1)")
    rng = np.random.default_rng(seed)
    q = len(categories)
    rest = (1.0 - prevalence) / (q - 1)
    truth = rng.choice(q, size=n_units, p=[prevalence] + [rest] * (q - 1))
    copy = rng.random((n_units, n_raters)) < accuracy
    noise = rng.integers(0, q, size=(n_units, n_raters))
    codes = np.where(copy, truth[:, None], noise)
    if missing:
        holes = rng.random((n_units, n_raters)) < missing
        holes[np.arange(n_units), rng.integers(0, n_raters, size=n_units)] = False
        codes = np.where(holes, -1, codes)
    width = len(str(n_raters - 1))
    raters = tuple(f"{rater_prefix}{i:0{width}d}" for i in range(n_raters))
    clusters = np.arange(n_units) // units_per_cluster
    return Panel(codes=codes, raters=raters, categories=tuple(categories), clusters=clusters)


def write_long_csv(panel: Panel, path: Path) -> Path:
    """accord's long table: unit,rater,label,cluster (one row per present rating)."""
    units = panel.unit_ids()
    item, rater = np.nonzero(panel.codes >= 0)
    labels = np.asarray(panel.categories, dtype=object)[panel.codes[item, rater]]
    names = np.asarray(panel.raters, dtype=object)[rater]
    clusters = np.char.add("t", panel.clusters.astype(str))[item]
    rows = [",".join(r) for r in zip(units[item], names, labels, clusters)]
    path.write_text("unit,rater,label,cluster\n" + "\n".join(rows) + "\n")
    return path


def write_judgecheck_dir(panel: Panel, folder: Path) -> Path:
    """judgecheck's panel: ``<rater>.jsonl`` with one {"findingId", "label"} line per rating."""
    folder.mkdir(parents=True, exist_ok=True)
    units = panel.unit_ids()
    for j, rater in enumerate(panel.raters):
        present = np.nonzero(panel.codes[:, j] >= 0)[0]
        lines = [json.dumps({"findingId": str(units[i]), "label": panel.categories[panel.codes[i, j]]})
                 for i in present]
        (folder / f"{rater}.jsonl").write_text("\n".join(lines) + "\n")
    return folder
