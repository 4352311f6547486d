"""The stage registry (``apps.drivers``): built-ins register as a third party would, names are unique."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from apps.drivers import StageDriver, StageOutput, get_stage, register_stage, stage_names
from samples.layout import StudyLayout


@dataclass(frozen=True)
class _Count:
    """A third party's stage: counts the units of a study into count.json."""

    name: str = "count-units"
    settings: type = dict

    def inputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.units]

    def outputs(self, layout: StudyLayout) -> list[Path]:
        return [layout.root / "count.json"]

    def run(self, layout: StudyLayout, settings: dict) -> StageOutput:
        from samples.jsonl import write_result

        n = len(layout.units.read_text().splitlines())
        return StageOutput(document=write_result(layout.root / "count.json", {"units": n}))


def test_the_built_in_stages_are_registered() -> None:
    assert {"sample", "blind", "decisions", "validate", "quality", "audit", "preference", "ehq", "gate", "score",
            "report"} <= set(stage_names())
    for name in stage_names():
        driver = get_stage(name)
        assert isinstance(driver, StageDriver) and driver.name == name


def test_a_third_party_stage_registers_and_runs(tmp_path) -> None:
    layout = StudyLayout(tmp_path)
    layout.units.write_text('{"unit_id": "a"}\n{"unit_id": "b"}\n')
    driver = _Count()
    register_stage(driver)
    register_stage(driver)  # the same object again (a module imported twice) is no conflict
    assert get_stage("count-units") is driver
    assert get_stage("count-units").run(layout, {}).document == {"units": 2}
    assert (tmp_path / "count.json").read_text() == '{\n  "units": 2\n}\n'


def test_a_second_driver_under_a_taken_name_is_refused() -> None:
    with pytest.raises(ValueError, match="stage 'validate' is already registered"):
        register_stage(_Count(name="validate"))


def test_what_is_not_a_driver_is_refused_and_an_unknown_name_named() -> None:
    with pytest.raises(TypeError, match="expected a StageDriver"):
        register_stage(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown stage 'nope'"):
        get_stage("nope")


def test_settings_are_validated_where_they_are_built() -> None:
    from apps.builtin_stages import AuditSettings, ValidateSettings
    from samples.errors import InputError

    with pytest.raises(InputError, match="level=1.5: expected a confidence level strictly between 0 and 1"):
        ValidateSettings(level=1.5)
    with pytest.raises(InputError, match="n_permutations=50: expected an integer from 100 to 1000000"):
        AuditSettings(positive=("yes",), n_permutations=50)
    with pytest.raises(InputError, match="--positive"):
        AuditSettings(positive=())
