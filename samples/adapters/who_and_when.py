"""``who-and-when``: the Who&When failure-attribution runs (ag2ai/Agents_Failure_Attribution).

One JSON file per run: ``question``, ``ground_truth``, ``history`` (a list of
``{content, role, name?}`` turns) and the human labels ``mistake_agent``,
``mistake_step`` (0-based index into ``history``, stored as a string) and
``mistake_reason``. Each history turn becomes one step at the same index, its role
the speaker (``name`` when present, else ``role``; "human" becomes "user"), so the
human label lines up with ``Step.index``. Runs end without a separate final answer
turn, so ``final_answer`` is None and no final-turn units are cut (not truncated:
the runs terminated, the format just does not mark an answer).

Defaults, overridable by option: agent = "Magentic-One" for files under
``Hand-Crafted`` and "CaptainAgent" (AG2) otherwise, as the Who&When README
describes the two subsets; dataset = "GAIA" when ``question_ID`` is a UUID (GAIA's
task ids) and "AssistantBench" otherwise (its ids are 64-hex digests).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
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
    string_list,
    text_of,
)
from samples.records import Step, Trajectory
from samples.vocabulary import infer_family

OPTIONS = {
    "agent": "harness name (default: Magentic-One for Hand-Crafted, CaptainAgent otherwise)",
    "backbone": "model id (default 'unknown': the files do not record it)",
    "dataset": "dataset (default: GAIA for UUID question ids, AssistantBench otherwise)",
}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_KNOWN = {"question", "ground_truth", "history"}


def _step(raw: Any, index: int) -> Step:
    field = f"history[{index}]"
    turn = get_dict(raw, field)
    speaker = get_str(turn, "name", required=False, field=f"{field}.name") or get_str(turn, "role", field=f"{field}.role")
    return Step(index=index, role="user" if speaker == "human" else speaker,
                text=text_of(turn.get("content"), f"{field}.content"))


class WhoAndWhenAdapter(AdapterBase):
    name = "who-and-when"
    summary = "Who&When multi-agent runs with human mistake_step / mistake_agent labels"
    options = OPTIONS

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        check_options(self.name, options, self.options)
        subset = path.parent.name

        def build(raw: dict[str, Any]) -> Trajectory:
            steps = [_step(t, i) for i, t in enumerate(get_list(raw, "history"))]
            metadata = {k: v for k, v in raw.items() if k not in _KNOWN}
            if "mistake_step" in raw:
                step = get_str(raw, "mistake_step", numbers=True)
                if not step.lstrip("-").isdigit() or not 0 <= int(step) < len(steps):
                    raise FieldProblem("mistake_step", f"an index into history (0..{len(steps) - 1})", raw["mistake_step"])
                metadata["mistake_step"] = int(step)
            question_id = get_str(raw, "question_ID", required=False, default="")
            default_dataset = "GAIA" if _UUID.match(question_id) else "AssistantBench"
            backbone = options.get("backbone", "unknown")
            return Trajectory(
                id=f"who_and_when/{subset}/{path.stem}",
                agent=options.get("agent", "Magentic-One" if subset == "Hand-Crafted" else "CaptainAgent"),
                backbone=backbone, family=infer_family(backbone),
                dataset=options.get("dataset", default_dataset),
                question=get_str(raw, "question"),
                references=string_list(raw.get("ground_truth"), "ground_truth"),
                steps=steps, metadata={"subset": subset, **metadata},
            )

        for where, raw in iter_source(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, build, raw))


register_adapter(WhoAndWhenAdapter())
