"""The ordered stages of a study and their fingerprints: what `accord run` runs and skips.

Each stage states the material its result depends on (settings plus the sha256 of
every input file, read fresh each time) and the files it writes. Its fingerprint is
the sha256 of that material. A stage whose fingerprint equals the one recorded in
``STUDY/state.json`` and whose recorded outputs still hold the recorded bytes is
skipped: nothing is called, resampled or rewritten. Any change upstream (a new
label, an edited plan, a deleted output) changes a hash and reruns the stage and,
through its outputs' hashes, everything downstream.

Stages call the library APIs the single-stage commands call (samples, judges,
annotate, agreement, apps.demo); none is re-implemented here. The annotation stage
is the human one: it loads the blinded tasks into the coding app's store, lets the
simulated panel label when the study asks for it, and otherwise stops the run with
instructions until every annotator has labelled every task in their order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from samples.canonical import file_sha256, sha256_hex
from samples.errors import InputError

from apps.study import Source, StudyFile

STATE_FILE = "state.json"
RESOLVED_STUDY_FILE = "study.json"
STATE_VERSION = 1


def accord_version() -> str:
    """The installed accord version: part of every fingerprint, so an upgrade reruns the stages."""
    from judges.runner import accord_version as version

    return version()


@dataclass(kw_only=True)
class Context:
    """What stages share during one `accord run`: the study, its folder, the model server."""

    study: StudyFile
    console: Any
    base_url: str | None = None
    simulate: bool = False
    _server: Any = None

    @property
    def root(self) -> Path:
        return self.study.output

    def path(self, relative: str) -> Path:
        return self.root / relative

    def sha(self, relative: str) -> str | None:
        path = self.path(relative)
        return file_sha256(path) if path.is_file() else None

    def model_url(self) -> str:
        """The local llama-server: --base-url, else a running instance, else one started now (stopped at close)."""
        if self.base_url is None:
            from judges.local_server import LlamaServer, read_state

            settings = self.study.local_models
            state = read_state(settings.server_name)
            if state is not None:
                self.base_url = state["base_url"]
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
    name: str
    title: str
    material: Callable[[Context], dict[str, Any]]
    outputs: Callable[[Context], list[str]]
    run: Callable[[Context], Outcome]


# --- generation (demo fixture only) -----------------------------------------------------------


def _fixture_rows(source: Source) -> list[Any]:
    """The fixture rows, limited to the first ``items_per_category`` questions of each category."""
    from samples.jsonl import read_models

    if source.generate == "demo-agent":
        from apps.demo.conflict import ConflictInstance as Model
    else:
        from apps.demo.items import DemoItem as Model
    rows = list(read_models(source.fixture, Model))
    if source.items_per_category is None:
        return rows
    kept: dict[str, list[str]] = {}
    for row in rows:
        ids = kept.setdefault(row.category, [])
        if row.question_id not in ids and len(ids) < source.items_per_category:
            ids.append(row.question_id)
    return [row for row in rows if row.question_id in kept[row.category]]


def _generate_stage(source: Source) -> Stage:
    out = f"sources/{source.name}.jsonl"

    def material(ctx: Context) -> dict[str, Any]:
        return {"generator": source.generate, "fixture": file_sha256(source.fixture),
                "items_per_category": source.items_per_category, "max_turns": source.max_turns,
                "max_tokens": source.max_tokens, "models": source.models, "accord": accord_version()}

    def run(ctx: Context) -> Outcome:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        from apps.demo.agent import DEMO_MODELS, AgentConfig, closed_book_answers, run_agent
        from samples.jsonl import write_jsonl

        known = {m.name: m for m in DEMO_MODELS}
        unknown = [m for m in source.models if m not in known]
        if unknown:
            raise InputError(f"{ctx.study.path}: source {source.name!r}: models {unknown} are not demo models {sorted(known)}")
        models = [known[m] for m in source.models]
        config = AgentConfig(max_turns=source.max_turns, max_tokens=source.max_tokens)
        rows = _fixture_rows(source)
        generate = run_agent if source.generate == "demo-agent" else closed_book_answers
        url = ctx.model_url()
        with Progress("  {task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=ctx.console, transient=True) as bar:
            task = bar.add_task(f"{source.generate} ({len(models)} models)", total=len(rows) * len(models))
            records, report = generate(rows, base_url=url, models=models, config=config,
                                       progress=lambda done, total: bar.update(task, completed=done))
        write_jsonl(ctx.path(out), records)
        return Outcome(summary={"records": report.n_records, "requests": report.n_requests,
                                "truncated": report.truncated, "wall_s": round(report.wall_s, 2)})

    return Stage(name=f"generate:{source.name}", title=f"generate {source.name} (demo fixture, local models)",
                 material=material, outputs=lambda ctx: [out], run=run)


# --- ingest -------------------------------------------------------------------------------------


def _source_files(ctx: Context, source: Source) -> list[Path]:
    from samples.ingest import expand_inputs

    if source.generate is not None:
        return [ctx.path(f"sources/{source.name}.jsonl")]
    return expand_inputs(source.path)


def _ingest_material(ctx: Context) -> dict[str, Any]:
    sources = []
    for source in ctx.study.source:
        files = [p for p in _source_files(ctx, source) if p.is_file()]
        sources.append({"name": source.name, "adapter": source.adapter, "options": source.options,
                        "kinds": source.kinds, "metadata_strata": source.metadata_strata, "skip_bad": source.skip_bad,
                        "inputs": [[str(p), file_sha256(p)] for p in files]})
    return {"sources": sources, "accord": accord_version()}


def _concatenate(parts: list[Path], target: Path) -> None:
    from samples.jsonl import atomic_writer

    with atomic_writer(target) as out:
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(1 << 20):
                    out.write(block)


def _ingest_run(ctx: Context) -> Outcome:
    from samples.ingest import MANIFEST_FILE, TRAJECTORIES_FILE, UNITS_FILE, ingest
    from samples.jsonl import decode_json_line, iter_jsonl_lines, write_json
    from samples.records import UNIT_KINDS

    manifests: dict[str, Any] = {}
    skipped: list[str] = []
    seen: dict[str, str] = {}
    units: dict[str, int] = {}
    for source in ctx.study.source:
        folder = ctx.path(f"ingest/{source.name}")
        result = ingest(_source_files(ctx, source), folder, adapter=source.adapter, options=source.options,
                        kinds=tuple(source.kinds) if source.kinds else UNIT_KINDS,
                        metadata_strata=source.metadata_strata, skip_bad=source.skip_bad)
        manifests[source.name] = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        skipped += [f"{source.name}: {problem}" for problem in result.bad_records]
        for kind, count in result.units_by_kind.items():
            units[kind] = units.get(kind, 0) + count
        for _, line in iter_jsonl_lines(folder / TRAJECTORIES_FILE):
            trajectory_id = decode_json_line(line)["id"]
            if trajectory_id in seen:
                raise InputError(f"{ctx.study.path}: trajectory id {trajectory_id!r} appears in sources "
                                 f"{seen[trajectory_id]!r} and {source.name!r}; trajectory ids must be unique across sources")
            seen[trajectory_id] = source.name
    folders = [ctx.path(f"ingest/{s.name}") for s in ctx.study.source]
    _concatenate([f / TRAJECTORIES_FILE for f in folders], ctx.path(TRAJECTORIES_FILE))
    _concatenate([f / UNITS_FILE for f in folders], ctx.path(UNITS_FILE))
    write_json(ctx.path(MANIFEST_FILE), {"sources": manifests,
                                         "bad_records": {"count": len(skipped), "skipped": skipped}})
    return Outcome(summary={"trajectories": len(seen), "units_by_kind": dict(sorted(units.items())),
                            "bad_records_skipped": len(skipped)})


# --- judges, sample, blind ----------------------------------------------------------------------


def _judge_material(ctx: Context) -> dict[str, Any]:
    version = accord_version()
    return {"units": ctx.sha("units.jsonl"),
            "judges": [spec.fingerprint_parts("", version) for spec in ctx.study.judge_specs()]}


def _judge_run(ctx: Context) -> Outcome:
    from dataclasses import replace

    from judges.runner import StudyPaths, run_judges
    from judges.tables import read_units
    from samples.kinds import with_context

    specs = []
    for spec in ctx.study.judge_specs():
        if spec.provider == "local" and spec.connection.base_url is None:
            spec = replace(spec, connection=replace(spec.connection, base_url=ctx.model_url()))
        specs.append(spec)
    units = with_context(read_units(ctx.path("units.jsonl")), ctx.path("trajectories.jsonl"),  # identify_turn: turns 0..i
                         kinds={kind for spec in specs for kind in spec.unit_kinds})
    summary = run_judges(units, specs, StudyPaths.in_dir(ctx.path("judges")), progress=True)
    return Outcome(summary={"run_id": summary.run_id, "calls": summary.calls,
                            "judges": {j.judge: {"units": j.units, "calls": j.calls, "cache_hits": j.cache_hits,
                                                 "ok": j.ok, "unscored": j.unscored} for j in summary.judges}})


def _sample_material(ctx: Context) -> dict[str, Any]:
    from samples.plans import load_plan

    plan, plan_sha = load_plan(ctx.study.sampling.plan)
    return {"units": ctx.sha("units.jsonl"), "trajectories": ctx.sha("trajectories.jsonl"), "plan": plan_sha,
            "seed": ctx.study.sampling.seed,
            "judge_labels": ctx.sha("judges/labels.jsonl") if plan.judges_needed() else None}


def _sample_run(ctx: Context) -> Outcome:
    from samples.sampler import sample_study

    manifest = sample_study(ctx.root, ctx.study.sampling.plan, seed=ctx.study.sampling.seed)
    return Outcome(summary={"sampled": manifest["sampled"], "population_units": manifest["population_units"],
                            "shortfalls": len(manifest["shortfalls"])})


def _blind_run(ctx: Context) -> Outcome:
    from samples.blind import blind_study

    summary = blind_study(ctx.root, annotators=ctx.study.blinding.annotators, seed=ctx.study.blinding.seed)
    return Outcome(summary={"tasks": summary["tasks"], "annotators": summary["annotators"],
                            "tasks_with_masking": summary["tasks_with_masking"]})


# --- the human stage ----------------------------------------------------------------------------

HUMAN_LABELS = "labels/human.jsonl"
STORE = "labels/store.sqlite"


def store_labels_digest(ctx: Context) -> str | None:
    """sha256 of the store's current labels (read only; None before the store exists)."""
    if not ctx.path(STORE).is_file():
        return None
    from annotate.store import Store

    store = Store.open(ctx.path(STORE))
    try:
        return sha256_hex([row.model_dump(mode="json") for row in store.labels()])
    finally:
        store.close()


def _annotate_material(ctx: Context) -> dict[str, Any]:
    annotation = ctx.study.annotation
    return {"tasks": ctx.sha("blind/tasks.jsonl"), "orders": ctx.sha("blind/orders.json"),
            "simulate": ctx.simulate, "panel": annotation.simulated_panel if ctx.simulate else None,
            "panel_seed": annotation.panel_seed if ctx.simulate else None, "labels": store_labels_digest(ctx)}


def missing_labels(store: Any) -> dict[str, int]:
    """Tasks in each annotator's order that they have not labelled yet."""
    return {name: len(set(order) - store.labelled_task_ids(name)) for name, order in store.orders().items()}


def _annotate_run(ctx: Context) -> Outcome:
    from annotate.app_backend import AppBackend
    from annotate.export import export_labels

    backend = AppBackend(study=ctx.root)
    try:
        pushed = backend.push_files(ctx.path("blind"))
        summary: dict[str, Any] = {"tasks": pushed.n_tasks, "annotators": list(pushed.annotators)}
        if ctx.simulate:
            from apps.demo.panel import SIMULATED_NOTICE, SimulatedAnnotator, run_panel

            panel = [SimulatedAnnotator(name=n, flip_prob=p) for n, p in ctx.study.annotation.simulated_panel.items()]
            report = run_panel(backend.store, annotators=panel, seed=ctx.study.annotation.panel_seed)
            summary.update(simulated=True, submitted=dict(report.submitted), notice=SIMULATED_NOTICE)
            ctx.console.print(f"  [bold yellow]{SIMULATED_NOTICE}[/]")
        missing = {name: n for name, n in missing_labels(backend.store).items() if n}
        if missing:
            return Outcome(summary=summary, waiting=_instructions(ctx, missing))
        labels = backend.store.labels()
        export_labels(labels, ctx.path(HUMAN_LABELS), format="jsonl")
    finally:
        backend.store.close()
    summary["labels"] = len(labels)
    return Outcome(summary=summary)


def _instructions(ctx: Context, missing: dict[str, int]) -> str:
    study, root = ctx.study.path, ctx.root
    lines = ["waiting for human labels: " + ", ".join(f"{name} has {n} task(s) to label" for name, n in sorted(missing.items())),
             "  1. give each annotator a token (once):  " + "; ".join(
                 f"accord annotators add {name} --study {root}" for name in sorted(missing)),
             f"  2. start the coding app:                 accord app --study {root}",
             f"  3. when everyone has finished, run again: accord run {study}"]
    if ctx.study.annotation.simulated_panel:
        lines.append(f"  (or let the simulated panel label:       accord run {study} --simulate-annotators)")
    return "\n".join(lines)


# --- agreement stages ---------------------------------------------------------------------------

_TABLES = ("sealed/key.jsonl", HUMAN_LABELS, "judges/labels.jsonl")


def _tables(ctx: Context) -> dict[str, str | None]:
    return {name: ctx.sha(name) for name in _TABLES}


def _validate_run(ctx: Context) -> Outcome:
    from agreement.study_io import load_study, write_result
    from agreement.validation import validate_study

    v = ctx.study.validation
    study = load_study(ctx.root)
    with ctx.console.status(f"  validating ({v.n_resamples} cluster-bootstrap resamples) ..."):
        result = validate_study(study, tie_policy=v.tie_policy, weighted=v.weighted, n_resamples=v.n_resamples,
                                seed=v.seed, level=v.level)
    write_result(ctx.path("validation/validation.json"), result.to_dict())
    return Outcome(summary={"sections": [s.kind for s in result.sections], "judges": list(result.judges),
                            "simulated": result.simulated})


def _audit_run(ctx: Context) -> Outcome:
    from agreement.audit import audit
    from agreement.study_io import labels_table, load_study, write_result
    from agreement.validation import GateEvidence, audit_frame

    a = ctx.study.audit
    study = load_study(ctx.root)
    evidence = GateEvidence(labels_table(study), judge=a.judge, tie_policy=a.tie_policy, level=a.level, n_resamples=0,
                            seed=a.seed)
    frame = audit_frame(evidence.table, evidence.section, a.judge, model_field=a.model_field)
    with ctx.console.status("  auditing (cluster bootstrap and permutations) ..."):
        try:
            result = audit(frame, positive=a.positive, n_resamples=a.n_resamples, n_permutations=a.n_permutations,
                           seed=a.seed, level=a.level, judge=a.judge, judge_families=a.judge_families or None)
        except ValueError as error:
            raise InputError(f"audit of {a.judge!r}: {error}") from None
    write_result(ctx.path("audit/audit.json"), {**result.to_dict(), "simulated": study.simulated})
    return Outcome(summary={"judge": a.judge, "simulated": study.simulated})


def _gate_run(ctx: Context) -> Outcome:
    from agreement.gate import gate_study
    from agreement.study_io import VERDICT, load_study, write_result

    study = load_study(ctx.root)
    with ctx.console.status(f"  gating under {ctx.study.gate.policy.name} ..."):
        document, _ = gate_study(study, ctx.study.gate.policy, judges=ctx.study.gate.judges or None)
    write_result(ctx.path(str(VERDICT)), document)
    return Outcome(summary={"verdict": document["verdict"],
                            "judges": {j: v["verdict"] for j, v in document["judges"].items()}})


def _score_run(ctx: Context) -> Outcome:
    from agreement.scoring import GateRefusal, score_study
    from agreement.study_io import write_result

    s = ctx.study.score
    try:
        with ctx.console.status(f"  scoring ({s.n_resamples} bootstrap resamples per rate) ..."):
            document = score_study(ctx.root, identify_judge=s.identify_judge, escalate_judge=s.escalate_judge,
                                   correctness_judge=s.correctness_judge, correctness_field=s.correctness_field,
                                   force=s.force, tie_policy=s.tie_policy, n_resamples=s.n_resamples, seed=s.seed,
                                   level=s.level)
    except GateRefusal as refusal:
        ctx.path("score/score.json").unlink(missing_ok=True)
        return Outcome(summary={"scored": False, "refused": str(refusal)})
    write_result(ctx.path("score/score.json"), document)
    return Outcome(summary={"scored": True, "accepted": document["accepted"], "rows": len(document["rows"])})


_RESULTS = ("validation/validation.json", "audit/audit.json", "gate/verdict.json", "score/score.json")


def _report_run(ctx: Context) -> Outcome:
    from agreement.report import write_report

    with ctx.console.status("  rendering the report and its plots ..."):
        paths = write_report(ctx.root)
    return Outcome(summary={"html": str(paths["html"]), "markdown": str(paths["markdown"])})


# --- the pipeline -------------------------------------------------------------------------------


def build_stages(study: StudyFile) -> list[Stage]:
    """Every stage of the study, in order."""
    stages = [_generate_stage(s) for s in study.source if s.generate is not None]
    stages += [
        Stage(name="ingest", title="ingest sources into trajectories and units", material=_ingest_material,
              outputs=lambda ctx: ["trajectories.jsonl", "units.jsonl", "ingest_manifest.json"], run=_ingest_run),
        Stage(name="judge", title="run the judges over every unit (cached, resumable)", material=_judge_material,
              outputs=lambda ctx: ["judges/labels.jsonl"], run=_judge_run),
        Stage(name="sample", title="draw the stratified sample", material=_sample_material,
              outputs=lambda ctx: ["sample/sample.jsonl", "sample/manifest.json"], run=_sample_run),
        Stage(name="blind", title="blind the sample (tasks, orders, sealed key)",
              material=lambda ctx: {"sample": ctx.sha("sample/sample.jsonl"),
                                    "annotators": ctx.study.blinding.annotators, "seed": ctx.study.blinding.seed},
              outputs=lambda ctx: ["blind/tasks.jsonl", "blind/orders.json", "blind/audit.json", "sealed/key.jsonl"],
              run=_blind_run),
        Stage(name="annotate", title="human labels (coding app store)", material=_annotate_material,
              outputs=lambda ctx: [HUMAN_LABELS], run=_annotate_run),
        Stage(name="validate", title="validate judges against the annotators",
              material=lambda ctx: {"tables": _tables(ctx), "settings": ctx.study.validation.model_dump(mode="json")},
              outputs=lambda ctx: ["validation/validation.json"], run=_validate_run),
    ]
    if study.audit is not None:
        stages.append(Stage(name="audit", title="family-bias audit",
                            material=lambda ctx: {"tables": _tables(ctx), "settings": ctx.study.audit.model_dump(mode="json")},
                            outputs=lambda ctx: ["audit/audit.json"], run=_audit_run))
    stages.append(Stage(name="gate", title="acceptance gate",
                        material=lambda ctx: {"tables": _tables(ctx), "policy": file_sha256(ctx.study.gate.policy),
                                              "judges": ctx.study.gate.judges},
                        outputs=lambda ctx: ["gate/verdict.json"], run=_gate_run))
    if study.score is not None:
        stages.append(Stage(name="score", title="judge-scored benchmark",
                            material=lambda ctx: {"tables": _tables(ctx), "verdict": ctx.sha("gate/verdict.json"),
                                                  "trajectories": ctx.sha("trajectories.jsonl"),
                                                  "units": ctx.sha("units.jsonl"),
                                                  "settings": ctx.study.score.model_dump(mode="json")},
                            outputs=lambda ctx: ["score/score.json"] if ctx.path("score/score.json").is_file() else [],
                            run=_score_run))
    stages.append(Stage(name="report", title="HTML and Markdown report",
                        material=lambda ctx: {name: ctx.sha(name) for name in _RESULTS},
                        outputs=lambda ctx: ["report/report.html", "report/report.md"], run=_report_run))
    return stages


def read_state(root: Path) -> dict[str, Any]:
    path = root / STATE_FILE
    if not path.is_file():
        return {"version": STATE_VERSION, "stages": {}}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno}); delete it to rerun every stage")
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or not isinstance(state.get("stages"), dict):
        raise InputError(f"{path}: not an accord state file of version {STATE_VERSION}; delete it to rerun every stage")
    return state


def stage_status(ctx: Context, stage: Stage, state: dict[str, Any]) -> tuple[str, str]:
    """(fingerprint, 'done' | 'stale' | 'pending') of a stage against the recorded state."""
    fingerprint = sha256_hex(stage.material(ctx))
    recorded = state["stages"].get(stage.name)
    if recorded is None:
        return fingerprint, "pending"
    if recorded.get("fingerprint") != fingerprint:
        return fingerprint, "stale"
    for relative, digest in recorded.get("outputs", {}).items():
        if ctx.sha(relative) != digest:
            return fingerprint, "stale"
    return fingerprint, "done"


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What one `accord run` did per stage; ``waiting`` holds the human-stage instructions."""

    stages: list[dict[str, Any]]
    waiting: str | None
    verdict: str | None


def _write_state(root: Path, state: dict[str, Any]) -> None:
    from samples.jsonl import write_json

    write_json(root / STATE_FILE, state)


def run_study(ctx: Context) -> RunResult:
    """Run every stage in order, skipping those already done; stop at the human stage when labels are missing."""
    from samples.jsonl import write_json

    root = ctx.root
    root.mkdir(parents=True, exist_ok=True)
    resolved = ctx.study.model_dump(mode="json")
    if not (root / RESOLVED_STUDY_FILE).is_file() or json.loads((root / RESOLVED_STUDY_FILE).read_text()) != resolved:
        write_json(root / RESOLVED_STUDY_FILE, resolved)
    state = read_state(root)
    state["simulate"] = ctx.simulate
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
                state["stages"].pop(stage.name, None)
                _write_state(root, state)
                done.append({"stage": stage.name, "status": "waiting", "summary": outcome.summary, "seconds": seconds})
                waiting = outcome.waiting
                ctx.console.print(outcome.waiting, style="bold yellow", soft_wrap=True, markup=False)
                break
            fingerprint = sha256_hex(stage.material(ctx)) if stage.name == "annotate" else fingerprint
            state["stages"][stage.name] = {
                "fingerprint": fingerprint, "outputs": {r: ctx.sha(r) for r in stage.outputs(ctx)},
                "summary": outcome.summary, "seconds": seconds, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            _write_state(root, state)
            done.append({"stage": stage.name, "status": "ran", "summary": outcome.summary, "seconds": seconds})
            ctx.console.print(f"{label}: [bold]done[/] in {seconds:.1f} s  {_brief(outcome.summary)}")
    finally:
        ctx.close()
    verdict_path = root / "gate" / "verdict.json"
    verdict = json.loads(verdict_path.read_text())["verdict"] if waiting is None and verdict_path.is_file() else None
    return RunResult(stages=done, waiting=waiting, verdict=verdict)


def _brief(summary: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in summary.items() if isinstance(v, (int, float, str)) and k not in ("notice",)]
    return ", ".join(parts)[:160]


# --- status -------------------------------------------------------------------------------------


def _count_by(path: Path, field_name: str) -> dict[str, int]:
    from collections import Counter

    from samples.jsonl import decode_json_line, iter_jsonl_lines

    if not path.is_file():
        return {}
    return dict(sorted(Counter(str(decode_json_line(line).get(field_name)) for _, line in iter_jsonl_lines(path)).items()))


def _labels_status(ctx: Context) -> dict[str, Any]:
    from apps.demo.panel import SIMULATED_NOTICE

    body: dict[str, Any] = {"tasks": 0, "annotators": {}, "simulated": False, "notice": None}
    if not ctx.path(STORE).is_file():
        return body
    from annotate.store import Store

    store = Store.open(ctx.path(STORE))
    try:
        orders = store.orders()
        labels = store.labels(role="independent")
        body["tasks"] = store.n_tasks()
    finally:
        store.close()
    for name in sorted(set(orders) | {row.annotator for row in labels}):
        mine = [row for row in labels if row.annotator == name]
        body["annotators"][name] = {"assigned": len(orders.get(name, [])), "labelled": len(mine),
                                    "backends": sorted({row.backend for row in mine})}
    if any(row.backend == "simulated" for row in labels):
        body.update(simulated=True, notice=SIMULATED_NOTICE)
    return body


def _judges_status(ctx: Context) -> dict[str, Any]:
    from samples.jsonl import decode_json_line, iter_jsonl_lines

    runs = 0
    if ctx.path("judges/runs.jsonl").is_file():
        runs = sum(1 for _, line in iter_jsonl_lines(ctx.path("judges/runs.jsonl")) if decode_json_line(line).get("event") == "end")
    per_judge: dict[str, dict[str, int]] = {}
    if ctx.path("judges/labels.jsonl").is_file():
        for _, line in iter_jsonl_lines(ctx.path("judges/labels.jsonl")):
            row = decode_json_line(line)
            counts = per_judge.setdefault(row["judge"], {"rows": 0, "ok": 0, "unscored": 0})
            counts["rows"] += 1
            counts["ok" if row.get("parse_status") == "ok" else "unscored"] += 1
    return {"runs": runs, "labels": dict(sorted(per_judge.items()))}


def study_status(study: StudyFile) -> dict[str, Any]:
    """Where the study stands, computed from its folder without running anything."""
    from rich.console import Console

    root = study.output
    state = read_state(root) if root.is_dir() else {"version": STATE_VERSION, "stages": {}}
    # The annotation mode of the last run (--simulate-annotators / --interactive), else the study's.
    ctx = Context(study=study, console=Console(stderr=True), simulate=state.get("simulate", study.annotation.simulate))
    stages = []
    for stage in build_stages(study):
        _, current = stage_status(ctx, stage, state)
        recorded = state["stages"].get(stage.name, {})
        stages.append({"stage": stage.name, "state": current, "seconds": recorded.get("seconds"),
                       "finished_at": recorded.get("finished_at"), "summary": recorded.get("summary")})
    verdict = None
    if ctx.path("gate/verdict.json").is_file():
        document = json.loads(ctx.path("gate/verdict.json").read_text(encoding="utf-8"))
        verdict = {"verdict": document["verdict"], "policy": document["policy"]["name"],
                   "judges": {j: v["verdict"] for j, v in document["judges"].items()}, "simulated": document["simulated"]}
    labels = _labels_status(ctx)
    missing = {name: row["assigned"] - row["labelled"] for name, row in labels["annotators"].items()
               if row["assigned"] > row["labelled"]}
    return {
        "study": study.study.name, "study_file": str(study.path), "output": str(root), "stages": stages,
        "units": {"total": sum(_count_by(ctx.path("units.jsonl"), "kind").values()),
                  "by_kind": _count_by(ctx.path("units.jsonl"), "kind")},
        "sample": {"sampled": sum(_count_by(ctx.path("sample/sample.jsonl"), "kind").values()),
                   "by_kind": _count_by(ctx.path("sample/sample.jsonl"), "kind")},
        "labels": labels, "judges": _judges_status(ctx), "verdict": verdict,
        "waiting": _instructions(ctx, missing) if missing else None,
    }
