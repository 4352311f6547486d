"""``ise``: the trajectory format the ISE paper ("Accurate but Not Humble") describes.

The paper (section 2.2, appendix A.3) records each run as tau = (s_1..s_T), every
step holding the agent's reasoning trace, any tool call with its arguments and
result, and any text turn shown to the user, then the final assistant turn; each
instance carries its agent (harness), backbone, dataset, setting, split and
reference answer(s). Its repository is not reachable here, so this JSONL schema
carries exactly those fields (one run per line; ``data/ise_example.jsonl``):

    id          str   run id (or "instance_id"; unique in the study)
    agent       str   harness, e.g. "Qwen-Agent"
    backbone    str   model id, e.g. "qwen3.5-9b"
    family      str   optional; inferred from the backbone via the identity vocabulary
    dataset     str   "GAIA", "MoNaCo", "BrowseComp", "TMD", ...
    setting     str   "controlled" | "natural"
    split       str   "conflict" | "control"
    question    str
    reference   str | [str]   gold answer(s)
    steps       [ {reasoning: str|null, tool_call: {name, arguments, result, success}|null,
                   tool_calls: [...] (alternative to tool_call), text: str|null} ]
    final_turn  {reasoning: str|null, text: str} | str | null
    truncated   bool  true when max_turns was hit without a final answer (final_turn null)

Any other top-level key is kept in ``metadata``. Every step is an assistant step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Required

import msgspec
from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from samples.adapters import register_adapter
from samples.adapters.base import (
    AdapterBase,
    BadRecord,
    FieldProblem,
    Item,
    Row,
    StepRow,
    ToolCallRow,
    TrajectoryRow,
    block_items,
    check_options,
    convert,
    get_dict,
    get_list,
    get_str,
    iter_source,
    line_item,
    parse_arguments,
    plain_json,
    result_text,
    string_list,
)
from samples.records import SETTINGS, SPLITS, Trajectory
from samples.vocabulary import infer_family

_KNOWN = {"id", "instance_id", "agent", "backbone", "family", "dataset", "setting", "split", "question",
          "reference", "references", "steps", "final_turn", "truncated"}


def tool_call(raw: Any, field: str) -> dict[str, Any]:
    """A ToolCall as a dict: the Trajectory validates the whole record once (much faster than per object)."""
    call = get_dict(raw, field)
    success = call.get("success")
    if success is not None and not isinstance(success, bool):
        raise FieldProblem(f"{field}.success", "true, false or null", success)
    return {"name": get_str(call, "name", field=f"{field}.name"),
            "arguments": parse_arguments(call.get("arguments"), f"{field}.arguments"),
            "result": result_text(call.get("result")), "success": success}


def _step(raw: Any, index: int) -> dict[str, Any]:
    field = f"steps[{index}]"
    step = get_dict(raw, field)
    calls = [tool_call(c, f"{field}.tool_calls[{i}]") for i, c in enumerate(get_list(step, "tool_calls", required=False, field=f"{field}.tool_calls"))]
    if step.get("tool_call") is not None:
        calls.insert(0, tool_call(step["tool_call"], f"{field}.tool_call"))
    return {"index": index, "role": "assistant",
            "reasoning": get_str(step, "reasoning", required=False, field=f"{field}.reasoning"),
            "text": get_str(step, "text", required=False, field=f"{field}.text"), "tool_calls": calls, "is_final": False}


class _Call(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]
    name: Required[str]
    arguments: dict[str, Any] | str | None
    result: Any
    success: bool | None


class _Step(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(strict=True)  # type: ignore[misc]
    reasoning: str | None
    tool_call: _Call | None
    tool_calls: list[_Call] | None
    text: str | None


# The step list's shape, checked in one Rust pass: steps are the bulk of a record, and
# checking them field by field in Python (``_step``) costs about half of ingest time.
_STEPS = TypeAdapter(list[_Step])


def _fast_steps(raw: Any) -> list[dict[str, Any]] | None:
    """Steps of a well-formed step list, or None (then ``_step`` names the problem)."""
    try:
        _STEPS.validate_python(raw)
    except ValidationError:
        return None
    steps = []
    for index, step in enumerate(raw):
        get = step.get
        call, more = get("tool_call"), get("tool_calls")
        calls = ([call, *more] if more else [call]) if call is not None else (more or ())
        steps.append({"index": index, "role": "assistant", "reasoning": get("reasoning"), "text": get("text"),
                      "tool_calls": [_valid_call(c) for c in calls], "is_final": False})
    return steps


def _valid_call(call: dict[str, Any]) -> dict[str, Any]:
    """``tool_call`` for a call ``_STEPS`` has checked."""
    arguments = call.get("arguments")
    if type(arguments) is not dict:
        arguments = parse_arguments(arguments, "arguments")
    result = call.get("result")
    if result is not None and type(result) is not str:
        result = result_text(result)
    return {"name": call["name"], "arguments": arguments, "result": result, "success": call.get("success")}


def trajectory_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """A run's Trajectory fields, in the model's field order (what ``samples.jsonl.row_bytes`` needs).

    Every field is checked here except ``setting`` and ``split`` (left to the model,
    which names the allowed values): a row that passes ``row`` is a valid Trajectory.
    """
    run_id = get_str(raw, "id", required=False, numbers=True) or get_str(raw, "instance_id", field="id", numbers=True)
    raw_steps = get_list(raw, "steps")
    steps = _fast_steps(raw_steps)
    if steps is None:
        steps = [_step(s, i) for i, s in enumerate(raw_steps)]
    truncated = raw.get("truncated", False)
    if not isinstance(truncated, bool):
        raise FieldProblem("truncated", "true or false", truncated)
    final = raw.get("final_turn")
    final_answer = None
    if final is None:
        if not truncated:
            raise FieldProblem("final_turn", "the final assistant turn (null only when 'truncated' is true)", missing=True)
    else:
        if truncated:
            raise FieldProblem("truncated", "false when 'final_turn' is present", truncated)
        final = {"text": final} if isinstance(final, str) else get_dict(final, "final_turn")
        final_answer = get_str(final, "text", field="final_turn.text")
        steps.append({"index": len(steps), "role": "assistant",
                      "reasoning": get_str(final, "reasoning", required=False, field="final_turn.reasoning"),
                      "text": final_answer, "tool_calls": [], "is_final": True})
    backbone = get_str(raw, "backbone")
    references = raw["references"] if "references" in raw else raw.get("reference")
    return {
        "id": run_id, "agent": get_str(raw, "agent"), "backbone": backbone,
        "family": get_str(raw, "family", required=False) or infer_family(backbone),
        "dataset": get_str(raw, "dataset"), "setting": get_str(raw, "setting"), "split": get_str(raw, "split"),
        "question": get_str(raw, "question", required=False, default=""),
        "references": string_list(references, "reference"),
        "steps": steps, "final_answer": final_answer, "truncated": truncated,
        "metadata": {k: v for k, v in raw.items() if k not in _KNOWN},
    }


def build(raw: dict[str, Any]) -> Trajectory:
    return Trajectory.model_validate(trajectory_fields(raw))


def row(raw: dict[str, Any]) -> Row | Trajectory:
    """The run as a Trajectory row (a plain dict, no model instances: the ingest hot path)."""
    fields = trajectory_fields(raw)
    if fields["setting"] in SETTINGS and fields["split"] in SPLITS:
        return fields
    return Trajectory.model_validate(fields)  # raises, naming the field and the allowed values


# --- the fast path: msgspec decodes a whole block of runs straight into structs ----------------
# The structs mirror the schema above and msgspec checks every type while it parses
# (strictly: no "1" for 1, no true for a number). A run they accept, ``_fast_row`` turns
# into a TrajectoryRow equal to what ``row`` gives; anything else (a type error, a
# float in tool arguments or metadata, an unknown setting) goes through ``row``, which
# names the problem. tests/samples/test_fast_rows.py checks the two agree.

class _Step(msgspec.Struct, gc=False):
    reasoning: str | None = None
    tool_call: ToolCallRow | None = None
    tool_calls: list[ToolCallRow] | None = None
    text: str | None = None


class _Final(msgspec.Struct, gc=False):
    text: str
    reasoning: str | None = None


_Scalar = str | int | float


class _Run(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """A run with only schema keys (the usual case: one decoder call per block)."""

    agent: str
    backbone: str
    dataset: str
    setting: str
    split: str
    steps: list[_Step]
    id: _Scalar | None = None
    instance_id: _Scalar | None = None
    family: str | None = None
    question: str | None = None
    reference: _Scalar | list[_Scalar] | None = None
    references: _Scalar | list[_Scalar] | None | msgspec.UnsetType = msgspec.UNSET
    final_turn: str | _Final | None = None
    truncated: bool = False


class _OpenRun(_Run, forbid_unknown_fields=False):
    """A run with other keys too: decoded with the top level's raw values, whose other keys become metadata."""


_RUNS = msgspec.json.Decoder(_Run)
_OPEN_RUNS = msgspec.json.Decoder(_OpenRun)
_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
_VALUE = msgspec.json.Decoder()


@lru_cache(maxsize=4096)
def _family(backbone: str) -> str:
    """``infer_family``, cached: a study has few backbones and each lookup runs every pattern."""
    return infer_family(backbone)


def _text_id(value: str | int | float | None) -> str | None:
    return value if value is None or type(value) is str else str(value)


def _arguments(value: dict[str, Any] | str | None) -> dict[str, Any] | str | None:
    """``parse_arguments``, or None when a float is in them or only ``json.loads`` can read them
    (msgspec parses what ``json.loads`` would, to equal values, or refuses)."""
    if value is None:
        return {}
    if type(value) is str:
        try:
            decoded = _VALUE.decode(value)
        except (msgspec.DecodeError, RecursionError):
            try:  # what msgspec refuses, json.loads mostly refuses too: then the string stays
                json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                return value
            return None
        value = decoded if type(decoded) is dict else value
    return value if plain_json(value) else None


def _fast_row(run: _Run, metadata: dict[str, Any]) -> TrajectoryRow | None:
    """``row`` of a run msgspec decoded, or None when ``row`` must decide (it names problems)."""
    run_id = _text_id(run.id) or _text_id(run.instance_id)
    if run_id is None or run.setting not in SETTINGS or run.split not in SPLITS or not plain_json(metadata):
        return None
    steps = []
    for index, step in enumerate(run.steps):
        call, more = step.tool_call, step.tool_calls
        calls = ([call, *more] if more else [call]) if call is not None else (more or [])
        for call in calls:
            arguments = call.arguments
            if type(arguments) is dict:
                for value in arguments.values():  # plain_json, inlined for the usual string values
                    if type(value) is not str and not plain_json(value):
                        return None
            else:
                call.arguments = _arguments(arguments)
                if call.arguments is None:
                    return None
            result = call.result
            if result is not None and type(result) is not str:
                call.result = result_text(result)
        steps.append(StepRow(index, "assistant", step.reasoning, step.text, calls, False))
    final, final_answer = run.final_turn, None
    if (final is None) != run.truncated:
        return None
    if final is not None:
        final_answer, reasoning = (final, None) if type(final) is str else (final.text, final.reasoning)
        steps.append(StepRow(len(steps), "assistant", reasoning, final_answer, [], True))
    references = run.reference if run.references is msgspec.UNSET else run.references
    if references is None:
        references = []
    elif type(references) is list:
        references = [r if type(r) is str else str(r) for r in references]
    else:
        references = [str(references)]
    return TrajectoryRow(run_id, run.agent, run.backbone, run.family or _family(run.backbone), run.dataset,
                         run.setting, run.split, run.question or "", references, steps, final_answer,
                         run.truncated, metadata)


def _metadata(top: dict[str, msgspec.Raw]) -> dict[str, Any]:
    return {key: _VALUE.decode(raw) for key, raw in top.items() if key not in _KNOWN}


def _line_row(line: bytes) -> TrajectoryRow | None:
    """``_block_rows`` for one line."""
    try:
        try:
            return _fast_row(_RUNS.decode(line), {})
        except msgspec.ValidationError:  # keys outside the schema (or a type error)
            return _fast_row(_OPEN_RUNS.decode(line), _metadata(_TOP_LEVEL.decode(line)))
    except (msgspec.DecodeError, RecursionError):
        return None


def _block_rows(block: bytes) -> list[TrajectoryRow | None] | None:
    """A row, or None where ``row`` must decide, per line of a block whose every line holds
    a JSON object that fits the schema's types; else None (then ``_line_row`` line by line)."""
    try:
        try:
            runs, metadata = _RUNS.decode_lines(block), None
        except msgspec.ValidationError:  # keys outside the schema (or a type error)
            runs = _OPEN_RUNS.decode_lines(block)
            metadata = [_metadata(top) for top in _TOP_LEVEL.decode_lines(block)]
    except (msgspec.DecodeError, RecursionError):
        return None
    if metadata is None:
        return [_fast_row(run, {}) for run in runs]
    return [_fast_row(run, extra) for run, extra in zip(runs, metadata, strict=True)]


class ISEAdapter(AdapterBase):
    name = "ise"
    summary = "ISE-paper trajectories (JSONL; schema in samples/adapters/ise.py)"
    options: Mapping[str, str] = {}

    def check(self, options: Mapping[str, str]) -> None:
        check_options(self.name, options, self.options)

    def convert_line(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Item:
        return line_item(where, line, build)

    def convert_row(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Row | Item:
        return line_item(where, line, row)

    def convert_block(self, path: Path, options: Mapping[str, str], first: int,
                      block: bytes) -> list[tuple[int, TrajectoryRow | Row | Item]]:
        return block_items(first, block, _block_rows, _line_row,
                           lambda number, line: self.convert_row(path, options, f"{path}:{number}", line))

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        self.check(options)
        for where, raw in iter_source(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, build, raw))


register_adapter(ISEAdapter())
