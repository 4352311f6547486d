"""``openai-messages``: OpenAI chat transcripts with ``tool_calls`` (tau-bench and the like).

One record = one run: an object whose ``messages`` (or tau-bench's ``traj``) list
holds ``{role, content, tool_calls?, tool_call_id?, reasoning_content?}`` messages.
Tool results (``role: tool``) are attached to the assistant call they answer (by
``tool_call_id``), so a turn shows each call with the result the agent saw; an
unmatched tool message stays a step of its own. The last assistant message, when it
carries text and no tool calls, is the final turn; without one the run is marked
truncated. Run-level fields the transcript does not carry come from options.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from samples.adapters import register_adapter
from samples.adapters.base import (
    AdapterBase,
    BadRecord,
    FieldProblem,
    Item,
    check_options,
    convert,
    get_dict,
    get_list,
    get_str,
    iter_source,
    line_item,
    parse_arguments,
    string_list,
    text_of,
)
from samples.records import Step, ToolCall, Trajectory
from samples.vocabulary import infer_family

OPTIONS = {
    "agent": "harness name for every run (default 'unknown')",
    "backbone": "model id for every run when records carry no 'model' (default 'unknown')",
    "dataset": "dataset name (default: the file's stem)",
    "setting": "controlled | natural | other (default other)",
    "split": "conflict | control | none (default none)",
}
_MESSAGE_KEYS = ("messages", "traj")


def messages_to_steps(messages: list[Any], field: str) -> tuple[list[Step], str | None]:
    """Steps (tool results folded into their calls) and the final answer, if any."""
    steps: list[dict[str, Any]] = []
    open_calls: dict[str, tuple[int, int]] = {}
    for position, raw in enumerate(messages):
        where = f"{field}[{position}]"
        message = get_dict(raw, where)
        role = get_str(message, "role", field=f"{where}.role")
        content = text_of(message.get("content"), f"{where}.content")
        if role == "tool" and message.get("tool_call_id") in open_calls:
            step_at, call_at = open_calls.pop(message["tool_call_id"])
            steps[step_at]["tool_calls"][call_at]["result"] = content
            continue
        calls = []
        for i, raw_call in enumerate(get_list(message, "tool_calls", required=False, field=f"{where}.tool_calls")):
            call = get_dict(raw_call, f"{where}.tool_calls[{i}]")
            function = get_dict(call.get("function", call), f"{where}.tool_calls[{i}].function")
            calls.append({"name": get_str(function, "name", field=f"{where}.tool_calls[{i}].function.name"),
                          "arguments": parse_arguments(function.get("arguments"), f"{where}.tool_calls[{i}].function.arguments")})
            if isinstance(call.get("id"), str):
                open_calls[call["id"]] = (len(steps), i)
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        if reasoning is not None and not isinstance(reasoning, str):
            raise FieldProblem(f"{where}.reasoning_content", "a string", reasoning)
        steps.append({"index": position, "role": role, "text": content, "reasoning": reasoning, "tool_calls": calls})
    final_answer = None
    assistant = [s for s in steps if s["role"] == "assistant"]
    if assistant and not assistant[-1]["tool_calls"] and (assistant[-1]["text"] or "").strip():
        assistant[-1]["is_final"] = True
        final_answer = assistant[-1]["text"]
    return [Step(**{**s, "tool_calls": [ToolCall(**c) for c in s["tool_calls"]]}) for s in steps], final_answer


def build(raw: dict[str, Any], path: Path, options: Mapping[str, str]) -> Trajectory:
    """One transcript record -> Trajectory (run-level fields from ``options``)."""
    key = next((k for k in _MESSAGE_KEYS if k in raw), None)
    if key is None:
        raise FieldProblem("messages", "a list of chat messages (or 'traj')", missing=True)
    steps, final_answer = messages_to_steps(get_list(raw, key), key)
    run_id = get_str(raw, "id", required=False, numbers=True)
    if run_id is None:
        task = get_str(raw, "task_id", field="id", numbers=True)
        trial = get_str(raw, "trial", required=False, numbers=True)
        run_id = task if trial is None else f"{task}/trial{trial}"
    backbone = get_str(raw, "model", required=False) or options.get("backbone", "unknown")
    info = raw.get("info") if isinstance(raw.get("info"), dict) else {}
    task_info = info.get("task") if isinstance(info.get("task"), dict) else {}
    references = raw.get("references", task_info.get("outputs"))
    question = get_str(raw, "question", required=False) or next(
        (s.text for s in steps if s.role == "user" and s.text), "")
    return Trajectory(
        id=f"{path.stem}/{run_id}", agent=options.get("agent", "unknown"), backbone=backbone,
        family=infer_family(backbone), dataset=options.get("dataset", path.stem),
        setting=options.get("setting", "other"), split=options.get("split", "none"),
        question=question, references=string_list(references, "references"),
        steps=steps, final_answer=final_answer, truncated=final_answer is None,
        metadata={k: v for k, v in raw.items() if k not in (key, "references", "question")},
    )


class OpenAIMessagesAdapter(AdapterBase):
    name = "openai-messages"
    summary = "OpenAI chat messages with tool_calls, one run per record (tau-bench)"
    options = OPTIONS

    def check(self, options: Mapping[str, str]) -> None:
        check_options(self.name, options, self.options)

    def convert_line(self, path: Path, options: Mapping[str, str], where: str, line: bytes) -> Item:
        return line_item(where, line, partial(build, path=path, options=options))

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        self.check(options)
        make = partial(build, path=path, options=options)
        for where, raw in iter_source(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, make, raw))


register_adapter(OpenAIMessagesAdapter())
