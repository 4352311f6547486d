"""The README's seed-paper table: every figure its second column quotes is printed, exactly so, by the row's command
run here on the shipped study and the shared data (tests/test_readme.py checks the table's form and the papers'
figures)."""

from __future__ import annotations

import shlex

import pytest

from apps.cli import main
from tests.test_readme import REPO, SEED_COMMANDS, seed_rows

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("paper", sorted(SEED_COMMANDS))
def test_each_quoted_figure_is_printed_by_its_command(paper, shared, tmp_path, capsys):
    (row,) = [r for r in seed_rows() if r.paper == paper]
    program, verb, study = shlex.split(row.command)
    assert (program, verb) == ("accord", "run")
    assert main(["run", str(REPO / study), "--output", str(tmp_path / "study"), "--quiet"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    missing = [figure for figure in row.quoted() if figure not in printed]
    assert not missing, f"README seed table, {paper}: {missing} not printed by `{row.command}`:\n{printed[-3000:]}"
