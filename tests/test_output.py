"""What the terminal shows at 80 columns, and where a broken CSV is said to break (issue 25, output)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from apps.cli import main

REPO = Path(__file__).resolve().parents[1]


def _accord(*argv: str, columns: int = 80) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps", *argv], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": str(columns)})


def test_judge_list_keeps_every_name_whole_at_80_columns():
    from judges.prompts import builtin_prompts

    result = _accord("judge", "list")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines if "│" in line or "┃" in line) <= 80
    cells = {cell.strip() for line in lines for cell in line.split("│")}
    for prompt in builtin_prompts().values():  # the names a user types into a judges file
        assert prompt.name in cells and prompt.output in cells
        assert set(prompt.unit_kinds) <= cells


def test_status_keeps_annotator_and_judge_names_whole_at_80_columns(tmp_path):
    long_names = ["annotator_with_a_long_name_1", "annotator_with_a_long_name_2", "judge@a-rather-long-model-name"]
    table = tmp_path / "labels.csv"
    table.write_text(",".join(["id", *long_names]) + "\n"
                     + "".join(f"item{i},yes,{'no' if i % 2 else 'yes'},yes\n" for i in range(6)))
    study = tmp_path / "study"
    assert main(["import", "table", str(table), "--study", str(study), "--unit-column", "id", "--kind",
                 "escalate_final", "--annotator-columns", ",".join(long_names[:2]),
                 "--judge-columns", long_names[2]]) == 0
    result = _accord("status", str(study))
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    for name in long_names:
        assert f"│ {name} " in result.stdout, result.stdout


def test_an_unclosed_quote_is_reported_on_the_line_it_opens(tmp_path, capsys):
    path = tmp_path / "units.csv"
    lines = ["id,label", "a1,yes", "a2,no", "a3,yes", '"a4,yes', *(f"a{i},no" for i in range(5, 151))]
    path.write_text("\n".join(lines) + "\n")
    code = main(["import", "units", str(path), "--study", str(tmp_path / "study"), "--unit-column", "id",
                 "--kind", "escalate_final"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"{path}:5: a quoted field is never closed" in err, err  # the quote opens on line 5 of 151


def test_judge_run_summary_keeps_names_and_values_whole_at_80_columns(tmp_path):
    """Issue #25: at 80 columns the run summary squeezed its eleven columns to '…' (costs, unscored reasons)."""
    from tests.judges.test_rule_judges import response_unit

    texts = ["<answer>\nDECISION: ANSWER\n</answer>", "<answer>\nRESPONSE: DECLINE\n</answer>", "nothing"]
    units = tmp_path / "units.jsonl"
    units.write_text("".join(response_unit(f"agg-{i}", t).model_dump_json() + "\n" for i, t in enumerate(texts)))
    names = ["aggarwal-strict-decision-parser@rule-model", "aggarwal-semantic-decision-parser@rule-model"]
    config = tmp_path / "judges.toml"
    config.write_text("".join(f'[[judge]]\nname = "{name}"\nprovider = "rule"\nmodel = "aggarwal"\nparse_mode = '
                              f'"{mode}"\n\n' for name, mode in zip(names, ("strict", "lenient"), strict=True)))
    argv = ["judge", "run", "--units", str(units), "--config", str(config), "--study", str(tmp_path / "study")]
    for extra in (["--dry-run"], []):
        result = _accord(*argv, *extra)
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "…" not in out, out
        assert all(f"judge {name}" in out.splitlines() for name in names), out
        assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith(("judge ", "labels: "))), out
    # the real run: every value readable, the strict parser's two outputs unscored with their reason
    assert "  calls: 3" in out and "  unscored: 2 (wrong_format 2)" in out and "  unscored: 1 (wrong_format 1)" in out
    assert "  cost $: 0.0000" in out
    wide = _accord(*argv, columns=200).stdout  # where the table fits, it is a table
    assert "┃ judge" in wide and all(f"│ {name} " in wide for name in names), wide


def test_blind_summary_folds_a_long_key_path_instead_of_cutting_it(tmp_path):
    """Issue #25 (80 columns): the sealed key's path in `accord blind`'s table ended in '…'."""
    study = tmp_path / "a_rather_long_folder_name_for_the_study_under_test" / "another_level" / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "all"\nkinds = ["identify_trajectory"]\nstrata = ["kind"]\nallocation = "fixed"\n'
                    'n_per_stratum = 10\none_per_trajectory = false\n')
    for argv in (["ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study", str(study)],
                 ["sample", str(study), "--plan", str(plan)]):
        assert main(argv) == 0
    result = _accord("blind", str(study), "--annotators", "annotator_with_a_long_name_1,annotator_with_a_long_name_2")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout, result.stdout
    key = str(study / "sealed" / "key.jsonl")
    value = "".join(line.split("│")[2].strip() for line in result.stdout.splitlines()
                    if line.count("│") == 3 and line.split("│")[1].strip() in ("sealed key", ""))
    assert key in value, result.stdout  # folded over lines, whole when read back
