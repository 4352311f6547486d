"""The Label Studio backend: one project per annotator and unit kind, invite-link accounts, idempotent pull.

Open-source Label Studio has no roles, task assignment, per-item overlap or
agreement. accord therefore gives every annotator their own project per unit kind,
holding the same tasks in that annotator's order (sequential sampling over tasks
imported in order), and creates each annotator's account through the
organisation's invite link, the only headless signup that yields an account that
can log in. Tasks carry only the opaque task id and the scrubbed display payload;
judge labels are never imported as predictions.

What open-source Label Studio cannot hide: every user of the server can list all
projects, open them in the UI and read other annotators' annotations through the
API. Blindness to model identity and to judge labels holds; blindness to each
other rests on annotators not opening projects that are not theirs. The coding
app (``accord app``) is the strict-blind option.

Files in the study folder (all rewritten atomically):

- ``labels/labelstudio_state.json``: server URL, the scheme of each kind, and per
  annotator the Label Studio user id and, per kind, the project id and the
  task-id mapping (accord task id -> Label Studio task id). Push, pull and status
  work from it later.
- ``labels/labelstudio_annotators.json`` (mode 0600): each annotator's login
  email, password, API token and login URL, to hand out.
- ``labels/labelstudio.jsonl``: the pulled ``HumanLabel`` table (backend
  ``labelstudio``), one row per (task, annotator), the latest edit; the same
  columns and row order as the coding app's export.
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from annotate.base import BackendStatus, PushReport, register_backend
from annotate.codebook import codebook_html
from annotate.export import export_labels
from annotate.records import HumanLabel
from annotate.tasks import check_orders
from samples.errors import InputError
from samples.kinds import first_turn_problem, get_kind
from samples.records import UNIT_KINDS, BlindTask, UnitKind
from samples.schemes import DEFAULT_SCHEME, get_scheme

STATE_RELATIVE_PATH = Path("labels") / "labelstudio_state.json"
CREDENTIALS_RELATIVE_PATH = Path("labels") / "labelstudio_annotators.json"
LABELS_RELATIVE_PATH = Path("labels") / "labelstudio.jsonl"
SDK_INSTALL_HINT = "label-studio-sdk is not installed: pip install 'accord[labelstudio]'"
SERVER_HINT = "start one with `bash scripts/labelstudio.sh start` or pass the right --url"
# Label Studio limits project titles to 50 characters.
_TITLE_LIMIT = 50
# Names of the controls in labelstudio_configs/*.xml; pull reads results by these.
_LABEL, _FIRST_TURN, _UNSURE, _NOTE = "label", "first_turn", "unsure", "note"


class ProjectState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: int = Field(description="Label Studio project id.")
    tasks: dict[str, int] = Field(
        default_factory=dict, description="accord task id -> Label Studio task id, in the annotator's order."
    )


class AnnotatorState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(description="Login email of the annotator's Label Studio account.")
    user_id: int = Field(description="Label Studio user id: only annotations completed by it are this annotator's labels.")
    projects: dict[str, ProjectState] = Field(default_factory=dict, description="Unit kind -> the annotator's project.")


class TaskInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: UnitKind = Field(description="Unit kind of the task.")
    n_turns: int | None = Field(default=None, description="Identify kinds: number of numbered turns (first_turn range).")


class LabelStudioState(BaseModel):
    """What push created on the server, so pull and status find it again."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="Base URL of the Label Studio server the projects live on.")
    schemes: dict[str, str] = Field(default_factory=dict, description="Unit kind -> label scheme its labeling config offers.")
    tasks: dict[str, TaskInfo] = Field(default_factory=dict, description="Every pushed task by accord task id.")
    annotators: dict[str, AnnotatorState] = Field(default_factory=dict, description="Annotator name -> account and projects.")


class AnnotatorCredentials(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(description="Login email.")
    password: str = Field(description="Login password (random, set at signup).")
    api_token: str | None = Field(default=None, description="The annotator's own API token, when the server issues one.")
    login_url: str = Field(description="Where the annotator logs in.")
    user_id: int = Field(description="Label Studio user id.")


class CredentialsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="Base URL of the Label Studio server.")
    annotators: dict[str, AnnotatorCredentials] = Field(default_factory=dict, description="Annotator name -> credentials.")


@dataclass(frozen=True, kw_only=True)
class LabelStudioPullReport:
    """A pull: the labels table written, how it changed, and annotations that are not labels (with reasons)."""

    labels: tuple[HumanLabel, ...]
    path: Path
    added: int
    updated: int
    unchanged: int
    removed: int
    ignored: tuple[str, ...]


def labeling_config(kind: str, scheme: str) -> str:
    """The Label Studio labeling config of a unit kind, offering the labels of ``scheme``."""
    if kind not in UNIT_KINDS:
        raise InputError(f"kind {kind!r} is not a unit kind; expected one of {list(UNIT_KINDS)}")
    template = resources.files("annotate.labelstudio_configs").joinpath(f"{get_kind(kind).labelstudio_config}.xml").read_text(encoding="utf-8")
    choices = "\n".join(f'    <Choice value="{html.escape(label, quote=True)}"/>' for label in get_scheme(scheme).labels)
    return template.replace("{choices}", choices)


def display_payload(task: BlindTask) -> str:
    """What the annotator reads (``samples.kinds.annotator_view``) as escaped HTML for a HyperText tag.

    Every piece of unit text is HTML-escaped: agent output containing markup or scripts
    is displayed, never rendered. The focus turn of an ``identify_turn`` task is highlighted.
    """
    view = get_kind(task.kind).annotator_view(task)
    blocks = []  # the labeling config's own Header says what to read (view.caption is the coding app's)
    for section in view.sections:
        style = "border-left:4px solid #d97706;background:#fff7e6" if section.focus else "border-left:4px solid #cbd5e1"
        marker = '<div style="font-weight:bold;color:#b45309">Label this turn</div>' if section.focus else ""
        heading = f'<div style="font-weight:bold">{html.escape(section.heading)}</div>' if section.heading and not section.focus else ""
        blocks.append(
            f'<div style="margin:0 0 10px 0;padding:6px 10px;{style}">{marker}{heading}'
            f'<div style="white-space:pre-wrap;font-family:monospace">{html.escape(section.text)}</div></div>'
        )
    return "".join(blocks)


def _read_model(path: Path, model: type[BaseModel], what: str) -> Any:
    try:
        return model.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise InputError(f"{path}: not a valid {what} (field '{where}': {first['msg']})") from None


def _write_atomically(path: Path, text: str, *, mode: int = 0o644) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _timestamp(value: str | None) -> str | None:
    """Label Studio times as ISO-8601 UTC with microseconds, the coding app's format."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="microseconds")


def _user_id(completed_by: Any) -> int | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    return completed_by if isinstance(completed_by, int) else None


def _email_for(annotator: str) -> str:
    local = re.sub(r"[^a-z0-9]+", "-", annotator.lower()).strip("-") or "annotator"
    return f"{local[:40]}-{secrets.token_hex(3)}@accord.local"


def _short(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    return " ".join(text.split())[:300]


class _Server:
    """The SDK client plus one-line errors for the failures a user can fix."""

    def __init__(self, url: str, token: str, timeout: float) -> None:
        try:
            from label_studio_sdk import LabelStudio
        except ImportError:
            raise InputError(SDK_INSTALL_HINT) from None
        self.url = url
        self.timeout = timeout
        self.client = LabelStudio(base_url=url, api_key=token, timeout=timeout)

    def call(self, what: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        import httpx
        from label_studio_sdk.core.api_error import ApiError

        try:
            return function(*args, **kwargs)
        except httpx.TransportError as error:
            raise InputError(
                f"Label Studio at {self.url} is not reachable while {what} ({type(error).__name__}: {error}); {SERVER_HINT}"
            ) from None
        except (ApiError, httpx.HTTPStatusError) as error:
            if isinstance(error, httpx.HTTPStatusError):
                code, body = error.response.status_code, error.response.text
            else:
                code, body = error.status_code, error.body
            if code in (401, 403):
                raise InputError(
                    f"Label Studio at {self.url} refused the API token while {what} (HTTP {code}); "
                    "set ACCORD_LS_TOKEN to a valid token of the server's admin account"
                ) from None
            if code == 404:
                raise InputError(f"Label Studio at {self.url}: {what}: not found (HTTP 404)") from None
            raise InputError(f"Label Studio at {self.url} answered HTTP {code} while {what}: {_short(body)}") from None

    def whoami(self) -> Any:
        # No retries: a server that is down should be reported at once.
        return self.call("checking the API token", self.client.users.whoami, request_options={"max_retries": 0})

    def export(self, project_id: int, *, what: str, annotated_only: bool) -> list[dict[str, Any]]:
        """A project's tasks (with their annotations) through an export snapshot, deleted after download.

        Snapshots prefetch what they serialise; the one-request export endpoint
        (``export?exportType=JSON``) expands drafts one query per task and took
        about twice as long for the same 1,000 labelled tasks here.
        """
        exports = self.client.projects.exports

        def snapshot() -> bytes:
            created = exports.create(
                project_id, title="accord pull",
                task_filter_options={"annotated": "only"} if annotated_only else {},
                serialization_options={"drafts": {"only_id": True}, "predictions": {"only_id": True},
                                       "annotations__completed_by": {"only_id": True}},
            )
            try:
                current, deadline = created, time.monotonic() + self.timeout
                while current.status != "completed":
                    if current.status == "failed" or time.monotonic() > deadline:
                        raise InputError(f"Label Studio at {self.url}: {what}: export snapshot {created.id} is {current.status!r}")
                    time.sleep(0.2)
                    current = exports.get(project_id, export_pk=created.id)
                return b"".join(exports.download(project_id, created.id, export_type="JSON"))
            finally:
                exports.delete(project_id, created.id)

        raw = self.call(what, snapshot)
        try:
            return json.loads(raw)
        except json.JSONDecodeError as error:
            raise InputError(f"Label Studio at {self.url}: {what}: the export is not JSON ({error.msg})") from None


class LabelStudioBackend:
    """Push blinded tasks into per-annotator Label Studio projects; pull their labels into the labels table."""

    name = "labelstudio"

    def __init__(
        self,
        *,
        study: str | Path,
        token: str,
        url: str | None = None,
        timeout: float = 120.0,
        on_progress: Callable[[int, int, str], None] | None = None,
    ) -> None:
        self.study = Path(study)
        if not self.study.is_dir():
            raise InputError(f"study {str(self.study)!r} is not a folder")
        if not isinstance(token, str) or not token.strip():
            raise InputError("token: the Label Studio API token is empty; set ACCORD_LS_TOKEN")
        if not timeout > 0:
            raise InputError(f"timeout {timeout!r}: expected seconds > 0")
        self.state_path = self.study / STATE_RELATIVE_PATH
        self.credentials_path = self.study / CREDENTIALS_RELATIVE_PATH
        self.labels_path = self.study / LABELS_RELATIVE_PATH
        state = self._state()
        if url is None:
            url = state.url if state is not None else os.environ.get("ACCORD_LS_URL", "http://127.0.0.1:8080")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InputError(f"url {url!r}: expected the server's base URL, e.g. http://127.0.0.1:8080")
        self.url = url.rstrip("/")
        if state is not None and state.url != self.url:
            raise InputError(
                f"{self.state_path}: the projects of this study live on {state.url}, not {self.url}; "
                "pass --url to that server (or push to a new study folder)"
            )
        self._server = _Server(self.url, token.strip(), timeout)
        self._on_progress = on_progress or (lambda done, total, what: None)

    # -- files ---------------------------------------------------------------------

    def _state(self) -> LabelStudioState | None:
        return load_labelstudio_state(self.study)

    def _require_state(self) -> LabelStudioState:
        state = self._state()
        if state is None or not state.annotators:
            raise InputError(f"{self.state_path}: no Label Studio push recorded for this study; run `accord ls push` first")
        return state

    def _save_state(self, state: LabelStudioState) -> None:
        _write_atomically(self.state_path, state.model_dump_json(indent=1) + "\n")

    def _credentials(self) -> CredentialsFile:
        return _read_model(self.credentials_path, CredentialsFile, "credentials file") or CredentialsFile(url=self.url)

    def _save_credentials(self, credentials: CredentialsFile) -> None:
        _write_atomically(self.credentials_path, credentials.model_dump_json(indent=1) + "\n", mode=0o600)

    # -- push ----------------------------------------------------------------------

    def push(self, tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]]) -> PushReport:
        """Create missing accounts and projects and import missing tasks; pushing again adds nothing twice."""
        by_id = {task.task_id: task for task in tasks}
        check_orders(tasks, orders)
        state = self._state() or LabelStudioState(url=self.url)
        for task in tasks:
            known = state.tasks.get(task.task_id)
            if known is not None and known.kind != task.kind:
                raise InputError(
                    f"task_id {task.task_id!r}: was pushed as kind {known.kind!r}, now {task.kind!r}; push a changed sample to a new study folder"
                )
        self._server.whoami()
        credentials = self._credentials()
        plan = [(annotator, kind, [t for t in order if by_id[t].kind == kind]) for annotator, order in orders.items()
                for kind in dict.fromkeys(by_id[t].kind for t in order)]
        created = already = 0
        projects: dict[str, dict[str, int]] = {}
        new_accounts: list[str] = []
        for step, (annotator, kind, task_ids) in enumerate(plan):
            self._on_progress(step, len(plan), f"{annotator}: {kind}")
            account = state.annotators.get(annotator)
            if account is None:
                login = credentials.annotators.get(annotator)
                if login is None:
                    login = self._sign_up(annotator, credentials)
                    new_accounts.append(annotator)
                account = state.annotators[annotator] = AnnotatorState(email=login.email, user_id=login.user_id)
            scheme = state.schemes.setdefault(kind, DEFAULT_SCHEME[kind])
            project = account.projects.get(kind)
            if project is None:
                project = account.projects[kind] = ProjectState(project_id=self._create_project(annotator, kind, scheme))
                self._save_state(state)
            else:
                self._reconcile(annotator, kind, project)
            missing = [t for t in task_ids if t not in project.tasks]
            if missing:
                self._import(annotator, kind, project, [by_id[t] for t in missing])
            for task_id in task_ids:
                task = by_id[task_id]
                state.tasks[task_id] = TaskInfo(kind=task.kind, n_turns=len(task.turns) if task.turns else None)
            self._save_state(state)
            created += len(missing)
            already += len(task_ids) - len(missing)
            projects.setdefault(annotator, {})[kind] = project.project_id
        self._save_state(state)
        self._on_progress(len(plan), len(plan), "done")
        return PushReport(
            backend=self.name, n_tasks=len(by_id), annotators=tuple(orders), created=created, already_present=already,
            details={
                "url": self.url, "projects": projects, "new_accounts": new_accounts,
                "credentials": str(self.credentials_path), "state": str(self.state_path),
            },
        )

    def _sign_up(self, annotator: str, credentials: CredentialsFile) -> AnnotatorCredentials:
        """Create an account through the organisation's invite link and save its credentials at once."""
        import httpx

        invite = self._server.call("reading the organisation's invite link", self._server.client.organizations.invites.get_invite_link)
        email, password = _email_for(annotator), secrets.token_urlsafe(18)
        signup = f"/user/signup/?token={invite.token}"
        what = f"creating the account of annotator {annotator!r}"
        with httpx.Client(base_url=self.url, follow_redirects=False, timeout=60.0) as session:
            def register() -> httpx.Response:
                session.get(signup).raise_for_status()
                return session.post(
                    signup, headers={"Referer": f"{self.url}{signup}"},
                    data={"email": email, "password": password, "csrfmiddlewaretoken": session.cookies.get("csrftoken", "")},
                )

            response = self._server.call(what, register)
            if response.status_code != 302:
                errors = re.findall(r'<ul class="field_errors">\s*((?:<li>.*?</li>\s*)+)</ul>', response.text, re.S)
                reasons = "; ".join(html.unescape(m) for block in errors for m in re.findall(r"<li>(.*?)</li>", block))
                raise InputError(f"Label Studio at {self.url}: {what} failed (HTTP {response.status_code}): {reasons or 'signup refused'}")
            user = self._server.call(what, lambda: session.get("/api/current-user/whoami").raise_for_status().json())
            token = session.get("/api/current-user/token")
        login = AnnotatorCredentials(
            email=email, password=password, user_id=int(user["id"]), login_url=f"{self.url}/user/login/",
            api_token=token.json().get("token") if token.status_code == 200 else None,
        )
        credentials.annotators[annotator] = login
        self._save_credentials(credentials)
        return login

    def _create_project(self, annotator: str, kind: str, scheme: str) -> int:
        title = f"{annotator} · {kind} · {self.study.resolve().name}"[:_TITLE_LIMIT]
        project = self._server.call(
            f"creating the {kind} project of annotator {annotator!r}",
            self._server.client.projects.create,
            title=title, label_config=labeling_config(kind, scheme), expert_instruction=codebook_html(scheme),
            show_instruction=True, show_skip_button=False, show_collab_predictions=False,
            show_annotation_history=False, show_ground_truth_first=False, enable_empty_annotation=False,
            evaluate_predictions_automatically=False, maximum_annotations=1, sampling="Sequential sampling",
            description="accord blind annotation. Open only the projects named after you.",
        )
        return int(project.id)

    def _reconcile(self, annotator: str, kind: str, project: ProjectState) -> None:
        """Re-read the project's task mapping when the server holds tasks the state does not know (an interrupted push)."""
        what = f"reading project {project.project_id} of annotator {annotator!r} ({kind})"
        remote = self._server.call(what, self._server.client.projects.get, project.project_id)
        if int(remote.task_number or 0) == len(project.tasks):
            return
        for task in self._server.export(project.project_id, what=what, annotated_only=False):
            task_id = (task.get("data") or {}).get("task_id")
            if isinstance(task_id, str):
                project.tasks.setdefault(task_id, int(task["id"]))

    def _import(self, annotator: str, kind: str, project: ProjectState, tasks: Sequence[BlindTask]) -> None:
        payload = [{"data": {"task_id": task.task_id, "display": display_payload(task)}} for task in tasks]
        response = self._server.call(
            f"importing {len(tasks)} task(s) into project {project.project_id} of annotator {annotator!r} ({kind})",
            self._server.client.projects.import_tasks,
            project.project_id, request=payload, return_task_ids=True,
            # A retried import could add the tasks twice; _reconcile recovers an interrupted one instead.
            request_options={"max_retries": 0},
        )
        task_ids = list(response.task_ids or [])
        if len(task_ids) != len(tasks):
            raise InputError(
                f"Label Studio at {self.url}: project {project.project_id} imported {len(task_ids)} of {len(tasks)} task(s); run push again"
            )
        project.tasks.update(zip((task.task_id for task in tasks), map(int, task_ids), strict=True))

    # -- pull ----------------------------------------------------------------------

    def pull(self) -> list[HumanLabel]:
        return list(self.pull_report().labels)

    def pull_report(self) -> LabelStudioPullReport:
        """Convert every project's export into ``HumanLabel`` rows and rewrite the labels table.

        Rebuilding the table from the exports makes pull idempotent: pulling twice
        gives the same file, and an annotation edited in Label Studio replaces its
        row instead of adding one.
        """
        state = self._require_state()
        self._server.whoami()
        steps = [(annotator, kind, project) for annotator, account in state.annotators.items() for kind, project in account.projects.items()]
        labels: list[HumanLabel] = []
        ignored: list[str] = []
        for step, (annotator, kind, project) in enumerate(steps):
            self._on_progress(step, len(steps), f"{annotator}: {kind}")
            what = f"exporting project {project.project_id} of annotator {annotator!r} ({kind})"
            exported = self._server.export(project.project_id, what=what, annotated_only=True)
            user_id = state.annotators[annotator].user_id
            for task in exported:
                label = _label_from_task(task, annotator=annotator, user_id=user_id, project=project, state=state, ignored=ignored)
                if label is not None:
                    labels.append(label)
        self._on_progress(len(steps), len(steps), "done")
        previous = _read_table(self.labels_path)
        current = {(row.task_id, row.annotator, row.role): row for row in labels}
        changed = [key for key in current if key in previous and previous[key] != current[key]]
        temporary = export_labels(labels, self.labels_path.with_name(f".{self.labels_path.name}.pull"), format="jsonl")
        os.replace(temporary, self.labels_path)
        return LabelStudioPullReport(
            labels=tuple(sorted(labels, key=lambda row: (row.task_id, row.role, row.annotator))),
            path=self.labels_path,
            added=sum(key not in previous for key in current),
            updated=len(changed),
            unchanged=sum(key in previous for key in current) - len(changed),
            removed=sum(key not in current for key in previous),
            ignored=tuple(ignored),
        )

    # -- status --------------------------------------------------------------------

    def status(self) -> BackendStatus:
        """Per annotator: tasks pushed and tasks with a submitted (not skipped) annotation.

        Read from the projects' counters, which count an annotation whoever made it;
        pull, which keeps only the annotator's own valid labels, is the authority.
        """
        state = self._require_state()
        self._server.whoami()
        labelled: dict[str, int] = {}
        projects: dict[str, dict[str, dict[str, Any]]] = {}
        for annotator, account in state.annotators.items():
            labelled[annotator] = 0
            for kind, project in account.projects.items():
                remote = self._server.call(
                    f"reading project {project.project_id} of annotator {annotator!r} ({kind})",
                    self._server.client.projects.get, project.project_id,
                )
                done = int(remote.num_tasks_with_annotations or 0)
                labelled[annotator] += done
                projects.setdefault(annotator, {})[kind] = {
                    "project_id": project.project_id, "tasks": int(remote.task_number or 0), "labelled": done,
                    "url": f"{self.url}/projects/{project.project_id}/data",
                }
        return BackendStatus(
            backend=self.name, n_tasks=len(state.tasks), labelled=labelled,
            details={"url": self.url, "projects": projects, "credentials": str(self.credentials_path), "labels": str(self.labels_path)},
        )



def _results(annotation: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {item.get("from_name"): item.get("value") or {} for item in annotation.get("result") or [] if isinstance(item, dict)}


def _label_from_task(
    task: Mapping[str, Any], *, annotator: str, user_id: int, project: ProjectState, state: LabelStudioState, ignored: list[str]
) -> HumanLabel | None:
    """The annotator's label of one exported task, or None (with the reason in ``ignored`` when it is not a label)."""
    task_id = (task.get("data") or {}).get("task_id")
    where = f"project {project.project_id} (annotator {annotator!r}), Label Studio task {task.get('id')}"
    if task_id not in project.tasks:
        ignored.append(f"{where}: task {task_id!r} was not pushed by accord")
        return None
    where = f"{where}, task {task_id!r}"
    annotations = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
    foreign = [a for a in annotations if _user_id(a.get("completed_by")) != user_id]
    for annotation in foreign:
        ignored.append(f"{where}: annotation {annotation.get('id')} by user {_user_id(annotation.get('completed_by'))}, not the annotator")
    own = sorted((a for a in annotations if a not in foreign), key=lambda a: (a.get("updated_at") or "", a.get("id") or 0))
    if not own:
        return None
    latest = own[-1]
    results = _results(latest)
    info = state.tasks.get(task_id)
    if info is None:
        ignored.append(f"{where}: the state file has no record of this task; run `accord ls push` again")
        return None
    scheme = get_scheme(state.schemes[info.kind])
    chosen = list(results.get(_LABEL, {}).get("choices") or [])
    if len(chosen) != 1 or chosen[0] not in scheme.labels:
        ignored.append(f"{where}: annotation {latest.get('id')} has label {chosen}; expected one of {list(scheme.labels)}")
        return None
    label = chosen[0]
    number = results.get(_FIRST_TURN, {}).get("number")
    first_turn = None if number is None else int(number) if float(number).is_integer() else number
    problem = first_turn_problem(info.kind, label, first_turn, info.n_turns or 0, scheme=scheme.name)
    if problem:
        ignored.append(f"{where}: annotation {latest.get('id')}: {problem}")
        return None
    lead_times = [a.get("lead_time") for a in own if isinstance(a.get("lead_time"), int | float)]
    return HumanLabel(
        task_id=task_id, annotator=annotator, label=label, first_turn=first_turn,
        unsure="unsure" in (results.get(_UNSURE, {}).get("choices") or []),
        note="\n".join(results.get(_NOTE, {}).get("text") or []),
        created_at=min(_timestamp(a.get("created_at")) or "" for a in own),
        updated_at=_timestamp(latest.get("updated_at") or latest.get("created_at")),
        seconds_spent=float(sum(lead_times)) if lead_times else None,
        backend="labelstudio", role="independent",
    )


def _read_table(path: Path) -> dict[tuple[str, str, str], HumanLabel]:
    if not path.exists():
        return {}
    rows = (HumanLabel.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {(row.task_id, row.annotator, row.role): row for row in rows}


def load_labelstudio_state(study: str | Path) -> LabelStudioState | None:
    """What push recorded for a study (None before the first push)."""
    return _read_model(Path(study) / STATE_RELATIVE_PATH, LabelStudioState, "Label Studio state file")


def load_labelstudio_credentials(study: str | Path) -> dict[str, AnnotatorCredentials]:
    """The annotators' Label Studio logins of a study (what push handed out)."""
    path = Path(study) / CREDENTIALS_RELATIVE_PATH
    found = _read_model(path, CredentialsFile, "credentials file")
    if found is None:
        raise InputError(f"{path}: no Label Studio credentials; run `accord ls push` first")
    return dict(found.annotators)


register_backend("labelstudio", LabelStudioBackend)
