"""The Label Studio backend: one organisation per annotator, owner accounts, idempotent push and lossless pull.

Open-source Label Studio has no roles, task assignment, per-item overlap or
agreement, and inside one organisation every member can list and open every
project. accord therefore gives every annotator an organisation of their own
(holding one project per unit kind, the tasks imported in that annotator's order
for sequential sampling) with two members: the annotator's account and an owner
account through which the study pushes and pulls. Accounts, organisations and
memberships are made in Label Studio's own user management for superusers, its
Django admin pages (``/admin/``), signed in as the server's admin account; the
invite link cannot do it (every signup joins the first organisation).

Label Studio 1.23.2 lets a signed-in user open objects of any organisation they
are not a revoked member of (``Project.has_permission`` rejects only revoked
memberships). Push therefore seals every organisation it makes: every other user
of the server gets a revoked membership in it, and every annotator gets a revoked
membership in every other organisation. Stock 1.23.2 also lets a user edit their
own ``active_organization`` through the API, after which the project list and
``/api/tasks/{id}/annotations/`` of that organisation are open to them, and shows
any task's drafts to anyone; the servers ``scripts/labelstudio.sh`` starts close
both (``scripts/labelstudio_hardening``). README ("Label Studio blinding") says
what holds on a server accord did not start.
Tasks carry only the opaque task id and the scrubbed display payload; judge labels
are never imported as predictions.

Files in the study folder (``StudyLayout``; all rewritten atomically):

- ``labelstudio_state``: server URL, the scheme of each kind, the revoked
  memberships made, and per annotator the user ids, organisation and, per kind,
  the project id and task mapping (accord task id -> Label Studio task id).
- ``labelstudio_credentials`` (mode 0600): each annotator's login (email,
  password, API token, login URL) to hand out, and each organisation owner's login
  and API token, which push, pull and status use.
- ``labelstudio_labels``: the pulled ``HumanLabel`` table (backend
  ``labelstudio``), one row per (task, annotator), the latest edit; the same
  columns and row order as the coding app's export.
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from annotate.base import BackendStatus, PushReport, register_backend
from annotate.codebook import codebook_html, codebook_sha256
from annotate.export import export_labels
from annotate.records import HumanLabel
from annotate.tasks import check_orders
from samples.errors import InputError
from samples.jsonl import atomic_writer, read_models
from samples.kinds import first_turn_problem, get_kind, scheme_for, study_schemes
from samples.layout import StudyLayout
from samples.records import UNIT_KINDS, BlindTask, UnitKind
from samples.schemes import get_scheme

TOKEN_ENV = "ACCORD_LS_TOKEN"
ADMIN_PASSWORD_ENV = "ACCORD_LS_ADMIN_PASSWORD"
URL_ENV = "ACCORD_LS_URL"
DEFAULT_URL = "http://127.0.0.1:8080"
SDK_INSTALL_HINT = "label-studio-sdk is not installed: pip install 'accord[labelstudio]'"
SERVER_HINT = "start one with `bash scripts/labelstudio.sh start` or pass the right --url"
# Label Studio limits project titles to 50 characters.
_TITLE_LIMIT = 50
# Names of the controls in labelstudio_configs/*.xml; pull reads results by these.
_LABEL, _FIRST_TURN, _UNSURE, _NOTE = "label", "first_turn", "unsure", "note"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class LabelStudioSettings(BaseModel):
    """How a study reaches its Label Studio server; secrets are named by environment variable, never written here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(default=None, description=f"Base URL of the Label Studio server (default: the one push recorded, "
                                                      f"else ${URL_ENV}, else {DEFAULT_URL}).")
    token_env: str = Field(
        default=TOKEN_ENV, pattern=_ENV_NAME,
        description="Environment variable holding the API token of the server's admin account.",
    )
    admin_password_env: str = Field(
        default=ADMIN_PASSWORD_ENV, pattern=_ENV_NAME,
        description="Environment variable holding that admin account's password (push signs in to /admin/ with it).",
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds to wait for one server request or export.")

    @field_validator("url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{value!r} is not a server base URL; expected e.g. {DEFAULT_URL}")
        return value.rstrip("/")

    def backend_options(self, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Keyword arguments for ``get_backend("labelstudio", study=..., **options)``, secrets read from the environment."""
        environ = os.environ if environ is None else environ
        token = environ.get(self.token_env, "").strip()
        if not token:
            raise InputError(f"annotation.labelstudio.token_env: set {self.token_env} to the API token of the server's admin account")
        password = environ.get(self.admin_password_env) or None
        return {"url": self.url, "token": token, "admin_password": password, "timeout": self.timeout_s}


class ProjectState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_id: int = Field(description="Label Studio project id.")
    tasks: dict[str, int] = Field(
        default_factory=dict, description="accord task id -> Label Studio task id, in the annotator's order."
    )
    recreated: list[str] = Field(
        default_factory=list,
        description="Tasks push imported again after the server lost them; pull keeps their earlier labels until relabelled.",
    )
    codebook_sha256: str | None = Field(
        default=None, description="sha256 of the codebook pushed as the project's instructions (None: pushed before "
                                  "accord recorded it); every label pulled from the project carries it.")
    closed: list[str] = Field(
        default_factory=list, description="Tasks deleted unlabelled once the study's anytime verdict was decided "
                                          "(close_remaining); push never imports them again.")


class AnnotatorState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(description="Login email of the annotator's Label Studio account.")
    user_id: int = Field(description="Label Studio user id: only annotations completed by it are this annotator's labels.")
    organization_id: int = Field(description="The annotator's own organisation, which holds their projects only.")
    owner_user_id: int = Field(description="The organisation's owner account (push, pull and status act through it).")
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
    revoked: list[tuple[int, int]] = Field(
        default_factory=list, description="(user id, organisation id) revoked memberships push made to seal organisations.",
    )


class AnnotatorCredentials(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(description="Login email.")
    password: str = Field(description="Login password (random, set when push made the account).")
    api_token: str | None = Field(default=None, description="The annotator's own API token.")
    login_url: str = Field(description="Where the annotator logs in.")
    user_id: int = Field(description="Label Studio user id.")


class OwnerCredentials(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(description="Login email of the organisation's owner account (kept by the study, never handed out).")
    password: str = Field(description="Its login password.")
    api_token: str = Field(description="Its API token: push, pull and status reach the annotator's organisation with it.")
    user_id: int = Field(description="Label Studio user id.")
    organization_id: int = Field(description="The annotator's organisation it owns.")


class CredentialsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="Base URL of the Label Studio server.")
    annotators: dict[str, AnnotatorCredentials] = Field(default_factory=dict, description="Annotator name -> login to hand out.")
    owners: dict[str, OwnerCredentials] = Field(default_factory=dict, description="Annotator name -> their organisation's owner.")


@dataclass(frozen=True, kw_only=True)
class LabelStudioPullReport:
    """A pull: the labels table written, how it changed, and annotations that are not labels (with reasons)."""

    labels: tuple[HumanLabel, ...]
    path: Path
    added: int
    updated: int
    unchanged: int
    removed: int
    kept: int
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
        style = ("border-left:4px solid #b91c1c;background:#fef2f2" if section.notice
                 else "border-left:4px solid #d97706;background:#fff7e6" if section.focus else "border-left:4px solid #cbd5e1")
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


def _save_model(path: Path, model: BaseModel, *, mode: int = 0o644) -> None:
    with atomic_writer(path, mode=mode) as handle:
        handle.write((model.model_dump_json(indent=1) + "\n").encode("utf-8"))


def _timestamp(value: str | None) -> str | None:
    """Label Studio times as ISO-8601 UTC with microseconds, the coding app's format."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="microseconds")


def _user_id(completed_by: Any) -> int | None:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("id")
    return completed_by if isinstance(completed_by, int) else None


def _email_for(name: str) -> str:
    local = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "annotator"
    return f"{local[:40]}-{secrets.token_hex(3)}@accord.local"


def _short(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    return " ".join(text.split())[:300]


def _form_errors(page: str) -> str:
    """The messages of a Django form page that refused a submission."""
    blocks = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', page, re.DOTALL)
    blocks += re.findall(r'<ul class="field_errors">(.*?)</ul>', page, re.DOTALL)
    return "; ".join(html.unescape(re.sub(r"<[^>]+>", "", item)).strip() for block in blocks for item in re.findall(r"<li>(.*?)</li>", block, re.DOTALL))


class _Server:
    """One API token's SDK client plus one-line errors for the failures a user can fix."""

    def __init__(self, url: str, token: str, timeout: float, *, refused_hint: str) -> None:
        try:
            from label_studio_sdk import LabelStudio
        except ImportError:
            raise InputError(SDK_INSTALL_HINT) from None
        self.url = url
        self.timeout = timeout
        self.refused_hint = refused_hint
        self.client = LabelStudio(base_url=url, api_key=token, timeout=timeout)

    def call(self, what: str, function: Callable[..., Any], *args: Any, not_found: str | None = None, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)``; with ``not_found`` a 404 returns None, else every failure is an InputError."""
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
                raise InputError(f"Label Studio at {self.url} refused the API token while {what} (HTTP {code}); {self.refused_hint}") from None
            if code == 404:
                if not_found is not None:
                    raise InputError(f"Label Studio at {self.url}: {what}: not found (HTTP 404); {not_found}") from None
                raise InputError(f"Label Studio at {self.url}: {what}: not found (HTTP 404)") from None
            raise InputError(f"Label Studio at {self.url} answered HTTP {code} while {what}: {_short(body)}") from None

    def project(self, project_id: int, *, what: str) -> Any | None:
        """A project, or None when the server no longer has it."""
        from label_studio_sdk.core.api_error import ApiError

        def get() -> Any:
            try:
                return self.client.projects.get(project_id)
            except ApiError as error:
                if error.status_code == 404:
                    return None
                raise

        return self.call(what, get)

    def whoami(self) -> Any:
        # No retries: a server that is down should be reported at once.
        return self.call("checking the API token", self.client.users.whoami, request_options={"max_retries": 0})

    def export(self, project_id: int, *, what: str, not_found: str | None = None) -> list[dict[str, Any]]:
        """Every task of a project (with its annotations) through an export snapshot, deleted after download.

        Snapshots prefetch what they serialise; the one-request export endpoint
        (``export?exportType=JSON``) expands drafts one query per task and took
        about twice as long for the same 1,000 labelled tasks here.
        """
        exports = self.client.projects.exports

        def snapshot() -> bytes:
            created = exports.create(
                project_id, title="accord pull", task_filter_options={},
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

        raw = self.call(what, snapshot, not_found=not_found)
        try:
            return json.loads(raw)
        except json.JSONDecodeError as error:
            raise InputError(f"Label Studio at {self.url}: {what}: the export is not JSON ({error.msg})") from None

    def sign_in(self, email: str, password: str, *, who: str, hint: str) -> Any:
        """A browser-like session of an account, signed in through Label Studio's login form."""
        import httpx

        session = httpx.Client(base_url=self.url, follow_redirects=False, timeout=self.timeout)

        def login() -> httpx.Response:
            session.get("/user/login/").raise_for_status()
            return session.post(
                "/user/login/", headers={"Referer": f"{self.url}/user/login/"},
                data={"email": email, "password": password, "csrfmiddlewaretoken": session.cookies.get("csrftoken", "")},
            )

        response = self.call(f"signing in as {who}", login)
        if response.status_code != 302:
            session.close()
            reasons = _form_errors(response.text)
            raise InputError(f"Label Studio at {self.url} refused the login of {who} (HTTP {response.status_code}: {reasons or 'refused'}); {hint}")
        return session


class _AdminSite:
    """Label Studio's user management for superusers (its Django admin pages), signed in as the server's admin account.

    Open-source Label Studio makes organisations and memberships nowhere else: its
    API creates users without a password, and every invite-link signup joins the
    first organisation.
    """

    def __init__(self, server: _Server, email: str, password: str) -> None:
        self._server = server
        # Label Studio's own login form: /admin/login/ does not stamp the session and is logged out at once.
        self.session = server.sign_in(email, password, who=f"the admin account {email}", hint=f"set {ADMIN_PASSWORD_ENV} to its password")
        page = server.call("opening /admin/", lambda: self.session.get("/admin/"))
        if page.status_code != 200:
            raise InputError(
                f"Label Studio at {server.url}: the account {email} cannot open /admin/ (HTTP {page.status_code}); "
                f"{TOKEN_ENV} and {ADMIN_PASSWORD_ENV} must be the server's superuser (its LABEL_STUDIO_USERNAME)"
            )

    def add(self, model: str, fields: Mapping[str, Any], *, what: str) -> int:
        """Submit the add form of ``model`` (e.g. ``users/user``); the new object's id."""
        path = f"/admin/{model}/add/"
        response = self._server.call(what, lambda: self.session.post(
            path, headers={"Referer": f"{self._server.url}{path}"},
            data={**fields, "csrfmiddlewaretoken": self.session.cookies.get("csrftoken", ""), "_continue": "1"},
        ))
        found = re.search(rf"/admin/{model}/(\d+)/change/", response.headers.get("location", "")) if response.status_code == 302 else None
        if found is None:
            reasons = _form_errors(response.text)
            raise InputError(f"Label Studio at {self._server.url}: {what} failed in /admin/ (HTTP {response.status_code}): {reasons or 'refused'}")
        return int(found.group(1))

    def ids(self, model: str) -> set[int]:
        """Every object id of ``model`` on the server, read from its list pages."""
        ids: set[int] = set()
        for page in range(1, 10_000):
            response = self._server.call(f"listing {model} in /admin/", self.session.get, f"/admin/{model}/", params={"p": page})
            found = {int(x) for x in re.findall(rf"/admin/{model}/(\d+)/change/", response.text)} if response.status_code == 200 else set()
            if not found - ids:
                return ids
            ids |= found
        return ids

    def member(self, user_id: int, organization_id: int, *, revoked: bool, what: str) -> None:
        now = datetime.now(UTC)
        self.add("organizations/organizationmember", {
            "user": user_id, "organization": organization_id,
            "deleted_at_0": now.strftime("%Y-%m-%d") if revoked else "", "deleted_at_1": now.strftime("%H:%M:%S") if revoked else "",
        }, what=what)


class LabelStudioBackend:
    """Push blinded tasks into per-annotator organisations and projects; pull their labels into the labels table.

    ``token`` is the server admin's API token; ``admin_password`` (push only) is
    that account's password, for the Django admin pages where accounts,
    organisations and memberships are made. Pull and status act through the
    organisation owners' tokens in the credentials file.
    """

    name = "labelstudio"

    def __init__(
        self,
        *,
        study: str | Path,
        token: str,
        url: str | None = None,
        admin_password: str | None = None,
        timeout: float = 120.0,
        on_progress: Callable[[int, int, str], None] | None = None,
    ) -> None:
        self.study = Path(study)
        if not self.study.is_dir():
            raise InputError(f"study {str(self.study)!r} is not a folder")
        if not isinstance(token, str) or not token.strip():
            raise InputError(f"token: the Label Studio API token is empty; set {TOKEN_ENV}")
        if not timeout > 0:
            raise InputError(f"timeout {timeout!r}: expected seconds > 0")
        layout = StudyLayout.of(self.study)
        self.state_path = layout.labelstudio_state
        self.credentials_path = layout.labelstudio_credentials
        self.labels_path = layout.labelstudio_labels
        state = self._state()
        if url is None:
            url = state.url if state is not None else os.environ.get(URL_ENV, DEFAULT_URL)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InputError(f"url {url!r}: expected the server's base URL, e.g. {DEFAULT_URL}")
        self.url = url.rstrip("/")
        if state is not None and state.url != self.url:
            raise InputError(
                f"{self.state_path}: the projects of this study live on {state.url}, not {self.url}; "
                "pass --url to that server (or push to a new study folder)"
            )
        self.timeout = timeout
        self._admin_password = admin_password or None
        self._server = _Server(
            self.url, token.strip(), timeout, refused_hint=f"set {TOKEN_ENV} to a valid token of the server's admin account",
        )
        self._owners: dict[str, _Server] = {}
        self._on_progress = on_progress or (lambda done, total, what: None)

    # -- files ---------------------------------------------------------------------

    def _state(self) -> LabelStudioState | None:
        return _read_model(self.state_path, LabelStudioState, "Label Studio state file")

    def _require_state(self) -> LabelStudioState:
        state = self._state()
        if state is None or not state.annotators:
            raise InputError(f"{self.state_path}: no Label Studio push recorded for this study; run `accord ls push` first")
        return state

    def _save_state(self, state: LabelStudioState) -> None:
        _save_model(self.state_path, state)

    def _credentials(self) -> CredentialsFile:
        return _read_model(self.credentials_path, CredentialsFile, "credentials file") or CredentialsFile(url=self.url)

    def _save_credentials(self, credentials: CredentialsFile) -> None:
        _save_model(self.credentials_path, credentials, mode=0o600)

    def _owner(self, annotator: str, credentials: CredentialsFile) -> _Server:
        """The API client of the owner of ``annotator``'s organisation."""
        if annotator not in self._owners:
            login = credentials.owners.get(annotator)
            if login is None:
                raise InputError(
                    f"{self.credentials_path}: no owner login for annotator {annotator!r}; restore the file from a backup "
                    "(push cannot reach that organisation without it)"
                )
            self._owners[annotator] = _Server(
                self.url, login.api_token, self.timeout,
                refused_hint=f"the owner token of annotator {annotator!r} in {self.credentials_path} is no longer valid",
            )
        return self._owners[annotator]

    # -- push ----------------------------------------------------------------------

    def push(self, tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]]) -> PushReport:
        """Create missing accounts, organisations and projects, seal them, import missing tasks; pushing again adds nothing twice.

        A project or task the server lost (deleted in Label Studio) is created again
        and recorded as recreated, so pull keeps the labels it had pulled for it.
        """
        by_id = {task.task_id: task for task in tasks}
        check_orders(tasks, orders)
        chosen = study_schemes(StudyLayout.of(self.study))
        state = self._state() or LabelStudioState(url=self.url)
        for task in tasks:
            known = state.tasks.get(task.task_id)
            if known is not None and known.kind != task.kind:
                raise InputError(
                    f"task_id {task.task_id!r}: was pushed as kind {known.kind!r}, now {task.kind!r}; push a changed sample to a new study folder"
                )
        me = self._server.whoami()
        if not self._admin_password:
            raise InputError(f"set {ADMIN_PASSWORD_ENV} to the password of the server's admin account ({me.email}): push makes accounts in /admin/")
        admin = _AdminSite(self._server, me.email, self._admin_password)
        credentials = self._credentials()
        new_accounts = [name for name in orders if name not in state.annotators]
        for step, annotator in enumerate(new_accounts):
            self._on_progress(step, len(new_accounts), f"{annotator}: account and organisation")
            state.annotators[annotator] = self._account(annotator, credentials, admin)
            self._save_state(state)
        try:
            revoked = self._seal(state, admin)
        finally:
            admin.session.close()
        plan = [(annotator, kind, [t for t in order if by_id[t].kind == kind]) for annotator, order in orders.items()
                for kind in dict.fromkeys(by_id[t].kind for t in order)]
        created = already = 0
        projects: dict[str, dict[str, int]] = {}
        recreated: list[str] = []
        for step, (annotator, kind, task_ids) in enumerate(plan):
            self._on_progress(step, len(plan), f"{annotator}: {kind}")
            owner = self._owner(annotator, credentials)
            account = state.annotators[annotator]
            scheme = state.schemes.setdefault(kind, scheme_for(kind, chosen))
            if scheme != scheme_for(kind, chosen):
                raise InputError(f"kind {kind!r}: its projects offer label scheme {scheme!r}, the study now asks "
                                 f"{scheme_for(kind, chosen)!r}; labels given must keep their meaning: code the new "
                                 "scheme in a new study folder")
            project = account.projects.get(kind)
            lost: list[str] = []
            if project is not None and not self._reconcile(owner, annotator, kind, project):
                lost = list(dict.fromkeys([*project.recreated, *project.tasks]))
                recreated.append(f"{annotator}: {kind} (project {project.project_id})")
                project = None
            if project is None:
                project = account.projects[kind] = ProjectState(
                    project_id=self._create_project(owner, annotator, kind, scheme), recreated=lost,
                    codebook_sha256=codebook_sha256(scheme),
                )
                self._save_state(state)
            missing = [t for t in task_ids if t not in project.tasks and t not in project.closed]
            if missing:
                self._import(owner, annotator, kind, project, [by_id[t] for t in missing])
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
                "url": self.url, "projects": projects, "new_accounts": new_accounts, "recreated_projects": recreated,
                "organizations": {name: state.annotators[name].organization_id for name in orders},
                "revoked_memberships": revoked, "credentials": str(self.credentials_path), "state": str(self.state_path),
            },
        )

    def _account(self, annotator: str, credentials: CredentialsFile, admin: _AdminSite) -> AnnotatorState:
        """The annotator's account, organisation and owner: from the credentials file, else made in /admin/ and saved at once."""
        login, owner = credentials.annotators.get(annotator), credentials.owners.get(annotator)
        if login is not None and owner is not None:
            return AnnotatorState(email=login.email, user_id=login.user_id, organization_id=owner.organization_id, owner_user_id=owner.user_id)
        what = f"making the account of annotator {annotator!r}"
        owner_email, owner_password = _email_for(f"owner-{annotator}"), secrets.token_urlsafe(18)
        email, password = _email_for(annotator), secrets.token_urlsafe(18)
        owner_id = admin.add("users/user", {"email": owner_email, "password1": owner_password, "password2": owner_password}, what=what)
        user_id = admin.add("users/user", {"email": email, "password1": password, "password2": password}, what=what)
        organization_id = admin.add(
            "organizations/organization",
            {"title": f"accord · {annotator}", "token": secrets.token_hex(20), "contact_info": "", "created_by": owner_id},
            what=f"making the organisation of annotator {annotator!r}",
        )
        # Before any revoked membership: sign-in activates a user's first membership.
        for member in (owner_id, user_id):
            admin.member(member, organization_id, revoked=False, what=f"adding user {member} to organisation {organization_id}")
        owner_token = self._account_token(owner_email, owner_password, organization_id, who=f"the owner of annotator {annotator!r}", owner=True)
        # The annotator's sign-in also activates their organisation, which the API (token) use needs.
        api_token = self._account_token(email, password, organization_id, who=f"annotator {annotator!r}", owner=False)
        credentials.annotators[annotator] = AnnotatorCredentials(
            email=email, password=password, api_token=api_token, login_url=f"{self.url}/user/login/", user_id=user_id,
        )
        credentials.owners[annotator] = OwnerCredentials(
            email=owner_email, password=owner_password, api_token=owner_token, user_id=owner_id, organization_id=organization_id,
        )
        self._save_credentials(credentials)
        return AnnotatorState(email=email, user_id=user_id, organization_id=organization_id, owner_user_id=owner_id)

    def _account_token(self, email: str, password: str, organization_id: int, *, who: str, owner: bool) -> str:
        """Sign in once (checking the organisation it opens), let the owner enable API tokens there, and read the account's token."""
        session = self._server.sign_in(email, password, who=who, hint="the account push just made cannot sign in")
        try:
            me = self._server.call(f"signing in as {who}", lambda: session.get("/api/current-user/whoami").raise_for_status().json())
            if me.get("active_organization") != organization_id:
                raise InputError(
                    f"Label Studio at {self.url}: {who} signs in to organisation {me.get('active_organization')}, "
                    f"not their own ({organization_id}); push to a new study folder"
                )
            if owner:
                # New organisations refuse the (legacy) API tokens the SDK sends until their owner allows them.
                self._server.call(f"allowing API tokens in organisation {organization_id}", lambda: session.post(
                    "/api/jwt/settings", json={"api_tokens_enabled": True, "legacy_api_tokens_enabled": True},
                    headers={"X-CSRFToken": session.cookies.get("csrftoken", ""), "Referer": f"{self.url}/"},
                ).raise_for_status())
            token = self._server.call(f"reading the API token of {who}", lambda: session.get("/api/current-user/token").raise_for_status().json())
        finally:
            session.close()
        return str(token["token"])

    def _seal(self, state: LabelStudioState, admin: _AdminSite) -> int:
        """Revoke every other user of the server in the study's organisations, and the study's accounts in every other one.

        Label Studio 1.23.2 lets a user open any object of an organisation in which
        they hold no revoked membership (project, task, annotation ids are
        sequential), so membership alone does not blind; a revoked one does.
        Returns the number of memberships revoked now.
        """
        users, organizations = admin.ids("users/user"), admin.ids("organizations/organization")
        wanted: set[tuple[int, int]] = set()
        for account in state.annotators.values():
            members = {account.user_id, account.owner_user_id}
            wanted |= {(user, account.organization_id) for user in users - members}
            # Owners' logins never leave the credentials file, so only the annotator is revoked elsewhere.
            wanted |= {(account.user_id, organization) for organization in organizations - {account.organization_id}}
        todo = sorted(wanted - {tuple(pair) for pair in state.revoked})
        for step, (user, organization) in enumerate(todo):
            if step % 20 == 0:
                self._on_progress(step, len(todo), "sealing organisations")
            admin.member(user, organization, revoked=True, what=f"revoking user {user} in organisation {organization}")
            state.revoked.append((user, organization))
            if step % 50 == 49:
                self._save_state(state)
        self._save_state(state)
        return len(todo)

    def _create_project(self, owner: _Server, annotator: str, kind: str, scheme: str) -> int:
        title = f"{annotator} · {kind} · {self.study.resolve().name}"[:_TITLE_LIMIT]
        project = owner.call(
            f"creating the {kind} project of annotator {annotator!r}",
            owner.client.projects.create,
            title=title, label_config=labeling_config(kind, scheme), expert_instruction=codebook_html(scheme),
            show_instruction=True, show_skip_button=False, show_collab_predictions=False,
            show_annotation_history=False, show_ground_truth_first=False, enable_empty_annotation=False,
            evaluate_predictions_automatically=False, maximum_annotations=1, sampling="Sequential sampling",
            description="accord blind annotation.",
        )
        return int(project.id)

    def _reconcile(self, owner: _Server, annotator: str, kind: str, project: ProjectState) -> bool:
        """Match the task mapping with the server: recover an interrupted import, forget lost tasks. False if the project is gone."""
        what = f"reading project {project.project_id} of annotator {annotator!r} ({kind})"
        remote = owner.project(project.project_id, what=what)
        if remote is None:
            return False
        if int(remote.task_number or 0) == len(project.tasks):
            return True
        on_server = {int(task["id"]): (task.get("data") or {}).get("task_id") for task in owner.export(project.project_id, what=what)}
        for task_id, ls_id in list(project.tasks.items()):
            if ls_id not in on_server:
                del project.tasks[task_id]
                if task_id not in project.recreated:
                    project.recreated.append(task_id)
        for ls_id, task_id in on_server.items():
            if isinstance(task_id, str):
                project.tasks.setdefault(task_id, ls_id)
        return True

    def _import(self, owner: _Server, annotator: str, kind: str, project: ProjectState, tasks: Sequence[BlindTask]) -> None:
        payload = [{"data": {"task_id": task.task_id, "display": display_payload(task),
                             **({"truncated": task.truncation} if task.truncation else {})}} for task in tasks]
        response = owner.call(
            f"importing {len(tasks)} task(s) into project {project.project_id} of annotator {annotator!r} ({kind})",
            owner.client.projects.import_tasks,
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

    def close_remaining(self) -> dict[str, int]:
        """Delete every task no annotation was made on from each annotator's projects (Label Studio Community has no
        task lock: ``DELETE /api/tasks/{id}/``), so nobody can open one again; recorded as closed, so push does not
        import them again and status no longer counts them as assigned. Tasks with an annotation, even a skipped
        one, stay with their labels."""
        state = self._require_state()
        credentials = self._credentials()
        closed: dict[str, int] = {}
        for annotator, account in state.annotators.items():
            owner = self._owner(annotator, credentials)
            closed[annotator] = 0
            for kind, project in account.projects.items():
                where = f"project {project.project_id} of annotator {annotator!r} ({kind})"
                on_server = {int(task["id"]): bool(task.get("annotations"))
                             for task in owner.export(project.project_id, what=f"reading {where}")}
                for task_id, ls_id in list(project.tasks.items()):
                    if on_server.get(ls_id, False):
                        continue
                    if ls_id in on_server:  # a task the server lost is closed already
                        owner.call(f"closing task {ls_id} of {where}", owner.client.tasks.delete, ls_id)
                    del project.tasks[task_id]
                    project.closed.append(task_id)
                    closed[annotator] += 1
                    self._save_state(state)  # one task at a time: an interrupted close resumes where it stopped
        return closed

    # -- pull ----------------------------------------------------------------------

    def pull(self) -> list[HumanLabel]:
        return list(self.pull_report().labels)

    def pull_report(self) -> LabelStudioPullReport:
        """Convert every project's export into ``HumanLabel`` rows and rewrite the labels table.

        Rebuilding the table from the exports makes pull idempotent: pulling twice
        gives the same file, and an annotation edited in Label Studio replaces its
        row. Nothing is written unless every project was read whole: a server that
        is down, a deleted project or a lost task is an error naming it, and the
        table keeps what earlier pulls wrote. Tasks push re-created after a loss
        keep their earlier row until the annotator labels them again.
        """
        state = self._require_state()
        self._server.whoami()
        credentials = self._credentials()
        keep = f"nothing was written, {self.labels_path} keeps the labels pulled before; run `accord ls push` to re-create it"
        steps = [(annotator, kind, project) for annotator, account in state.annotators.items() for kind, project in account.projects.items()]
        labels: list[HumanLabel] = []
        ignored: list[str] = []
        for step, (annotator, kind, project) in enumerate(steps):
            self._on_progress(step, len(steps), f"{annotator}: {kind}")
            where = f"project {project.project_id} of annotator {annotator!r} ({kind})"
            exported = self._owner(annotator, credentials).export(project.project_id, what=f"exporting {where}", not_found=keep)
            on_server = {int(task["id"]) for task in exported}
            lost = [f"{task_id!r} (Label Studio task {ls_id})" for task_id, ls_id in project.tasks.items() if ls_id not in on_server]
            if lost:
                raise InputError(
                    f"Label Studio at {self.url}: {where} has lost {len(lost)} task(s): {', '.join(lost[:3])}"
                    f"{' ...' if len(lost) > 3 else ''}; {keep}"
                )
            user_id = state.annotators[annotator].user_id
            for task in exported:
                label = _label_from_task(task, annotator=annotator, user_id=user_id, project=project, state=state, ignored=ignored)
                if label is not None:
                    labels.append(label)
        self._on_progress(len(steps), len(steps), "done")
        previous = _read_table(self.labels_path)
        current = {(row.task_id, row.annotator, row.role): row for row in labels}
        kept = 0
        for annotator, account in state.annotators.items():
            for project in account.projects.values():
                for task_id in project.recreated:
                    key = (task_id, annotator, "independent")
                    if key not in current and key in previous:
                        current[key] = previous[key]
                        kept += 1
        changed = [key for key in current if key in previous and previous[key] != current[key]]
        rows = list(current.values())
        temporary = self.labels_path.with_name(f".{self.labels_path.name}.pull")
        try:
            export_labels(rows, temporary, format="jsonl")
            os.replace(temporary, self.labels_path)
        finally:
            temporary.unlink(missing_ok=True)
        return LabelStudioPullReport(
            labels=tuple(sorted(rows, key=lambda row: (row.task_id, row.role, row.annotator))),
            path=self.labels_path,
            added=sum(key not in previous for key in current),
            updated=len(changed),
            unchanged=sum(key in previous for key in current) - len(changed) - kept,
            removed=sum(key not in current for key in previous),
            kept=kept,
            ignored=tuple(ignored),
        )

    def close(self) -> None:
        """Nothing to release: every server call is its own request."""

    def panel_store(self) -> None:
        """A simulated panel labels through the coding app's store only."""
        return None

    @classmethod
    def labels_digest(cls, layout: StudyLayout) -> str | None:
        """None: labels reach the study only through ``pull``, whose file the run already fingerprints."""
        return None

    @classmethod
    def reports_status(cls, layout: StudyLayout) -> bool:
        return True

    @classmethod
    def instructions(cls, layout: StudyLayout, missing: Mapping[str, int]) -> list[str]:
        return [f"  1. hand out the logins in {layout.labelstudio_credentials} (accord ls status --study {layout.root})",
                "  2. annotators label their own projects in Label Studio"]

    # -- status --------------------------------------------------------------------

    def status(self) -> BackendStatus:
        """Per annotator: tasks assigned (``assigned``) and tasks with a submitted, not skipped, annotation (``labelled``).

        Read from the projects' counters; only the annotator and the organisation's
        owner can annotate there. Pull, which keeps only valid labels, is the authority.
        """
        state = self._require_state()
        self._server.whoami()
        credentials = self._credentials()
        labelled: dict[str, int] = {}
        assigned: dict[str, int] = {}
        projects: dict[str, dict[str, dict[str, Any]]] = {}
        for annotator, account in state.annotators.items():
            owner = self._owner(annotator, credentials)
            labelled[annotator] = assigned[annotator] = 0
            for kind, project in account.projects.items():
                where = f"project {project.project_id} of annotator {annotator!r} ({kind})"
                remote = owner.call(f"reading {where}", owner.client.projects.get, project.project_id,
                                    not_found="run `accord ls push` to re-create it")
                done = int(remote.num_tasks_with_annotations or 0)
                labelled[annotator] += done
                assigned[annotator] += len(project.tasks)
                projects.setdefault(annotator, {})[kind] = {
                    "project_id": project.project_id, "tasks": int(remote.task_number or 0), "labelled": done,
                    "url": f"{self.url}/projects/{project.project_id}/data",
                }
        return BackendStatus(
            backend=self.name, n_tasks=len(state.tasks), labelled=labelled, assigned=assigned,
            details={
                "url": self.url, "projects": projects,
                "organizations": {name: account.organization_id for name, account in state.annotators.items()},
                "credentials": str(self.credentials_path), "labels": str(self.labels_path),
            },
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
        backend="labelstudio", role="independent", codebook_sha256=project.codebook_sha256,
    )


def _read_table(path: Path) -> dict[tuple[str, str, str], HumanLabel]:
    if not path.exists():
        return {}
    return {(row.task_id, row.annotator, row.role): row for row in read_models(path, HumanLabel)}


def load_labelstudio_state(study: str | Path) -> LabelStudioState | None:
    """What push recorded for a study (None before the first push)."""
    return _read_model(StudyLayout.of(study).labelstudio_state, LabelStudioState, "Label Studio state file")


def load_labelstudio_credentials(study: str | Path) -> CredentialsFile:
    """The Label Studio logins of a study: the annotators' (to hand out) and their organisations' owners'."""
    path = StudyLayout.of(study).labelstudio_credentials
    found = _read_model(path, CredentialsFile, "credentials file")
    if found is None:
        raise InputError(f"{path}: no Label Studio credentials; run `accord ls push` first")
    return found


register_backend("labelstudio", LabelStudioBackend, settings=LabelStudioSettings)
