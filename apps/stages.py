"""The ordered stages of a study and their fingerprints: what `accord run` runs and skips.

Each stage states the material its result depends on (settings plus the sha256 of
every input file, read fresh each time) and the files it writes. Its fingerprint is
the sha256 of that material. A stage whose fingerprint equals the one recorded in
``STUDY/state.json`` and whose recorded outputs still hold the recorded bytes is
skipped: nothing is called, resampled or rewritten. Any change upstream (a new
label, an edited plan, a deleted output) changes a hash and reruns the stage and,
through its outputs' hashes, everything downstream.

Each stage turns the study file into its driver's settings and runs the registered
driver (``apps.drivers.get_stage``), the one the single-stage command runs too; none
is re-implemented here. The annotation stage
is the human one: it loads the blinded tasks into the coding app's store, lets the
simulated panel label when the study asks for it, and otherwise stops the run with
instructions until every annotator has labelled every task in their order.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from apps.study import Source, StudyFile
from samples import InputError, StudyLayout, file_sha256, sha256_hex, simulated

STATE_VERSION = 1


class StageRecord(BaseModel):
    """What `accord run` recorded for one finished stage."""

    model_config = ConfigDict(extra="forbid")

    fingerprint: str = Field(description="sha256 of the stage's material (settings + input sha256s).")
    outputs: dict[str, str | None] = Field(default_factory=dict, description="Study-relative output -> sha256.")
    summary: dict[str, Any] = Field(default_factory=dict, description="What the stage did (shown by status).")
    seconds: float = Field(description="Wall time of the stage.")
    finished_at: str = Field(description="UTC time the stage finished.")


class StudyState(BaseModel):
    """``STUDY/state.json``: each finished stage's fingerprint and outputs."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(default=STATE_VERSION, description="State format version.")
    simulate: bool | None = Field(default=None, description="Annotation mode of the last run (None before any run).")
    stages: dict[str, StageRecord] = Field(default_factory=dict, description="Stage name -> its record.")


def accord_version() -> str:
    """The installed accord version: part of every fingerprint, so an upgrade reruns the stages."""
    from judges import accord_version as version

    return version()


@dataclass(kw_only=True)
class Context:
    """What stages share during one `accord run`: the study, its folder, the model server."""

    study: StudyFile
    console: Any
    base_url: str | None = None
    simulate: bool = False
    store_moved: bool = False
    """``--store-moved``: the store's location changed on purpose; fewer labels there may replace labels/human.jsonl."""
    start_server: bool = True
    """Whether a llama-server may be started here (not in `accord run --jobs` workers, which would race for it)."""
    _server: Any = None

    @property
    def root(self) -> Path:
        return self.study.output

    @property
    def layout(self) -> StudyLayout:
        return StudyLayout(self.study.output)

    def rel(self, path: Path) -> str:
        """A study path's name in the state file (study-relative)."""
        return self.layout.relative(path)

    def sha(self, path: Path) -> str | None:
        return file_sha256(path) if path.is_file() else None

    def model_url(self) -> str:
        """The local llama-server: --base-url, else a running instance, else one started now (stopped at close)."""
        if self.base_url is None:
            from judges import LlamaServer, read_state

            settings = self.study.local_models
            state = read_state(settings.server_name)
            if state is not None:
                self.base_url = state["base_url"]
            elif not self.start_server:
                raise InputError(f"{self.study.path}: its local models need a running llama-server (instance "
                                 f"{settings.server_name!r}), which studies run side by side do not start: start it "
                                 f"first (accord judges serve), pass --base-url, or run this study with --jobs 1")
            else:
                with self.console.status(f"starting llama-server ({settings.server_name}) ..."):
                    self._server = LlamaServer(name=settings.server_name, parallel=settings.parallel,
                                               ctx_size=settings.ctx_size).start()
                self.base_url = self._server.base_url
        return self.base_url

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a stage did; ``waiting`` (instructions) stops the run at the human stage."""

    summary: dict[str, Any] = field(default_factory=dict)
    waiting: str | None = None


@dataclass(frozen=True, kw_only=True)
class Stage:
    """One step of the run: ``run`` turns the study file into the settings of the registered ``driver`` and runs it
    (``apps.drivers.get_stage``); ``material`` and ``outputs`` are what `accord run` fingerprints and records."""

    name: str
    title: str
    material: Callable[[Context], dict[str, Any]]
    outputs: Callable[[Context], list[Path]]
    run: Callable[[Context], Outcome]

    @property
    def driver(self) -> str:
        """The registered stage driver ``run`` calls: the stage's name (a generate stage's before ``:source``)."""
        return self.name.partition(":")[0]


# --- generation (demo fixture only) -----------------------------------------------------------


def _generate_stage(source: Source) -> Stage:
    def out(ctx: Context) -> Path:
        return ctx.layout.source_file(source.name)

    def material(ctx: Context) -> dict[str, Any]:
        return {"generator": source.generate, "fixture": file_sha256(source.fixture),
                "items_per_category": source.items_per_category, "max_turns": source.max_turns,
                "max_tokens": source.max_tokens, "models": source.models, "accord": accord_version()}

    def run(ctx: Context) -> Outcome:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        from apps.drivers import get_stage
        from apps.upstream_stages import GenerateSettings

        url = ctx.model_url()
        with Progress("  {task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=ctx.console, transient=True) as bar:
            task = bar.add_task(f"{source.generate} ({len(source.models)} models)", total=None)
            settings = GenerateSettings(source=source, base_url=url, origin=str(ctx.study.path),
                                        progress=lambda done, total: bar.update(task, completed=done, total=total))
            written = get_stage("generate").run(ctx.layout, settings)
        return Outcome(summary=written.document)

    return Stage(name=f"generate:{source.name}", title=f"generate {source.name} (demo fixture, local models)",
                 material=material, outputs=lambda ctx: [out(ctx)], run=run)


# --- ingest -------------------------------------------------------------------------------------


def _source_files(ctx: Context, source: Source) -> list[Path]:
    from samples import expand_inputs

    if source.generate is not None:
        return [ctx.layout.source_file(source.name)]
    return expand_inputs(source.path)


def _ingest_material(ctx: Context) -> dict[str, Any]:
    sources = []
    for source in ctx.study.source:
        files = [p for p in _source_files(ctx, source) if p.is_file()]
        sources.append({"name": source.name, "adapter": source.adapter, "options": source.options,
                        "kinds": source.kinds, "metadata_strata": source.metadata_strata, "skip_bad": source.skip_bad,
                        "inputs": [[str(p), file_sha256(p)] for p in files]})
    return {"sources": sources, "accord": accord_version()}


def _ingest_run(ctx: Context) -> Outcome:
    from apps.drivers import get_stage
    from apps.upstream_stages import IngestSettings, IngestSource
    from samples import UNIT_KINDS

    settings = IngestSettings(origin=str(ctx.study.path), sources=tuple(
        IngestSource(name=s.name, files=tuple(_source_files(ctx, s)), adapter=s.adapter, options=s.options,
                     kinds=tuple(s.kinds) if s.kinds else UNIT_KINDS, metadata_strata=tuple(s.metadata_strata),
                     skip_bad=s.skip_bad) for s in ctx.study.source))
    written = get_stage("ingest").run(ctx.layout, settings)
    units: dict[str, int] = {}
    for result in written.detail:
        for kind, count in result.units_by_kind.items():
            units[kind] = units.get(kind, 0) + count
    return Outcome(summary={"trajectories": sum(result.n_trajectories for result in written.detail),
                            "units_by_kind": dict(sorted(units.items())),
                            "bad_records_skipped": written.document["bad_records"]["count"]})


# --- judges, sample, blind ----------------------------------------------------------------------


def _judge_material(ctx: Context) -> dict[str, Any]:
    version = accord_version()
    return {"units": ctx.sha(ctx.layout.units),
            "judges": [spec.fingerprint_parts("", version) for spec in ctx.study.judge_specs()]}


def _judge_run(ctx: Context) -> Outcome:
    from dataclasses import replace

    from apps.drivers import get_stage
    from apps.upstream_stages import JudgeSettings
    from judges import get_provider

    specs = []
    for spec in ctx.study.judge_specs():
        if get_provider(spec.provider).local_server and spec.connection.base_url is None:
            spec = replace(spec, connection=replace(spec.connection, base_url=ctx.model_url()))
        specs.append(spec)
    settings = JudgeSettings(judges=tuple(specs), population=True, origin=f"{ctx.study.path}: [[judge]]")
    summary = get_stage("judge").run(ctx.layout, settings).detail
    return Outcome(summary={"run_id": summary.run_id, "calls": summary.calls,
                            "judges": {j.judge: {"units": j.units, "calls": j.calls, "cache_hits": j.cache_hits,
                                                 "ok": j.ok, "unscored": j.unscored} for j in summary.judges}})


def _decisions_run(ctx: Context) -> Outcome:
    from agreement import DecisionDocument, DecisionSettings
    from apps.drivers import get_stage

    d = ctx.study.decisions
    written = get_stage("decisions").run(ctx.layout, DecisionSettings(**d.model_dump())).document
    document = DecisionDocument.model_validate(written)
    (overall,) = [r for r in document.rows if r.group == "all" and r.parser == d.semantic_parser]
    return Outcome(summary={"commit": overall.commit.statistic, "rows": overall.n})


def _sample_material(ctx: Context) -> dict[str, Any]:
    from samples import load_plan

    plan, plan_sha = load_plan(ctx.study.sampling.plan)
    return {"units": ctx.sha(ctx.layout.units), "trajectories": ctx.sha(ctx.layout.trajectories), "plan": plan_sha,
            "seed": ctx.study.sampling.seed,
            "judge_labels": ctx.sha(ctx.layout.judge_labels) if plan.judges_needed() else None}


def _sample_run(ctx: Context) -> Outcome:
    from apps.builtin_stages import SampleSettings
    from apps.drivers import get_stage
    from samples import SampleManifest

    settings = SampleSettings(plan=ctx.study.sampling.plan, seed=ctx.study.sampling.seed)
    manifest = SampleManifest.model_validate(get_stage("sample").run(ctx.layout, settings).document)
    return Outcome(summary={"sampled": manifest.sampled, "population_units": manifest.population_units,
                            "shortfalls": len(manifest.shortfalls)})


def _blind_run(ctx: Context) -> Outcome:
    from apps.builtin_stages import BlindSettings
    from apps.drivers import get_stage

    ranking = None
    if ctx.study.sampling.order == "active":
        from agreement import publish_active_order
        from samples import infer_family

        families = {spec["name"]: infer_family(str(spec.get("model") or spec["name"]))
                    for spec in ctx.study.judge}
        ranking = publish_active_order(ctx.layout, judge=(ctx.study.gate.judges or [ctx.study.judge[0]["name"]])[0],
                                       families=families, seed=ctx.study.blinding.seed)
    b = ctx.study.blinding
    settings = BlindSettings(annotators=tuple(b.annotators), seed=b.seed, keep=tuple(b.keep), keep_roles=b.keep_roles,
                             ranking=ranking)
    summary = get_stage("blind").run(ctx.layout, settings).document
    return Outcome(summary={"tasks": summary["tasks"], "annotators": summary["annotators"],
                            "tasks_with_masking": summary["tasks_with_masking"]})


# --- the human stage ----------------------------------------------------------------------------


def annotation_backend(ctx: Context) -> Any:
    """The study's annotation backend, built through the registry (``[annotation] backend``)."""
    from annotate import build_backend

    return build_backend(ctx.study.annotation.backend, study=ctx.root, options=ctx.study.annotation.options)


def annotation_backend_type(ctx: Context) -> Any:
    """The study's registered backend, asked what it can say without being built."""
    from annotate import get_backend_factory

    return get_backend_factory(ctx.study.annotation.backend)


def _annotate_material(ctx: Context) -> dict[str, Any]:
    annotation = ctx.study.annotation
    return {"tasks": ctx.sha(ctx.layout.tasks), "orders": ctx.sha(ctx.layout.orders), "backend": annotation.backend,
            "simulate": ctx.simulate, "panel": annotation.simulated_panel if ctx.simulate else None,
            "panel_seed": annotation.panel_seed if ctx.simulate else None,
            "labels": annotation_backend_type(ctx).labels_digest(ctx.layout)}


def _annotate_run(ctx: Context) -> Outcome:
    from apps.drivers import get_stage
    from apps.upstream_stages import AnnotateSettings

    annotation = ctx.study.annotation
    settings = AnnotateSettings(backend=lambda layout: annotation_backend(ctx), store_moved=ctx.store_moved,
                                panel=annotation.simulated_panel if ctx.simulate else None,
                                panel_seed=annotation.panel_seed, origin=str(ctx.study.path),
                                say=lambda notice: ctx.console.print(f"  [bold yellow]{notice}[/]"),
                                decided=lambda summary: _anytime_decided(ctx, summary))
    written = get_stage("annotate").run(ctx.layout, settings)
    if written.detail.missing:
        return Outcome(summary=written.document, waiting=_instructions(ctx, dict(written.detail.missing)))
    return Outcome(summary=written.document)


def _anytime_decided(ctx: Context, summary: dict[str, Any]) -> bool:
    """Under an anytime policy, a look after the labels just pulled (printed); True once every judge's verdict is
    decided: no more labels are needed, so the backend closes the remaining tasks and the run goes on to the gate."""
    from agreement import anytime_state, state_lines

    state = anytime_state(ctx.root, ctx.study.gate.policy, judges=ctx.study.gate.judges or None,
                          cluster=ctx.study.validation.cluster)
    if state is None:
        return False
    for line in state_lines(state):
        ctx.console.print(f"  {line}", markup=False, soft_wrap=True)
    summary["anytime"] = state.outcome
    return state.decided


def _instructions(ctx: Context, missing: dict[str, int]) -> str:
    study, root = ctx.study.path, ctx.root
    lines = ["waiting for human labels: " + ", ".join(f"{name} has {n} task(s) to label" for name, n in sorted(missing.items()))]
    lines += annotation_backend_type(ctx).instructions(ctx.layout, missing)
    again = f"accord run {study} --output {root}"  # the folder as this run resolved it (a --output included)
    lines.append(f"  3. when everyone has finished, run again: {again}")
    if ctx.study.annotation.simulated_panel:
        lines.append(f"  (or let the simulated panel label:       {again} --simulate-annotators)")
    return "\n".join(lines)


# --- imported labels ----------------------------------------------------------------------------


def _import_material(ctx: Context) -> dict[str, Any]:
    study = ctx.study
    tables = ([study.units] if study.units else []) + list(study.human_labels) + list(study.imported_judges())
    return {"tables": [[t.model_dump(mode="json"), file_sha256(t.path) if t.path.is_file() else None] for t in tables],
            "accord": accord_version()}


def _import_outputs(ctx: Context) -> list[Path]:
    layout = ctx.layout
    files = [layout.units, layout.key] if ctx.study.labels_only else []
    files += [layout.imported_labels_dir / f"{h.name}.jsonl" for h in ctx.study.human_labels]
    files += [layout.imported_judge_labels_dir / f"{j.name}.jsonl" for j in ctx.study.imported_judges()]
    return files


def _import_run(ctx: Context) -> Outcome:
    """Register a labels-only study's units, then import every table the study file names (replacing earlier
    ones, removing those it no longer names): every table checked first, then all published as one generation."""
    from annotate import HumanColumns
    from apps.drivers import get_stage
    from apps.upstream_stages import HumanImport, ImportSettings, JudgeImport, UnitsImport
    from samples import MatchColumns

    study = ctx.study
    units = None
    if study.units is not None:
        u = study.units
        units = UnitsImport(path=u.path, format=u.format, where=u.where, id_pattern=u.id_pattern,
                            unit_column=u.unit_column, kind=u.kind, kind_column=u.kind_column,
                            strata_columns=tuple(u.strata_columns), cluster_column=u.cluster_column, replace=True)
    human = tuple(HumanImport(path=h.path, scheme=h.scheme, format=h.format, name=h.name, where=h.where,
                              match=MatchColumns(unit=h.unit_column, task=h.task_column, trajectory=h.trajectory_column,
                                                 kind=h.kind_column, turn=h.turn_column),
                              columns=HumanColumns(annotator=h.annotator_column, label=h.label_column,
                                                   annotators=tuple(h.annotator_columns),
                                                   first_turn=h.first_turn_column))
                  for h in study.human_labels)
    judges = tuple(JudgeImport(path=j.path, judge=j.name, output_column=j.output_column, output_kind=j.output_kind,
                               parse_mode=j.parse_mode, scheme=j.scheme, format=j.format, where=j.where,
                               match=MatchColumns(unit=j.unit_column, trajectory=j.trajectory_column,
                                                  kind=j.kind_column, turn=j.turn_column))
                   for j in study.imported_judges())
    settings = ImportSettings(units=units, human=human, judges=judges, prune=True)
    return Outcome(summary=get_stage("import").run(ctx.layout, settings).document)


# --- agreement stages ---------------------------------------------------------------------------


def _tables(ctx: Context) -> dict[str, str | None]:
    """sha256 of the tables agreement reads: the key, judge labels and every backend's human labels."""
    from agreement import human_label_fingerprints

    layout = ctx.layout
    files = [layout.key, *layout.judge_label_files()]
    return {**{ctx.rel(path): ctx.sha(path) for path in files}, **human_label_fingerprints(layout)}


def wants_quality(study: StudyFile) -> bool:
    """Whether `accord run` has an annotator-quality stage: ``[validation] annotator_quality`` when given, else
    when the gate policy flags annotators (``[quality]``) or people label in a backend (not a labels-only study)."""
    from agreement import load_policy

    if study.validation.annotator_quality is not None:
        return study.validation.annotator_quality
    return not study.labels_only or load_policy(study.gate.policy).quality is not None


def validation_settings(study: StudyFile) -> tuple[dict[str, Any], list[str]]:
    """The settings validation runs under: the gate policy's, so every interval it writes is the one the gate
    decides on (one interval per statistic in every view); each ``[validation]`` value that differs is named."""
    from agreement import load_policy

    policy = load_policy(study.gate.policy).settings
    settings, notes = {}, []
    for name in ("tie_policy", "weighted", "n_resamples", "seed", "level"):
        given = getattr(study.validation, name)
        settings[name] = policy[name]
        if given is not None and given != policy[name]:
            notes.append(f"[validation] {name} = {given!r} replaced by the gate policy's {policy[name]!r} "
                         f"({study.gate.policy}), so validation shows the intervals the gate decides on")
    return settings, notes


def _validate_run(ctx: Context) -> Outcome:
    from apps.builtin_stages import ValidateSettings
    from apps.drivers import get_stage

    values, notes = validation_settings(ctx.study)
    for note in notes:
        ctx.console.print(f"  note: {note}")
    settings = ValidateSettings(cluster=ctx.study.validation.cluster, notes=tuple(notes),
                                judge_families=ctx.study.judge_families(), **values)
    with ctx.console.status(f"  validating ({settings.n_resamples} cluster-bootstrap resamples) ..."):
        result, _ = get_stage("validate").run(ctx.layout, settings).detail
    return Outcome(summary={"sections": [s.kind for s in result.sections], "judges": list(result.judges),
                            "simulated": result.simulated})


def _quality_run(ctx: Context) -> Outcome:
    """Annotator quality under the gate policy's settings and [quality] flag rule (the gate's flags)."""
    from agreement import QualityDocument, load_policy, settings_from_policy
    from apps.builtin_stages import QualityStageSettings
    from apps.drivers import get_stage

    settings = QualityStageSettings(quality=settings_from_policy(load_policy(ctx.study.gate.policy)),
                                    cluster=ctx.study.validation.cluster)
    with ctx.console.status(f"  annotator quality ({settings.quality.n_resamples} cluster-bootstrap resamples) ..."):
        document = QualityDocument.model_validate(get_stage("quality").run(ctx.layout, settings).document)
    return Outcome(summary={"sections": [s.kind for s in document.sections], "flagged": sorted(document.flagged())})


def _audit_run(ctx: Context) -> Outcome:
    from apps.builtin_stages import AuditSettings
    from apps.drivers import get_stage

    a = ctx.study.audit
    settings = AuditSettings(judge=a.judge, positive=tuple(a.positive), tie_policy=a.tie_policy,
                             model_field=a.model_field, judge_families=ctx.study.judge_families() or None,
                             n_resamples=a.n_resamples, n_permutations=a.n_permutations, seed=a.seed, level=a.level,
                             cluster=ctx.study.validation.cluster)
    with ctx.console.status("  auditing (cluster bootstrap and permutations) ..."):
        document = get_stage("audit").run(ctx.layout, settings).document
    return Outcome(summary={"judge": a.judge, "simulated": document["simulated"]})


def _preference_run(ctx: Context) -> Outcome:
    from agreement import PreferenceDocument
    from apps.builtin_stages import PreferenceSettings
    from apps.drivers import get_stage

    settings = PreferenceSettings(preference=ctx.study.preference, cluster=ctx.study.validation.cluster)
    with ctx.console.status("  pairwise preference audit (cluster bootstrap) ..."):
        written = get_stage("preference").run(ctx.layout, settings)
    document = PreferenceDocument.model_validate(written.document)
    own = [c for c in document.cells if c.self_family and c.statistic is not None]
    return Outcome(summary={"judges": len(written.detail), "self_family_cells": len(own)})


def _ehq_run(ctx: Context) -> Outcome:
    from agreement import EhqDocument
    from apps.drivers import get_stage

    with ctx.console.status("  EHQ per model (bootstrap) and the human re-ranking ..."):
        document = EhqDocument.model_validate(get_stage("ehq").run(ctx.layout, ctx.study.ehq).document)
    return Outcome(summary={"models": len({m.model for m in document.models}),
                            "max_rank_shift": document.reranking.get("ehq1", {}).get("max_rank_shift"),
                            "truncated": sum(m.n_truncated for m in document.models if m.labels == "judge"),
                            "kappa": {k: v.get("cohen_kappa") for k, v in document.agreement.items()}})


def _asa_run(ctx: Context) -> Outcome:
    from agreement import AsaDocument
    from apps.drivers import get_stage

    document = AsaDocument.model_validate(get_stage("asa").run(ctx.layout, ctx.study.asa).document)
    judge, human = document.blocked["judge"], document.blocked["human_reference"]
    return Outcome(summary={"m0": judge["m0"]["statistic"], "sa_strict": judge["sa_strict"]["statistic"],
                            "sa_relaxed": judge["sa_relaxed"]["statistic"], "gap": judge["gap"]["statistic"],
                            "human_sa_strict": human["sa_strict"]["statistic"],
                            "feasible_solve": document.feasible["solve"]["statistic"],
                            "false_abstention": document.feasible["false_abstention"]["statistic"],
                            "cra": document.hold["CRA"]["statistic"], "delta_chi": document.hold["Delta_chi"]["statistic"],
                            "belief_auroc": document.belief["auroc"]})


def _gate_run(ctx: Context) -> Outcome:
    from apps.builtin_stages import GateSettings
    from apps.drivers import get_stage

    settings = GateSettings(policy=ctx.study.gate.policy, judges=tuple(ctx.study.gate.judges) or None,
                            cluster=ctx.study.validation.cluster, judge_families=ctx.study.judge_families())
    with ctx.console.status(f"  gating under {ctx.study.gate.policy.name} ..."):
        document = get_stage("gate").run(ctx.layout, settings).document
    for note in document["notes"]:
        if note.startswith("self-family judge"):
            ctx.console.print(f"  [bold yellow]{note}[/]")
    return Outcome(summary={"verdict": document["verdict"],
                            "judges": {j: v["verdict"] for j, v in document["judges"].items()}})


def _score_run(ctx: Context) -> Outcome:
    from agreement import GateRefusal
    from apps.builtin_stages import ScoreSettings
    from apps.drivers import get_stage

    s = ctx.study.score
    settings = ScoreSettings(identify_judge=s.identify_judge, escalate_judge=s.escalate_judge,
                             correctness_judge=s.correctness_judge, correctness_field=s.correctness_field,
                             force=s.force, tie_policy=s.tie_policy, n_resamples=s.n_resamples, seed=s.seed,
                             level=s.level)
    try:
        with ctx.console.status(f"  scoring ({s.n_resamples} bootstrap resamples per rate) ..."):
            document = get_stage("score").run(ctx.layout, settings).document
    except GateRefusal as refusal:
        ctx.layout.score.unlink(missing_ok=True)
        return Outcome(summary={"scored": False, "refused": str(refusal)})
    return Outcome(summary={"scored": True, "accepted": document["accepted"], "rows": len(document["rows"])})


def _report_run(ctx: Context) -> Outcome:
    from apps.builtin_stages import ReportSettings
    from apps.drivers import get_stage

    with ctx.console.status("  rendering the report and its plots ..."):
        paths = get_stage("report").run(ctx.layout, ReportSettings()).document["paths"]
    return Outcome(summary={"html": paths["html"], "markdown": paths["markdown"]})


def _documents(ctx: Context) -> dict[str, str | None]:
    from agreement import DOCUMENTS

    return {model.STAGE: ctx.sha(model.path(ctx.layout)) for model in DOCUMENTS}


# --- the pipeline -------------------------------------------------------------------------------


def build_stages(study: StudyFile) -> list[Stage]:
    """Every stage of the study, in order (a labels-only study starts at the import)."""
    stages = [_generate_stage(s) for s in study.source if s.generate is not None]
    imports = Stage(name="import", title="import the labels people already have", material=_import_material,
                    outputs=_import_outputs, run=_import_run)
    if study.labels_only:
        stages.append(imports)
    else:
        stages += _trajectory_stages(study)
        if study.human_labels or study.imported_judges():
            stages.append(imports)
    stages.append(Stage(name="validate", title="validate judges against the annotators",
                        material=lambda ctx: {"tables": _tables(ctx), "settings": validation_settings(ctx.study)},
                        outputs=lambda ctx: [ctx.layout.validation], run=_validate_run))
    if not wants_quality(study):
        return stages + _verdict_stages(study)
    stages.append(Stage(name="quality", title="annotator quality (leave-one-out agreement, competence, flags)",
                        material=_quality_material, outputs=lambda ctx: [ctx.layout.quality], run=_quality_run))
    return stages + _verdict_stages(study)


def _quality_material(ctx: Context) -> dict[str, Any]:
    from annotate import store_labels_digest  # gold labels live in the coding app's store, whatever the backend

    return {"tables": _tables(ctx), "policy": file_sha256(ctx.study.gate.policy),
            "gold": [ctx.sha(ctx.layout.gold), ctx.sha(ctx.layout.gold_labels), store_labels_digest(ctx.layout)]}


def _trajectory_stages(study: StudyFile) -> list[Stage]:
    """From sources to human labels: ingest, judge, sample, blind, annotate."""
    return [
        Stage(name="ingest", title="ingest sources into trajectories and units", material=_ingest_material,
              outputs=lambda ctx: [ctx.layout.trajectories, ctx.layout.units, ctx.layout.ingest_manifest],
              run=_ingest_run),
        Stage(name="judge", title="run the judges over every unit (cached, resumable)", material=_judge_material,
              outputs=lambda ctx: [ctx.layout.judge_labels], run=_judge_run),
        *([Stage(name="decisions", title="decision tables, parser comparison and degenerate baselines (Aggarwal)",
                 material=lambda ctx: {"trajectories": ctx.sha(ctx.layout.trajectories), "units": ctx.sha(ctx.layout.units),
                                       "labels": ctx.sha(ctx.layout.judge_labels),
                                       "settings": ctx.study.decisions.model_dump(mode="json")},
                 outputs=lambda ctx: [ctx.layout.decisions], run=_decisions_run)] if study.decisions is not None else []),
        Stage(name="sample", title="draw the stratified sample", material=_sample_material,
              outputs=lambda ctx: [ctx.layout.sample, ctx.layout.sample_manifest], run=_sample_run),
        Stage(name="blind", title="blind the sample (tasks, orders, sealed key)",
              material=lambda ctx: {"sample": ctx.sha(ctx.layout.sample),
                                    "annotators": ctx.study.blinding.annotators, "seed": ctx.study.blinding.seed,
                                    "keep": ctx.study.blinding.keep,
                                    **({"order": "active", "judges": ctx.sha(ctx.layout.judge_labels)}
                                       if ctx.study.sampling.order == "active" else {})},
              outputs=lambda ctx: [ctx.layout.tasks, ctx.layout.orders, ctx.layout.blind_audit, ctx.layout.key],
              run=_blind_run),
        Stage(name="annotate", title=f"human labels ({study.annotation.backend} backend)", material=_annotate_material,
              outputs=lambda ctx: [p for p in ctx.layout.human_label_files()
                                   if p.parent != ctx.layout.imported_labels_dir], run=_annotate_run),
    ]


def _verdict_stages(study: StudyFile) -> list[Stage]:
    """From the labels to the verdict: audit, gate, score, report."""
    stages = []
    if study.ehq is not None:
        stages.append(Stage(name="ehq", title="EHQ scores per model and the human re-ranking",
                            material=lambda ctx: {"tables": _tables(ctx), "units": ctx.sha(ctx.layout.units),
                                                  "trajectories": ctx.sha(ctx.layout.trajectories),
                                                  "settings": ctx.study.ehq.model_dump(mode="json")},
                            outputs=lambda ctx: [ctx.layout.ehq], run=_ehq_run))
    if study.asa is not None:
        stages.append(Stage(name="asa", title="ASA milestones: SA strict / relaxed, the M0 - SA gap, feasible solve, hold, belief probe",
                            material=lambda ctx: {"tables": _tables(ctx), "units": ctx.sha(ctx.layout.units),
                                                  "trajectories": ctx.sha(ctx.layout.trajectories),
                                                  "labels": ctx.sha(ctx.layout.judge_labels),
                                                  "settings": ctx.study.asa.model_dump(mode="json")},
                            outputs=lambda ctx: [ctx.layout.asa], run=_asa_run))
    if study.audit is not None:
        stages.append(Stage(name="audit", title="family-bias audit",
                            material=lambda ctx: {"tables": _tables(ctx), "settings": ctx.study.audit.model_dump(mode="json")},
                            outputs=lambda ctx: [ctx.layout.audit], run=_audit_run))
    if study.preference is not None:
        stages.append(Stage(name="preference", title="pairwise self-preference audit",
                            material=lambda ctx: {"tables": _tables(ctx),
                                                  "settings": ctx.study.preference.model_dump(mode="json")},
                            outputs=lambda ctx: [ctx.layout.preference], run=_preference_run))
    stages.append(Stage(name="gate", title="acceptance gate",
                        material=lambda ctx: {"tables": _tables(ctx), "policy": file_sha256(ctx.study.gate.policy),
                                              "judges": ctx.study.gate.judges},
                        outputs=lambda ctx: [ctx.layout.verdict], run=_gate_run))
    if study.score is not None:
        stages.append(Stage(name="score", title="judge-scored benchmark",
                            material=lambda ctx: {"tables": _tables(ctx), "verdict": ctx.sha(ctx.layout.verdict),
                                                  "trajectories": ctx.sha(ctx.layout.trajectories),
                                                  "units": ctx.sha(ctx.layout.units),
                                                  "settings": ctx.study.score.model_dump(mode="json")},
                            outputs=lambda ctx: [ctx.layout.score] if ctx.layout.score.is_file() else [],
                            run=_score_run))
    stages.append(Stage(name="report", title="HTML and Markdown report", material=_documents,
                        outputs=lambda ctx: [ctx.layout.report_html, ctx.layout.report_markdown], run=_report_run))
    return stages


def read_state(root: Path) -> StudyState:
    path = StudyLayout(root).state
    if not path.is_file():
        return StudyState()
    try:
        return StudyState.model_validate_json(path.read_bytes())
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise InputError(f"{path}: not an accord state file of version {STATE_VERSION} ({where}: {first['msg']}); "
                         f"delete it to rerun every stage") from None


def stage_status(ctx: Context, stage: Stage, state: StudyState) -> tuple[str, str]:
    """(fingerprint, 'done' | 'stale' | 'pending') of a stage against the recorded state."""
    fingerprint = sha256_hex(stage.material(ctx))
    recorded = state.stages.get(stage.name)
    if recorded is None:
        return fingerprint, "pending"
    if recorded.fingerprint != fingerprint:
        return fingerprint, "stale"
    current = {ctx.rel(path) for path in stage.outputs(ctx)}
    if current - set(recorded.outputs):
        return fingerprint, "stale"
    for relative, digest in recorded.outputs.items():
        if ctx.sha(ctx.root / relative) != digest:
            return fingerprint, "stale"
    return fingerprint, "done"


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What one `accord run` did per stage; ``waiting`` holds the human-stage instructions."""

    stages: list[dict[str, Any]]
    waiting: str | None
    verdict: str | None


def _write_state(root: Path, state: StudyState) -> None:
    from samples import write_json

    write_json(StudyLayout(root).state, state.model_dump(mode="json"))


def run_study(ctx: Context) -> RunResult:
    """Run every stage in order, skipping those already done; stop at the human stage when labels are missing.

    The stages share their agreement computations (``agreement.shared_results``): the gate's human panel
    and reference comparisons are validation's, on the same labels and seed."""
    from agreement import shared_results

    with shared_results():
        return _run_stages(ctx)


def _run_stages(ctx: Context) -> RunResult:
    from agreement import VerdictDocument, read_document
    from samples import atomic_writer, writable_folder, write_json

    root = ctx.root
    writable_folder(root, "output")
    resolved = ctx.study.model_dump(mode="json")
    resolved_path = ctx.layout.resolved_study
    previous = resolved_path.read_bytes() if resolved_path.is_file() else None
    changed = previous is None or json.loads(previous) != resolved
    if changed:
        write_json(resolved_path, resolved)  # the stages (and the store's location) read the new settings
    maps = resolved.get("label_map") or []
    if maps and (not ctx.layout.label_map.is_file() or json.loads(ctx.layout.label_map.read_text()) != maps):
        write_json(ctx.layout.label_map, maps)
    elif not maps:
        ctx.layout.label_map.unlink(missing_ok=True)
    state = read_state(root)
    state.simulate = ctx.simulate
    stages = build_stages(ctx.study)
    done: list[dict[str, Any]] = []
    waiting = None
    try:
        for number, stage in enumerate(stages, start=1):
            label = f"[{number}/{len(stages)}] {stage.name}"
            fingerprint, status = stage_status(ctx, stage, state)
            if status == "done":
                ctx.console.print(f"{label}: [green]up to date[/] (skipped)")
                done.append({"stage": stage.name, "status": "skipped"})
                continue
            ctx.console.print(f"{label}: {stage.title} ...")
            started = time.monotonic()
            outcome = stage.run(ctx)
            seconds = round(time.monotonic() - started, 3)
            if outcome.waiting is not None:
                state.stages.pop(stage.name, None)
                _write_state(root, state)
                done.append({"stage": stage.name, "status": "waiting", "summary": outcome.summary, "seconds": seconds})
                waiting = outcome.waiting
                ctx.console.print(outcome.waiting, style="bold yellow", soft_wrap=True, markup=False)
                break
            fingerprint = sha256_hex(stage.material(ctx)) if stage.name == "annotate" else fingerprint
            state.stages[stage.name] = StageRecord(
                fingerprint=fingerprint, outputs={ctx.rel(p): ctx.sha(p) for p in stage.outputs(ctx)},
                summary=outcome.summary, seconds=seconds, finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            _write_state(root, state)
            done.append({"stage": stage.name, "status": "ran", "summary": outcome.summary, "seconds": seconds})
            ctx.console.print(f"{label}: [bold]done[/] in {seconds:.1f} s  {_brief(outcome.summary)}")
    except BaseException:
        if changed:  # a failed run leaves the settings the study had (a moved store stays where its labels are)
            if previous is None:
                resolved_path.unlink(missing_ok=True)
            else:
                with atomic_writer(resolved_path) as handle:
                    handle.write(previous)
        raise
    finally:
        ctx.close()
    verdict = read_document(VerdictDocument, root) if waiting is None else None
    return RunResult(stages=done, waiting=waiting, verdict=verdict.verdict if verdict else None)


def _brief(summary: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in summary.items() if isinstance(v, (int, float, str)) and k not in ("notice",)]
    return ", ".join(parts)[:160]


# --- status -------------------------------------------------------------------------------------


def _count_by(path: Path, field_name: str) -> dict[str, int]:
    from collections import Counter

    from samples import decode_json_line, iter_jsonl_lines

    if not path.is_file():
        return {}
    return dict(sorted(Counter(str(decode_json_line(line).get(field_name)) for _, line in iter_jsonl_lines(path)).items()))


def _key_by_kind(layout: StudyLayout) -> dict[str, int]:
    """Sealed key rows per unit kind (``samples.tables.key_entries``); {} before there is a key."""
    from samples import key_entries

    if not layout.key.is_file():
        return {}
    return dict(sorted(Counter(entry.kind for _, entry in key_entries(layout.key)).items()))


def _labels_status(ctx: Context) -> dict[str, Any]:
    """Per annotator: tasks assigned and labelled in the study's backend, and which backends their labels came from."""
    from apps.demo.panel import SIMULATED_NOTICE
    from samples import HumanLabel

    body: dict[str, Any] = {"backend": ctx.study.annotation.backend, "tasks": sum(_key_by_kind(ctx.layout).values()),
                            "annotators": {}, "simulated": False, "notice": None}
    from agreement import human_label_tables

    fields = set(HumanLabel.model_fields)
    labels = [HumanLabel.model_validate({k: v for k, v in row.items() if k in fields})
              for table in human_label_tables(ctx.layout) for row in table.rows if row.get("role") != "adjudication"]
    assigned: dict[str, int] = {}
    labelled: dict[str, int] = {}
    if ctx.layout.tasks.is_file() and annotation_backend_type(ctx).reports_status(ctx.layout):
        backend = annotation_backend(ctx)
        try:
            status = backend.status()
        finally:
            backend.close()
        body["tasks"] = status.n_tasks
        assigned, labelled = dict(status.assigned), dict(status.labelled)
    for name in sorted(set(assigned) | {row.annotator for row in labels}):
        mine = [row for row in labels if row.annotator == name]
        body["annotators"][name] = {"assigned": assigned.get(name, 0), "labelled": labelled.get(name, len(mine)),
                                    "backends": sorted({row.backend for row in mine})}
    if simulated(row.backend for row in labels):
        body.update(simulated=True, notice=SIMULATED_NOTICE)
    versions = Counter(row.codebook_sha256 or "unknown" for row in labels)
    body["codebook_versions"] = dict(sorted(versions.items(), key=lambda item: (-item[1], item[0])))
    body["codebook_note"] = None if len(versions) < 2 else (
        "labels were given under " + str(len(versions)) + " codebook versions ("
        + ", ".join(f"{v[:12]}: {n}" for v, n in body["codebook_versions"].items())
        + "); accord validate --by-codebook splits agreement by version")
    return body


def _judges_status(layout: StudyLayout) -> dict[str, Any]:
    """Judge runs logged, and per judge its label rows (ok / unscored) and where they came from (run or import)."""
    from samples import decode_json_line, iter_jsonl_lines, judge_label_rows

    runs = 0
    if layout.judge_runs.is_file():
        runs = sum(1 for _, line in iter_jsonl_lines(layout.judge_runs) if decode_json_line(line).get("event") == "end")
    per_judge: dict[str, dict[str, Any]] = {}
    for path in layout.judge_label_files():
        origin = "run" if path == layout.judge_labels else "imported"
        for _, row in judge_label_rows(path):
            counts = per_judge.setdefault(row.judge, {"rows": 0, "ok": 0, "unscored": 0, "origin": origin})
            counts["rows"] += 1
            counts[row.parse_status] += 1
    imported = sum(1 for row in per_judge.values() if row["origin"] == "imported")
    return {"runs": runs, "imported": imported, "labels": dict(sorted(per_judge.items()))}


def _sample_status(layout: StudyLayout) -> dict[str, Any]:
    """Sampled units by kind: the sample file, else the sealed key (a study built from labels registers its units
    there, each with inclusion probability 1)."""
    if layout.sample.is_file():
        return {"sampled": sum(_count_by(layout.sample, "kind").values()), "by_kind": _count_by(layout.sample, "kind"),
                "source": layout.relative(layout.sample)}
    by_kind = _key_by_kind(layout)
    return {"sampled": sum(by_kind.values()), "by_kind": by_kind,
            "source": layout.relative(layout.key) if by_kind else None}


def _folder_labels(layout: StudyLayout) -> dict[str, Any]:
    """Per annotator: tasks assigned (the store's orders, else blind/orders.json) and labelled (every source)."""
    from agreement import human_label_tables
    from apps.demo.panel import SIMULATED_NOTICE
    from apps.live import _store_orders

    orders = _store_orders(layout)
    if not orders and layout.orders.is_file():
        orders = json.loads(layout.orders.read_text(encoding="utf-8"))
    rows = [row for table in human_label_tables(layout) for row in table.rows if row.get("role") != "adjudication"]
    annotators = {}
    for name in sorted(set(orders) | {str(row["annotator"]) for row in rows}):
        mine = [row for row in rows if row["annotator"] == name]
        annotators[name] = {"assigned": len(orders.get(name, [])), "labelled": len(mine),
                            "backends": sorted({str(row.get("backend")) for row in mine})}
    given_by_simulator = simulated(row.get("backend") for row in rows)
    return {"backend": None, "tasks": _count_lines(layout.tasks) or sum(_key_by_kind(layout).values()),
            "annotators": annotators, "simulated": given_by_simulator,
            "notice": SIMULATED_NOTICE if given_by_simulator else None,
            "codebook_versions": {}, "codebook_note": None}


def _count_lines(path: Path) -> int:
    return sum(_count_by(path, "kind").values())


def folder_status(root: Path) -> dict[str, Any]:
    """Where a study folder stands when no study file describes it (built by hand: ingest, sample, blind, import,
    validate, gate): each table and document that exists, staleness, labels and judges, the verdict."""
    from agreement import DOCUMENTS, VerdictDocument, read_document, stale_reasons

    layout = StudyLayout.of(root)
    if not layout.root.is_dir():
        raise InputError(f"{root}: study folder not found")
    tables = [("units", layout.units), ("sample", layout.sample), ("blind", layout.tasks), ("sealed key", layout.key)]
    # `accord import` registers its units straight into the sealed key (inclusion probability 1): there is
    # nothing to sample, and the units carry no text to blind.
    imported = layout.key.is_file() and not layout.sample.is_file()
    stale = {}
    stages = [{"stage": name, "state": "done" if path.is_file() else
               "not needed" if imported and name in ("sample", "blind") else "pending", "seconds": None,
               "finished_at": None, "summary": None} for name, path in tables]
    for model in DOCUMENTS:  # the stage documents written so far (which ones a study needs, only its file says)
        document = read_document(model, layout)
        if document is not None:
            stale[model.STAGE] = stale_reasons(document, layout)
            stages.append({"stage": model.STAGE, "state": "stale" if stale[model.STAGE] else "done", "seconds": None,
                           "finished_at": None, "summary": None})
    verdict = read_document(VerdictDocument, layout)
    return {
        "study": layout.root.name, "study_file": None, "output": str(layout.root), "stages": stages,
        "units": {"total": _count_lines(layout.units), "by_kind": _count_by(layout.units, "kind")},
        "sample": _sample_status(layout), "labels": _folder_labels(layout), "judges": _judges_status(layout),
        "verdict": None if verdict is None else {
            "verdict": verdict.verdict, "policy": verdict.policy.name,
            "judges": {j: v.verdict for j, v in verdict.judges.items()}, "simulated": verdict.simulated},
        "stale": stale, "waiting": None,
        "note": (f"units, labels and verdicts imported with accord import: sample and blind are not needed; next: "
                 f"accord gate {layout.root} --policy POLICY.toml") if imported and verdict is None else None,
    }


def _documents_status(ctx: Context) -> dict[str, list[str]]:
    """Each saved stage document's stale lines (empty when its inputs are unchanged)."""
    from agreement import DOCUMENTS, read_document, stale_reasons

    found = {model.STAGE: read_document(model, ctx.layout) for model in DOCUMENTS}
    return {stage: stale_reasons(doc, ctx.layout) for stage, doc in found.items() if doc is not None}


def study_status(study: StudyFile) -> dict[str, Any]:
    """Where the study stands, computed from its folder without running anything."""
    from rich.console import Console

    from agreement import VerdictDocument, read_document

    root = study.output
    state = read_state(root) if root.is_dir() else StudyState()
    # The annotation mode of the last run (--simulate-annotators / --interactive), else the study's.
    simulate = state.simulate if state.simulate is not None else study.annotation.simulate
    ctx = Context(study=study, console=Console(stderr=True), simulate=simulate)
    stages = []
    for stage in build_stages(study):
        _, current = stage_status(ctx, stage, state)
        recorded = state.stages.get(stage.name)
        stages.append({"stage": stage.name, "state": current, "seconds": recorded.seconds if recorded else None,
                       "finished_at": recorded.finished_at if recorded else None,
                       "summary": recorded.summary if recorded else None})
    verdict = None
    document = read_document(VerdictDocument, ctx.layout) if root.is_dir() else None
    if document is not None:
        verdict = {"verdict": document.verdict, "policy": document.policy.name,
                   "judges": {j: v.verdict for j, v in document.judges.items()}, "simulated": document.simulated}
    labels = _labels_status(ctx)
    missing = {name: row["assigned"] - row["labelled"] for name, row in labels["annotators"].items()
               if row["assigned"] > row["labelled"]}
    return {
        "study": study.study.name, "study_file": str(study.path), "output": str(root), "stages": stages,
        "units": {"total": sum(_count_by(ctx.layout.units, "kind").values()),
                  "by_kind": _count_by(ctx.layout.units, "kind")},
        "sample": _sample_status(ctx.layout),
        "labels": labels, "judges": _judges_status(ctx.layout), "verdict": verdict,
        "stale": _documents_status(ctx) if root.is_dir() else {},
        "waiting": _instructions(ctx, missing) if missing else None,
    }
