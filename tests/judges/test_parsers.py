"""Parsers: strict and lenient readings, unscored reasons, and the Aggarwal parsers on real outputs."""

from __future__ import annotations

import json

import pytest

from judges.parsers import OUTPUT_KINDS, parse_output


@pytest.mark.parametrize(
    ("kind", "text", "strict", "lenient"),
    [
        ("yes_no", "YES", "yes", "yes"),
        ("yes_no", "NO", "no", "no"),
        ("yes_no", "Yes.", None, "yes"),
        ("yes_no", "<think>The final turn names two sources.</think>\n**YES**", None, "yes"),
        ("yes_no", "Answer: NO", None, "no"),
        ("correct_incorrect", "INCORRECT", "incorrect", "incorrect"),
        ("correct_incorrect", "The prediction is CORRECT.", None, "correct"),
        ("refusal_claim", "CLAIM", "claim", "claim"),
        ("refusal_claim", "refusal", "refusal", "refusal"),  # case is not format (issue #25)
        ("yes_no", "Yes", "yes", "yes"),
        ("yes_no", " no\n", "no", "no"),
        ("yes_no", "YES.", None, "yes"),
        ("ehq4", "CONFIDENT_WRONG", "CONFIDENT_WRONG", "CONFIDENT_WRONG"),
        ("ehq4", "Label: HEDGE", None, "HEDGE"),
    ],
)
def test_word_outputs(kind: str, text: str, strict: str | None, lenient: str | None) -> None:
    outcome = parse_output(kind, text, mode="lenient")
    assert outcome.strict.label == strict
    assert outcome.lenient.label == lenient
    assert outcome.label == lenient
    if strict is None:
        assert outcome.strict.reason.startswith("wrong_format")


def test_a_strict_failure_names_what_the_lenient_parse_reads() -> None:
    outcome = parse_output("yes_no", "YES.", mode="strict")
    assert outcome.label is None
    assert outcome.reason == "wrong_format: expected exactly YES or NO (the lenient parse reads 'yes')"
    assert parse_output("yes_no", "perhaps", mode="strict").reason == "wrong_format: expected exactly YES or NO"


def test_output_kind_names_are_read_whatever_their_case() -> None:
    from judges.parsers import get_output_kind
    from samples.errors import InputError

    assert get_output_kind("YES_NO").name == get_output_kind(" Yes_No ").name == "yes_no"
    with pytest.raises(InputError, match="unknown output kind 'yes-no'"):
        get_output_kind("yes-no")


def test_incorrect_is_not_read_as_correct() -> None:
    # 'INCORRECT' contains 'CORRECT': whole-word matching must not see both.
    assert parse_output("correct_incorrect", "I think it is INCORRECT", mode="lenient").label == "incorrect"


@pytest.mark.parametrize(
    ("text", "truncated", "reason"),
    [
        ("", False, "empty"),
        ("   \n", False, "empty"),
        ("", True, "truncated"),
        ("<think>The agent names a conflict between", False, "truncated"),
        ("YE", True, "truncated"),
        ("I'm sorry, but I cannot evaluate this trajectory.", False, "refusal_to_judge"),
        ("As an AI, I won't judge this.", False, "refusal_to_judge"),
        ("YES or NO, hard to say", False, "wrong_format"),
        ("Maybe", False, "wrong_format"),
    ],
)
def test_unscored_reasons(text: str, truncated: bool, reason: str) -> None:
    outcome = parse_output("yes_no", text, mode="lenient", truncated=truncated)
    assert outcome.label is None
    assert outcome.status == "unscored"
    assert outcome.reason.split(":")[0] == reason
    assert outcome.strict.label is None


@pytest.mark.parametrize(
    ("text", "strict", "lenient"),
    [
        ('{"flag": 1, "first_recognition_turn": 1}', ("yes", 1), ("yes", 1)),
        ('{"flag": 0, "first_recognition_turn": -1}', ("no", -1), ("no", -1)),
        ('```json\n{"flag": 1, "first_recognition_turn": 2}\n```', None, ("yes", 2)),
        ('Here is my verdict: {"flag": "1", "first_recognition_turn": "0"}', None, ("yes", 0)),
        ('{"flag": 0}', None, ("no", -1)),
        ('{"flag": 1, "first_recognition_turn": 1, "why": "names two sources"}', None, ("yes", 1)),
        # inconsistent pairs are refused in both modes, never repaired
        ('{"flag": 0, "first_recognition_turn": 2}', None, None),
        ('{"flag": 1, "first_recognition_turn": -1}', None, None),
        ('{"flag": 2, "first_recognition_turn": 1}', None, None),
        ('{"flag": true, "first_recognition_turn": 1}', None, None),
        ("flag=1, first turn 2", None, None),
    ],
)
def test_identify_json(text: str, strict, lenient) -> None:
    outcome = parse_output("identify_json", text, mode="strict")
    assert (outcome.strict.label, outcome.strict.first_turn) == (strict or (None, None))
    assert (outcome.lenient.label, outcome.lenient.first_turn) == (lenient or (None, None))
    assert outcome.label == (strict[0] if strict else None)
    if lenient is None:
        assert outcome.lenient.reason.startswith("wrong_format")


def test_every_output_kind_maps_into_its_scheme() -> None:
    from samples.schemes import SCHEMES

    samples = {"yes_no": "YES", "correct_incorrect": "CORRECT", "refusal_claim": "CLAIM", "ehq4": "HEDGE",
               "identify_json": '{"flag": 1, "first_recognition_turn": 0}', "decision": "DECISION: ANSWER", "milestone_yes_no": "NO"}
    assert set(samples) == set(OUTPUT_KINDS)
    for name, text in samples.items():
        kind = OUTPUT_KINDS[name]
        label = parse_output(name, text, mode="strict").label
        assert label in SCHEMES[kind.scheme].labels


def test_an_output_kinds_choices_are_exactly_its_schemes_labels() -> None:
    """The choices a constrained decoder is given (``OutputKind.choices``, asked by the llama-server
    grammar) each parse strictly, and together they give every label of the kind's scheme once."""
    from samples.schemes import SCHEMES

    constrained = {name: kind for name, kind in OUTPUT_KINDS.items() if kind.choices}
    # the prompts' reply words (judges/prompts/*.toml, Aggarwal App. C); milestone_yes_no is released without
    # a grammar and identify_json is constrained by its JSON shape instead
    assert sorted(constrained) == ["correct_incorrect", "decision", "ehq4", "refusal_claim", "yes_no"]
    for name, kind in constrained.items():
        labels = [parse_output(name, choice, mode="strict").label for choice in kind.choices]
        assert sorted(labels) == sorted(SCHEMES[kind.scheme].labels), name
    assert OUTPUT_KINDS["identify_json"].json_schema is not None and OUTPUT_KINDS["identify_json"].object_schema


def _paper_rule(raw: str, prefixes: tuple[str, ...]) -> str | None:
    """Aggarwal Appendix C, re-derived with plain string operations (independent of judges.parsers):
    read the first line that begins with one of the prefixes; the three decisions stay apart."""
    text = raw.replace("<answer>", "\n").replace("</answer>", "\n")
    for line in text.splitlines():
        stripped = line.strip()
        for prefix in prefixes:
            if stripped.startswith(prefix + ":"):
                value = stripped[len(prefix) + 1:].strip().split()[0] if stripped[len(prefix) + 1:].strip() else ""
                return value if value in ("ANSWER", "CALL_TOOL", "DECLINE") else "?"
    return None


def test_aggarwal_parsers_on_the_released_outputs(shared) -> None:
    rows = json.loads((shared / "data/aggarwal_calibration/data/scramfull_12models.json").read_text())
    assert len(rows) == 288
    semantic = ("DECISION", "RESPONSE", "FINAL DECISION", "VERDICT", "ACTION", "CHOICE", "ANS")
    unscored = 0
    for row in rows:
        raw = row["raw"] or ""
        outcome = parse_output("decision", raw, mode="strict")
        assert outcome.strict.label == _paper_rule(raw, ("DECISION",)), raw[:120]
        assert outcome.lenient.label == _paper_rule(raw, semantic), raw[:120]
        if outcome.label is None:
            unscored += 1
            assert outcome.reason.split(":")[0] in ("empty", "wrong_format")
    # Hand count from the file: 16 empty qwen outputs, 2 empty gemini outputs, one gemini
    # tool-call string and one deepseek '<answer>DECLINE' line without a prefix.
    assert sum(1 for r in rows if not (r["raw"] or "").strip()) == 18
    assert unscored == 20
    # CALL_TOOL survives the parser (hand count from the file: deepseek 22, gemini 12, llama 11,
    # haiku 7, sonnet 9, qwen 2, gpt-5.4 1).
    assert sum(parse_output("decision", r["raw"], mode="strict").label == "CALL_TOOL" for r in rows) == 64


def test_a_bare_decline_line_is_not_inferred() -> None:
    # Aggarwal: "Neither infers a decision from prose" (the deepseek row in the release).
    outcome = parse_output("decision", "<answer>DECLINE\nPROBABILITY_YES: NA\n</answer>", mode="lenient")
    assert outcome.strict.label is None and outcome.lenient.label is None
    assert parse_output("decision", "<answer>\nRESPONSE: ANSWER\n</answer>", mode="lenient").label == "ANSWER"
    assert parse_output("decision", "<answer>\nRESPONSE: ANSWER\n</answer>", mode="strict").label is None
