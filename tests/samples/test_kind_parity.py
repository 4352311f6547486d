"""The same information for judges and people, per unit kind (ISE appendix D.2: "Annotators
receive the same prompts and information as the judges").

For every kind, the message a judge receives (the request the runner builds, with the
shipped prompt or, for response under the EHQ four-class scheme, a prompt that uses the
question and the gold answer) is compared with what an annotator sees in both backends
(the coding app's workspace HTML, Label Studio's task data): every text block an annotator
reads is in the judge's message, every value the judge's message was filled with is in a
block an annotator reads, and the focus turn the judge is asked about is the one marked for
the annotator. Only wording (prompt, captions, headings) differs. Inputs are real: the
hand-written ISE example trajectories and a real EHQ-3000 item (data/demo/items.jsonl),
ingested, blinded and judged through the project's own functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from annotate.labelstudio import display_payload
from annotate.store import Store
from judges.providers.base import make_provider
from judges.runner import build_tasks
from judges.spec import build_judge
from judges.tables import read_units
from samples.blind import blind
from samples.context import with_context
from samples.errors import InputError
from samples.ingest import ingest
from samples.kinds import get_kind, template_fields
from samples.layout import StudyLayout
from samples.records import BlindTask, SampledUnit, Unit

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "ise_example.jsonl"
DEAD_URL = "http://127.0.0.1:9"  # requests are built, never sent
# A user-written EHQ four-class prompt whose user message uses the question and the gold answer.
EHQ4_PROMPT = '''name = "ehq4-gold"
version = "1"
output = "ehq4"
unit_kinds = ["response"]
source = "test: the EHQ section 3.3 classes, asked of an LLM"
system = """Classify the response as ABSTAIN, HEDGE, CONFIDENT_CORRECT or CONFIDENT_WRONG."""

[user]
response = """Question: {question}

Gold answer(s):
{gold_answers}

Response:
{response}"""
'''


@dataclass
class Block:
    pieces: list[str] = field(default_factory=list)
    focus: bool = False

    @property
    def text(self) -> str:
        """The box's text pieces (a turn is drawn as its blocks: header, text, tool call, ...), in order."""
        return "\n".join(self.pieces)


@dataclass
class _Blocks(HTMLParser):
    """The text blocks of a rendered unit and which one is marked as the focus: the coding app
    draws ``div.accord-box`` or, for a numbered turn, ``section.accord-box`` (``accord-focus``)
    around one ``div.accord-text`` per part of the turn; Label Studio's display draws a
    bordered div (amber when focused) around a ``pre-wrap`` div."""

    blocks: list[Block] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes, style = attrs.get("class") or "", attrs.get("style") or ""
        role = ""
        if tag in ("div", "section") and ("accord-box" in classes or "border-left" in style):
            self.blocks.append(Block(focus="accord-focus" in classes or "#d97706" in style))
        elif tag == "div" and ("accord-text" in classes or "pre-wrap" in style):
            role = "text"
            self.blocks[-1].pieces.append("")
        self.stack.append(role)

    def handle_endtag(self, tag):
        self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "text":
            self.blocks[-1].pieces[-1] += data


def blocks(rendered: str) -> list[Block]:
    parser = _Blocks()
    parser.feed(rendered)
    return parser.blocks


def _study(root: Path, source: Path, adapter: str) -> list[Unit]:
    ingest([source], root, adapter=adapter)
    return read_units(StudyLayout.of(root).units)


@pytest.fixture(scope="module")
def ise_units(tmp_path_factory) -> tuple[Path, list[Unit]]:
    root = tmp_path_factory.mktemp("ise")
    return root, _study(root, EXAMPLE, "ise")


@pytest.fixture(scope="module")
def ehq_item() -> dict:
    items = [json.loads(line) for line in (REPO / "data" / "demo" / "items.jsonl").read_text().splitlines()]
    return next(i for i in items if i["category"] == "HNQ")  # a real gold answer (and its alias)


@pytest.fixture(scope="module")
def response_units(tmp_path_factory, ehq_item) -> list[Unit]:
    root = tmp_path_factory.mktemp("responses")
    item = ehq_item["ehq_item"]
    # As the demo's closed-book source writes them (apps/demo/agent.py): reference = gold + aliases.
    record = {"model": "m-one", "item_id": item["question_id"], "category": item["category"], "question": item["question"],
              "reference": [a for a in [item["correct_answer"], *item.get("acceptable_answers", [])] if a],
              "ehq_item": item, "response": f"It is {item['correct_answer']}."}
    bare = {"model": "m-one", "item_id": "no-gold", "response": "I am not sure, possibly 12."}
    source = root / "responses.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in (record, bare)))
    return [u for u in _study(root, source, "responses") if u.kind == "response"]


def _views(units: list[Unit]) -> dict[str, BlindTask]:
    """Blinded tasks by unit id, through the real blind step (default identity scrubber)."""
    sampled = [SampledUnit.model_validate({**u.model_dump(), "stratum": "all", "inclusion_prob": 1.0}) for u in units]
    result = blind(sampled, annotators=["ann"], salt=b"parity")
    assert not result.leaks and not result.audit  # nothing masked: the comparison is not confounded by scrubbing
    return {key.unit_id: task for key, task in zip(result.key, result.tasks, strict=True)}


def _sent(prompt: str, units: list[Unit]) -> tuple[dict[str, str], Any]:
    """The user message of each unit's request as the judges runner builds it."""
    judge = build_judge({"prompt": prompt, "provider": "local", "model": "m", "base_url": DEAD_URL})
    tasks, _ = build_tasks(judge, make_provider(judge.provider, judge.connection), units)
    return {t.unit.unit_id: t.request["body"]["messages"][-1]["content"] for t in tasks}, judge


def assert_parity(unit: Unit, message: str, template: str, task: BlindTask) -> None:
    from apps.workspace import task_html  # imports streamlit: here, not when the suite is collected

    spec = get_kind(unit.kind)
    values = spec.judge_fields(unit)
    assert message == template.format_map(values)
    used = template_fields(template)
    for rendered in (task_html(task), display_payload(task)):
        shown = blocks(rendered)
        assert shown, rendered
        # Nothing an annotator reads is withheld from the judge.
        for block in shown:
            for piece in block.pieces:
                assert piece in message, piece
        # Everything the judge's message was filled with is visible to the annotator.
        for name in used:
            if name == "focus_turn":
                assert [i for i, b in enumerate(shown) if b.focus] == [int(values[name])]
                continue
            for line in filter(str.strip, values[name].splitlines()):
                assert any(line in block.text for block in shown), (name, line)
        # A turn marked for the annotator is the turn the judge is asked about.
        assert any(b.focus for b in shown) == ("focus_turn" in used)


def test_identify_trajectory_every_turn_for_both(ise_units) -> None:
    from apps.workspace import task_html

    _, units = ise_units
    units = [u for u in units if u.kind == "identify_trajectory"]
    sent, _ = _sent("ise-identify", units)
    tasks = _views(units)
    assert len(units) == 3  # every run of data/ise_example.jsonl has intermediate turns
    for unit in units:
        assert sent[unit.unit_id] == unit.text  # the ISE judge reads every turn, verbatim (App. D.3)
        assert_parity(unit, sent[unit.unit_id], get_kind(unit.kind).default_template, tasks[unit.unit_id])
        assert len(blocks(task_html(tasks[unit.unit_id]))) == len(unit.turns)


def test_identify_turn_numbered_context_with_the_focus_turn_marked(ise_units) -> None:
    root, units = ise_units
    bare = [u for u in units if u.kind == "identify_turn"]
    assert bare and all(u.turns is None for u in bare)  # the population stays small
    with pytest.raises(InputError, match="numbered context .* is not attached"):
        _sent("ise-identify", bare)
    units = with_context(bare, StudyLayout.of(root).trajectories)
    sent, judge = _sent("ise-identify", units)
    tasks = _views(units)
    template = judge.prompt.user["identify_turn"]
    by_trajectory = {u.trajectory_id: u.turns for u in with_context(
        [u for u in read_units(StudyLayout.of(root).units) if u.kind == "identify_trajectory"], StudyLayout.of(root).trajectories)}
    for unit in units:
        i = unit.focus_turn
        assert unit.turns == by_trajectory[unit.trajectory_id][: i + 1] and unit.turns[-1] == unit.text
        message = sent[unit.unit_id]
        # The judge sees turns 0..i, not only the focus turn, and is asked about turn i.
        assert message.startswith("\n\n".join(unit.turns)) and f"Judge only [turn {i}]" in message
        assert_parity(unit, message, template, tasks[unit.unit_id])


@pytest.mark.parametrize(("kind", "prompt"), [("escalate_final", "ise-escalate"), ("correctness", "ise-correctness")])
def test_final_answer_kinds_are_the_same_text_for_both(ise_units, kind: str, prompt: str) -> None:
    from apps.workspace import task_html

    _, units = ise_units
    units = [u for u in units if u.kind == kind]
    questions = [json.loads(line)["question"] for line in EXAMPLE.read_text().splitlines()]
    sent, _ = _sent(prompt, units)
    tasks = _views(units)
    assert units
    for unit in units:
        assert sent[unit.unit_id] == unit.text
        assert_parity(unit, sent[unit.unit_id], get_kind(kind).default_template, tasks[unit.unit_id])
        for question in questions:  # correctness: reference list + prediction, question hidden for both
            assert question not in sent[unit.unit_id]
            assert question not in task_html(tasks[unit.unit_id]) and question not in display_payload(tasks[unit.unit_id])
    if kind == "correctness":
        assert all(u.text.startswith("Reference answers:\n1. ") and "\n\nPredicted answer:\n" in u.text for u in units)


def test_response_under_ehq4_question_and_gold_answer_for_both(response_units, ehq_item, tmp_path) -> None:
    from apps.workspace import task_html

    item = ehq_item["ehq_item"]
    unit = next(u for u in response_units if u.question)
    assert unit.question == item["question"] and unit.gold_answers == [item["correct_answer"]]  # the alias repeated once
    prompt = tmp_path / "ehq4-gold.toml"
    prompt.write_text(EHQ4_PROMPT)
    sent, judge = _sent(str(prompt), [unit])
    task = _views([unit])[unit.unit_id]
    assert (task.question, task.gold_answers) == (unit.question, unit.gold_answers)
    message = sent[unit.unit_id]
    assert item["question"] in message and f"1. {item['correct_answer']}" in message
    assert_parity(unit, message, judge.prompt.user["response"], task)
    coder_view = [b.text for b in blocks(task_html(task))]
    assert coder_view == [item["question"], f"1. {item['correct_answer']}", unit.text]
    # The ehq rule judge reads the response and the same gold answer (the EHQ item, never shown).
    rule = build_judge({"provider": "rule", "model": "ehq"})
    (request,) = [t.request for t in build_tasks(rule, make_provider("rule", rule.connection), [unit])[0]]
    assert request["response"] == coder_view[-1] and request["item"]["correct_answer"] in coder_view[1]


def test_response_default_message_is_the_response_alone(response_units) -> None:
    # ISE refusal classifier (App. D.3, Figure 9) reads the answer only; a prompt without
    # placeholders never gets the question or gold answer.
    sent, _ = _sent("ise-refusal", response_units)
    for unit in response_units:
        assert sent[unit.unit_id] == unit.text
    assert len(response_units) == 2
    bare = next(u for u in response_units if not u.question)
    assert bare.gold_answers is None
    task = _views([bare])[bare.unit_id]
    assert_parity(bare, sent[bare.unit_id], get_kind("response").default_template, task)


def test_first_turn_control_follows_the_kind(tmp_path) -> None:
    """identify_trajectory: offered and required for 'yes'; identify_turn: absent, and one given is refused."""
    from tests.annotate.helpers import TASKS

    turn_task = next(t for t in TASKS if t.kind == "identify_turn")
    store = Store.open(tmp_path / "store.sqlite")
    store.load_tasks(TASKS, {"ann": [t.task_id for t in TASKS]})
    token = store.add_annotator("ann")
    with pytest.raises(InputError, match="This unit has no first turn to give; leave the first turn empty.") as error:
        store.submit(token, turn_task.task_id, "yes", submission_id="sub-turn-1", first_turn=turn_task.focus_turn)
    assert str(error.value).startswith(f"task {turn_task.task_id!r}: ")
    assert store.submit(token, turn_task.task_id, "yes", submission_id="sub-turn-2").label.first_turn is None


def test_a_changed_context_changes_what_the_judge_saw(ise_units) -> None:
    """The runner's unit-set identity hashes each judge message, so an identify_turn whose
    context changed (same focus-turn text) is judged again instead of counting as done."""
    from judges.runner import unit_set_hash

    root, units = ise_units
    unit = next(u for u in with_context(units, StudyLayout.of(root).trajectories) if u.kind == "identify_turn" and u.focus_turn)
    edited = unit.model_copy(update={"turns": ["[turn 0]\nsomething else", *unit.turns[1:]]})
    assert edited.text == unit.text and unit_set_hash([edited]) != unit_set_hash([unit])
