"""A unit that does not fit the server's context (issue 25): unscored with its reason, counted, not retried,
warned about by the dry run, and said by the exit status. Through `accord judge run` in a subprocess against
the fault server answering as llama-server does (tests/judges/fault_server.py: ``ctx``)."""

from __future__ import annotations

import json
import os
import subprocess

from judges.tables import read_labels
from samples.layout import StudyLayout
from tests.judges.cli_runs import REPO, command, env, write_units
from tests.judges.units import escalate_unit


def _config(path, base_url: str | None) -> str:
    where = f'base_url = "{base_url}/v1"\n' if base_url else ""  # no base_url: the server `accord judges serve` runs
    path.write_text(f'[[judge]]\nname = "small"\nprompt = "ise-escalate"\nprovider = "local"\nmodel = "m"\n{where}'
                    'max_retries = 3\nbackoff_s = 0.05\nparams = { max_tokens = 8 }\n')
    return path


def test_a_unit_past_the_context_is_unscored_counted_and_the_exit_status_says_so(fault_server, tmp_path):
    units = [escalate_unit("traj-fits", "The bridge opened in 1971."),
             escalate_unit("traj-long", "The bridge opened in 1971. #fault:ctx:3000:2048")]
    study, unit_file = tmp_path / "study", write_units(tmp_path / "units.jsonl", units)
    config = _config(tmp_path / "judges.toml", fault_server.base_url)
    run = subprocess.run(command(study, unit_file, config), cwd=REPO, env=env(), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1, run.stderr
    assert "small: 1 unit(s) did not fit the server's context and are unscored (context_exceeded)" in run.stderr
    stats = json.loads(run.stdout)["judges"][0]
    assert (stats["ok"], stats["unscored"], stats["unscored_reasons"]) == (1, 1, {"context_exceeded": 1})
    rows = {row.unit_id: row for row in read_labels(StudyLayout.of(study).judge_labels).values()}
    long = rows[units[1].unit_id]
    assert long.label is None and long.parse_status == "unscored"
    assert long.unscored_reason == ("context_exceeded: the request needs 3000 tokens; the server's context holds "
                                    "2048 per request")
    attempts = [a for a in fault_server.attempts if "#fault:ctx" in a.user]
    assert len(attempts) == 1  # a 400 is final: the same request cannot fit on a retry
    # A rerun leaves it unscored and does not ask again (unlike a call that failed): nothing new to say.
    again = subprocess.run(command(study, unit_file, config), cwd=REPO, env=env(), capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert len([a for a in fault_server.attempts if "#fault:ctx" in a.user]) == 1


def test_the_dry_run_warns_about_units_past_the_local_context(fault_server, tmp_path):
    """The server `accord judges serve` started records its context per slot; the dry run compares each unit's
    estimated prompt (4 characters a token) plus the output cap with it, before any call."""
    from judges.spec import build_judge

    system = build_judge({"prompt": "ise-escalate", "provider": "local", "model": "m", "base_url": "http://x"}).prompt.system
    # The short unit's message (about 7 tokens) plus the system prompt and the output cap of 8 fit in this
    # context; the long one's (about 540 tokens) does not.
    context = int(len(system) / 4) + 8 + 100
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # The running server's state file, as LlamaServer.start writes it (pid: a live process, this test's).
    (run_dir / "llama-server.json").write_text(json.dumps({"pid": os.getpid(), "base_url": fault_server.base_url,
                                                    "models": ["m"], "log": "", "context_per_slot": context}))
    short = escalate_unit("traj-short", "The bridge opened in 1971.")
    long = escalate_unit("traj-long", "The bridge opened in 1971. " * 80)  # 2,160 characters: about 540 tokens
    unit_file = write_units(tmp_path / "units.jsonl", [short, long])
    config = _config(tmp_path / "judges.toml", None)
    environment = {**env(), "ACCORD_RUN_DIR": str(run_dir)}
    dry = subprocess.run([*command(tmp_path / "study", unit_file, config)[:-1], "--dry-run"], cwd=REPO,
                         env=environment, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert (f"warning: small: about 1 unit(s) need more than the {context} tokens of context the server gives one "
            "request" in dry.stderr), dry.stderr
    assert fault_server.attempts == []
