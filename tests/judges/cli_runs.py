"""`python -m apps judge run` as a real subprocess against the fault server, and the checks
every kill/concurrency test makes on the study it leaves: nothing lost, nothing doubled."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from samples.layout import StudyLayout

REPO = Path(__file__).resolve().parents[2]
JUDGES = ("escalate-openai", "escalate-anthropic")


def write_config(path: Path, base_url: str, *, concurrency: int = 2, timeout_s: float = 5.0, max_retries: int = 3,
                 backoff_s: float = 0.05, max_backoff_s: float = 0.5) -> Path:
    """Two judges on the one fault server, one per wire API (each its own limiter)."""
    common = (f"concurrency = {concurrency}\ntimeout_s = {timeout_s}\nmax_retries = {max_retries}\n"
              f"backoff_s = {backoff_s}\nmax_backoff_s = {max_backoff_s}\n")
    path.write_text(
        f'[[judge]]\nname = "{JUDGES[0]}"\nprompt = "ise-escalate"\nprovider = "openai"\nmodel = "judge-m"\n'
        f'base_url = "{base_url}/v1"\n{common}\n'
        f'[[judge]]\nname = "{JUDGES[1]}"\nprompt = "ise-escalate"\nprovider = "anthropic"\nmodel = "judge-m"\n'
        f'base_url = "{base_url}"\nparams = {{ max_tokens = 8 }}\n{common}'
    )
    return path


def write_units(path: Path, units) -> Path:
    path.write_text("".join(u.model_dump_json() + "\n" for u in units))
    return path


def command(study: Path, units: Path, config: Path) -> list[str]:
    return [sys.executable, "-m", "apps", "judge", "run", "--study", str(study), "--units", str(units),
            "--config", str(config), "--json"]


def env() -> dict[str, str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        environment.pop(key, None)
    return environment


def start(study: Path, units: Path, config: Path) -> subprocess.Popen:
    return subprocess.Popen(command(study, units, config), cwd=REPO, env=env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_in_process(study: Path, units: Path, config: Path, capsys) -> tuple[int, str, str]:
    """A run nobody kills or races: in process, the code ``start`` runs without an interpreter's start-up, with
    its working folder and environment (no API keys); (exit code, stdout, stderr)."""
    return run_command_in_process(command(study, units, config), capsys)


def run_command_in_process(argv: list[str], capsys) -> tuple[int, str, str]:
    """``argv`` (``python -m apps ...``) run in process as ``run_in_process`` runs ``command``."""
    from apps.cli import main

    assert argv[1:3] == ["-m", "apps"], argv
    saved = {key: os.environ.pop(key) for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY") if key in os.environ}
    capsys.readouterr()
    try:
        with contextlib.chdir(REPO):
            code = main(argv[3:])
    finally:
        os.environ.update(saved)
    out, err = capsys.readouterr()
    return code, out, err


def log_lines(study: Path) -> int:
    log = StudyLayout.of(study).judge_label_log
    return log.read_bytes().count(b"\n") if log.exists() else 0


def wait_for(condition, process: subprocess.Popen | None = None, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the run ended early ({process.returncode}): {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def lock_holder(study: Path) -> int | None:
    lock = StudyLayout.of(study).judge_lock
    try:
        return json.loads(lock.read_text() or "null")["pid"]
    except (FileNotFoundError, TypeError):
        return None


@dataclass(frozen=True)
class Tally:
    rows: int
    keys: int
    lost: int
    duplicated: int


def tally(study: Path, units, judges=JUDGES) -> Tally:
    """Rows of the labels table against units x judges: lost = expected keys absent, duplicated =
    rows beyond one per key. Every line must be a complete JSON row (a half-written table fails)."""
    labels = StudyLayout.of(study).judge_labels
    text = labels.read_text(encoding="utf-8") if labels.exists() else ""
    assert text == "" or text.endswith("\n"), "the table ends mid-line"
    rows = [json.loads(line) for line in text.splitlines()]
    keys = Counter((r["unit_id"], r["judge"], r["sample_index"]) for r in rows)
    expected = {(u.unit_id, judge, 0) for u in units for judge in judges}
    return Tally(rows=len(rows), keys=len(keys), lost=len(expected - set(keys)),
                 duplicated=sum(n - 1 for n in keys.values()))
