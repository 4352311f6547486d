"""Real open-weight models on a local llama-server, through the official openai and anthropic SDKs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from judges.parsers import UNSCORED_REASONS
from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels
from samples.schemes import SCHEMES
from tests.judges.units import correctness_unit, escalate_unit, identify_unit, response_unit

pytestmark = [pytest.mark.llama, pytest.mark.timeout(1800)]

MODELS = ("smollm2", "gemma3-270m")
PROMPTS = ("ise-identify", "ise-escalate", "ise-correctness", "ise-refusal")
REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Running (a zombie awaiting a reaper counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _units():
    return [identify_unit("local-1"), escalate_unit("local-1"), correctness_unit("local-1"),
            response_unit("local-1", "I believe the Jade Bridge opened in 1971.")]


def _judges(base_url: str, api: str) -> list:
    return [
        build_judge({"prompt": prompt, "provider": "local", "model": model, "api": api, "base_url": base_url,
                     "name": f"{prompt}@{model}/{api}", "parse_mode": "lenient", "timeout_s": 120, "concurrency": 4,
                     # ISE uses temperature 1 and no cap; these tiny models need a cap to stop on the
                     # unconstrained Anthropic path, and temperature 0 keeps the test reproducible.
                     "params": {"temperature": 0.0, "max_tokens": 32 if prompt == "ise-identify" else 8, "seed": 7}})
        for model in MODELS for prompt in PROMPTS
    ]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_both_models_answer_every_prompt_kind_and_the_cache_makes_reruns_free(llama_server, tmp_path, api: str) -> None:
    units = _units()
    judges = _judges(llama_server.base_url, api)
    paths = StudyPaths.in_dir(tmp_path)
    summary = run_judges(units, judges, paths)
    table = read_labels(paths.labels)
    assert len(table) == len(MODELS) * len(PROMPTS)  # one unit of each prompt's kind per judge
    for judge in judges:
        stats = next(s for s in summary.judges if s.judge == judge.name)
        assert stats.failed == 0, judge.name
        assert stats.calls == 1 and stats.input_tokens > 100  # the system prompt alone is longer
        assert stats.cost_usd == 0.0  # prices.toml: local models cost nothing
    for row in table.values():
        judge = next(j for j in judges if j.name == row.judge)
        assert row.raw_output is not None
        if row.parse_status == "ok":
            assert row.label in SCHEMES[judge.prompt.scheme].labels
        else:
            assert row.label is None and row.unscored_reason.split(":")[0] in UNSCORED_REASONS
    if api == "openai":
        # grammar / json_schema constrained decoding: every output parses strictly
        assert all(row.label_strict is not None for row in table.values()), [r.raw_output for r in table.values()]

    # Second run against a closed port: any call would fail, so all must come from the cache.
    dead = _judges("http://127.0.0.1:9", api)
    second = StudyPaths.in_dir(tmp_path / "rerun", cache=paths.cache)
    again = run_judges(units, dead, second)
    assert all((s.calls, s.failed, s.cache_hits) == (0, 0, 1) for s in again.judges)
    rerun = read_labels(second.labels)
    assert {k: (r.label, r.raw_output) for k, r in rerun.items()} == {k: (r.label, r.raw_output) for k, r in table.items()}


def test_serve_and_stop_through_the_cli() -> None:
    name = "llama-server-cli-test"
    run_dir = REPO / ".run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("ACCORD_RUN_DIR", None)
    served = subprocess.run([sys.executable, "-m", "apps.cli", "judges", "serve", "--name", name, "--json", "--parallel", "2"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert served.returncode == 0, served.stderr
    info = json.loads(served.stdout)
    pid = info["pid"]
    try:
        assert (run_dir / f"{name}.pid").read_text() == str(pid)
        state = json.loads((run_dir / f"{name}.json").read_text())
        assert state["base_url"] == info["base_url"] and set(state["models"]) == set(MODELS)
        judge = build_judge({"prompt": "ise-escalate", "provider": "local", "model": "smollm2", "base_url": state["base_url"],
                             "params": {"temperature": 0.0, "max_tokens": 4}})
        with tempfile.TemporaryDirectory() as tmp:
            summary = run_judges([escalate_unit("served")], [judge], StudyPaths.in_dir(tmp))
        assert summary.judges[0].calls == 1 and summary.judges[0].failed == 0
    finally:
        stopped = subprocess.run([sys.executable, "-m", "apps.cli", "judges", "stop", "--name", name, "--json"], cwd=REPO,
                                 env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(stopped.stdout) == {"stopped": True}
    assert not _alive(pid)
    assert not (run_dir / f"{name}.pid").exists()
