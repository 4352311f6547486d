"""Where human labels live besides labels files: the registry of human label sources.

The coding app's store is one (``annotate.app_backend.StoreLabelSource``): validation,
the gate, the audit, the report and the live view read its labels as they are now,
with no export step. It lives in ``samples`` so that ``annotate`` can register and
``agreement`` can read without either importing the other; built-in sources register
on import like a third party's, imported by name on first use (as the annotation
backends' registry does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from samples.layout import StudyLayout
from samples.registry import Registry

SIMULATED = "simulated"
"""The ``backend`` of labels a simulator gave (the demo's simulated annotators), not people: nothing computed
from them is human validation. The one place that names it."""


def simulated(backends: Iterable[object]) -> bool:
    """Whether any of these label rows' backends is the simulator's."""
    return SIMULATED in set(backends)


@dataclass(frozen=True, kw_only=True)
class LabelRows:
    """One human labels source's rows as read now (HumanLabel fields + ``source_line``)."""

    name: str
    """How its rows are cited: a study-relative file name, or a store's redacted URL."""
    rows: list[dict[str, Any]]
    digest: str
    """sha256 of what was read (a file's bytes, a store's rows): its fingerprint in stage documents."""
    replaces: tuple[Path, ...] = ()
    """Files holding an older copy of these rows (a store's export), left unread."""


@runtime_checkable
class HumanLabelSource(Protocol):
    """Human labels kept somewhere other than a labels file, read where they live."""

    name: str

    def read(self, layout: StudyLayout) -> LabelRows | None:
        """The study's labels of sampled units now; None when the study has none here."""


_SOURCES: Registry[HumanLabelSource] = Registry("human label source", builtins=("annotate.app_backend",))


def register_label_source(source: HumanLabelSource) -> None:
    if not isinstance(source, HumanLabelSource):
        raise TypeError(f"label source {source!r}: expected a HumanLabelSource (name, read(layout))")
    _SOURCES.register(source.name, source)


def label_sources() -> list[HumanLabelSource]:
    """Every registered source (the built-ins imported first), in name order."""
    return list(_SOURCES.values())
