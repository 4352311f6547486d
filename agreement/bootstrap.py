"""The resampling design: exact multinomial unit/cluster bootstrap without a B x n matrix.

Units collapse to distinct rating patterns (the full codes row plus the unit
weight), so every per-unit statistic is computed once per pattern. The resampled
"atoms" are the patterns (i.i.d. units) or the distinct clusters (a cluster is its
multiset of patterns; identical clusters merge). Resampling N units/clusters with
replacement is exactly a Multinomial(N, multiplicity / N) draw over atoms; it is
drawn either directly (few atoms) or as N uniform indices binned per resample
(many atoms), in fixed-size chunks of resamples so memory stays bounded. A
resample's sums are then (counts over atoms) @ (per-atom statistics), one matrix
product for every coefficient and rater subset at once: all share one draw.

A stratified sample (``RatingData.strata``) is resampled within its strata: each
stratum's clusters (or units) are drawn from that stratum alone, as many as it
has, so a resample keeps the sample's allocation and the between-strata variance
the design removed does not come back (the audit's shares do the same,
``agreement.estimate.cluster_totals``). Atoms then never merge across strata. When
a cluster spans several strata (cases across models stratified by model) the strata
cannot be kept and the resampling pools them, saying so in ``resampling``.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement.table import RatingData
from samples import DEFAULT_SEED  # noqa: F401  (imported from here by agreement and benchmarks)

# Elements of the per-chunk draw (counts or indices): bounds memory at ~8 bytes each.
_CHUNK_ELEMENTS = 1 << 18
# Relative cost of one binomial draw in numpy's multinomial vs one uniform index:
# measured ~200-400 ns vs ~15-30 ns per element on this project's machines.
_MULTINOMIAL_COST = 15.0


def _row_keys(matrix: np.ndarray) -> np.ndarray:
    """An int64 key per row of a matrix of integers >= -1 (mixed radix when it fits, else row ids)."""
    n, width = matrix.shape
    if n == 0 or width == 0:
        return np.zeros(n, dtype=np.int64)
    radix = int(matrix.max()) + 2
    if width * math.log2(radix) < 62:
        powers = radix ** np.arange(width, dtype=np.int64)
        return (matrix.astype(np.int64) + 1) @ powers
    return np.unique(matrix, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def pattern_keys(codes: np.ndarray, n_categories: int, groups: list[tuple[list[int], bool]]) -> np.ndarray:
    """Columns identifying a unit's pattern: per rater group, its codes, or its category counts
    when every coefficient on that group is exchangeable (depends on counts only)."""
    parts = []
    for columns, exchangeable in groups:
        sub = codes[:, columns]
        if exchangeable:
            parts.append(np.stack([(sub == k).sum(axis=1) for k in range(n_categories)], axis=1))
        else:
            parts.append(sub)
    return np.concatenate(parts, axis=1)


def _group(keys: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first index, inverse, counts) of the distinct (key, weight) rows."""
    if weights is None:
        _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        return first, inverse.reshape(-1), counts
    order = np.lexsort((weights, keys))
    k, w = keys[order], weights[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (k[1:] != k[:-1]) | (w[1:] != w[:-1])
    group_sorted = np.cumsum(new) - 1
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = group_sorted
    first = order[new]
    counts = np.bincount(group_sorted)
    return first, inverse, counts


def _factorize(values: np.ndarray) -> np.ndarray:
    index: dict[object, int] = {}
    return np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()), dtype=np.int64, count=values.size)


def _cluster_atoms(
    cluster_of_unit: np.ndarray, unit_pattern: np.ndarray, n_patterns: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merge clusters holding the same multiset of patterns into one atom (exact).

    A cluster's signature is its sorted (pattern, count) entries; clusters with the
    same number of entries are compared as rows of one matrix, so memory stays at
    twice the number of entries however many clusters there are.
    Returns (entry_atom, entry_pattern, entry_count, member_atom, multiplicity).
    """
    n_clusters = int(cluster_of_unit.max()) + 1 if cluster_of_unit.size else 0
    if n_clusters == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty, empty
    pair_keys, pair_counts = np.unique(cluster_of_unit * n_patterns + unit_pattern, return_counts=True)
    patterns = pair_keys % n_patterns
    sizes = np.bincount(pair_keys // n_patterns, minlength=n_clusters)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    member_atom = np.empty(n_clusters, dtype=np.int64)
    atoms, entries, counts, multiplicity = [], [], [], []
    next_atom = 0
    for size in np.unique(sizes).tolist():
        members = np.flatnonzero(sizes == size)
        index = starts[members][:, None] + np.arange(size)
        signature = np.concatenate([patterns[index], pair_counts[index]], axis=1)
        distinct, inverse, times = np.unique(signature, axis=0, return_inverse=True, return_counts=True)
        member_atom[members] = next_atom + inverse.reshape(-1)
        atoms.append(np.repeat(next_atom + np.arange(distinct.shape[0]), size))
        entries.append(distinct[:, :size].reshape(-1))
        counts.append(distinct[:, size:].reshape(-1))
        multiplicity.append(times)
        next_atom += distinct.shape[0]
    return (
        np.concatenate(atoms), np.concatenate(entries), np.concatenate(counts), member_atom, np.concatenate(multiplicity)
    )


@dataclass(frozen=True, eq=False)
class Design:
    """Patterns, atoms and members of one dataset's resampling scheme."""

    codes: np.ndarray  # (P, r) representative codes per pattern
    pattern_weight: np.ndarray  # (P,) unit weight of the pattern (1 without weights)
    pattern_units: np.ndarray  # (P,) number of units with the pattern
    entry_atom: np.ndarray  # atom of each (atom, pattern, count) entry, sorted by atom
    entry_pattern: np.ndarray
    entry_count: np.ndarray
    atom_start: np.ndarray  # first entry of each atom
    atom_multiplicity: np.ndarray  # (A,) members (units/clusters) sharing the atom
    member_atom: np.ndarray  # (N,) atom of each member, for index draws
    clustered: bool
    n_unrated: int
    atom_stratum: np.ndarray | None = None  # (A,) stratum code of each atom; None = pooled resampling
    resampling: str = ""  # what one resample draws, for every interval's method ("120 clusters within 4 strata")

    @property
    def n_atoms(self) -> int:
        return int(self.atom_multiplicity.size)

    @property
    def n_members(self) -> int:
        return int(self.member_atom.size)

    @classmethod
    def build(cls, data: RatingData, *, groups: list[tuple[list[int], bool]], cluster: bool) -> Design:
        """Patterns of the units rated by anyone in ``groups`` ((columns, exchangeable) pairs)."""
        used = sorted({c for columns, _ in groups for c in columns})
        rated = np.any(data.codes[:, used] >= 0, axis=1)
        codes = data.codes[rated]
        weights = None if data.unit_weights is None else data.unit_weights[rated]
        clusters = data.clusters if cluster else None
        clustered = clusters is not None
        cluster_of_unit = _factorize(clusters[rated]) if clusters is not None else None
        stratum_of_unit, strata_note = _strata(data, rated, cluster_of_unit)
        parts = pattern_keys(codes, data.n_categories, groups)
        if stratum_of_unit is not None:  # a pattern belongs to one stratum, so atoms do too
            parts = np.column_stack([parts, stratum_of_unit])
        keys = _row_keys(parts)
        first, unit_pattern, counts = _group(keys, weights)
        n_patterns = first.size
        pattern_weight = np.ones(n_patterns) if weights is None else weights[first]
        if cluster_of_unit is not None:
            entry_atom, entry_pattern, entry_count, member_atom, multiplicity = _cluster_atoms(
                cluster_of_unit, unit_pattern, n_patterns
            )
        else:
            entry_atom = entry_pattern = np.arange(n_patterns)
            entry_count = np.ones(n_patterns, dtype=np.int64)
            member_atom, multiplicity = unit_pattern, counts
        atom_start = np.flatnonzero(np.r_[True, entry_atom[1:] != entry_atom[:-1]]) if entry_atom.size else entry_atom
        atom_stratum = None if stratum_of_unit is None else stratum_of_unit[first][entry_pattern[atom_start]]
        n_members = int(member_atom.size)
        resampling = f"{n_members} {'clusters' if clustered else 'units'}"
        if atom_stratum is not None:
            resampling += f" within {np.unique(atom_stratum).size} strata"
        resampling += strata_note
        return cls(
            codes=codes[first],
            pattern_weight=pattern_weight,
            pattern_units=counts,
            entry_atom=entry_atom,
            entry_pattern=entry_pattern,
            entry_count=entry_count.astype(float),
            atom_start=atom_start,
            atom_multiplicity=multiplicity.astype(float),
            member_atom=member_atom,
            clustered=clustered,
            n_unrated=int((~rated).sum()),
            atom_stratum=atom_stratum,
            resampling=resampling,
        )

    def per_atom(self, per_pattern: np.ndarray) -> np.ndarray:
        """Sum a (P, d) per-pattern array over each atom's units: (A, d)."""
        if not self.clustered:
            return per_pattern
        contributions = self.entry_count[:, None] * per_pattern[self.entry_pattern]
        return np.add.reduceat(contributions, self.atom_start, axis=0)

    def draws(self, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
        """Chunks of (rows, A) float multiplicities, one row per resample; exact multinomial
        (within each stratum of a stratified design, independently)."""
        rng = np.random.default_rng(seed)
        atoms, members = self.n_atoms, self.n_members
        if atoms == 0:
            return
        blocks: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]]
        if self.atom_stratum is None:
            blocks = [(None, self.atom_multiplicity, self.member_atom)]
        else:
            blocks = []
            for stratum in np.unique(self.atom_stratum):
                mine = np.flatnonzero(self.atom_stratum == stratum)
                local = np.full(atoms, -1, dtype=np.int64)
                local[mine] = np.arange(mine.size)
                member_local = local[self.member_atom]
                blocks.append((mine, self.atom_multiplicity[mine], member_local[member_local >= 0]))
        direct = self.atom_stratum is None and atoms * _MULTINOMIAL_COST <= members
        chunk = max(1, _CHUNK_ELEMENTS // (atoms if direct else max(members, atoms)))
        done = 0
        while done < n_resamples:
            rows = min(chunk, n_resamples - done)
            counts = np.zeros((rows, atoms))
            for columns, multiplicity, member_atom in blocks:
                block = _multinomial_rows(rng, rows, multiplicity, member_atom)
                if columns is None:
                    counts = block
                else:
                    counts[:, columns] = block
            done += rows
            yield counts


def _multinomial_rows(rng: np.random.Generator, rows: int, multiplicity: np.ndarray,
                      member_atom: np.ndarray) -> np.ndarray:
    """(rows, atoms) resampled multiplicities of ``member_atom.size`` members drawn with replacement:
    one multinomial over the atoms when they are few, else uniform member picks binned per row."""
    atoms, members = multiplicity.size, member_atom.size
    if atoms * _MULTINOMIAL_COST <= members:
        return rng.multinomial(members, multiplicity / members, size=rows).astype(float)
    picks = member_atom[rng.integers(0, members, size=(rows, members))]
    picks += (np.arange(rows, dtype=np.int64) * atoms)[:, None]
    return np.bincount(picks.reshape(-1), minlength=rows * atoms).reshape(rows, atoms).astype(float)


def _strata(data: RatingData, rated: np.ndarray, cluster_of_unit: np.ndarray | None) -> tuple[np.ndarray | None, str]:
    """Stratum code per rated unit when the design is stratified and clusters nest in strata, and a note
    when strata were given but cannot be kept."""
    if data.strata is None:
        return None, ""
    stratum_of_unit = _factorize(data.strata[rated])
    if stratum_of_unit.size == 0 or stratum_of_unit.max() < 1:
        return None, ""
    if cluster_of_unit is not None:
        pairs = np.unique(np.column_stack([cluster_of_unit, stratum_of_unit]), axis=0)
        if pairs.shape[0] > np.unique(cluster_of_unit).size:
            return None, "; strata not used: a cluster spans several strata"
    return stratum_of_unit, ""


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the many small matrix products on one BLAS thread.

    OpenBLAS threads spin on a shared, busy machine: a 10,000 x 1,000 x 20 product
    measured 0.95 s with threads vs 0.06 s on one. threadpoolctl (a dependency of
    scikit-learn) is used when installed; without it the products still run. Its controller
    is built once: building one scans every loaded shared library (8 ms a call with pandas
    and scipy loaded, more than a small bootstrap), and numpy's BLAS, the one these
    products use, is loaded before the first call.
    """
    controller = _blas_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


@functools.cache
def _blas_controller() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()
