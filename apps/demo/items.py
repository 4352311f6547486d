"""Demo items: real EHQ-3000 questions, stratified across its four categories.

EHQ-3000 (the EHQ paper's dataset, CC BY 4.0, bundled in the ``ehq`` package) has
750 items in each of FEQ (fabricated entities), PCQ (post-cutoff events), HNQ
(hyper-niche true facts) and CCQ (context-conditioned: a document with one
redacted span). The controlled-conflict design needs, for every item, a passage
that states a short answer which a second passage can contradict, so an item is
*eligible* only when such a passage exists in the item itself:

* PCQ, HNQ: ``source_fact`` contains the gold ``correct_answer`` as a whole phrase;
  passage = ``source_fact``, passage answer = the EHQ gold answer.
* FEQ: the question asks for a year and ``background`` (the fabricated profile)
  names exactly one distinct year; passage = ``background``, passage answer = that
  year (the profile's own answer; EHQ's gold stays ``[FABRICATED]``).
* CCQ: the ``redacted_value`` is at most ``CCQ_MAX_ANSWER_WORDS`` words; passage =
  the sentence of ``document`` holding ``[REDACTED]``, filled with the value, and
  the sentence before it; passage answer = the value (EHQ's gold stays
  ``[REDACTED]``: closed-book, the span is unknowable).

Selection uses ``ehq.selection.select_items`` (the EHQ package's own deterministic,
hash-ranked round-robin over subcategories) per category on the eligible items.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from samples import DEFAULT_SEED, InputError

CATEGORIES: tuple[str, ...] = ("FEQ", "PCQ", "HNQ", "CCQ")
DEFAULT_PER_CATEGORY = 4
CCQ_MAX_ANSWER_WORDS = 5
# The EHQ item fields the demo keeps: what `ehq.prompts.build_answer_prompt` and
# `ehq.evaluation.classifier.classify_response` read (provenance and audit trails dropped).
EHQ_ITEM_FIELDS: tuple[str, ...] = (
    "question_id", "category", "subcategory", "question", "correct_answer", "acceptable_answers", "document",
)
EHQ_CITATION = (
    "EHQ-3000 (3,000 items, CC BY 4.0), the dataset of the EHQ paper, as bundled in the "
    "`ehq` package (ehq/resources/project/data/releases/EHQ-3000.json)"
)

AnswerType = Literal["date", "year", "number", "entity"]
PassageSource = Literal["source_fact", "background", "document"]

MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
_MONTH = "|".join(MONTHS)
# "July 12, 2026", "June 18", "June 2026", "15 March 2026".
DATE_PATTERN = re.compile(
    rf"^(?:(?P<lead_day>\d{{1,2}}) )?(?P<month>{_MONTH})(?: (?P<day>\d{{1,2}}))?(?P<comma>,)?(?: (?P<year>\d{{4}}))?$"
)
YEAR_PATTERN = re.compile(r"^(?:1\d{3}|20\d{2})$")
_YEAR_TOKEN = re.compile(r"(?<!\d)(1\d{3}|20\d{2})(?!\d)")


class DemoItem(BaseModel):
    """One EHQ-3000 item with the passage the conflict builder perturbs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question_id: str = Field(description="EHQ-3000 question_id, e.g. 'PCQ-SPO-001'.")
    category: str = Field(description="EHQ category: FEQ, PCQ, HNQ or CCQ.")
    subcategory: str = Field(description="EHQ subcategory, e.g. 'PCQ-SPO'.")
    question: str = Field(description="The question, verbatim.")
    ehq_item: dict[str, Any] = Field(
        description="The EHQ item fields the ehq prompt builder and rule classifier read (EHQ_ITEM_FIELDS)."
    )
    passage: str = Field(description="Evidence passage from the item itself that states passage_answer.")
    passage_source: PassageSource = Field(description="Which EHQ field the passage comes from.")
    passage_answer: str = Field(description="The short answer the passage states (the reference in the conflict design).")
    answer_type: AnswerType = Field(description="date, year, number or entity: selects the distractor rule.")


def answer_type(answer: str) -> AnswerType:
    """Classify a short answer; the distractor rule depends on it."""
    text = answer.strip()
    match = DATE_PATTERN.match(text)
    if match and (match["day"] or match["lead_day"] or match["year"]):
        return "date"
    if YEAR_PATTERN.match(text):
        return "year"
    if any(ch.isdigit() for ch in text):
        return "number"
    return "entity"


def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """``phrase`` as a whole phrase (not inside a longer word or number), case-insensitive."""
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=1)
def _load_bundled() -> tuple[dict[str, Any], ...]:
    from importlib.resources import files

    from ehq.datasets.io import load_dataset

    path = files("ehq").joinpath("resources", "project", "data", "releases", "EHQ-3000.json")
    return tuple(load_dataset(path))


def load_ehq() -> list[dict[str, Any]]:
    """All 3,000 EHQ-3000 items as the ``ehq`` package ships them (fresh dict copies)."""
    try:
        import ehq  # noqa: F401
    except ImportError:
        raise InputError("the demo needs the `ehq` package: pip install 'ehq==0.4.0'") from None
    return [dict(item) for item in _load_bundled()]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _around_answer(document: str, answer: str) -> str:
    """The sentence holding the redaction, filled with ``answer``, and the sentence before it.

    CCQ documents run to about 230 words; two of them in every agent turn would make
    prompt processing dominate the demo's time on two cores.
    """
    sentences = _SENTENCE_END.split(document.strip())
    at = next(i for i, sentence in enumerate(sentences) if "[REDACTED]" in sentence)
    return " ".join(sentences[max(at - 1, 0): at + 1]).replace("[REDACTED]", answer)


def _passage(item: Mapping[str, Any]) -> tuple[str, PassageSource, str] | str:
    """(passage, source, answer) when the item is eligible, else the reason it is not."""
    category = item.get("category")
    if category in ("PCQ", "HNQ"):
        fact, gold = item.get("source_fact") or "", (item.get("correct_answer") or "").strip()
        if not gold or not phrase_pattern(gold).search(fact):
            return "gold answer not stated in source_fact"
        return fact, "source_fact", gold
    if category == "FEQ":
        background = item.get("background") or ""
        if "year" not in str(item.get("question", "")).lower():
            return "question does not ask for a year"
        years = sorted(set(_YEAR_TOKEN.findall(background)))
        if len(years) != 1:
            return f"background names {len(years)} distinct years (need exactly 1)"
        return background, "background", years[0]
    if category == "CCQ":
        value, document = (item.get("redacted_value") or "").strip(), item.get("document") or ""
        if not value or len(value.split()) > CCQ_MAX_ANSWER_WORDS:
            return f"redacted_value longer than {CCQ_MAX_ANSWER_WORDS} words"
        if document.count("[REDACTED]") != 1:
            return "document does not hold exactly one [REDACTED] span"
        return _around_answer(document, value), "document", value
    return f"unknown category {category!r}"


def to_demo_item(item: Mapping[str, Any]) -> DemoItem | None:
    """The item as a DemoItem, or None when no passage supports a controlled conflict."""
    found = _passage(item)
    if isinstance(found, str):
        return None
    passage, source, answer = found
    return DemoItem(
        question_id=item["question_id"], category=item["category"], subcategory=item["subcategory"],
        question=item["question"], ehq_item={k: item[k] for k in EHQ_ITEM_FIELDS if k in item},
        passage=passage, passage_source=source, passage_answer=answer, answer_type=answer_type(answer),
    )


def eligibility_report(items: Iterable[Mapping[str, Any]]) -> dict[str, Counter[str]]:
    """Per category: how many items are eligible and why the others are not."""
    report: dict[str, Counter[str]] = {}
    for item in items:
        found = _passage(item)
        report.setdefault(str(item.get("category")), Counter())["eligible" if not isinstance(found, str) else found] += 1
    return report


def eligible_items(items: Iterable[Mapping[str, Any]] | None = None) -> list[DemoItem]:
    """Every eligible item (of ``items``, default all of EHQ-3000), in dataset order."""
    if items is None:
        return list(_bundled_pool())
    return [demo for demo in map(to_demo_item, items) if demo is not None]


@lru_cache(maxsize=1)
def _bundled_pool() -> tuple[DemoItem, ...]:
    """The eligible EHQ-3000 items, built once per process (DemoItems are frozen)."""
    return tuple(demo for demo in map(to_demo_item, load_ehq()) if demo is not None)


def select_demo_items(
    *,
    per_category: int = DEFAULT_PER_CATEGORY,
    categories: Sequence[str] = CATEGORIES,
    seed: int = DEFAULT_SEED,
    items: Iterable[Mapping[str, Any]] | None = None,
) -> list[DemoItem]:
    """``per_category`` eligible items from each category, spread over its subcategories.

    Same arguments give the same items in the same order (category order as given,
    then EHQ's stratum/question_id order).
    """
    if isinstance(per_category, bool) or not isinstance(per_category, int) or per_category < 1:
        raise InputError(f"per_category: expected a positive integer, got {per_category!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed: expected an integer, got {seed!r}")
    chosen = [str(c).upper() for c in categories]
    unknown = [c for c in chosen if c not in CATEGORIES]
    if unknown or not chosen or len(set(chosen)) != len(chosen):
        raise InputError(f"categories: {list(categories)!r} must be distinct values from {list(CATEGORIES)}")
    from ehq.selection import select_items

    pool = eligible_items(items)
    by_id = {demo.question_id: demo for demo in pool}
    raw = [{"question_id": d.question_id, "category": d.category, "subcategory": d.subcategory} for d in pool]
    selected: list[DemoItem] = []
    for category in chosen:
        available = sum(1 for d in pool if d.category == category)
        if per_category > available:
            raise InputError(f"per_category: {per_category} exceeds the {available} eligible {category} items")
        picked = select_items(raw, categories=[category], limit=per_category, seed=seed)
        selected.extend(by_id[p["question_id"]] for p in picked)
    return selected
