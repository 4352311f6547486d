"""Hosted APIs (OpenAI, Anthropic): run only with a key in the environment, skipped otherwise."""

from __future__ import annotations

import os

import pytest

from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels
from tests.judges.units import escalate_unit, identify_unit

pytestmark = pytest.mark.live

HOSTED = [
    ("openai", "OPENAI_API_KEY", os.environ.get("ACCORD_LIVE_OPENAI_MODEL", "gpt-5-mini"), {}),
    ("anthropic", "ANTHROPIC_API_KEY", os.environ.get("ACCORD_LIVE_ANTHROPIC_MODEL", "claude-sonnet-4-5"), {"max_tokens": 1024}),
]


@pytest.mark.parametrize(("provider", "env", "model", "params"), HOSTED, ids=[h[0] for h in HOSTED])
def test_hosted_judge_answers_the_ise_prompts(tmp_path, provider, env, model, params) -> None:
    if not os.environ.get(env):
        pytest.skip(f"live test: set {env} to run it")
    units = [escalate_unit(), identify_unit()]
    judges = [build_judge({"prompt": p, "provider": provider, "model": model, "params": params, "name": p, "max_retries": 2})
              for p in ("ise-escalate", "ise-identify")]
    summary = run_judges(units, judges, StudyPaths.in_dir(tmp_path))
    table = read_labels(tmp_path / "labels.jsonl")
    assert len(table) == 2
    for row in table.values():
        assert row.parse_status == "ok" or row.unscored_reason
        assert row.input_tokens and row.input_tokens > 100
    assert all(j.failed == 0 for j in summary.judges)
