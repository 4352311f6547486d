"""A long tool-using trajectory cut into Identify tasks, for the coding app's reading tests and
benchmarks/bench_annotate.py: every turn reasons, says something, calls a tool and gets a CSV
dump back, rendered by the real unit renderer (samples.units)."""

from __future__ import annotations

from samples.records import BlindTask, Step, ToolCall, Trajectory
from samples.units import numbered_turns

# Shown as text, never run: in a speaker name, a message, reasoning and a tool result.
INJECTION = '<script>window.__accordInjected = 1</script><img src=x onerror="window.__accordInjected = 2">'


def csv_dump(turn: int, n_bytes: int) -> str:
    """A CSV of about ``n_bytes`` characters whose rows name their turn (``row t.r``)."""
    rows = ["id,city,price,stock"]
    while sum(len(row) + 1 for row in rows) < n_bytes:
        r = len(rows)
        rows.append(f"row {turn}.{r},Lincoln Park {r % 7},{(r * 37) % 100}.{r % 10}9,{(r * 13) % 50}")
    return "\n".join(rows)


def long_trajectory(n_turns: int = 50, tool_bytes: int = 200_000, *, injection: bool = False) -> Trajectory:
    """``n_turns`` agent turns whose tool results add up to about ``tool_bytes`` characters."""
    per_turn = tool_bytes // n_turns
    steps = [Step(index=0, role="user", text="Which supermarkets near Lincoln Park sell a salad for under $15?")]
    for turn in range(n_turns):
        hostile = injection and turn == 1
        steps.append(Step(
            index=turn + 1, role=INJECTION if hostile else ("WebSurfer" if turn % 2 else "Orchestrator"),
            reasoning=f"I should look at the price list, step {turn}. " * (40 if turn % 5 == 0 else 2),
            text=INJECTION if hostile else f"Checking the price list, step {turn}.",
            tool_calls=[ToolCall(name="read_csv" if turn % 2 else "web_search", arguments={"query": f"salads page {turn}"},
                                 result=(INJECTION + "\n" if hostile else "") + csv_dump(turn, per_turn))],
        ))
    return Trajectory(id="long-run", agent="harness", backbone="model", family="unknown", dataset="GAIA",
                      question="Which supermarkets near Lincoln Park sell a salad for under $15?", steps=steps)


def long_tasks(n_turns: int = 50, tool_bytes: int = 200_000, *, injection: bool = False) -> list[BlindTask]:
    """The trajectory as an identify_turn task on its last turn (all turns as context) and as
    its identify_trajectory task."""
    turns = numbered_turns(long_trajectory(n_turns, tool_bytes, injection=injection))
    return [
        BlindTask(task_id="t_long_turn", kind="identify_turn", text=turns[-1], turns=turns, focus_turn=len(turns) - 1),
        BlindTask(task_id="t_long_traj", kind="identify_trajectory", text="\n\n".join(turns), turns=turns),
    ]
