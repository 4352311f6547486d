"""The fast paths of the ise and canonical adapters (msgspec structs decoded a block at a
time, written by msgspec) give exactly what their careful paths give (dict rows checked
field by field, or the models, written by the pydantic serializer): same bytes, same
units, same bad-record messages.

The pydantic models stay the contract: every comparison ends in ``record_bytes`` of a
validated model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticSerializationError, to_json

from samples.adapters import BadRecord, canonical, get_adapter
from samples.adapters.base import StepRow, ToolCallRow, TrajectoryRow, plain_json
from samples.ingest import MANIFEST_FILE, ingest
from samples.jsonl import count_newlines, numbered_lines, record_bytes, row_bytes
from samples.records import Step, ToolCall, Trajectory
from samples.synthetic import ise_records
from samples.units import cut_units, unit_rows
from tests.samples.test_fuzz import ISE, REPO, SEEDS, hostile_bytes
from tests.samples.test_ingest_fast import _write_varied

PATH = Path("runs.jsonl")
ADAPTER = get_adapter("ise")
CANONICAL = get_adapter("canonical")


def _agree(block: bytes, first: int = 1) -> int:
    """Fast and careful conversion of ``block`` agree; returns how many rows the fast path built."""
    fast = ADAPTER.convert_block(PATH, {}, first, block)
    careful = [(n, ADAPTER.convert_row(PATH, {}, f"{PATH}:{n}", line)) for n, line in numbered_lines(first, block)]
    assert [n for n, _ in fast] == [n for n, _ in careful]
    built = 0
    for (_, quick), (_, slow) in zip(fast, careful, strict=True):
        if isinstance(slow, BadRecord):
            assert quick == slow
            continue
        model = slow if isinstance(slow, Trajectory) else Trajectory.model_validate(slow)
        try:
            expected = record_bytes(model)
        except PydanticSerializationError:  # nested deeper than pydantic writes: ingest reports it
            assert not isinstance(quick, msgspec.Struct)
            continue
        assert row_bytes(quick) == expected
        if isinstance(quick, TrajectoryRow):
            built += 1
            units, skips = unit_rows(msgspec.to_builtins(quick))
            model_units, model_skips = cut_units(model)
            assert skips == model_skips
            assert [row_bytes(u) for u in units] == [record_bytes(u) for u in model_units]
    return built


def _agree_canonical(block: bytes) -> int:
    """The canonical adapter's fast path and its model path agree; returns how many rows the fast path built."""
    fast = CANONICAL.convert_block(PATH, {}, 1, block)
    careful = [(n, CANONICAL.convert_line(PATH, {}, f"{PATH}:{n}", line)) for n, line in numbered_lines(1, block)]
    assert [n for n, _ in fast] == [n for n, _ in careful]
    for (_, quick), (_, slow) in zip(fast, careful, strict=True):
        assert quick == slow if isinstance(slow, BadRecord) else row_bytes(quick) == record_bytes(slow)
    return sum(isinstance(quick, msgspec.Struct) for _, quick in fast)


def test_struct_rows_have_the_models_fields_in_order() -> None:
    for rows, model in ((TrajectoryRow, Trajectory), (StepRow, Step), (ToolCallRow, ToolCall),
                        (canonical._Trajectory, Trajectory), (canonical._Step, Step), (canonical._ToolCall, ToolCall)):
        assert rows.__struct_fields__ == tuple(model.model_fields)
    # the canonical mirror also has the models' defaults: a minimal record writes like the model
    minimal = b'{"id":"i","agent":"a","backbone":"b","family":"f","dataset":"d","steps":[{"index":0,"role":"r",' \
              b'"tool_calls":[{"name":"n"}]}]}'
    assert _agree_canonical(minimal) == 1


def test_shipped_examples_take_the_fast_path_and_agree() -> None:
    example = (REPO / "data" / "ise_example.jsonl").read_bytes()
    assert _agree(example) == len(example.splitlines())  # two of them carry a key outside the schema


def test_synthetic_runs_take_the_fast_path_and_agree() -> None:
    runs = [json.dumps(run).encode() for run in ise_records(300, seed=5, steps=(0, 6), words=8)]
    assert _agree(b"\n".join(runs) + b"\n", first=7) == 300


def test_every_shape_the_adapter_accepts_agrees(tmp_path: Path) -> None:
    block = _write_varied(tmp_path / "varied.jsonl").read_bytes()
    built = _agree(block)
    assert built > 150  # the rest hold floats in tool arguments or metadata, or are bad
    for number, line in numbered_lines(1, block):  # line by line (the path of a block with a bad line)
        _agree(line, first=number)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(payload=hostile_bytes(ISE))
def test_hostile_records_agree(payload: bytes) -> None:
    _agree(payload)


text = st.text(max_size=12)
scalar = st.none() | st.booleans() | st.integers(min_value=-(10**25), max_value=10**25) | text
json_value = st.recursive(scalar | st.floats(allow_nan=False),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                          max_leaves=8)
identifier = text | st.integers(min_value=-(10**22), max_value=10**22) | st.floats(allow_nan=False) | st.booleans()


def _optional(key: str, value: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.just({}), st.builds(lambda v: {key: v}, value))


def _merge(*parts: dict) -> dict:
    merged: dict = {}
    for part in parts:
        merged.update(part)
    return merged


call = st.builds(_merge, st.fixed_dictionaries({"name": text | st.none()}),
                 _optional("arguments", st.none() | st.dictionaries(text, json_value, max_size=3) | text
                           | st.builds(json.dumps, st.dictionaries(text, json_value, max_size=3))),
                 _optional("result", json_value), _optional("success", st.none() | st.booleans()),
                 _optional("extra", json_value))
step = st.builds(_merge, _optional("reasoning", st.none() | text), _optional("text", st.none() | text),
                 _optional("tool_call", st.none() | call),
                 _optional("tool_calls", st.none() | st.lists(call, max_size=2)), _optional("index", json_value))
final = st.none() | text | st.builds(_merge, st.fixed_dictionaries({"text": text}),
                                     _optional("reasoning", st.none() | text))
references = (st.none() | text | st.integers() | st.floats(allow_nan=False)
              | st.lists(text | st.integers() | st.booleans(), max_size=3))
run = st.builds(
    _merge,
    st.fixed_dictionaries({"agent": text, "backbone": st.sampled_from(["qwen3.5-9b", "gpt-5", "x"]) | text,
                           "dataset": text, "setting": st.sampled_from(["controlled", "natural", "other", "lab"]),
                           "split": st.sampled_from(["conflict", "control", "none", "x"]),
                           "steps": st.lists(step, max_size=3), "truncated": st.booleans()}),
    _optional("id", identifier | st.none()), _optional("instance_id", identifier | st.none()),
    _optional("family", st.none() | text), _optional("question", st.none() | text),
    _optional("reference", references), _optional("references", references), _optional("final_turn", final),
    st.dictionaries(st.sampled_from(["max_turns", "category", "mistake_step", "notes"]), json_value, max_size=2),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(runs=st.lists(run, min_size=1, max_size=4), ascii_only=st.booleans(), blank=st.booleans())
def test_generated_runs_agree(runs: list[dict], ascii_only: bool, blank: bool) -> None:
    lines = [json.dumps(r, ensure_ascii=ascii_only).encode() for r in runs]
    if blank:
        lines.insert(1, b"  ")
    _agree(b"\n".join(lines) + b"\n")


def test_generated_runs_mostly_take_the_fast_path() -> None:
    # The agreement above must not hold only because the fast path declines everything.
    fixed = {"agent": "a", "backbone": "gpt-5", "dataset": "d", "setting": "natural", "split": "control",
             "id": 7, "reference": [1, "x"], "final_turn": {"text": "t"}, "max_turns": 30,
             "steps": [{"tool_call": {"name": "n", "arguments": "{\"q\": [1, \"é\"]}", "result": {"k": None}}},
                       {"tool_calls": [{"name": "m", "arguments": None, "result": 5, "success": False}], "text": "x"}]}
    assert _agree(json.dumps(fixed).encode()) == 1


def _has_float(value: object) -> bool:
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return isinstance(value, float)


@settings(max_examples=400, deadline=None, database=None)
@given(value=json_value)
def test_msgspec_writes_plain_json_values_like_pydantic(value: object) -> None:
    # What struct rows rely on: msgspec and pydantic-core print JSON without floats alike
    # (strings with every character, control characters and U+2028 included; big ints).
    assert plain_json(value) == (not _has_float(value))
    if plain_json(value):
        assert msgspec.json.encode(value) == to_json(value, inf_nan_mode="null")


def test_repeated_keys_agree() -> None:
    # json.loads, pydantic and msgspec all keep the last value of a repeated key, at the first key's place
    ise = (b'{"z": 1, "agent": "a", "backbone": "b", "dataset": "d", "setting": "natural", "split": "control", '
           b'"steps": [], "id": "x", "final_turn": "f", "m": 2, "z": 3, "id": "y", "steps": [{"text": "t", "text": "u"}]}')
    assert _agree(ise) == 1
    canonical_line = (b'{"id":"i","agent":"a","backbone":"b","family":"f","dataset":"d","id":"j",'
                      b'"metadata":{"a":1,"b":2,"a":3},"steps":[]}')
    assert _agree_canonical(canonical_line) == 1


def test_deep_nesting_takes_the_careful_path(tmp_path: Path) -> None:
    # pydantic parses 200 levels and writes 255; struct rows hold at most 64, so the models decide
    def run_line(depth: int) -> bytes:
        nested = "[" * depth + "]" * depth
        return (f'{{"id": "d{depth}", "agent": "a", "backbone": "b", "dataset": "d", "setting": "natural", '
                f'"split": "control", "final_turn": "f", "steps": [{{"tool_call": {{"name": "n", '
                f'"arguments": {{"a": {nested}}}}}}}]}}').encode()

    assert [_agree(run_line(depth)) for depth in (60, 70, 300)] == [1, 0, 0]
    source = tmp_path / "deep.jsonl"
    source.write_bytes(b"\n".join(run_line(depth) for depth in (60, 70, 300)) + b"\n")
    result = ingest([source], tmp_path / "study", adapter="ise", skip_bad=True)
    assert result.n_trajectories == 2
    assert result.bad_records == [f"{source}:3: cannot be written as JSON (Error serializing to JSON: ValueError: "
                                  "Maximum serialization depth exceeded)"]
    canonical_line = (b'{"id":"i","agent":"a","backbone":"b","family":"f","dataset":"d","steps":[],"metadata":{"m":'
                      + b"[" * 190 + b"]" * 190 + b"}}")
    assert _agree_canonical(canonical_line) == 0


def test_canonical_files_take_the_fast_path_and_agree(tmp_path: Path) -> None:
    ingest([_write_varied(tmp_path / "runs.jsonl")], tmp_path / "study", adapter="ise", kinds=None, skip_bad=True)
    written = (tmp_path / "study" / "trajectories.jsonl").read_bytes()
    assert _agree_canonical(written) > 150  # the rest hold floats in tool arguments or metadata
    fast = [line for line in written.splitlines(keepends=True)[:40] if _agree_canonical(line) == 1][:10]
    assert len(fast) == 10
    assert _agree_canonical(b"".join(fast[:5]) + b"\n  \n" + b"".join(fast[5:])) == 10  # blank lines: line reader


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(payload=hostile_bytes(SEEDS["canonical"][1]))
def test_hostile_canonical_records_agree(payload: bytes) -> None:
    _agree_canonical(payload)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(runs=st.lists(run, min_size=1, max_size=4))
def test_generated_canonical_records_agree(runs: list[dict]) -> None:
    written = []
    for number, raw in enumerate(runs):
        item = ADAPTER.convert_row(PATH, {}, f"{PATH}:{number}", json.dumps(raw).encode())
        if not isinstance(item, BadRecord):
            written.append(row_bytes(item))
    _agree_canonical(b"".join(written) + b'{"id": 1}\n')


@settings(max_examples=200, deadline=None, database=None)
@given(data=st.binary(max_size=300) | st.lists(st.sampled_from([b"\n", b"x", b"\n\n", b"\xff", b"\r\n"])).map(b"".join))
def test_newlines_are_counted_like_bytes_count(data: bytes) -> None:
    assert count_newlines(data) == data.count(b"\n")


def test_manifest_hashes_the_bytes_read(tmp_path: Path) -> None:
    source = _write_varied(tmp_path / "runs.jsonl")
    expected = hashlib.sha256(source.read_bytes()).hexdigest()
    for workers in (1, 2):
        ingest([source], tmp_path / f"study{workers}", adapter="ise", kinds=None, skip_bad=True, workers=workers)
        manifest = json.loads((tmp_path / f"study{workers}" / MANIFEST_FILE).read_text())
        assert manifest["inputs"] == [{"path": str(source), "sha256": expected, "bytes": source.stat().st_size}]
