"""What an `accord judge run` process imports: every kill and concurrency test starts several, so numpy and
pandas (about 0.5 CPU-seconds a process, needed only to sample) stay out of judging."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.judges.cli_runs import JUDGES, REPO, command, env, tally, write_config, write_units
from tests.judges.units import escalate_units


def test_a_judge_run_imports_neither_numpy_nor_pandas(fault_server, tmp_path) -> None:
    units = escalate_units(3)
    study, units_file = tmp_path / "study", write_units(tmp_path / "units.jsonl", units)
    config = write_config(tmp_path / "judges.toml", fault_server.base_url)
    argv = command(study, units_file, config)[3:]  # after `python -m apps`
    code = ("import json, sys\nfrom apps.cli import main\n"
            f"code = main({argv!r})\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas'})), file=sys.stderr)\n"
            "sys.exit(code)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env(), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stderr.splitlines()[-1]) == []
    # the run really judged: every unit by both judges, once
    counted = tally(study, units)
    assert (counted.rows, counted.lost, counted.duplicated) == (3 * len(JUDGES), 0, 0)
