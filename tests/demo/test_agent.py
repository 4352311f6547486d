"""The demo agent and closed-book answers, on the real local models behind llama-server."""

from __future__ import annotations

import json
import socket

import pytest

from apps.demo.agent import (
    AgentConfig,
    DemoModel,
    closed_book_answers,
    parse_turn,
    run_agent,
    search_result,
)
from apps.demo.conflict import build_instances
from apps.demo.items import select_demo_items
from samples.errors import InputError
from samples.ingest import ingest
from samples.jsonl import read_models, write_jsonl
from samples.records import Trajectory
from samples.schemes import get_scheme

CONFIG = AgentConfig(max_turns=3, max_tokens=48)


def test_parse_turn():
    turn = parse_turn("Thought: look it up\nAction: search[founding year]", complete=True)
    assert (turn.thought, turn.query, turn.answer) == ("look it up", "founding year", None)
    turn = parse_turn("Thought: both say 1955\nAnswer: 1955", complete=True)
    assert (turn.thought, turn.query, turn.answer) == ("both say 1955", None, "1955")
    # An answer cut by the token limit is not an answer.
    assert parse_turn("Thought: x\nAnswer: 19", complete=False).answer is None
    assert parse_turn("no format at all", complete=True) == parse_turn("no format at all", complete=False)


def test_search_returns_the_instance_passages_numbered():
    instance = build_instances(select_demo_items(per_category=1, categories=["HNQ"]))[0]
    text = search_result(instance)
    assert text.splitlines() == [f"[1] Source 1: {instance.passages[0]}", f"[2] Source 2: {instance.passages[1]}"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_turns": 0}, "max_turns must be a positive integer"),
    ({"concurrency_per_model": 1.5}, "concurrency_per_model must be a positive integer"),
    ({"seed": None}, "seed must be an integer"),
    ({"timeout_s": 0}, "timeout_s must be a positive number"),
])
def test_config_is_validated(kwargs, message):
    with pytest.raises(InputError, match=message):
        AgentConfig(**kwargs)


def test_no_server_is_one_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    instances = build_instances(select_demo_items(per_category=1, categories=["FEQ"]))
    with pytest.raises(InputError, match=f"no model server at http://127.0.0.1:{port}"):
        run_agent(instances, base_url=f"http://127.0.0.1:{port}", config=AgentConfig(timeout_s=5))


@pytest.fixture(scope="module")
def demo_items():
    # One item with a short passage keeps the model calls few (4 runs, 12 requests at most).
    return select_demo_items(per_category=1, categories=["HNQ"])


@pytest.fixture(scope="module")
def runs(llama_server, demo_items):
    instances = build_instances(demo_items)
    records, report = run_agent(instances, base_url=llama_server.base_url, config=CONFIG)
    return instances, records, report


@pytest.mark.llama
def test_agent_runs_are_ise_trajectories(runs, tmp_path):
    instances, records, report = runs
    assert len(records) == 2 * len(instances) == report.n_records
    source = tmp_path / "runs.ise.jsonl"
    write_jsonl(source, records)
    result = ingest([source], tmp_path / "study", adapter="ise")
    assert result.bad_records == [] and result.n_trajectories == len(records)
    # Every run has a search turn to judge; runs with an answer also give final-answer units.
    assert result.units_by_kind["identify_trajectory"] == len(records)
    trajectories = list(read_models(tmp_path / "study" / "trajectories.jsonl", Trajectory))
    assert len(trajectories) == len(records)
    by_instance = {i.instance_id: i for i in instances}
    for trajectory in trajectories:
        instance = by_instance[trajectory.metadata["instance"]]
        assert (trajectory.setting, trajectory.split, trajectory.dataset) == ("controlled", instance.split, "EHQ-3000")
        assert trajectory.question == instance.question and trajectory.references == instance.references
        first = trajectory.steps[0]
        assert [c.name for c in first.tool_calls] == ["search"]
        assert first.tool_calls[0].result == search_result(instance)
        assert len(trajectory.steps) <= CONFIG.max_turns
        assert trajectory.truncated == (trajectory.final_answer is None)
        assert trajectory.truncated == (len(trajectory.steps) == CONFIG.max_turns and not trajectory.steps[-1].is_final)
    # Two open-weight families, inferred from the backbone ids by the identity vocabulary.
    assert {t.family for t in trajectories} == {"huggingface", "google"}
    assert report.n_requests >= len(records)


@pytest.mark.llama
def test_agent_runs_are_deterministic(runs, llama_server):
    instances, records, _ = runs
    again, _ = run_agent(instances, base_url=llama_server.base_url, config=CONFIG)
    assert json.dumps(again, sort_keys=True) == json.dumps(records, sort_keys=True)


@pytest.mark.llama
def test_closed_book_answers_feed_the_responses_adapter_and_the_ehq_classifier(llama_server, demo_items, tmp_path):
    from ehq.evaluation.classifier import classify_response
    from ehq.prompts import build_answer_prompt

    records, report = closed_book_answers(demo_items, base_url=llama_server.base_url, config=CONFIG)
    assert report.n_records == len(records) == 2 * len(demo_items)
    source = tmp_path / "responses.jsonl"
    write_jsonl(source, records)
    result = ingest([source], tmp_path / "study", adapter="responses")
    assert result.bad_records == []
    trajectories = list(read_models(tmp_path / "study" / "trajectories.jsonl", Trajectory))
    assert len(trajectories) == len(records)
    labels = get_scheme("ehq4").labels
    items = {item.question_id: item for item in demo_items}
    for trajectory in trajectories:
        item = trajectory.metadata["ehq_item"]
        assert item == items[trajectory.metadata["item_id"]].ehq_item
        # CCQ answers are elicited with the redacted document, as EHQ does.
        assert ("DOCUMENT:" in build_answer_prompt(item)) == (item["category"] == "CCQ")
        if trajectory.final_answer:
            assert classify_response(trajectory.final_answer, item).label in labels


@pytest.mark.llama
def test_unknown_model_is_one_clear_error(llama_server, demo_items):
    instances = build_instances(demo_items[:1])
    with pytest.raises(InputError, match="refused model 'no-such-model'"):
        run_agent(instances, base_url=llama_server.base_url, models=[DemoModel(name="no-such-model", backbone="x")],
                  config=CONFIG)
