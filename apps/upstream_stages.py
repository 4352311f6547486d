"""The built-in drivers of the stages that make a study's units and labels (``apps.drivers``): generate, ingest,
judge, import and annotate (the human stage).

As in ``apps.builtin_stages``, each takes a frozen settings object validated where it is built and
computes its stage from the study folder and those settings alone: ``accord ingest``,
``accord judge run``, ``accord import ...``, ``accord ls push`` and ``accord labels export`` build
the settings from their flags, ``accord run`` (``apps.stages``) from the study file, and both
call ``get_stage(name).run(layout, settings)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps.drivers import StageOutput, register_stage
from samples import DEFAULT_SEED, InputError, StudyLayout

# --- generate (demo fixture only) ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GenerateSettings:
    """One ``[[source]]`` with ``generate`` (``apps.study.Source``) and the model server that answers."""

    source: Any
    base_url: str
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)
    """Told (done, total) calls (display only)."""
    origin: str = "generate"
    """What named the source, for messages (the study file)."""

    def __post_init__(self) -> None:
        if self.source.generate is None:
            raise InputError(f"source {self.source.name!r}: generate is not set; its records are read from path")


def _fixture_rows(source: Any) -> list[Any]:
    """The fixture rows, limited to the first ``items_per_category`` questions of each category."""
    from apps.demo.conflict import ConflictInstance
    from apps.demo.items import DemoItem
    from samples import read_models

    model: type[Any] = ConflictInstance if source.generate == "demo-agent" else DemoItem
    rows: list[Any] = list(read_models(source.fixture, model))
    if source.items_per_category is None:
        return rows
    kept: dict[str, list[str]] = {}
    for row in rows:
        ids = kept.setdefault(row.category, [])
        if row.question_id not in ids and len(ids) < source.items_per_category:
            ids.append(row.question_id)
    return [row for row in rows if row.question_id in kept[row.category]]


@dataclass(frozen=True)
class GenerateStage:
    """A demo source's records made by the local models (``STUDY/sources/NAME.jsonl``)."""

    name: str = "generate"
    settings: type = GenerateSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return []  # the fixture lives outside the study (its sha256 is in `accord run`'s fingerprint)

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.sources]

    def run(self, layout: StudyLayout, settings: GenerateSettings) -> StageOutput:
        """The generation report (records, requests, truncated, wall seconds)."""
        from apps.demo.agent import DEMO_MODELS, AgentConfig, closed_book_answers, run_agent
        from samples import write_jsonl

        source = settings.source
        known = {m.name: m for m in DEMO_MODELS}
        unknown = [m for m in source.models if m not in known]
        if unknown:
            raise InputError(f"{settings.origin}: source {source.name!r}: models {unknown} are not demo models "
                             f"{sorted(known)}")
        rows = _fixture_rows(source)
        generate = run_agent if source.generate == "demo-agent" else closed_book_answers
        records, report = generate(rows, base_url=settings.base_url, models=[known[m] for m in source.models],
                                   config=AgentConfig(max_turns=source.max_turns, max_tokens=source.max_tokens),
                                   progress=settings.progress)
        write_jsonl(layout.source_file(source.name), records)
        return StageOutput(document={"records": report.n_records, "requests": report.n_requests,
                                     "truncated": report.truncated, "wall_s": round(report.wall_s, 2)},
                           detail=len(rows) * len(source.models))


# --- ingest --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class IngestSource:
    """One source: its files read through ``adapter``. ``name`` None: the study's only source, written straight
    into the study (``accord ingest``); named sources go to ``STUDY/ingest/NAME/`` and are merged (``accord run``)."""

    name: str | None = None
    files: tuple[Path, ...]
    adapter: str
    options: Mapping[str, str] = field(default_factory=dict)
    kinds: tuple[str, ...] | None = None
    """Unit kinds to cut (None: trajectories only)."""
    metadata_strata: tuple[str, ...] = ()
    skip_bad: bool = False


@dataclass(frozen=True, kw_only=True)
class IngestSettings:
    sources: tuple[IngestSource, ...]
    workers: int = 1
    progress: Callable[[int], None] | None = field(default=None, compare=False)
    """Told the records read so far (display only)."""
    origin: str = "ingest"
    """What named the sources, for messages (the study file)."""

    def __post_init__(self) -> None:
        if not self.sources:
            raise InputError("ingest: expected at least one source")
        if len(self.sources) > 1 and any(s.name is None for s in self.sources):
            raise InputError("ingest: several sources must each have a name (their files go to STUDY/ingest/NAME/)")


def _concatenate(parts: list[Path], target: Any) -> None:
    for part in parts:
        with part.open("rb") as handle:
            while block := handle.read(1 << 20):
                target.write(block)


@dataclass(frozen=True)
class IngestStage:
    name: str = "ingest"
    settings: type = IngestSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.sources]  # generated sources; the others are named by the settings

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.trajectories, layout.units, layout.ingest_manifest]

    def run(self, layout: StudyLayout, settings: IngestSettings) -> StageOutput:
        """The ingest manifest as written; ``detail`` is the ``samples.ingest.IngestResult`` of each source."""
        from samples import ingest_trajectories as ingest

        (first, *_) = settings.sources
        if first.name is None:
            result = ingest(first.files, layout.root, adapter=first.adapter, options=first.options, kinds=first.kinds,
                            metadata_strata=first.metadata_strata, skip_bad=first.skip_bad, workers=settings.workers,
                            progress=settings.progress)
            return StageOutput(document=json.loads(layout.ingest_manifest.read_text(encoding="utf-8")),
                               detail=[result])
        return self._merged(layout, settings)

    @staticmethod
    def _merged(layout: StudyLayout, settings: IngestSettings) -> StageOutput:
        """Each named source into its own folder, then one generation of the merged trajectories, units and
        manifest (a killed run leaves the old set or the new); trajectory ids must be unique across sources."""
        from samples import decode_json_line, iter_jsonl_lines, publishing
        from samples import ingest_trajectories as ingest

        manifests: dict[str, Any] = {}
        skipped: list[str] = []
        seen: dict[str, str] = {}
        results = []
        for source in settings.sources:
            assert source.name is not None  # checked where the settings were built
            folder = StudyLayout(layout.ingest_dir(source.name))
            results.append(ingest(source.files, folder.root, adapter=source.adapter, options=source.options,
                                  kinds=source.kinds, metadata_strata=source.metadata_strata,
                                  skip_bad=source.skip_bad, workers=settings.workers, progress=settings.progress))
            manifests[source.name] = json.loads(folder.ingest_manifest.read_text(encoding="utf-8"))
            skipped += [f"{source.name}: {problem}" for problem in results[-1].bad_records]
            for _, line in iter_jsonl_lines(folder.trajectories):
                trajectory_id = decode_json_line(line)["id"]
                if trajectory_id in seen:
                    raise InputError(f"{settings.origin}: trajectory id {trajectory_id!r} appears in sources "
                                     f"{seen[trajectory_id]!r} and {source.name!r}; trajectory ids must be unique "
                                     "across sources")
                seen[trajectory_id] = source.name
        folders = [StudyLayout(layout.ingest_dir(str(s.name))) for s in settings.sources]
        manifest = {"sources": manifests, "bad_records": {"count": len(skipped), "skipped": skipped}}
        with publishing(layout, "ingest") as generation:
            _concatenate([f.trajectories for f in folders], generation.open(layout.trajectories))
            _concatenate([f.units for f in folders], generation.open(layout.units))
            generation.write_json(layout.ingest_manifest, manifest)
        return StageOutput(document=manifest, detail=results)


# --- judge ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class JudgeSettings:
    """The judges (``judges.spec.JudgeSpec``) and the units they label."""

    judges: tuple[Any, ...]
    units: Path | None = None
    """A units file; None: the study's sample, else its units (each checked as one generation of its stage)."""
    population: bool = False
    """Every unit the study has (``STUDY/units.jsonl``), sampled or not: `accord run` judges before it samples."""
    origin: str = "--judge"
    """How the judges were named, for messages (a flag, or the study file's ``[[judge]]`` tables)."""
    cache: Path | None = None
    prices: Path | None = None
    dry_run: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        if not self.judges:
            raise InputError("no judges: give --judge PROMPT@PROVIDER:MODEL, or --config FILE with [[judge]] tables")
        if self.population and self.units is not None:
            raise InputError("judge: give a units file or population=True, not both")


def judged_units(layout: StudyLayout, settings: JudgeSettings) -> list[Any]:
    """The units the judges label, with what their message needs (identify_turn: turns 0..i, from the study's
    trajectories); a judge none of whose unit kinds the units have would run on nothing: an input error."""
    from judges import read_units
    from samples import check_generation, with_context

    path = settings.units
    if settings.population:
        check_generation(layout, "ingest")
        path = layout.units
    elif path is None:
        for stages, candidate in ((("sample",), layout.sample), (("ingest", "import"), layout.units)):
            if candidate.exists():
                for stage in stages:  # the units of one run of the stage that wrote them, never a mix
                    check_generation(layout, stage)
                path = candidate
                break
        else:
            raise InputError(f"no units: {layout.sample} and {layout.units} are absent; give --units FILE")
    units = with_context(read_units(path), layout.trajectories,
                         kinds={kind for judge in settings.judges for kind in judge.unit_kinds})
    kinds = sorted({unit.kind for unit in units})
    for judge in settings.judges:
        if not set(judge.unit_kinds) & set(kinds):
            raise InputError(f"{settings.origin} {judge.name}: labels unit kinds {sorted(judge.unit_kinds)}, but the "
                             f"units have only {kinds}; nothing to judge (a judge for {kinds}: accord judge list)")
    return units


@dataclass(frozen=True)
class JudgeStage:
    name: str = "judge"
    settings: type = JudgeSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.units, layout.sample, layout.trajectories]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.judge_labels, layout.judge_label_log, layout.judge_runs]

    def run(self, layout: StudyLayout, settings: JudgeSettings) -> StageOutput:
        """The run summary (``judges.runner.RunSummary.as_dict``); ``detail`` is the RunSummary."""
        from judges import PriceTable, StudyPaths, run_judges

        units = judged_units(layout, settings)
        summary = run_judges(units, list(settings.judges), StudyPaths.in_dir(layout.judges_dir, cache=settings.cache),
                             prices=PriceTable.load(settings.prices), dry_run=settings.dry_run,
                             progress=settings.progress)
        return StageOutput(document=summary.as_dict(), detail=summary)


# --- import --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class UnitsImport:
    """The units of a labels-only study, known only by id (``samples.imports.units_from_rows``)."""

    path: Path
    unit_column: str
    kind: str | None = None
    kind_column: str | None = None
    strata_columns: tuple[str, ...] = ()
    cluster_column: str | None = None
    format: str | None = None
    where: Mapping[str, str] | None = None
    id_pattern: str | None = None
    rows: Sequence[Any] | None = None
    """The table's rows already read (``accord import table`` reads it once); None: read from ``path``."""
    replace: bool = False
    """Rewrite units a study already has (`accord run`: a labels-only study's units come from its table alone)."""
    distinct_rows: bool = False
    """A table of units, one row each: a row repeating an earlier one exactly is an error."""


@dataclass(frozen=True, kw_only=True)
class HumanImport:
    """One table of human labels (``annotate.imported_labels.human_import``)."""

    path: Path
    match: Any
    """``samples.imports.MatchColumns``."""
    columns: Any
    """``annotate.imported_labels.HumanColumns``."""
    scheme: str | None = None
    format: str | None = None
    name: str | None = None
    where: Mapping[str, str] | None = None
    rows: Sequence[Any] | None = None


@dataclass(frozen=True, kw_only=True)
class JudgeImport:
    """One judge's verdicts from a table (``judges.imports.judge_import``)."""

    path: Path
    judge: str
    match: Any
    output_column: str
    output_kind: str | None = None
    parse_mode: str = "strict"
    scheme: str | None = None
    format: str | None = None
    where: Mapping[str, str] | None = None
    rows: Sequence[Any] | None = None
    only_sample: bool = False


@dataclass(frozen=True, kw_only=True)
class ImportSettings:
    units: UnitsImport | None = None
    human: tuple[HumanImport, ...] = ()
    judges: tuple[JudgeImport, ...] = ()
    prune: bool = False
    """Remove imported tables these settings do not name (`accord run`: the study file lists every import)."""

    def __post_init__(self) -> None:
        if self.units is None and not self.human and not self.judges:
            raise InputError("import: nothing to import (units, human labels or judge verdicts)")


@dataclass(frozen=True, kw_only=True)
class ImportResult:
    """What an import built: the units registration (or None) and each table's report."""

    units: Any
    human: tuple[Any, ...]
    judges: tuple[Any, ...]


@dataclass(frozen=True)
class ImportStage:
    name: str = "import"
    settings: type = ImportSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.units, layout.key]  # the tables imported are named by the settings

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.units, layout.key, layout.imported_labels_dir, layout.imported_judge_labels_dir]

    def run(self, layout: StudyLayout, settings: ImportSettings) -> StageOutput:
        """Units first (if any), then every table checked against them, then all published as one generation
        (a failure changes nothing). The document is the summary `accord run` records; ``detail`` an ImportResult."""
        from annotate import human_import
        from judges import judge_import
        from samples import UnitMatcher, publish_import, read_table, select, units_from_rows, with_id_groups

        summary: dict[str, Any] = {}
        files: list[tuple[Path, Any]] = []
        matcher, registered = None, None
        if settings.units is not None:
            u = settings.units
            rows = with_id_groups(select(read_table(u.path, format=u.format) if u.rows is None else u.rows,
                                         dict(u.where) if u.where else None), u.unit_column, u.id_pattern)
            built = units_from_rows(layout, rows, unit_column=u.unit_column, kind=u.kind, kind_column=u.kind_column,
                                    strata_columns=u.strata_columns, cluster_column=u.cluster_column,
                                    replace=u.replace, distinct_rows=u.distinct_rows)
            files += [(layout.units, built.units), (layout.key, built.key)]
            matcher, registered = UnitMatcher.of_records(layout, built.units, built.key), built.report
            summary.update(units=built.report.units)
        # Without units registered here, each table is matched against the study's own (after its own checks).
        human = []
        for h in settings.human:
            report, labels = human_import(h.path, layout.root, match=h.match, columns=h.columns, scheme=h.scheme,
                                          format=h.format, name=h.name, where=dict(h.where) if h.where else None,
                                          rows=h.rows, matcher=matcher)
            files.append((report.written, labels))
            human.append(report)
            summary[f"human:{report.written.stem}"] = report.labels
        judged = []
        for j in settings.judges:
            verdicts, verdict_rows = judge_import(j.path, layout.root, judge=j.judge, match=j.match, output_column=j.output_column,
                                            output_kind=j.output_kind, parse_mode=j.parse_mode, scheme=j.scheme,
                                            format=j.format, where=dict(j.where) if j.where else None, rows=j.rows,
                                            matcher=matcher, only_sample=j.only_sample)
            files.append((verdicts.written, verdict_rows))
            judged.append(verdicts)
            summary[f"judge:{j.judge}"] = verdicts.ok
        stale: list[Path] = []
        if settings.prune:
            wanted = {path for path, _ in files}
            stale = [old for folder in (layout.imported_labels_dir, layout.imported_judge_labels_dir)
                     for old in (sorted(folder.glob("*.jsonl")) if folder.is_dir() else ()) if old not in wanted]
        publish_import(layout, files, removed=stale)
        return StageOutput(document=summary,
                           detail=ImportResult(units=registered, human=tuple(human), judges=tuple(judged)))


# --- annotate: the human stage -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AnnotateSettings:
    """How to reach the study's annotation backend and which steps to take: push the blinded tasks, let the
    simulated panel label (demo only), pull the labels into the study."""

    backend: Callable[[StudyLayout], Any]
    """Opens the study's backend (``annotate.base.AnnotationBackend``); closed when the stage is done."""
    push: bool = True
    tasks: Path | None = None
    """Blinded tasks to push (None: the study's, checked as one generation of the blind stage, with its orders)."""
    orders: Path | None = None
    panel: Mapping[str, float] | None = None
    """Simulated annotator -> flip probability: the panel labels through the coding app's store (None: people)."""
    panel_seed: int = DEFAULT_SEED
    pull: bool = True
    wait: bool = True
    """After the pull, ask the backend who still has tasks to label (`accord run` waits for them)."""
    store_moved: bool = False
    """The store's location changed on purpose: fewer labels there may replace ``labels/human.jsonl``."""
    decided: Callable[[dict[str, Any]], bool] | None = field(default=None, compare=False)
    """Asked, when labels are missing after the pull, whether the study is decided anyway (an anytime policy:
    the remaining tasks are then closed); it may add to the summary it is given."""

    say: Callable[[str], None] | None = field(default=None, compare=False)
    """Told what the stage shows as it goes (the simulated panel's notice)."""
    origin: str = "annotate"
    """What named the backend, for messages (the study file's ``[annotation]``)."""

    def __post_init__(self) -> None:
        if not (self.push or self.pull):
            raise InputError("annotate: expected push, pull or both")


@dataclass(frozen=True, kw_only=True)
class AnnotateResult:
    """The push report, the labels pulled and who still has tasks to label (name -> count)."""

    pushed: Any = None
    labels: tuple[Any, ...] | None = None
    missing: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AnnotateStage:
    name: str = "annotate"
    settings: type = AnnotateSettings

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.tasks, layout.orders]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [p for p in layout.human_label_files() if p.parent != layout.imported_labels_dir]

    def run(self, layout: StudyLayout, settings: AnnotateSettings) -> StageOutput:
        """The stage summary `accord run` records; ``detail`` an AnnotateResult."""
        from annotate import load_orders, load_tasks
        from samples import check_generation

        summary: dict[str, Any] = {}
        pushed, labels, missing = None, None, {}
        backend = settings.backend(layout)
        if settings.store_moved:
            backend.allow_fewer_labels = True  # read by the coding app's backend before it loads or saves labels
        try:
            if settings.push:
                if settings.tasks is None or settings.orders is None:
                    check_generation(layout, "blind")  # the study's tasks and orders of one blind run, never a mix
                tasks = load_tasks(settings.tasks or layout.tasks)
                pushed = backend.push(tasks, load_orders(settings.orders or layout.orders, tasks))
                summary.update(backend=backend.name, tasks=pushed.n_tasks, annotators=list(pushed.annotators))
            if settings.panel is not None:
                summary.update(self._simulate(backend, settings))
            if settings.pull:
                labels = tuple(backend.pull())
                missing = dict(backend.status().missing()) if settings.wait else {}
                if missing and settings.decided is not None and settings.decided(summary):
                    summary["closed"] = backend.close_remaining()
                    missing = {}
                summary["labels"] = len(labels)
        finally:
            backend.close()
        return StageOutput(document=summary, detail=AnnotateResult(pushed=pushed, labels=labels, missing=missing))

    @staticmethod
    def _simulate(backend: Any, settings: AnnotateSettings) -> dict[str, Any]:
        from apps.demo.panel import SIMULATED_NOTICE, SimulatedAnnotator, run_panel

        store = backend.panel_store()
        if store is None:
            raise InputError(f"{settings.origin}: the simulated panel labels through the coding app's store; "
                             f"annotation.backend is {backend.name!r}")
        panel = [SimulatedAnnotator(name=n, flip_prob=p) for n, p in (settings.panel or {}).items()]
        report = run_panel(store, annotators=panel, seed=settings.panel_seed)
        if settings.say is not None:
            settings.say(SIMULATED_NOTICE)
        return {"simulated": True, "submitted": dict(report.submitted), "notice": SIMULATED_NOTICE}


for _driver in (GenerateStage(), IngestStage(), JudgeStage(), ImportStage(), AnnotateStage()):
    register_stage(_driver)
