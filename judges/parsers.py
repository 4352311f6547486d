"""Output parsers: a judge's raw text -> a canonical label, or *unscored* with a reason.

Every output kind has two modes, and both are always run and recorded:

- **strict** accepts only the exact format the prompt asks for (the whole output,
  trimmed, is the one word / the one JSON object / the ``DECISION:`` line);
- **lenient** first removes what a capable judge commonly wraps around an answer
  (``<think>`` blocks, code fences, markdown emphasis, trailing punctuation, a lead-in
  sentence) and then needs exactly one unambiguous label.

A parser never guesses: an output that gives no label is unscored with one of the
reasons ``empty``, ``truncated``, ``refusal_to_judge``, ``wrong_format`` (plus a
detail), and the runner adds ``call_failed`` when no output arrived at all.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from samples import Registry

ParseMode = Literal["strict", "lenient"]
PARSE_MODES: tuple[str, ...] = ("strict", "lenient")
UNSCORED_REASONS: tuple[str, ...] = ("empty", "truncated", "refusal_to_judge", "wrong_format", "call_failed")


@dataclass(frozen=True, kw_only=True)
class Parsed:
    """One parser's reading of one output: a label, or None with a reason."""

    label: str | None
    first_turn: int | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class ParseOutcome:
    """Both modes' readings and the one the judge reports under its configured mode."""

    strict: Parsed
    lenient: Parsed
    mode: ParseMode

    @property
    def chosen(self) -> Parsed:
        return self.strict if self.mode == "strict" else self.lenient

    @property
    def label(self) -> str | None:
        return self.chosen.label

    @property
    def first_turn(self) -> int | None:
        return self.chosen.first_turn

    @property
    def status(self) -> str:
        return "ok" if self.chosen.label is not None else "unscored"

    @property
    def reason(self) -> str | None:
        return self.chosen.reason


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>", re.IGNORECASE)
_CODE_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_REFUSAL_TO_JUDGE = re.compile(
    r"\b(?:i(?:'m| am) sorry|i (?:cannot|can't|can not|won't|will not|am unable to|'m unable to) "
    r"(?:help|assist|evaluate|judge|determine|classify|provide|comply|answer)|as an ai\b)",
    re.IGNORECASE,
)


def _unscored(reason: str, detail: str | None = None) -> Parsed:
    return Parsed(label=None, reason=f"{reason}: {detail}" if detail else reason)


def _precheck(text: str | None, *, truncated: bool) -> Parsed | None:
    """Reasons that apply to every output kind before any format is tried."""
    if text is None or not text.strip():
        return _unscored("truncated" if truncated else "empty")
    return None


def _fail_reason(text: str, *, truncated: bool, detail: str) -> Parsed:
    """Why a non-empty output gave no label: cut off, a refusal to judge, or the wrong format."""
    visible = _THINK_BLOCK.sub("", text)
    if truncated or (_OPEN_THINK.search(visible) and "</think>" not in visible.lower()):
        return _unscored("truncated", detail)
    if _REFUSAL_TO_JUDGE.search(visible):
        return _unscored("refusal_to_judge", detail)
    return _unscored("wrong_format", detail)


def _clean(text: str) -> str:
    """Strip what surrounds an answer without changing it: think blocks, fences, emphasis."""
    text = _THINK_BLOCK.sub("", text).strip()
    text = _CODE_FENCE.sub("", text).strip()
    return text.replace("**", "").replace("__", "").strip()


# ---------------------------------------------------------------- one-word labels
def _word_parser(words: dict[str, str]) -> tuple[Callable[..., Parsed], Callable[..., Parsed]]:
    """Strict and lenient parsers for 'Reply with exactly one word: A or B' prompts.

    ``words`` maps the word the prompt asks for (upper case) to the canonical label. Case is not format:
    strict reads "Yes" as YES; anything around the word ("YES.") is for lenient, which a strict failure names.
    """
    expected = " or ".join(words)
    token = re.compile(r"\b(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b", re.IGNORECASE)

    def strict(text: str | None, *, truncated: bool = False) -> Parsed:
        if (early := _precheck(text, truncated=truncated)) is not None:
            return early
        word = text.strip().upper()
        if word in words:
            return Parsed(label=words[word])
        read = lenient(text, truncated=truncated).label
        hint = f" (the lenient parse reads {read!r})" if read is not None else ""
        return _fail_reason(text, truncated=truncated, detail=f"expected exactly {expected}{hint}")

    def lenient(text: str | None, *, truncated: bool = False) -> Parsed:
        if (early := _precheck(text, truncated=truncated)) is not None:
            return early
        cleaned = _clean(text)
        first_line = cleaned.splitlines()[0].strip(" \t.:!\"'`*") if cleaned else ""
        if first_line.upper() in words:
            return Parsed(label=words[first_line.upper()])
        found = {m.upper() for m in token.findall(cleaned)}
        if len(found) == 1:
            return Parsed(label=words[found.pop()])
        detail = f"both of {expected} present" if found else f"none of {expected} found"
        return _fail_reason(text, truncated=truncated, detail=detail)

    return strict, lenient


# ---------------------------------------------------------------- Identify JSON
def _identify_fields(obj: object) -> tuple[int, int] | str:
    """Validate ``{"flag": 0|1, "first_recognition_turn": int}``; return (flag, turn) or a detail."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    flag, turn = obj.get("flag"), obj.get("first_recognition_turn")
    if isinstance(flag, bool) or flag not in (0, 1):
        return f"flag must be 0 or 1, got {flag!r}"
    if isinstance(turn, bool) or not isinstance(turn, int):
        return f"first_recognition_turn must be an int, got {turn!r}"
    if flag == 0 and turn != -1:
        return f"flag=0 needs first_recognition_turn=-1, got {turn}"
    if flag == 1 and turn < 0:
        return f"flag=1 needs first_recognition_turn >= 0, got {turn}"
    return flag, turn


def _identify_label(fields: tuple[int, int]) -> Parsed:
    flag, turn = fields
    return Parsed(label="yes" if flag == 1 else "no", first_turn=turn)


def identify_strict(text: str | None, *, truncated: bool = False) -> Parsed:
    """The whole output is one JSON object with exactly the two fields, consistent."""
    if (early := _precheck(text, truncated=truncated)) is not None:
        return early
    try:
        obj = json.loads(text.strip())
    except json.JSONDecodeError:
        return _fail_reason(text, truncated=truncated, detail="not a single JSON object")
    if isinstance(obj, dict) and set(obj) != {"flag", "first_recognition_turn"}:
        return _unscored("wrong_format", f"fields {sorted(obj)} != ['first_recognition_turn', 'flag']")
    fields = _identify_fields(obj)
    return _unscored("wrong_format", fields) if isinstance(fields, str) else _identify_label(fields)


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


def _coerce_int(value: object) -> object:
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def identify_lenient(text: str | None, *, truncated: bool = False) -> Parsed:
    """The first JSON object anywhere (after think blocks and fences) with the two fields.

    Accepts integer-valued strings/floats and a missing turn when flag=0 (read as -1);
    still refuses an inconsistent flag/turn pair rather than repairing it.
    """
    if (early := _precheck(text, truncated=truncated)) is not None:
        return early
    cleaned = _clean(text)
    for candidate in _JSON_OBJECT.findall(cleaned):
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or "flag" not in obj:
            continue
        obj = {k: _coerce_int(v) for k, v in obj.items()}
        if obj.get("flag") == 0 and "first_recognition_turn" not in obj:
            obj["first_recognition_turn"] = -1
        fields = _identify_fields(obj)
        return _unscored("wrong_format", fields) if isinstance(fields, str) else _identify_label(fields)
    return _fail_reason(text, truncated=truncated, detail="no JSON object with a flag field")


# ---------------------------------------------------------------- Aggarwal DECISION lines
# Aggarwal (004_*, section 2 "Parsing" and Appendix C): the strict parser accepts only a
# line beginning "DECISION:"; the semantic parser also RESPONSE:, FINAL DECISION:,
# VERDICT:, ACTION:, CHOICE:, ANS:. Neither infers a decision from prose. The three
# decisions stay apart: CALL_TOOL is a non-commitment but not a decline (the paper's J
# counts declines only, App. D Table 6), so folding it would lose the decision table.
_DECISION_VALUES = ("ANSWER", "CALL_TOOL", "DECLINE")
_STRICT_PREFIXES = ("DECISION",)
_SEMANTIC_PREFIXES = ("DECISION", "RESPONSE", "FINAL DECISION", "VERDICT", "ACTION", "CHOICE", "ANS")
_ANSWER_TAG = re.compile(r"</?answer>", re.IGNORECASE)


def _decision_parser(prefixes: tuple[str, ...]) -> Callable[..., Parsed]:
    line = re.compile(
        r"^\s*(?:" + "|".join(re.escape(p) for p in prefixes) + r")\s*:\s*([A-Z_]+)\b", re.MULTILINE
    )

    def parse(text: str | None, *, truncated: bool = False) -> Parsed:
        if (early := _precheck(text, truncated=truncated)) is not None:
            return early
        match = line.search(_ANSWER_TAG.sub("\n", text))
        if match is None:
            return _fail_reason(text, truncated=truncated, detail=f"no line starting {' / '.join(p + ':' for p in prefixes)}")
        value = match.group(1)
        if value not in _DECISION_VALUES:
            return _unscored("wrong_format", f"decision {value!r} is not ANSWER, CALL_TOOL or DECLINE")
        return Parsed(label=value)

    return parse


@dataclass(frozen=True, kw_only=True)
class OutputKind:
    """A registered output format: its label scheme and its two parsers."""

    name: str
    scheme: str
    strict: Callable[..., Parsed]
    lenient: Callable[..., Parsed]
    description: str
    choices: tuple[str, ...] = ()
    """The whole outputs a constrained decoder may produce (a llama-server grammar); empty: unconstrained."""
    json_schema: Mapping[str, Any] | None = None
    """The output's JSON shape for constrained decoding (named after the scheme)."""
    object_schema: Mapping[str, Any] | None = None
    """The same with an object at the root, as hosted structured outputs need."""


OUTPUT_KINDS: Registry[OutputKind] = Registry("output kind")


def register_output_kind(kind: OutputKind) -> None:
    """Add an output format (built-ins register through here like third-party ones)."""
    OUTPUT_KINDS.register(kind.name, kind)


# The two consistent shapes of an Identify verdict (App. A.3): flag 0 with turn -1, or
# flag 1 with a turn index; the schema forbids the inconsistent pairs the parser rejects.
_IDENTIFY_SCHEMA = {
    "anyOf": [
        {"type": "object", "properties": {"flag": {"const": 0}, "first_recognition_turn": {"const": -1}},
         "required": ["flag", "first_recognition_turn"], "additionalProperties": False},
        {"type": "object", "properties": {"flag": {"const": 1}, "first_recognition_turn": {"type": "integer", "minimum": 0}},
         "required": ["flag", "first_recognition_turn"], "additionalProperties": False},
    ],
}
# Hosted structured outputs need an object at the root, so there only the field types are fixed.
_IDENTIFY_OBJECT_SCHEMA = {
    "type": "object",
    "properties": {"flag": {"type": "integer", "enum": [0, 1]}, "first_recognition_turn": {"type": "integer"}},
    "required": ["flag", "first_recognition_turn"],
    "additionalProperties": False,
}


def _register_builtins() -> None:
    words = {
        "yes_no": ("escalate", {"YES": "yes", "NO": "no"}, "one word YES or NO"),
        "correct_incorrect": ("correctness", {"CORRECT": "correct", "INCORRECT": "incorrect"}, "one word CORRECT or INCORRECT"),
        "refusal_claim": ("refusal", {"REFUSAL": "refusal", "CLAIM": "claim"}, "one word REFUSAL or CLAIM"),
        "milestone_yes_no": ("milestone", {"YES": "yes", "NO": "no"}, "one word YES or NO (ASA milestone met)"),
        "ehq4": ("ehq4", {w: w for w in ("ABSTAIN", "HEDGE", "CONFIDENT_CORRECT", "CONFIDENT_WRONG")},
                 "one EHQ section 3.3 class name"),
    }
    unconstrained = {"milestone_yes_no"}  # released without a grammar: one now would change its cache keys
    for name, (scheme, mapping, description) in words.items():
        strict, lenient = _word_parser(mapping)
        register_output_kind(OutputKind(name=name, scheme=scheme, strict=strict, lenient=lenient, description=description,
                                        choices=() if name in unconstrained else tuple(mapping)))
    register_output_kind(OutputKind(name="identify_json", scheme="identify", strict=identify_strict,
                                    lenient=identify_lenient,
                                    description='JSON {"flag": 0|1, "first_recognition_turn": int}',
                                    json_schema=_IDENTIFY_SCHEMA, object_schema=_IDENTIFY_OBJECT_SCHEMA))
    register_output_kind(OutputKind(name="decision", scheme="decision", strict=_decision_parser(_STRICT_PREFIXES),
                                    lenient=_decision_parser(_SEMANTIC_PREFIXES),
                                    choices=tuple(f"DECISION: {d}" for d in _DECISION_VALUES),
                                    description="Aggarwal DECISION line (strict: DECISION: only; lenient = semantic prefixes)"))


_register_builtins()


def get_output_kind(name: str) -> OutputKind:
    from samples import InputError

    # A name is typed on the command line and in study files: its case does not matter.
    found = [key for key in OUTPUT_KINDS if key.casefold() == name.strip().casefold()]
    if len(found) != 1:
        raise InputError(f"unknown output kind {name!r}; known: {OUTPUT_KINDS.names()}")
    return OUTPUT_KINDS.get_one(found[0])


@functools.lru_cache(maxsize=4096)
def parse_output(output_kind: str, text: str | None, *, mode: ParseMode, truncated: bool = False) -> ParseOutcome:
    """Run both parsers of ``output_kind`` on ``text``; ``mode`` picks the reported one.

    Parsing is pure, and judges repeat the same few outputs, so results are memoised.
    """
    kind = get_output_kind(output_kind)
    return ParseOutcome(
        strict=kind.strict(text, truncated=truncated), lenient=kind.lenient(text, truncated=truncated), mode=mode
    )
