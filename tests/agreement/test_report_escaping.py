"""No script in a report: every HTML template escapes, and names from users' files reach report.html as text.

Issue #23: ``select_autoescape(["html"])`` did not match ``report.html.jinja``, so a judge
name in verdict.json or an annotator name from an import ran as script when the report
was opened.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agreement.report import TEMPLATES, Card, ReportContent, Table, render, template_environment
from apps.cli import main
from tests.agreement.test_scoring import LENIENT
from tests.agreement.test_study_io import write_ise_study

PAYLOAD = "<script>document.title='pwned-script'</script>"
IMG = "<img src=x onerror=\"document.title='pwned-img'\">"


def _html_templates() -> list[str]:
    names = [p.name for p in TEMPLATES.iterdir() if ".html" in p.suffixes]
    assert names, "the report has an HTML template"
    return names


def test_every_html_template_is_autoescaped():
    import jinja2

    env = template_environment(jinja2)
    for name in _html_templates():
        assert env.autoescape(name), name  # select_autoescape(["html"]) gave False for report.html.jinja
        rendered = env.get_template(name).render(report=ReportContent(
            study=PAYLOAD, banners=[IMG], verdict=None,
            cards=[Card(judge=PAYLOAD, verdict="ACCEPT", line=IMG, humans=PAYLOAD,
                        failed=0, criteria=1)],
            tables=[Table(title=PAYLOAD, header=[IMG], rows=[[PAYLOAD, IMG]], note=IMG)],
            fingerprints={PAYLOAD: IMG}))
        assert "<script>document" not in rendered and "<img src=x" not in rendered
        assert "&lt;script&gt;document.title=&#39;pwned-script&#39;&lt;/script&gt;" in rendered


def test_markdown_twin_keeps_text_as_written():
    html, md = render(ReportContent(study="a<b", banners=[], verdict=None))
    assert "a&lt;b" in html and "a<b" in md  # Markdown is not HTML-escaped (its own cell escaping applies)


def test_annotator_names_from_an_import_follow_the_coding_apps_rule(tmp_path, capsys):
    table = tmp_path / "t.csv"
    column = "ann<img src=x onerror=alert(1)>"
    table.write_text(f"id,{column},ann_2,judge\nu1,yes,no,yes\nu2,no,no,no\n")
    code = main(["import", "table", str(table), "--study", str(tmp_path / "s"), "--unit-column", "id",
                 "--kind", "identify_trajectory", "--annotator-columns", f"{column},ann_2", "--judge-columns", "judge"])
    err = capsys.readouterr().err
    assert code == 2 and "is not a valid annotator name" in err and err.count("\n") == 1
    assert not (tmp_path / "s" / "units.jsonl").exists()
    long = tmp_path / "long.csv"
    long.write_text("id,rater,label\nu1,<b>x</b>,yes\nu1,judge,yes\n")  # the judge rates: only the name is wrong
    code = main(["import", "table", str(long), "--study", str(tmp_path / "l"), "--unit-column", "id",
                 "--kind", "identify_trajectory", "--rater-column", "rater", "--label-column", "label",
                 "--judges", "judge"])
    assert code == 2 and "is not a valid annotator name" in capsys.readouterr().err


def _rename(path: Path, field: str, old: str, new: str) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row[field] == old:
            row[field] = new
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.browser
def test_script_in_a_judge_or_policy_name_does_not_run_in_the_report(tmp_path):
    """A judge named with a script payload (judges' labels written by another tool), and a policy
    whose description holds one, reach verdict.json; the report shows them as text in chromium."""
    from tests.support.browser import browser

    write_ise_study(tmp_path, backend="simulated", sample_share=0.5, per_cell=12)
    _rename(tmp_path / "judges" / "labels.jsonl", "judge", "identify@j", PAYLOAD)
    (tmp_path / "p.toml").write_text(LENIENT.replace('description = "test: accept any judge with an AC1 lower bound '
                                                     'above -1"', f"description = {json.dumps(IMG)}"))
    assert main(["validate", str(tmp_path), "--n-resamples", "100"]) == 0
    assert main(["gate", str(tmp_path), "--policy", str(tmp_path / "p.toml")]) in (0, 1)  # too few units: REJECT
    verdict = json.loads((tmp_path / "gate" / "verdict.json").read_text())
    assert PAYLOAD in json.dumps(verdict)  # the payload really is in the verdict
    assert main(["report", str(tmp_path)]) == 0
    page = (tmp_path / "report" / "report.html").resolve()
    with browser() as context:
        tab = context.new_page()
        errors: list[str] = []
        tab.on("dialog", lambda dialog: (errors.append(dialog.message), dialog.dismiss()))
        tab.goto(page.as_uri())
        tab.wait_for_load_state("load")
        assert tab.title().startswith("accord report")
        assert tab.locator("script").count() == 0 and tab.locator("img[src=x]").count() == 0
        text = tab.locator("body").inner_text()
        assert PAYLOAD in text and IMG in text  # shown as the text it is
        assert not errors
