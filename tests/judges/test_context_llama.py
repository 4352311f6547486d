"""A unit longer than the real llama-server's context (issue 25), on the session's server (8,192 tokens over 4
slots: 2,048 a request): unscored with its reason, counted, not retried; the exit status says so; the dry run,
given the server's own state file, warns before any call. tests/judges/test_context.py checks the same against
the fault server; this is the server itself."""

from __future__ import annotations

import json
import subprocess

import pytest

from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels
from samples.layout import StudyLayout
from tests.judges.cli_runs import REPO, command, env, write_units
from tests.judges.units import escalate_unit

pytestmark = [pytest.mark.llama, pytest.mark.timeout(900)]

LONG = "The bridge opened in 1971 after a decade of delays and three changes of contractor. " * 120


def _config(path, base_url: str) -> str:
    path.write_text(f'[[judge]]\nname = "small"\nprompt = "ise-escalate"\nprovider = "local"\nmodel = "smollm2"\n'
                    f'base_url = "{base_url}/v1"\nmax_retries = 3\nbackoff_s = 0.05\n'
                    'params = { max_tokens = 8, temperature = 0.0, seed = 7 }\n')
    return path


def test_a_unit_past_the_real_servers_context_is_unscored_and_said(llama_server, tmp_path):
    assert llama_server.ctx_size // llama_server.parallel == 2048
    units = [escalate_unit("traj-fits", "The bridge opened in 1971."), escalate_unit("traj-long", LONG)]
    assert len(LONG) / 4 > 2048  # about 2,500 tokens at four characters a token, past one slot
    study, unit_file = tmp_path / "study", write_units(tmp_path / "units.jsonl", units)
    config = _config(tmp_path / "judges.toml", llama_server.base_url)
    run = subprocess.run(command(study, unit_file, config), cwd=REPO, env=env(), capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 1, run.stderr
    assert "small: 1 unit(s) did not fit the server's context and are unscored (context_exceeded)" in run.stderr
    stats = json.loads(run.stdout)["judges"][0]
    log = StudyLayout.of(study).judge_label_log
    assert stats["unscored_reasons"] == {"context_exceeded": 1} and stats["failed"] == 0, (
        json.dumps(stats), log.read_text() if log.exists() else "")
    assert stats["ok"] + stats["unscored"] == 2 and stats["calls"] == 2  # the long unit asked once, not retried
    rows = {row.unit_id: row for row in read_labels(StudyLayout.of(study).judge_labels).values()}
    long = rows[units[1].unit_id]
    assert long.label is None and long.parse_status == "unscored"
    reason = long.unscored_reason
    assert reason.startswith("context_exceeded: the request needs ") and reason.endswith(
        "tokens; the server's context holds 2048 per request"), reason
    needed = int(reason.split("needs ")[1].split(" ")[0])  # the server's own token count
    assert needed > 2048
    assert rows[units[0].unit_id].unscored_reason != reason


def test_the_dry_run_warns_with_the_real_servers_context(llama_server, tmp_path, monkeypatch):
    """The state file the session's server wrote (its context per slot), read as `accord judges serve`'s: the
    dry run counts the long unit as over the context and calls nothing."""
    from judges.local_server import run_dir

    state = json.loads((run_dir() / f"{llama_server.name}.json").read_text())
    assert state["context_per_slot"] == 2048
    served = tmp_path / "run"
    served.mkdir()
    (served / "llama-server.json").write_text(json.dumps(state))
    monkeypatch.setenv("ACCORD_RUN_DIR", str(served))
    judge = build_judge({"prompt": "ise-escalate", "provider": "local", "model": "smollm2",
                         "params": {"max_tokens": 8}})  # no base_url: the served one
    units = [escalate_unit("traj-fits", "The bridge opened in 1971."), escalate_unit("traj-long", LONG)]
    paths = StudyPaths.in_dir(tmp_path / "study")
    (stats,) = run_judges(units, [judge], paths, dry_run=True).judges
    assert (stats.context_tokens, stats.over_context, stats.calls) == (2048, 1, 2)
    assert not paths.labels.exists() or not read_labels(paths.labels)
