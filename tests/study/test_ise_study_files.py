"""The shipped ISE study files (data/studies/ise/) run the paper's judges as the paper ran them, checked on the request
each provider builds (tests/study/test_study_file.py checks the study files' settings and the D.2 plans' strata).

Seed 000, App. D: the judge prompts "are sent to gpt-5 with no max_tokens cap and temperature = 1"; seed 001:
"sent to GPT-5 without a max_tokens cap at temperature 1". The request each judge would send is built here by the
provider itself (never sent), so a setting the provider adds or drops is seen, not only the study file's text.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from apps.study import load_study_file
from judges.providers.base import make_provider

REPO = Path(__file__).resolve().parents[2]
STUDIES = sorted((REPO / "data" / "studies" / "ise").glob("*.toml"))
CAPS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def test_both_ise_studies_are_shipped():
    assert [p.name for p in STUDIES] == ["escalate.toml", "identify.toml"]


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_gpt5_judges_run_at_temperature_1_with_no_output_cap(path, tmp_path):
    study = load_study_file(path, output=tmp_path / "out")
    gpt5 = [spec for spec in study.judge_specs() if spec.model == "gpt-5"]
    assert {spec.name.split("@")[0] for spec in gpt5} == {"identify", "escalate", "correctness"}
    for spec in gpt5:
        assert spec.params.get("temperature") == 1 and not set(CAPS) & set(spec.params), spec.name
        provider = make_provider(spec.provider, replace(spec.connection, base_url="http://127.0.0.1:9"))
        request = provider.build_request(model=spec.model, system="s", user="u", params=spec.params,
                                         output_kind=spec.prompt.output, sample_index=0, unit=None)
        body = json.loads(json.dumps(request["body"]))
        assert body["temperature"] == 1 and not set(CAPS) & set(body), (spec.name, body)


def test_every_shipped_ise_judge_builds_its_request(tmp_path):
    """escalate@sonnet (accord's second Escalate judge for the disagreement negatives, not the paper's) must name a
    cap: the Anthropic Messages API requires one, and the provider refuses a request without it."""
    for path in STUDIES:
        for spec in load_study_file(path, output=tmp_path / path.stem).judge_specs():
            provider = make_provider(spec.provider, replace(spec.connection, base_url="http://127.0.0.1:9"))
            request = provider.build_request(model=spec.model, system="s", user="u", params=spec.params,
                                             output_kind=spec.prompt.output, sample_index=0, unit=None)
            assert request["body"]["temperature"] == 1, spec.name
            if spec.provider == "anthropic":
                assert request["body"]["max_tokens"] == 16000
