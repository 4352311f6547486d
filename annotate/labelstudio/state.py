"""What push records in the study folder (``StudyLayout.labelstudio_state`` and ``labelstudio_credentials``),
read and written atomically, and the report of a pull."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from samples import HumanLabel, InputError, StudyLayout, UnitKind, atomic_writer


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
