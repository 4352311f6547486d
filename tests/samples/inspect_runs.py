"""The inspect_ai runs tests/samples/test_inspect_adapter.py ingests: a scripted ``mockllm/model`` with a real
``add`` tool and scorers. Apart from the test module, and imported by its fixture, so that collecting the
suite does not import inspect_ai (about 1.2 CPU-seconds in every pytest process)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ContentReasoning,
    ContentText,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import Score, Target, match, model_graded_qa, scorer
from inspect_ai.solver import TaskState, generate, system_message, use_tools
from inspect_ai.tool import ToolCall, tool

MOCK = "mockllm/model"
# Usage set on every scripted output: without it mockllm counts tokens with tiktoken,
# which downloads its encoding (no network here).
USAGE = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)


@tool
def add():
    async def execute(x: int, y: int):
        """Add two integers.

        Args:
            x: the first integer
            y: the second integer

        """
        return x + y

    return execute


@scorer(metrics=[])
def half_credit():
    """A numeric scorer: 1.0 for the first sample, 0.5 (no correctness label) for the second, 0 for the third."""

    async def score(state: TaskState, target: Target) -> Score:
        return Score(value={"s0": 1.0, "s1": 0.5, "s2": 0}[str(state.sample_id)])

    return score


def output(text: str, reasoning: str | None = None, call: tuple[str, dict] | None = None) -> ModelOutput:
    content = ([ContentReasoning(reasoning=reasoning)] if reasoning else []) + [ContentText(text=text)]
    calls = [ToolCall(id=call[0], function="add", arguments=call[1])] if call else None
    message = ChatMessageAssistant(content=content, tool_calls=calls, model=MOCK)
    return ModelOutput(model=MOCK, usage=USAGE, choices=[ChatCompletionChoice(
        message=message, stop_reason="tool_calls" if call else "stop")])


def tool_run(folder: Path, log_format: str) -> Path:
    """A real inspect_ai eval of a 3-sample task with an ``add`` tool, three scorers, one log file."""
    samples = [Sample(id=f"s{i}", input=f"What is {a} + {b}?", target=str(a + b), metadata={"pair": [a, b]})
               for i, (a, b) in enumerate([(1, 2), (3, 4), (10, 5)])]
    script = [
        output("I'll add them.", "The user wants 1+2.", ("c1", {"x": 1, "y": 2})), output("3"),
        output("Adding.", None, ("c2", {"x": 3})),  # misses y: inspect_ai's validation fails the call
        output("Retry.", None, ("c3", {"x": 3, "y": 4})), output("The sum is 8"),
        output("", "Easy.", ("c4", {"x": 10, "y": 5})), output("15"),
    ]
    grades = [ModelOutput(model=MOCK, usage=USAGE, choices=[ChatCompletionChoice(
        message=ChatMessageAssistant(content=grade), stop_reason="stop")])
        for grade in ("GRADE: C", "GRADE: I", "GRADE: C")]
    task = Task(dataset=samples, name="addition",
                solver=[system_message("Use the add tool."), use_tools(add()), generate()],
                scorer=[match(), model_graded_qa(model=get_model(MOCK, custom_outputs=grades)), half_credit()])
    [log] = inspect_eval(task, model=get_model(MOCK, custom_outputs=script), max_samples=1, log_dir=str(folder),
                         log_format=log_format, display="none")
    assert log.status == "success", log.error
    return Path(log.location)
