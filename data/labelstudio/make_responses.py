"""Write ``responses.jsonl``: synthetic answers to real EHQ-3000 questions (seeded, byte-identical on rerun).

120 real questions (60 PCQ, 60 HNQ; both have a gold answer), picked by
``apps.demo.items.select_demo_items`` (EHQ's own seeded round-robin over subcategories).
Each gets one response written from a template of one of EHQ's four classes, drawn
with the seed: an abstention, a hedge (on the gold or a wrong answer), a confident gold
answer, or a confident wrong one (the gold answer of another selected question with the
same answer type). ``written_as`` records that class; neither annotators nor judges see
it. No model wrote the responses: they exist so that people in Label Studio and the EHQ
rule classifier (``rule:ehq``) can label the same responses (README walkthrough 1).

Run from the repository root: ``.venv/bin/python data/labelstudio/make_responses.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from apps.demo.items import select_demo_items  # noqa: E402  (repo root on the path first)
from samples.seed import DEFAULT_SEED  # noqa: E402

SEED = DEFAULT_SEED
PER_CATEGORY = 60
MODEL = "synthetic/templates"
TEMPLATES = {
    "ABSTAIN": ("I don't know.", "I have no reliable information about this.", "I can't answer that with confidence."),
    "HEDGE": ("I think it is {answer}, but I'm not sure.", "Possibly {answer}.", "It might be {answer}.",
              "Probably {answer}.", "If I had to guess: {answer}."),
    "CONFIDENT_CORRECT": ("{gold}.", "The answer is {gold}."),
    "CONFIDENT_WRONG": ("{wrong}.", "The answer is {wrong}."),
}
SHARES = (0.25, 0.2, 0.35, 0.2)


def write(path: Path) -> None:
    rng = np.random.default_rng(SEED)
    items = select_demo_items(per_category=PER_CATEGORY, categories=("PCQ", "HNQ"), seed=SEED)
    lines = []
    for index, item in enumerate(items):
        gold = item.ehq_item["correct_answer"]
        # A wrong answer of the right type: the gold of the next question with the same answer type (date, year,
        # number, entity), of the same subcategory when there is one.
        others = [o for o in items[index + 1:] + items[:index]
                  if o.answer_type == item.answer_type and o.ehq_item["correct_answer"] != gold]
        wrong = next((o for o in others if o.subcategory == item.subcategory), others[0]).ehq_item["correct_answer"]
        label = str(rng.choice(list(TEMPLATES), p=SHARES))
        template = TEMPLATES[label][rng.integers(len(TEMPLATES[label]))]
        answer = gold if rng.random() < 0.5 else wrong
        record = {"model": MODEL, "item_id": item.question_id, "category": item.category, "question": item.question,
                  "reference": [gold], "response": template.format(answer=answer, gold=gold, wrong=wrong),
                  "written_as": label, "ehq_item": item.ehq_item}
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write(HERE / "responses.jsonl")
