"""Third-party plugins through the ``accord.plugins`` entry-point group (issue #27).

A real installed distribution, as pip would leave it: a package folder and its ``.dist-info`` with an
``entry_points.txt``, on a temporary sys.path entry of a fresh ``accord`` process (``pip install -e``
into a virtualenv would take minutes for the same metadata). The plugin registers a provider and a
unit kind on import; the CLI finds both through the registries alone, judges units of the new kind
with the new provider, and a plugin that fails to import is one error line naming its entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from samples.registry import PLUGIN_GROUP, Registry, load_plugins
from tests.judges.units import escalate_unit

REPO = Path(__file__).resolve().parents[1]

PLUGIN = '''
"""accord_shout: a unit kind judged on its upper-cased text, and a provider that answers from it."""

from dataclasses import dataclass

from judges.providers.base import Completion, register_provider
from samples.kinds import AnnotatorView, Section, register_kind


@dataclass(frozen=True, kw_only=True)
class Shout:
    name: str = "shout"
    scheme: str = "escalate"
    first_turn: str = "absent"
    codebook: str = "escalate"
    question: str = ""
    labelstudio_config: str = "escalate_final"
    needs_context: bool = False
    placeholders: tuple = ("text", "shouted")
    default_template: str = "{shouted}"

    def cut(self, source):
        return source.no_final() or [{"text": source.final_text}]

    def judge_fields(self, unit):
        return {"text": unit.text, "shouted": unit.text.upper()}

    def annotator_view(self, task):
        return AnnotatorView(caption="", sections=(Section(heading="", text=task.text.upper()),))


class Listener:
    """YES when the message it is sent shouts DISAGREE (only the kind's upper-cased field does)."""

    name = "listener"
    cacheable = True

    def __init__(self, config):
        self.config = config

    def build_request(self, *, model, system, user, params, output_kind, sample_index, unit):
        return {"provider": self.name, "model": model, "user": user, "sample_index": sample_index}

    async def complete(self, request):
        return self.completion_from_raw({"text": "YES" if "DISAGREE" in request["user"] else "NO"})

    def completion_from_raw(self, raw):
        return Completion(text=raw["text"], truncated=False, input_tokens=None, output_tokens=None, raw=dict(raw))

    async def aclose(self):
        return None


register_kind(Shout())
register_provider("listener", Listener, params=("temperature",))
'''

PROMPT = '''
name = "shout-escalate"
version = "1"
scheme = "escalate"
output = "yes_no"
unit_kinds = ["shout"]
source = "tests/test_plugins.py"
system = "Reply YES or NO."
'''


def install(site: Path, name: str, module: str, source: str) -> None:
    """A distribution ``name`` whose entry point ``module`` is in the accord.plugins group, as pip installs it."""
    (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{name} = {module}\n", encoding="utf-8")


def accord(site: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)])}
    code = "import sys; from apps.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "accord-shout", "accord_shout", PLUGIN)
    return site


def test_an_installed_plugin_registers_a_provider_and_a_unit_kind_used_through_the_cli(site, tmp_path) -> None:
    listed = accord(site, "judge", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "listener" in json.loads(listed.stdout)["providers"]

    agree = "The archive gives 1971 and the encyclopedia 1969; the sources disagree."
    units = [escalate_unit("t1", agree), escalate_unit("t2", "The bridge opened in 1971.")]
    # The built-in kind's units, re-kinded: only the plugin makes "shout" a unit kind.
    rows = [{**unit.model_dump(mode="json", exclude_none=True), "kind": "shout", "unit_id": f"s{i}"}
            for i, unit in enumerate(units)]
    units_file = tmp_path / "units.jsonl"
    units_file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    prompt = tmp_path / "shout-escalate.toml"
    prompt.write_text(PROMPT, encoding="utf-8")
    study = tmp_path / "study"
    study.mkdir()

    done = accord(site, "judge", "run", "--study", str(study), "--units", str(units_file),
                  "--judge", f"{prompt}@listener:ears", "--param", "temperature=0", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert [(j["judge"], j["ok"], j["calls"]) for j in summary["judges"]] == [("shout-escalate@listener:ears", 2, 2)]
    labels = {row["unit_id"]: row["label"]
              for row in map(json.loads, (study / "judges" / "labels.jsonl").read_text().splitlines())}
    # "disagree" reaches the provider upper-cased: the plugin kind's judge_fields and default template were used.
    assert labels == {"s0": "yes", "s1": "no"}

    # Units of the plugin's kind cut by `accord ingest` (its cut rule: the final answer) and judged from the study.
    ingested = tmp_path / "ingested"
    cut = accord(site, "ingest", str(REPO / "data" / "ise_example.jsonl"), "--adapter", "ise", "--study",
                 str(ingested), "--kinds", "shout", "--json")
    assert cut.returncode == 0, cut.stderr
    rows = [json.loads(line) for line in (ingested / "units.jsonl").read_text().splitlines()]
    trajectories = [json.loads(line) for line in (ingested / "trajectories.jsonl").read_text().splitlines()]
    assert rows and {row["kind"] for row in rows} == {"shout"} and len(rows) <= len(trajectories)
    judged = accord(site, "judge", "run", "--study", str(ingested), "--judge", f"{prompt}@listener:ears", "--json")
    assert judged.returncode == 0, judged.stderr
    given = {row["unit_id"]: row["label"]
             for row in map(json.loads, (ingested / "judges" / "labels.jsonl").read_text().splitlines())}
    assert given == {row["unit_id"]: "yes" if "DISAGREE" in row["text"].upper() else "no" for row in rows}

    # The provider's own parameter schema: a parameter it did not declare is refused, naming what it allows.
    refused = accord(site, "judge", "run", "--study", str(study), "--units", str(units_file),
                     "--judge", f"{prompt}@listener:ears", "--param", "top_p=0.5", "--json")
    assert refused.returncode == 2
    assert "params ['top_p'] not allowed; allowed: ['temperature']" in refused.stderr

    # Without the plugin neither exists: nothing else made them a provider and a unit kind.
    bare = accord(tmp_path / "empty", "judge", "run", "--study", str(study), "--units", str(units_file),
                  "--judge", f"{prompt}@listener:ears", "--json")
    assert bare.returncode == 2 and "unknown provider 'listener'; known: ['anthropic', 'local', 'openai', 'rule']" \
        in bare.stderr
    bare = accord(tmp_path / "empty", "judge", "run", "--study", str(study), "--units", str(units_file),
                  "--judge", "rule:always-answer", "--json")
    assert bare.returncode == 2 and "unknown unit kind 'shout'" in bare.stderr


def test_a_failing_plugin_is_one_error_naming_its_entry_point(tmp_path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "accord-broken", "accord_broken", "raise RuntimeError('missing licence file')\n")
    done = accord(site, "judge", "list", "--json")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "accord judge: error: plugin 'accord-broken' (entry point 'accord_broken' in group 'accord.plugins') failed to load: "
        "RuntimeError: missing licence file"]


def test_one_registry_rule_for_every_extension_point() -> None:
    shapes = Registry("shape")
    square, other = object(), object()
    assert shapes.register("square", square) is square
    assert shapes.register("square", square) is square  # the same object again: no conflict
    with pytest.raises(ValueError, match=r"shape 'square' is already registered \(<object object at .*\); "
                                         r"refusing <object object at"):
        shapes.register("square", other)
    shapes.register("circle", other)
    assert list(shapes) == ["circle", "square"] and shapes.names() == ["circle", "square"]
    with pytest.raises(ValueError, match=r"^policy: unknown shape 'cube'; known: \['circle', 'square'\]$"):
        shapes.get_one("cube", where="policy")
    shapes.unregister("circle")
    assert "circle" not in shapes and len(shapes) == 1
    load_plugins()  # this process has no accord.plugins entry points beyond the project's own: a no-op


ENGINE_PLUGIN = '''
"""accord_inline: an engine answering every call in this process, and a provider speaking its own wire API."""

import asyncio

from judges.engines import register_engine
from judges.providers.base import Completion, register_provider


class Inline:
    name = "inline"
    remote = False
    flags = {}  # no `accord judge run` flags of its own

    def options(self, where, table):
        return None

    def check(self, judges):
        return None

    def describe(self, spec):
        return {"engine": self.name}

    def call_all(self, pending, run):
        for task, fingerprint in pending:
            completion = asyncio.run(run.providers[task.spec.name].complete(task.request))
            run.record(task, fingerprint, completion, None, 0.0)


class Telegraph:
    """YES when the unit's text says the sources disagree."""

    name = "telegraph"
    cacheable = True

    def __init__(self, config):
        self.config = config

    def build_request(self, *, model, system, user, params, output_kind, sample_index, unit):
        return {"provider": self.name, "api": self.config.api, "user": user, "sample_index": sample_index}

    async def complete(self, request):
        return self.completion_from_raw({"text": "YES" if "disagree" in request["user"] else "NO"})

    def completion_from_raw(self, raw):
        return Completion(text=raw["text"], truncated=False, input_tokens=None, output_tokens=None, raw=dict(raw))

    async def aclose(self):
        return None


register_engine(Inline())
register_provider("telegraph", Telegraph, apis=("morse",), params=("temperature",))
'''

ESCALATE_PROMPT = '''
name = "plain-escalate"
version = "1"
scheme = "escalate"
output = "yes_no"
unit_kinds = ["escalate_final"]
source = "tests/test_plugins.py"
system = "Reply YES or NO."
'''


def test_a_plugin_engine_and_wire_api_are_offered_and_accepted_by_the_cli(tmp_path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "accord-inline", "accord_inline", ENGINE_PLUGIN)
    shown = accord(site, "judge", "run", "--help")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "every judge of the run: inline, local, ray" in text  # the engine registry's names, the plugin's too
    assert "local provider: anthropic, morse, openai" in text  # every registered provider's wire APIs

    units = [escalate_unit("t1", "The archive and the encyclopedia disagree on the year."),
             escalate_unit("t2", "The bridge opened in 1971.")]
    units_file = tmp_path / "units.jsonl"
    units_file.write_text("".join(unit.model_dump_json(exclude_none=True) + "\n" for unit in units), encoding="utf-8")
    prompt = tmp_path / "plain-escalate.toml"
    prompt.write_text(ESCALATE_PROMPT, encoding="utf-8")
    study = tmp_path / "study"
    study.mkdir()
    argv = ("judge", "run", "--study", str(study), "--units", str(units_file), "--judge", f"{prompt}@telegraph:key",
            "--api", "morse", "--engine", "inline", "--json")
    done = accord(site, *argv)
    assert done.returncode == 0, done.stderr
    labels = [json.loads(line) for line in (study / "judges" / "labels.jsonl").read_text().splitlines()]
    assert sorted((row["unit_id"], row["label"]) for row in labels) == sorted(
        [(units[0].unit_id, "yes"), (units[1].unit_id, "no")])
    runs = [json.loads(line) for line in (study / "judges" / "runs.jsonl").read_text().splitlines()]
    assert "inline" in json.dumps(runs)  # the run log records the plugin engine the calls went through

    # Without the plugin neither value is a choice: argparse refuses them naming the registries' names.
    bare = accord(tmp_path / "empty", *argv)
    assert bare.returncode == 2
    assert "argument --api: invalid choice: 'morse' (choose from 'anthropic', 'openai')" in bare.stderr
    bare = accord(tmp_path / "empty", *argv[:-5], "--engine", "inline")
    assert bare.returncode == 2 and "argument --engine: invalid choice: 'inline' (choose from 'local', 'ray')" \
        in bare.stderr
    # A plugin that fails to load while a registry's choices are read is one error line, not a traceback.
    broken = tmp_path / "broken"
    broken.mkdir()
    install(broken, "accord-broken", "accord_broken", "raise RuntimeError('missing licence file')\n")
    refused = accord(broken, *argv)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "accord judge: error: plugin 'accord-broken' (entry point 'accord_broken' in group 'accord.plugins') failed "
        "to load: RuntimeError: missing licence file"]
