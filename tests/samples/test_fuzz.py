"""Adapters under hostile input: truncated JSON, wrong types, missing fields, non-UTF-8
bytes and a 50 MB line give a clear InputError naming the file, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samples.errors import InputError
from samples.ingest import ingest

REPO = Path(__file__).resolve().parents[2]
ISE = json.loads((REPO / "data" / "ise_example.jsonl").read_text().splitlines()[0])
SEEDS = {
    "ise": ({}, ISE),
    "canonical": ({}, {"id": "c1", "agent": "a", "backbone": "b", "family": "f", "dataset": "d", "question": "q",
                       "references": ["r"], "steps": [{"index": 0, "role": "assistant", "text": "hi", "is_final": True,
                                                       "tool_calls": [{"name": "t", "arguments": {"x": 1}}]}],
                       "final_answer": "hi", "truncated": False, "metadata": {}}),
    "openai-messages": ({"backbone": "gpt-4o"}, {"task_id": "1", "trial": 0, "traj": [
        {"role": "system", "content": "policy"}, {"role": "user", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                               "function": {"name": "lookup", "arguments": "{\"a\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": "found"},
        {"role": "assistant", "content": "done"}]}),
    "who-and-when": ({}, {"question": "q", "ground_truth": "g", "question_ID": "x", "mistake_step": "1",
                          "mistake_agent": "A", "history": [{"role": "human", "content": "q"},
                                                            {"role": "assistant", "name": "A", "content": "x"}]}),
    "mad": ({}, {"mas_name": "AG2", "benchmark_name": "GSM", "trace_id": 1, "round": "Round 1",
                 "trace": json.dumps({"trajectory": [{"role": "user", "name": "a", "content": ["x", "y"]}]}),
                 "annotations": [{"failure mode": "1.1 X\n\ndef", "annotator_1": True, "annotator_2": False,
                                  "annotator_3": True}]}),
    "responses": ({}, {"model": "anthropic/claude-x", "id": "i1", "raw": "<answer>DECISION: ANSWER</answer>",
                       "topic": "t"}),
    "generic": ({"id": "run", "final_answer": "answer", "backbone": "model"}, {"run": "r1", "answer": "a", "model": "m"}),
}

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                           max_leaves=6)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _mutate(record, path, new, delete: bool):
    if not path:
        return new
    record = json.loads(json.dumps(record))
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return record


@st.composite
def hostile_bytes(draw, seed: dict) -> bytes:
    how = draw(st.sampled_from(["truncate", "retype", "delete", "non_utf8", "garbage"]))
    good = json.dumps(seed, ensure_ascii=False).encode("utf-8")
    if how == "truncate":
        return good[: draw(st.integers(0, len(good) - 1))]
    if how == "non_utf8":
        at = draw(st.integers(0, len(good)))
        return good[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80abc"])) + good[at:]
    if how == "garbage":
        return draw(st.binary(max_size=40)).replace(b"\n", b" ")
    paths = list(_paths(seed))
    path = paths[draw(st.integers(0, len(paths) - 1))]
    delete = how == "delete" and bool(path)
    return json.dumps(_mutate(seed, path, draw(json_values), delete), ensure_ascii=False).encode("utf-8")


def _ingest_bytes(adapter: str, options: dict, payload: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "input.jsonl"
        source.write_bytes(payload + b"\n")
        try:
            ingest([source], Path(folder) / "study", adapter=adapter, options=options)
        except InputError as error:
            assert str(source) in str(error) or "no trajectories" in str(error)
            assert not (Path(folder) / "study" / "trajectories.jsonl").exists()


@pytest.mark.parametrize("adapter", sorted(SEEDS))
def test_seed_records_are_valid(adapter: str) -> None:
    options, seed = SEEDS[adapter]
    _ingest_bytes(adapter, options, json.dumps(seed).encode())
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "input.jsonl"
        source.write_text(json.dumps(seed) + "\n")
        assert ingest([source], Path(folder) / "s", adapter=adapter, options=options).n_trajectories == 1


@pytest.mark.parametrize("adapter", sorted(SEEDS))
def test_hostile_records_give_input_errors(adapter: str) -> None:
    options, seed = SEEDS[adapter]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(payload=hostile_bytes(seed))
    def check(payload: bytes) -> None:
        _ingest_bytes(adapter, options, payload)

    check()


def test_all_bad_records_reported_at_once_and_nothing_written(tmp_path: Path) -> None:
    source = tmp_path / "mixed.jsonl"
    good = json.dumps(ISE)
    source.write_bytes(b"\n".join([good.encode(), b"{truncated", good.replace('"Qwen-Agent"', "7").encode(),
                                   b"\xff\xfe", good.encode()]) + b"\n")
    study = tmp_path / "study"
    study.mkdir()
    (study / "trajectories.jsonl").write_text("previous run\n")
    with pytest.raises(InputError) as caught:
        ingest([source], study, adapter="ise")
    message = str(caught.value)
    assert "4 bad record(s)" in message
    assert f"{source}:2: invalid JSON" in message
    assert f"{source}:3: field 'agent': expected a string, got int 7" in message
    assert f"{source}:4: not UTF-8" in message
    assert f"{source}:5: field 'id': trajectory id 'ise-gaia-0001' repeats (first at {source}:1)" in message
    assert (study / "trajectories.jsonl").read_text() == "previous run\n"  # nothing already saved is lost
    result = ingest([source], study, adapter="ise", skip_bad=True)
    assert result.n_trajectories == 1 and len(result.bad_records) == 4
    manifest = json.loads((study / "ingest_manifest.json").read_text())
    assert manifest["bad_records"]["count"] == 4 and manifest["bad_records"]["skipped"][0].startswith(f"{source}:2:")


@pytest.mark.slow  # 10 s on 2 idle cores: make test runs it, make test-fast does not
def test_a_50_mb_line(tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    huge = "x" * (50 * 1024 * 1024)
    with open(source, "w") as handle:
        handle.write('{"id": "' + huge + "\n")  # truncated: no closing quote or brace
        handle.write(json.dumps({**ISE, "id": "big", "question": huge}) + "\n")
    with pytest.raises(InputError, match=rf"{source}:1: invalid JSON"):
        ingest([source], tmp_path / "study", adapter="ise")
    result = ingest([source], tmp_path / "study", adapter="ise", skip_bad=True, kinds=None)
    assert result.n_trajectories == 1


def test_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_bytes(b'{"id": 1, "steps": "no"}\n\xff\n')
    done = subprocess.run([sys.executable, "-m", "apps", "ingest", str(source), "--adapter", "ise", "--study",
                           str(tmp_path / "s")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("accord ingest: error: ingest: 2 bad record(s)")
    assert f"{source}:2: not UTF-8" in done.stderr


def test_bad_csv_and_parquet_name_the_file(tmp_path: Path) -> None:
    options = {"id": "run", "final_answer": "answer"}
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_bytes(b"run,answer\nr1,ok\nr2,\xff\xfe\n")
    with pytest.raises(InputError, match=rf"{bad_csv}: not UTF-8"):
        ingest([bad_csv], tmp_path / "s1", adapter="generic", options=options)
    missing = tmp_path / "missing_column.csv"
    missing.write_text("run,other\nr1,x\n")
    with pytest.raises(InputError, match=rf"{missing}:2: field 'answer': expected a column \(mapped to 'final_answer'\), missing"):
        ingest([missing], tmp_path / "s2", adapter="generic", options=options)
    long_field = tmp_path / "long.csv"
    long_field.write_text("run,answer\nr1," + "y" * 300_000 + "\n")
    assert ingest([long_field], tmp_path / "s3", adapter="generic", options=options).n_trajectories == 1
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=rf"{fake}: not a readable Parquet file"):
        ingest([fake], tmp_path / "s4", adapter="generic", options=options)
    with pytest.raises(InputError, match="option 'id=<column>' is required"):
        ingest([long_field], tmp_path / "s5", adapter="generic", options={"final_answer": "answer"})


def test_parallel_ingest_writes_the_same_bytes(tmp_path: Path) -> None:
    from samples.synthetic import write_ise_jsonl

    source = write_ise_jsonl(tmp_path / "runs.jsonl", 3000, seed=4)
    with open(source, "a") as handle:
        handle.write("{broken\n")
    serial = ingest([source], tmp_path / "one", adapter="ise", skip_bad=True)
    parallel = ingest([source], tmp_path / "two", adapter="ise", skip_bad=True, workers=2)
    assert serial == parallel and serial.bad_records == [f"{source}:3001: invalid JSON (Expecting property name enclosed in double quotes at column 2)"]
    for name in ("trajectories.jsonl", "units.jsonl", "ingest_manifest.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    with pytest.raises(InputError, match="workers=0"):
        ingest([source], tmp_path / "three", adapter="ise", workers=0)
