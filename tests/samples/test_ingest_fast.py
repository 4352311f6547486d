"""The fast ingest path (rows instead of model instances, msgspec decoding, blocks for
worker processes) gives exactly what the model path gave: same bytes, same reports."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samples.adapters import BadRecord, get_adapter
from samples.canonical import sha256_hex
from samples.ingest import ingest
from samples.jsonl import decode_json_line, iter_jsonl_blocks, iter_jsonl_lines, numbered_lines, record_bytes, row_bytes
from samples.records import Step, ToolCall, Unit
from samples.synthetic import ise_records
from samples.units import cut_units, render_turn, unit_id, unit_rows
from tests.samples.test_fuzz import ISE, hostile_bytes


def _write_varied(path: Path) -> Path:
    """Deterministic ISE runs covering every shape the adapter accepts, plus bad lines."""
    lines = []
    for i, run in enumerate(ise_records(240, seed=3, steps=(0, 5), words=12)):
        if i % 7 == 1:
            run["instance_id"] = run.pop("id")
        if i % 11 == 2:
            run["id"] = 5000 + i
        if i % 13 == 3:
            run["max_turns"] = 30
            run["notes"] = {"z": [1, 2.5, None, {"é": True}], "a": "x"}
            run["mistake_step"] = 1
            run["category"] = f"c{i % 3}"
        if i % 9 == 4:
            run["reference"] = ["a", 7, 2.5] if i % 2 else "single"
        if i % 17 == 5:
            run["family"] = "custom"
            run.pop("question")
        if i % 10 == 6 and run["final_turn"] is not None:
            run["final_turn"] = "plain <think>hidden</think> final"
        if i % 19 == 7 and run["final_turn"] is not None:
            run["final_turn"] = {"text": "<think>only</think>", "reasoning": None}
        for j, step in enumerate(run["steps"]):
            k = (i + j) % 12
            if k == 0:
                step["tool_calls"] = [step.pop("tool_call"), {"name": "b", "arguments": "{\"x\": 1}",
                                                              "result": {"k": [1, "é"]}}]
            elif k == 1:
                step["tool_call"] = None
            elif k == 2:
                step["tool_call"]["arguments"] = "not json"
            elif k == 3:
                step["tool_call"]["result"] = 42
            elif k == 4:
                step["tool_call"].pop("success")
            elif k == 5:
                step["reasoning"] = "untagged ünïcode \u2028 \U0001F600"
            elif k == 6:
                step["extra"] = 1
            elif k == 7:
                step["tool_call"]["arguments"] = {"n": {"b": 1, "a": [1.0, 1e300, -0.0, 12345678901234567890]}}
        lines.append(json.dumps(run, ensure_ascii=i % 2 == 0).encode())
    bad = [b"{broken", b"\xff\xfe", b"[1]", b'{"id": "x", "steps": "no"}', b'{"id": "n", "agent": "a", "backbone": "b", '
           b'"dataset": "d", "setting": "natural", "split": "control", "steps": [], "final_turn": "x", "v": NaN}']
    for j, line in enumerate(bad):
        lines.insert(30 * (j + 1), line)
    lines.insert(3, b"")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_output_bytes_match_the_model_path_of_before(tmp_path: Path) -> None:
    # Reference: sha256 of the files written by the previous implementation (json.loads, a
    # validated Trajectory and Unit model per record, model serialisation) on this input.
    source = _write_varied(tmp_path / "runs.jsonl")
    assert hashlib.sha256(source.read_bytes()).hexdigest() == "ea9e17f106dd28437d7dda84f2de3e88c2b19046b09c985b3cdfb705b2cf9985"
    for workers in (1, 2):
        study = tmp_path / f"study{workers}"
        result = ingest([source], study, adapter="ise", skip_bad=True, metadata_strata=["category"], workers=workers)
        units = (study / "units.jsonl").read_bytes().splitlines(keepends=True)
        rows = [json.loads(line) for line in units]
        # Response rows carry the fields Unit gained (question, gold_answers, truncation: shown to coders);
        # without them each row re-encodes (compact JSON, field order) to the previous implementation's bytes.
        added = ("question", "gold_answers", "truncation")
        assert any("question" in r for r in rows if r["kind"] == "response")
        assert any("truncation" in r for r in rows if r["kind"] == "response")
        assert not any(set(added) & set(r) for r in rows if r["kind"] != "response")
        before = b"".join((json.dumps({k: v for k, v in r.items() if k not in added},
                                      ensure_ascii=False, separators=(",", ":")) + "\n").encode() for r in rows)
        digests = {"trajectories.jsonl": hashlib.sha256((study / "trajectories.jsonl").read_bytes()).hexdigest(),
                   "units.jsonl": hashlib.sha256(before).hexdigest()}
        # The previous implementation read line 152's "v": NaN and wrote it as null; NaN is no JSON and is
        # refused now, so the reference is what that implementation wrote for the input without line 152
        # (main at 326def6, run by hand).
        assert digests == {"trajectories.jsonl": "0501369a8e08975624faf2fb1b25b5ae9c5d91a3e73211b6e2789db826b3a82f",
                           "units.jsonl": "685b16c67e3570a1760d1ed31cab106dfc7dca11d903e743e074eef7ff11f7bd"}
        assert result.n_trajectories == 240 and result.units_by_kind == {
            "correctness": 221, "escalate_final": 221, "identify_trajectory": 200, "identify_turn": 612, "response": 36}
        assert [b.replace(str(source), "F") for b in result.bad_records] == [
            "F:32: invalid JSON (Expecting property name enclosed in double quotes at column 2)",
            "F:62: not UTF-8 (invalid start byte at byte 0)", "F:92: expected a JSON object, got list",
            "F:122: field 'steps': expected a list, got str 'no'",
            "F:152: invalid JSON (NaN is not a finite number; JSON has no NaN or infinity)"]


def _same_as_model_path(line: bytes) -> None:
    adapter = get_adapter("ise")
    item = adapter.convert_line(Path("f.jsonl"), {}, "f.jsonl:1", line)
    row = adapter.convert_row(Path("f.jsonl"), {}, "f.jsonl:1", line)
    if isinstance(item, BadRecord):
        assert row == item
        return
    assert isinstance(row, dict) and row_bytes(row) == record_bytes(item)
    rows, skips = unit_rows(row)
    units, model_skips = cut_units(item)
    assert skips == model_skips
    assert [row_bytes(r) for r in rows] == [record_bytes(u) for u in units]
    assert [row_bytes(r) for r in rows] == [record_bytes(Unit.model_validate(r)) for r in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(payload=hostile_bytes(ISE))
def test_rows_serialise_like_models_on_hostile_records(payload: bytes) -> None:
    _same_as_model_path(payload)


def test_rows_serialise_like_models_on_synthetic_runs() -> None:
    for run in ise_records(200, seed=9, steps=(0, 6), words=8):
        _same_as_model_path(json.dumps(run).encode())


json_texts = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
RAW_EDGES = [b'{"a": 1, "a": 2}', b'{"a": NaN}', b'[Infinity, -Infinity]', b'1e400', b'"a\tb"',
             b"\xef\xbb\xbf{}", b"{} x", b"[1,]", b"01", b'"\xed\xa0\x80"', b"[" * 3000 + b"]" * 3000,
             b"123456789012345678901234567890", b"4.9e-324", b"  {}  \r\n", b'{"\\u00e9": "\\ud83d\\ude00"}']


class _NotJSON(ValueError):
    pass


def _refuse(token: str) -> float:
    raise _NotJSON(token)


def _finite(token: str) -> float:
    if not math.isfinite(float(token)):
        raise _NotJSON(token)
    return float(token)


def _stdlib(line: bytes) -> tuple[str, object]:
    """What decode_json_line gave before msgspec: json.loads of the UTF-8 text, or its error; NaN,
    Infinity and numbers beyond a float refused, as RFC 8259 has none (json.loads reads them)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return "error", f"not UTF-8 ({error.reason} at byte {error.start})"
    try:
        return "ok", json.loads(text, parse_constant=_refuse, parse_float=_finite)
    except _NotJSON as error:
        return "error", f"invalid JSON ({error} is not a finite number; JSON has no NaN or infinity)"
    except json.JSONDecodeError as error:
        return "error", f"invalid JSON ({error.msg} at column {error.colno})"
    except RecursionError:
        return "error", "invalid JSON (nested too deeply)"


def _decoded(line: bytes) -> tuple[str, object]:
    try:
        return "ok", decode_json_line(line)
    except ValueError as error:
        return "error", str(error)


@pytest.mark.parametrize("line", RAW_EDGES)
def test_decoding_agrees_with_json_loads_on_edge_cases(line: bytes) -> None:
    assert repr(_decoded(line)) == repr(_stdlib(line))  # repr: NaN != NaN, and 1 == 1.0 == True


@settings(max_examples=300, deadline=None, database=None)
@given(value=json_texts, ascii_only=st.booleans())
def test_decoding_agrees_with_json_loads(value: object, ascii_only: bool) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    assert repr(_decoded(line)) == repr(_stdlib(line))
    assert repr(_decoded(line[:-1])) == repr(_stdlib(line[:-1]))


@settings(max_examples=200, deadline=None, database=None)
@given(trajectory_id=st.text(st.characters(blacklist_categories=("Cs",))),
       kind=st.sampled_from(["identify_turn", "escalate_final", "correctness"]) | st.text(max_size=5),
       focus=st.none() | st.integers(min_value=0, max_value=10**6))
def test_unit_id_is_the_canonical_hash(trajectory_id: str, kind: str, focus: int | None) -> None:
    assert unit_id(trajectory_id, kind, focus) == "u_" + sha256_hex([trajectory_id, kind, focus])[:20]


@settings(max_examples=200, deadline=None, database=None)
@given(lines=st.lists(st.sampled_from([b"", b" ", b"{}", b'{"a": 1}\r', b"x" * 50, b"\t"]), max_size=30),
       trailing=st.booleans(), size=st.integers(min_value=1, max_value=64))
def test_blocks_number_lines_like_the_line_reader(tmp_path_factory, lines: list[bytes], trailing: bool,
                                                  size: int) -> None:
    path = tmp_path_factory.mktemp("blocks") / "f.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if trailing else b""))
    from_blocks = [pair for first, block in iter_jsonl_blocks(path, size) for pair in numbered_lines(first, block)]
    assert from_blocks == list(iter_jsonl_lines(path))


def test_a_lone_surrogate_escape_is_a_bad_record(tmp_path: Path) -> None:
    # json.loads accepts "\ud800" (no character); writing it used to fail with a traceback.
    source = tmp_path / "runs.jsonl"
    good = json.dumps(ISE)
    second = good.replace("ise-gaia-0001", "second").replace('"The construction', r'"\ud800 The construction')
    source.write_text(good + "\n" + second + "\n")
    result = ingest([source], tmp_path / "study", adapter="ise", skip_bad=True)
    assert result.n_trajectories == 1
    assert result.bad_records == [rf"{source}:2: invalid JSON (a \uD800-\uDFFF escape without its pair is not a character)"]


@settings(max_examples=300, deadline=None, database=None)
@given(arguments=st.dictionaries(st.text(max_size=6), st.text(max_size=8) | st.integers() | st.none(), max_size=4))
def test_tool_arguments_render_as_json_dumps(arguments: dict) -> None:
    step = Step(index=0, role="assistant", tool_calls=[ToolCall(name="t", arguments=arguments)])
    assert render_turn(0, step) == f"[turn 0]\n[tool call] t {json.dumps(arguments, ensure_ascii=False)}\n[tool result] (no result recorded)"


def test_manifest_hashes_every_input_when_hashing_lags_behind(tmp_path: Path, monkeypatch) -> None:
    """The inputs' sha256 runs on a helper thread; many small files converted faster than they
    are hashed (a slow disk, a busy machine) must still all be hashed, never cancelled."""
    import time

    import samples.ingest as ingest_module

    real = ingest_module.file_sha256

    def slow_disk(path, **kwargs):
        time.sleep(0.02)
        return real(path, **kwargs)

    monkeypatch.setattr(ingest_module, "file_sha256", slow_disk)
    paths = []
    for i, run in enumerate(ise_records(60, seed=5, steps=(1, 2), words=4)):
        path = tmp_path / "in" / f"run-{i:02d}.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(run) + "\n", encoding="utf-8")
        paths.append(path)
    result = ingest(paths, tmp_path / "out", adapter="ise", kinds=None)
    assert [row["sha256"] for row in result.inputs] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
