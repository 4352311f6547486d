"""The study file (``study.toml``): one description of a whole judge-validation study.

Every path in it is relative to the study file's folder. Sections (``?`` = optional)::

    [study]          name, description
    output           the study folder every stage writes (``--output`` overrides it)
    [[source]]       data: adapter + path (files or folders), or a demo generator
    [sampling]       plan (a sampling-plan TOML, see data/plans/README.md), seed
    [blinding]       annotators (their names), seed
    [annotation]     backend ("app" or "labelstudio"), options {backend settings}, simulate, simulated_panel
    [local_models]?  llama-server instance name for `local` judges and demo generators
    [[judge]]        judge tables exactly as in a judges config (judges/spec.py)
    [validation]     tie_policy, n_resamples, seed, level, weighted (default: the gate policy's), annotator_quality
    [audit]?         judge, positive labels, model_field, judge_families, n_resamples, n_permutations
    [gate]           policy (a policy TOML, see data/policies/README.md), judges
    [decisions]?     strict_parser, semantic_parser, roster_dataset, composition_dataset, ... (Aggarwal's figures)
    [ehq]?           judge, model_field, confidence_field, ... (EHQ scores and the human re-ranking)
    [asa]?           judge, tie_policy, ... (ASA milestone scores: SA strict / relaxed, gap, feasible solve)
    [score]?         identify_judge, escalate_judge, correctness_judge, force, n_resamples, level

Problems are ``InputError`` naming the file, the key and what is allowed. The parsed
study is a frozen pydantic model whose paths are absolute.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from samples import DEFAULT_LEVEL, DEFAULT_SEED, MAX_RESAMPLES, MIN_RESAMPLES, InputError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StudyInfo(_Section):
    name: str = Field(min_length=1, description="Short study name (shown by `accord status`).")
    description: str = Field(default="", description="What the study is for.")


class Source(_Section):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Source name; its files go to STUDY/ingest/NAME/.")
    adapter: str = Field(description="Adapter reading the source (accord ingest --adapter), e.g. ise, responses.")
    path: list[Path] = Field(default_factory=list, description="Input files or folders (relative to the study file).")
    generate: Literal["demo-agent", "demo-closed-book"] | None = Field(
        default=None, description="Demo fixture only: produce the input with the local models instead of reading `path`.")
    fixture: Path | None = Field(default=None, description="Demo generators: instances.jsonl (demo-agent) or items.jsonl (demo-closed-book).")
    items_per_category: int | None = Field(default=None, ge=1, description="Demo generators: first N fixture items per EHQ category (all when absent).")
    max_turns: int = Field(default=3, ge=1, description="demo-agent: turns before a run is truncated.")
    max_tokens: int = Field(default=96, ge=1, description="Demo generators: output tokens per model call.")
    models: list[str] = Field(default_factory=lambda: ["smollm2", "gemma3-270m"],
                              description="Demo generators: server model names (apps.demo.agent.DEMO_MODELS).")
    options: dict[str, str] = Field(default_factory=dict, description="Adapter options (accord ingest --option).")
    kinds: list[str] | None = Field(default=None, description="Unit kinds to cut (default: every kind a record supports).")
    metadata_strata: list[str] = Field(default_factory=list, description="Metadata keys offered as unit strata.")
    skip_bad: bool = Field(default=False, description="Skip bad records (listed in the manifest) instead of stopping.")

    def model_post_init(self, _: Any) -> None:
        if (self.generate is None) == (not self.path):
            raise ValueError("give exactly one of path (input files) or generate (a demo generator)")
        if self.generate is not None and self.fixture is None:
            raise ValueError(f"generate = {self.generate!r} needs fixture (the demo fixture file)")


class Sampling(_Section):
    plan: Path = Field(description="Sampling plan TOML (accord sample --plan).")
    seed: int = Field(default=DEFAULT_SEED, ge=0, description="Sampling seed.")
    order: Literal["random", "active"] = Field(
        default="random", description="The order people label in: a seeded shuffle per annotator, or 'active' (units "
                                      "where judges of other families disagree with the gated judge first, drawn with "
                                      "known inclusion probabilities: agreement.active_order).")


class Blinding(_Section):
    annotators: list[str] = Field(min_length=1, description="Annotator names; each gets a seeded task order.")
    seed: int = Field(default=DEFAULT_SEED, ge=0, description="Seed of task ids and orders.")
    keep: list[str] = Field(default_factory=list, description="Vendor or harness names shown as written (accord "
                                                             "blind --keep); model names are always masked.")
    keep_roles: bool = Field(default=False, description="Leave an agent framework's speaker and role names readable "
                                                        "(accord blind --keep-roles); by default they become neutral "
                                                        "roles.")


class Annotation(_Section):
    backend: str = Field(default="app", description="Where people label: a registered annotation backend "
                                                    "(\"app\": the coding app's store; \"labelstudio\": a Label Studio server).")
    options: dict[str, Any] = Field(default_factory=dict, description="The backend's settings (labelstudio: url, "
                                                                      "token_env, admin_password_env, timeout_s); "
                                                                      "never credentials themselves.")
    simulate: bool = Field(default=False, description="Let the simulated panel label (demo only; never human labels).")
    simulated_panel: dict[str, float] = Field(
        default_factory=dict, description="Simulated annotator name -> label-flip probability (apps/demo/panel.py).")
    panel_seed: int = Field(default=DEFAULT_SEED, description="Seed of the simulated panel's draws.")
    schemes: dict[str, str] = Field(default_factory=dict, description="Unit kind -> the label scheme (and its codebook) "
                                                                     "people code it under in either backend, e.g. "
                                                                     "{ response = \"decision\" }; default the kind's.")

    @field_validator("backend")
    @classmethod
    def _registered(cls, name: str) -> str:
        from annotate import backend_names

        if name not in backend_names():
            raise ValueError(f"unknown annotation backend {name!r}; registered: {backend_names()}")
        return name

    @field_validator("schemes")
    @classmethod
    def _schemes(cls, chosen: dict[str, str]) -> dict[str, str]:
        from samples import check_schemes

        try:
            return check_schemes(chosen, where="schemes")
        except InputError as error:
            raise ValueError(str(error)) from None

    def model_post_init(self, _: Any) -> None:
        from annotate import backend_settings

        try:
            backend_settings(self.backend, self.options)  # the backend's own settings model checks the options
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"options.{where}: {first['msg'].removeprefix('Value error, ')} (backend {self.backend!r})") from None


class Units(_Section):
    """``[units]``: a study that starts from labels: its units known only by id (no trajectories)."""

    path: Path = Field(description="Table listing the units (csv, jsonl, parquet, or a named format).")
    format: str | None = Field(default=None, description="Table format (accord import --format); default by suffix.")
    unit_column: str = Field(description="Column holding the unit id.")
    kind: str | None = Field(default=None, description="Unit kind of every unit (or kind_column).")
    kind_column: str | None = Field(default=None, description="Column holding each unit's kind.")
    strata_columns: list[str] = Field(default_factory=list, description="Columns offered as strata.")
    cluster_column: str | None = Field(default=None, description="Column grouping units for the bootstrap.")
    where: dict[str, str] = Field(default_factory=dict, description="Only rows whose columns hold these values.")
    id_pattern: str | None = Field(default=None, description="Regex with named groups read from each unit id; the "
                                                             "groups become columns (for strata and clusters).")


class HumanImport(_Section):
    """``[[human_labels]]``: a table of human labels to import (accord import human-labels)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$", description="Import name (labels/imported/NAME.jsonl).")
    path: Path = Field(description="The table.")
    format: str | None = Field(default=None, description="Table format; default by suffix.")
    unit_column: str | None = Field(default=None, description="Column holding the unit id.")
    task_column: str | None = Field(default=None, description="Or: column holding the blinded task id.")
    trajectory_column: str | None = Field(default=None, description="Or: column holding the trajectory id.")
    kind_column: str | None = Field(default=None, description="With trajectory_column: the unit kind.")
    turn_column: str | None = Field(default=None, description="With trajectory_column: the focus turn.")
    annotator_column: str | None = Field(default=None, description="Long tables: the annotator's name.")
    label_column: str | None = Field(default=None, description="Long tables: the label.")
    annotator_columns: list[str] = Field(default_factory=list, description="Wide tables: one column per annotator.")
    first_turn_column: str | None = Field(default=None, description="The first recognition turn (Identify).")
    scheme: str | None = Field(default=None, description="Label scheme (default: the unit kind's); 'any'.")
    where: dict[str, str] = Field(default_factory=dict, description="Only rows whose columns hold these values.")


class JudgeImport(_Section):
    """A ``[[judge]]`` table with ``provider = "import"``: verdicts that already exist (accord import judge-labels)."""

    provider: Literal["import"] = Field(description="import: read the verdicts from a table.")
    name: str = Field(description="The judge's name in the study.")
    path: Path = Field(description="The table.")
    format: str | None = Field(default=None, description="Table format; default by suffix.")
    unit_column: str | None = Field(default=None, description="Column holding the unit id.")
    trajectory_column: str | None = Field(default=None, description="Or: column holding the trajectory id.")
    kind_column: str | None = Field(default=None, description="With trajectory_column: the unit kind.")
    turn_column: str | None = Field(default=None, description="With trajectory_column: the focus turn.")
    output_column: str = Field(description="Column holding the raw output or the label.")
    output_kind: str | None = Field(default=None, description="Parse raw outputs with this output kind.")
    parse_mode: Literal["strict", "lenient"] = Field(default="strict", description="Reported parse mode.")
    scheme: str | None = Field(default=None, description="Scheme of canonical labels (default: the kind's); 'any'.")
    where: dict[str, str] = Field(default_factory=dict, description="Only rows whose columns hold these values.")


class LocalModels(_Section):
    server_name: str = Field(default="llama-server", description="llama-server instance (.run/NAME.pid) to use or start.")
    parallel: int = Field(default=4, ge=1, description="Concurrent slots per model when accord starts the server.")
    ctx_size: int = Field(default=8192, ge=512, description="Context per model when accord starts the server.")


class Validation(_Section):
    """``[validation]``: every key defaults to the gate policy's, so validation writes the intervals the gate
    decides on; a value that differs from the policy's is replaced by it, with a note (``apps.stages``)."""

    tie_policy: Literal["exclude", "needs-adjudication", "positive", "negative"] | None = Field(
        default=None, description="Human-majority ties (default: the gate policy's).")
    n_resamples: int | None = Field(default=None, ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Cluster-bootstrap resamples (default: the "
                                                                       "gate policy's).")
    seed: int | None = Field(default=None, description="Bootstrap seed (default: the gate policy's).")
    level: float | None = Field(default=None, gt=0, lt=1, description="Confidence level (default: the gate policy's).")
    weighted: bool | None = Field(default=None, description="Reweight by 1/inclusion probability (default: the "
                                                            "gate policy's).")
    annotator_quality: bool | None = Field(
        default=None, description="Run the annotator-quality stage (default: when the gate policy has a [quality] "
                                  "flag rule or people label in a backend; a labels-only study skips it).")
    cluster: str = Field(default="trajectory", min_length=1, description=(
        "What every bootstrap resamples: trajectory, case (one item across models) or a unit field."))


class Audit(_Section):
    judge: str = Field(description="The judge audited (a [[judge]] name).")
    positive: list[str] = Field(min_length=1, description="Labels the audited score counts.")
    model_field: str = Field(default="backbone", description="Stratum naming the evaluated model.")
    judge_families: dict[str, str] = Field(default_factory=dict, description="Judge name -> model family.")
    tie_policy: Literal["exclude", "needs-adjudication", "positive", "negative"] = Field(description="Human-majority ties.")
    n_resamples: int = Field(ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Cluster-bootstrap resamples.")
    n_permutations: int = Field(ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Random permutations when exact enumeration is infeasible.")
    seed: int = Field(default=DEFAULT_SEED, description="Seed.")
    level: float = Field(gt=0, lt=1, description="Confidence level.")


class Preference(_Section):
    """``[preference]``: pairwise units (two answers compared): does each judge favour its own model family?"""

    first: str = Field(description="Stratum holding the first compared model.")
    second: str = Field(description="Stratum holding the second compared model.")
    first_label: str = Field(default="model_a", description="Label meaning the first answer is better.")
    second_label: str = Field(default="model_b", description="Label meaning the second answer is better.")
    tie_label: str = Field(default="tie", description="Label meaning a tie.")
    model_families: dict[str, str] = Field(default_factory=dict, description="Compared model -> family (default: "
                                                                             "inferred from the model name).")
    judge_families: dict[str, str] = Field(default_factory=dict, description="Judge name -> family (default: inferred).")
    n_resamples: int = Field(default=2000, ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Cluster-bootstrap resamples.")
    seed: int = Field(default=DEFAULT_SEED, ge=0, description="Bootstrap seed.")
    level: float = Field(default=DEFAULT_LEVEL, gt=0, lt=1, description="Confidence level.")


class Gate(_Section):
    policy: Path = Field(description="Gate policy TOML (accord gate --policy).")
    judges: list[str] = Field(default_factory=list, description="Judges to gate (default: the policy's, else every judge).")


class LabelMap(_Section):
    """Labels of one scheme read as labels of another on one unit kind, so a judge and people who label
    under different schemes are compared (e.g. EHQ's four classes as Aggarwal's ANSWER/DECLINE)."""

    kind: str = Field(description="The unit kind whose labels are mapped.")
    from_scheme: str = Field(description="The scheme the mapped labels are in (samples.schemes).")
    to_scheme: str = Field(description="The scheme they are compared in.")
    labels: dict[str, str] = Field(description="Every label of from_scheme -> a label of to_scheme.")

    def model_post_init(self, _: Any) -> None:
        from samples import get_kind, get_scheme

        get_kind(self.kind)
        source, target = get_scheme(self.from_scheme), get_scheme(self.to_scheme)
        if set(self.labels) != set(source.labels):
            raise ValueError(f"labels must map every {source.name} label {list(source.labels)} exactly once; "
                             f"got {sorted(self.labels)}")
        wrong = sorted(v for v in self.labels.values() if v not in target.labels)
        if wrong:
            raise ValueError(f"labels {wrong} are not {target.name} labels {list(target.labels)}")


class Score(_Section):
    identify_judge: str = Field(description="Judge over identify_trajectory units.")
    escalate_judge: str = Field(description="Judge over escalate_final units.")
    correctness_judge: str | None = Field(default=None, description="Judge over correctness units.")
    correctness_field: str | None = Field(default=None, description="Or: Trajectory.metadata field with c_i.")
    force: bool = Field(default=False, description="Score without an accepted verdict (stamped UNACCEPTED).")
    tie_policy: Literal["exclude", "needs-adjudication", "positive", "negative"] | None = Field(
        default=None, description="Human-majority ties for the corrections (default: the gate policy's).")
    n_resamples: int = Field(ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Bootstrap resamples per rate.")
    seed: int = Field(default=DEFAULT_SEED, description="Bootstrap seed.")
    level: float = Field(gt=0, lt=1, description="Confidence level.")

    def model_post_init(self, _: Any) -> None:
        if (self.correctness_judge is None) == (self.correctness_field is None):
            raise ValueError("give exactly one of correctness_judge or correctness_field")


class Decisions(_Section):
    """``[decisions]``: Aggarwal's decision figures (agreement.decisions) from the judges' labels, after the judge stage."""

    strict_parser: str = Field(description="Judge reading only DECISION: lines (rule:aggarwal, parse_mode strict).")
    semantic_parser: str = Field(description="Judge reading the semantic prefixes too (rule:aggarwal, parse_mode lenient).")
    roster_dataset: str | None = Field(default=None, description="Dataset whose every trajectory is a roster row "
                                                                 "(default: every trajectory).")
    composition_dataset: str | None = Field(default=None, description="Dataset of gold-labelled items (references[0] = "
                                                                      "DECLINE or ANSWER) every judge is scored on.")
    cell_field: str = Field(default="category", description="Trajectory metadata key naming a row's cell (arm).")
    outcome_field: str | None = Field(default=None, description="Metadata key with the resolved yes/no outcome for "
                                                                "scoring stated probabilities.")
    lower_bound_share: float = Field(default=0.5, gt=0, lt=1, description="Unparsed share above which a model's "
                                                                        "commitment rate is flagged as a lower bound.")
    margin: float = Field(default=0.05, gt=0, lt=1, description="TOST equivalence margin on rate differences.")
    level: float = Field(default=DEFAULT_LEVEL, gt=0, lt=1, description="Level of the Wilson intervals on rates.")
    n_resamples: int = Field(default=2000, ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Cluster-bootstrap resamples of the TOST interval.")
    seed: int = Field(default=DEFAULT_SEED, ge=0)


class Ehq(_Section):
    """``[ehq]``: EHQ scores per model (agreement.ehq) from a four-class judge and from the human reference."""

    judge: str = Field(description="The judge giving the four EHQ classes (e.g. rule:ehq).")
    model_field: str = Field(default="backbone", description="Unit stratum naming the evaluated model.")
    confidence_field: str | None = Field(default=None, description="Trajectory metadata key holding the elicited 0-100 "
                                                                   "confidence (EHQ3 is undefined without it).")
    tie_policy: Literal["exclude", "count_as_positive", "count_as_negative"] = Field(default="exclude")
    n_resamples: int = Field(default=1000, ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Bootstrap resamples per model and score.")
    seed: int = Field(default=DEFAULT_SEED, ge=0)
    level: float = Field(default=DEFAULT_LEVEL, gt=0, lt=1)


class Asa(_Section):
    """``[asa]``: ASA milestone scores (agreement.asa) from a milestone judge and from the human reference."""

    judge: str = Field(description="The judge labelling the asa_m0 .. asa_m3 units (e.g. asa-rubric).")
    tie_policy: Literal["exclude", "count_as_positive", "count_as_negative"] = Field(default="exclude")
    n_resamples: int = Field(default=1000, ge=MIN_RESAMPLES, le=MAX_RESAMPLES, description="Bootstrap resamples per score.")
    seed: int = Field(default=DEFAULT_SEED, ge=0)
    level: float = Field(default=DEFAULT_LEVEL, gt=0, lt=1)


class StudyFile(_Section):
    """The parsed study file; ``path`` is the file itself, every other path is absolute."""

    path: Path = Field(description="The study file (set by load_study_file, not written in it).")
    study: StudyInfo
    output: Path = Field(description="Study folder every stage writes into.")
    source: list[Source] = Field(default_factory=list, description="[[source]] tables (a study of trajectories).")
    units: Units | None = Field(default=None, description="[units]: a study that starts from labels (no sources).")
    human_labels: list[HumanImport] = Field(default_factory=list, description="[[human_labels]] tables to import.")
    sampling: Sampling | None = None
    blinding: Blinding | None = None
    annotation: Annotation = Field(default_factory=Annotation)
    local_models: LocalModels = Field(default_factory=LocalModels)
    judge: list[dict[str, Any]] = Field(min_length=1, description="[[judge]] tables (judges/spec.py fields, or "
                                                                  "provider = \"import\" with JudgeImport fields).")
    validation: Validation
    audit: Audit | None = None
    preference: Preference | None = None
    decisions: Decisions | None = None
    ehq: Ehq | None = None
    asa: Asa | None = None
    gate: Gate
    score: Score | None = None
    label_map: list[LabelMap] = Field(default_factory=list, description="[[label_map]] tables: a judge and people "
                                      "labelling one kind under different schemes are compared through these.")

    @field_validator("source")
    @classmethod
    def _unique_sources(cls, sources: list[Source]) -> list[Source]:
        names = [s.name for s in sources]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"source names must be unique; repeated: {repeated}")
        return sources

    def model_post_init(self, _: Any) -> None:
        if bool(self.source) == (self.units is not None):
            raise ValueError("give [[source]] tables (a study of trajectories) or [units] (a study that starts "
                             "from labels), not both")
        if self.source and (self.sampling is None or self.blinding is None):
            raise ValueError("a study of trajectories needs [sampling] and [blinding]")

    @property
    def labels_only(self) -> bool:
        """The study starts from labels people already have: no sources, sample, blinding or annotation."""
        return self.units is not None

    def imported_judges(self) -> list[JudgeImport]:
        """The ``[[judge]]`` tables whose verdicts are imported from a table."""
        return [JudgeImport.model_validate(t) for t in self.judge if t.get("provider") == "import"]

    def judge_families(self) -> dict[str, str]:
        """Each judge's model family (``[audit]`` / ``[preference]`` judge_families, else inferred from the judge's
        model id; imported judges from their name): validate and gate flag a judge of an evaluated agent's family,
        and the audit's error matrix crosses it with the response families."""
        from samples import infer_family

        declared = {**(self.preference.judge_families if self.preference else {}),
                    **(self.audit.judge_families if self.audit else {})}
        models = {spec.name: spec.model for spec in self.judge_specs()}
        models.update({j.name: j.name for j in self.imported_judges()})
        return {name: declared.get(name) or infer_family(model) for name, model in models.items()}

    def judge_specs(self) -> list[Any]:
        """The judges that are called (judges.spec.JudgeSpec), prompt files resolved against the study folder."""
        from judges import build_judge

        specs = []
        for index, table in enumerate(self.judge, start=1):
            if table.get("provider") == "import":
                continue
            data = dict(table)
            prompt = data.get("prompt")
            if isinstance(prompt, str) and (prompt.endswith(".toml") or "/" in prompt):
                data["prompt"] = str(self.path.parent / prompt)
            specs.append(build_judge(data, where=f"{self.path} [[judge]] #{index}"))
        names = [s.name for s in specs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise InputError(f"{self.path}: [[judge]] names must be unique; repeated: {repeated}")
        return specs

    def judge_names(self) -> list[str]:
        return [s.name for s in self.judge_specs()] + [j.name for j in self.imported_judges()]


def _section_model(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that owns the key at ``loc`` (for listing the allowed keys)."""
    model: Any = StudyFile
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        annotation = field.annotation
        for candidate in getattr(annotation, "__args__", ()) or (annotation,):
            inner = getattr(candidate, "__args__", (candidate,))
            found = next((c for c in (candidate, *inner) if isinstance(c, type) and issubclass(c, BaseModel)), None)
            if found is not None:
                model = found
                break
        else:
            return None
    return model


def _where(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts[-1] = f"{parts[-1]}[{part}]" if parts else f"[{part}]"
        else:
            parts.append(str(part))
    return ".".join(parts) or "(file)"


def _problem(error: dict[str, Any]) -> str:
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    key = _where(loc)
    if error["type"] == "extra_forbidden":
        owner = _section_model(loc)
        allowed = sorted(n for n in owner.model_fields if n != "path") if owner else []
        return f"unknown key '{key}'; allowed here: {allowed}"
    if error["type"] == "missing":
        return f"missing {'section' if len(loc) == 1 else 'key'} '{key}'"
    message = error["msg"].removeprefix("Value error, ")
    return f"key '{key}': {message}"


SHARED_PREFIX = "shared:"


def shared_folder() -> Path:
    """The shared data folder: $ACCORD_SHARED, else ``shared/`` beside the repository."""
    import os

    return Path(os.environ.get("ACCORD_SHARED") or Path(__file__).resolve().parents[2] / "shared")


def _path(base: Path, value: Any) -> Any:
    """A study-file path made absolute: relative to the study file, or ``shared:REL`` inside the shared folder."""
    if not isinstance(value, str):
        return value
    if value.startswith(SHARED_PREFIX):
        shared = shared_folder().resolve()
        path = (shared / value.removeprefix(SHARED_PREFIX)).resolve()
        if not path.is_relative_to(shared):  # '..', an absolute path or a link leading out of the shared folder
            raise InputError(f"{value!r}: leads outside the shared folder {shared}; a shared: path names a file "
                             "inside it")
        return path
    return (base / value).resolve()


def _resolve(base: Path, data: dict[str, Any]) -> dict[str, Any]:
    """Study-relative paths made absolute; the checks that they exist come after parsing."""
    data = dict(data)
    if isinstance(data.get("output"), str):
        data["output"] = (base / data["output"]).resolve()
    for section, key in (("sampling", "plan"), ("gate", "policy"), ("units", "path")):
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str):
            data[section] = {**table, key: _path(base, table[key])}
    for section in ("human_labels", "judge"):
        tables = data.get(section)
        if isinstance(tables, list):
            data[section] = [{**t, "path": _path(base, t["path"])} if isinstance(t, dict) and "path" in t else t
                             for t in tables]
    sources = data.get("source")
    if isinstance(sources, list):
        fixed = []
        for table in sources:
            if isinstance(table, dict):
                table = dict(table)
                if isinstance(table.get("path"), str):
                    table["path"] = [table["path"]]
                if isinstance(table.get("path"), list):
                    table["path"] = [_path(base, p) for p in table["path"]]
                if isinstance(table.get("fixture"), str):
                    table["fixture"] = _path(base, table["fixture"])
            fixed.append(table)
        data["source"] = fixed
    return data


def _missing(files: list[tuple[str, Path]]) -> list[str]:
    """One problem per missing file; when the shared data folder itself is absent, one line saying how to point at it."""
    shared = shared_folder()
    missing = [(key, path) for key, path in files if not path.is_file()]
    if not shared.is_dir() and any(path.is_relative_to(shared.resolve()) for _, path in missing):
        return [f"the shared data folder {shared} is absent: set ACCORD_SHARED to the folder holding data/ "
                f"(a copy of the project's shared/)"]
    return [f"key '{key}': {path} not found" for key, path in missing]


def _check_paths(study: StudyFile) -> list[str]:
    problems = []
    files = [("gate.policy", study.gate.policy)]
    if study.sampling is not None:
        files.append(("sampling.plan", study.sampling.plan))
    if study.units is not None:
        files.append(("units.path", study.units.path))
    files += [(f"human_labels[{i}].path", h.path) for i, h in enumerate(study.human_labels)]
    files += [(f"judge[{j.name}].path", j.path) for j in study.imported_judges()]
    problems += _missing(files)
    for index, source in enumerate(study.source):
        for path in source.path:
            if not path.exists():
                problems.append(f"key 'source[{index}].path': {path} not found (a file or folder)")
        if source.fixture is not None and not source.fixture.is_file():
            problems.append(f"key 'source[{index}].fixture': file {source.fixture} not found")
    if study.output.exists() and not study.output.is_dir():
        problems.append(f"key 'output': {study.output} exists and is not a folder")
    return problems


def _check_names(study: StudyFile) -> list[str]:
    """Cross-references: judges named in audit/gate/score exist; the panel matches the annotators."""
    problems = []
    try:
        names = study.judge_names()
    except ValidationError as error:
        return [f"[[judge]] with provider = \"import\": {_problem(e)}" for e in error.errors()]
    refs = [("gate.judges", j) for j in study.gate.judges]
    if study.audit is not None:
        refs.append(("audit.judge", study.audit.judge))
    if study.asa is not None:
        refs.append(("asa.judge", study.asa.judge))
    if study.score is not None:
        refs += [(f"score.{k}", getattr(study.score, k)) for k in ("identify_judge", "escalate_judge", "correctness_judge")
                 if getattr(study.score, k)]
    for key, name in refs:
        if name not in names:
            problems.append(f"key '{key}': judge {name!r} is not a [[judge]] name; judges: {names}")
    panel = study.annotation.simulated_panel
    if panel and (study.blinding is None or sorted(panel) != sorted(study.blinding.annotators)):
        problems.append(f"key 'annotation.simulated_panel': names {sorted(panel)} must be the blinding annotators "
                        f"{sorted(study.blinding.annotators) if study.blinding else []}")
    if study.annotation.simulate and not panel:
        problems.append("key 'annotation.simulate': true needs annotation.simulated_panel {name = flip_prob}")
    for name, prob in panel.items():
        if not 0 <= prob < 1:
            problems.append(f"key 'annotation.simulated_panel.{name}': flip probability {prob!r}; expected 0 <= p < 1")
    return problems


def load_study_file(path: str | Path, *, output: str | Path | None = None) -> StudyFile:
    """Parse and validate a study file; ``output`` overrides its output folder."""
    path = Path(path).resolve() if Path(path).exists() else Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a study file (study.toml)")
    if not path.exists():
        raise InputError(f"{path}: study file not found")
    from samples import read_settings

    try:
        data = tomllib.loads(read_settings(path, "study file").decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 ({error.reason} at byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: invalid TOML ({error})") from None
    if "path" in data:
        raise InputError(f"{path}: unknown key 'path' at the top level")
    try:
        data = _resolve(path.parent, data)
    except InputError as error:
        raise InputError(f"{path}: {error}") from None
    if output is not None:
        data["output"] = Path(output).resolve()
    try:
        study = StudyFile.model_validate({**data, "path": path})
    except ValidationError as error:
        raise InputError(f"{path}: invalid study file", problems=[_problem(e) for e in error.errors()]) from None
    problems = _check_paths(study) + _check_names(study)
    if problems:
        raise InputError(f"{path}: invalid study file", problems=problems)
    return study
