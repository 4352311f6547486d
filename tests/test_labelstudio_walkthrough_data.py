"""The Label Studio walkthrough's data (data/labelstudio/): what its generator writes, and what the README says of it."""

from __future__ import annotations

import importlib.util
import json

from tests.conftest import REPO

DATA = REPO / "data" / "labelstudio"


def test_responses_are_exactly_what_the_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("make_responses", DATA / "make_responses.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write(tmp_path / "responses.jsonl")
    assert (tmp_path / "responses.jsonl").read_bytes() == (DATA / "responses.jsonl").read_bytes()


def test_the_classifier_misreads_only_a_hedge_without_cue_words_and_the_month_may():
    """README walkthrough 1: it reads a hedge worded without its cue words as confident and the month May as a hedge."""
    from ehq.evaluation.classifier import classify_response

    rows = [json.loads(line) for line in (DATA / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 120 and {r["written_as"] for r in rows} == {"ABSTAIN", "HEDGE", "CONFIDENT_CORRECT", "CONFIDENT_WRONG"}
    labels = [classify_response(r["response"], r["ehq_item"]).label for r in rows]
    misread = [(r["written_as"], label, r["response"]) for r, label in zip(rows, labels) if label != r["written_as"]]
    assert [(w, c) for w, c, _ in misread] == [("HEDGE", "CONFIDENT_WRONG"), ("CONFIDENT_CORRECT", "HEDGE"),
                                               ("CONFIDENT_CORRECT", "HEDGE")]
    assert misread[0][2].startswith("If I had to guess") and all("May" in text for _, _, text in misread[1:])
