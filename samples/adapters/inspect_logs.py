"""``inspect``: inspect_ai evaluation logs (``.eval`` or ``.json``), read through inspect_ai's own API.

One log holds one eval (a task run against one model); each sample (and epoch) becomes
a trajectory: its messages in order, each assistant turn with its reasoning blocks,
text and tool calls, each tool result folded into the call it answers (a
``ToolCallError`` makes the call unsuccessful), the last assistant turn without tool
calls as the final answer. The sample input is the question, its target the
references, the eval's model the backbone and its task name the dataset.

The samples' scores are judge verdicts, not trajectory data: ``score_rows`` gives them
as the ``inspect-scores`` label table (one row per sample and scorer, each value mapped
to a ``correctness`` label where the mapping is unambiguous) for
``accord import judge-labels``. inspect-ai is an optional extra, imported only here.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from samples.adapters import register_adapter
from samples.adapters.base import AdapterBase, BadRecord, Item, check_options
from samples.errors import InputError
from samples.records import Step, ToolCall, Trajectory
from samples.vocabulary import infer_family

INSTALL_HINT = "the inspect adapter needs inspect-ai: pip install 'accord[inspect]'"
OPTIONS = {
    "agent": "harness name for every run (default: the eval's solver, else 'inspect_ai')",
    "backbone": "model id for every run (default: the eval's model without its provider prefix)",
    "dataset": "dataset name (default: the eval's task name)",
    "setting": "controlled | natural | other (default other)",
    "split": "conflict | control | none (default none)",
}
CORRECTNESS_KIND = "correctness"
# inspect_ai's scorer constants (inspect_ai.scorer CORRECT/INCORRECT) and the plain
# two-valued forms a scorer may return; anything else (PARTIAL "P", NOANSWER "N",
# 0.5, a dict of several values) has no unambiguous correctness label.
_SCORE_LABELS: dict[Any, str] = {"C": "correct", "I": "incorrect", "correct": "correct", "incorrect": "incorrect",
                                 True: "correct", False: "incorrect"}


def read_log(path: Path) -> Any:
    """The whole log through ``inspect_ai.log.read_eval_log``; a missing extra or a bad file is an InputError."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    try:
        # attachments resolved: a condensed log may keep message content as ``attachment://`` references;
        # events (the bulk of a log) are not read, nothing here needs them
        return read_eval_log(str(path), resolve_attachments=True, exclude_fields={"events"})
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:  # pydantic's ValidationError is a ValueError
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"{path}: not an inspect_ai evaluation log ({first})") from None


def _epochs(log: Any) -> int:
    return int(getattr(log.eval.config, "epochs", None) or 1)


def trajectory_id(path: Path, log: Any, sample: Any) -> str:
    """``<log stem>/<sample id>`` (``/epoch<n>`` when the eval ran several): the same id for ingest and scores."""
    base = f"{path.stem}/{sample.id}"
    return f"{base}/epoch{sample.epoch}" if _epochs(log) > 1 else base


def model_name(model: str) -> str:
    """An inspect model string without its provider prefix (``openai/gpt-4o`` -> ``gpt-4o``,
    ``openai-api/local/smollm2`` -> ``smollm2``): the provider names the API, not the model family."""
    return model.rsplit("/", 1)[-1]


def _reasoning(content: Any) -> str | None:
    if isinstance(content, str):
        return None
    parts = []
    for block in content:
        if block.type == "reasoning":
            text = block.summary if block.redacted else block.reasoning
            if text:
                parts.append(text)
    return "\n\n".join(parts) or None


def _text(message: Any) -> str | None:
    text = message.text
    return text if text else None


def _tool_result(message: Any) -> tuple[str | None, bool]:
    """What the agent saw from a tool, and whether the call succeeded (a ToolCallError: it did not)."""
    error = message.error
    text = _text(message)
    if error is not None:
        return (text or f"{error.type}: {error.message}"), False
    return text, True


def messages_to_steps(messages: list[Any]) -> tuple[list[Step], str | None]:
    """Steps (tool results folded into their calls) and the final answer, if any."""
    steps: list[dict[str, Any]] = []
    open_calls: dict[str, tuple[int, int]] = {}
    for position, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id in open_calls:
            step_at, call_at = open_calls.pop(message.tool_call_id)
            result, success = _tool_result(message)
            steps[step_at]["tool_calls"][call_at].update(result=result, success=success)
            continue
        calls: list[dict[str, Any]] = []
        reasoning = None
        if message.role == "assistant":
            reasoning = _reasoning(message.content)
            for i, call in enumerate(message.tool_calls or []):
                # unparseable arguments: inspect_ai keeps what it parsed and fails the call (its tool message's error)
                calls.append({"name": call.function, "arguments": call.arguments})
                if call.id:
                    open_calls[call.id] = (len(steps), i)
        step: dict[str, Any] = {"index": position, "role": message.role, "text": _text(message),
                                "reasoning": reasoning, "tool_calls": calls}
        if message.role == "tool":  # a result whose call is not in the transcript: a step of its own
            result, success = _tool_result(message)
            step["tool_calls"] = [{"name": message.function or "unknown", "result": result, "success": success}]
        steps.append(step)
    final_answer = None
    assistant = [s for s in steps if s["role"] == "assistant"]
    if assistant and not assistant[-1]["tool_calls"] and (assistant[-1]["text"] or "").strip():
        assistant[-1]["is_final"] = True
        final_answer = assistant[-1]["text"]
    return [Step(**{**s, "tool_calls": [ToolCall(**c) for c in s["tool_calls"]]}) for s in steps], final_answer


def _question(value: Any) -> str:
    if isinstance(value, str):
        return value
    return next((m.text for m in value if m.role == "user" and m.text), "")


def _references(target: Any) -> list[str]:
    if target is None:
        return []
    return [target] if isinstance(target, str) else [str(t) for t in target]


def build(path: Path, log: Any, sample: Any, options: Mapping[str, str]) -> Trajectory:
    """One sample (one epoch) of an eval log -> Trajectory."""
    steps, final_answer = messages_to_steps(sample.messages)
    backbone = options.get("backbone") or model_name(log.eval.model)
    metadata = {
        **(sample.metadata or {}),
        "inspect": {"log": path.name, "eval_id": log.eval.eval_id, "run_id": log.eval.run_id,
                    "task_id": log.eval.task_id, "model": log.eval.model, "sample_id": str(sample.id),
                    "epoch": sample.epoch, "limit": sample.limit.model_dump(mode="json") if sample.limit else None,
                    "error": sample.error.message if sample.error else None},
    }
    return Trajectory(
        id=trajectory_id(path, log, sample), agent=options.get("agent") or log.eval.solver or "inspect_ai",
        backbone=backbone, family=infer_family(backbone), dataset=options.get("dataset", log.eval.task),
        setting=options.get("setting", "other"), split=options.get("split", "none"),
        question=_question(sample.input), references=_references(sample.target), steps=steps,
        final_answer=final_answer, truncated=final_answer is None, metadata=metadata,
    )


class InspectAdapter(AdapterBase):
    name = "inspect"
    summary = "inspect_ai evaluation logs (.eval/.json), one run per sample and epoch (needs accord[inspect])"
    options = OPTIONS

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        from pydantic import ValidationError

        check_options(self.name, options, self.options)
        log = read_log(path)
        if not log.samples:
            yield str(path), BadRecord(where=str(path), message=f"the log holds no samples (eval status {log.status})")
            return
        for sample in log.samples:
            where = f"{path}[sample {sample.id!r} epoch {sample.epoch}]"
            try:
                yield where, build(path, log, sample, options)
            except ValidationError as error:
                first = error.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "(record)"
                yield where, BadRecord(where=where, message=f"field '{field}': {first['msg']}")


def score_label(value: Any) -> str | None:
    """A Score value's correctness label; None when it has no unambiguous one (partial, no answer, several values)."""
    if isinstance(value, bool | str):
        return _SCORE_LABELS.get(value)
    if isinstance(value, int | float) and not math.isnan(value):
        return {1: "correct", 0: "incorrect"}.get(value)  # 1.0 == 1; 0.5 has no label
    return None


def score_rows(path: Path) -> list:
    """The ``inspect-scores`` label table: one row per (sample, scorer) of a log.

    Columns: ``trajectory`` (the id ingest gives the sample), ``kind`` (``correctness``),
    ``scorer``, ``sample``, ``epoch``, ``value`` (the Score value as JSON text), ``label``
    (its correctness label; the value's text when it has none, so the import keeps the
    row unscored with the reason), ``answer`` and ``explanation``.
    """
    from samples.table_rows import TableRow

    log = read_log(path)
    rows = []
    for sample in log.samples or []:
        for scorer, score in sorted((sample.scores or {}).items()):
            raw = score.value if isinstance(score.value, str) else json.dumps(score.value, sort_keys=True)
            label = score_label(score.value)
            rows.append(TableRow(f"{path}[sample {sample.id!r} epoch {sample.epoch}][{scorer!r}]", {
                "trajectory": trajectory_id(path, log, sample), "kind": CORRECTNESS_KIND, "scorer": scorer,
                "sample": str(sample.id), "epoch": sample.epoch, "value": raw, "label": label or raw,
                "answer": score.answer, "explanation": score.explanation}))
    return rows


register_adapter(InspectAdapter())
