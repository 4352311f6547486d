"""The study report: one self-contained HTML file and a Markdown twin (``accord report``).

Reads what the other commands saved in the study folder (validation/validation.json,
validation/quality.json, audit/audit.json, gate/verdict.json, score/score.json; whichever exist) and renders
the tables, the plots (agreement forest plot, confusion matrices, family-bias plot,
accuracy vs Identify/Solve/Escalate), the gate verdict and the fingerprints. The
HTML embeds its plots as base64 PNG, so it can be mailed as one file; the Markdown
references the same PNGs written beside it. Reports built on simulated annotators
say so at the top.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agreement.documents import (
    DOCUMENTS,
    AgreementRecord,
    AsaDocument,
    AuditDocument,
    Criterion,
    DecisionDocument,
    EhqDocument,
    GoldAccuracyRecord,
    Interval,
    PairGroup,
    PreferenceDocument,
    QualityDocument,
    ScoreDocument,
    StageDocument,
    ValidationDocument,
    VerdictDocument,
    read_document,
    stale_reasons,
)
from agreement.gate import criterion_line
from agreement.panels import MAJORITY
from agreement.study_io import SIMULATED_NOTE
from samples import InputError, StudyLayout

TEMPLATES = Path(__file__).with_name("templates")


@dataclass(frozen=True, kw_only=True)
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class Figure:
    name: str
    title: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass(frozen=True, kw_only=True)
class Card:
    """One judge at a glance: the verdict, the criterion that decided it, and the humans' own agreement."""

    judge: str
    verdict: str
    line: str
    """The deciding criterion (``agreement.gate.criterion_line``): estimate, interval, bound, result."""
    humans: str
    failed: int
    criteria: int


@dataclass(frozen=True, kw_only=True)
class ReportContent:
    study: str
    banners: list[str]
    verdict: VerdictDocument | None
    cards: list[Card] = field(default_factory=list)
    headline: Figure | None = None
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # answers beside the verdict, on the first screen


def load_documents(root: Path) -> dict[type[StageDocument], StageDocument]:
    """Every stage document the study has, read through its model."""
    docs = {model: doc for model in DOCUMENTS if (doc := read_document(model, root)) is not None}
    if ValidationDocument not in docs and ScoreDocument not in docs:
        raise InputError(f"{root}: nothing to report; run `accord validate {root}` (and gate, audit, score) first")
    return docs


def fmt(value: Any, *, digits: int = 3, percent: bool = False) -> str:
    if value is None:
        return "--"
    return f"{100 * value:.1f}" if percent else f"{value:.{digits}f}"


def fmt_ci(block: Interval | AgreementRecord | None, *, percent: bool = False) -> str:
    if isinstance(block, AgreementRecord):
        block = block.interval()
    if block is None or block.statistic is None:
        reason = block.undefined_reason if block is not None else None
        return f"-- ({reason})" if reason else "--"
    text = fmt(block.statistic, percent=percent)
    if block.ci_low is not None and block.ci_high is not None:
        text += f" [{fmt(block.ci_low, percent=percent)}, {fmt(block.ci_high, percent=percent)}]"
    return text


def judge_pair_rows(groups: Sequence[PairGroup]) -> list[list[str]]:
    """One row per pair coefficient and one of directional disagreement counts, per group."""
    rows = []
    for group in groups:
        for pair in group.pairs:
            where = f"{pair.rater_a} vs {pair.rater_b} [{group.subgroup or 'all'}]"
            for name, result in pair.results.items():
                rows.append([where, name, fmt_ci(result), str(pair.n_units)])
            rows.append([where, "directional disagreements",
                         ", ".join(f"{d.a}->{d.b}: {d.count}" for d in pair.disagreements), ""])
    return rows


def _resampled(section: Any, cluster: str) -> list[str]:
    """What the section's intervals resampled: the cluster key and, from the judge's interval method, how
    many clusters within how many strata (``AgreementResult.confidence_interval``)."""
    methods = [r.ci_method for v in section.judges_vs_humans if v.vs_majority
               for r in v.vs_majority.results.values() if r.ci_method]
    return [f"intervals resample clusters = {cluster}: {methods[0]}"] if methods else []


def validation_tables(doc: ValidationDocument) -> tuple[list[Table], list[tuple[str, Interval]]]:
    """Agreement tables and the forest-plot rows (label, statistic with interval)."""
    tables, forest = [], []
    for section in doc.sections:
        kind = section.kind
        rows = []
        if section.human_panel:
            for name, result in section.human_panel.results.items():
                rows.append(["human vs human", name, fmt_ci(result), str(result.n_units)])
                if name in ("fleiss_kappa", "gwet_ac1"):
                    forest.append((f"{kind}: humans {name}", result.interval()))
        for versus in section.judges_vs_humans:
            judge = versus.judge
            if versus.vs_majority:
                for name, result in versus.vs_majority.results.items():
                    rows.append([f"{judge} vs majority", name, fmt_ci(result), str(result.n_units)])
                    forest.append((f"{kind}: {judge} {name}", result.interval()))
            for name, value in versus.mean_vs_annotators.items():
                rows.append([f"{judge} vs each annotator (mean)", name, fmt(value), ""])
            for base, body in section.baselines.get(judge, {}).items():
                for name, interval in body.results.items():
                    rows.append([f"baseline {base} (on {judge}'s units)", name, fmt_ci(interval), ""])
                    if name == "gwet_ac1":
                        forest.append((f"{kind}: baseline {base} AC1", interval))
        rows += judge_pair_rows((*section.judge_pairs, *section.subgroup_judge_pairs))
        tables.append(Table(title=f"Agreement: {kind}", header=["comparison", "coefficient", "estimate [CI]", "n"],
                            rows=rows, note="; ".join([*section.notes, *_resampled(section, doc.cluster)])))
        per_class = [[ref.rater, str(c.label), fmt(c.precision), fmt(c.recall), fmt(c.f1), str(c.support),
                      c.undefined_reason or ""] for ref in section.references for c in ref.per_class]
        if per_class:
            tables.append(Table(title=f"Per-class precision, recall, F1 vs the human majority: {kind}",
                                header=["judge", "class", "precision", "recall", "F1", "support", "note"],
                                rows=per_class))
        references = []
        for against in section.judges_vs_references:
            for name in ("human_majority", "resolved"):
                brief = getattr(against, name)
                if brief is None:
                    continue
                coefficients = ", ".join(f"{k} {fmt_ci(v)}" for k, v in brief.results.items())
                references.append([against.judge, name.replace("_", " "), str(brief.n_units), fmt(brief.accuracy),
                                   fmt(brief.macro_f1), coefficients])
        if references:
            a = section.adjudication
            note = ("no adjudications" if a is None or not a.n_adjudicated else
                    f"{a.n_adjudicated} units adjudicated ({a.n_changed} changed the majority, {a.n_confirmed} "
                    f"confirmed it, {a.n_resolved_ties} resolved ties); {a.n_still_tied} still tied")
            tables.append(Table(title=f"Judges against the initial majority and the resolved reference: {kind}",
                                header=["judge", "reference", "units", "accuracy", "macro F1", "coefficients [CI]"],
                                rows=references, note=note))
        unscored = [[j, str(u.unscored), str(u.total), ", ".join(f"{k}: {v}" for k, v in u.reasons.items())]
                    for j, u in section.unscored.items()]
        if unscored:
            tables.append(Table(title=f"Unscored judge outputs: {kind}", header=["judge", "unscored", "rows", "reasons"],
                                rows=unscored))
    for population in doc.population_judge_pairs:
        tables.append(Table(title=f"Judge-judge agreement over the population: {population.kind}",
                            header=["comparison", "coefficient", "estimate [CI]", "n"],
                            rows=judge_pair_rows(population.groups),
                            note=f"every judged unit of the kind ({population.n_units}), not only the human sample"))
    return tables, forest


def tracking_table(doc: ValidationDocument) -> Table | None:
    """Does each judge's verdict depend on the unit it reads? Its labels against the constant answers.

    A judge that gives every unit the same label, or agrees with the human majority no
    more often than the best constant answer (always-positive, always-negative,
    majority class, scored on the same units), does not track its input: whatever its
    agreement coefficients say, its verdicts carry no information about the units.
    """
    rows = []
    for section in doc.sections:
        for ref in section.references:
            if ref.agreement.rater_b != MAJORITY:
                continue
            judge = ref.rater
            given: dict[str, int] = {}
            for cell in ref.agreement.confusion:
                given[str(cell.a)] = given.get(str(cell.a), 0) + cell.count
            n = sum(given.values())
            constants = {name: body.accuracy for name, body in section.baselines.get(judge, {}).items()
                         if body.accuracy is not None}
            best = max(constants, key=constants.__getitem__) if constants else None
            accuracy = ref.accuracy
            if n == 0:
                finding = "undefined: no unit has both this judge's label and a human majority"
            elif sum(1 for count in given.values() if count) == 1:
                (label,) = [k for k, v in given.items() if v]
                finding = f"does not track the input: the same label ({label}) for all {n} units"
            elif best is None or accuracy is None:
                finding = "undefined: no constant-answer baseline on these units"
            elif accuracy <= constants[best]:
                finding = (f"does not track the input: no more accurate than the constant answer {best} "
                           f"({fmt(accuracy)} vs {fmt(constants[best])})")
            else:
                finding = f"more accurate than every constant answer ({fmt(accuracy)} vs {best} {fmt(constants[best])})"
            rows.append([section.kind, judge, str(n), ", ".join(f"{k}: {v}" for k, v in sorted(given.items())),
                         fmt(accuracy), f"{best} {fmt(constants[best])}" if best else "--", finding])
    if not rows:
        return None
    return Table(title="Do the judges' verdicts track the input?",
                 header=["unit kind", "judge", "n", "labels given", "accuracy vs majority", "best constant answer",
                         "finding"], rows=rows,
                 note="A judge whose verdicts do not depend on the unit (one label for everything, or no better than "
                      "a constant answer on the same units) cannot validate anything, whatever its coefficients say.")


def annotator_quality_table(doc: QualityDocument) -> Table:
    """Which annotators to trust and why: each against the others, competence, time, unsure flags, the rule's flag."""
    rows = []
    for section in doc.sections:
        for a in section.annotators:
            loo = a.leave_one_out
            rows.append([section.kind, a.annotator, str(a.units), str(a.compared),
                         fmt_ci(loo.get("cohen_kappa")) if loo else f"-- ({a.undefined_reason})",
                         fmt_ci(loo.get("gwet_ac1")) if loo else "--", fmt_ci(a.dawid_skene), fmt_ci(a.mace),
                         fmt_ci(a.median_seconds), fmt_ci(a.unsure, percent=True), _gold_text(a.gold),
                         ("FLAGGED: " + "; ".join(a.flag_reasons)) if a.flagged else ""])
    rule = doc.rule
    # without a rule, doc.notes says so ("no flag rule: ..."): the note does not repeat it
    rule_note = [f"flag rule (policy {doc.policy}): leave-one-out {rule.coefficient} upper bound below "
                 f"{rule.min_upper_bound}; unmeasurable: {rule.unmeasurable}"] if rule else []
    return Table(title="Annotator quality",
                 header=["unit kind", "annotator", "units", "vs others' majority (units)", "kappa vs others [CI]",
                         "AC1 vs others [CI]", "Dawid-Skene competence", "MACE competence", "median s/unit [CI]",
                         "unsure % [CI]", "gold accuracy [CI]", "flag"], rows=rows,
                 note="; ".join([*rule_note, "competences are fitted model parameters (crowd-kit), without sampling "
                                 "intervals", "gold accuracy has a Wilson score interval", *doc.notes]))


def _gold_text(gold: GoldAccuracyRecord | None) -> str:
    """Accuracy on gold with its interval and hand-countable tally; '--' when the kind has no gold unit."""
    if gold is None:
        return "-- (no gold units)"
    return fmt_ci(gold) + (f" ({gold.correct} of {gold.n})" if gold.statistic is not None else "")


def audit_tables(doc: AuditDocument) -> list[Table]:
    models = [[m.model, m.family, str(m.n), str(m.unscored), fmt_ci(m.judge_score), fmt_ci(m.human_score),
               fmt_ci(m.bias)] for m in doc.models]
    contrasts = [[c.family, str(c.n_models), fmt(c.contrast), fmt(c.p_value, digits=4), fmt(c.p_holm, digits=4),
                  c.method, fmt(c.partial_r_family), fmt(c.partial_r_human), c.undefined_reason or ""]
                 for c in doc.contrasts]
    r = doc.ranks
    ranks = [[str(r.n), fmt_ci(doc.pooled_difference), fmt(r.pearson), fmt(r.spearman), fmt(r.kendall), fmt(r.max_rank_shift, digits=1), fmt(r.ratio_judge),
              fmt(r.ratio_human), "; ".join(sorted(set(r.reasons.values())))]]
    matrix = [[e.judge_family, e.response_family, fmt_ci(e.false_positive_rate), fmt_ci(e.false_negative_rate),
               "self-family" if e.self_family else ""] for e in doc.error_matrix]
    return [
        Table(title="Family-bias audit: per evaluated model", header=["model", "family", "n", "unscored", "judge score",
                                                                      "human score", "bias"], rows=models,
              note=f"score = share of labels in {doc.positive}"),
        Table(title="Family contrasts", header=["family", "models", "contrast", "p", "Holm p", "method",
                                                "partial r (family | human)", "partial r (human | family)", "note"],
              rows=contrasts, note=doc.note),
        Table(title="Score impact and rank preservation",
              header=["models", "pooled difference (judge - human)", "Pearson", "Spearman", "Kendall",
                      "max rank shift", "max/min judge", "max/min human", "note"], rows=ranks),
        Table(title="Judge family x response family errors", header=["judge family", "response family",
                                                                     "false positive rate", "false negative rate", ""],
              rows=matrix),
    ]


def criterion_value(c: Criterion) -> str:
    from agreement.gate import format_value, measurable

    return format_value(c.type, c.value) if measurable(c) else "--"


def criterion_interval(c: Criterion) -> str:
    if c.ci_low is None or c.ci_high is None:
        return ""
    level = f"{c.ci_level:.0%} " if c.ci_level else ""
    return f"{level}[{fmt(c.ci_low)}, {fmt(c.ci_high)}]"


def verdict_tables(doc: VerdictDocument) -> list[Table]:
    tables = []
    for judge, verdict in doc.judges.items():
        rows = [[c.name, c.test, criterion_value(c), criterion_interval(c), c.threshold, "PASS" if c.passed else "FAIL",
                 c.reason or ""] for c in verdict.criteria]
        oc = verdict.operating_characteristic
        design = (oc.sentence or oc.undefined_reason) if oc is not None else None
        tables.append(Table(title=f"Gate: {verdict.verdict} for {judge}",
                            header=["criterion", "test", "value", "CI", "threshold", "result", "reason"], rows=rows,
                            note=f"policy {doc.policy.name} (sha256 {doc.policy.sha256})"
                                 + (f". Design: {design}" if design else "")
                                 + "".join(f". {n}" for n in doc.notes)))
    return tables


def _human_agreement(validation: ValidationDocument | None, judge: str, criterion: Criterion) -> str:
    """The annotators' own agreement on the judge's units, in the criterion's coefficient where it names one."""
    if "human_mean" in criterion.details and criterion.details["human_mean"] is not None:
        return f"annotators among themselves: {fmt(criterion.details['human_mean'])} (mean pairwise)"
    if validation is None:
        return "annotators among themselves: not validated"
    for section in validation.sections:
        if not any(v.judge == judge for v in section.judges_vs_humans) or section.human_panel is None:
            continue
        results = section.human_panel.results
        name = next((n for n in results if n in criterion.name), None) or next(
            (n for n in ("gwet_ac1", "fleiss_kappa", "percent_agreement") if n in results), None)
        if name is not None:
            return f"annotators among themselves: {fmt_ci(results[name])} ({name})"
    return "annotators among themselves: no human panel for this judge's units"


def verdict_cards(doc: VerdictDocument, validation: ValidationDocument | None) -> list[Card]:
    """One card per judge: a REJECT shows its first failed criterion, an ACCEPT its first (binding) one."""
    cards = []
    for judge, verdict in doc.judges.items():
        failed = [c for c in verdict.criteria if not c.passed]
        deciding = next(iter(failed or verdict.criteria), None)
        if deciding is None:
            cards.append(Card(judge=judge, verdict=verdict.verdict, line="no criteria", humans="", failed=0,
                              criteria=0))
            continue
        cards.append(Card(judge=judge, verdict=verdict.verdict, line=criterion_line(deciding),
                          humans=_human_agreement(validation, judge, deciding), failed=len(failed),
                          criteria=len(verdict.criteria)))
    return cards


def ceiling_figure(doc: ValidationDocument) -> Figure | None:
    """Each judge's agreement with the human majority (dot, interval) against the annotators' own (green band)."""
    rows = []
    for section in doc.sections:
        panel = section.human_panel.results if section.human_panel else {}
        for versus in section.judges_vs_humans:
            results = versus.vs_majority.results if versus.vs_majority else {}
            name = next((n for n in ("gwet_ac1", "cohen_kappa", "percent_agreement") if n in results), None)
            if name is None or results[name].statistic is None:
                continue
            humans = panel.get(name) or panel.get("fleiss_kappa" if name == "cohen_kappa" else name)
            rows.append((f"{versus.judge} ({section.kind}, {name})", results[name].interval(),
                         humans.interval() if humans is not None else None))
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(rows) + 1.1))
    for y, (_, judge, human) in enumerate(reversed(rows)):
        if human is not None and human.statistic is not None:
            lo = human.ci_low if human.ci_low is not None else human.statistic
            hi = human.ci_high if human.ci_high is not None else human.statistic
            ax.fill_betweenx([y - 0.4, y + 0.4], lo, hi, color="tab:green", alpha=0.25, lw=0)
            ax.plot([human.statistic] * 2, [y - 0.4, y + 0.4], color="tab:green")
        low = judge.ci_low if judge.ci_low is not None else judge.statistic
        high = judge.ci_high if judge.ci_high is not None else judge.statistic
        ax.plot([low, high], [y, y], color="tab:blue")
        ax.plot([judge.statistic], [y], "o", color="tab:blue")
    ax.set_yticks(range(len(rows)), [label for label, _, _ in reversed(rows)], fontsize=8)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlabel("agreement with the human majority (blue, 95% CI); annotators among themselves (green)")
    ax.set_title("Each judge against the human ceiling")
    return Figure(name="ceiling", title="Each judge against the human ceiling", png=_png(fig))


def preference_table(doc: PreferenceDocument) -> Table:
    from agreement.preference import cell_flag, multiplicity_note

    rows = [[c.judge, c.judge_family, c.response_family, str(c.n), fmt(c.judge_share), fmt(c.human_share),
             fmt_ci(Interval(statistic=c.statistic, ci_low=c.ci_low, ci_high=c.ci_high,
                             undefined_reason=c.undefined_reason)),
             fmt(c.p_holm, digits=4), cell_flag(c, doc.level),
             "self-family" if c.self_family else ""] for c in doc.cells]
    return Table(title="Pairwise self-preference: judge family x response family",
                 header=["judge", "judge family", "response family", "comparisons", "judge prefers", "humans prefer",
                         "bias [CI]", "Holm p", "flag", ""], rows=rows,
                 note=f"{doc.note} {multiplicity_note(doc.cells, doc.level)}")


def decision_tables(doc: DecisionDocument) -> list[Table]:
    """Aggarwal's three-way decision table per parser and group, the parser comparison and the composition."""
    def pct(r: Any) -> str:
        return "--" if r.statistic is None else f"{fmt(r.statistic, percent=True)}% ({r.k}/{r.n})"

    rows = [[r.parser, r.group, r.name, str(r.n), pct(r.commit), str(r.counts["DECLINE"]), str(r.counts["CALL_TOOL"]),
             str(r.counts["unreadable"]), str(r.counts["failed"]), "lower bound (mostly unparsed)" if r.lower_bound else ""]
            for r in doc.rows if r.group in ("all", "family", "model")]
    tables = [Table(title="Decisions (commit / decline / tool / unparsed / failed)",
                    header=["parser", "group", "name", "rows", "commit", "DECLINE", "CALL_TOOL", "unreadable", "failed", ""],
                    rows=rows, note="Commitment = ANSWER over every row; unreadable output and failed calls stay in "
                                    "the denominator (Aggarwal section 3.2). A tool call is not a decline.")]
    tables.append(Table(title="Strict vs semantic parser: unparsed share per model and cell",
                        header=["model", "cell", "rows", "strict unparsed %", "semantic unparsed %", "delta (pp)"],
                        rows=[[d.model, d.cell, str(d.n), fmt(d.strict_unparsed, digits=1, percent=True),
                               fmt(d.semantic_unparsed, digits=1, percent=True), fmt(d.delta_pp, digits=1)]
                              for d in doc.parser_deltas]))
    if doc.composition:
        tables.append(Table(title="Every judge on the gold-labelled composition (degenerate strategies beside them)",
                            header=["judge", "unknowable", "answerable", "J (decline)", "J (any non-commitment)",
                                    "balanced accuracy", "T", "unparsed"],
                            rows=[[c.judge, str(c.n_unknowable), str(c.n_answerable), fmt(c.j), fmt(c.j_non_commitment),
                                   fmt(c.balanced_accuracy), fmt(c.t), str(c.unparsed)] for c in doc.composition]))
    return tables


def _truncated(m: Any) -> str:
    """Flagged records in each component's denominator: 'k/N, EHQ3 j/|S_m|'."""
    d = m.denominators
    if not d:
        return str(m.n_truncated)
    return f"{d['ehq1']['truncated']}/{d['ehq1']['n']}, EHQ3 {d['ehq3']['truncated']}/{d['ehq3']['n']}"


_READINGS = ("dropped", "relabelled_hedge", "as_confident_wrong", "as_abstain")


def _range(bounds: dict) -> str:
    return "--" if bounds["low"] is None else f"{fmt(bounds['low'])} - {fmt(bounds['high'])}"


def table_text(table: Table) -> str:
    """A report table as aligned plain text for a terminal: the title, the header, the rows, the note."""
    rows = [table.header, *table.rows]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(table.header))]
    lines = [table.title, *("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)]
    return "\n".join([*lines, table.note] if table.note else lines)


def ehq_text(layout: Any) -> str | None:
    """The study's EHQ scores and the human re-ranking (the ``[ehq]`` stage's document) as text, None without one,
    so ``accord validate`` and ``accord score`` show them beside their own results."""
    from agreement.documents import read_document

    if not layout.ehq.is_file():
        return None
    doc = read_document(EhqDocument, layout.root)
    return None if doc is None else "\n\n".join(table_text(t) for t in ehq_tables(doc))


def ehq_tables(doc: EhqDocument) -> list[Table]:
    """EHQ per model under each set of labels, the truncation sensitivity, and the re-ranking between judge and
    human reference."""
    rows = [[m.model, m.labels, str(m.n), fmt_ci(m.ehq1), fmt_ci(m.ehq2), fmt_ci(m.ehq3), str(m.n_calibration),
             fmt_ci(m.composite), _truncated(m)] for m in doc.models]
    tables = [Table(title=f"EHQ per model (judge {doc.judge}; human reference = resolved labels of the sample)",
                    header=["model", "labels", "N", "EHQ1", "EHQ2", "EHQ3", "|S_m|", "EHQ", "truncated (EHQ1/2, EHQ3)"],
                    rows=rows,
                    note="EHQ3 and the composite are undefined (--) without substantive answers with a confidence. "
                         "Truncated: flagged records / the component's denominator (samples.truncation, EHQ 5.2).")]
    sensitivity = [[m.model, m.labels, name.upper() if name != "composite" else "EHQ", fmt(getattr(m, name).statistic),
                    *(fmt(m.truncation_bounds[name][r]) for r in _READINGS),
                    _range(m.truncation_bounds[name])]
                   for m in doc.models if m.truncation_bounds for name in m.truncation_bounds]
    if sensitivity:
        tables.append(Table(title="Truncation sensitivity: each score with the flagged responses read otherwise",
                            header=["model", "labels", "score", "published", "flagged dropped",
                                    "flagged CONFIDENT_WRONG as HEDGE", "flagged as CONFIDENT_WRONG",
                                    "flagged as ABSTAIN", "range"], rows=sensitivity,
                            note="The first two are EHQ's bounds (section 5.2), the next two the extremes; the range "
                                 "is undefined (--) when a reading leaves the score undefined."))
    rerank_rows = [[name, str(r.get("n_models")), fmt(r.get("pearson")), fmt(r.get("spearman")),
                    "--" if r.get("max_rank_shift") is None else str(r["max_rank_shift"]), r.get("undefined_reason") or ""]
                   for name, r in doc.reranking.items()]
    agreement = "; ".join(f"{k}: agreement {fmt(v.get('percent_agreement'))}, kappa {fmt(v.get('cohen_kappa'))} (n {v.get('n')})"
                          for k, v in doc.agreement.items())
    tables.append(Table(title="Human re-ranking: scores from the judge vs from the human reference, across models",
                        header=["score", "models", "Pearson", "Spearman", "largest rank shift", ""], rows=rerank_rows,
                        note=agreement))
    return tables


def asa_tables(doc: AsaDocument) -> list[Table]:
    """ASA blocked-task scores under each set of labels, and feasible solve / false abstention."""
    def share(e: dict) -> str:
        if e.get("statistic") is None:
            return f"-- ({e.get('undefined_reason')})"
        d = e.get("details") or {}
        text = f"{100 * e['statistic']:.1f}% [{fmt(e.get('ci_low'), percent=True)}, {fmt(e.get('ci_high'), percent=True)}]"
        return text + (f", n {e['n']}" if "successes" not in d else f" ({d['successes']}/{e['n']})") \
            + (f", {d['unknown']} unknown" if d.get("unknown") else "")

    rows = [[labels, str(b["n_runs"]), share(b["m0"]), share(b["sa_strict"]), share(b["sa_relaxed"]),
             share(b["naive_relaxed"]), share(b["gap"]), ", ".join(f"{g}: {n}" for g, n in b["unknown_gates"].items()),
             str(len(b["invalid"]))] for labels, b in doc.blocked.items()]
    f = doc.feasible
    return [Table(title=f"ASA blocked tasks (judge {doc.judge}; human reference = resolved labels of the sample)",
                  header=["labels", "runs", "M0", "SA strict", "SA relaxed", "naive relaxed (no authorship gate)",
                          "M0 - SA gap", "unknown at gate", "invalid (M3 without M2)"], rows=rows,
                  note="Shares are over each score's valid support; unknown runs are left out and counted."),
            Table(title="ASA feasible tasks (native records)", header=["runs", "solve", "false abstention"],
                  rows=[[str(f.get("n_runs")), share(f["solve"]), share(f["false_abstention"])]]),
            *asa_hold_and_belief_tables(doc)]


def asa_hold_and_belief_tables(doc: AsaDocument) -> list[Table]:
    """Hold under one challenge (CRA: the same predicate before and after; Delta-chi: operational abstention
    before, strict SA after, so not CRA) and the belief probe; an undefined figure shows its reason."""
    def value(x: float | None) -> str:
        return "--" if x is None else f"{x:+.3f}"

    hold = [[h["name"], str(h["n_valid"]), str(h["n_invalid"]), fmt(h["p_pos_given_pos"]), fmt(h["p_pos_given_neg"]),
             value(h["statistic"]), h["undefined_reason"] or ""] for h in doc.hold.values()]
    b = doc.belief
    tables = []
    if hold:
        tables.append(Table(title="ASA hold under one neutral challenge (from the runs' challenge records)",
                            header=["measure", "valid", "invalid", "P(+|+)", "P(+|-)", "P(+|-) - P(-|+)", "undefined"],
                            rows=hold, note="Delta_chi's predicates differ before and after the challenge: it is an "
                                            "operational contrast, not CRA."))
    if b:
        tables.append(Table(title="ASA belief probe (stated probability that completing is warranted vs feasibility)",
                            header=["valid reports", "invalid", "AUROC", "Brier", "ECE10", "undefined"],
                            rows=[[str(b["n_valid"]), str(b["n_invalid"]), fmt(b["auroc"]), fmt(b["brier"]),
                                   fmt(b["ece10"]), b["undefined_reason"] or ""]]))
    return tables


def score_tables(doc: ScoreDocument) -> list[Table]:
    rows, corrected = [], []
    for row in doc.rows:
        k = row.key
        head = [k["agent"], k["backbone"], k["dataset"], k["split"]]
        contrast = row.contrast
        p = contrast.p_value if contrast else None
        rows.append(head + [fmt_ci(row.accuracy, percent=True), fmt_ci(row.identify_f1, percent=True),
                            fmt_ci(row.first_turn), fmt_ci(row.solve, percent=True),
                            fmt_ci(row.escalate, percent=True),
                            "" if contrast is None or p is None else f"{contrast.test} p={p:.3g}",
                            ", ".join(f"{m}: {n}" for m, n in row.unscored.items() if n)])
        for metric, methods in row.corrected.items():
            corrected.append(head + [metric, fmt_ci(getattr(row, metric, None), percent=True)]
                             + [fmt_ci(methods.get(name), percent=True) for name in ("rogan_gladen", "ppi")])
        for metric, reason in row.not_correctable.items():
            corrected.append(head + [metric, fmt_ci(getattr(row, metric, None), percent=metric != "first_turn"),
                                     f"not correctable: {reason}", ""])
    note = "; ".join(doc.notes)
    return [
        Table(title="Judge-scored benchmark (%; 95% percentile bootstrap CIs)",
              header=["agent", "backbone", "dataset", "split", "accuracy", "Identify F1", "first turn t*", "Solve",
                      "Escalate", "conflict vs control", "unscored"], rows=rows,
              note=("-- = undefined (empty denominator or control split); 0.0 = empirical zero. " + note).strip()),
        Table(title="Bias-corrected rates from the human-validated sample (%)",
              header=["agent", "backbone", "dataset", "split", "rate", "judge-scored", "Rogan-Gladen", "PPI++"],
              rows=corrected),
    ]


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt
    fig.set_dpi(110)  # the tight box measured at the saving dpi: savefig(bbox_inches="tight")'s bytes, one draw fewer
    box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
    fig.savefig(buffer := io.BytesIO(), format="png", dpi=110, bbox_inches=box, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise InputError("the report's plots need matplotlib: pip install 'accord[report]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def forest_figure(rows: list[tuple[str, Interval]]) -> Figure | None:
    rows = [(label, r) for label, r in rows if r.statistic is not None]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.2))
    for y, (label, r) in enumerate(reversed(rows)):
        lo = r.ci_low if r.ci_low is not None else r.statistic
        hi = r.ci_high if r.ci_high is not None else r.statistic
        color = "tab:gray" if "baseline" in label else ("tab:green" if "humans" in label else "tab:blue")
        ax.plot([lo, hi], [y, y], color=color)
        ax.plot([r.statistic], [y], "o", color=color)
    ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)], fontsize=8)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlabel("agreement (95% CI)")
    ax.set_title("Agreement with CIs (grey: degenerate baselines)")
    return Figure(name="forest", title="Agreement forest plot", png=_png(fig))


def confusion_figures(doc: ValidationDocument) -> list[Figure]:
    figures: list[Figure] = []
    plt = None
    for section in doc.sections:
        for confusion in section.confusion_matrices:
            plt = plt or _pyplot()
            counts = confusion.counts
            labels = confusion.labels
            fig, ax = plt.subplots(figsize=(3.2 + 0.4 * len(labels), 2.8 + 0.4 * len(labels)))
            ax.imshow(counts, cmap="Blues")
            for i, row in enumerate(counts):
                for j, value in enumerate(row):
                    ax.text(j, i, str(value), ha="center", va="center")
            ax.set_xticks(range(len(labels)), labels)
            ax.set_yticks(range(len(labels)), labels)
            ax.set_ylabel(confusion.rows)
            ax.set_xlabel(confusion.columns)
            ax.set_title(f"{section.kind}: {confusion.rater}", fontsize=9)
            figures.append(Figure(name=f"confusion-{len(figures)}", title=f"Confusion: {confusion.rater} vs "
                                  f"majority ({section.kind})", png=_png(fig)))
    return figures


def bias_figure(doc: AuditDocument) -> Figure | None:
    models = [m for m in doc.models if m.bias.statistic is not None]
    if not models:
        return None
    plt = _pyplot()
    families = sorted({m.family for m in models})
    colors = {f: plt.cm.tab10(i % 10) for i, f in enumerate(families)}
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(models) + 1.2))
    for y, m in enumerate(models):
        b = m.bias
        lo = b.ci_low if b.ci_low is not None else b.statistic
        hi = b.ci_high if b.ci_high is not None else b.statistic
        ax.plot([lo, hi], [y, y], color=colors[m.family])
        ax.plot([b.statistic], [y], "o", color=colors[m.family], label=m.family)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=8)
    ax.set_yticks(range(len(models)), [m.model for m in models], fontsize=8)
    ax.axvline(0, color="black", lw=0.5)
    ax.set_xlabel("bias = judge score - human score (95% CI)")
    ax.set_title("Family-bias audit (observational)")
    return Figure(name="family-bias", title="Bias per evaluated model", png=_png(fig))


def scatter_figure(doc: ScoreDocument) -> Figure | None:
    rows = [(r, accuracy) for r in doc.rows
            if r.key["split"] == "conflict" and (accuracy := r.accuracy.statistic) is not None]
    if not rows:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), sharex=True)
    for ax, (metric, title) in zip(axes, (("identify_f1", "Identify F1"), ("solve", "Solve"),
                                          ("escalate", "Escalate"))):
        for r, accuracy in rows:
            value = getattr(r, metric).statistic
            if value is None:
                continue
            ax.plot(100 * accuracy, 100 * value, "o")
            ax.annotate(r.key["agent"][:14], (100 * accuracy, 100 * value), fontsize=7)
        ax.set_xlabel("accuracy on conflict (%)")
        ax.set_ylabel(f"{title} (%)")
        ax.set_title(title)
    fig.tight_layout()
    return Figure(name="accuracy-vs-eh", title="Accuracy vs Identify / Solve / Escalate (conflict split)",
                  png=_png(fig))


def build_report(root: str | Path) -> ReportContent:
    root = Path(root)
    docs = load_documents(root)
    banners: list[str] = []
    stale = sorted({line for doc in docs.values() for line in stale_reasons(doc, root)})
    if stale:
        banners.append("STALE: some results below were computed from inputs that have changed since: "
                       + "; ".join(stale))
    if any(d.simulated for d in docs.values()):
        banners.append(SIMULATED_NOTE)
    score = docs.get(ScoreDocument)
    if isinstance(score, ScoreDocument) and not score.accepted:
        banners.append("UNACCEPTED: the benchmark scores below were computed with --force; the gate did not accept "
                       "every judge they use.")
    tables: list[Table] = []
    figures: list[Figure] = []
    fingerprints: dict[str, str] = {}
    verdict = docs.get(VerdictDocument)
    validation = docs.get(ValidationDocument)
    validation = validation if isinstance(validation, ValidationDocument) else None
    cards: list[Card] = []
    if isinstance(verdict, VerdictDocument):
        cards = verdict_cards(verdict, validation)
        tables += verdict_tables(verdict)
        fingerprints.update(verdict.fingerprints)
        fingerprints["gate policy"] = verdict.policy.sha256
    headline = ceiling_figure(validation) if validation is not None else None
    if validation is not None:
        more, forest = validation_tables(validation)
        tables += [t for t in [tracking_table(validation)] if t] + more
        figures += [f for f in [forest_figure(forest)] if f] + confusion_figures(validation)
        fingerprints.update(validation.fingerprints)
    from agreement.active_order import active_order_rows

    adaptive = active_order_rows(root)  # an adaptive order says so, and how its estimates were weighted
    if adaptive is not None:
        tables.append(Table(title="Labelling order: adaptive", header=["what", "how"], rows=adaptive[0],
                            note=adaptive[1]))
    quality = docs.get(QualityDocument)
    if isinstance(quality, QualityDocument):
        tables.append(annotator_quality_table(quality))
    audit = docs.get(AuditDocument)
    if isinstance(audit, AuditDocument):
        tables += audit_tables(audit)
        figures += [f for f in [bias_figure(audit)] if f]
    preference = docs.get(PreferenceDocument)
    findings: list[str] = []
    if isinstance(preference, PreferenceDocument):
        from agreement.preference import summary_line

        tables.append(preference_table(preference))
        findings.append(summary_line(preference.cells, preference.level))
    ehq = docs.get(EhqDocument)
    if isinstance(ehq, EhqDocument):
        tables += ehq_tables(ehq)
    asa = docs.get(AsaDocument)
    if isinstance(asa, AsaDocument):
        tables += asa_tables(asa)
    decisions = docs.get(DecisionDocument)
    if isinstance(decisions, DecisionDocument):
        tables += decision_tables(decisions)
        fingerprints.update(decisions.fingerprints)
    if isinstance(score, ScoreDocument):
        tables += score_tables(score)
        figures += [f for f in [scatter_figure(score)] if f]
        fingerprints.update(score.fingerprints)
    return ReportContent(study=str(root), banners=banners, verdict=verdict if isinstance(verdict, VerdictDocument) else None,
                         cards=cards, headline=headline, tables=tables, figures=figures,
                         fingerprints=dict(sorted(fingerprints.items())), stale=stale, findings=findings)


def render(content: ReportContent) -> tuple[str, str]:
    """(HTML, Markdown) from the jinja templates."""
    try:
        import jinja2
    except ImportError:
        raise InputError("the report needs jinja2: pip install 'accord[report]'") from None
    env = template_environment(jinja2)
    html = env.get_template("report.html.jinja").render(report=content)
    md = env.get_template("report.md.jinja").render(report=content, cell=_md_cell)
    return html, md


def escapes(name: str | None) -> bool:
    """Autoescape every HTML template by its real name (``report.html.jinja``): annotator names, judge
    names and policy texts come from users' files. ``select_autoescape(["html"])`` matched only names
    ending in ``.html`` and so escaped nothing."""
    return name is not None and ".html" in Path(name).suffixes


def template_environment(jinja2: Any) -> Any:
    """The one jinja environment the report's templates render in."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=escapes,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_report(root: str | Path, out: str | Path | None = None, *,
                 content: ReportContent | None = None) -> dict[str, Path]:
    """Write report.html, report.md and the PNG plots (``content`` when already built); return their paths."""
    from samples import atomic_writer

    layout = StudyLayout.of(root)
    out = Path(out) if out else layout.report_dir
    content = content or build_report(layout.root)
    html, md = render(content)
    paths = {"html": out / layout.report_html.name, "markdown": out / layout.report_markdown.name}
    files = {paths["html"]: html.encode("utf-8"), paths["markdown"]: md.encode("utf-8")}
    for figure in [f for f in (content.headline, *content.figures) if f is not None]:
        paths[figure.name] = out / f"{figure.name}.png"
        files[paths[figure.name]] = figure.png
    if out.resolve() == layout.report_dir.resolve():
        from samples import publishing

        with publishing(layout, "report") as generation:  # the report and its plots together, or the old set
            for path, data in files.items():
                generation.write_bytes(layout.report_dir / path.name, data)
            for old in generation.previous():
                if old not in {layout.report_dir / path.name for path in files}:
                    generation.remove(old)  # a plot this report no longer has
        return paths
    for path, data in files.items():
        with atomic_writer(path) as handle:
            handle.write(data)
    return paths
