"""Gold units: known-answer units placed into each annotator's order, scored apart.

The study owner writes a table of units with their expected label (``accord gold add
FILE --study S --rate R``). Each becomes a ``BlindTask`` of the same shape as the sampled
units' tasks: scrubbed and leak-checked like them, its id ``t_`` + 16 hex of the same
HMAC-SHA256 under the study's blinding salt (of an opaque ``u_`` id made from its content),
so neither the payload nor the id tells an annotator which units are gold. The expected
answers and the list of gold task ids live only in the sealed gold key
(``StudyLayout.gold``, 0600), never in the sampled units' sealed key: validation, audit
and the gate read that key, so gold labels cannot enter them, and the coding app's
exports write gold labels to their own sealed file (``StudyLayout.gold_labels``).

Placement: ``rate`` is the share of an annotator's order that is gold. An annotator with
``n`` sampled tasks gets ``k = min(round(rate * n / (1 - rate)), number of gold units)``
gold units, drawn and placed at uniformly random positions by a generator seeded with
the blinding seed and the annotator's name: deterministic, and different per person.

Practice units (the qualification round) use the same table format: ``accord gold practice
FILE --study S`` writes them to ``StudyLayout.practice``; the coding app shows them before
any real unit, with the expected answer and the reason after each submit, and keeps the
answers in their own store table, never among labels.

Accuracy on gold is reported per annotator with a Wilson score interval (Wilson 1927;
Brown, Cai and DasGupta 2001 recommend it over the Wald interval for small n, and unlike
Clopper-Pearson it is not conservative by construction).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from samples import (
    BlindTask,
    ConfidenceInterval,
    HumanLabel,
    InputError,
    StudyLayout,
    check_level,
    file_sha256,
    get_scheme,
    is_kind,
    iter_jsonl_lines,
    json_objects_noting,
    regular_file,
    sha256_hex,
    study_schemes,
    write_json,
)
from samples import unit_kinds as kinds

GOLD_INPUT_FIELDS = ("gold_id", "kind", "text", "turns", "focus_turn", "question", "gold_answers", "label",
                     "first_turn", "reason")


class GoldUnit(BaseModel):
    """One known-answer unit as the sealed gold key holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gold_id: str = Field(description="The study owner's name for the gold unit (from the gold table).")
    task: BlindTask = Field(description="The task annotators are shown (same shape and id scheme as every task).")
    label: str = Field(description="The expected label (canonical, from the kind's scheme).")
    first_turn: int | None = Field(default=None, description="Expected first turn, when it is part of the answer.")
    reason: str = Field(default="", description="Why this is the answer, in the codebook's terms (for feedback).")


class GoldKey(BaseModel):
    """``sealed/gold.json``: the gold units of a study and how they are placed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rate: float = Field(gt=0, lt=1, description="Share of each annotator's order that is gold.")
    seed: int = Field(description="Seed of the placement (the blinding seed).")
    sample_sha256: str = Field(description="The blinded sample's sha256 (blind/audit.json): gold ids use its salt.")
    source: str = Field(description="The gold table the units came from.")
    source_sha256: str = Field(description="sha256 of the gold table's bytes.")
    units: list[GoldUnit] = Field(description="The gold units, by task id.")

    def task_ids(self) -> list[str]:
        return [unit.task.task_id for unit in self.units]

    def tasks(self) -> list[BlindTask]:
        return [unit.task for unit in self.units]


def blinding_salt(layout: StudyLayout) -> tuple[bytes, int, str]:
    """The HMAC salt, seed and sample sha256 ``accord blind`` used (``samples.blind.blind_study``),
    from ``blind/audit.json``."""
    from samples import blinding_salt_for, read_blind_audit

    audit = read_blind_audit(layout)
    if audit is None:
        raise InputError(f"{layout.blind_audit}: not found; run `accord blind` before adding gold units")
    return blinding_salt_for(audit.seed, audit.sample_sha256), audit.seed, audit.sample_sha256


def check_rate(rate: object) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < 1:
        raise InputError(f"--rate {rate!r}: expected the share of each order that is gold, a number between 0 and 1")
    return float(rate)


def read_gold_table(path: str | Path, schemes: Mapping[str, str] | None = None) -> list[dict]:
    """Rows of a gold table (JSONL: GOLD_INPUT_FIELDS); every bad row is named by its line. Labels are
    checked against the scheme the study codes each kind under (``schemes``: ``[annotation] schemes``)."""
    from samples import first_turn_problem, scheme_for

    path = regular_file(path, "gold table")  # by type first: a FIFO would block, /dev/zero fill memory
    rows, problems, seen = [], [], {}
    for number, row in json_objects_noting(path, problems):
        where = f"{path}:{number}"
        unknown = sorted(set(row) - set(GOLD_INPUT_FIELDS))
        missing = [f for f in ("gold_id", "kind", "text", "label") if f not in row]
        if unknown or missing:
            problems.append(f"{where}: " + "; ".join(
                ([f"unknown field(s) {unknown}; expected {list(GOLD_INPUT_FIELDS)}"] if unknown else [])
                + ([f"missing field(s) {missing}"] if missing else [])))
            continue
        if not is_kind(row["kind"]):
            problems.append(f"{where}: field 'kind' is {row['kind']!r}; expected one of {list(kinds())}")
            continue
        if not isinstance(row["gold_id"], str) or not row["gold_id"].strip():
            problems.append(f"{where}: field 'gold_id': expected a non-empty string")
            continue
        shape = _shape_problem(row)
        if shape:
            problems.append(f"{where}: {shape}")
            continue
        if row["gold_id"] in seen:
            problems.append(f"{where}: gold_id {row['gold_id']!r} repeats line {seen[row['gold_id']]}")
            continue
        seen[row["gold_id"]] = number
        scheme = scheme_for(row["kind"], schemes)
        try:
            get_scheme(scheme).check(row["label"], where=where)
        except InputError as error:
            problems.append(str(error))
            continue
        problem = first_turn_problem(row["kind"], row["label"], row.get("first_turn"), len(row.get("turns") or []),
                                     scheme=scheme)
        if problem:
            problems.append(f"{where}: {problem}")
            continue
        rows.append({**row, "where": where})
    if problems:
        raise InputError(f"{path}: {len(problems)} bad gold row(s)", problems=problems)
    if not rows:
        raise InputError(f"{path}: no gold units")
    return rows


def _shape_problem(row: dict) -> str | None:
    """A field of the wrong type, in the words of the table's author; None when all fit."""
    for field in ("text", "reason", "question"):
        if row.get(field) is not None and not isinstance(row[field], str):
            return f"field {field!r}: expected a string"
    for field in ("turns", "gold_answers"):
        value = row.get(field)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"field {field!r}: expected a list of strings"
    for field in ("focus_turn", "first_turn"):
        value = row.get(field)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return f"field {field!r}: expected a turn number (an integer >= 0)"
    if row.get("focus_turn") is not None and not 0 <= row["focus_turn"] < len(row.get("turns") or []):
        return f"field 'focus_turn': {row['focus_turn']} is not one of the unit's turns"
    return None


def gold_tasks(rows: Sequence[dict], *, salt: bytes, prefix: str = "") -> list[GoldUnit]:
    """Scrub and leak-check each gold unit like a sampled one and give it an id of the same scheme
    (practice units, ``prefix="p_"``: an id that says it is practice; they are shown as such)."""
    from samples import LeakDetector, Scrubber, task_id

    scrubber, detector = Scrubber(), LeakDetector()
    units, leaks = [], []
    for row in rows:
        def clean(text: str, field: str, row: dict = row) -> str:
            if not isinstance(text, str):
                raise InputError(f"{row['where']}: field {field!r}: expected a string")
            scrubbed, _ = scrubber.scrub(text)
            leaks.extend(f"{row['where']} {field}: {leak}" for leak in detector.find(scrubbed))
            return scrubbed

        unit_id = "u_" + sha256_hex(["accord-gold", row["gold_id"], row["kind"], row["text"]])[:20]
        try:
            task = BlindTask(
                task_id=prefix + unit_id[2:18] if prefix else task_id(salt, unit_id), kind=row["kind"], text=clean(row["text"], "text"),
                turns=None if row.get("turns") is None else [clean(t, f"turns[{i}]") for i, t in enumerate(row["turns"])],
                focus_turn=row.get("focus_turn"),
                question=None if row.get("question") is None else clean(row["question"], "question"),
                gold_answers=None if row.get("gold_answers") is None
                else [clean(a, f"gold_answers[{i}]") for i, a in enumerate(row["gold_answers"])])
            units.append(GoldUnit(gold_id=row["gold_id"], task=task, label=row["label"],
                                  first_turn=row.get("first_turn"), reason=str(row.get("reason") or "")))
        except (ValidationError, TypeError) as error:
            raise InputError(f"{row['where']}: not a unit of kind {row['kind']!r} ({error})") from None
    if leaks:
        raise InputError(f"gold: {len(leaks)} identity string(s) survived scrubbing; nothing written", problems=leaks)
    return units if prefix else sorted(units, key=lambda unit: unit.task.task_id)


class PracticeSet(BaseModel):
    """``labels/practice.json``: the qualification round, in the order annotators meet it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="The table the practice units came from.")
    source_sha256: str = Field(description="sha256 of that table's bytes.")
    units: list[GoldUnit] = Field(description="Practice units with their expected answer and reason, in order.")


def add_practice(study: str | Path, table: str | Path) -> PracticeSet:
    """Write a study's practice units (the gold table format; ``reason`` is shown after each answer)."""
    from samples import private_dir

    layout = StudyLayout.of(study)
    units = gold_tasks(read_gold_table(table, study_schemes(StudyLayout.of(study))), salt=b"", prefix="p_")
    practice = PracticeSet(source=Path(table).name, source_sha256=file_sha256(table), units=units)
    private_dir(layout.labels_dir)
    write_json(layout.practice, practice.model_dump(mode="json"))
    return practice


def load_practice(layout: StudyLayout) -> PracticeSet | None:
    """The study's practice units; None when it has no qualification round."""
    if not layout.practice.is_file():
        return None
    try:
        return PracticeSet.model_validate_json(layout.practice.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        raise InputError(f"{layout.practice}: field {'.'.join(map(str, first['loc']))!r}: {first['msg']}") from None


def add_gold(study: str | Path, table: str | Path, *, rate: float) -> GoldKey:
    """Write the sealed gold key of a study from a gold table; refused once orders are in the store
    (an order cannot change once loaded, so gold must be placed before the first push)."""
    from annotate.store import Store
    from samples import private_dir

    layout = StudyLayout.of(study)
    rate = check_rate(rate)
    store = Store.for_study(layout) if Store.exists_for_study(layout) else None
    if store is not None:
        try:
            if store.orders():
                raise InputError(f"{store.location}: annotators' orders are already loaded; gold units must be added "
                                 "before the first push (accord app / accord run), since a loaded order cannot change")
        finally:
            store.close()
    salt, seed, sample_sha = blinding_salt(layout)
    rows = read_gold_table(table, study_schemes(StudyLayout.of(study)))
    units = gold_tasks(rows, salt=salt)
    real = {json.loads(line)["task_id"] for _, line in iter_jsonl_lines(layout.tasks)} if layout.tasks.is_file() else set()
    clash = sorted(real & {unit.task.task_id for unit in units})
    if clash:
        raise InputError(f"{table}: gold unit(s) with the same content as sampled tasks {clash[:3]}; a gold unit "
                         "must be its own unit")
    key = GoldKey(rate=rate, seed=seed, sample_sha256=sample_sha, source=Path(table).name, source_sha256=file_sha256(table), units=units)
    private_dir(layout.sealed_dir)
    write_json(layout.gold, key.model_dump(mode="json"))
    return key


def load_gold(layout: StudyLayout, *, current: bool = False) -> GoldKey | None:
    """The study's sealed gold key; None when it has no gold units. ``current``: refuse a key
    made for an earlier blinding (its ids would not share the salt of today's tasks)."""
    if not layout.gold.is_file():
        return None
    try:
        key = GoldKey.model_validate_json(layout.gold.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        raise InputError(f"{layout.gold}: field {'.'.join(map(str, first['loc']))!r}: {first['msg']}") from None
    if current and layout.blind_audit.is_file() and blinding_salt(layout)[1:] != (key.seed, key.sample_sha256):
        raise InputError(f"{layout.gold}: made for another blinded sample; the study was blinded again since, so run "
                         "`accord gold add` again before loading the tasks")
    return key


def n_gold(n_real: int, rate: float, available: int) -> int:
    """How many gold units an order of ``n_real`` sampled tasks gets at ``rate`` (share of the whole order)."""
    return min(available, round(rate * n_real / (1 - rate)))


def place_gold(order: Sequence[str], gold_ids: Sequence[str], *, annotator: str, rate: float, seed: int) -> list[str]:
    """``order`` with ``n_gold`` of the gold ids inserted at seeded, uniformly random positions."""
    k = n_gold(len(order), rate, len(gold_ids))
    stream = int(sha256_hex(["accord-gold", annotator])[:16], 16)
    rng = np.random.default_rng([int(seed), stream])
    chosen = [sorted(gold_ids)[i] for i in rng.choice(len(gold_ids), size=k, replace=False)]
    slots = set(rng.choice(len(order) + k, size=k, replace=False).tolist())
    real, gold = iter(order), iter(chosen)
    return [next(gold) if i in slots else next(real) for i in range(len(order) + k)]


@dataclass(frozen=True, kw_only=True)
class Placement:
    """What a backend push needs: the gold tasks, each order with gold placed, and the late-order rule."""

    tasks: list[BlindTask]
    orders: dict[str, list[str]]
    late_order: Callable[[str], list[str]] | None


def with_gold(gold: GoldKey | None, tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]], *,
              late_seed: int | None) -> Placement:
    """Tasks and orders as pushed: the sampled ones plus the gold units placed in every order (and in
    the seeded order a late annotator gets, ``samples.blind.annotator_order`` of the sampled tasks)."""
    if gold is None:
        return Placement(tasks=list(tasks), orders={a: list(o) for a, o in orders.items()}, late_order=None)
    from samples import annotator_order

    ids = gold.task_ids()
    clash = sorted({t.task_id for t in tasks} & set(ids))
    if clash:
        raise InputError(f"gold task id(s) {clash[:3]} are also sampled tasks; rerun accord gold add")

    def place(name: str, order: Sequence[str]) -> list[str]:
        return place_gold(order, ids, annotator=name, rate=gold.rate, seed=gold.seed)

    real = [t.task_id for t in tasks]
    late = None if late_seed is None else (lambda name: place(name, annotator_order(real, name, late_seed)))
    return Placement(tasks=[*tasks, *gold.tasks()], orders={a: place(a, o) for a, o in orders.items()}, late_order=late)


def split_labels(labels: Sequence[HumanLabel], gold: GoldKey | None) -> tuple[list[HumanLabel], list[HumanLabel]]:
    """(labels of sampled units, labels of gold units): gold labels never reach the human labels table."""
    ids = set(gold.task_ids()) if gold is not None else set()
    return [r for r in labels if r.task_id not in ids], [r for r in labels if r.task_id in ids]


WILSON = "wilson"
"""The one interval gold accuracy has (Wilson score), as its documents name it."""


def wilson_interval(correct: int, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (nan, nan) when n == 0."""
    if n == 0:
        return (math.nan, math.nan)
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True, kw_only=True)
class GoldAccuracy:
    """One annotator's accuracy on the gold units they labelled (Wilson score interval)."""

    annotator: str
    statistic: float
    n: int
    correct: int
    level: float = 0.95
    reason: str | None = None

    def confidence_interval(self, level: float | None = None, method: str | None = None) -> ConfidenceInterval:
        """The Wilson interval at ``level`` (None: the level it was computed at); only its own ``method``."""
        if method is not None and method != WILSON:
            raise ValueError(f"method={method!r}: gold accuracy has only the {WILSON!r} interval")
        level = self.level if level is None else check_level(level)
        low, high = wilson_interval(self.correct, self.n, level)
        return ConfidenceInterval(low=low, high=high, level=level, method=WILSON)

    def to_dict(self) -> dict:
        ci = self.confidence_interval()
        low, high = ci.low, ci.high
        return {"annotator": self.annotator, "accuracy": None if math.isnan(self.statistic) else self.statistic,
                "n": self.n, "correct": self.correct, "ci_low": None if math.isnan(low) else low,
                "ci_high": None if math.isnan(high) else high, "level": self.level, "interval": WILSON,
                "reason": self.reason}


def gold_accuracy(labels: Sequence[HumanLabel], gold: GoldKey, *, annotators: Sequence[str] = (),
                  level: float = 0.95) -> list[GoldAccuracy]:
    """Per annotator: independent labels on gold units that match the expected label (and the
    expected first turn, where the gold unit gives one). ``annotators`` with no gold label yet
    are listed with accuracy NaN and a reason."""
    if not 0 < level < 1:
        raise InputError(f"--level {level}: expected a confidence level between 0 and 1")
    expected = {unit.task.task_id: unit for unit in gold.units}
    tally: dict[str, list[int]] = {name: [0, 0] for name in annotators}
    for row in labels:
        unit = expected.get(row.task_id)
        if unit is None or row.role != "independent":
            continue
        hit = row.label == unit.label and (unit.first_turn is None or row.first_turn == unit.first_turn)
        counts = tally.setdefault(row.annotator, [0, 0])
        counts[0] += int(hit)
        counts[1] += 1
    return [GoldAccuracy(annotator=name, statistic=correct / n if n else math.nan, n=n, correct=correct, level=level,
                         reason=None if n else "no gold unit labelled yet")
            for name, (correct, n) in sorted(tally.items())]


def study_gold_labels(layout: StudyLayout, gold: GoldKey) -> list[HumanLabel]:
    """Labels given on a study's gold units: the coding app's store (the freshest source), else
    its sealed export ``StudyLayout.gold_labels`` (what the last pull saved)."""
    from annotate.store import Store

    if Store.exists_for_study(layout):
        store = Store.for_study(layout)
        try:
            labels = store.labels()
        finally:
            store.close()
    elif layout.gold_labels.is_file():
        labels = []
        for number, line in iter_jsonl_lines(layout.gold_labels):
            try:
                labels.append(HumanLabel.model_validate_json(line))
            except ValidationError as error:
                first = error.errors()[0]
                raise InputError(f"{layout.gold_labels}:{number}: field {'.'.join(map(str, first['loc']))!r}: "
                                 f"{first['msg']}") from None
    else:
        labels = []
    return split_labels(labels, gold)[1]


def study_gold_accuracy(layout: StudyLayout, *, level: float = 0.95,
                        annotators: Sequence[str] = ()) -> dict[str, list[GoldAccuracy]] | None:
    """Each annotator's gold accuracy per unit kind of the gold units (``gold_accuracy`` on the study's
    gold labels); None when the study has no gold units."""
    gold = load_gold(layout)
    if gold is None:
        return None
    labels = study_gold_labels(layout, gold)
    kinds = sorted({unit.task.kind for unit in gold.units})
    return {kind: gold_accuracy(labels, gold.model_copy(update={"units": [u for u in gold.units if u.task.kind == kind]}),
                                annotators=annotators, level=level) for kind in kinds}
