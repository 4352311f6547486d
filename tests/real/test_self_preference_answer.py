"""The auditor's answer on the MT-Bench self-preference study (shared data, no model called): one line from
`accord audit` and `accord run --quiet`, on the report's first screen, with Holm's adjustment across the cells."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from markupsafe import escape
from statsmodels.stats.multitest import multipletests

from agreement.documents import PreferenceDocument, read_document
from apps.cli import main

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "data" / "studies" / "mtbench-self-preference" / "study.toml"


@pytest.fixture(scope="module")
def mtbench(shared, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mtbench") / "study"
    assert main(["run", str(STUDY), "--output", str(out), "--quiet"]) in (0, 1)
    return out


def test_holm_adjusted_p_values_match_statsmodels(mtbench):
    doc = read_document(PreferenceDocument, mtbench)
    assert len(doc.cells) == 18  # six judges x three response families (openai, meta, anthropic)
    p = np.array([c.p_value for c in doc.cells], dtype=float)
    _, adjusted, _, _ = multipletests(p, method="holm")
    assert np.allclose([c.p_holm for c in doc.cells], adjusted, rtol=0, atol=1e-12)


def test_audit_prints_the_self_preference_answer(mtbench, capsys):
    assert main(["audit", str(mtbench)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    (line,) = out
    doc = read_document(PreferenceDocument, mtbench)
    flagged = [c for c in doc.cells if c.ci_low > 0 or c.ci_high < 0]
    own = [c for c in doc.cells if c.self_family]
    assert {c.judge for c in own} == {"gpt-4o", "gpt-4o-mini", "llama-31"}  # gemini, mistral: no own answers
    # On these data no self-family interval excludes 0, and of the cells that do none survives Holm.
    assert all(c.ci_low < 0 < c.ci_high for c in own)
    assert flagged and all(c.p_holm >= 0.05 for c in flagged)
    assert line.startswith("self-preference: none shown. Measured: each judge's preference for its own family's")
    for c in own:
        assert f"{c.judge} {c.statistic:+.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]" in line
    assert f"{len(flagged)} of 18 judge x family cells exclude 0 (about 0.9 expected by chance at 95%)" in line
    for c in flagged:
        assert (f"{c.judge}->{c.response_family} {c.statistic:+.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] "
                f"(Holm p {c.p_holm:.3g})") in line
    assert line.endswith("0 of them hold after Holm's adjustment across the 18.")


def test_quiet_run_prints_the_same_line(mtbench, capsys):
    main(["audit", str(mtbench)])
    line = capsys.readouterr().out.strip()
    main(["run", str(STUDY), "--output", str(mtbench), "--quiet"])
    assert f"mtbench-self-preference: {line}" in capsys.readouterr().out.splitlines()


def test_report_flags_cells_and_notes_the_multiplicity(mtbench, capsys):
    main(["audit", str(mtbench)])
    line = capsys.readouterr().out.strip()
    html = (mtbench / "report" / "report.html").read_text()
    first_screen = html.split("<details>")[0]  # everything after the first <details> is folded
    assert f'<p class="finding">{escape(line)}</p>' in first_screen  # escaped as jinja escapes it
    assert "18 cells at 95%: about 0.9 expected to exclude 0 by chance alone" in html
    assert len(re.findall(r"interval excludes 0; does not hold after Holm", html)) == 2
    assert line in (mtbench / "report" / "report.md").read_text()


@pytest.mark.browser
def test_the_answer_is_on_the_first_screen(mtbench):
    """At 1400x900 the self-preference line is visible without scrolling, below the six judges' cards."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto((mtbench / "report" / "report.html").as_uri())
            finding = page.locator(".finding")
            assert finding.count() == 1 and finding.inner_text().startswith("self-preference: none shown.")
            box = finding.bounding_box()
            assert box is not None and box["height"] > 10 and box["y"] + box["height"] <= 900
            assert page.locator(".card").count() == 6
        finally:
            browser.close()
