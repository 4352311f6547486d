"""The annotation backend extension point and its registry.

The coding app and Label Studio are two implementations of one Protocol; a
third-party backend registers the same way the built-ins do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from samples import BlindTask, HumanLabel, Registry, StudyLayout

if TYPE_CHECKING:
    from annotate.store import Store


@dataclass(frozen=True, kw_only=True)
class PushReport:
    backend: str
    n_tasks: int
    annotators: tuple[str, ...]
    created: int = 0
    already_present: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class BackendStatus:
    backend: str
    n_tasks: int
    labelled: Mapping[str, int]
    assigned: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)

    def missing(self) -> dict[str, int]:
        """Annotator -> tasks assigned but not yet labelled (only annotators with some left)."""
        return {name: n - self.labelled.get(name, 0) for name, n in sorted(self.assigned.items())
                if n > self.labelled.get(name, 0)}


@runtime_checkable
class AnnotationBackend(Protocol):
    """Push blinded tasks to annotators, pull their labels, report progress.

    ``pull`` returns the backend's current labels and, when the backend belongs to a
    study folder, saves them to ``labels_path`` (one of the study's human label files,
    ``StudyLayout.human_label_files``), so every later stage reads them with no extra step.
    """

    name: str
    labels_path: Path | None

    def push(self, tasks: Sequence[BlindTask], orders: Mapping[str, Sequence[str]]) -> PushReport: ...

    def pull(self) -> list[HumanLabel]: ...

    def status(self) -> BackendStatus: ...

    def close(self) -> None:
        """Release what the backend holds between calls (a store's connection); called once it is done."""

    def close_remaining(self) -> dict[str, int]:
        """The study is decided (``agreement.monitor``): stop serving the tasks nobody labelled yet; annotator ->
        tasks closed. Labels already given are kept."""
        ...

    def panel_store(self) -> Store | None:
        """The store a simulated panel submits through (``apps.demo.panel``); None when this backend takes none."""
        ...


@runtime_checkable
class BackendType(Protocol):
    """A registered backend (its class): builds backends, and answers what callers ask of a study's backend
    without building one (building the coding app's backend creates its store)."""

    name: str

    def __call__(self, **options: Any) -> AnnotationBackend: ...

    def labels_digest(self, layout: StudyLayout) -> str | None:
        """What makes the study's labels stale besides the files ``pull`` saves (the coding app: its store's
        labels, which change between runs); None when those files say it all."""
        ...

    def reports_status(self, layout: StudyLayout) -> bool:
        """Whether ``status()`` may be asked now: it reads what exists and creates nothing."""
        ...

    def instructions(self, layout: StudyLayout, missing: Mapping[str, int]) -> list[str]:
        """The numbered steps `accord run` prints while it waits for ``missing`` (annotator -> tasks left)."""
        ...


# Built-in backends register themselves on import, like a third-party one would; the registry
# imports them on first use, which keeps Label Studio's client out of processes that only import this module.
_BACKENDS: Registry[BackendType] = Registry(
    "annotation backend", builtins=("annotate.app_backend", "annotate.labelstudio"))
# A backend's study-file settings (``[annotation] options``): a pydantic model with
# ``backend_options() -> dict`` giving the factory's keyword arguments (secrets from the environment).
_SETTINGS: Registry[type[Any]] = Registry("annotation backend settings")


def register_backend(name: str, factory: BackendType, *, settings: type[Any] | None = None) -> None:
    """Add a backend; ``settings`` validates its ``[annotation] options`` (default: passed to the factory as given)."""
    check_backend_type(name, factory)
    _BACKENDS.register(name, factory)
    if settings is not None:
        _SETTINGS.register(name, settings)


def backend_settings(name: str, options: Mapping[str, Any]) -> Any:
    """The backend's settings model built from a study file's options (None for a backend without one)."""
    get_backend_factory(name)
    if name not in _SETTINGS:
        return None
    return _SETTINGS[name].model_validate(dict(options))


def build_backend(name: str, *, study: Any, options: Mapping[str, Any]) -> AnnotationBackend:
    """The backend of a study: its options through its settings model when it has one."""
    settings = backend_settings(name, options)
    keywords = settings.backend_options() if settings is not None else dict(options)
    return get_backend(name, study=study, **keywords)


def check_backend_type(name: str, factory: object) -> None:
    """A backend registers with every capability its callers ask for (``BackendType``), or not at all."""
    if not isinstance(factory, BackendType):
        raise TypeError(f"annotation backend {name!r}: {factory!r} is no BackendType; expected a class with name, "
                        "labels_digest(layout), reports_status(layout) and instructions(layout, missing)")


def get_backend_factory(name: str) -> BackendType:
    return _BACKENDS.get_one(name)


def backend_names() -> list[str]:
    """Every backend a study may name: the built-ins (imported on first use) and the registered ones."""
    return _BACKENDS.names()


def get_backend(name: str, **options: Any) -> AnnotationBackend:
    return get_backend_factory(name)(**options)
