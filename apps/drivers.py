"""The stage registry: one driver per stage, called by `accord <stage>` and by `accord run` alike.

A stage driver names its stage, the study paths it reads and writes (asked of
``samples.layout.StudyLayout``), the settings type it takes, and ``run(layout, settings)``,
which computes the stage and writes its document. The command modules only turn
arguments into settings and print what the driver returns; ``apps.stages`` turns the
study file into the same settings. So the two drivers cannot write different documents
from the same inputs and settings (``tests/study/test_one_driver.py``). The built-in
drivers (``apps.builtin_stages``: the agreement stages; ``apps.upstream_stages``: generate, ingest, judge,
import, annotate) register on import as a third party's would.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from samples import Registry, StudyLayout


@dataclass(frozen=True, kw_only=True)
class StageOutput:
    """What a stage wrote: ``document`` as written (JSON-ready), ``detail`` the in-memory result a command prints."""

    document: dict[str, Any]
    detail: Any = None


@runtime_checkable
class StageDriver(Protocol):
    """One stage of a study: what it reads and writes, the settings it takes, and the one way to run it."""

    name: str
    settings: type
    """The frozen settings type ``run`` takes (validated where it is built)."""

    def inputs(self, layout: StudyLayout) -> list[Path]:
        """The study files the stage reads (label sources outside files, such as a store, are not listed)."""

    def outputs(self, layout: StudyLayout) -> list[Path]:
        """The study files the stage writes."""

    def run(self, layout: StudyLayout, settings: Any) -> StageOutput:
        """Compute the stage from the study's files under ``settings`` and write its outputs."""


_DRIVERS: Registry[StageDriver] = Registry("stage", builtins=("apps.upstream_stages", "apps.builtin_stages"))


def register_stage(driver: StageDriver) -> None:
    if not isinstance(driver, StageDriver):
        raise TypeError(f"stage driver {driver!r}: expected a StageDriver (name, settings, inputs, outputs, run)")
    _DRIVERS.register(driver.name, driver)


def get_stage(name: str) -> StageDriver:
    """The registered driver of stage ``name`` (the built-ins imported first)."""
    return _DRIVERS.get_one(name)


def stage_names() -> list[str]:
    return _DRIVERS.names()
