"""Unit cutting on the hand-written ISE example: expected texts derived by hand from
data/ise_example.jsonl (ISE A.3 think-block policy, D.3 correctness input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samples.adapters import BadRecord, get_adapter
from samples.canonical import sha256_hex
from samples.records import Step, ToolCall, Trajectory
from samples.units import cut_units, render_turn, strip_think

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "ise_example.jsonl"


@pytest.fixture(scope="module")
def runs() -> dict[str, Trajectory]:
    items = list(get_adapter("ise").read(EXAMPLE, {}))
    assert not [i for i in items if isinstance(i, BadRecord)]
    return {t.id: t for t in items}


def _units(t: Trajectory) -> dict:
    units, _ = cut_units(t)
    return {(u.kind, u.focus_turn): u for u in units}


def test_identify_trajectory_keeps_think_and_numbers_turns(runs) -> None:
    unit = _units(runs["ise-gaia-0001"])[("identify_trajectory", None)]
    expected = (
        "[turn 0]\n"
        "<think>I believe it was finished around 250 BC, but I should check.</think>\n"
        '[tool call] web_search {"query": "Lighthouse of Alexandria completed year"}\n'
        "[tool result] Encyclopaedia: completed c. 280 BC under Ptolemy II.\n"
        "\n"
        "[turn 1]\n"
        "<think>The encyclopaedia says 280 BC, which contradicts my initial belief of 250 BC.</think>\n"
        "Two sources agree on a start in 280 BC; one gives a range to 247 BC.\n"
        '[tool call] open_page {"url": "https://en.wikipedia.org/wiki/Lighthouse_of_Alexandria"}\n'
        "[tool result] Constructed 280-247 BC."
    )
    assert unit.text == expected
    assert unit.turns == expected.split("\n\n")
    assert "final answer" not in unit.text and "range ending in 247 BC" not in unit.text  # final turn excluded
    assert unit.unit_id == "u_" + sha256_hex(["ise-gaia-0001", "identify_trajectory", None])[:20]
    assert unit.strata == {"agent": "Qwen-Agent", "backbone": "qwen3.5-9b", "family": "qwen", "dataset": "GAIA",
                           "setting": "natural", "split": "conflict"}


def test_escalate_final_strips_think_and_correctness_hides_question(runs) -> None:
    units = _units(runs["ise-gaia-0001"])
    assert units[("escalate_final", None)].text == (
        "The construction was completed around 280 BC, although one source gives a range ending in 247 BC.")
    correctness = units[("correctness", None)].text
    assert correctness == ("Reference answers:\n1. 280 BC\n\nPredicted answer:\n"
                           "The construction was completed around 280 BC, although one source gives a range ending in 247 BC.")
    assert runs["ise-gaia-0001"].question not in correctness


def test_identify_turn_and_untagged_reasoning(runs) -> None:
    units = _units(runs["ise-tmd-0002"])
    turn = units[("identify_turn", 0)]
    assert turn.text == ("[turn 0]\n<think>Let me read the passages.</think>\nBoth passages name Jane Doe.\n"
                         '[tool call] read_passages {"ids": [1, 2]}\n'
                         "[tool result] [1] Directed by Jane Doe. [2] Jane Doe's debut feature.")
    assert turn.focus_turn == 0 and turn.reference["step_index"] == 0
    assert units[("correctness", None)].text == "Reference answers:\n1. Jane Doe\n\nPredicted answer:\nJane Doe directed the film."


def test_truncated_run_gets_no_final_units(runs) -> None:
    units, skips = cut_units(runs["ise-monaco-0003"])
    kinds = sorted({u.kind for u in units})
    assert kinds == ["identify_trajectory", "identify_turn"]
    assert {(s.kind, s.reason) for s in skips} >= {("escalate_final", "truncated (no final answer)"),
                                                   ("correctness", "truncated (no final answer)")}
    first = [u for u in units if u.kind == "identify_turn" and u.focus_turn == 0][0]
    assert first.text == ('[turn 0]\nThe search failed; I cannot find the 2019 figure for the third city.\n'
                          '[tool call] search {"q": "largest cities population"}\n'
                          "[tool result] [tool failed] (no result recorded)")


def test_strip_think_variants() -> None:
    assert strip_think("<think>a</think>Answer") == "Answer"
    assert strip_think("<THINK>a\nb</THINK>\n Answer <think>c</think>!") == "Answer !"
    assert strip_think("Answer <think>never closed") == "Answer"
    assert strip_think("stray</think> Answer") == "stray Answer"
    assert strip_think(None) == ""


def test_multi_agent_speaker_and_string_arguments() -> None:
    step = Step(index=4, role="WebSurfer", text="Searching.",
                tool_calls=[ToolCall(name="visit", arguments="not json", result="page", success=True)])
    assert render_turn(2, step) == "[turn 2] (WebSurfer)\nSearching.\n[tool call] visit not json\n[tool result] page"


def test_bad_ise_records_are_named(tmp_path: Path) -> None:
    good = json.loads(EXAMPLE.read_text().splitlines()[0])
    broken = [
        {k: v for k, v in good.items() if k != "agent"},
        {**good, "setting": "lab"},
        {**good, "final_turn": None},
        {**good, "steps": [{"tool_call": {"arguments": {}}}]},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in broken) + "\n")
    messages = [str(item) for item in get_adapter("ise").read(path, {})]
    assert [where for where, _ in get_adapter("ise").locate(path, {})] == [f"{path}:{n}" for n in range(1, 5)]
    assert messages[0] == f"{path}:1: field 'agent': expected a string, missing"
    assert messages[1].startswith(f"{path}:2: field 'setting': Input should be 'controlled', 'natural' or 'other'")
    assert messages[2] == (f"{path}:3: field 'final_turn': expected the final assistant turn "
                           "(null only when 'truncated' is true), missing")
    assert messages[3] == f"{path}:4: field 'steps[0].tool_call.name': expected a string, missing"
