r"""``mad``: MAST / MAD multi-agent traces with three human annotators' votes.

Two record shapes (``../shared/data/mad_mast_lint``):

* MAD records (``mad_human_sample.json``): ``mas_name``, ``benchmark_name``,
  ``round``, ``trace_id``, ``trace`` and ``annotations`` (``{"failure mode":
  "<num> <name>\n\n<definition>", "annotator_1..3": bool}``). An AG2 trace is JSON
  whose ``trajectory`` list gives one step per message (speaker = ``name``); any
  other trace is a log, split into one step per block between separator lines
  (runs of 20 or more '-' or '='), speaker "log".
* mast-lint evaluation records (``raw_findings.json``): ``report`` (an LLM judge's
  findings) and ``gold`` (``votes``: per failure mode, the three annotators'
  booleans). They carry no trace text, so the trajectory has no steps; the votes
  and findings are kept in ``metadata``.

Votes land in ``metadata["votes"]`` as ``{mode: [bool, bool, bool]}`` for both.
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
    text_of,
)
from samples.jsonl import json_text
from samples.records import Step, Trajectory
from samples.vocabulary import infer_family

OPTIONS = {"backbone": "model id (default 'unknown': MAD does not record it)"}
_SEPARATOR = re.compile(r"^\s*(?:-{20,}|={20,})\s*$", re.MULTILINE)


def trace_steps(trace: str) -> list[Step]:
    try:
        parsed = json_text(trace)
    except ValueError:  # a log, not JSON
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("trajectory"), list):
        steps = []
        for i, raw in enumerate(parsed["trajectory"]):
            message = get_dict(raw, f"trace.trajectory[{i}]")
            content = message.get("content")
            if isinstance(content, list) and all(isinstance(c, str) for c in content):
                content = "\n".join(content)
            speaker = get_str(message, "name", required=False) or get_str(message, "role", field=f"trace.trajectory[{i}].role")
            steps.append(Step(index=i, role=speaker, text=text_of(content, f"trace.trajectory[{i}].content")))
        return steps
    if isinstance(parsed, dict) and isinstance(parsed.get("content"), str):
        trace = parsed["content"]
    blocks = [b.strip() for b in _SEPARATOR.split(trace) if b.strip()]
    return [Step(index=i, role="log", text=b) for i, b in enumerate(blocks)]


def _votes(annotations: list[Any]) -> dict[str, list[bool]]:
    votes: dict[str, list[bool]] = {}
    for i, raw in enumerate(annotations):
        entry = get_dict(raw, f"annotations[{i}]")
        mode = get_str(entry, "failure mode", field=f"annotations[{i}].failure mode").split("\n", 1)[0].strip()
        marks = [entry.get(f"annotator_{k}") for k in (1, 2, 3)]
        if not all(isinstance(m, bool) for m in marks):
            raise FieldProblem(f"annotations[{i}].annotator_1..3", "three booleans", marks)
        votes[mode] = marks
    return votes


class MADAdapter(AdapterBase):
    name = "mad"
    summary = "MAST/MAD multi-agent traces with three annotators' failure-mode votes"
    options = OPTIONS

    def locate(self, path: Path, options: Mapping[str, str]) -> Iterator[tuple[str, Item]]:
        check_options(self.name, options, self.options)
        backbone = options.get("backbone", "unknown")

        def build(raw: dict[str, Any]) -> Trajectory:
            if "gold" in raw:
                gold = get_dict(raw["gold"], "gold")
                report = get_dict(raw.get("report", {}), "report")
                votes = get_dict(gold.get("votes"), "gold.votes")
                return Trajectory(
                    id=f"mad/{get_str(gold, 'trace_id', field='gold.trace_id', numbers=True)}",
                    agent=get_str(gold, "mas_name", field="gold.mas_name"), backbone=backbone,
                    family=infer_family(backbone), dataset=get_str(gold, "benchmark", field="gold.benchmark"),
                    metadata={"votes": votes, "round": gold.get("round"), "findings": report.get("findings", []),
                              "taxonomy_version": gold.get("taxonomy_version")},
                )
            trace = get_str(raw, "trace")
            agent = get_str(raw, "mas_name")
            return Trajectory(
                id=f"mad/{agent}/{get_str(raw, 'trace_id', numbers=True)}", agent=agent, backbone=backbone,
                family=infer_family(backbone), dataset=get_str(raw, "benchmark_name"),
                steps=trace_steps(trace),
                metadata={"votes": _votes(get_list(raw, "annotations")), "round": raw.get("round")},
            )

        for where, raw in iter_source(path):
            yield where, (raw if isinstance(raw, BadRecord) else convert(where, build, raw))


register_adapter(MADAdapter())
