"""EHQ's truncation rule (seed 002, section 5.2) on responses, and the flag's way to people and judges.

A response is flagged when the token budget was reached or when its text stops on a function word, a dangling
separator or an unclosed quotation or bracket. The flag rides on the response unit and the blinded task, the
annotator view (both backends) shows it as a notice, and a judge prompt can ask for it; the default judge
message is the response alone, as EHQ's classifier reads it.
"""

from __future__ import annotations

import json

import pytest

from annotate.labelstudio import display_payload
from samples.blind import blind
from samples.ingest import ingest
from samples.kinds import get_kind
from samples.records import SampledUnit
from samples.truncation import budget_reason, text_reason, truncation_reason


@pytest.mark.parametrize(("text", "flagged"), [
    ("The capital of Australia is Canberra.", None),
    ("I don't know.", None),
    ("Paris", None),
    ("It was built in 1889 by the", "function word 'the'"),
    ("The answer depends on whether you count", None),  # 'count' is no function word: not flagged by the rule
    ("The winners were Smith, Jones,", "dangling ','"),
    ("The main causes are:", "dangling ':'"),
    ("Canberra (the capital since 1913", "'(' unclosed"),
    ('He said "the treaty was', "quotation unclosed"),
    ("He said “the treaty was signed”.", None),
    ("It is 42 [see note 3] in total.", None),
])
def test_text_rule(text, flagged):
    reason = text_reason(text)
    assert (reason is None) == (flagged is None), reason
    if flagged:
        assert flagged in reason


def test_budget_evidence_comes_first_and_needs_the_record():
    assert "finish_reason 'length'" in budget_reason({"finish_reason": "length"})
    assert "stop_reason 'max_tokens'" in budget_reason({"stop_reason": "max_tokens"})
    assert budget_reason({"completion_tokens": 96, "max_tokens": 96}) == "its 96 completion tokens reached the budget of 96"
    assert budget_reason({"completion_tokens": 95, "max_tokens": 96}) is None
    assert budget_reason({"finish_reason": "stop", "max_tokens": 96}) is None
    assert budget_reason({"completion_tokens": True, "max_tokens": 1}) is None  # a bool is no token count
    # A finished-looking text cut by the budget is flagged for the budget; a clean stop with a cut text, by the text.
    assert "budget" in truncation_reason("A complete sentence.", {"finish_reason": "length"})
    assert "function word" in truncation_reason("It was the", {"finish_reason": "stop"})


RESPONSES = [
    {"model": "m1", "item_id": "q1", "question": "Capital of Australia?", "reference": ["Canberra"],
     "response": "The capital is Canberra.", "finish_reason": "stop"},
    {"model": "m1", "item_id": "q2", "question": "Who wrote <b>Ulysses</b>?", "reference": ["James Joyce"],
     "response": "It was written by the Irish author James", "finish_reason": "length"},
    {"model": "m2", "item_id": "q1", "question": "Capital of Australia?", "reference": ["Canberra"],
     "response": "Canberra, though many assume it is", "finish_reason": "stop"},
]


def test_flag_reaches_units_tasks_and_both_backends(tmp_path):
    from apps.workspace import task_html  # imports streamlit: here, not when the suite is collected

    source = tmp_path / "responses.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in RESPONSES))
    ingest([source], tmp_path / "study", adapter="responses", kinds=["response"])
    units = {json.loads(line)["trajectory_id"]: json.loads(line)
             for line in (tmp_path / "study" / "units.jsonl").read_text().splitlines()}
    assert "truncation" not in units["m1::q1"]  # unflagged rows are written as before the field existed
    assert units["m1::q2"]["truncation"] == "the model hit its token budget (finish_reason 'length')"
    assert units["m2::q1"]["truncation"] == "it stops on the function word 'is'"

    sampled = [SampledUnit(**u, stratum="all", inclusion_prob=1.0) for u in units.values()]
    tasks = {t.text: t for t in blind(sampled, annotators=["ann"], salt=b"s" * 32).tasks}
    cut = tasks["It was written by the Irish author James"]
    assert cut.truncation == units["m1::q2"]["truncation"]
    assert tasks["The capital is Canberra."].truncation is None

    notice = "This response was cut off before it finished: the model hit its token budget (finish_reason &#x27;length&#x27;)."
    page, payload = task_html(cut), display_payload(cut)
    for shown in (page, payload):
        assert "This response was truncated" in shown and notice in shown
        assert shown.index("This response was truncated") < shown.index("It was written by the Irish author James")
        assert "&lt;b&gt;Ulysses&lt;/b&gt;" in shown and "<b>Ulysses" not in shown
    assert 'class="accord-box accord-notice" role="alert"' in page
    clean = tasks["The capital is Canberra."]
    assert "truncated" not in task_html(clean) and "truncated" not in display_payload(clean)

    # Judges: the default message is the response alone; a prompt may ask for the flag.
    kind = get_kind("response")
    assert kind.default_template == "{response}"
    fields = kind.judge_fields(SampledUnit(**units["m1::q2"], stratum="all", inclusion_prob=1.0))
    assert fields["truncation"] == ("This response was cut off before it finished: the model hit its token budget "
                                    "(finish_reason 'length').")
    assert kind.judge_fields(SampledUnit(**units["m1::q1"], stratum="all", inclusion_prob=1.0))["truncation"] == ""
