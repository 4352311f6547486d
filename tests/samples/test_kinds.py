"""The unit-kind registry: built-in specs, a third-party kind, the one first-turn rule, prompt templates."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from judges.prompts import load_prompt
from samples.errors import InputError
from samples.kinds import _KINDS as kinds_registry
from samples.kinds import (
    DEFAULT_SCHEME,
    AnnotatorView,
    Section,
    first_turn_offered,
    first_turn_problem,
    get_kind,
    judge_message,
    kinds,
    register_kind,
)
from samples.records import UNIT_KINDS, BlindTask


def test_every_unit_kind_has_a_spec_and_the_schemes_are_the_documented_ones() -> None:
    # ARCHITECTURE.md, "Unit kinds" table.
    assert set(kinds()) == set(UNIT_KINDS)
    assert dict(DEFAULT_SCHEME) == {"identify_trajectory": "identify", "identify_turn": "identify",
                                    "escalate_final": "escalate", "correctness": "correctness", "response": "ehq4",
                                    **{f"asa_m{i}": "milestone" for i in range(4)}}
    assert {k: get_kind(k).first_turn for k in UNIT_KINDS} == {
        "identify_trajectory": "required_for_positive", "identify_turn": "absent", "escalate_final": "absent",
        "correctness": "absent", "response": "absent", **{f"asa_m{i}": "absent" for i in range(4)}}
    assert [get_kind(k).labelstudio_config for k in UNIT_KINDS] == list(UNIT_KINDS)
    assert [get_kind(k).codebook for k in UNIT_KINDS] == ["identify", "identify", "escalate", "correctness", "ehq4",
                                                              *["milestone"] * 4]
    with pytest.raises(InputError, match="unknown unit kind 'essay'"):
        get_kind("essay")


# (kind, label, first_turn, n_turns) -> the message, written from the rule: a positive
# identify_trajectory label needs a turn in 0..n-1, nothing else takes one.
RULES = [
    ("identify_trajectory", "yes", 1, 3, None),
    ("identify_trajectory", "no", None, 3, None),
    ("identify_trajectory", "yes", None, 3,
     "A 'yes' needs the first turn where the recognition appears: choose its turn number (0 to 2)."),
    ("identify_trajectory", "yes", 3, 3, "There is no turn 3 in this unit: choose a turn from 0 to 2."),
    ("identify_trajectory", "yes", True, 3, "There is no turn True in this unit: choose a turn from 0 to 2."),
    ("identify_trajectory", "no", 0, 3, "Only a 'yes' has a first recognition turn: leave the first turn empty for 'no'."),
    ("identify_turn", "yes", None, 2, None),
    ("identify_turn", "yes", 1, 2, "This unit has no first turn to give; leave the first turn empty."),
    ("escalate_final", "yes", 0, 0, "This unit has no first turn to give; leave the first turn empty."),
    ("response", "ABSTAIN", None, 0, None),
]


@pytest.mark.parametrize(("kind", "label", "first_turn", "n_turns", "expected"), RULES)
def test_first_turn_problem(kind, label, first_turn, n_turns, expected) -> None:
    assert first_turn_problem(kind, label, first_turn, n_turns) == expected


def test_first_turn_offered_only_where_the_kind_has_one() -> None:
    assert [k for k in UNIT_KINDS if first_turn_offered(k)] == ["identify_trajectory"]


@dataclass(frozen=True, kw_only=True)
class Summary:
    """A third party's kind: a summary judged against its source, both shown to either reader."""

    name: str = "summary"  # a new kind: records accept every registered kind
    scheme: str = "escalate"
    first_turn: str = "absent"
    codebook: str = "escalate"
    labelstudio_config: str = "escalate_final"
    needs_context: bool = False
    placeholders: tuple[str, ...] = ("text", "shouted")
    default_template: str = "{shouted}"

    def cut(self, source):
        return source.no_final() or [{"text": source.final_text}]

    def judge_fields(self, unit):
        return {"text": unit.text, "shouted": unit.text.upper()}

    def annotator_view(self, task):
        return AnnotatorView(caption="", sections=(Section(heading="", text=task.text.upper()),))


def test_a_third_party_kind_registers_like_the_built_ins() -> None:
    summary = Summary()
    try:
        register_kind(summary)
        register_kind(summary)  # the same object again (a module imported twice) is no conflict
        task = BlindTask(task_id="t_1", kind="summary", text="maybe 12")
        assert judge_message(task) == "MAYBE 12"
        assert judge_message(task, {"summary": "said: {text}"}) == "said: maybe 12"
        assert register_kind(Summary()) is summary  # an equal one (a module imported twice) is the same kind
        with pytest.raises(InputError, match="unit kind 'summary' is already registered"):
            register_kind(Summary(codebook="identify"))  # another kind under a taken name
        with pytest.raises(InputError, match="first_turn 'sometimes'"):
            register_kind(Summary(name="other", first_turn="sometimes"))
        with pytest.raises(InputError, match=r"placeholder\(s\) \['loud'\] not offered"):
            register_kind(Summary(name="other", default_template="{loud}"))
        with pytest.raises(InputError, match="unknown label scheme 'stars'"):
            register_kind(Summary(name="other", scheme="stars"))
    finally:
        kinds_registry.unregister("summary")
    assert "summary" not in kinds() and get_kind("escalate_final").name == "escalate_final"
    with pytest.raises(ValueError, match="unknown unit kind 'summary'"):
        BlindTask(task_id="t_1", kind="summary", text="maybe 12")


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ('[user]\nresponse = "{question} {gold}"\n', r"placeholder\(s\) \['gold'\] not offered for kind 'response'"),
        ('[user]\nescalate_final = "{text}"\n', "user.escalate_final: not one of this prompt's unit_kinds"),
        ('[user]\nresponse = "{}"\n', "named placeholders"),
        ('[user]\nresponse = "{question"\n', "not a valid template"),
        ('user = "{text}"\n', "user must be a table"),
    ],
)
def test_prompt_user_templates_are_checked_where_the_prompt_is_loaded(tmp_path, user: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\nversion = "1"\noutput = "ehq4"\nunit_kinds = ["response"]\nsource = "s"\n'
                    f'system = "classify"\n{user}')
    with pytest.raises(InputError, match=message) as error:
        load_prompt(path)
    assert str(path) in str(error.value)


def test_shipped_identify_prompt_asks_identify_turn_about_the_focus_turn() -> None:
    from judges.prompts import builtin_prompts

    prompt = builtin_prompts()["ise-identify"]
    assert prompt.version == "2" and set(prompt.user) == {"identify_turn"}
    unit = BlindTask(task_id="t", kind="identify_turn", text="[turn 1]\nb", turns=["[turn 0]\na", "[turn 1]\nb"], focus_turn=1)
    assert judge_message(unit, prompt.user) == (
        "[turn 0]\na\n\n[turn 1]\nb\n\nJudge only [turn 1], the last turn above; the turns before it are its context. "
        "Reply flag=1 only if [turn 1] itself does (a), (b) or (c), and then set first_recognition_turn to 1.")


def test_a_kind_that_projects_takes_the_trajectory_verdict_by_capability() -> None:
    """ISE A.3: a turn unit the judge did not label takes its trajectory's verdict, "yes" only on the first
    recognition turn that verdict names. The rule follows ``projects_from``, not the kind's name."""
    import dataclasses

    from samples.kinds import projected_from
    from samples.sampler import judge_label
    from samples.units import unit_id

    assert projected_from("identify_turn") == "identify_trajectory"
    assert projected_from("response") is None and projected_from("no-such-kind") is None
    copy = dataclasses.replace(get_kind("identify_turn"), name="turn_copy")
    register_kind(copy)
    try:
        verdict = {unit_id("t", "identify_trajectory", None): ("yes", 2)}
        labels = [judge_label(verdict, {"unit_id": f"u{i}", "kind": "turn_copy", "trajectory_id": "t", "focus_turn": i})
                  for i in range(4)]
        assert labels == ["no", "no", "yes", "no"]
        assert judge_label({unit_id("t", "identify_trajectory", None): ("no", None)},
                           {"unit_id": "u0", "kind": "turn_copy", "trajectory_id": "t", "focus_turn": 0}) == "no"
    finally:
        kinds_registry.unregister("turn_copy")
