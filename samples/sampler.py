"""Stratified sampling with exact inclusion probabilities.

Design (every probability below is exact under it; tests check them against a
brute-force enumeration):

* Random keys are assigned in ``unit_id`` (and trajectory id) order, so the draw
  does not depend on the order of the input rows.
* Strata are the plan's fields; a stratum key reads ``field=value|field=value``.
* Without ``one_per_trajectory`` the sampled elements are units: a simple random
  sample without replacement of ``n_h`` of the ``N_h`` units of stratum h, so
  ``p = n_h / N_h``.
* With ``one_per_trajectory`` (ISE D.2) the elements are trajectories. A trajectory
  belongs to the first stratum its units reach in priority order (positive strata
  first when the plan names positives, then stratum key order): the one stratum it
  can represent. One of its units in that stratum is its representative, chosen
  uniformly (``1/m``); ``n_h`` of the ``N_h`` trajectories of the stratum are drawn
  by simple random sampling, so ``p = (n_h / N_h) * (1 / m)``. Units of a
  trajectory in its lower-priority strata are outside the frame (p = 0) and are
  counted per stratum in the manifest (``outside_frame``), never hidden.
* Hard negatives: inside a negative stratum, elements with a hardness score > 0
  form a "hard" tier sampled first (``min(n_h, N_hard)``), the rest of ``n_h``
  comes from the "easy" tier; each tier is its own stratum (``...|tier=hard``) with
  its own exact ``p``. With one unit per trajectory, a trajectory with any hard unit
  is hard and its representative is drawn among its hard units only.
* A stratum smaller than its allocation gives all it has; the shortfall is reported,
  never padded from other strata.

All randomness comes from one ``numpy.random.Generator(PCG64(seed))``; the same
inputs and seed give the same draw in any process (no dependence on hashing order).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from samples.errors import InputError
from samples.jsonl import record_bytes
from samples.plans import JUDGE_PREFIX, SamplingPlan
from samples.seed import DEFAULT_SEED, check_seed

if TYPE_CHECKING:
    from samples.hardness import HardnessScorer


@dataclass(frozen=True, kw_only=True)
class StratumCount:
    """One stratum (or tier) of the draw, as the manifest reports it."""

    stratum: str
    positive: bool | None
    tier: str | None
    population_units: int
    frame_size: int
    outside_frame: int
    requested: int
    sampled: int
    shortfall: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True, kw_only=True)
class Draw:
    """Selected rows of the frame (in unit_id order) with stratum and inclusion probability."""

    rows: np.ndarray
    stratum: np.ndarray
    inclusion_prob: np.ndarray
    counts: tuple[StratumCount, ...]
    seed: int

    @property
    def n(self) -> int:
        return int(self.rows.size)

    @property
    def shortfalls(self) -> list[dict]:
        return [{"stratum": c.stratum, "requested": c.requested, "available": c.frame_size, "shortfall": c.shortfall}
                for c in self.counts if c.shortfall > 0]


def largest_remainder(total: int, weights: np.ndarray) -> np.ndarray:
    """Integers proportional to ``weights`` summing to ``total`` (Hamilton); ties go to the earlier stratum."""
    weights = np.asarray(weights, dtype=float)
    if weights.size == 0:
        return np.zeros(0, dtype=np.int64)
    if weights.sum() <= 0:
        return np.zeros(weights.size, dtype=np.int64)
    quota = total * weights / weights.sum()
    base = np.floor(quota).astype(np.int64)
    left = total - int(base.sum())
    order = np.lexsort((np.arange(weights.size), -(quota - base)))
    base[order[:left]] += 1
    return base


def allocate(plan: SamplingPlan, keys: Sequence[str], sizes: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Requested n per stratum, plus requested strata the population lacks entirely."""
    sizes = np.asarray(sizes, dtype=np.int64)
    absent: list[str] = []
    if plan.allocation == "fixed":
        base = plan.n_per_stratum or 0
        requested = np.array([plan.n_by_stratum.get(k, base) for k in keys], dtype=np.int64)
        absent = sorted(set(plan.n_by_stratum) - set(keys))
    elif plan.allocation == "proportional":
        requested = largest_remainder(plan.n, sizes)
    elif plan.allocation == "equal":
        h = len(keys)
        requested = np.full(h, plan.n // h if h else 0, dtype=np.int64)
        requested[: plan.n - int(requested.sum())] += 1
    else:
        n_pos = int(math.floor(plan.n * plan.positive.share + 0.5))
        requested = np.zeros(len(keys), dtype=np.int64)
        for group, n_group in ((positive, n_pos), (~positive, plan.n - n_pos)):
            idx = np.flatnonzero(group)
            if idx.size:
                requested[idx] = largest_remainder(n_group, sizes[idx])
            elif n_group:
                absent.append("(positive strata)" if group is positive else "(negative strata)")
    return requested, absent


def sorted_codes(values: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes ranking each value in sorted (code-point) order, and the sorted distinct values.

    Hash-factorize first, then sort only the distinct values: much faster than a
    sorting factorize over a million Python strings.
    """
    codes, uniques = pd.factorize(pd.Series(values, copy=False), sort=False)
    uniques = np.asarray(uniques, dtype=str)
    order = np.argsort(uniques, kind="stable")
    remap = np.empty(order.size, dtype=np.int64)
    remap[order] = np.arange(order.size)
    return remap[codes], uniques[order]


def _stratum_codes(frame: pd.DataFrame, fields: Sequence[str]) -> tuple[np.ndarray, list[str], list[tuple[str, ...]]]:
    """Stratum code per row (strata in key order), the stratum keys and each stratum's field values."""
    if not fields:
        return np.zeros(len(frame), dtype=np.int64), ["all"], [()]
    combined = np.zeros(len(frame), dtype=np.int64)
    uniques = []
    for field in fields:
        codes, values = sorted_codes(frame[field])
        combined = combined * len(values) + codes
        uniques.append(values)
    groups, inverse = np.unique(combined, return_inverse=True)
    values_by_group = []
    for g in groups:
        parts = []
        for values in reversed(uniques):
            g, code = divmod(int(g), len(values))
            parts.append(str(values[code]))
        values_by_group.append(tuple(reversed(parts)))
    keys = ["|".join(f"{f}={v}" for f, v in zip(fields, vals)) for vals in values_by_group]
    return inverse.astype(np.int64), keys, values_by_group


def _rank_within(groups: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Rank of each element by ``keys`` inside its group (0 = smallest key)."""
    order = np.lexsort((keys, groups))
    sorted_groups = groups[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_groups)) + 1]
    run = np.repeat(starts, np.diff(np.r_[starts, sorted_groups.size]))
    rank = np.empty(groups.size, dtype=np.int64)
    rank[order] = np.arange(groups.size) - run
    return rank


def draw(frame: pd.DataFrame, plan: SamplingPlan, *, seed: int = DEFAULT_SEED) -> Draw:
    """Draw the plan's sample from ``frame`` (columns unit_id, trajectory_id, the strata fields, optional hardness)."""
    seed = check_seed(seed)
    missing = [c for c in ("unit_id", "trajectory_id", *plan.strata) if c not in frame.columns]
    if missing:
        raise InputError(f"sample: frame lacks column(s) {missing}")
    if len(frame) == 0:
        raise InputError(f"sample: no units of kinds {plan.kinds} in the population")
    rank, sorted_ids = sorted_codes(frame["unit_id"])
    if len(sorted_ids) < len(frame):
        counts_by_id = np.bincount(rank)
        raise InputError(f"sample: unit_id {sorted_ids[int(np.argmax(counts_by_id > 1))]!r} appears more than once in the population")
    work = frame
    n_units = len(work)
    s, keys, values = _stratum_codes(work, plan.strata)
    h = len(keys)
    if plan.positive is not None:
        field_index = plan.strata.index(plan.positive.field)
        positive = np.array([v[field_index] in plan.positive.values for v in values])
    else:
        positive = np.zeros(h, dtype=bool)
    hardness = work["hardness"].to_numpy(dtype=float) if "hardness" in work.columns else np.zeros(n_units)
    tiered = np.zeros(h, dtype=bool) if plan.hard_negatives is None else ~positive
    hard_unit = tiered[s] & (hardness > 0)
    rng = np.random.default_rng(seed)
    unit_key = rng.random(n_units)[rank]
    population_units = np.bincount(s, minlength=h)

    if plan.one_per_trajectory:
        tcode, _ = sorted_codes(work["trajectory_id"])
        n_traj = int(tcode.max()) + 1
        priority = s + h * (~positive[s] if plan.positive is not None else 0)
        best = np.full(n_traj, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, tcode, priority)
        eligible = priority == best[tcode]
        traj_hard = np.zeros(n_traj, dtype=bool)
        np.logical_or.at(traj_hard, tcode, hard_unit & eligible)
        candidate = eligible & (hard_unit | ~traj_hard[tcode])
        m = np.bincount(tcode, weights=candidate, minlength=n_traj)
        cand_idx = np.flatnonzero(candidate)
        pick = cand_idx[np.lexsort((unit_key[cand_idx], tcode[cand_idx]))]
        first = np.r_[True, tcode[pick][1:] != tcode[pick][:-1]]
        element_unit = pick[first]
        within = 1.0 / m[tcode[element_unit]]
        element_tier = traj_hard[tcode[element_unit]]
        outside = np.bincount(s[~candidate], minlength=h)
    else:
        element_unit = np.arange(n_units)
        within = np.ones(n_units)
        element_tier = hard_unit
        outside = np.zeros(h, dtype=np.int64)

    element_stratum = s[element_unit]
    frame_size = np.bincount(element_stratum, minlength=h)
    requested, absent = allocate(plan, keys, frame_size, positive)
    group = element_stratum * 2 + element_tier.astype(np.int64)
    group_size = np.bincount(group, minlength=2 * h)
    take = np.zeros(2 * h, dtype=np.int64)
    take[1::2] = np.where(tiered, np.minimum(requested, group_size[1::2]), 0)
    take[0::2] = np.minimum(requested - take[1::2], group_size[0::2])
    if plan.one_per_trajectory:
        element_key = rng.random(n_traj)[tcode[element_unit]]
    else:
        element_key = rng.random(n_units)[rank]
    chosen = _rank_within(group, element_key) < take[group]
    sizes = group_size[group[chosen]]
    probability = take[group[chosen]] / sizes * within[chosen]
    rows = element_unit[chosen]
    labels = np.array([k + ("|tier=hard" if t else "|tier=easy") if tiered[i] else k
                       for i, k in enumerate(keys) for t in (0, 1)], dtype=object)
    stratum = labels[group[chosen]]
    resort = np.argsort(rank[rows], kind="stable")

    counts = []
    for i in range(len(keys)):
        tiers = (("easy", 0), ("hard", 1)) if tiered[i] else ((None, None),)
        for tier, bit in tiers:
            size = int(frame_size[i]) if tier is None else int(group_size[2 * i + bit])
            got = int(take[2 * i]) + int(take[2 * i + 1]) if tier is None else int(take[2 * i + bit])
            want = int(requested[i]) if tier is None else (got if tier == "hard" else int(requested[i]) - int(take[2 * i + 1]))
            counts.append(StratumCount(
                stratum=labels[2 * i + (bit or 0)], positive=bool(positive[i]) if plan.positive is not None else None,
                tier=tier, population_units=int(population_units[i]) if tier in (None, "easy") else 0,
                frame_size=size, outside_frame=int(outside[i]) if tier in (None, "easy") else 0,
                requested=want, sampled=got, shortfall=max(0, want - got)))
    for key in absent:
        wanted = plan.n_by_stratum.get(key, 0) if plan.allocation == "fixed" else 0
        counts.append(StratumCount(stratum=key, positive=None, tier=None, population_units=0, frame_size=0,
                                   outside_frame=0, requested=wanted, sampled=0, shortfall=wanted))
    return Draw(rows=rows[resort], stratum=stratum[resort], inclusion_prob=probability[resort],
                counts=tuple(counts), seed=int(seed))


_NO_LABEL = "(none)"
_MISSING = "(missing)"
_UNSCORED = "(unscored)"


def read_judge_labels(path: str | Path, judges: Sequence[str]) -> dict[str, dict[str, tuple[str, int | None]]]:
    """``{judge: {unit_id: (label, first_turn)}}`` from a judge labels file (sample_index 0 only), the
    sampler's view of ``samples.tables.judge_label_rows``.

    Unscored rows read as "(unscored)": they form their own stratum value, never a label.
    """
    from samples.tables import judge_label_rows

    wanted = set(judges)
    table: dict[str, dict[str, tuple[str, int | None]]] = {j: {} for j in judges}
    for _, row in judge_label_rows(path):
        if row.judge in wanted and row.sample_index == 0:
            table[row.judge][row.unit_id] = (_UNSCORED if row.label is None else row.label, row.first_turn)
    empty = sorted(j for j, rows in table.items() if not rows)
    if empty:
        raise InputError(f"{path}: no labels from judge(s) {empty} the plan uses")
    return table


def judge_label(labels: dict[str, tuple[str, int | None]], unit: dict) -> str:
    """The judge's label for a unit; an identify_turn without its own label takes the
    trajectory judge's verdict: "yes" only on its first recognition turn (ISE A.3)."""
    from samples.kinds import get_kind, projected_from
    from samples.schemes import get_scheme
    from samples.units import unit_id

    if unit["unit_id"] in labels:
        return labels[unit["unit_id"]][0]
    source = projected_from(unit["kind"])
    if source is not None:
        whole = labels.get(unit_id(unit["trajectory_id"], source, None))
        if whole is not None:
            label, first = whole
            scheme = get_scheme(get_kind(source).scheme)
            if label == scheme.positive:  # the positive only on the turn it names, the other label elsewhere
                return label if first == unit["focus_turn"] else next(o for o in scheme.labels if o != label)
            return label
    return _NO_LABEL


def labelled_units(study: str | Path) -> set[str]:
    """Unit ids people have labelled in a study (its sealed key joined with every human labels file)."""
    from samples.jsonl import json_objects
    from samples.layout import StudyLayout
    from samples.tables import key_entries

    layout = StudyLayout.of(study)
    if not layout.key.is_file():
        raise InputError(f"--exclude-labelled {layout.root}: no sealed key at {layout.key}, so no labelled units")
    unit_of = {entry.task_id: entry.unit_id for _, entry in key_entries(layout.key)}
    return {unit_of[row.get("task_id")] for path in layout.human_label_files() for _, row in json_objects(path)
            if row.get("task_id") in unit_of}


def sample_study(study: str | Path, plan_path: str | Path, *, seed: int = DEFAULT_SEED,
                 labels_path: str | Path | None = None, units_path: str | Path | None = None,
                 progress: Callable[[int], None] | None = None, exclude_labelled: str | Path | None = None) -> dict:
    """Draw the plan's sample from ``STUDY/units.jsonl``; write ``STUDY/sample/`` and return the manifest.

    The units are read only when they match their ingest generation, and the sample and
    its manifest are published together (``samples.generation``). A plan that names a
    stratum field, a positive value or a stratum no unit has is refused (a typo would
    otherwise give an unstratified sample), and so is a draw of no units: the sample
    already saved stays. ``exclude_labelled`` (a study folder) leaves out the units people
    labelled there: a fresh human sample for a revised judge (``agreement.preregistration``).
    """
    from contextlib import nullcontext

    from samples.context import turn_contexts
    from samples.documents import SampleManifest, checked
    from samples.generation import publishing, reading
    from samples.hardness import make_scorer
    from samples.jsonl import decode_json_line, os_error_message
    from samples.kinds import context_turns, get_kind
    from samples.layout import StudyLayout
    from samples.plans import load_plan
    from samples.records import SampledUnit

    seed = check_seed(seed)
    layout = StudyLayout.of(study)
    if layout.root.exists() and not layout.root.is_dir():
        raise InputError(f"{layout.root}: is a file; expected the study folder")
    plan, plan_sha = load_plan(plan_path)
    units_path = Path(units_path) if units_path else layout.units
    if units_path.is_dir():
        raise InputError(f"{units_path}: is a folder; expected the units file")
    if not units_path.is_file():
        raise InputError(f"{units_path}: units file not found (run `accord ingest` first)")
    judges = plan.judges_needed()
    if judges and labels_path is None:
        if not layout.judge_labels.is_file():
            raise InputError(f"plan {plan.name!r} uses judge labels {judges}: pass --labels (no {layout.judge_labels})")
        labels_path = layout.judge_labels
    labels = read_judge_labels(labels_path, judges) if judges else {}
    scorer = None
    if plan.hard_negatives is not None:
        scorer = make_scorer(plan.hard_negatives.scorer, judges=plan.hard_negatives.judges,
                             terms=plan.hard_negatives.terms)
    own_units = units_path == layout.units
    excluded = labelled_units(exclude_labelled) if exclude_labelled is not None else set()
    with reading(layout, "ingest") if own_units else nullcontext(None) as ingest_hashes:
        try:
            frame, missing_fields = _population(units_path, plan, labels, scorer, progress)
        except OSError as error:
            raise InputError(os_error_message(units_path, error)) from None
        _check_plan_against(frame, plan, missing_fields, units_path)
        if excluded:
            frame = frame[~frame["unit_id"].isin(excluded)].reset_index(drop=True)
        result = draw(frame, plan, seed=seed)
        if result.n == 0:
            raise InputError(f"{plan_path}: the plan draws no units from {units_path} "
                             f"({len(frame)} in the population); nothing written, the saved sample is kept")
        offsets = frame["offset"].to_numpy()[result.rows]
        chosen = []
        with open(units_path, "rb") as source:
            for at in offsets:
                source.seek(int(at))
                chosen.append(decode_json_line(source.readline()))
        needs_context = {u["kind"] for u in chosen if get_kind(u["kind"]).needs_context}
        contexts = turn_contexts(layout.trajectories,
                                 {u["trajectory_id"] for u in chosen if u["kind"] in needs_context})
        units_sha = (ingest_hashes or {}).get(layout.relative(units_path)) or _sha(units_path)
        bad = {"count": 0, "skipped": []}
        if own_units and layout.ingest_manifest.is_file():
            try:
                bad = json.loads(layout.ingest_manifest.read_text(encoding="utf-8")).get("bad_records", bad)
            except (ValueError, AttributeError):
                raise InputError(f"{layout.ingest_manifest}: not an ingest manifest; re-run `accord ingest`") from None
    manifest = {
        "plan": plan.model_dump(mode="json"), "plan_file": str(plan_path), "plan_sha256": plan_sha,
        "seed": int(seed),
        "inputs": {"units": {"path": str(units_path), "sha256": units_sha},
                   **({"judge_labels": {"path": str(labels_path), "sha256": _sha(labels_path)}} if judges else {})},
        "design": "one_per_trajectory" if plan.one_per_trajectory else "stratified_srs_units",
        "population_units": int(len(frame)), "sampled": result.n,
        "strata": [c.as_dict() for c in result.counts],
        "shortfalls": result.shortfalls,
        "missing_stratum_fields": missing_fields,
        "skipped_bad_records": bad,
    }
    if exclude_labelled is not None:
        manifest["excluded_labelled"] = {"study": str(exclude_labelled), "units": len(excluded)}
    with publishing(layout, "sample") as generation:
        out = generation.open(layout.sample)
        for unit, stratum, probability in zip(chosen, result.stratum, result.inclusion_prob, strict=True):
            if unit["kind"] in needs_context:  # what annotators and judges read: turns 0..focus
                unit["turns"] = context_turns(contexts[unit["trajectory_id"]], unit["focus_turn"])
            row = SampledUnit.model_validate({**unit, "stratum": str(stratum), "inclusion_prob": float(probability)})
            out.write(record_bytes(row))
        generation.write_json(layout.sample_manifest, checked(SampleManifest, manifest, where=layout.sample_manifest))
    return manifest


def _sha(path: str | Path) -> str:
    from samples.canonical import file_sha256

    return file_sha256(path)


def _population(units_path: Path, plan: SamplingPlan, labels: dict, scorer: HardnessScorer | None,
                progress: Callable[[int], None] | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """The plan's population from a units file: one row per unit of the plan's kinds (unit and
    trajectory id, byte offset, stratum values, hardness) and per field the units lacking it."""
    from samples.jsonl import decode_json_line

    kinds = set(plan.kinds)
    columns: dict[str, list] = {"unit_id": [], "trajectory_id": [], "offset": [], "hardness": []}
    for field in plan.strata:
        columns[field] = []
    missing_fields: dict[str, int] = {}
    offset = 0
    with open(units_path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            try:
                unit = decode_json_line(line)
                if unit["kind"] not in kinds:
                    continue
                strata = unit["strata"]
                if not isinstance(unit["unit_id"], str) or not isinstance(unit["trajectory_id"], str):
                    raise TypeError("'unit_id' and 'trajectory_id' must be strings")
                columns["unit_id"].append(unit["unit_id"])
                columns["trajectory_id"].append(unit["trajectory_id"])
            except (ValueError, KeyError, TypeError) as error:
                raise InputError(f"{units_path}:{number}: not a unit row ({error}); re-run `accord ingest`") from None
            columns["offset"].append(start)
            unit_labels = {j: judge_label(labels[j], unit) for j in labels}
            for field in plan.strata:
                if field.startswith(JUDGE_PREFIX):
                    value = unit_labels[field[len(JUDGE_PREFIX):]]
                elif field == "kind":
                    value = unit["kind"]
                else:
                    value = strata.get(field) if isinstance(strata, dict) else None
                    if value is None or value == _MISSING:
                        missing_fields[field] = missing_fields.get(field, 0) + 1
                        value = _MISSING
                    elif not isinstance(value, str):
                        raise InputError(f"{units_path}:{number}: field 'strata.{field}': expected a string, got "
                                         f"{type(value).__name__} {value!r} (stratum values are text; re-run `accord ingest`)")
                columns[field].append(value)
            columns["hardness"].append(scorer.score(unit, {j: (None if v in (_NO_LABEL, _UNSCORED) else v)
                                                           for j, v in unit_labels.items()}) if scorer else 0.0)
            if progress is not None and number % 10000 == 0:
                progress(number)
    return pd.DataFrame(columns), missing_fields


def _check_plan_against(frame: pd.DataFrame, plan: SamplingPlan, missing_fields: dict[str, int], units_path: Path) -> None:
    """Refuse a plan naming what no unit of the population has: a stratum field, a positive value, a stratum."""
    if len(frame) == 0:
        return  # draw names the empty population
    absent = sorted(f for f, n in missing_fields.items() if n == len(frame))
    if absent:
        raise InputError(f"sampling plan {plan.name!r}: no unit in {units_path} has stratum field(s) {absent} "
                         "(a typo? or ingest with --metadata-stratum)")
    if plan.positive is not None:
        present = set(frame[plan.positive.field].unique().tolist())
        lacking = sorted(set(plan.positive.values) - present)
        if lacking:
            raise InputError(f"sampling plan {plan.name!r}: field 'positive.values': no unit has "
                             f"{plan.positive.field} = {lacking}; present: {sorted(present)[:20]}")
    if plan.n_by_stratum:
        _, keys, _ = _stratum_codes(frame, plan.strata)
        unknown = sorted(set(plan.n_by_stratum) - set(keys))
        if unknown:
            raise InputError(f"sampling plan {plan.name!r}: field 'n_by_stratum': no unit is in stratum/strata "
                             f"{unknown[:5]}; strata present: {keys[:10]}")
