"""Controlled knowledge conflict, built as the ISE paper builds it (section 2.1).

For each item: a *conflict* instance, the question plus two passages with mutually
contradicting answers (a1 != a2), and a matched *control* instance, the same
question and the same number of passages, both consistent with the reference.
The pair is a minimal pair: the item's own passage P (which states the reference
answer) is passage 1 or 2 in both; the other passage is P with every occurrence of
the answer replaced by a distractor (conflict) or P unchanged (control), so the
only difference between conflict and control is the substituted answer. The
position of the distractor passage is drawn per item from the seed.

The ISE paper selects questions on which the backbone holds a stable parametric
belief (its Level 3) before building conflicts; the demo skips that per-backbone
elicitation (the demo models hold no such beliefs) and builds the pair for every
selected item.

Distractor rules (deterministic from seed and question_id, ``h`` below):

* ``date``: move the month forward by 1 + h mod 11 months (the year rolls over when
  the date has one; the day is clamped to the new month's length).
* ``year``: add +/-(1 + h mod 5) years.
* ``number``: raise the last number in the answer by max(1 unit of its last
  decimal place, 25 % / 50 % / 100 % of its value), keeping decimals, thousands
  separators and zero padding ("$3.5 million" -> "$5.3 million").
* ``entity``: the answer of another eligible EHQ item with an entity answer that
  shares no word with the reference and is absent from the passage, taken from the
  first non-empty tier: same subcategory, question word ("who", "where", ...),
  name-or-phrase shape and word count; then without the word count; then the same
  category with the same question word and shape; then any of the subcategory; then
  any of the category.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from apps.demo.items import DATE_PATTERN, DEFAULT_SEED, MONTHS, DemoItem, eligible_items, phrase_pattern
from samples import InputError, sha256_hex

SETTING = "controlled"
DATASET = "EHQ-3000"
SPLITS: tuple[str, ...] = ("conflict", "control")
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_WORD = re.compile(r"\w+")
_NUMBER_STEPS: tuple[float, ...] = (0.25, 0.5, 1.0)


class ConflictInstance(BaseModel):
    """One task given to the demo agent: a question and the passages its search tool returns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance_id: str = Field(description="'<question_id>:<split>'; the pair shares the question_id.")
    question_id: str = Field(description="EHQ-3000 question_id.")
    category: str = Field(description="EHQ category (FEQ, PCQ, HNQ, CCQ).")
    subcategory: str = Field(description="EHQ subcategory.")
    dataset: str = Field(default=DATASET, description="Source dataset name.")
    setting: Literal["controlled"] = Field(default=SETTING, description="ISE setting: always controlled here.")
    split: Literal["conflict", "control"] = Field(description="conflict (contradicting passages) or control (consistent).")
    question: str = Field(description="The question, identical across the pair.")
    passages: list[str] = Field(min_length=2, max_length=2, description="The two passages, in the order the tool returns them.")
    references: list[str] = Field(description="Reference answer(s): the answer the item's own passage states.")
    answer_type: str = Field(description="date, year, number or entity.")
    distractor: str | None = Field(default=None, description="The substituted answer (conflict only).")
    distractor_position: int | None = Field(default=None, description="0-based index of the distractor passage (conflict only).")
    perturbation: str | None = Field(default=None, description="The distractor rule applied, e.g. 'year_shift=-2' (conflict only).")


def item_hash(seed: int, question_id: str, purpose: str) -> int:
    """A deterministic integer per (seed, item, purpose): independent of order and process."""
    return int(sha256_hex([seed, question_id, purpose])[:12], 16)


def _shift_date(answer: str, h: int) -> tuple[str, str]:
    match = DATE_PATTERN.match(answer.strip())
    if match is None:
        raise ValueError(f"not a date: {answer!r}")
    shift = 1 + h % 11
    month0 = MONTHS.index(match["month"]) + shift
    year = int(match["year"]) + month0 // 12 if match["year"] else None
    month = MONTHS[month0 % 12]
    day_text = match["day"] or match["lead_day"]
    day = None
    if day_text:
        day = min(int(day_text), calendar.monthrange(year or 2001, month0 % 12 + 1)[1])
    parts = []
    if match["lead_day"]:
        parts.append(f"{day} ")
    parts.append(month)
    if match["day"]:
        parts.append(f" {day}")
    if match["comma"]:
        parts.append(",")
    if year is not None:
        parts.append(f" {year}")
    return "".join(parts), f"date_shift_months=+{shift}"


def _shift_year(answer: str, h: int) -> tuple[str, str]:
    step = (1 + h % 5) * (1 if (h // 5) % 2 else -1)
    return str(int(answer.strip()) + step), f"year_shift={step:+d}"


def _bump_number(answer: str, h: int) -> tuple[str, str]:
    found = list(_NUMBER.finditer(answer))
    if not found:
        raise ValueError(f"no number in {answer!r}")
    token = found[-1]
    text = token.group()
    decimals = len(text.split(".")[1]) if "." in text else 0
    value = float(text.replace(",", ""))
    ratio = _NUMBER_STEPS[h % len(_NUMBER_STEPS)]
    unit = 10.0 ** -decimals
    bumped = value + max(unit, round(abs(value) * ratio, decimals))
    new = f"{bumped:,.{decimals}f}" if "," in text else f"{bumped:.{decimals}f}"
    if decimals == 0 and text.startswith("0") and len(text) > 1:
        new = new.zfill(len(text))
    return answer[: token.start()] + new + answer[token.end():], f"number_bump=+{int(ratio * 100)}%"


@cache
def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text) if len(w) > 2)


@cache
def _wh_word(question: str) -> str:
    """The question's first word ('who', 'where', 'which', ...): a cheap answer-kind signal."""
    words = _WORD.findall(question)
    return words[0].casefold() if words else ""


@cache
def _is_name(answer: str) -> bool:
    """Every word capitalised ('Jean Smart', 'Glasgow'): a proper name rather than a phrase."""
    words = [w for w in _WORD.findall(answer) if w.casefold() not in ("of", "the", "and", "de", "von", "van")]
    return bool(words) and all(w[0].isupper() for w in words)


def _swap_entity(item: DemoItem, donors: Sequence[DemoItem], h: int) -> tuple[str, str]:
    gold_words = _words(item.passage_answer)
    width = len(item.passage_answer.split())
    wh, name = _wh_word(item.question), _is_name(item.passage_answer)
    passage = item.passage.casefold()

    def usable(other: DemoItem) -> bool:
        answer = other.passage_answer
        return (other.question_id != item.question_id and not gold_words & _words(answer)
                and not (answer.casefold() in passage and phrase_pattern(answer).search(item.passage)))

    def alike(other: DemoItem) -> bool:
        return _wh_word(other.question) == wh and _is_name(other.passage_answer) == name

    same_cat = [d for d in donors if d.category == item.category and d.answer_type == "entity" and usable(d)]
    same_sub = [d for d in same_cat if d.subcategory == item.subcategory]
    tiers = ([d for d in same_sub if alike(d) and len(d.passage_answer.split()) == width],
             [d for d in same_sub if alike(d)], [d for d in same_cat if alike(d)], same_sub, same_cat)
    for tier in tiers:
        answers = sorted({d.passage_answer: d.question_id for d in tier}.items())
        if answers:
            answer, donor_id = answers[h % len(answers)]
            return answer, f"entity_swap_from={donor_id}"
    raise InputError(f"item {item.question_id}: no usable distractor entity among {len(donors)} donor items")


def distractor_for(item: DemoItem, *, seed: int = DEFAULT_SEED, donors: Sequence[DemoItem] | None = None) -> tuple[str, str]:
    """(distractor answer, rule applied) for one item; ``donors`` default to every eligible EHQ item."""
    h = item_hash(seed, item.question_id, "distractor")
    if item.answer_type == "date":
        return _shift_date(item.passage_answer, h)
    if item.answer_type == "year":
        return _shift_year(item.passage_answer, h)
    if item.answer_type == "number":
        return _bump_number(item.passage_answer, h)
    return _swap_entity(item, eligible_items() if donors is None else donors, h)


def build_pair(item: DemoItem, *, seed: int = DEFAULT_SEED,
               donors: Sequence[DemoItem] | None = None) -> tuple[ConflictInstance, ConflictInstance]:
    """The (conflict, control) pair for one item."""
    distractor, rule = distractor_for(item, seed=seed, donors=donors)
    substituted = phrase_pattern(item.passage_answer).sub(lambda _: distractor, item.passage)
    if substituted == item.passage or phrase_pattern(item.passage_answer).search(substituted):
        raise InputError(f"item {item.question_id}: could not substitute {item.passage_answer!r} in its passage")
    position = item_hash(seed, item.question_id, "position") % 2
    conflict_passages = [item.passage, item.passage]
    conflict_passages[position] = substituted
    common = {
        "question_id": item.question_id, "category": item.category, "subcategory": item.subcategory,
        "question": item.question, "references": [item.passage_answer], "answer_type": item.answer_type,
    }
    conflict = ConflictInstance(instance_id=f"{item.question_id}:conflict", split="conflict", passages=conflict_passages,
                                distractor=distractor, distractor_position=position, perturbation=rule, **common)
    control = ConflictInstance(instance_id=f"{item.question_id}:control", split="control",
                               passages=[item.passage, item.passage], **common)
    return conflict, control


def build_instances(items: Iterable[DemoItem], *, seed: int = DEFAULT_SEED,
                    donors: Sequence[DemoItem] | None = None) -> list[ConflictInstance]:
    """Conflict and control instances for every item, pairs adjacent, in item order."""
    items = list(items)
    if donors is None and any(item.answer_type == "entity" for item in items):
        donors = eligible_items()
    instances: list[ConflictInstance] = []
    for item in items:
        instances.extend(build_pair(item, seed=seed, donors=donors))
    return instances
