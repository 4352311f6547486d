"""What the store takes from its study folder: where the store is (``store_location``), the coding app's
study-file settings, and the blinding seed late annotators' orders are drawn with."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from annotate.engines import check_store_url, scheme_of
from samples import InputError, StudyLayout

STORE_URL_ENV = "ACCORD_STORE_URL"


def blinding_seed(layout: StudyLayout) -> int | None:
    """The seed ``accord blind`` recorded in ``blind/audit.json``; None when there is none."""
    from samples import read_blind_audit

    audit = read_blind_audit(layout)
    return None if audit is None else audit.seed


def study_schema(layout: StudyLayout) -> str:
    """The PostgreSQL schema of a study whose URL names none: ``accord_`` and the study folder's name."""
    name = re.sub(r"[^a-z0-9_]+", "_", layout.root.resolve().name.lower()).strip("_") or "study"
    return f"accord_{name}"[:63]


def store_location(layout: StudyLayout) -> str | Path:
    """Where a study's store is: ``ACCORD_STORE_URL``, else the study file's ``[annotation] options.store``
    (as ``accord run`` resolved it into study.json), else the SQLite file ``labels/store.sqlite``.
    A PostgreSQL URL without ``schema=`` gets the study's own (``study_schema``)."""
    url = os.environ.get(STORE_URL_ENV, "").strip()
    where = STORE_URL_ENV
    if not url:
        url, where = configured_store(layout) or "", f"{layout.resolved_study} annotation.options.store"
    if not url:
        return layout.store
    return with_study_schema(check_store_url(url, where=where), layout)


def with_study_schema(url: str, layout: StudyLayout) -> str:
    """A database URL naming the study's schema unless it names one (a SQLite URL as it is)."""
    if scheme_of(url) != "sqlite" and "schema=" not in url.partition("?")[2]:
        url += ("&" if "?" in url else "?") + f"schema={study_schema(layout)}"
    return url


def configured_store(layout: StudyLayout) -> str | None:
    """The store URL the study file named (``[annotation] options.store``), read through the app backend's settings."""
    if not layout.resolved_study.is_file():
        return None
    try:
        annotation = json.loads(layout.resolved_study.read_text(encoding="utf-8")).get("annotation") or {}
    except json.JSONDecodeError as error:
        raise InputError(f"{layout.resolved_study}: not JSON ({error})") from None
    if annotation.get("backend", "app") != "app":
        return None
    return AppSettings.model_validate(annotation.get("options") or {}).store


class AppSettings(BaseModel):
    """The coding app's study-file settings (``[annotation] options`` with ``backend = "app"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    store: str | None = Field(default=None, description="The store's URL, e.g. postgresql://db.example/accord for "
                                                        "several app servers (no password: PGPASSWORD or ~/.pgpass); "
                                                        "default the study's SQLite file. ACCORD_STORE_URL overrides.")

    @field_validator("store")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_store_url(value, where="store")
            except InputError as error:
                raise ValueError(str(error)) from None
        return value

    def backend_options(self) -> dict[str, Any]:
        return {}  # the store is found from the study folder (store_location), by every command alike
