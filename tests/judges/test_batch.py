"""Batch files in the providers' documented formats, read back into the same labels table."""

from __future__ import annotations

import json
import re

import pytest

from judges.batch import import_batch_results, write_batch
from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels
from samples.errors import InputError
from tests.judges.units import escalate_units


def _judge(server, api: str):
    config = {"prompt": "ise-escalate", "provider": api, "model": "judge-m", "name": f"esc-{api}",
              "base_url": server.base_url + ("/v1" if api == "openai" else ""), "max_retries": 0, "timeout_s": 5}
    if api == "anthropic":
        config["params"] = {"max_tokens": 8}
    return build_judge(config)


def _openai_result(custom_id: str, text: str | None) -> dict:
    # OpenAI Batch API output line (docs: "Batch API" > output file).
    if text is None:
        return {"id": "batch_req_2", "custom_id": custom_id, "response": None,
                "error": {"code": "server_error", "message": "The server had an error"}}
    return {"id": "batch_req_1", "custom_id": custom_id, "error": None,
            "response": {"status_code": 200, "request_id": "req_1", "body": {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "judge-m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 700, "completion_tokens": 1, "total_tokens": 701}}}}


def _anthropic_result(custom_id: str, text: str | None) -> dict:
    # Anthropic Message Batches results line (docs: "Batch processing" > results).
    if text is None:
        return {"custom_id": custom_id, "result": {"type": "errored", "error": {
            "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}}
    return {"custom_id": custom_id, "result": {"type": "succeeded", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "judge-m",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 700, "output_tokens": 1}}}}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_batch_round_trip(fault_server, tmp_path, api: str) -> None:
    units = escalate_units(5)
    judge = _judge(fault_server, api)
    cache = tmp_path / "study" / "judges" / "cache.sqlite"
    (written,) = write_batch(units, [judge], tmp_path / "batch", cache_path=cache)
    assert written["requests"] == 5 and fault_server.attempts == []
    lines = [json.loads(line) for line in open(written["batch_file"])]
    for line in lines:
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", line["custom_id"])
        if api == "openai":
            assert set(line) == {"custom_id", "method", "url", "body"}
            assert (line["method"], line["url"]) == ("POST", "/v1/chat/completions")
            assert line["body"]["messages"][0]["role"] == "system"
        else:
            assert set(line) == {"custom_id", "params"}
            assert line["params"]["max_tokens"] == 8 and line["params"]["system"] == judge.prompt.system

    replies = ["YES", "NO", "YES", "maybe", None]  # one unparseable answer, one errored request
    make = _openai_result if api == "openai" else _anthropic_result
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(make(line["custom_id"], reply)) + "\n" for line, reply in zip(lines, replies)))
    imported = import_batch_results(results, written["requests_file"], cache_path=cache)
    assert imported["cached"] == 4 and imported["results"] == 5

    summary = run_judges(units, [judge], StudyPaths.in_dir(tmp_path / "study" / "judges")).judges[0]
    assert (summary.cache_hits, summary.calls) == (4, 1)
    assert len(fault_server.attempts) == 1  # only the errored request is called live
    table = read_labels(tmp_path / "study" / "judges" / "labels.jsonl")
    got = [table[(u.unit_id, judge.name, 0)] for u in units]
    assert [r.label for r in got[:4]] == ["yes", "no", "yes", None]
    assert got[3].parse_status == "unscored" and got[3].unscored_reason.startswith("wrong_format")
    assert got[0].input_tokens == 700 and got[0].cache_hit
    assert got[4].label == "yes" and not got[4].cache_hit

    again = write_batch(units, [judge], tmp_path / "batch2", cache_path=cache)
    assert again[0]["requests"] == 0 and again[0]["already_cached"] == 5


def test_batch_result_errors_name_the_line(fault_server, tmp_path) -> None:
    units = escalate_units(1)
    (written,) = write_batch(units, [_judge(fault_server, "openai")], tmp_path, cache_path=tmp_path / "c.sqlite")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"custom_id": "nope", "response": {"status_code": 200, "body": {}}}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1: custom_id 'nope'"):
        import_batch_results(bad, written["requests_file"], cache_path=tmp_path / "c.sqlite")
    custom_id = json.loads(open(written["batch_file"]).readline())["custom_id"]
    bad.write_text(json.dumps({"custom_id": custom_id, "response": {"status_code": 200, "body": {"choices": []}}}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:1: malformed response"):
        import_batch_results(bad, written["requests_file"], cache_path=tmp_path / "c.sqlite")
    with pytest.raises(InputError, match="batch files exist for providers"):
        write_batch(units, [build_judge({"provider": "rule", "model": "aggarwal"})], tmp_path, cache_path=tmp_path / "c.sqlite")


def _vllm_result(custom_id: str, text: str | None, index: int) -> dict:
    # A line of `vllm run-batch -o` output: BatchRequestOutput(...).model_dump_json() in
    # vllm/entrypoints/openai/run_batch.py; a failed request has status 400, no body and the
    # error message as a string (make_error_request_output).
    if text is None:
        return {"id": f"vllm-{index:032x}", "custom_id": custom_id,
                "response": {"status_code": 400, "request_id": f"vllm-batch-{index:032x}", "body": None},
                "error": "This model's maximum context length is 2048 tokens."}
    return {"id": f"vllm-{index:032x}", "custom_id": custom_id, "error": None,
            "response": {"status_code": 200, "request_id": f"vllm-batch-{index:032x}", "body": {
                "id": f"chatcmpl-{index:032x}", "object": "chat.completion", "created": 1796170000,
                "model": "judge-m",
                "choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": None, "content": text,
                                                     "tool_calls": []},
                             "logprobs": None, "finish_reason": "stop", "stop_reason": None}],
                "usage": {"prompt_tokens": 700, "total_tokens": 701, "completion_tokens": 1,
                          "prompt_tokens_details": None},
                "prompt_logprobs": None, "kv_transfer_params": None}}}


def test_vllm_run_batch_output_imports_like_openai_batch_results(fault_server, tmp_path) -> None:
    """`vllm run-batch -i <judge>.openai-batch.jsonl -o out.jsonl` is the single-machine path for batch files."""
    units = escalate_units(4)
    judge = _judge(fault_server, "openai")
    cache = tmp_path / "study" / "judges" / "cache.sqlite"
    (written,) = write_batch(units, [judge], tmp_path / "batch", cache_path=cache)
    lines = [json.loads(line) for line in open(written["batch_file"])]
    replies = ["NO", "YES", "banana", None]
    results = tmp_path / "vllm-out.jsonl"
    results.write_text("".join(json.dumps(_vllm_result(line["custom_id"], reply, i)) + "\n"
                               for i, (line, reply) in enumerate(zip(lines, replies))))
    imported = import_batch_results(results, written["requests_file"], cache_path=cache)
    assert imported == {"results": 4, "outcomes": {"error 400": 1, "succeeded": 3}, "cached": 3}

    summary = run_judges(units, [judge], StudyPaths.in_dir(tmp_path / "study" / "judges")).judges[0]
    assert (summary.cache_hits, summary.calls) == (3, 1)  # the failed request goes live (or into the next batch)
    table = read_labels(tmp_path / "study" / "judges" / "labels.jsonl")
    got = [table[(u.unit_id, judge.name, 0)] for u in units]
    assert [r.label for r in got[:3]] == ["no", "yes", None]
    assert got[2].unscored_reason.startswith("wrong_format") and all(r.cache_hit for r in got[:3])
