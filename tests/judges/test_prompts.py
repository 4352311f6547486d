"""Prompt files: the four ISE prompts are verbatim; user prompt files load, bad ones are refused clearly."""

from __future__ import annotations

import hashlib
import re

import pytest

from judges.prompts import builtin_prompts, load_prompt, resolve_prompt
from judges.spec import build_judge
from samples.errors import InputError

# The only edits made to the extracted paper text (judges/prompts/README.md lists them).
EXTRACTION_FIXES = {"−1-1": "-1", "I’l need": "I’ll need"}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_shipped_prompts_are_the_papers_text(shared) -> None:
    (paper,) = (shared / "seeds").glob("000_*.txt")
    source = _flat(paper.read_text())
    for wrong, right in EXTRACTION_FIXES.items():
        source = source.replace(wrong, right)
    prompts = builtin_prompts()
    # asa-milestone is accord's wording (the ASA paper prints no judge prompt): not checked against a seed.
    assert set(prompts) == {"ise-identify", "ise-escalate", "ise-correctness", "ise-refusal", "asa-milestone"}
    for spec in (spec for name, spec in prompts.items() if name.startswith("ise-")):
        assert _flat(spec.system) in source, spec.name
        assert spec.sha256 == hashlib.sha256(open(spec.path, "rb").read()).hexdigest()
    assert prompts["ise-identify"].output == "identify_json"
    assert prompts["ise-identify"].unit_kinds == ("identify_trajectory", "identify_turn")
    assert prompts["ise-escalate"].unit_kinds == ("escalate_final",)
    assert prompts["ise-correctness"].system.endswith("Reply with exactly one word: CORRECT or INCORRECT.")


def test_a_user_prompt_file_becomes_a_judge(tmp_path) -> None:
    path = tmp_path / "my-escalate.toml"
    path.write_text('name = "my-escalate"\nversion = "2"\noutput = "yes_no"\nunit_kinds = ["escalate_final"]\n'
                    'source = "our lab, 2026"\nsystem = """Does the answer name a conflict? Reply YES or NO."""\n')
    judge = build_judge({"prompt": str(path), "provider": "local", "model": "smollm2", "base_url": "http://127.0.0.1:9"})
    assert judge.prompt.name == "my-escalate" and judge.output == "yes_no"
    assert judge.name == "my-escalate@local:smollm2"
    before = judge.fingerprint("units", "v")
    path.write_text(path.read_text().replace("YES or NO", "exactly YES or NO"))
    edited = build_judge({"prompt": str(path), "provider": "local", "model": "smollm2", "base_url": "http://127.0.0.1:9"})
    assert edited.fingerprint("units", "v") != before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('name = "x"\n', "missing field"),
        ('name = "x"\nversion = "1"\noutput = "stars"\nunit_kinds = ["response"]\nsource = "s"\nsystem = "s"\n', "unknown output kind"),
        ('name = "x"\nversion = "1"\noutput = "yes_no"\nunit_kinds = ["essay"]\nsource = "s"\nsystem = "s"\n', "unit_kinds"),
        ('name = "x"\nversion = "1"\noutput = "yes_no"\nunit_kinds = ["response"]\nsource = "s"\nsystem = "s"\nscheme = "refusal"\n', "scheme"),
        ("name = [", "not a valid TOML"),
    ],
)
def test_bad_prompt_files_name_the_problem(tmp_path, body: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(InputError, match=message) as error:
        load_prompt(path)
    assert str(path) in str(error.value)


def test_unknown_prompt_name() -> None:
    with pytest.raises(InputError, match="ise-identify"):
        resolve_prompt("identify-v9")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"prompt": "ise-escalate", "provider": "gemini", "model": "m"}, "provider 'gemini'"),
        ({"prompt": "ise-escalate", "provider": "local", "model": "m", "parse_mode": "fuzzy"}, "parse_mode"),
        ({"prompt": "ise-escalate", "provider": "local", "model": "m", "samples": 0}, "samples must be an integer from 1 to 1000, got 0"),
        ({"prompt": "ise-escalate", "provider": "local", "model": "m", "params": {"temp": 1}}, "params \\['temp'\\] not allowed"),
        ({"prompt": "ise-escalate", "provider": "local", "model": "m", "concurrency": -2}, "concurrency"),
        ({"provider": "rule", "model": "vibes"}, "rule model 'vibes'"),
        ({"provider": "local", "model": "m"}, "prompt is required"),
    ],
)
def test_judge_config_errors_name_field_and_value(config: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build_judge(config, where="judges.toml [[judge]] #1")
