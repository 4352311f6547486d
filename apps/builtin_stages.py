"""The built-in stage drivers (``apps.drivers``): sample, blind, decisions, validate, quality, audit, preference,
ehq, asa, gate, score, report (generate, ingest, judge, import and annotate: ``apps.upstream_stages``).

Each takes a frozen settings object, validated where it is built, and computes its
stage from the study folder alone, so `accord <stage>` (settings from its flags) and
`accord run` (settings from the study file) write the same document from the same
inputs. They register on import, as a third party's drivers would.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps.drivers import StageOutput, register_stage
from samples import DEFAULT_LEVEL, DEFAULT_SEED, InputError, StudyLayout, check_level, check_resamples


def _write(model: Any, path: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Check ``body`` against its document type before anything is written, then write it; return what was written."""
    from agreement import parse_document
    from samples import jsonable, write_result

    parse_document(model, jsonable(body), where=path)
    return write_result(path, body)


def _label_tables(layout: StudyLayout) -> list[Path]:
    return [layout.key, *layout.judge_label_files(), *layout.human_label_files()]


# --- sample and blind ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SampleSettings:
    """Paths as given: the manifest records the plan's and the labels' path as written."""

    plan: str | Path
    seed: int = DEFAULT_SEED
    labels: str | Path | None = None
    """Judge labels for ``judge:<name>`` strata (None: STUDY/judges/labels.jsonl)."""
    exclude_labelled: str | Path | None = None
    """A study folder whose labelled units are left out (None: none)."""
    progress: Callable[[int], None] | None = field(default=None, compare=False)
    """Told the unit lines read so far (display only: not part of what is drawn)."""


@dataclass(frozen=True)
class SampleStage:
    name: str = "sample"
    settings: type = SampleSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.units, layout.trajectories, layout.judge_labels]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.sample, layout.sample_manifest]

    def run(self, layout: StudyLayout, settings: SampleSettings) -> StageOutput:
        """The sample manifest (``samples.documents.SampleManifest``)."""
        from samples import sample_study

        return StageOutput(document=sample_study(layout.root, settings.plan, seed=settings.seed,
                                                 labels_path=settings.labels, progress=settings.progress,
                                                 exclude_labelled=settings.exclude_labelled))


@dataclass(frozen=True, kw_only=True)
class BlindSettings:
    annotators: tuple[str, ...]
    seed: int = DEFAULT_SEED
    replace: bool = False
    keep: tuple[str, ...] = ()
    keep_roles: bool = False
    ranking: Mapping[str, int] | None = None
    """Unit id -> rank of an active order (``agreement.active_order``); None: the seeded shuffle."""


@dataclass(frozen=True)
class BlindStage:
    name: str = "blind"
    settings: type = BlindSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.sample]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.tasks, layout.orders, layout.blind_audit, layout.key]

    def run(self, layout: StudyLayout, settings: BlindSettings) -> StageOutput:
        """The blinding summary (tasks, annotators, masking counts, where the key went)."""
        from samples import blind_study

        return StageOutput(document=blind_study(layout.root, annotators=list(settings.annotators), seed=settings.seed,
                                                replace=settings.replace, keep=list(settings.keep),
                                                keep_roles=settings.keep_roles, ranking=settings.ranking))


def _self_family(study: Any, judge_families: Mapping[str, str] | None) -> list[str]:
    """Notes for the judges of an evaluated agent's model family, from the study the stage has loaded."""
    from agreement import evaluated_families, self_family_notes

    return self_family_notes(judge_families, evaluated_families(study)) if judge_families else []


# --- validate -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ValidateSettings:
    """``accord validate``'s flags; ``accord run`` fills them from the gate policy (``apps.stages.validation_settings``)."""

    cluster: str = "trajectory"
    judges: tuple[str, ...] | None = None
    tie_policy: str = "exclude"
    weighted: bool = False
    n_resamples: int = 10_000
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL
    by_codebook: bool = False
    notes: tuple[str, ...] = ()
    """Lines added to the document's notes (a study file value the gate policy replaced)."""
    judge_families: Mapping[str, str] | None = None
    """Judge -> model family (the study file's); a judge of an evaluated agent's family is flagged in the notes."""

    def __post_init__(self) -> None:
        check_level(self.level)
        check_resamples(self.n_resamples, parameter="n_resamples")


@dataclass(frozen=True)
class ValidateStage:
    name: str = "validate"
    settings: type = ValidateSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return _label_tables(layout)

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.validation]

    def run(self, layout: StudyLayout, settings: ValidateSettings) -> StageOutput:
        """The validation document; ``detail`` is (ValidationResult, codebook splits)."""
        from agreement import (
            ValidationDocument,
            codebook_versions,
            labels_table,
            load_study,
            population_table,
            validate_by_codebook,
            validate_table,
        )

        study = load_study(layout.root, cluster=settings.cluster)
        judges = list(settings.judges) if settings.judges else None
        values = {"tie_policy": settings.tie_policy, "weighted": settings.weighted,
                  "n_resamples": settings.n_resamples, "seed": settings.seed, "level": settings.level}
        table = labels_table(study, judges=judges)
        result = validate_table(table, **values, fingerprints=study.fingerprints,
                                population=population_table(study, judges=judges))
        splits = validate_by_codebook(table, **values) if settings.by_codebook else ()
        body = {**result.to_dict(), "codebook_versions": codebook_versions(table), "cluster": study.cluster}
        body["notes"] = [*body["notes"], *settings.notes, *_self_family(study, settings.judge_families)]
        if settings.by_codebook:
            body["by_codebook"] = {split.version: {"n_labels": split.n_labels, "n_units": split.n_units,
                                                   **split.result.to_dict()} for split in splits}
        return StageOutput(document=_write(ValidationDocument, layout.validation, body), detail=(result, splits))


# --- annotator quality --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class QualityStageSettings:
    """The statistics settings (``agreement.quality.QualitySettings``) and the resampling unit."""

    quality: Any
    cluster: str = "trajectory"


@dataclass(frozen=True)
class QualityStage:
    name: str = "quality"
    settings: type = QualityStageSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [*_label_tables(layout), layout.gold, layout.gold_labels]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.quality]

    def run(self, layout: StudyLayout, settings: QualityStageSettings) -> StageOutput:
        from agreement import QualityDocument, load_study, run_quality
        from apps.live import gold_estimates

        study = load_study(layout.root, cluster=settings.cluster)
        gold = gold_estimates(layout, level=settings.quality.level)
        body = run_quality(study, settings.quality, gold)
        return StageOutput(document=_write(QualityDocument, layout.quality, body), detail=body)


# --- family audit -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    positive: tuple[str, ...]
    judge: str | None = None
    tie_policy: str = "exclude"
    model_field: str = "backbone"
    reference: str = "resolved"
    judge_families: dict[str, str] | None = None
    model_families: dict[str, str] | None = None
    """Evaluated model -> family; None: the ``[preference] model_families`` of the study file `accord run` resolved."""
    n_resamples: int = 10_000
    n_permutations: int = 20_000
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL
    cluster: str = "trajectory"

    def __post_init__(self) -> None:
        if not self.positive:
            raise InputError("--positive: expected at least one label the audited score counts")
        check_level(self.level)
        check_resamples(self.n_resamples, parameter="n_resamples")
        check_resamples(self.n_permutations, parameter="n_permutations")


def _resolved_study_file(layout: StudyLayout) -> Any:
    """The study file ``accord run`` resolved into the folder (``apps.study.StudyFile``), or None for a folder
    without one (or one another version wrote), so ``accord audit STUDY`` reads the settings ``accord run`` used."""
    from pydantic import ValidationError

    from apps.study import StudyFile

    if not layout.resolved_study.is_file():
        return None
    try:
        return StudyFile.model_validate(json.loads(layout.resolved_study.read_text(encoding="utf-8")))
    except (ValidationError, InputError, json.JSONDecodeError):
        return None


def _study_model_families(study: Any, study_file: Any, model_field: str) -> dict[str, str]:
    """The study file's ``[preference] model_families`` for the models the units name (the compared models of
    pairwise units may be others)."""
    from agreement import strata_columns

    if study_file is None or study_file.preference is None:
        return {}
    strata = strata_columns(study.key)
    present = set(strata[model_field]) if model_field in strata else set()
    return {m: f for m, f in study_file.preference.model_families.items() if m in present}


@dataclass(frozen=True)
class AuditStage:
    name: str = "audit"
    settings: type = AuditSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [*_label_tables(layout), layout.resolved_study]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.audit]

    def run(self, layout: StudyLayout, settings: AuditSettings) -> StageOutput:
        """The audit document; ``detail`` is the AuditResult."""
        from agreement import AuditDocument, audit_study, load_study

        study = load_study(layout.root, cluster=settings.cluster)
        study_file = _resolved_study_file(layout)
        models = settings.model_families or _study_model_families(study, study_file, settings.model_field)
        result, body = audit_study(study, judge=settings.judge, positive=list(settings.positive),
                                   tie_policy=settings.tie_policy, model_field=settings.model_field,
                                   reference=settings.reference, model_families=models or None,
                                   n_resamples=settings.n_resamples, n_permutations=settings.n_permutations,
                                   seed=settings.seed, level=settings.level,
                                   judge_families=settings.judge_families
                                   or (study_file.judge_families() if study_file is not None else None) or None)
        return StageOutput(document=_write(AuditDocument, layout.audit, body), detail=result)


# --- study-file-only stages: decisions, pairwise preference, EHQ -----------------------------------


@dataclass(frozen=True)
class DecisionsStage:
    """Aggarwal's decision tables (``[decisions]``); settings: ``agreement.decisions.DecisionSettings``."""

    name: str = "decisions"
    settings: type = object

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.trajectories, layout.units, layout.judge_labels]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.decisions]

    def run(self, layout: StudyLayout, settings: Any) -> StageOutput:
        from agreement import DecisionDocument, decision_study

        return StageOutput(document=_write(DecisionDocument, layout.decisions, decision_study(layout, settings)))


@dataclass(frozen=True, kw_only=True)
class PreferenceSettings:
    """The study file's ``[preference]`` table (``apps.study.Preference``) and the resampling unit."""

    preference: Any
    cluster: str = "trajectory"


@dataclass(frozen=True)
class PreferenceStage:
    name: str = "preference"
    settings: type = PreferenceSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return _label_tables(layout)

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.preference]

    def run(self, layout: StudyLayout, settings: PreferenceSettings) -> StageOutput:
        from agreement import PreferenceDocument, load_study, preference_study, strata_columns
        from samples import infer_family

        p = settings.preference
        study = load_study(layout.root, cluster=settings.cluster)
        strata = strata_columns(study.key)
        models = set(strata.get(p.first, ())) | set(strata.get(p.second, ()))
        judges = sorted(set(study.judge["judge"]))
        body = preference_study(study, first=p.first, second=p.second, first_label=p.first_label,
                                second_label=p.second_label, tie_label=p.tie_label,
                                model_families={m: p.model_families.get(m) or infer_family(m) for m in models},
                                judge_families={j: p.judge_families.get(j) or infer_family(j) for j in judges},
                                n_resamples=p.n_resamples, seed=p.seed, level=p.level)
        return StageOutput(document=_write(PreferenceDocument, layout.preference, body), detail=judges)


@dataclass(frozen=True)
class EhqStage:
    """EHQ per model and the human re-ranking; settings: the study file's ``[ehq]`` table (``apps.study.Ehq``)."""

    name: str = "ehq"
    settings: type = object

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [*_label_tables(layout), layout.units, layout.trajectories]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.ehq]

    def run(self, layout: StudyLayout, settings: Any) -> StageOutput:
        from agreement import EhqDocument, ehq_study

        e = settings
        body = ehq_study(layout, judge=e.judge, model_field=e.model_field, confidence_field=e.confidence_field,
                         tie_policy=e.tie_policy, n_resamples=e.n_resamples, seed=e.seed, level=e.level)
        return StageOutput(document=_write(EhqDocument, layout.ehq, body))


@dataclass(frozen=True)
class AsaStage:
    """The ASA milestones; settings: the study file's ``[asa]`` table (``apps.study.Asa``)."""

    name: str = "asa"
    settings: type = object

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [*_label_tables(layout), layout.units, layout.trajectories]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.asa]

    def run(self, layout: StudyLayout, settings: Any) -> StageOutput:
        from agreement import AsaDocument, asa_study

        a = settings
        body = asa_study(layout, judge=a.judge, tie_policy=a.tie_policy, n_resamples=a.n_resamples, seed=a.seed,
                         level=a.level)
        return StageOutput(document=_write(AsaDocument, layout.asa, body))


# --- gate ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GateSettings:
    policy: Path
    judges: tuple[str, ...] | None = None
    sequential: bool = False
    cluster: str = "trajectory"
    judge_families: Mapping[str, str] | None = None
    """Judge -> model family (the study file's); a judge of an evaluated agent's family is flagged in the notes."""


@dataclass(frozen=True)
class GateStage:
    name: str = "gate"
    settings: type = GateSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return _label_tables(layout)

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.verdict, layout.gate_history]

    def run(self, layout: StudyLayout, settings: GateSettings) -> StageOutput:
        """The verdict document; ``detail`` is the verdict's text."""
        from agreement import VerdictDocument, gate_study, load_study, shared_results

        study = load_study(layout.root, cluster=settings.cluster)
        with shared_results():  # the judges' human panels are the same computation (ratings, draw and seed)
            document, text = gate_study(study, settings.policy, sequential=settings.sequential,
                                        judges=list(settings.judges) if settings.judges else None)
        document["notes"] = [*document["notes"], *_self_family(study, settings.judge_families)]
        return StageOutput(document=_write(VerdictDocument, layout.verdict, document), detail=text)


# --- score --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScoreSettings:
    identify_judge: str
    escalate_judge: str
    correctness_judge: str | None = None
    correctness_field: str | None = None
    force: bool = False
    tie_policy: str | None = None
    reference: str = "resolved"
    n_resamples: int = 10_000
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL

    def __post_init__(self) -> None:
        check_resamples(self.n_resamples, parameter="n_resamples")
        check_level(self.level)


@dataclass(frozen=True)
class ScoreStage:
    name: str = "score"
    settings: type = ScoreSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [*_label_tables(layout), layout.verdict, layout.trajectories, layout.units]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.score]

    def run(self, layout: StudyLayout, settings: ScoreSettings) -> StageOutput:
        """The score document; raises ``agreement.scoring.GateRefusal`` when the gate did not accept a judge used."""
        from agreement import ScoreDocument, score_study

        document = score_study(layout.root, identify_judge=settings.identify_judge,
                               escalate_judge=settings.escalate_judge, correctness_judge=settings.correctness_judge,
                               correctness_field=settings.correctness_field, force=settings.force,
                               tie_policy=settings.tie_policy, n_resamples=settings.n_resamples, seed=settings.seed,
                               level=settings.level, reference=settings.reference)
        return StageOutput(document=_write(ScoreDocument, layout.score, document))


# --- report -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReportSettings:
    out: Path | None = None
    """Output folder (None: STUDY/report)."""


@dataclass(frozen=True)
class ReportStage:
    name: str = "report"
    settings: type = ReportSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        from agreement import DOCUMENTS

        return [model.path(layout) for model in DOCUMENTS]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.report_html, layout.report_markdown]

    def run(self, layout: StudyLayout, settings: ReportSettings) -> StageOutput:
        """The written paths and stale lines; ``detail`` is the ReportContent."""
        from agreement import build_report, refuse_other_calls, write_report

        refuse_other_calls(layout.root)
        content = build_report(layout.root)
        paths = write_report(layout.root, settings.out, content=content)
        return StageOutput(document={"paths": {k: str(v) for k, v in paths.items()}, "stale": content.stale},
                           detail=content)


for _driver in (SampleStage(), BlindStage(), DecisionsStage(), ValidateStage(), QualityStage(), AuditStage(),
                PreferenceStage(), EhqStage(), AsaStage(), GateStage(), ScoreStage(), ReportStage()):
    register_stage(_driver)
