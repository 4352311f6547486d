"""Engine flags dispatch through the engine registry: each engine says which `judge run` flags set its options."""

from __future__ import annotations

import argparse

import pytest

from apps.commands.judge import ENGINE_FLAGS, _with_engine
from judges import engine_names, get_engine
from judges.engines import register_engine
from samples import InputError


def test_every_engine_flag_has_one_owning_engine():
    owners = [name for name in engine_names() for dest in get_engine(name).flags]
    assert sorted(dest for name in engine_names() for dest in get_engine(name).flags) == sorted(ENGINE_FLAGS)
    assert set(owners) == {"ray"}


def test_a_flag_of_another_engine_is_refused_naming_its_engine():
    args = argparse.Namespace(engine="local", ray_address=None, ray_endpoint=["http://h:1/v1"], qps=3)
    with pytest.raises(InputError, match=r"^--ray-endpoint, --qps need --engine ray$"):
        _with_engine(args, [])


def test_an_engine_missing_a_protocol_member_is_refused_when_registered():
    class NoFlags:
        name, remote = "no-flags", False

        def options(self, where, table): ...
        def check(self, judges): ...
        def describe(self, spec): ...
        def call_all(self, pending, run): ...

    with pytest.raises(TypeError, match="does not implement judges.engines.Engine"):
        register_engine(NoFlags())
    assert "no-flags" not in engine_names()
