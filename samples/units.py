"""Cutting trajectories into units: exactly what each judge and annotator reads.

Think-block policy (ISE appendix A.3): Identify kinds keep ``<think>`` blocks
(mid-trajectory recognition surfaces there); the final turn, correctness and
response texts have them stripped (the externally visible answer).

A turn is one agent step that is not the final answer: every step whose role is
not ``user``, ``system`` or ``tool``. It renders as (lines present only when the
step has them)::

    [turn 3] (WebSurfer)                     <- speaker, only when it is not "assistant"
    <think>reasoning</think>                 <- reasoning verbatim, wrapped when untagged
    text the step showed
    [tool call] search {"q": "..."}          <- name + arguments as JSON, one per call
    [tool result] what the tool returned     <- exactly as the agent saw it
                                                ("(no result recorded)" when unknown,
                                                 "[tool failed]" prefix when success=false)

Unit texts:

* ``identify_trajectory``: all turns joined by blank lines (final turn excluded).
* ``identify_turn``: for each turn i, the turn itself ("[turn i] ...", the thing
  labelled); ``focus_turn`` = i. Its numbered context (turns 0..i, what the agent
  had done up to that turn) is attached as ``turns`` when the unit is sampled
  (``samples.sampler``) or judged (``samples.context.with_context``), not in the
  population file: context per turn would make ``units.jsonl`` grow with the square
  of trajectory length. Judges and annotators both read that context.
* ``escalate_final``: the final step's text, ``<think>`` stripped (its hidden
  reasoning is not part of the user-facing turn).
* ``correctness``: "Reference answers:" numbered list, then "Predicted answer:";
  the question is never included (ISE D.3, Figure 6).
* ``response``: a single-turn response (no intermediate turns), ``<think>`` stripped;
  the source's question and references ride along as ``question`` and ``gold_answers``
  (shown to coders, offered to judge prompts).

Which kinds exist and how each is cut is the unit-kind registry's (``samples.kinds``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from samples.canonical import canonical_json
from samples.kinds import Source, get_kind, is_kind
from samples.kinds import kinds as unit_kinds
from samples.records import STRATUM_FIELDS, UNIT_KINDS, Step, Trajectory, Unit
from samples.truncation import truncation_reason

NON_AGENT_ROLES = frozenset({"user", "system", "tool"})
_JSON = json.JSONEncoder(ensure_ascii=False).encode


def _arguments_json(arguments: dict[str, Any]) -> str:
    """``json.dumps(arguments, ensure_ascii=False)``, the text a turn shows for a tool call.

    Arguments are mostly flat string maps; building that text from the stdlib's own string
    encoder takes about half the time of ``json.dumps``, which was the largest cost of
    rendering a turn (tests/samples compare the two on random maps).
    """
    if all(type(value) is str for value in arguments.values()):
        return "{" + ", ".join([encode_basestring(k) + ": " + encode_basestring(v) for k, v in arguments.items()]) + "}"
    return _JSON(arguments)


_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_STRAY_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def strip_think(text: str | None) -> str:
    """Remove ``<think>...</think>`` blocks (an unclosed one runs to the end) and trim."""
    if not text:
        return ""
    return _STRAY_CLOSE.sub("", _THINK_BLOCK.sub("", text)).strip()


def unit_id(trajectory_id: str, kind: str, focus_turn: int | None = None) -> str:
    """``"u_"`` + the first 20 hex digits of ``sha256_hex([trajectory_id, kind, focus_turn])``."""
    return _unit_id(_id_prefix(trajectory_id), kind, focus_turn)


def _id_prefix(trajectory_id: str) -> bytes:
    """The canonical JSON of ``[trajectory_id, ...`` up to the kind: encoded once per trajectory."""
    return canonical_json([trajectory_id])[:-1]


_KIND_JSON = {kind: b',"%s",' % kind.encode() for kind in UNIT_KINDS}


def _unit_id(prefix: bytes, kind: str, focus_turn: int | None) -> str:
    # Completes the canonical JSON by hand (a kind is a plain identifier, a focus turn an int
    # or null): a unit id per unit made json.dumps the largest cost of cutting units.
    middle = _KIND_JSON.get(kind) or b"," + canonical_json(kind) + b","
    focus = b"null]" if focus_turn is None else b"%d]" % focus_turn
    return "u_" + hashlib.sha256(prefix + middle + focus).hexdigest()[:20]


def is_turn(step: Step) -> bool:
    return step.role not in NON_AGENT_ROLES and not step.is_final


def render_turn(number: int, step: Step) -> str:
    return _render(number, step.model_dump())


def _render(number: int, step: Mapping[str, Any]) -> str:
    """``render_turn`` on a Step's fields (a plain dict: ingest cuts units without model instances)."""
    role = step["role"]
    lines = [f"[turn {number}]" if role == "assistant" else f"[turn {number}] ({role})"]
    reasoning = step["reasoning"]
    if reasoning and reasoning.strip():
        reasoning = reasoning.strip()
        lines.append(reasoning if "<think>" in reasoning.lower() else f"<think>{reasoning}</think>")
    text = step["text"]
    if text and text.strip():
        lines.append(text.strip())
    for call in step["tool_calls"]:
        arguments = call["arguments"]
        if not isinstance(arguments, str):
            arguments = _arguments_json(arguments)
        lines.append(f"[tool call] {call['name']} {arguments}")
        result = "(no result recorded)" if call["result"] is None else call["result"]
        lines.append(f"[tool result] {'[tool failed] ' if call['success'] is False else ''}{result}")
    return "\n".join(lines)


def numbered_turns(trajectory: Trajectory) -> list[str]:
    """Every intermediate agent turn, rendered and numbered from 0."""
    return [render_turn(i, s) for i, s in enumerate(s for s in trajectory.steps if is_turn(s))]


@dataclass(frozen=True, kw_only=True)
class Skip:
    """A unit kind not cut from a trajectory, and why (counted in the ingest manifest)."""

    trajectory_id: str
    kind: str
    reason: str


# Source metadata that scoring or a rule judge needs, carried into Unit.reference (never
# shown): human labels of the source datasets, and the EHQ item the ehq rule judge reads.
_REFERENCE_KEYS = ("mistake_step", "mistake_agent", "votes", "is_correct", "reward", "ehq_item", "asa")


_SHOWN_IF_SET = ("question", "gold_answers", "truncation")


def cut_units(trajectory: Trajectory, kinds: Iterable[str] = UNIT_KINDS, *,
              metadata_strata: Sequence[str] = ()) -> tuple[list[Unit], list[Skip]]:
    """Every unit of the requested kinds that the trajectory supports, and the skips."""
    rows, skips = unit_rows(trajectory.model_dump(), kinds, metadata_strata=metadata_strata)
    return [Unit.model_validate(r) for r in rows], skips


def unit_rows(trajectory: Mapping[str, Any], kinds: Iterable[str] = UNIT_KINDS, *,
              metadata_strata: Sequence[str] = ()) -> tuple[list[dict[str, Any]], list[Skip]]:
    """``cut_units`` on a Trajectory's fields, giving Unit rows (plain dicts in the Unit field
    order, valid by construction) for ``samples.jsonl.row_bytes``."""
    kinds = tuple(kinds)
    unknown = [k for k in kinds if not is_kind(k)]
    if unknown:
        raise ValueError(f"cut_units: kinds {unknown} are not unit kinds; allowed: {list(unit_kinds())}")
    tid = trajectory["id"]
    id_prefix = _id_prefix(tid)
    metadata = trajectory["metadata"]
    strata = {field: str(trajectory[field]) for field in STRATUM_FIELDS}
    for key in metadata_strata:
        value = metadata.get(key)
        strata[key] = "(missing)" if value is None else str(value)
    labels = {k: metadata[k] for k in _REFERENCE_KEYS if k in metadata}
    references = trajectory["references"]
    reference = {"references": list(references), **labels}
    all_steps = trajectory["steps"]
    steps = [s for s in all_steps if s["role"] not in NON_AGENT_ROLES and not s["is_final"]]
    final = next((s for s in reversed(all_steps) if s["is_final"]), None)
    source = Source(trajectory_id=tid, question=trajectory["question"], references=references, labels=labels,
                    steps=steps, turns=[_render(i, s) for i, s in enumerate(steps)], final=final,
                    final_text=(final_text := strip_think(final["text"]) if final is not None else ""),
                    truncated=trajectory["truncated"],
                    cut_off=truncation_reason(final_text, metadata) if final_text else None)
    units: list[dict[str, Any]] = []
    skips: list[Skip] = []
    for kind in kinds:
        cuts = get_kind(kind).cut(source)
        if isinstance(cuts, str):
            skips.append(Skip(trajectory_id=tid, kind=kind, reason=cuts))
            continue
        for cut in cuts:
            focus = cut.get("focus")
            extra = cut.get("extra")
            row = {"unit_id": _unit_id(id_prefix, kind, focus), "trajectory_id": tid, "kind": kind,
                   "text": cut["text"], "turns": cut.get("turns"), "focus_turn": focus, "strata": strata,
                   "reference": {**reference, **extra} if extra else reference}
            for name in _SHOWN_IF_SET:  # left out when None, as the model writes them
                if cut.get(name) is not None:
                    row[name] = cut[name]
            units.append(row)
    return units, skips
