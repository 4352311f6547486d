"""Reaching a Label Studio server: its settings in a study file, one-line errors for what a user can fix, and
its Django admin pages, where accounts, organisations and memberships are made (see ``annotate.labelstudio``)."""

from __future__ import annotations

import functools
import html
import json
import os
import re
import secrets
import ssl
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from samples import InputError

TOKEN_ENV = "ACCORD_LS_TOKEN"
ADMIN_PASSWORD_ENV = "ACCORD_LS_ADMIN_PASSWORD"
URL_ENV = "ACCORD_LS_URL"
DEFAULT_URL = "http://127.0.0.1:8080"
SDK_INSTALL_HINT = "label-studio-sdk is not installed: pip install 'accord[labelstudio]'"
SERVER_HINT = "start one with `bash scripts/labelstudio.sh start` or pass the right --url"
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


@functools.cache
def _tls() -> ssl.SSLContext:
    """The one TLS context of every client this process opens to Label Studio.

    httpx builds a context per client by default, loading the CA bundle (about 20 ms of CPU): every SDK client,
    owner client and sign-in session paid it again. ``httpx.create_ssl_context`` is httpx's own default
    (certifi, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``), so verification is unchanged.
    """
    import httpx

    return httpx.create_ssl_context()


class _Server:
    """One API token's SDK client plus one-line errors for the failures a user can fix."""

    def __init__(self, url: str, token: str, timeout: float, *, refused_hint: str) -> None:
        try:
            from label_studio_sdk import LabelStudio
        except ImportError:
            raise InputError(SDK_INSTALL_HINT) from None
        import httpx

        self.url = url
        self.timeout = timeout
        self.refused_hint = refused_hint
        self.client = LabelStudio(base_url=url, api_key=token, timeout=timeout,
                                  httpx_client=httpx.Client(timeout=timeout, follow_redirects=True, verify=_tls()))

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

        session = httpx.Client(base_url=self.url, follow_redirects=False, timeout=self.timeout, verify=_tls())

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
