"""The judge labels files and the sealed key each have one reader (issue #27).

``samples.tables`` reads them as typed records (``JudgeLabel``, ``KeyEntry``) with one set
of error messages; every other stage keeps only its view. Two checks hold that:

- an AST scan over the five packages fails when code outside ``samples/tables.py`` hands one
  of those files (``StudyLayout.key``, ``judge_labels``, ``judge_label_log``,
  ``judge_label_files()``, the runner's ``paths.labels``/``paths.label_log``, or a name bound
  from them) to anything but a function known not to parse it (a hash, an existence test,
  a relative name) or the reader and its views, or calls ``open``/``read_text``/``read_bytes``
  on it;
- the views give, on real study folders, the rows a plain JSON reading of the file gives
  (the way the three old readers read them), so moving to one reader lost or changed no row.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("samples", "judges", "annotate", "agreement", "apps")
READER = "samples/tables.py"

# What names the two tables' paths: StudyLayout attributes (``.key`` only on a layout), the runner's paths.
LAYOUT_ATTRIBUTES = frozenset({"key", "judge_labels", "judge_label_log"})
LAYOUT_METHODS = frozenset({"judge_label_files"})
RUN_PATH_ATTRIBUTES = frozenset({"labels", "label_log"})
# Callees that take such a path without parsing its rows: the reader, its views, and path/hash helpers.
NOT_PARSING = frozenset({
    "judge_label_rows", "key_entries",  # the one reader
    "read_judge_labels", "read_label_rows", "read_labels", "current_labels", "LabelStore",  # views over it
    "file_sha256", "relative", "is_file", "exists", "is_dir", "stat", "unlink", "str", "Path", "len", "sorted",
    "private_dir", "write_bytes", "remove_stale_temporaries", "seed_label_log", "write_label_table",
    "publish_import", "generation_files", "_mtime", "append", "extend",
    "_sha", "sha", "rel",  # samples.sampler._sha, apps.stages.Context.sha / rel: file_sha256 and relative
})
# A whole-file byte comparison by the file's own writer: blind refuses to replace a sealed key from another
# sample or seed (labels may refer to it), comparing the bytes it would write with the bytes there.
WRITER_BYTE_CHECKS = frozenset({("samples/blind.py", "read_bytes")})
RAW_READS = frozenset({"open", "read_text", "read_bytes"})


def _layoutish(node: ast.expr) -> bool:
    """``layout``, ``self.layout``, ``ctx.layout``: an expression naming a StudyLayout."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name.endswith("layout") or name in {"names"}


def _is_source(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        if node.attr in LAYOUT_ATTRIBUTES and _layoutish(node.value):
            return True
        if node.attr in RUN_PATH_ATTRIBUTES and isinstance(node.value, ast.Name) and node.value.id == "paths":
            return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in LAYOUT_METHODS and _layoutish(node.func.value)
    return False


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


class _Scan(ast.NodeVisitor):
    """Per function: names bound from a table path (assignment, for target, comprehension), then the calls
    that receive one."""

    def __init__(self, relative: str) -> None:
        self.relative = relative
        self.hits: list[tuple[int, str]] = []
        self.tainted: set[str] = set()
        self.inside = False

    def _carries(self, node: ast.AST | None) -> bool:
        """The expression is a table path or a collection of them (not a string that merely mentions one)."""
        if node is None:
            return False
        if _is_source(node) or (isinstance(node, ast.Name) and node.id in self.tainted):
            return True
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self._carries(e) for e in node.elts)
        if isinstance(node, ast.Starred):
            return self._carries(node.value)
        if isinstance(node, ast.IfExp):
            return self._carries(node.body) or self._carries(node.orelse)
        if isinstance(node, ast.BinOp):  # a list concatenated with the key
            return self._carries(node.left) or self._carries(node.right)
        return False

    def _bind(self, target: ast.AST) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.tainted.add(node.id)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.inside:  # the outermost function's bindings already cover its nested functions
            self.generic_visit(node)
            return
        self.inside, self.tainted = True, set()
        # bindings first (a loop variable is used in its body, a comprehension's before its `for`); twice, so a
        # name bound from a name bound from a path is found whatever the order of the walk
        nodes = list(ast.walk(node))
        for _ in range(2):
            for child in nodes:
                if isinstance(child, ast.Assign) and self._carries(child.value):
                    for target in child.targets:
                        self._bind(target)
                elif isinstance(child, (ast.AnnAssign, ast.AugAssign)) and self._carries(child.value):
                    self._bind(child.target)
                elif isinstance(child, (ast.For, ast.comprehension)) and self._carries(child.iter):
                    self._bind(child.target)
        self.generic_visit(node)
        self.inside, self.tainted = False, set()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        name = _callee(node)
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if name in RAW_READS and self._carries(receiver) and (self.relative, name) not in WRITER_BYTE_CHECKS:
            self.hits.append((node.lineno, f"{name}() on a table path"))
        elif name in RAW_READS and name == "open" and receiver is None and node.args and self._carries(node.args[0]):
            self.hits.append((node.lineno, "open() of a table path"))
        elif name not in NOT_PARSING and name not in RAW_READS:
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if any(self._carries(a) for a in arguments):
                self.hits.append((node.lineno, f"{name}() given a table path"))
        self.generic_visit(node)


def scan_source(source: str, relative: str = "x.py") -> list[tuple[int, str]]:
    scanner = _Scan(relative)
    scanner.visit(ast.parse(source))
    return sorted(scanner.hits)


def scan() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative != READER and (hits := scan_source(path.read_text(encoding="utf-8"), relative)):
                out[relative] = hits
    return out


def test_the_scan_sees_each_way_of_reading_a_table() -> None:
    source = '''
def a(layout):
    for _, line in iter_jsonl_lines(layout.judge_labels):
        pass

def b(ctx):
    return json_objects(ctx.layout.key)

def c(layout):
    for path in layout.judge_label_files():
        rows = read_rows(path, ("unit_id",))

def d(layout):
    text = layout.key.read_text()

def e(paths):
    handle = open(paths.label_log)

def f(layout):
    files = [layout.key, *layout.judge_label_files()]
    return [_count_by(p, "kind") for p in files]

def fine(layout, task):
    sha = file_sha256(layout.key)
    if not layout.judge_labels.is_file():
        raise InputError(f"{layout.judge_labels}: missing")
    cached.get(task.key)  # a cache key, not the sealed key
    return [row for _, row in judge_label_rows(layout.judge_labels)], layout.relative(layout.key)
'''
    assert scan_source(source) == [(3, "iter_jsonl_lines() given a table path"), (7, "json_objects() given a table path"),
                                   (11, "read_rows() given a table path"), (14, "read_text() on a table path"),
                                   (17, "open() of a table path"), (21, "_count_by() given a table path")]


def test_only_samples_tables_reads_the_judge_labels_and_the_sealed_key() -> None:
    found = scan()
    where = [f"{path}:{line}: {what}" for path, hits in found.items() for line, what in hits]
    assert not where, ("read the judge labels and the sealed key through samples.tables "
                       "(judge_label_rows, key_entries):\n" + "\n".join(where))


# --- the views give the file's rows --------------------------------------------------------------------


def _plain_rows(path: Path) -> list[dict]:
    """The file read as plain JSON lines, as the old readers did (an independent reading of the same bytes)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- the views give the file's rows --------------------------------------------------------------------

UNSCORED = "(unscored)"


def _plain_rows(path: Path) -> list[tuple[int, dict]]:
    """(line, row) of the file read as plain JSON lines, as the old hand readers did: an independent reading."""
    return [(number, json.loads(line)) for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if line.strip()]


@pytest.fixture(scope="module")
def offline_study(tmp_path_factory, shared) -> Path:
    """`accord run` on the offline study of tests/study/test_run_offline.py (real responses, two rule judges)
    up to where people label: judge labels, their log and the sealed key written by the real stages."""
    from apps.cli import main
    from tests.study.test_run_offline import PLAN, STUDY

    folder = tmp_path_factory.mktemp("one_reader")
    data = shared / "data" / "aggarwal_calibration" / "data" / "scramfull_12models.json"
    (folder / "plan.toml").write_text(PLAN, encoding="utf-8")
    study = folder / "study.toml"
    study.write_text(STUDY.format(data=data, policy=REPO / "data" / "policies" / "screening.toml"),
                     encoding="utf-8")
    assert main(["run", str(study), "--json"]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def mad_study(tmp_path_factory, shared) -> Path:
    """The real MAD slice of MAST as a study folder (identify units, first turns absent, one judge)."""
    from tests.agreement.test_study_io import write_mad_study

    folder = tmp_path_factory.mktemp("one_reader_mad")
    assert write_mad_study(folder, shared) > 0
    return folder


@pytest.fixture(params=["offline", "mad"])
def study(request) -> Path:
    return request.getfixturevalue(f"{request.param}_study")


def test_each_view_gives_the_judge_label_rows_of_the_file(study) -> None:
    from agreement.study_io import read_judge_labels
    from judges.tables import read_label_rows
    from samples.layout import StudyLayout
    from samples.sampler import read_judge_labels as sampler_labels

    layout = StudyLayout.of(study)
    paths = [p for p in (layout.judge_labels, layout.judge_label_log) if p.is_file()]
    assert layout.judge_labels in paths
    for path in paths:
        plain = _plain_rows(path)
        assert plain, path
        judges = sorted({row["judge"] for _, row in plain})
        # the sampler's strata: sample 0 per judge, unscored as its own value
        expected: dict[str, dict[str, tuple[str, int | None]]] = {j: {} for j in judges}
        for _, row in plain:
            if row.get("sample_index", 0) == 0:
                expected[row["judge"]][row["unit_id"]] = (row["label"] if row["label"] is not None else UNSCORED,
                                                          row.get("first_turn"))
        assert sampler_labels(path, judges) == expected
        # the runner's table: the last row per key, and every row counted
        table, count = read_label_rows(path)
        last = {(row["unit_id"], row["judge"], row.get("sample_index", 0)): row for _, row in plain}
        assert count == len(plain) and sorted(table) == sorted(last)
        for key, row in last.items():
            assert {name: getattr(table[key], name) for name in row} == row
        if path == layout.judge_labels:  # the table (the log may repeat a key: later rows replace earlier ones)
            frame = read_judge_labels(layout, [path])
            assert len(frame) == len(plain)
            assert frame["source_line"].tolist() == [number for number, _ in plain]
            assert set(frame["source_file"]) == {layout.relative(path)}
            for (_, row), got in zip(plain, frame.to_dict("records"), strict=True):
                assert {name: None if got[name] != got[name] else got[name] for name in row} == row


def test_each_view_gives_the_sealed_key_rows_of_the_file(study) -> None:
    from agreement.study_io import read_key
    from samples.layout import StudyLayout
    from samples.sampler import labelled_units
    from samples.tables import key_entries

    layout = StudyLayout.of(study)
    plain = _plain_rows(layout.key)
    assert plain
    entries = list(key_entries(layout.key))
    assert [(number, entry.model_dump(mode="json")) for number, entry in entries] == plain
    frame = read_key(layout)
    assert frame["source_line"].tolist() == [number for number, _ in plain]
    assert frame.drop(columns="source_line").to_dict("records") == [row for _, row in plain]
    # --exclude-labelled: units of tasks with a human label, joined through the key
    unit_of = {row["task_id"]: row["unit_id"] for _, row in plain}
    labelled = {unit_of[row["task_id"]] for path in layout.human_label_files() if path.is_file()
                for _, row in _plain_rows(path) if row["task_id"] in unit_of}
    assert labelled_units(study) == labelled


@pytest.mark.parametrize("bad,said", [
    ('"parse_status": "maybe"', "field 'parse_status': Input should be 'ok' or 'unscored'"),
    ('"latency_s": NaN', "field 'latency_s': Input should be a finite number"),  # JSON has no NaN
])
def test_a_bad_row_reads_the_same_in_every_view(tmp_path, bad, said) -> None:
    """One message for one mistake, whichever stage reads the file: file:line, the field, what it must be."""
    from agreement.study_io import read_judge_labels
    from judges.tables import read_label_rows
    from samples.errors import InputError
    from samples.layout import StudyLayout
    from samples.sampler import read_judge_labels as sampler_labels

    layout = StudyLayout.of(tmp_path)
    layout.judge_labels.parent.mkdir(parents=True)
    good = {"unit_id": "u1", "judge": "j", "label": "yes", "parse_status": "ok", "fingerprint": "fp"}
    second = json.dumps({**good, "unit_id": "u2"})[:-1] + ", " + bad + "}"
    layout.judge_labels.write_text(json.dumps(good) + "\n" + second + "\n", encoding="utf-8")
    said = f"{layout.judge_labels}:2: not a JudgeLabel row ({said})"
    for read in (lambda: sampler_labels(layout.judge_labels, ["j"]), lambda: read_label_rows(layout.judge_labels),
                 lambda: read_judge_labels(layout, [layout.judge_labels])):
        with pytest.raises(InputError) as caught:
            read()
        assert said in str(caught.value) and str(caught.value).count("not a JudgeLabel row") == 1


def test_the_one_reader_refuses_special_files_by_type_and_names_a_missing_file(tmp_path):
    """The reader opens through the same refuse-by-type rule as every other user file: a FIFO given as a
    judge labels file or sealed key would block the open forever (no writer ever comes)."""
    import os

    from samples import InputError, judge_label_rows, key_entries

    fifo = tmp_path / "labels.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"JudgeLabel file is a named pipe \(FIFO\), not a regular file"):
        list(judge_label_rows(fifo))
    with pytest.raises(InputError, match=r"key\.jsonl: KeyEntry file not found"):
        list(key_entries(tmp_path / "key.jsonl"))
