"""The ``labelstudio`` annotation backend: push, pull, status and closing tasks, through the study's server."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from annotate.base import BackendStatus, PushReport, register_backend
from annotate.codebook import codebook_html, codebook_sha256
from annotate.export import export_labels
from annotate.labelstudio.labels import _label_from_task, _read_table, display_payload, labeling_config
from annotate.labelstudio.server import (
    ADMIN_PASSWORD_ENV,
    DEFAULT_URL,
    TOKEN_ENV,
    URL_ENV,
    LabelStudioSettings,
    _AdminSite,
    _email_for,
    _Server,
)
from annotate.labelstudio.state import (
    AnnotatorCredentials,
    AnnotatorState,
    CredentialsFile,
    LabelStudioPullReport,
    LabelStudioState,
    OwnerCredentials,
    ProjectState,
    TaskInfo,
    _read_model,
    _save_model,
)
from annotate.tasks import check_orders
from samples import BlindTask, HumanLabel, InputError, StudyLayout, scheme_for, study_schemes

# Label Studio limits project titles to 50 characters.
_TITLE_LIMIT = 50


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
        task lock), so nobody can open one again; recorded as closed, so push does not import them again and status
        no longer counts them as assigned. Tasks with an annotation, even a skipped one, stay with their labels.

        One Data Manager ``delete_tasks`` action per project deletes them all (``POST /api/dm/actions``), not one
        request per task; an interrupted close resumes, since a task the server no longer has counts as closed.
        """
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
                unlabelled = {task_id: ls_id for task_id, ls_id in project.tasks.items() if not on_server.get(ls_id, False)}
                present = [ls_id for ls_id in unlabelled.values() if ls_id in on_server]  # a lost task is closed already
                if present:
                    owner.call(f"closing {len(present)} task(s) of {where}", owner.client.actions.create,
                               id="delete_tasks", project=project.project_id, selected_items={"all": False, "included": present})
                for task_id in unlabelled:
                    del project.tasks[task_id]
                    project.closed.append(task_id)
                closed[annotator] += len(unlabelled)
                self._save_state(state)
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


register_backend("labelstudio", LabelStudioBackend, settings=LabelStudioSettings)
