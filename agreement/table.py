"""Ratings as an items x raters code matrix, built from a long labels table or a wide matrix.

Every coefficient reads a ``RatingData``: ``codes[i, j]`` is the index into
``categories`` of rater j's label for unit i, -1 when rater j did not label unit i
(or the label was unscored). Categories keep their declared order because weighted
coefficients, Brennan-Prediger (pe = 1/q) and AC1 depend on it and on unused
categories (refs README, item 11).

The files themselves are read by ``agreement.label_files``.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agreement.label_files import _Factorizer, _LongColumns, _read_csv, _read_frame, _read_jsonl
from samples import InputError


def _is_missing(value: Any) -> bool:
    """None, NaN, pandas NA and blank text are missing; text such as 'NA' or 'none' is a label
    (a declared category list then rejects it by name instead of silently dropping it)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return not value.strip()
    return type(value).__name__ in {"NAType", "NaTType"}


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _category_scores(categories: Sequence[Any]) -> np.ndarray:
    """Numeric category values when every category is a number (irrCAC convention), else ranks 1..q."""
    numbers = [_as_number(c) for c in categories]
    if numbers and all(n is not None for n in numbers):
        return np.asarray(numbers, dtype=float)
    return np.arange(1, len(categories) + 1, dtype=float)


def _sorted_categories(values: Iterable[Any]) -> tuple[Any, ...]:
    values = list(values)
    numbers = [_as_number(v) for v in values]
    if all(n is not None for n in numbers):
        order = sorted(range(len(values)), key=lambda i: (numbers[i], str(values[i])))
    else:
        order = sorted(range(len(values)), key=lambda i: str(values[i]))
    return tuple(values[i] for i in order)


def _category_lookup(categories: Sequence[Any]) -> dict[Any, int]:
    """Map each category and its string form to its index, so '1' in a CSV matches a declared 1."""
    lookup: dict[Any, int] = {}
    for index, category in enumerate(categories):
        lookup.setdefault(category, index)
        lookup.setdefault(str(category), index)
        number = _as_number(category)
        if number is not None and number == int(number):
            lookup.setdefault(str(int(number)), index)
    return lookup


def _check_categories(categories: Any) -> tuple[Any, ...]:
    if isinstance(categories, (str, bytes)) or not isinstance(categories, Iterable):
        raise InputError(f"categories={categories!r}: expected a list of category labels")
    declared = tuple(categories)
    if not declared:
        raise InputError("categories=[]: declare at least one category")
    if any(_is_missing(c) for c in declared):
        raise InputError(f"categories={list(declared)!r}: a category cannot be empty or missing")
    if len({str(c) for c in declared}) != len(declared):
        raise InputError(f"categories={list(declared)!r}: categories must be distinct")
    return declared


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def labels_of(codes: np.ndarray, categories: Sequence[Any]) -> np.ndarray:
    """The label of each code (-1: None) as an object array, one take instead of a Python loop per unit."""
    lookup = np.empty(len(categories) + 1, dtype=object)
    lookup[:-1] = list(categories)  # the last slot stays None: code -1 reads it
    return lookup[np.asarray(codes, dtype=np.int64)]


_CHECKED: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()  # checked, frozen: by id


def _checked_ids(values: Any, n: int, *, attribute: str, each: str, what: str, units: np.ndarray, source: str):
    """``values`` as a read-only object array of ``each`` per unit, none missing, else an InputError naming the unit.
    An array another RatingData checked and froze is reused as it is (a gate builds dozens of tables over one)."""
    if (isinstance(values, np.ndarray) and _CHECKED.get(id(values)) is values and not values.flags.writeable
            and values.shape == (n,)):
        return values
    array = np.asarray(values, dtype=object).copy()
    if array.shape != (n,):
        raise InputError(f"{source}: {attribute} must give {each} per unit ({n}), got shape {array.shape}")
    if (blank := _first_missing(array)) is not None:
        raise InputError(f"{source}: unit {units[blank]!r} has no {what}")
    _CHECKED[id(array)] = _readonly(array)
    return array


@dataclass(frozen=True, eq=False)
class RatingData:
    """Validated ratings: ``codes`` (n units x r raters, -1 = missing) over ``categories``.

    ``clusters`` (per-unit cluster id, e.g. the trajectory) makes bootstraps and SEs
    resample whole clusters; ``strata`` (per-unit sampling stratum of a stratified
    sample) keeps every resample's count per stratum (``agreement.bootstrap.Design``); ``unit_weights`` (1/inclusion probability) weight each
    unit's contribution. ``source`` names the input in messages.
    """

    units: np.ndarray
    raters: tuple[str, ...]
    categories: tuple[Any, ...]
    codes: np.ndarray
    clusters: np.ndarray | None = None
    unit_weights: np.ndarray | None = None
    source: str = "ratings"
    strata: np.ndarray | None = None
    category_scores: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        codes = np.array(self.codes, dtype=np.int32, copy=True)
        units = np.asarray(self.units, dtype=object).copy()
        raters = tuple(str(r) for r in self.raters)
        categories = _check_categories(self.categories)
        if codes.ndim != 2:
            raise InputError(f"{self.source}: codes must be a units x raters matrix, got shape {codes.shape}")
        n, r = codes.shape
        if units.shape != (n,):
            raise InputError(f"{self.source}: {units.shape[0] if units.ndim else 0} unit ids for {n} rows of codes")
        if len(raters) != r:
            raise InputError(f"{self.source}: {len(raters)} rater names for {r} columns of codes")
        if len(set(raters)) != r:
            raise InputError(f"{self.source}: rater names must be distinct, got {list(raters)}")
        if n == 0:
            raise InputError(f"{self.source}: the table is empty (no units)")
        if r < 2:
            named = f" (only rater {raters[0]!r})" if raters else ""
            raise InputError(f"{self.source}: agreement needs at least two raters{named}")
        if codes.size and (codes.min() < -1 or codes.max() >= len(categories)):
            raise InputError(f"{self.source}: codes must be -1 (missing) or 0..{len(categories) - 1}")
        clusters = None if self.clusters is None else _checked_ids(
            self.clusters, n, attribute="clusters", each="one id", what="cluster id", units=units, source=self.source)
        strata = None if self.strata is None else _checked_ids(
            self.strata, n, attribute="strata", each="one stratum", what="stratum", units=units, source=self.source)
        weights = None
        if self.unit_weights is not None:
            weights = np.array(self.unit_weights, dtype=float, copy=True)
            if weights.shape != (n,):
                raise InputError(f"{self.source}: unit_weights must give one weight per unit ({n}), got shape {weights.shape}")
            bad_w = np.flatnonzero(~np.isfinite(weights) | (weights <= 0))
            if bad_w.size:
                i = int(bad_w[0])
                raise InputError(f"{self.source}: unit {units[i]!r} has weight {weights[i]!r}; expected a finite number > 0")
        object.__setattr__(self, "codes", _readonly(codes))
        object.__setattr__(self, "units", _readonly(units))
        object.__setattr__(self, "raters", raters)
        object.__setattr__(self, "categories", categories)
        object.__setattr__(self, "clusters", clusters)
        object.__setattr__(self, "unit_weights", None if weights is None else _readonly(weights))
        object.__setattr__(self, "strata", strata)
        object.__setattr__(self, "category_scores", _readonly(_category_scores(categories)))

    @property
    def n_units(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_raters(self) -> int:
        return int(self.codes.shape[1])

    @property
    def n_categories(self) -> int:
        return len(self.categories)

    @property
    def n_ratings(self) -> int:
        return int((self.codes >= 0).sum())

    def labels(self) -> np.ndarray:
        """The n x r matrix of category labels (None where missing)."""
        lookup = np.asarray(list(self.categories) + [None], dtype=object)
        return lookup[np.where(self.codes >= 0, self.codes, len(self.categories))]

    def rater_index(self, rater: str) -> int:
        try:
            return self.raters.index(str(rater))
        except ValueError:
            raise InputError(f"{self.source}: unknown rater {rater!r}; raters are {list(self.raters)}") from None

    def select_raters(self, raters: Sequence[str]) -> RatingData:
        """The same units restricted to ``raters`` (in that order); at least two."""
        if isinstance(raters, str):
            raise InputError(f"raters={raters!r}: expected a list of rater names")
        columns = [self.rater_index(r) for r in raters]
        return RatingData(
            units=self.units,
            raters=tuple(self.raters[c] for c in columns),
            categories=self.categories,
            codes=self.codes[:, columns],
            clusters=self.clusters,
            unit_weights=self.unit_weights,
            source=self.source,
            strata=self.strata,
        )

    def select_units(self, mask: Sequence[bool] | np.ndarray) -> RatingData:
        """The units where ``mask`` is true (a boolean array of length n, or unit indices)."""
        selector = np.asarray(mask)
        if selector.dtype == bool and selector.shape != (self.n_units,):
            raise InputError(f"mask: expected {self.n_units} booleans, got shape {selector.shape}")
        if selector.dtype != bool and not np.issubdtype(selector.dtype, np.integer):
            raise InputError(f"mask: expected booleans or unit indices, got dtype {selector.dtype}")
        return RatingData(
            units=self.units[selector],
            raters=self.raters,
            categories=self.categories,
            codes=self.codes[selector],
            clusters=None if self.clusters is None else self.clusters[selector],
            unit_weights=None if self.unit_weights is None else self.unit_weights[selector],
            source=self.source,
            strata=None if self.strata is None else self.strata[selector],
        )

    @classmethod
    def from_matrix(
        cls,
        matrix: Any,
        *,
        raters: Sequence[str] | None = None,
        units: Sequence[Any] | None = None,
        categories: Sequence[Any] | None = None,
        clusters: Sequence[Any] | None = None,
        unit_weights: Sequence[float] | None = None,
        source: str = "matrix",
    ) -> RatingData:
        """A wide items x raters matrix of labels; None/NaN/'' mean missing.

        A pandas DataFrame gives rater names from its columns and unit ids from its index.
        """
        if type(matrix).__module__.startswith("pandas"):
            if raters is None:
                raters = [str(c) for c in matrix.columns]
            if units is None:
                units = list(matrix.index)
            matrix = matrix.to_numpy(dtype=object)
        array = np.asarray(matrix)
        if array.ndim != 2:
            raise InputError(f"{source}: expected an items x raters matrix, got shape {array.shape}")
        n, r = array.shape
        raters = [f"rater{j + 1}" for j in range(r)] if raters is None else [str(x) for x in raters]
        unit_ids: Sequence[Any] | np.ndarray = np.arange(n) if units is None else units
        codes, cats = _encode_labels(
            array.reshape(-1), categories, source=source, where=lambda k: f"row {k // r + 1}, column {raters[k % r]!r}"
        )
        return cls(
            units=np.asarray(list(unit_ids), dtype=object) if not isinstance(unit_ids, np.ndarray) else unit_ids,
            raters=tuple(raters),
            categories=cats,
            codes=codes.reshape(n, r),
            clusters=None if clusters is None else np.asarray(clusters, dtype=object),
            unit_weights=None if unit_weights is None else np.asarray(unit_weights, dtype=float),
            source=source,
        )


def _first_missing(values: np.ndarray) -> int | None:
    """Index of the first missing value, testing each distinct value once."""
    listed = values.tolist()
    try:
        missing = {v for v in dict.fromkeys(listed) if _is_missing(v)}
    except TypeError:
        missing = {v for v in listed if _is_missing(v)}
    if not missing:
        return None
    return next(k for k, v in enumerate(listed) if v in missing or _is_missing(v))


def _encode_labels(
    values: np.ndarray, categories: Sequence[Any] | None, *, source: str, where: Any
) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Codes for a flat array of labels (-1 = missing) and the category tuple."""
    if values.dtype.kind in "iuf":
        finite = values if values.dtype.kind in "iu" else values[~np.isnan(values)]
        distinct_array, inverse = np.unique(finite, return_inverse=True)
        distinct = [int(v) if float(v).is_integer() else float(v) for v in distinct_array.tolist()]
        value_codes = np.full(values.shape, -1, dtype=np.int64)
        value_codes[~np.isnan(values) if values.dtype.kind == "f" else slice(None)] = inverse.reshape(-1)
    else:
        factorizer = _Factorizer("label", source)
        value_codes = factorizer.add(values.tolist())
        distinct = factorizer.uniques
    return _codes_for(value_codes, distinct, categories, source=source, where=where)


def _codes_for(
    value_codes: np.ndarray, distinct: list[Any], categories: Sequence[Any] | None, *, source: str, where: Any
) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Map codes of distinct raw labels to category codes; missing labels become -1."""
    present = [v for v in distinct if not _is_missing(v)]
    if categories is None:
        _refuse_mixed_kinds(value_codes, distinct, source=source, where=where)
        cats = _sorted_categories(present)
        if not cats:
            raise InputError(f"{source}: no labels at all; declare the categories or give at least one label")
    else:
        cats = _check_categories(categories)
    lookup = _category_lookup(cats)
    table = np.full(len(distinct) + 1, -1, dtype=np.int32)
    for position, value in enumerate(distinct):
        if _is_missing(value):
            continue
        index = lookup.get(value)
        if index is None and not isinstance(value, str):
            index = lookup.get(str(value))
        if index is None:
            first = int(np.flatnonzero(value_codes == position)[0])
            raise InputError(
                f"{source}: label {value!r} at {where(first)} is not a declared category; allowed: {list(cats)}"
            )
        table[position] = index
    return table[value_codes], cats


def _refuse_mixed_kinds(value_codes: np.ndarray, distinct: list[Any], *, source: str, where: Any) -> None:
    """Undeclared labels are all numbers (ordinal: scored by value) or all text (ranked by spelling).

    A 1 beside 'yes' in one column is a data mistake (a coded and an uncoded export merged,
    'N/A' among Likert scores) that would silently turn every numeric score into a rank.
    Declared categories decide the kinds themselves, so this applies to undeclared ones only.
    Checked once per distinct label; distinct labels come in order of first appearance, so
    the rows named are the first of each kind.
    """
    kinds = [None if _is_missing(v) else _as_number(v) is not None for v in distinct]
    number = next((p for p, numeric in enumerate(kinds) if numeric is True), None)
    text = next((p for p, numeric in enumerate(kinds) if numeric is False), None)
    if number is None or text is None:
        return

    def first_row(position: int) -> Any:
        return where(int(np.flatnonzero(value_codes == position)[0]))

    raise InputError(
        f"{source}: labels mix numbers and text ({distinct[number]!r} at {first_row(number)}, "
        f"{distinct[text]!r} at {first_row(text)}); give one kind of label, or declare the categories"
    )


def load_labels(
    source: str | Path | Any,
    *,
    unit: str = "unit",
    rater: str = "rater",
    label: str = "label",
    cluster: str | None = None,
    weight: str | None = None,
    categories: Sequence[Any] | None = None,
    stratum: str | None = None,
) -> RatingData:
    """Read a long labels table (one row per unit x rater) into ``RatingData``.

    ``source`` is a path (.csv, .jsonl/.ndjson, .parquet) or a pandas DataFrame. An
    empty/null label is a missing rating (an unscored judge row): the unit stays in
    the table. A rater labelling a unit twice, a label outside ``categories``, a
    missing column, an empty table or a single rater is an ``InputError`` naming it.
    ``cluster``, ``weight`` and ``stratum`` name per-unit columns (every row of a unit agrees).
    """
    names = {"unit": unit, "rater": rater, "label": label, "cluster": cluster, "weight": weight, "stratum": stratum}
    for role, col in names.items():
        if col is not None and not isinstance(col, str):
            raise InputError(f"{role}={col!r}: expected a column name")
    if type(source).__module__.startswith("pandas"):
        table = _read_frame(source, names, "DataFrame")
    else:
        from samples import regular_file

        path = regular_file(source, "ratings table")  # by type first: a FIFO would block, /dev/zero fill memory
        suffix = path.suffix.lower()
        if suffix == ".csv":
            table = _read_csv(path, names)
        elif suffix in {".jsonl", ".ndjson"}:
            table = _read_jsonl(path, names)
        elif suffix == ".parquet":
            import pyarrow.parquet as pq

            table = _read_frame(pq.read_table(path).to_pandas(), names, str(path))
            table.where_kind = "row"
        else:
            raise InputError(f"{path}: unsupported file type {suffix!r}; expected .csv, .jsonl or .parquet")
    return _from_long(table, categories=categories)


def _from_long(table: _LongColumns, *, categories: Sequence[Any] | None) -> RatingData:
    columns, lines = table.finish()
    source, where_kind, names = table.source, table.where_kind, table.names
    if lines.size == 0:
        raise InputError(f"{source}: the table is empty (no label rows)")
    for role in ("unit", "rater"):
        codes, uniques = columns[role]
        blank = next((k for k, v in enumerate(uniques) if _is_missing(v)), None)
        if blank is not None:
            first = int(np.flatnonzero(codes == blank)[0])
            raise InputError(f"{source}, {where_kind} {lines[first]}: empty {role} column {names[role]!r}")
    unit_idx, unit_ids = columns["unit"]
    rater_idx, rater_values = columns["rater"]
    rater_ids = [str(v) for v in rater_values]
    n, r = len(unit_ids), len(rater_ids)
    if len(set(rater_ids)) != r:
        raise InputError(f"{source}: rater names {rater_values} collide once written as text")
    if r < 2:
        raise InputError(f"{source}: agreement needs at least two raters (only rater {rater_ids[0]!r})")
    cell = unit_idx * r + rater_idx
    if np.bincount(cell, minlength=n * r).max() > 1:
        order = np.argsort(cell, kind="stable")
        repeated = np.flatnonzero(cell[order][1:] == cell[order][:-1])
        first, second = int(order[repeated[0]]), int(order[repeated[0] + 1])
        raise InputError(
            f"{source}: rater {rater_ids[rater_idx[first]]!r} labels unit {unit_ids[unit_idx[first]]!r} twice "
            f"({where_kind}s {lines[first]} and {lines[second]})"
        )
    label_codes, label_values = columns["label"]
    codes_flat, cats = _codes_for(
        label_codes, label_values, categories, source=source, where=lambda k: f"{where_kind} {lines[k]}"
    )
    codes = np.full(n * r, -1, dtype=np.int32)
    codes[cell] = codes_flat
    per_unit = {
        role: _per_unit(columns[role], unit_idx, unit_ids, lines, source, where_kind, names[role], numeric=role == "weight")
        for role in ("cluster", "weight", "stratum")
        if role in columns
    }
    return RatingData(
        units=np.asarray(unit_ids, dtype=object),
        raters=tuple(rater_ids),
        categories=cats,
        codes=codes.reshape(n, r),
        clusters=per_unit.get("cluster"),
        unit_weights=per_unit.get("weight"),
        source=source,
        strata=per_unit.get("stratum"),
    )


def _per_unit(
    column: tuple[np.ndarray, list[Any]],
    unit_idx: np.ndarray,
    unit_ids: list[Any],
    lines: np.ndarray,
    source: str,
    where_kind: str,
    name: str | None,
    *,
    numeric: bool,
) -> np.ndarray:
    """One value per unit from a per-row column; every row of a unit must agree."""
    codes, uniques = column
    values: list[Any] = []
    for position, value in enumerate(uniques):
        problem = None
        if _is_missing(value):
            problem = f"empty {name!r}"
        elif numeric:
            number = _as_number(value)
            if number is None or number <= 0:
                problem = f"{name!r} is {value!r}; expected a number > 0"
            value = number
        if problem:
            first = int(np.flatnonzero(codes == position)[0])
            raise InputError(f"{source}, {where_kind} {lines[first]}: {problem}")
        values.append(value)
    per_unit = np.full(len(unit_ids), -1, dtype=np.int64)
    per_unit[unit_idx[::-1]] = codes[::-1]
    conflict = np.flatnonzero(per_unit[unit_idx] != codes)
    if conflict.size:
        k = int(conflict[0])
        other = int(np.flatnonzero(unit_idx == unit_idx[k])[0])
        raise InputError(
            f"{source}: unit {unit_ids[unit_idx[k]]!r} has {name!r} {uniques[codes[other]]!r} at {where_kind} {lines[other]} "
            f"but {uniques[codes[k]]!r} at {where_kind} {lines[k]}; one value per unit expected"
        )
    lookup = np.empty(len(values), dtype=float if numeric else object)
    lookup[:] = values
    return lookup[per_unit]
