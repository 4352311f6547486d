"""The demo study, reduced for CI, run once per test session.

`accord run` on the real local models is the slowest step of the suite (minutes), and
two test areas need its output: the end-to-end demo test checks every artefact, and
the README test runs the researcher, auditor and annotator walkthroughs on a copy of
it (`studies/demo` in its scratch mirror). Nothing here writes into the checkout.

The reduction keeps every stage, both model families and every judge, and changes only how
much text the models read: the closed-book source keeps its one item per EHQ category (EHQ
scores need the four), and the agent source keeps the two categories whose passages are
shortest (PCQ and HNQ). The agent's trajectories and the Identify/Escalate/correctness judges
reading them were 90% of the demo's model tokens; on all four categories the session's demo
run took about 470 CPU-seconds of llama-server time alone, the largest single cost of `make test`.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo" / "study.toml"


@dataclass(frozen=True, kw_only=True)
class DemoStudy:
    study_file: Path
    output: Path
    exit_code: int
    result: dict


AGENT_CATEGORIES = ("PCQ", "HNQ")
"""The EHQ categories the reduced demo's agent source keeps (the two with the shortest passages)."""


def reduced_demo(folder: Path) -> Path:
    """The shipped demo study with one item per category, the agent on two categories, fewer resamples (CI time)."""
    text = DEMO.read_text(encoding="utf-8")
    for name in ("items.jsonl", "plan.toml"):  # a snapshot: the run's inputs stay fixed
        (folder / name).write_bytes((DEMO.parent / name).read_bytes())
    instances = [line for line in (DEMO.parent / "instances.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
                 if json.loads(line)["category"] in AGENT_CATEGORIES]
    assert {json.loads(line)["category"] for line in instances} == set(AGENT_CATEGORIES)
    (folder / "instances.jsonl").write_text("".join(instances), encoding="utf-8")
    text = text.replace('"../policies/strict.toml"', json.dumps(str(REPO / "data" / "policies" / "strict.toml")))
    text, n_sources = re.subn(r"^items_per_category = \d+$", "items_per_category = 1", text, flags=re.MULTILINE)
    assert n_sources == 2, "the demo study's two generated sources each set items_per_category"
    text = re.sub(r"^n_resamples = 2000$", "n_resamples = 200", text, flags=re.MULTILINE)
    text = re.sub(r"^n_permutations = 2000$", "n_permutations = 200", text, flags=re.MULTILINE)
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run_study_json(*argv: str) -> tuple[int, dict]:
    """`accord run ARGV --json` in-process, outside pytest's per-test output capture."""
    from apps.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", *argv, "--json"])
    assert code in (0, 1), err.getvalue()
    return code, json.loads(out.getvalue())


@pytest.fixture(scope="session")
def demo_study(tmp_path_factory, llama_server) -> DemoStudy:
    """The reduced demo study after one `accord run` on the session's llama-server. Read it, do not change it."""
    folder = tmp_path_factory.mktemp("demo")
    study_file = reduced_demo(folder)
    output = folder / "study"
    code, result = run_study_json(str(study_file), "--output", str(output), "--base-url", llama_server.base_url)
    return DemoStudy(study_file=study_file, output=output, exit_code=code, result=result)
