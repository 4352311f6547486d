"""The demo agent and closed-book answers, on the real local models behind llama-server."""

from __future__ import annotations

import json
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from apps.demo.agent import (
    DEMO_MODELS,
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


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class DroppingRelay:
    """A loopback TCP relay that drops its first ``drops`` requests unanswered, then relays to ``target``.

    Dropping reproduces what llama-server's router does to a request sent on a connection it
    is closing (the client sees "Server disconnected without sending a response"); the router
    cannot be made to do it on demand. The request heads it saw are kept in ``heads``.
    """

    def __init__(self, target: str, *, drops: int) -> None:
        parts = urlsplit(target)
        self.target = (parts.hostname, parts.port)
        self.drops = drops
        self.heads: list[bytes] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            with self._lock:
                self.heads.append(data.split(b"\r\n\r\n", 1)[0])
                if len(self.heads) <= self.drops:
                    return
            with socket.create_connection(self.target) as upstream:
                upstream.sendall(data)
                threading.Thread(target=_pump, args=(conn, upstream), daemon=True).start()
                _pump(upstream, conn)

    def __enter__(self) -> DroppingRelay:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()


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
    ({"connection_retries": -1}, "connection_retries must be a non-negative integer"),
    ({"retry_backoff_s": 0}, "retry_backoff_s must be a positive number"),
])
def test_config_is_validated(kwargs, message):
    with pytest.raises(InputError, match=message):
        AgentConfig(**kwargs)


def test_no_server_is_one_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    instances = build_instances(select_demo_items(per_category=1, categories=["FEQ"]))
    started = time.monotonic()
    with pytest.raises(InputError, match=f"no model server at http://127.0.0.1:{port}"):
        run_agent(instances, base_url=f"http://127.0.0.1:{port}", config=AgentConfig(timeout_s=5, retry_backoff_s=60))
    # A refused connection is not retried: one retry alone would wait retry_backoff_s = 60 s.
    assert time.monotonic() - started < 30


def test_a_server_that_keeps_dropping_requests_is_retried_a_bounded_number_of_times():
    instance = build_instances(select_demo_items(per_category=1, categories=["FEQ"]))[0]
    config = AgentConfig(connection_retries=2, retry_backoff_s=0.01)
    with DroppingRelay("http://127.0.0.1:9", drops=100) as relay:
        with pytest.raises(InputError, match="dropped the connection 3 times in a row"):
            run_agent([instance], base_url=relay.base_url, models=DEMO_MODELS[:1], config=config)
    assert len(relay.heads) == 3


@pytest.fixture(scope="module")
def demo_items():
    # One item with a short passage keeps the model calls few.
    return select_demo_items(per_category=1, categories=["HNQ"])


@pytest.fixture(scope="module")
def runs(llama_server, demo_items):
    # The item's conflict instance alone: 2 runs, 6 requests at most (the session's demo run covers the control
    # split on the same models, tests/study/test_demo_end_to_end.py).
    instances = [i for i in build_instances(demo_items) if i.split == "conflict"]
    assert len(instances) == 1
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
def test_agent_runs_are_deterministic_even_when_connections_drop(runs, llama_server):
    instances, records, first = runs
    # The second run loses its first two requests (both models' first turns) and retries them.
    with DroppingRelay(llama_server.base_url, drops=2) as relay:
        again, report = run_agent(instances, base_url=relay.base_url, config=CONFIG)
    assert json.dumps(again, sort_keys=True) == json.dumps(records, sort_keys=True)
    assert (report.retries, report.n_requests) == (2, first.n_requests)
    assert len(relay.heads) == report.n_requests + 2
    # Every request asks for a connection of its own (the router closes reused ones under it).
    assert all(b"\r\nconnection: close" in head.lower() for head in relay.heads)


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
