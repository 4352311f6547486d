"""Seeded synthetic trajectories in the ISE JSONL format, for tests, benchmarks and demos.

Shapes follow the ISE study (section 2.3, A.4): harness/backbone pairs, datasets,
natural vs controlled settings, conflict vs control splits, a few tool-calling
steps with optional ``<think>`` reasoning, and a final turn unless truncated.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

AGENTS = (("Qwen-Agent", "qwen3.5-9b"), ("Qwen-Agent", "qwen3.5-27b"), ("Claude Code", "claude-sonnet-4.6"),
          ("OpenHands", "gpt-5"), ("ToolOrchestra", "nemotron-orchestrator-8b"))
DATASETS = ("GAIA", "MoNaCo", "BrowseComp", "TMD")
_WORDS = np.array("the source reports value year population city river found search result says however we "
                  "check verify answer table page number data list name first second".split())


def ise_records(n: int, *, seed: int, steps: tuple[int, int] = (1, 6), words: int = 40) -> Iterator[dict]:
    """``n`` ISE-format run records; ``steps`` bounds the intermediate steps per run."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        agent, backbone = AGENTS[int(rng.integers(len(AGENTS)))]
        dataset = DATASETS[int(rng.integers(len(DATASETS)))]
        count = int(rng.integers(steps[0], steps[1] + 1))

        def text() -> str:
            return " ".join(_WORDS[rng.integers(0, _WORDS.size, words)])

        run_steps = [{"reasoning": f"<think>{text()}</think>" if rng.random() < 0.5 else None,
                      "tool_call": {"name": "web_search", "arguments": {"query": text()[:60]}, "result": text(),
                                    "success": bool(rng.random() < 0.9)},
                      "text": text() if rng.random() < 0.5 else None} for _ in range(count)]
        truncated = bool(rng.random() < 0.05)
        yield {"id": f"run-{seed}-{i:07d}", "agent": agent, "backbone": backbone, "dataset": dataset,
               "setting": "controlled" if dataset == "TMD" else "natural",
               "split": "conflict" if rng.random() < 0.5 else "control", "question": text(),
               "reference": [text()[:20]], "steps": run_steps,
               "final_turn": None if truncated else {"reasoning": None, "text": text()}, "truncated": truncated}


def write_ise_jsonl(path: str | Path, n: int, *, seed: int, **kwargs) -> Path:
    path = Path(path)
    with open(path, "w", encoding="utf-8") as handle:
        for record in ise_records(n, seed=seed, **kwargs):
            handle.write(json.dumps(record) + "\n")
    return path
