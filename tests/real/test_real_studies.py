"""The real studies shipped in data/studies/, run end to end as `accord run` runs them, on the shared data.

Each study starts from labels people made (no model is called): MAD (three MAST annotators
and the mast-lint judge), the nine alt-test datasets the paper reports (their human panels and
six LLM judges) and the MT-Bench self-preference audit. The figures are checked against values
published by the data's authors and against computations from the raw JSON written out here.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from agreement.criteria import BUILT_IN
from agreement.documents import PreferenceDocument, ValidationDocument, VerdictDocument, read_document
from apps.cli import main
from tests.agreement.test_alttest import PUBLISHED

# The real studies run whole (the alt-test's nine include crowd-kit fits: minutes of CPU): make test
# runs them, make test-fast does not.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STUDIES = REPO / "data" / "studies"


def _run(tmp: Path, study: Path) -> Path:
    """`accord run` on a shipped study file, into a scratch folder."""
    out = tmp / study.parent.name
    code = main(["run", str(study), "--output", str(out)])
    assert code in (0, 1), f"accord run {study} exited {code}"
    return out


@pytest.fixture(scope="module")
def mad_study(shared, tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("mad"), STUDIES / "mad" / "study.toml")


def test_mad_reproduces_the_published_kappa_and_is_rejected(mad_study, shared):
    traces = json.loads((shared / "data/mad_mast_lint/evals/raw_findings.json").read_text())
    items = [(votes, mode in t["report"]["modes_fired"]) for t in traces for mode, votes in t["gold"]["votes"].items()]
    assert len(items) == 184
    # Cohen's kappa of the judge against the 3-annotator majority, written out: po = share agreeing,
    # pe = p_judge_yes * p_majority_yes + p_judge_no * p_majority_no.
    majority = [sum(v) >= 2 for v, _ in items]
    judge = [fired for _, fired in items]
    po = sum(a == b for a, b in zip(judge, majority)) / 184
    pj, pm = sum(judge) / 184, sum(majority) / 184
    pe = pj * pm + (1 - pj) * (1 - pm)
    hand = (po - pe) / (1 - pe)
    assert round(hand, 3) == 0.248  # the mast-lint authors' published judge-vs-majority kappa
    doc = read_document(ValidationDocument, mad_study)
    (section,) = doc.sections
    (versus,) = section.judges_vs_humans
    assert math.isclose(versus.vs_majority.results["cohen_kappa"].statistic, hand, abs_tol=1e-12)
    verdict = read_document(VerdictDocument, mad_study)
    assert verdict.verdict == "REJECT"
    failed = {c.type for c in verdict.judges["mast-lint"].criteria if not c.passed}
    assert "agreement_floor" in failed


def test_mad_per_mode_agreement_matches_the_raw_votes(mad_study, shared):
    """Per failure mode: the judge-vs-majority percent agreement from accord's labels table equals the raw JSON's."""
    from agreement.study_io import labels_table, load_study

    traces = json.loads((shared / "data/mad_mast_lint/evals/raw_findings.json").read_text())
    expected: dict[str, list[bool]] = {}
    for t in traces:
        for mode, votes in t["gold"]["votes"].items():
            expected.setdefault(mode, []).append((sum(votes) >= 2) == (mode in t["report"]["modes_fired"]))
    table = labels_table(load_study(mad_study))
    human = table[table["source"] == "human"].groupby("unit")["label"].agg(lambda s: (s == "yes").sum() >= 2)
    judge = table[table["source"] == "judge"].set_index("unit")
    got: dict[str, list[bool]] = {}
    for unit, row in judge.iterrows():
        got.setdefault(row["mode"], []).append(bool(human[unit]) == (row["label"] == "yes"))
    assert {m: sum(v) / len(v) for m, v in got.items()} == {m: sum(v) / len(v) for m, v in expected.items()}


@pytest.fixture(scope="module")
def alttest_studies(shared, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("alttest")
    return {name: _run(base, STUDIES / "alttest" / name / "study.toml") for name in sorted(PUBLISHED)}


@pytest.mark.parametrize("dataset", sorted(PUBLISHED))
def test_alttest_verdicts_are_the_published_pass_fail(alttest_studies, dataset):
    scoring, epsilon, expected = PUBLISHED[dataset]
    verdict = read_document(VerdictDocument, alttest_studies[dataset])
    assert set(verdict.judges) == set(expected)
    for judge, (winning_rate, advantage) in expected.items():
        criteria = {c.type: c for c in verdict.judges[judge].criteria}
        assert list(criteria) == ["alt_test", *BUILT_IN]
        criterion = criteria["alt_test"]
        assert round(criterion.value, 2) == winning_rate, judge
        assert round(criterion.details["advantage_probability"], 2) == advantage, judge
        # The paper's pass rule: the judge wins against at least half of the annotators. Every judge that
        # passes it also beats every constant rating and has kappa above 0 (the built-ins), so the verdict
        # is the paper's.
        assert criterion.passed == (winning_rate >= 0.5), judge
        assert verdict.judges[judge].verdict == ("ACCEPT" if winning_rate >= 0.5 else "REJECT"), judge


def test_real_data_gives_both_verdicts(alttest_studies):
    verdicts = {v for path in alttest_studies.values() for v in
                (j.verdict for j in read_document(VerdictDocument, path).judges.values())}
    assert verdicts == {"ACCEPT", "REJECT"}


@pytest.fixture(scope="module")
def mtbench_study(shared, tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("mtbench"), STUDIES / "mtbench-self-preference" / "study.toml")


FAMILIES = {"gpt-3.5-turbo": "openai", "gpt-4": "openai", "claude-v1": "anthropic", "llama-13b": "meta",
            "alpaca-13b": "meta", "vicuna-13b-v1.2": "meta"}


def test_mtbench_self_preference_matches_a_hand_computation(mtbench_study, shared):
    humans = json.loads((shared / "data/alttest/mtbench/human_annotations.json").read_text())
    llms = json.loads((shared / "data/alttest/mtbench/llm_annotations.json").read_text())
    share = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}
    doc = read_document(PreferenceDocument, mtbench_study)
    cells = {(c.judge, c.response_family): c for c in doc.cells}
    for judge in ("gpt-4o", "llama-31"):
        for family in ("openai", "meta", "anthropic"):
            judged, human = [], []
            for instance, label in llms[judge].items():
                _, a, b, _ = instance.split("__")
                if (FAMILIES[a] == family) == (FAMILIES[b] == family):
                    continue  # both or neither answer from the family
                votes = [r[instance] for r in humans.values() if instance in r]
                if not votes:
                    continue
                to_family = (lambda s: s) if FAMILIES[a] == family else (lambda s: 1 - s)
                judged.append(to_family(share[label]))
                human.append(to_family(sum(share[v] for v in votes) / len(votes)))
            cell = cells[(judge, family)]
            assert cell.n == len(judged)
            assert math.isclose(cell.judge_share, sum(judged) / len(judged), abs_tol=1e-12)
            assert math.isclose(cell.human_share, sum(human) / len(human), abs_tol=1e-12)
            assert math.isclose(cell.statistic, cell.judge_share - cell.human_share, abs_tol=1e-12)
            assert cell.ci_low <= cell.statistic <= cell.ci_high
            assert cell.self_family == ({"gpt-4o": "openai", "llama-31": "meta"}[judge] == family)


def test_the_report_shows_the_self_preference_matrix(mtbench_study):
    html = (mtbench_study / "report" / "report.html").read_text()
    assert "Pairwise self-preference: judge family x response family" in html and "self-family" in html


@pytest.fixture(scope="module")
def wax_study(shared, tmp_path_factory) -> Path:
    """The one alt-test study the browser test reads: the service tier builds it alone, not all nine again."""
    return _run(tmp_path_factory.mktemp("wax"), STUDIES / "alttest" / "wax" / "study.toml")


@pytest.mark.browser
def test_report_cards_and_ceiling_plot_are_on_the_first_screen(wax_study):
    """At 1400x900 every judge's card and the forest plot are visible without scrolling; the screenshot is kept."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium_path

    report = wax_study / "report" / "report.html"
    artifacts = REPO / "out" / "test-artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(report.as_uri())
            cards = page.locator(".card")
            assert cards.count() == 6
            for i in range(6):
                box = cards.nth(i).bounding_box()
                assert box is not None and box["y"] + box["height"] <= 900, f"card {i} is below the first screen"
            assert page.locator(".card.ACCEPT").count() == 2 and page.locator(".card.REJECT").count() == 4
            plot = page.locator(".headline img").bounding_box()
            assert plot is not None and plot["y"] + plot["height"] <= 900 and plot["height"] > 150
            assert not page.locator("details").first.evaluate("d => d.open")  # the rest is folded
            page.screenshot(path=str(artifacts / "report-first-screen.png"))
        finally:
            browser.close()


# Aggarwal, "Calibrated Enough to Know, Not Calibrated to Act" (seed 004): the figures the paper prints,
# kept here (not read from the data) so a run against changed data or code fails against the paper.
AGGARWAL_PUBLISHED = {
    "commit_fully_fabricated": (106, 288, "36.8%"),        # section 3.2: 288 decisions, commitment 36.8%
    "commit_claude_fully_fabricated": (29, 72, "40.3%"),   # section 3.2: the three Claude models, 40.3%
    # section 3.3: four models never commit in any arm (0/0/0); three commit at 88-100% in every arm.
    "never_commit": {"deepseek/deepseek-v3.2", "qwen/qwen3.7-plus", "x-ai/grok-4.20", "x-ai/grok-4.3"},
    "commit_in_every_arm": {"openai/gpt-5.4", "openai/gpt-5.4-mini", "google/gemma-4-31b-it"},
    # Table 2: Youden's J on the transfer sets; section 2.1: always DECLINE scores T = +50.0 at 216:72 (3:1).
    "table2_j": {"always-decline": 0.0, "always-answer": 0.0, "tense-rule": 1.0, "will-rule": 1.0},
    "always_decline_t": 0.5,
    "semantic_strict_delta_frontier": 0.0,  # Appendix C: 12 frontier models, delta 0.0p
}


@pytest.fixture(scope="module")
def aggarwal_study(shared, tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("aggarwal"), STUDIES / "aggarwal" / "study.toml")


def test_aggarwal_prints_the_papers_figures(aggarwal_study, capsys):
    from agreement.documents import DecisionDocument

    doc = read_document(DecisionDocument, aggarwal_study)
    rows = {(r.parser, r.group, r.name): r for r in doc.rows}
    k, n, printed = AGGARWAL_PUBLISHED["commit_fully_fabricated"]
    for parser in ("aggarwal-strict", "aggarwal-semantic"):
        overall = rows[(parser, "all", "all")]
        assert (overall.commit.k, overall.commit.n, f"{100 * overall.commit.statistic:.1f}%") == (k, n, printed)
        # Failed calls (no content, zero cost) told apart from unreadable output; both stay in the denominator.
        assert (overall.counts["failed"], overall.counts["unreadable"]) == (2, 18)
        assert overall.commit_without_failed.n == 286
    k, n, printed = AGGARWAL_PUBLISHED["commit_claude_fully_fabricated"]
    claude = rows[("aggarwal-semantic", "family", "anthropic")].commit
    assert (claude.k, claude.n, f"{100 * claude.statistic:.1f}%") == (k, n, printed)
    assert set(doc.never_commit) == AGGARWAL_PUBLISHED["never_commit"]
    assert set(doc.always_commit) <= AGGARWAL_PUBLISHED["commit_in_every_arm"]
    assert doc.lower_bound_models == ["qwen/qwen3.7-plus"]  # section 3.3: mostly unreadable, not restraint
    assert {d.delta_pp for d in doc.parser_deltas} == {AGGARWAL_PUBLISHED["semantic_strict_delta_frontier"]}
    composition = {c.judge: c for c in doc.composition}
    for judge, j in AGGARWAL_PUBLISHED["table2_j"].items():
        assert composition[judge].j == j, judge
        assert (composition[judge].n_unknowable, composition[judge].n_answerable) == (72, 24)
    assert composition["always-decline"].t == AGGARWAL_PUBLISHED["always_decline_t"]
    # Cohen's h of the Claude family (29/72) against the other nine models (77/216), written out.
    h = 2 * math.asin(math.sqrt(29 / 72)) - 2 * math.asin(math.sqrt(77 / 216))
    assert math.isclose(doc.equivalence["family_vs_rest_commit_cohens_h"]["anthropic"], h, abs_tol=1e-12)
    assert composition["aggarwal-semantic"].j is None  # the parsers read no decision in a bare question
    # accord run printed them (stdout), from the saved document.
    capsys.readouterr()
    assert main(["run", str(STUDIES / "aggarwal" / "study.toml"), "--output", str(aggarwal_study), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "aggarwal-semantic: commit 36.8% (106/288)" in out and "family anthropic: commit 40.3% (29/72)" in out
    assert "always-decline: J +0" in out and "T +50.0 on 72:24" in out and "will-rule: J +100" in out


def test_aggarwal_call_tool_survives_from_the_raw_outputs_to_the_document(aggarwal_study, shared):
    """Per model, the three decisions counted straight from the released JSON with plain string operations."""
    from agreement.documents import DecisionDocument

    raw = json.loads((shared / "data/aggarwal_calibration/data/scramfull_12models.json").read_text())
    expected: dict[str, dict[str, int]] = {}
    for r in raw:
        found = re.search(r"^\s*DECISION:\s*(ANSWER|CALL_TOOL|DECLINE)\b", (r["raw"] or "").replace("<answer>", "\n"), re.M)
        key = found.group(1) if found else ("failed" if not r["raw"] and r["usage"]["cost"] == 0 else "unreadable")
        counts = expected.setdefault(r["model"], {"ANSWER": 0, "CALL_TOOL": 0, "DECLINE": 0, "unreadable": 0, "failed": 0})
        counts[key] += 1
    doc = read_document(DecisionDocument, aggarwal_study)
    got = {r.name: r.counts for r in doc.rows if r.parser == "aggarwal-strict" and r.group == "model"}
    assert got == expected
    assert sum(c["CALL_TOOL"] for c in got.values()) == 64


def test_aggarwal_stated_probabilities_are_scored_against_the_resolved_outcomes(aggarwal_study, shared):
    from sklearn.metrics import brier_score_loss, roc_auc_score

    from agreement.documents import DecisionDocument

    raw = json.loads((shared / "data/aggarwal_calibration/data/scramfull_12models.json").read_text())
    pairs = []
    for r in raw:
        text = r["raw"] or ""
        if "DECISION: ANSWER" in text and (m := re.search(r"PROBABILITY_YES:\s*(\d+)", text)):
            pairs.append((int(m.group(1)) / 100, r["sealedYes"]))
    prob = read_document(DecisionDocument, aggarwal_study).probability
    p, y = [a for a, _ in pairs], [b for _, b in pairs]
    assert prob["n"] == len(pairs) == 106
    assert math.isclose(prob["brier"], brier_score_loss(y, p), abs_tol=1e-12)
    assert math.isclose(prob["auroc"], roc_auc_score(y, p), abs_tol=1e-12)


def test_aggarwal_people_code_decisions_and_call_tool_reaches_the_report(aggarwal_study, capsys):
    """Two people code the sampled outputs under the `decision` scheme (the study's [annotation] schemes), reading
    the decision line as the codebook says; the run goes on to validation, the gate and the report, and CALL_TOOL
    is a class of its own all the way (runs last: it adds labels to the module's study folder)."""
    from agreement.documents import DecisionDocument
    from annotate.app_backend import AnnotatorSession
    from annotate.store import Store

    decision = re.compile(r"^\s*(?:DECISION|RESPONSE)\s*:\s*(ANSWER|CALL_TOOL|DECLINE)\b", re.M)
    store = Store.for_study(aggarwal_study)
    try:
        for name in ("coder-1", "coder-2"):
            session = AnnotatorSession(store, store.add_annotator(name))
            for task_id in session.order():
                assert session.scheme(task_id) == "decision"
                found = decision.search(session.task(task_id).text.replace("<answer>", "\n"))
                # No stated decision: the codebook says not to infer one; the person ticks unsure.
                session.submit(task_id, found.group(1) if found else "DECLINE", base_revision=0, unsure=found is None)
    finally:
        store.close()
    capsys.readouterr()
    assert main(["run", str(STUDIES / "aggarwal" / "study.toml"), "--output", str(aggarwal_study), "--quiet"]) in (0, 1)
    humans = [json.loads(line) for line in (aggarwal_study / "labels" / "human.jsonl").read_text().splitlines()]
    assert len(humans) == 48 and "CALL_TOOL" in {h["label"] for h in humans}
    validation = read_document(ValidationDocument, aggarwal_study)
    (section,) = validation.sections
    semantic = next(v for v in section.judges_vs_humans if v.judge == "aggarwal-semantic")
    # People read the same decision lines as the semantic parser: on every unit both scored they agree.
    assert semantic.vs_majority.results["percent_agreement"].statistic == 1.0
    html = (aggarwal_study / "report" / "report.html").read_text()
    assert "Decisions (commit / decline / tool / unparsed / failed)" in html and "CALL_TOOL" in html
    # The decision figures come from the judges' labels only: people's labels arriving do not make them stale.
    from agreement.documents import stale_reasons

    assert stale_reasons(read_document(DecisionDocument, aggarwal_study), aggarwal_study) == []
