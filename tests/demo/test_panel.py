"""The simulated panel: rule labels derived by hand, noise rates, the real SQLite store, the real blinding."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

from annotate.store import Store
from annotate.tasks import load_orders, load_tasks
from apps.demo.panel import (
    DEFAULT_PANEL,
    SIMULATED_NOTE,
    SimulatedAnnotator,
    latent_label,
    run_panel,
    simulate_label,
)
from samples.adapters.responses import ResponsesAdapter
from samples.blind import blind_study
from samples.errors import InputError
from samples.ingest import ingest
from samples.records import BlindTask
from samples.sampler import sample_study
from samples.units import cut_units

PASSAGES = ("[1] Source 1: Founded in 1955, the firm had conflicting reports about its capital.\n"
            "[2] Source 2: Founded in 1957, the firm had conflicting reports about its capital.")


def _search(reasoning: str) -> dict:
    return {"reasoning": reasoning, "text": None,
            "tool_call": {"name": "search", "arguments": {"query": "founding year"}, "result": PASSAGES, "success": True}}


# Two ISE runs whose labels under the documented rules are known by hand.
NOTICING = {
    "id": "run-noticing", "agent": "accord-demo-agent", "backbone": "smollm2-135m-instruct", "dataset": "EHQ-3000",
    "setting": "controlled", "split": "conflict", "question": "What year was the firm founded?", "reference": ["1955"],
    "steps": [_search("I should look up the founding year."),
              _search("Source 1 says 1955 but Source 2 says 1957, so the passages contradict each other.")],
    "final_turn": {"reasoning": None, "text": "The sources disagree: Source 1 says 1955 and Source 2 says 1957."},
    "truncated": False,
}
# The tool result says "conflicting" but the agent's own words never do: Identify "no".
SILENT = {**NOTICING, "id": "run-silent", "steps": [_search("Let me search for the founding year.")],
          "final_turn": {"reasoning": None, "text": "1957"}}
EXPECTED = {
    ("run-noticing", "identify_trajectory", None): ("yes", 1),
    ("run-noticing", "identify_turn", 0): ("no", None),
    ("run-noticing", "identify_turn", 1): ("yes", None),  # identify_turn has no first turn (samples.kinds)
    ("run-noticing", "escalate_final", None): ("yes", None),
    ("run-noticing", "correctness", None): ("correct", None),     # mentions the reference 1955
    ("run-silent", "identify_trajectory", None): ("no", None),
    ("run-silent", "identify_turn", 0): ("no", None),
    ("run-silent", "escalate_final", None): ("no", None),
    ("run-silent", "correctness", None): ("incorrect", None),     # 1957 is not 1955
}
RESPONSES = {"I don't know.": "ABSTAIN", "It is probably Paris, but I am not sure.": "HEDGE",
             "Zizou Bergs won the title.": "CONFIDENT_WRONG"}


PLAN = """
name = "all-units"
description = "every unit of the four trajectory kinds (the panel test population)"
kinds = ["identify_trajectory", "identify_turn", "escalate_final", "correctness"]
strata = ["kind"]
allocation = "fixed"
n_per_stratum = 10
one_per_trajectory = false
"""


def _response_tasks(tmp_path) -> dict[str, BlindTask]:
    """Response units as the responses adapter and the unit cutter produce them."""
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps({"model": "gemma-3-270m", "item_id": f"Q{i}", "response": text}) + "\n"
                            for i, text in enumerate(RESPONSES)))
    tasks = {}
    for trajectory in ResponsesAdapter().read(path, {}):
        unit = cut_units(trajectory, ["response"])[0][0]
        tasks[unit.text] = BlindTask(task_id=f"t_{unit.unit_id}", kind="response", text=unit.text)
    return tasks


@pytest.fixture
def blinded(tmp_path):
    """The two runs through the real pipeline: ingest (ise), sample, blind; plus the response tasks."""
    study = tmp_path / "study"
    source = tmp_path / "runs.ise.jsonl"
    source.write_text("".join(json.dumps(raw) + "\n" for raw in (NOTICING, SILENT)))
    ingest([source], study, adapter="ise")
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    sample_study(study, plan)
    blind_study(study, annotators=[a.name for a in DEFAULT_PANEL])
    tasks = load_tasks(study / "blind" / "tasks.jsonl")
    orders = load_orders(study / "blind" / "orders.json", tasks)
    key = {json.loads(line)["task_id"]: json.loads(line) for line in (study / "sealed" / "key.jsonl").read_text().splitlines()}
    units = {json.loads(line)["unit_id"]: json.loads(line) for line in (study / "units.jsonl").read_text().splitlines()}
    expected = {}
    for task in tasks:
        unit = units[key[task.task_id]["unit_id"]]
        expected[task.task_id] = EXPECTED[(unit["trajectory_id"], unit["kind"], unit["focus_turn"])]
    return tasks, orders, expected


def test_latent_rules_match_the_hand_labels(blinded, tmp_path):
    tasks, _, expected = blinded
    assert len(tasks) == len(EXPECTED)
    for task in tasks:
        latent = latent_label(task)
        assert (latent.label, latent.first_turn) == expected[task.task_id], task.text
    for text, task in _response_tasks(tmp_path).items():
        assert latent_label(task).label == RESPONSES[text]


def test_panel_submits_through_the_store_and_is_idempotent(blinded, tmp_path):
    tasks, orders, _ = blinded
    store = Store.open(tmp_path / "labels" / "store.sqlite")
    store.load_tasks(tasks, orders)
    report = run_panel(store)
    n = len(tasks)
    assert report.submitted == {a.name: n for a in DEFAULT_PANEL}
    assert "simulated annotator panel" in report.notice and "not by people" in report.notice
    labels = store.labels()
    assert len(labels) == 3 * n
    assert {(l.backend, l.role, l.note) for l in labels} == {("simulated", "independent", SIMULATED_NOTE)}
    by_id = {t.task_id: t for t in tasks}
    for label in labels:
        annotator = next(a for a in DEFAULT_PANEL if a.name == label.annotator)
        given, _ = simulate_label(by_id[label.task_id], annotator)
        assert (label.label, label.first_turn) == (given.label, given.first_turn)
    # Running again adds nothing: submissions are idempotent by their deterministic ids.
    again = run_panel(store)
    assert again.submitted == {} and again.already_present == {a.name: n for a in DEFAULT_PANEL}
    assert len(store.all_revisions()) == 3 * n
    assert store.integrity_check() == "ok"


def test_same_seed_same_labels_in_a_fresh_store_and_another_order(blinded, tmp_path):
    tasks, orders, _ = blinded
    first = Store.open(tmp_path / "a.sqlite")
    first.load_tasks(tasks, orders)
    run_panel(first, seed=11)
    second = Store.open(tmp_path / "b.sqlite")
    second.load_tasks(tasks, {name: list(reversed(order)) for name, order in orders.items()})
    run_panel(second, seed=11)

    def table(store):
        return sorted((l.annotator, l.task_id, l.label, l.first_turn) for l in store.labels())

    assert table(first) == table(second)


def test_flip_rates_match_the_documented_noise_model():
    annotator = SimulatedAnnotator(name="sim-x", flip_prob=0.2)
    tasks = [BlindTask(task_id=f"t_{i:05d}", kind="escalate_final", text="1957") for i in range(4000)]
    given = [simulate_label(task, annotator, seed=3) for task in tasks]
    flips = sum(flipped for _, flipped in given)
    # Binomial(4000, 0.2): sd = sqrt(4000 * 0.2 * 0.8) = 25.3; allow 4 sd around 800.
    assert abs(flips - 800) < 4 * math.sqrt(4000 * 0.2 * 0.8)
    # A flipped binary label is the other label; unflipped ones keep the latent "no".
    assert Counter(latent.label for latent, _ in given) == {"yes": flips, "no": 4000 - flips}
    # A four-class flip spreads over the three other classes.
    responses = [BlindTask(task_id=f"r_{i:05d}", kind="response", text="Paris.") for i in range(3000)]
    flipped = [g.label for g, f in (simulate_label(t, annotator, seed=3) for t in responses) if f]
    counts = Counter(flipped)
    assert set(counts) == {"ABSTAIN", "HEDGE", "CONFIDENT_CORRECT"}
    assert all(abs(c - len(flipped) / 3) < 4 * math.sqrt(len(flipped) * (1 / 3) * (2 / 3)) for c in counts.values())


def test_flipped_identify_yes_carries_a_valid_first_turn():
    annotator = SimulatedAnnotator(name="sim-y", flip_prob=0.9)
    turns = ["[turn 0] a", "[turn 1] b", "[turn 2] c"]
    for i in range(300):
        task = BlindTask(task_id=f"t{i}", kind="identify_trajectory", text="\n\n".join(turns), turns=turns)
        latent, flipped = simulate_label(task, annotator)
        if flipped:
            assert latent.label == "yes" and 0 <= latent.first_turn < 3


def test_panel_refuses_accounts_that_hold_human_labels(blinded, tmp_path):
    tasks, orders, _ = blinded
    store = Store.open(tmp_path / "store.sqlite")
    store.load_tasks(tasks, orders)
    person = DEFAULT_PANEL[0].name
    token = store.add_annotator(person)
    first_task = store.task(orders[person][0])
    store.submit(token, first_task.task_id, latent_label(first_task).label,
                 first_turn=latent_label(first_task).first_turn, submission_id="human-0001")
    with pytest.raises(InputError, match="has 1 label\\(s\\) from people"):
        run_panel(store)
    assert [l.backend for l in store.labels()] == ["app"]  # nothing of the person's work changed


def test_panel_needs_the_orders_loaded(blinded, tmp_path):
    tasks, orders, _ = blinded
    store = Store.open(tmp_path / "store.sqlite")
    store.load_tasks(tasks, {"someone-else": orders[DEFAULT_PANEL[0].name]})
    with pytest.raises(InputError, match="no task order in the store"):
        run_panel(store)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"name": "", "flip_prob": 0.1}, "name must be a non-empty string"),
    ({"name": "a", "flip_prob": 1.0}, "flip_prob must be in \\[0, 1\\)"),
    ({"name": "a", "flip_prob": "0.1"}, "flip_prob must be in"),
])
def test_annotator_arguments_are_validated(kwargs, message):
    with pytest.raises(InputError, match=message):
        SimulatedAnnotator(**kwargs)
