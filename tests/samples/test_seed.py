"""The default seed is defined once (samples.seed) and every CLI default reads it."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

from apps.cli import _command_names
from samples.seed import DEFAULT_SEED

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("samples", "agreement", "annotate", "judges", "apps", "benchmarks", "data")


def test_the_seed_literal_appears_once_in_the_source() -> None:
    # Any integer literal equal to the seed counts, in an assignment, a default or a call.
    found = []
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and type(node.value) is int and node.value == DEFAULT_SEED:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == ["samples/seed.py:7"]


def test_every_seed_option_defaults_to_the_one_seed() -> None:
    # A command without a default (agree: the policy's seed, else DEFAULT_SEED) must say so in its help.
    seen = 0
    for name in _command_names():
        parser = argparse.ArgumentParser()
        importlib.import_module(f"apps.commands.{name.replace('-', '_')}").add_arguments(parser)
        for action in parser._actions:
            if "--seed" in action.option_strings:
                seen += 1
                assert action.default in (DEFAULT_SEED, None), (name, action.default)
                assert action.default == DEFAULT_SEED or "DEFAULT_SEED" in (action.help or ""), name
    assert seen >= 5
