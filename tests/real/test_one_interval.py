"""One number per statistic in every view, and gate lines that name what they compare (issue 25).

On the MAD study (real annotators and the mast-lint judge): the gate's interval for the judge's
AC1 and kappa is the one validation writes, `accord validate` prints, the report shows and the
dashboard shows; every gate line reads "estimate value, CI [low, high]; needs bound: result",
and an unmeasurable criterion prints no number.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

from agreement.documents import ValidationDocument, VerdictDocument, read_document
from apps.cli import main

REPO = Path(__file__).resolve().parents[2]
MAD = REPO / "data" / "studies" / "mad" / "study.toml"
# The judge's AC1 against the majority, 0.548, is (po - pe)/(1 - pe) of the raw votes (tests/real/test_real_studies.py
# derives the kappa the same way); the interval is whatever the gate computed, and must read the same everywhere.
LINE = re.compile(r"gwet_ac1 vs human majority (-?\d\.\d{3}), 95% CI \[(-?\d\.\d{3}), (-?\d\.\d{3})\]; "
                  r"needs lower CI bound >= 0\.6: FAIL")


@pytest.fixture(scope="module")
def mad(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("mad") / "mad"
    return out


def test_every_view_shows_the_gate_interval(mad, capsys):
    assert main(["run", str(MAD), "--output", str(mad), "--quiet"]) == 1  # REJECT
    summary = capsys.readouterr().out
    match = LINE.search(summary)
    assert match, summary
    assert summary.startswith("mad-mast-lint: REJECT mast-lint: gwet_ac1 vs human majority 0.548, 95% CI [")
    estimate, low, high = match.groups()
    verdict = read_document(VerdictDocument, mad)
    floors = {c.name: c for c in verdict.judges["mast-lint"].criteria}
    ac1 = floors["gwet_ac1 vs human majority, lower bound"]
    assert (f"{ac1.value:.3f}", f"{ac1.ci_low:.3f}", f"{ac1.ci_high:.3f}") == (estimate, low, high)
    validation = read_document(ValidationDocument, mad)
    (section,) = validation.sections
    (versus,) = section.judges_vs_humans
    for coefficient in ("gwet_ac1", "cohen_kappa"):
        written = versus.vs_majority.results[coefficient]
        gated = floors[f"{coefficient} vs human majority, lower bound"]
        # computed once: the document's interval is the gate's, to the last bit
        assert (written.ci_low, written.ci_high) == (gated.ci_low, gated.ci_high), coefficient
        assert written.interval().ci_low == gated.ci_low
    # accord validate prints the same interval (the policy's settings are validate's defaults: 10000, same seed)
    assert main(["validate", str(mad)]) == 0
    printed = capsys.readouterr().out
    assert f"gwet_ac1 {estimate} [{low}, {high}]" in printed
    human = section.human_panel.results["gwet_ac1"]
    human_text = f"{human.statistic:.3f} [{human.ci_low:.3f}, {human.ci_high:.3f}]"
    assert f"gwet_ac1 {human_text}" in printed
    # the report's card and tables
    assert main(["report", str(mad)]) == 0
    capsys.readouterr()
    markdown = (mad / "report" / "report.md").read_text()
    assert match.group(0) in markdown
    assert f"| human vs human | gwet_ac1 | {human_text} |" in markdown
    assert f"| mast-lint vs majority | gwet_ac1 | {estimate} [{low}, {high}] |" in markdown
    # the dashboard: the card and the running agreement read from validation.json
    from streamlit.testing.v1 import AppTest

    os.environ["ACCORD_STUDY"] = str(mad)
    try:
        app = AppTest.from_file(str(REPO / "apps" / "dashboard.py"), default_timeout=120).run()
    finally:
        del os.environ["ACCORD_STUDY"]
    assert not app.exception
    assert any(match.group(0) in e.value for e in app.error), [e.value for e in app.error]
    running = [f.value for f in app.dataframe if "units with two labels" in f.value.columns][0]
    assert human_text in set(running.loc[running["coefficient"] == "gwet_ac1", "estimate [CI]"])
    assert not any("no gate policy found" in c.value for c in app.caption)  # the verdict names its policy


def test_gate_lines_name_the_estimate_and_print_no_number_when_unmeasurable(mad, capsys):
    if not (mad / "gate").is_dir():
        assert main(["run", str(MAD), "--output", str(mad), "--quiet"]) == 1
    code = main(["gate", str(mad), "--policy", str(REPO / "data" / "policies" / "strict.toml")])
    out = capsys.readouterr().out
    assert code == 1
    lines = {line.strip().split(" ")[0]: line.strip() for line in out.splitlines() if line.startswith("  ") and
             not line.startswith("        ")}
    assert LINE.fullmatch(lines["gwet_ac1"]), lines["gwet_ac1"]
    # MAD's models are one family ('unknown'): the family contrast cannot be measured, and says so without a number
    family = lines["family"]
    assert family.startswith("family contrast: cannot be measured: ") and family.endswith(": FAIL"), family
    assert not re.search(r"contrast -?\d", family)
    unscored = lines["unscored"]  # 0 of 184 unscored: Clopper-Pearson upper bound 1 - 0.025^(1/184) = 0.0198
    assert unscored == "unscored share 0.000, 95% CI [0.000, 0.020]; needs unscored share upper CI bound < 0.02: PASS"
    assert math.isclose(1 - 0.025 ** (1 / 184), 0.0198, abs_tol=5e-5)


def test_a_folder_gated_by_hand_names_its_policy_in_the_live_view(mad, tmp_path):
    """Without study.json (a study gated with `accord gate --policy`), the live view takes the verdict's policy."""
    import shutil

    from apps.live import live_view

    if not (mad / "gate").is_dir():
        assert main(["run", str(MAD), "--output", str(mad), "--quiet"]) == 1
    by_hand = tmp_path / "by-hand"
    shutil.copytree(mad, by_hand)
    (by_hand / "study.json").unlink()
    notes = live_view(by_hand).notes
    assert not any("no gate policy found" in note for note in notes), notes
