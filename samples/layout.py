"""Where every file of a study folder lives: the one place that spells its paths.

Every package (samples, judges, annotate, agreement, apps) asks a ``StudyLayout``
for a path instead of joining strings, so two stages can never disagree about
where a table is. ``relative(path)`` gives the study-relative name used in
fingerprints and messages ("stale: labels/human.jsonl changed after validation").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StudyLayout:
    """The paths of one study folder (nothing is created or read here)."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @classmethod
    def of(cls, root: str | Path | StudyLayout) -> StudyLayout:
        return root if isinstance(root, StudyLayout) else cls(Path(root))

    def relative(self, path: Path) -> str:
        """``path`` relative to the study root (posix), or as given when it lies outside."""
        try:
            return Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    # --- run bookkeeping ---------------------------------------------------------------------
    @property
    def state(self) -> Path:
        """`accord run`: each stage's fingerprint and outputs."""
        return self.root / "state.json"

    @property
    def resolved_study(self) -> Path:
        """The study file as resolved by `accord run` (absolute paths)."""
        return self.root / "study.json"

    @property
    def active_order(self) -> Path:
        """`[sampling] order = "active"`: the served order, each unit's key and prediction (agreement.active_order)."""
        return self.root / "sample" / "active_order.json"

    @property
    def label_map(self) -> Path:
        """`accord run`: the study file's [[label_map]] tables (judge and human schemes of one kind)."""
        return self.root / "label_map.json"

    @property
    def locks(self) -> Path:
        """Advisory lock files (one per writer kind, e.g. judges)."""
        return self.root / ".locks"

    @property
    def generations(self) -> Path:
        """Each stage's published generation and commit journal (``samples.generation``)."""
        return self.root / ".generations"

    # --- sources and ingest ------------------------------------------------------------------
    @property
    def sources(self) -> Path:
        return self.root / "sources"

    def source_file(self, name: str) -> Path:
        """A generated source (demo fixture runs)."""
        return self.sources / f"{name}.jsonl"

    def ingest_dir(self, source: str) -> Path:
        return self.root / "ingest" / source

    @property
    def trajectories(self) -> Path:
        return self.root / "trajectories.jsonl"

    @property
    def units(self) -> Path:
        return self.root / "units.jsonl"

    @property
    def ingest_manifest(self) -> Path:
        return self.root / "ingest_manifest.json"

    # --- sample and blind --------------------------------------------------------------------
    @property
    def sample_dir(self) -> Path:
        return self.root / "sample"

    @property
    def sample(self) -> Path:
        return self.sample_dir / "sample.jsonl"

    @property
    def sample_manifest(self) -> Path:
        return self.sample_dir / "manifest.json"

    @property
    def blind_dir(self) -> Path:
        return self.root / "blind"

    @property
    def tasks(self) -> Path:
        return self.blind_dir / "tasks.jsonl"

    @property
    def orders(self) -> Path:
        return self.blind_dir / "orders.json"

    @property
    def blind_audit(self) -> Path:
        return self.blind_dir / "audit.json"

    @property
    def sealed_dir(self) -> Path:
        return self.root / "sealed"

    @property
    def key(self) -> Path:
        return self.sealed_dir / "key.jsonl"

    @property
    def scrub_detail(self) -> Path:
        return self.sealed_dir / "scrub_detail.json"

    @property
    def gold(self) -> Path:
        """The sealed gold key: known-answer units, their expected labels and placement rate (annotate.gold)."""
        return self.sealed_dir / "gold.json"

    @property
    def gold_labels(self) -> Path:
        """HumanLabel rows given on gold units (kept out of the human labels table)."""
        return self.sealed_dir / "gold_labels.jsonl"

    # --- judges ------------------------------------------------------------------------------
    @property
    def judges_dir(self) -> Path:
        return self.root / "judges"

    @property
    def judge_labels(self) -> Path:
        return self.judges_dir / "labels.jsonl"

    @property
    def imported_judge_labels_dir(self) -> Path:
        """JudgeLabel rows imported from files (one JSONL per imported judge)."""
        return self.judges_dir / "imported"

    def judge_label_files(self) -> list[Path]:
        """The judge labels table's files that exist: the runner's, then every imported judge's."""
        files = [self.judge_labels]
        if self.imported_judge_labels_dir.is_dir():
            files += sorted(self.imported_judge_labels_dir.glob("*.jsonl"))
        return [path for path in files if path.is_file()]

    @property
    def judge_label_log(self) -> Path:
        """Append-only log of every judge label written; ``judge_labels`` is rebuilt from it."""
        return self.judges_dir / "label_log.jsonl"

    @property
    def judge_lock(self) -> Path:
        """Held by the one judge run writing this study's judge files."""
        return self.locks / "judges.lock"

    @property
    def judge_runs(self) -> Path:
        return self.judges_dir / "runs.jsonl"

    @property
    def judge_cache(self) -> Path:
        return self.judges_dir / "cache.sqlite"

    # --- human labels ------------------------------------------------------------------------
    @property
    def labels_dir(self) -> Path:
        return self.root / "labels"

    @property
    def store(self) -> Path:
        """The coding app's label store."""
        return self.labels_dir / "store.sqlite"

    @property
    def app_labels(self) -> Path:
        """HumanLabel rows exported from the coding-app store."""
        return self.labels_dir / "human.jsonl"

    @property
    def labelstudio_labels(self) -> Path:
        """HumanLabel rows pulled from Label Studio."""
        return self.labels_dir / "labelstudio.jsonl"

    @property
    def labelstudio_state(self) -> Path:
        return self.labels_dir / "labelstudio_state.json"

    @property
    def labelstudio_credentials(self) -> Path:
        return self.labels_dir / "labelstudio_annotators.json"

    @property
    def practice(self) -> Path:
        """The qualification round's practice units with their answers and reasons (annotate.gold)."""
        return self.labels_dir / "practice.json"

    @property
    def imported_labels_dir(self) -> Path:
        """HumanLabel rows imported from files (one JSONL per import)."""
        return self.labels_dir / "imported"

    def human_label_files(self) -> list[Path]:
        """Every backend's HumanLabel file that exists, in a fixed order: one human labels table."""
        files = [self.app_labels, self.labelstudio_labels]
        if self.imported_labels_dir.is_dir():
            files += sorted(self.imported_labels_dir.glob("*.jsonl"))
        return [path for path in files if path.is_file()]

    # --- agreement and outputs ---------------------------------------------------------------
    @property
    def validation(self) -> Path:
        return self.root / "validation" / "validation.json"

    @property
    def quality(self) -> Path:
        """Annotator quality (leave-one-out agreement, competence, time, unsure share, flags)."""
        return self.root / "validation" / "quality.json"

    @property
    def audit(self) -> Path:
        return self.root / "audit" / "audit.json"

    @property
    def preference(self) -> Path:
        """Pairwise self-preference audit."""
        return self.root / "audit" / "preference.json"

    @property
    def preregistration(self) -> Path:
        """`accord preregister`: policy, judges' calls and sample fixed before the first human label (append-only)."""
        return self.root / "preregistration.jsonl"

    @property
    def gate_history(self) -> Path:
        """Every (human sample, judge, call) the gate has evaluated (append-only): versions tried per sample."""
        return self.root / "gate" / "history.jsonl"

    @property
    def ehq(self) -> Path:
        """EHQ scores per model from the judge's and the human reference's labels (``[ehq]``)."""
        return self.root / "ehq" / "ehq.json"

    @property
    def asa(self) -> Path:
        """ASA milestone scores (SA strict / relaxed, gap, feasible solve, false abstention; ``[asa]``)."""
        return self.root / "asa" / "asa.json"

    @property
    def decisions(self) -> Path:
        """Aggarwal's decision tables, parser comparison and degenerate baselines (``[decisions]``)."""
        return self.root / "decisions" / "decisions.json"

    @property
    def verdict(self) -> Path:
        return self.root / "gate" / "verdict.json"

    @property
    def score(self) -> Path:
        return self.root / "score" / "score.json"

    @property
    def report_dir(self) -> Path:
        return self.root / "report"

    @property
    def report_html(self) -> Path:
        return self.report_dir / "report.html"

    @property
    def report_markdown(self) -> Path:
        return self.report_dir / "report.md"
