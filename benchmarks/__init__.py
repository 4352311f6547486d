"""accord's benchmarks: ``python -m benchmarks [--quick] [--only AREA ...]``.

Each ``benchmarks/bench_<area>.py`` exposes ``run(quick: bool = False) -> list[dict]``
returning rows with the keys in ``ROW_KEYS``: the measured accord value (human
readable, e.g. "0.41 s"), the peer measured side by side in the same run (or ""),
their ratio, the target, whether it was met (None when there is no target or it
could not be measured) and notes. The harness collects every module's rows into
``benchmarks/results.json`` and ``benchmarks/results.md`` and refreshes the table
in README.md between ``<!-- bench:start -->`` and ``<!-- bench:end -->``.
"""

from __future__ import annotations

ROW_KEYS = ("benchmark", "accord", "peer", "ratio", "target", "met", "notes")


def failed_row(benchmark: str, error: BaseException) -> dict:
    """The row a benchmark that raised reports instead of its measurements."""
    last = f"{type(error).__name__}: {error}".splitlines()[0]
    return {"benchmark": benchmark, "accord": "error", "peer": "", "ratio": "", "target": "", "met": False,
            "notes": f"benchmark failed: {last}"}
