"""Agreement statistics with honest uncertainty: coefficients, panels, gate, scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # where each public name lives: type checkers read it, lazy_exports imports it on first use
    from agreement.active_order import publish_active_order
    from agreement.alttest import AltTestResult, alt_test, alt_test_table
    from agreement.anytime import sequential_plan
    from agreement.asa import asa_study
    from agreement.audit import AuditResult, format_audit, format_versus_majority, read_audit_table
    from agreement.audit import audit as family_audit
    from agreement.bootstrap import DEFAULT_SEED
    from agreement.coefficients import (
        ALPHA_LEVELS,
        COEFFICIENTS,
        Coefficient,
        PrevalenceBias,
        brennan_prediger,
        cohen_kappa,
        compute,
        compute_pairs,
        compute_subsets,
        conger_kappa,
        fleiss_kappa,
        gwet_ac1,
        gwet_ac2,
        krippendorff_alpha,
        light_kappa,
        percent_agreement,
        prevalence_bias_indices,
        register_coefficient,
        scott_pi,
        shared_results,
    )
    from agreement.correction import ppi_mean, rogan_gladen
    from agreement.criteria import register_criterion
    from agreement.decisions import DecisionSettings, decision_study, summary_lines
    from agreement.documents import (
        DOCUMENTS,
        AsaDocument,
        AuditDocument,
        DecisionDocument,
        EhqDocument,
        Interval,
        PreferenceDocument,
        QualityDocument,
        ScoreDocument,
        ValidationDocument,
        VerdictDocument,
        parse_document,
        read_document,
        stale_reasons,
    )
    from agreement.ehq import ehq_study
    from agreement.estimate import Estimate
    from agreement.gate import Verdict, gate_study, load_policy
    from agreement.identity import evaluated_families, self_family_notes
    from agreement.majority import TIE_POLICIES, MajorityVote, majority_vote
    from agreement.monitor import COMPLETE_MESSAGE, anytime_state, criterion_rows, state_lines, study_decided
    from agreement.panels import (
        ClassMetrics,
        HumanPanel,
        JudgePairTable,
        JudgeVsHumans,
        PairPanel,
        PanelReport,
        PanelSettings,
        ReferenceReport,
        compare_pairs,
        human_panel,
        panel_report,
        report_to_dict,
    )
    from agreement.plan import Design, format_plan, plot_oc
    from agreement.plan import plan as plan_policy
    from agreement.preference import preference_study, summary_line
    from agreement.preregistration import preregister
    from agreement.quality import QualitySettings, format_quality, quality_table, run_quality, settings_from_policy
    from agreement.report import (
        Table,
        annotator_quality_table,
        build_report,
        ehq_text,
        fmt_ci,
        verdict_cards,
        write_report,
    )
    from agreement.results import CI_METHODS, AgreementResult
    from agreement.scoring import GateRefusal, ScoreRow, format_score, refuse_other_calls, score_study, score_table
    from agreement.study_audit import audit_study
    from agreement.study_io import (
        Study,
        human_label_fingerprints,
        human_label_tables,
        labels_table,
        load_study,
        print_document,
        publish,
        read_human_labels,
        read_key,
        read_rows,
        status,
        strata_columns,
    )
    from agreement.table import RatingData, load_labels
    from agreement.validation import (
        ValidationResult,
        codebook_versions,
        format_validation,
        population_table,
        rating_data,
        scheme_of,
        validate_by_codebook,
        validate_study,
        validate_table,
    )
    from agreement.validation import _result_brief as result_brief
    from agreement.weights import WEIGHT_FAMILIES, weight_matrix
else:
    from samples import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    # agreement.active_order: The active order people label in: units where judges of different families disagree ...
    "publish_active_order",
    # agreement.alttest: The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025)
    "AltTestResult",
    "alt_test",
    "alt_test_table",
    # agreement.anytime: The gate under continuous monitoring: a verdict that may be looked at after every label
    "sequential_plan",
    # agreement.asa: ASA ("Agentic Self-Awareness: Aligning Knowing, Acting, and Holding", seed 003): the scores
    "asa_study",
    # agreement.audit: Family-bias audit: does a judge err differently on responses from different model families?
    "AuditResult",
    "family_audit",
    "format_audit",
    "format_versus_majority",
    "read_audit_table",
    # agreement.bootstrap: The resampling design: exact multinomial unit/cluster bootstrap without a B x n matrix
    "DEFAULT_SEED",
    # agreement.coefficients: Agreement coefficients with analytic SEs and a shared, seeded, vectorised bootstrap
    "ALPHA_LEVELS",
    "COEFFICIENTS",
    "Coefficient",
    "PrevalenceBias",
    "brennan_prediger",
    "cohen_kappa",
    "compute",
    "compute_pairs",
    "compute_subsets",
    "conger_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "gwet_ac2",
    "krippendorff_alpha",
    "light_kappa",
    "percent_agreement",
    "prevalence_bias_indices",
    "register_coefficient",
    "scott_pi",
    "shared_results",
    # agreement.correction: Bias-corrected rates from a human-validated sample: Rogan-Gladen and PPI++
    "ppi_mean",
    "rogan_gladen",
    # agreement.criteria: What a gate criterion is: the ``Criterion`` protocol, its result, and the ``CRITERIA`` ...
    "register_criterion",
    # agreement.decisions: Aggarwal's decision statistics ("Calibrated Enough to Know, Not Calibrated to Act", seed 004)
    "DecisionSettings",
    "decision_study",
    "summary_lines",
    # agreement.documents: Typed stage documents: what validate, quality, audit, gate and score save, read back ...
    "AsaDocument",
    "AuditDocument",
    "DOCUMENTS",
    "DecisionDocument",
    "EhqDocument",
    "Interval",
    "PreferenceDocument",
    "QualityDocument",
    "ScoreDocument",
    "ValidationDocument",
    "VerdictDocument",
    "parse_document",
    "read_document",
    "stale_reasons",
    # agreement.ehq: EHQ ("Do Large Language Models Know What They Don't Know II", seed 002), section 3: the ...
    "ehq_study",
    # agreement.estimate: One estimate with its interval, and the resampling schemes the benchmark tables share
    "Estimate",
    # agreement.gate: The acceptance gate: may this judge score the full benchmark?
    "Verdict",
    "gate_study",
    "load_policy",
    # agreement.identity: The exact call a judge's labels come from, and whether a verdict covers it
    "evaluated_families",
    "self_family_notes",
    # agreement.majority: The human majority label per unit, with an explicit, counted tie policy
    "MajorityVote",
    "TIE_POLICIES",
    "majority_vote",
    # agreement.monitor: The anytime verdict while people label: what the dashboard and `accord run` show, and ...
    "COMPLETE_MESSAGE",
    "anytime_state",
    "criterion_rows",
    "state_lines",
    "study_decided",
    # agreement.panels: Agreement panels: the tables the seed papers report, from one labels table
    "ClassMetrics",
    "HumanPanel",
    "JudgePairTable",
    "JudgeVsHumans",
    "PairPanel",
    "PanelReport",
    "PanelSettings",
    "ReferenceReport",
    "compare_pairs",
    "human_panel",
    "panel_report",
    "report_to_dict",
    # agreement.plan: Planning a validation: a policy's operating characteristic and the units it needs
    "Design",
    "format_plan",
    "plan_policy",
    "plot_oc",
    # agreement.preference: Self-preference in pairwise judging: does a judge favour answers from its own model family?
    "preference_study",
    "summary_line",
    # agreement.preregistration: Validation that cannot be tuned on: registration before the labels, versions gated ...
    "preregister",
    # agreement.quality: Annotator quality: which of the people behind the human reference to trust, and why
    "QualitySettings",
    "format_quality",
    "quality_table",
    "run_quality",
    "settings_from_policy",
    # agreement.report: The study report: one self-contained HTML file and a Markdown twin (``accord report``)
    "Table",
    "annotator_quality_table",
    "build_report",
    "ehq_text",
    "fmt_ci",
    "verdict_cards",
    "write_report",
    # agreement.results: ``AgreementResult``: one coefficient with its analytic SE, bootstrap draws and intervals
    "AgreementResult",
    "CI_METHODS",
    # agreement.scoring: The judge-scored benchmark: ISE Eq
    "GateRefusal",
    "ScoreRow",
    "format_score",
    "refuse_other_calls",
    "score_study",
    "score_table",
    # agreement.study_audit: The family audit of a study folder: the study's labels and human reference into ...
    "audit_study",
    # agreement.study_io: Reading a study folder's tables and joining them into the long labels table
    "Study",
    "human_label_fingerprints",
    "human_label_tables",
    "labels_table",
    "load_study",
    "print_document",
    "publish",
    "read_human_labels",
    "read_key",
    "read_rows",
    "status",
    "strata_columns",
    # agreement.table: Ratings as an items x raters code matrix, built from a long labels table or a wide matrix
    "RatingData",
    "load_labels",
    # agreement.validation: Validation of a study's judges against its human annotators (``accord validate``)
    "ValidationResult",
    "codebook_versions",
    "format_validation",
    "population_table",
    "rating_data",
    "result_brief",
    "scheme_of",
    "validate_by_codebook",
    "validate_study",
    "validate_table",
    # agreement.weights: Agreement-weight matrices (Gwet 2014, ch
    "WEIGHT_FAMILIES",
    "weight_matrix",
]
