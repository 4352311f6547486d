"""Every README command block marked `<!-- runnable ... -->` runs as written.

Blocks run with bash (errexit, pipefail) from a scratch mirror of the repository
(symlinks to its top-level entries, a fresh `studies/` and `.run/`, and `../shared`
pointing at the shared data), so they write nothing into the checkout and cannot
reuse an earlier run. The marker's options say what a block needs:

- `demo`: `studies/demo` holds a copy of the demo study after `make demo` (the
  reduced session run of tests/support/demo.py), as the walkthroughs assume;
- `labelstudio`: `ACCORD_LS_URL`, `ACCORD_LS_TOKEN` and `ACCORD_LS_ADMIN_PASSWORD` name a
  running Label Studio server (the session's), as the walkthrough tells the reader to set them;
- `annotate=STUDY`: with `labelstudio`, the block holds the line `# annotators label in Label
  Studio now`. The test runs the script up to that line, then acts as the people: every
  annotator of the study folder STUDY labels every task of their projects through Label
  Studio's API with their own token (their `annotators` entry in
  `labels/labelstudio_annotators.json`, never the admin's), each the label its response was
  written as (`written_as` in the trajectory's metadata); then it runs the rest, which must
  pull exactly those labels into the study;
- `exit=N`: the block's expected exit status (a gate that rejects exits 1);
- `serves=URL`: the block ends in a server; it must answer URL, then it is stopped;
- `signin=NAME`: with `serves`, the coding app's block printed NAME's token (`accord
  annotators add`): NAME signs in with it in chromium and labels a unit, which must
  reach the study's store;
- `quotes`: the paragraph after the block quotes figures as `estimate [low, high]`; each
  must be printed, exactly so, by the block;
- `prints`: the phrases in double quotes in the block's comments, and in the paragraph after it
  outside code spans, are what the block prints; each must be printed, exactly so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from agreement.study_io import load_study
from judges.local_server import stop_process_group
from samples.layout import StudyLayout
from tests.conftest import REPO
from tests.support.servers import wait_until_answering

_BLOCK = re.compile(r"<!-- runnable(?::([^>]*))? -->\s*\n```sh\n(.*?)```\n\n?((?:[^\n]+\n)*)", re.S)
_OPTIONS = {"demo", "labelstudio", "annotate", "exit", "serves", "signin", "quotes", "prints"}
_FIGURE = re.compile(r"-?\d+\.\d+ \[-?\d+\.\d+, -?\d+\.\d+\]")
_QUOTED = re.compile(r'"([^"\n]+)"')
SERVE_TIMEOUT_S = 120
PEOPLE_LABEL = "# annotators label in Label Studio now\n"


@dataclass(frozen=True, kw_only=True)
class Block:
    script: str
    demo: bool
    labelstudio: bool
    exit: int
    serves: str | None
    signin: str | None
    annotate: str | None
    quotes: tuple[str, ...] = ()
    """Figures the paragraph after the block quotes (``quotes``), each to be found in the block's output."""
    prints: tuple[str, ...] = ()
    """Phrases the block's comments and the paragraph after it quote as its output (``prints``)."""


def parse_options(text: str) -> dict[str, str]:
    options = dict(item.partition("=")[::2] for item in text.split())
    unknown = set(options) - _OPTIONS
    assert not unknown, f"README runnable marker has unknown options {sorted(unknown)}; allowed: {sorted(_OPTIONS)}"
    return options


def runnable_blocks() -> list[Block]:
    blocks = []
    for options_text, script, after in _BLOCK.findall((REPO / "README.md").read_text(encoding="utf-8")):
        options = parse_options(options_text or "")
        paragraph = re.split(r"\n(?=- )", after)[0]  # a list's first item, or the paragraph
        assert "annotate" not in options or "labelstudio" in options, "README runnable marker: annotate needs labelstudio"
        blocks.append(Block(script=script, demo="demo" in options, labelstudio="labelstudio" in options,
                            exit=int(options.get("exit") or 0), serves=options.get("serves") or None,
                            signin=options.get("signin") or None, annotate=options.get("annotate") or None,
                            quotes=tuple(_FIGURE.findall(paragraph)) if "quotes" in options else (),
                            prints=printed_phrases(script, paragraph) if "prints" in options else ()))
    return blocks


def printed_phrases(script: str, paragraph: str) -> tuple[str, ...]:
    """The double-quoted phrases of the script's comments and of the paragraph's prose (code spans left out)."""
    comments = [line.partition("#")[2] for line in script.splitlines() if "#" in line]
    prose = re.sub(r"`[^`]*`", "", paragraph)
    phrases = tuple(_QUOTED.findall("\n".join([*comments, prose])))
    assert phrases, "README runnable marker: prints, but the block's comments and paragraph quote nothing"
    return phrases


def _mirror(tmp_path: Path, shared: Path) -> Path:
    mirror = tmp_path / "repo"
    mirror.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in {"studies", ".run", ".git"}:
            (mirror / entry.name).symlink_to(entry)
    (mirror / ".run").mkdir()
    (tmp_path / "shared").symlink_to(shared.resolve())
    return mirror


def _token(process: subprocess.Popen, name: str) -> str:
    """The token `accord annotators add NAME` printed (the line after its heading), read from the block's stdout."""
    lines = []
    while True:
        line = process.stdout.readline()
        assert line, f"the block printed no token for {name}: {lines}"
        lines.append(line.rstrip("\n"))
        if len(lines) >= 2 and lines[-2].startswith(f"token for {name} "):
            return lines[-1].strip()


def _sign_in_and_label(block: Block, process: subprocess.Popen, mirror: Path) -> None:
    """NAME signs in to the served coding app in chromium with the printed token and labels the first unit."""
    import time

    from annotate.store import Store
    from tests.annotate.test_browser import sign_in
    from tests.support.browser import browser

    token = _token(process, block.signin)
    base = block.serves.removesuffix("/_stcore/health")
    store = Store.open(mirror / "studies" / "demo" / "labels" / "store.sqlite")
    try:
        before = len([r for r in store.labels() if r.annotator == block.signin])
        with browser() as context:
            page = context.new_page()
            sign_in(page, base, token)
            page.keyboard.press("2")  # the second label of any scheme needs no first turn
            page.keyboard.press("s")
            deadline = time.monotonic() + 30
            while len([r for r in store.labels() if r.annotator == block.signin]) == before:
                assert time.monotonic() < deadline, f"{block.signin}'s label never reached the store"
                time.sleep(0.2)
    finally:
        store.close()


def _label_in_labelstudio(url: str, root: Path) -> dict[tuple[str, str], str]:
    """Each annotator labels every task of their projects with their own token, each as its response was written.

    Returns (annotator, task id) -> the label given.
    """
    from label_studio_sdk import LabelStudio

    from annotate.labelstudio import load_labelstudio_credentials

    layout = StudyLayout(root)
    written = {t["id"]: t["metadata"]["written_as"] for t in map(json.loads, layout.trajectories.read_text().splitlines())}
    trajectory = {k["task_id"]: k["trajectory_id"] for k in map(json.loads, layout.key.read_text().splitlines())}
    state = json.loads(layout.labelstudio_state.read_text())
    given = {}
    for name, login in load_labelstudio_credentials(root).annotators.items():
        client = LabelStudio(base_url=url, api_key=login.api_token)
        for project in state["annotators"][name]["projects"].values():
            for task_id, ls_task in project["tasks"].items():
                label = given[name, task_id] = written[trajectory[task_id]]
                client.annotations.create(id=ls_task, result=[{"from_name": "label", "to_name": "display",
                                                                "type": "choices", "value": {"choices": [label]}}])
    return given


def test_readme_has_runnable_blocks() -> None:
    blocks = runnable_blocks()
    assert len(blocks) >= 6
    assert any(len(b.quotes) >= 3 for b in blocks)  # the real study's figures are checked against its output
    assert any(b.prints for b in blocks)  # and the lines a walkthrough says a command prints
    assert any(b.demo for b in blocks) and any(b.labelstudio for b in blocks) and any(b.serves for b in blocks)


def _marks(block: Block) -> list[pytest.MarkDecorator]:
    """The services a block reaches at run time (getfixturevalue, chromium), as markers for the test tiers."""
    return [mark for need, mark in ((block.demo, pytest.mark.demo), (block.labelstudio, pytest.mark.labelstudio),
                                    (block.signin, pytest.mark.browser)) if need]


@pytest.mark.parametrize("index", [pytest.param(i, marks=_marks(b)) for i, b in enumerate(runnable_blocks())])
def test_readme_block_runs(index: int, tmp_path: Path, shared: Path, request: pytest.FixtureRequest) -> None:
    block = runnable_blocks()[index]
    mirror = _mirror(tmp_path, shared)
    env = {**os.environ, "COLUMNS": "160", "ACCORD_RUN_DIR": str(mirror / ".run")}
    if block.demo:
        demo = request.getfixturevalue("demo_study")
        (mirror / "studies").mkdir()
        shutil.copytree(demo.output, mirror / "studies" / "demo")
    if block.labelstudio:
        server = request.getfixturevalue("labelstudio_server")
        env |= {"ACCORD_LS_URL": server.url, "ACCORD_LS_TOKEN": server.token, "ACCORD_LS_ADMIN_PASSWORD": server.admin_password}
    command = ["bash", "-euo", "pipefail", "-c", block.script]
    try:
        if block.serves:
            process = subprocess.Popen(command, cwd=mirror, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, start_new_session=True)
            try:
                wait_until_answering(block.serves, process, timeout=SERVE_TIMEOUT_S, what=f"README block {index}")
                if block.signin:
                    _sign_in_and_label(block, process, mirror)
            finally:
                stop_process_group(process.pid)
                _, stderr = process.communicate(timeout=60)
            assert "Traceback" not in stderr, stderr[-3000:]
            return
        if block.annotate:
            before, marker, after = block.script.partition(PEOPLE_LABEL)
            assert marker, f"README block {index} (annotate) has no line {PEOPLE_LABEL.strip()!r}"
            first = subprocess.run([*command[:-1], before], cwd=mirror, capture_output=True, text=True, timeout=900, env=env)
            assert first.returncode == 0 and "Traceback" not in first.stderr, (
                f"README block {index} before the labelling exited {first.returncode}:\n{first.stderr[-3000:]}")
            given = _label_in_labelstudio(server.url, mirror / block.annotate)
            command[-1] = after
        result = subprocess.run(command, cwd=mirror, capture_output=True, text=True, timeout=900, env=env)
        assert result.returncode == block.exit, (
            f"README block {index} exited {result.returncode}, expected {block.exit}:\n{block.script}\n"
            f"--- stderr:\n{result.stderr[-3000:]}")
        assert "Traceback" not in result.stderr
        printed = " ".join(result.stdout.split())
        missing = [figure for figure in block.quotes if figure not in printed]
        assert not missing, f"README block {index} quotes {missing}, which it does not print:\n{result.stdout[-3000:]}"
        unprinted = [phrase for phrase in block.prints if " ".join(phrase.split()) not in printed]
        assert not unprinted, (f"README block {index} says it prints {unprinted}, which it does not:\n"
                               f"{result.stdout[-3000:]}")
        if block.annotate:  # the verdict was reached on exactly the labels the people gave
            human = load_study(mirror / block.annotate).human
            assert dict(zip(zip(human["annotator"], human["task_id"]), human["label"])) == given
            assert set(human["backend"]) == {"labelstudio"}
    finally:
        # A block that failed half way must not leave a local model server behind.
        subprocess.run([str(mirror / ".venv" / "bin" / "accord"), "judges", "stop"], cwd=mirror, env=env,
                       capture_output=True, text=True, timeout=120)


# -- the seed-paper table ---------------------------------------------------------------------

_SEED_TABLE = re.compile(r"<!-- seed-table -->\n(.*?)<!-- /seed-table -->", re.S)
# A figure: a percentage, a fraction, a signed number or a decimal, not part of a name ("Table 2", "D.2").
_SEED_FIGURE = re.compile(r"(?<![\w.])(?:[+-]?\d*\.?\d+%|\d+/\d+|[+-]\d*\.?\d+|\d*\.\d+)")
_TICKS = re.compile(r"`([^`]*)`")
SEED_COMMANDS = {"Aggarwal (seed 004)": "accord run data/studies/aggarwal/study.toml"}
"""Rows whose second column quotes figures, and the command whose output tests/real/test_readme_seed_table.py
compares them with. A row that starts quoting figures adds its command here and its check there."""


@dataclass(frozen=True, kw_only=True)
class SeedRow:
    paper: str
    seeds: tuple[str, ...]
    reproduced: str
    command: str
    not_reproducible: str

    def quoted(self) -> list[str]:
        """The second column's backticked spans that hold a figure: each must be printed by the command."""
        return [span for span in _TICKS.findall(self.reproduced) if _SEED_FIGURE.search(span)]


def seed_rows() -> list[SeedRow]:
    (table,) = _SEED_TABLE.findall((REPO / "README.md").read_text(encoding="utf-8"))
    rows = []
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        assert len(cells) == 4, f"README seed table row has {len(cells)} cells, expected 4: {line}"
        paper, reproduced, command, missing = cells
        seeds = tuple(re.findall(r"\d{3}", paper.partition("(")[2]))
        assert seeds, f"README seed table: no seed number in {paper!r}"
        rows.append(SeedRow(paper=paper, seeds=seeds, reproduced=reproduced, command=command.strip("`"),
                            not_reproducible=missing))
    return rows


def test_seed_table_covers_the_five_seeds_and_quotes_only_checked_figures() -> None:
    rows = seed_rows()
    assert sorted(s for r in rows for s in r.seeds) == ["000", "001", "002", "003", "004"]
    for row in rows:
        outside = _SEED_FIGURE.findall(_TICKS.sub("", row.reproduced))
        assert not outside, f"{row.paper}: figures {outside} outside a quoted command output"
        if row.paper in SEED_COMMANDS:
            assert row.command == SEED_COMMANDS[row.paper] and len(row.quoted()) >= 3
        else:
            assert not row.quoted(), f"{row.paper}: quotes {row.quoted()}; add its command to SEED_COMMANDS"


def test_seed_table_quotes_each_paper_as_it_states_it(shared: Path) -> None:
    """Every figure in the last column appears in the seed paper's own text (shared/seeds)."""
    seeds = shared / "seeds"
    for row in seed_rows():
        text = " ".join(p.read_text(encoding="utf-8") for s in row.seeds for p in seeds.glob(f"{s}_*.txt"))
        assert text, f"{row.paper}: seed text not found under {seeds}"
        text = text.replace("\\%", "%")
        figures = _SEED_FIGURE.findall(row.not_reproducible)
        missing = [f for f in figures if f not in text]
        assert not missing, f"{row.paper}: {missing} is not in the paper's text"
