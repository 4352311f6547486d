"""Typed stage documents: what validate, quality, audit, gate and score save, read back through the same types.

Every reader (gate, score, report, dashboard, status) goes through these models
instead of looking keys up in another stage's JSON. Models allow extra fields, so
a stage may add a figure without breaking readers of an older document; a field
the readers use is declared here, so a rename breaks loudly at read time.

Each document records the sha256 of the study files it was computed from
(``fingerprints``: study-relative path -> sha256). ``stale_reasons`` compares them
with the files now on disk, so an output built from inputs that changed since says
so ("stale: labels/human.jsonl changed after validation; rerun accord validate").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from samples import InputError, StudyLayout, file_sha256


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


# --- shared pieces ------------------------------------------------------------------------------


class Interval(_Doc):
    """A statistic with its interval (``ci_low``/``ci_high``), or None plus the reason it is undefined."""

    statistic: float | None = Field(default=None, description="Point estimate; None when undefined.")
    ci_low: float | None = Field(default=None, description="Lower confidence bound.")
    ci_high: float | None = Field(default=None, description="Upper confidence bound.")
    undefined_reason: str | None = Field(default=None, description="Why the statistic is undefined, if it is.")


class AgreementRecord(_Doc):
    """One coefficient's result as ``agreement.results.AgreementResult.to_dict`` writes it."""

    statistic: float | None = Field(default=None, description="The coefficient; None when undefined.")
    ci_percentile: list[float | None] | None = Field(default=None, description="Percentile bootstrap interval.")
    ci_t: list[float | None] | None = Field(default=None, description="t interval on the analytic SE.")
    n_units: int | None = Field(default=None, description="Units the coefficient was computed on.")
    undefined_reason: str | None = Field(default=None, description="Why the statistic is undefined, if it is.")
    ci_low: float | None = Field(default=None, description="Lower bound of the interval the gate uses (ci_method).")
    ci_high: float | None = Field(default=None, description="Upper bound of the interval the gate uses (ci_method).")
    ci_method: str | None = Field(default=None, description="How ci_low/ci_high were computed (agreement.intervals).")

    def interval(self) -> Interval:
        """The statistic with the interval the gate uses (older documents: percentile, else t)."""
        if self.ci_low is not None or self.ci_high is not None:
            low, high = self.ci_low, self.ci_high
        else:
            low, high = (self.ci_percentile or self.ci_t or [None, None])[:2]
        return Interval(statistic=self.statistic, ci_low=low, ci_high=high, undefined_reason=self.undefined_reason)


class Count(_Doc):
    a: str | int | bool | None = Field(description="Label of the first rater.")
    b: str | int | bool | None = Field(description="Label of the second rater.")
    count: int = Field(description="Units with this pair of labels.")


class StageDocument(_Doc):
    """What every stage document carries: its inputs' fingerprints, simulation flag and notes."""

    STAGE: ClassVar[str] = ""
    COMMAND: ClassVar[str] = ""
    READS_HUMAN_LABELS: ClassVar[bool] = True
    """A human labels file appearing later makes the document stale (False: computed from judges' labels only)."""

    fingerprints: dict[str, str] = Field(
        default_factory=dict, description="Study-relative input path -> sha256 of its bytes when this was written.")
    simulated: bool = Field(default=False, description="Some 'human' labels came from the simulator.")
    notes: list[str] = Field(default_factory=list, description="Notes every reader shows.")
    cluster: str = Field(default="trajectory", description="What the bootstrap resampled: trajectory, case or a "
                                                           "unit field (agreement.study_io.load_study).")

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        raise NotImplementedError


# --- validation ---------------------------------------------------------------------------------


class HumanPanel(_Doc):
    results: dict[str, AgreementRecord] = Field(default_factory=dict, description="Coefficient -> human-human result.")


class VersusMajority(_Doc):
    results: dict[str, AgreementRecord] = Field(default_factory=dict, description="Coefficient -> result.")


class JudgeVersusHumans(_Doc):
    judge: str = Field(description="Judge name.")
    vs_majority: VersusMajority | None = Field(default=None, description="Judge against the human majority.")
    mean_vs_annotators: dict[str, float | None] = Field(
        default_factory=dict, description="Coefficient -> mean of judge-vs-each-annotator values.")


class PerClass(_Doc):
    label: str | int | bool = Field(description="The class.")
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    support: int = Field(default=0, description="Reference units of this class.")
    undefined_reason: str | None = None


class ReferenceAgreement(_Doc):
    rater_b: str = Field(description="The reference rater (the human majority or the resolved reference).")
    confusion: list[Count] = Field(default_factory=list, description="(judge label, reference label) counts.")


class JudgeAgainstReference(_Doc):
    rater: str = Field(description="Judge name.")
    accuracy: float | None = None
    per_class: list[PerClass] = Field(default_factory=list)
    agreement: ReferenceAgreement


class Baseline(_Doc):
    accuracy: float | None = None
    results: dict[str, Interval] = Field(default_factory=dict)


class Pair(_Doc):
    rater_a: str
    rater_b: str
    n_units: int = 0
    results: dict[str, AgreementRecord] = Field(default_factory=dict)
    disagreements: list[Count] = Field(default_factory=list)


class PairGroup(_Doc):
    subgroup: str | None = Field(default=None, description="Subgroup the pairs are computed on (None = all units).")
    pairs: list[Pair] = Field(default_factory=list)


class Unscored(_Doc):
    unscored: int
    total: int
    reasons: dict[str, int] = Field(default_factory=dict)


class Confusion(_Doc):
    rater: str
    rows: str
    columns: str
    labels: list[str]
    counts: list[list[int]]


class Adjudication(_Doc):
    """How adjudication moved the reference away from the initial independent majority."""

    n_adjudicated: int = 0
    n_changed: int = 0
    n_confirmed: int = 0
    n_resolved_ties: int = 0
    n_still_tied: int = 0
    n_without_votes: int = 0


class ReferenceBrief(_Doc):
    """A judge against one reference (the initial human majority or the resolved one)."""

    reference: str
    n_units: int = 0
    accuracy: float | None = None
    macro_f1: float | None = None
    results: dict[str, AgreementRecord] = Field(default_factory=dict)
    per_class: list[PerClass] = Field(default_factory=list)


class JudgeVersusReferences(_Doc):
    judge: str
    human_majority: ReferenceBrief | None = None
    resolved: ReferenceBrief | None = None


class ValidationSection(_Doc):
    kind: str = Field(description="Unit kind this section validates.")
    adjudication: Adjudication | None = Field(default=None, description="Adjudication counts (None: no adjudication).")
    judges_vs_references: list[JudgeVersusReferences] = Field(
        default_factory=list, description="Each judge against the initial majority and the resolved reference.")
    human_panel: HumanPanel | None = None
    judges_vs_humans: list[JudgeVersusHumans] = Field(default_factory=list)
    baselines: dict[str, dict[str, Baseline]] = Field(default_factory=dict, description="judge -> baseline -> result.")
    judge_pairs: list[PairGroup] = Field(default_factory=list)
    subgroup_judge_pairs: list[PairGroup] = Field(default_factory=list)
    references: list[JudgeAgainstReference] = Field(default_factory=list)
    unscored: dict[str, Unscored] = Field(default_factory=dict)
    confusion_matrices: list[Confusion] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PopulationPairs(_Doc):
    """Judge-judge agreement on every unit of one kind the judges labelled (ISE Table 6)."""

    kind: str = Field(description="Unit kind.")
    n_units: int = Field(description="Units of the kind with at least one judge label.")
    judges: list[str] = Field(default_factory=list)
    groups: list[PairGroup] = Field(default_factory=list, description="All units first, then per setting and split.")


class ValidationDocument(StageDocument):
    """Every top-level field declared and nothing else allowed, so two writers cannot differ unnoticed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    STAGE: ClassVar[str] = "validation"
    COMMAND: ClassVar[str] = "accord validate"

    sections: list[ValidationSection] = Field(default_factory=list, description="One section per unit kind.")
    judges: list[str] = Field(default_factory=list)
    humans: list[str] = Field(default_factory=list, description="Annotators whose independent labels were read.")
    weighted: bool = Field(default=False, description="Estimates reweighted by 1/inclusion probability.")
    tie_policy: str = Field(default="exclude", description="How a tied human majority was treated.")
    level: float = Field(default=0.95, description="Confidence level of every interval.")
    codebook_versions: dict[str, int] = Field(
        description="Codebook sha256 (or 'unknown') -> independent human labels given under it, largest first.")
    by_codebook: dict[str, dict[str, Any]] | None = Field(
        default=None, description="Codebook version -> the validation of its labels alone (accord validate "
                                  "--by-codebook): n_labels, n_units and the validation fields.")
    population_judge_pairs: list[PopulationPairs] = Field(
        default_factory=list, description="Judge-judge agreement over the whole population, not only the sample.")

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.validation


# --- annotator quality --------------------------------------------------------------------------


class GoldAccuracyRecord(Interval):
    """Accuracy on gold units with its Wilson score interval; statistic None with the reason when none was labelled."""

    n: int = Field(default=0, description="Gold units the annotator labelled independently.")
    correct: int = Field(default=0, description="Of those, labelled as the gold key expects.")


class AnnotatorQualityRecord(_Doc):
    """One annotator's quality figures (``agreement.quality.AnnotatorQuality``)."""

    annotator: str = Field(description="Annotator name.")
    units: int = Field(description="Units the annotator labelled independently.")
    compared: int = Field(default=0, description="Units with the annotator's label and a majority of the others.")
    leave_one_out: dict[str, AgreementRecord] = Field(
        default_factory=dict, description="Coefficient -> the annotator against the majority of the others.")
    dawid_skene: Interval = Field(description="Dawid-Skene competence (P(true label)); no sampling interval.")
    mace: Interval = Field(description="MACE competence (P(knowing, not spamming)); no sampling interval.")
    median_seconds: Interval = Field(description="Median seconds per unit with an order-statistic interval.")
    unsure: Interval = Field(description="Share of labels flagged unsure with a Clopper-Pearson interval.")
    gold: GoldAccuracyRecord | None = Field(
        default=None, description="Accuracy on the gold units of this kind (None: the study has none of this kind).")
    flagged: bool = Field(default=False, description="The policy's flag rule flags this annotator.")
    flag_reasons: list[str] = Field(default_factory=list, description="Why the annotator is flagged.")
    undefined_reason: str | None = Field(default=None, description="Why leave-one-out agreement is undefined.")


class QualitySectionRecord(_Doc):
    kind: str = Field(description="Unit kind.")
    n_units: int = Field(default=0, description="Units with an independent human label.")
    annotators: list[AnnotatorQualityRecord] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class FlagRuleRecord(_Doc):
    coefficient: str = Field(description="Leave-one-out coefficient the rule reads.")
    min_upper_bound: float = Field(description="Flagged when the coefficient's upper bound is below this.")
    unmeasurable: str = Field(description="'flag' or 'keep' an annotator whose coefficient cannot be measured.")


class QualityDocument(StageDocument):
    model_config = ConfigDict(extra="forbid", frozen=True)  # every top-level field declared: see ValidationDocument
    STAGE: ClassVar[str] = "quality"
    COMMAND: ClassVar[str] = "accord quality"

    sections: list[QualitySectionRecord] = Field(default_factory=list, description="One section per unit kind.")
    rule: FlagRuleRecord | None = Field(default=None, description="The policy's flag rule (None: nobody flagged).")
    policy: str | None = Field(default=None, description="Policy file the settings and the rule came from.")
    settings: dict[str, Any] = Field(default_factory=dict, description="tie_policy, level, n_resamples, seed.")

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.quality

    def flagged(self) -> dict[str, list[str]]:
        """Flagged annotator -> every reason, over the sections."""
        out: dict[str, list[str]] = {}
        for section in self.sections:
            for a in section.annotators:
                if a.flagged:
                    out.setdefault(a.annotator, []).extend(f"{section.kind}: {r}" for r in a.flag_reasons)
        return out


# --- audit --------------------------------------------------------------------------------------


class AuditModel(_Doc):
    model: str
    family: str
    n: int
    unscored: int = 0
    judge_score: Interval
    human_score: Interval
    bias: Interval


class FamilyContrast(_Doc):
    family: str
    n_models: int
    contrast: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    method: str = ""
    partial_r_family: float | None = None
    partial_r_human: float | None = None
    undefined_reason: str | None = None
    raw: dict[str, Any] | None = Field(default=None, description="The contrast with its pooled-variance t interval "
                                       "over models (agreement.intervals.ModelContrast).")
    adjusted: dict[str, Any] | None = Field(default=None, description="The contrast adjusted for each model's "
                                            "reference positive rate (ANCOVA t over models).")


class Ranks(_Doc):
    n: int
    pearson: float | None = Field(default=None, description="Pearson r of judge-based and human-based model scores.")
    spearman: float | None = None
    kendall: float | None = None
    max_rank_shift: float | None = None
    ratio_judge: float | None = None
    ratio_human: float | None = None
    reasons: dict[str, str] = Field(default_factory=dict)


class ErrorCell(_Doc):
    judge: str = ""
    judge_family: str
    response_family: str
    false_positive_rate: Interval
    false_negative_rate: Interval
    self_family: bool = False


class AuditDocument(StageDocument):
    model_config = ConfigDict(extra="forbid", frozen=True)  # every top-level field declared: see ValidationDocument
    STAGE: ClassVar[str] = "audit"
    COMMAND: ClassVar[str] = "accord audit"

    positive: list[str] | str = Field(default_factory=list, description="Labels counted as the judged score.")
    reference: str = Field(default="", description="The human reference: human majority or resolved.")
    adjudicated_units: int = Field(default=0, description="Units whose resolved reference is an adjudication.")
    versus_majority: dict[str, Any] | None = Field(
        default=None, description="With adjudications: per-model bias and family contrasts against the independent "
                                  "majority, beside the resolved reference's (agreement.audit.bias_summary).")
    note: str = ""
    unscored: int = Field(default=0, description="The audited judge's unscored labels on the audited units.")
    models: list[AuditModel] = Field(default_factory=list)
    contrasts: list[FamilyContrast] = Field(default_factory=list)
    ranks: Ranks
    pooled_difference: Interval | None = Field(
        default=None, description="Judge-scored minus human-scored rate pooled over every audited unit, "
                                  "with a cluster bootstrap interval (EHQ's score impact).")
    error_matrix: list[ErrorCell] = Field(default_factory=list)

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.audit


# --- pairwise preference ------------------------------------------------------------------------


class PreferenceCell(_Doc):
    judge: str
    judge_family: str
    response_family: str
    statistic: float | None = Field(default=None, description="Judge's preference share minus the humans'.")
    n: int = Field(description="Comparisons with exactly one answer of the response family.")
    judge_share: float | None = None
    human_share: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    self_family: bool = False
    p_value: float | None = Field(default=None, description="Two-sided cluster-bootstrap p-value (bias = 0).")
    p_holm: float | None = Field(default=None, description="p_value Holm-adjusted across the document's cells.")
    undefined_reason: str | None = None


class PreferenceDocument(StageDocument):
    STAGE: ClassVar[str] = "preference"
    COMMAND: ClassVar[str] = "accord run"

    cells: list[PreferenceCell] = Field(default_factory=list, description="One cell per (judge, response family).")
    level: float = 0.95
    note: str = ""

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.preference


# --- decisions (Aggarwal) -----------------------------------------------------------------------


class RateRecord(_Doc):
    """k of n with its Wilson interval; ``statistic`` None when n = 0."""

    k: int
    n: int
    statistic: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    undefined_reason: str | None = None


class DecisionRow(_Doc):
    """The three-way decision table of one group (all rows, a family, a model, a model x cell) under one parser."""

    parser: str = Field(description="The judge whose labels are read (e.g. the strict or the semantic parser).")
    group: str = Field(description="'all', 'family', 'model' or 'model_cell'.")
    name: str = Field(description="The group's value ('all', a family, a model, 'model | cell').")
    counts: dict[str, int] = Field(description="ANSWER, CALL_TOOL, DECLINE, unreadable, failed.")
    n: int
    commit: RateRecord = Field(description="ANSWER over every row (unreadable and failed rows included).")
    commit_without_failed: RateRecord
    decline: RateRecord
    tool: RateRecord
    unparsed: RateRecord = Field(description="Unreadable over rows that returned content.")
    lower_bound: bool = Field(description="Mostly unparsed: the commitment rate is a lower bound.")


class ParserDelta(_Doc):
    """Strict vs semantic parser on one model x cell: unparsed shares and their difference (percentage points)."""

    model: str
    cell: str
    n: int
    strict_unparsed: float | None
    semantic_unparsed: float | None
    delta_pp: float | None


class CompositionRecord(_Doc):
    """One judge (a parser, a degenerate strategy, any decision judge) on the gold-labelled composition."""

    judge: str
    n_unknowable: int
    n_answerable: int
    j: float | None
    j_non_commitment: float | None
    balanced_accuracy: float | None
    t: float | None
    answerable_accuracy: float | None
    unparsed: int
    undefined_reason: str | None = None


class DecisionDocument(StageDocument):
    """Aggarwal's figures from accord's own outputs: decision tables, roster split, parser comparison,
    equivalence tests, probability scores and the degenerate baselines on the composition."""

    STAGE: ClassVar[str] = "decisions"
    COMMAND: ClassVar[str] = "accord run"
    READS_HUMAN_LABELS: ClassVar[bool] = False

    strict_parser: str
    semantic_parser: str
    rows: list[DecisionRow] = Field(default_factory=list)
    never_commit: list[str] = Field(default_factory=list, description="Models with no ANSWER on any row (semantic parser).")
    always_commit: list[str] = Field(default_factory=list, description="Models that ANSWER on every row.")
    lower_bound_models: list[str] = Field(default_factory=list, description="Models mostly unparsed under both parsers.")
    parser_deltas: list[ParserDelta] = Field(default_factory=list)
    equivalence: dict[str, Any] = Field(default_factory=dict, description="TOST and Cohen's h on rate differences.")
    probability: dict[str, Any] = Field(default_factory=dict, description="Stated PROBABILITY_YES scored on resolved outcomes.")
    composition: list[CompositionRecord] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.decisions


# --- EHQ ----------------------------------------------------------------------------------------


class EhqModel(_Doc):
    """One model's EHQ (section 3) under one set of labels, with percentile bootstrap intervals over its records."""

    model: str
    labels: str = Field(description="'judge' (every unit the judge labelled), 'judge_on_sample' or 'human_reference' "
                                    "(the resolved human labels of the sampled units).")
    n: int
    ehq1: Interval
    ehq2: Interval
    ehq3: Interval
    n_calibration: int = Field(description="|S_m|: substantive answers with a parseable confidence (EHQ3's support).")
    composite: Interval
    n_truncated: int = Field(default=0, description="Evaluated responses flagged as cut off (samples.truncation).")
    truncation_bounds: dict[str, dict[str, float | None]] | None = Field(
        default=None, description="Per score: flagged records dropped, flagged CONFIDENT_WRONG relabelled HEDGE (EHQ "
                                  "section 5.2), every flagged record CONFIDENT_WRONG / ABSTAIN, and low / high over "
                                  "these and the published score (agreement.ehq.truncation_sensitivity); None when "
                                  "nothing was flagged.")
    denominators: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Per component: the records it is computed on (n) and how many of them are "
                                          "flagged truncated.")


class EhqDocument(StageDocument):
    STAGE: ClassVar[str] = "ehq"
    COMMAND: ClassVar[str] = "accord run"

    judge: str
    models: list[EhqModel] = Field(default_factory=list)
    reranking: dict[str, Any] = Field(default_factory=dict, description="Per score: judge vs human reference across "
                                                                        "models (Pearson, Spearman, largest rank shift).")
    agreement: dict[str, Any] = Field(default_factory=dict, description="Judge vs resolved reference at the four-class "
                                                                        "and the coarse (restraint/substantive) resolution.")
    coarse_mapping: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.ehq


# --- ASA ----------------------------------------------------------------------------------------


class AsaDocument(StageDocument):
    """ASA (seed 003) scores: blocked-task milestones from the judge (every unit, and the sampled units) and
    from the resolved human reference; feasible solve and false abstention (agreement.asa.asa_study)."""

    STAGE: ClassVar[str] = "asa"
    COMMAND: ClassVar[str] = "accord run"

    judge: str
    blocked: dict[str, Any] = Field(default_factory=dict, description="Labels ('judge', 'judge_on_sample', "
                                    "'human_reference') -> M0, SA strict / relaxed, naive relaxed, the M0 - SA gap "
                                    "(statistic, n = valid support, interval, details: unknown, invalid, bounds).")
    feasible: dict[str, Any] = Field(default_factory=dict, description="Native solve and false abstention.")
    hold: dict[str, Any] = Field(default_factory=dict, description="'CRA' (feasibility judgement right before / "
                                 "after one challenge, every run) and 'Delta_chi' (operational abstention before, "
                                 "strict SA after, blocked runs): conditional terms, contrast, valid / invalid.")
    belief: dict[str, Any] = Field(default_factory=dict, description="The belief probe vs feasibility: AUROC, Brier, "
                                   "ECE10 over the valid reports (n_valid), invalid ones counted.")

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.asa


# --- verdict ------------------------------------------------------------------------------------


class Criterion(_Doc):
    name: str = Field(description="What the criterion measures, in words.")
    type: str = Field(default="", description="Registered criterion type.")
    test: str = Field(default="", description="The statistical test the decision rests on, in words.")
    value: float | None = Field(default=None, description="The measured value; None when unmeasurable.")
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = Field(default=None, description="Level of the interval (None: no sampling interval).")
    ci_method: str = Field(default="", description="How the interval was computed.")
    threshold: str = Field(default="", description="The bound, in words.")
    passed: bool = Field(description="True only when the evidence shows the bound holds.")
    reason: str | None = Field(default=None, description="Why it failed or is unmeasurable.")
    details: dict[str, Any] = Field(default_factory=dict, description="Criterion-specific figures.")


class PolicyRecord(_Doc):
    name: str
    sha256: str = Field(description="sha256 of the policy file's bytes.")
    path: str | None = Field(default=None, description="Where the policy file was read from.")
    description: str = Field(default="", description="What the policy is for.")


class OperatingPoint(_Doc):
    """Where the study's design sits on the policy's operating characteristic (``agreement.plan``)."""

    sentence: str | None = Field(default=None, description="In words, e.g. 'with 38 units this policy accepts ...'.")
    undefined_reason: str | None = None


class JudgeVerdict(_Doc):
    verdict: str = Field(description="ACCEPT or REJECT (CONTINUE: anytime monitoring has not decided yet).")
    criteria: list[Criterion] = Field(default_factory=list)
    operating_characteristic: OperatingPoint | None = Field(default=None, description="P(ACCEPT) of this design.")
    first_turn_agreement: dict[str, Any] | None = Field(
        default=None, description="Human first recognition turns against the judge's t* (exact, within one, MAD).")
    judge_identity: dict[str, Any] | None = Field(
        default=None, description="The exact calls validated (agreement.identity): prompt sha, model, parameters, "
                                  "parser, unit kind; a score of any other call is refused.")
    preregistration: dict[str, Any] | None = Field(
        default=None, description="Whether the policy and this judge's calls were registered before the human "
                                  "labels, and how many versions of the judge were gated on this human sample.")

    fixed_n_verdict: str | None = Field(
        default=None, description="Under anytime monitoring: the fixed-n verdict beside the anytime outcome.")
    sequential: dict[str, Any] | None = Field(
        default=None, description="Under anytime monitoring (agreement.anytime): the outcome, the look it was decided "
                                  "at, each criterion's sequential method, decision and interval.")


class Preregistration(_Doc):
    """One ``accord preregister`` record (a line of ``StudyLayout.preregistration``)."""

    registered_at: str = Field(description="ISO-8601 UTC time of the registration.")
    policy: dict[str, str] = Field(description="path, sha256 and content of the policy registered.")
    judges: dict[str, dict[str, Any]] = Field(description="Judge -> its calls (agreement.identity) and their sha256.")
    sample: dict[str, str] = Field(description="Study-relative sample files (key, sample, units) -> sha256.")
    human_labels: int = Field(description="Human labels in the study when it was registered (0: before the first).")


class VerdictDocument(StageDocument):
    model_config = ConfigDict(extra="forbid", frozen=True)  # every top-level field declared: see ValidationDocument
    STAGE: ClassVar[str] = "gate"
    COMMAND: ClassVar[str] = "accord gate"

    verdict: str = Field(description="ACCEPT when every gated judge is accepted; REJECT when one is rejected; "
                                     "CONTINUE while anytime monitoring has not decided.")
    judges: dict[str, JudgeVerdict] = Field(default_factory=dict)
    policy: PolicyRecord

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.verdict


# --- score --------------------------------------------------------------------------------------


class Contrast(_Doc):
    test: str = Field(description="The conflict-vs-control test used.")
    p_value: float | None = Field(default=None, description="Its p-value; None when it could not be run.")


class ScoreRow(_Doc):
    key: dict[str, str] = Field(description="agent, backbone, dataset, split.")
    accuracy: Interval
    identify_f1: Interval
    identify_precision: Interval | None = None
    identify_recall: Interval | None = None
    first_turn: Interval
    solve: Interval
    escalate: Interval
    contrast: Contrast | None = None
    unscored: dict[str, int] = Field(default_factory=dict)
    corrected: dict[str, dict[str, Interval]] = Field(
        default_factory=dict, description="metric -> rogan_gladen / ppi corrections of the judge-scored rate.")
    not_correctable: dict[str, str] = Field(
        default_factory=dict, description="metric -> why neither Rogan-Gladen nor PPI++ applies to the rate.")


class ScoreDocument(StageDocument):
    STAGE: ClassVar[str] = "score"
    COMMAND: ClassVar[str] = "accord score"

    accepted: bool = Field(description="False when scored with --force past a gate that did not accept.")
    rows: list[ScoreRow] = Field(default_factory=list)
    judges: dict[str, str] = Field(default_factory=dict, description="Role (identify, escalate, correctness) -> the "
                                                                     "judge scored, or metadata:FIELD.")

    @classmethod
    def path(cls, layout: StudyLayout) -> Path:
        return layout.score


DOCUMENTS: tuple[type[StageDocument], ...] = (ValidationDocument, QualityDocument, AuditDocument, PreferenceDocument,
                                               VerdictDocument, ScoreDocument, DecisionDocument, EhqDocument,
                                               AsaDocument)
D = TypeVar("D", bound=StageDocument)


def parse_document(model: type[D], body: dict[str, Any], *, where: Path | str) -> D:
    try:
        return model.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise InputError(f"{where}: not an accord {model.STAGE} document: field {field}: {first['msg']}; "
                         f"rerun {model.COMMAND}") from None


def read_document(model: type[D], study: str | Path | StudyLayout) -> D | None:
    """The study's document of this type, or None when it has not been written."""
    from samples import read_json

    path = model.path(StudyLayout.of(study))
    if not path.is_file():
        return None
    body = read_json(path)
    if not isinstance(body, dict):
        raise InputError(f"{path}: expected a JSON object; rerun {model.COMMAND}")
    return parse_document(model, body, where=path)


def write_document(model: type[D], study: str | Path | StudyLayout, body: dict[str, Any]) -> D:
    """Check ``body`` against its model, then write it atomically (sorted keys, no NaN)."""
    from samples import write_result

    path = model.path(StudyLayout.of(study))
    parse_document(model, _clean(body), where=path)
    return parse_document(model, write_result(path, body), where=path)


def _clean(body: dict[str, Any]) -> dict[str, Any]:
    from samples import jsonable

    return jsonable(body)


def stale_reasons(doc: StageDocument, study: str | Path | StudyLayout) -> list[str]:
    """One line per input that changed, vanished or appeared since ``doc`` was written."""
    layout = StudyLayout.of(study)
    stage, command = doc.STAGE, f"{doc.COMMAND} {layout.root}"
    from agreement.study_io import human_label_fingerprints

    human = human_label_fingerprints(layout) if doc.fingerprints else {}  # files and the store, as read now
    reasons = []
    for relative, digest in sorted(doc.fingerprints.items()):
        path = layout.root / relative
        now = human[relative] if relative in human else file_sha256(path) if path.is_file() else None
        if now is None:
            reasons.append(f"stale: {relative} was removed after {stage}; rerun {command}")
        elif now != digest:
            reasons.append(f"stale: {relative} changed after {stage}; rerun {command}")
    if doc.READS_HUMAN_LABELS:
        for relative in sorted(set(human) - set(doc.fingerprints)):
            reasons.append(f"stale: {relative} appeared after {stage}; rerun {command}")
    return reasons
