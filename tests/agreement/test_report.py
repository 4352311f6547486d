"""The HTML/Markdown report and the Streamlit dashboard on a study that went through every command."""

from __future__ import annotations

import os
import re

import pytest

from apps.cli import main
from tests.agreement.test_scoring import LENIENT, SCORE
from tests.agreement.test_study_io import write_ise_study


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    write_ise_study(root, backend="simulated", sample_share=0.8)  # >= 100 validated units
    (root / "lenient.toml").write_text(LENIENT)
    assert main(["validate", str(root), "--n-resamples", "200"]) == 0
    assert main(["audit", str(root), "--judge", "identify@j", "--positive", "yes", "--n-resamples", "200",
                 "--judge-family", "identify@j=openai"]) == 0
    assert main(["gate", str(root), "--policy", str(root / "lenient.toml")]) == 0
    assert main(["score", str(root), *SCORE]) == 0
    return root


def test_report_is_self_contained_and_complete(finished, capsys):
    capsys.readouterr()
    assert main(["report", str(finished)]) == 0
    html = (finished / "report" / "report.html").read_text()
    md = (finished / "report" / "report.md").read_text()
    assert "SIMULATED ANNOTATORS" in html and "SIMULATED ANNOTATORS" in md
    assert "Gate verdict: <span class=\"accept\">ACCEPT</span>" in html
    assert not re.search(r'(src|href)="(https?:|//)', html)  # nothing fetched from elsewhere
    assert html.count('src="data:image/png;base64,') >= 4
    for title in ("Agreement forest plot", "Bias per evaluated model", "Accuracy vs Identify / Solve / Escalate",
                  "Confusion: identify@j vs majority"):
        assert title in html
    for name in ("Judge-scored benchmark", "Bias-corrected rates", "Family contrasts", "pooled difference", "Pearson",
                 "not correctable", "Per-class precision",
                 "observational", "sealed/key.jsonl", "gate policy"):
        assert name in html and name in md
    for png in re.findall(r"\]\(([^)]+\.png)\)", md):
        assert (finished / "report" / png).is_file()


def test_report_is_byte_identical_when_rerun(finished, tmp_path):
    assert main(["report", str(finished), "--out", str(tmp_path / "a")]) == 0
    assert main(["report", str(finished), "--out", str(tmp_path / "b")]) == 0
    for name in ("report.html", "report.md", "forest.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_report_flags_documents_whose_inputs_changed(finished, tmp_path, capsys):
    import shutil

    study = tmp_path / "study"
    shutil.copytree(finished, study)
    labels = study / "labels" / "human.jsonl"
    lines = labels.read_text().splitlines(keepends=True)
    labels.write_text("".join(lines[:-1]))  # one human label withdrawn after validate, gate and score
    capsys.readouterr()
    assert main(["report", str(study), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    for stage, command in (("validation", "validate"), ("gate", "gate"), ("score", "score")):
        line = f"stale: labels/human.jsonl changed after {stage}; rerun accord {command} {study}"
        assert line in err
    html = (tmp_path / "out" / "report.html").read_text()
    assert "STALE" in html and "labels/human.jsonl changed after validation" in html
    assert main(["report", str(finished), "--out", str(tmp_path / "fresh")]) == 0
    assert "stale:" not in capsys.readouterr().err
    assert "STALE" not in (tmp_path / "fresh" / "report.html").read_text()


def test_report_without_results_is_an_input_error(tmp_path, capsys):
    write_ise_study(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert "run `accord validate" in capsys.readouterr().err


@pytest.mark.slow  # 24 s on 2 idle cores: make test runs it, make test-fast does not
def test_dashboard_shows_the_report(finished, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ACCORD_STUDY", str(finished))
    app = AppTest.from_file(_dashboard(), default_timeout=120)
    app.run()
    assert not app.exception
    assert any("SIMULATED ANNOTATORS" in w.value for w in app.warning)
    assert any("Gate verdict: ACCEPT" in s.value for s in app.success)
    titles = [s.value for s in app.subheader]
    assert "Judge-scored benchmark (%; 95% percentile bootstrap CIs)" in titles
    shown = len(app.dataframe)
    from apps.live import live_view

    live = len(live_view(finished).tables)  # the live view's tables come first, whatever is chosen below
    app.multiselect[0].set_value(["Family contrasts"]).run()
    assert len(app.dataframe) == live + 2 < shown  # the chosen table + fingerprints


def test_dashboard_without_study_explains(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("ACCORD_STUDY", raising=False)
    app = AppTest.from_file(_dashboard(), default_timeout=60).run()
    assert "No study folder" in app.error[0].value


def test_dashboard_command(finished, capsys):
    assert main(["dashboard", str(finished), "--print-command", "--port", "8765"]) == 0
    out = capsys.readouterr().out
    assert f"ACCORD_STUDY={finished.resolve()}" in out and "streamlit run" in out
    assert "--server.address 127.0.0.1" in out and "8765" in out
    assert main(["dashboard", str(finished / "missing")]) == 2


def _dashboard() -> str:
    return os.path.join(os.path.dirname(__file__), "..", "..", "apps", "dashboard.py")


@pytest.fixture(scope="module")
def dashboard_url(finished):
    """`accord dashboard` in its own process group on a free loopback port (pid in .run/dashboard.pid)."""
    from tests.support.servers import serve_accord

    with serve_accord(["dashboard", str(finished)], name="dashboard", log_path=finished / "dashboard.log") as url:
        yield url


@pytest.mark.browser
def test_dashboard_in_a_real_browser(dashboard_url):
    from tests.support.browser import browser

    with browser() as context:
        page = context.new_page()
        page.goto(dashboard_url)
        page.get_by_text("Gate verdict: ACCEPT").wait_for(timeout=60_000)
        assert page.get_by_text("SIMULATED ANNOTATORS", exact=False).first.is_visible()
        # The page draws top to bottom: under load the score table and the plots come well after the verdict.
        page.get_by_text("Judge-scored benchmark (%; 95% percentile bootstrap CIs)").first.wait_for(timeout=90_000)
        page.locator("img").first.wait_for(timeout=60_000)
        assert page.locator("img").count() >= 4


@pytest.mark.browser
def test_dashboard_cards_and_ceiling_plot_are_on_the_first_screen(dashboard_url, repo):
    """At 1400x900 the dashboard's first screen holds every judge's card and the judge-vs-ceiling plot."""
    from tests.support.browser import browser

    with browser() as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1400, "height": 900})
        page.goto(dashboard_url)
        page.get_by_text("Gate verdict: ACCEPT").wait_for(timeout=60_000)
        cards = page.get_by_text(re.compile(r"^(ACCEPT|REJECT) \S+@j \(\d+ of \d+ criteria pass\)"))
        cards.first.wait_for(timeout=30_000)
        assert cards.count() == 3  # identify@j, escalate@j, correct@j
        plot = page.get_by_role("img").first
        plot.wait_for(timeout=30_000)
        for element in (*[cards.nth(i) for i in range(cards.count())], plot):
            box = element.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 900, element
        artifacts = repo / "out" / "test-artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(artifacts / "dashboard-first-screen.png"))


def _reference(judge: str, confusion: dict[tuple[str, str], int]) -> dict:
    cells = [{"a": a, "b": b, "count": c} for (a, b), c in confusion.items()]
    n = sum(confusion.values())
    return {"rater": judge, "accuracy": sum(c for (a, b), c in confusion.items() if a == b) / n,
            "agreement": {"rater_a": judge, "rater_b": "human majority", "confusion": cells}}


def _constants(majority: dict[str, int]) -> dict:
    """Accuracy of each constant answer = the share of units whose majority label it is."""
    n = sum(majority.values())
    return {"always-positive": {"accuracy": majority["yes"] / n}, "always-negative": {"accuracy": majority["no"] / n}}


def test_tracking_table_separates_constant_uninformative_and_tracking_judges():
    from agreement.report import tracking_table

    # Majority: 6 yes, 4 no on every judge's units, so the best constant answer is always-positive (0.6).
    section = {"kind": "escalate_final", "references": [
        _reference("constant", {("yes", "yes"): 6, ("yes", "no"): 4}),                        # one label for all
        _reference("noise", {("yes", "yes"): 3, ("no", "yes"): 3, ("yes", "no"): 2, ("no", "no"): 2}),  # 0.5 < 0.6
        _reference("tracks", {("yes", "yes"): 6, ("no", "no"): 3, ("yes", "no"): 1}),           # 0.9 > 0.6
    ], "baselines": {j: _constants({"yes": 6, "no": 4}) for j in ("constant", "noise", "tracks")}}
    from agreement.documents import ValidationDocument

    table = tracking_table(ValidationDocument.model_validate({"sections": [section], "codebook_versions": {}}))
    findings = {row[1]: row[-1] for row in table.rows}
    assert findings["constant"] == "does not track the input: the same label (yes) for all 10 units"
    assert findings["noise"] == ("does not track the input: no more accurate than the constant answer "
                                 "always-positive (0.500 vs 0.600)")
    assert findings["tracks"] == "more accurate than every constant answer (0.900 vs always-positive 0.600)"
    assert {row[1]: row[3] for row in table.rows}["noise"] == "no: 5, yes: 5"


def test_report_says_whether_judges_track_the_input(finished):
    assert main(["report", str(finished)]) == 0
    for name in ("report.html", "report.md"):
        text = (finished / "report" / name).read_text()
        assert "Do the judges&#39; verdicts track the input?" in text or "Do the judges' verdicts track the input?" in text
        assert "identify@j" in text and ("more accurate than every constant answer" in text
                                         or "does not track the input" in text)


def test_report_shows_adjudication_and_both_references(tmp_path):
    from tests.agreement.test_validation import write_two_coder_study

    root = write_two_coder_study(tmp_path / "study")
    assert main(["validate", str(root), "--n-resamples", "200"]) == 0
    assert main(["report", str(root)]) == 0
    md = (root / "report" / "report.md").read_text()
    assert "Judges against the initial majority and the resolved reference: escalate_final" in md
    assert "4 units adjudicated (1 changed the majority, 0 confirmed it, 3 resolved ties); 1 still tied" in md
    # The hand derivation of tests/agreement/test_validation.py: kappa 1/3 on 6 units vs the initial majority,
    # 0.55 on 9 units vs the resolved reference.
    assert "| esc@j | human majority | 6 | 0.667 |" in md and "cohen_kappa 0.333" in md
    assert "| esc@j | resolved | 9 | 0.778 |" in md and "cohen_kappa 0.550" in md
