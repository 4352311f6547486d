"""inspect_ai evaluation logs as a source: logs produced here by real inspect_ai runs, ingested and scored.

The tool-using run drives inspect_ai's own ``mockllm/model`` with a scripted output list
(the local models do not call tools: SmolLM2 ignores an offered ``add`` tool), so the
tool is really executed by inspect_ai, a bad call really fails its argument validation,
and a model-graded scorer really grades with its own (scripted) grader. A second run
asks the real local SmolLM2 behind llama-server three questions with no tools. Every
expectation is read back from the log independently with ``inspect_ai.log.read_eval_log``
(or written here by hand from the script), never from the adapter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from apps.cli import main
from samples.jsonl import iter_jsonl_lines
from samples.layout import StudyLayout

REPO = Path(__file__).resolve().parents[2]
# inspect_ai 0.3.285 passes tenacity a deprecated argument on every model it builds
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")


@pytest.fixture(scope="module")
def inspect_runs() -> ModuleType:
    """tests/samples/inspect_runs.py (inspect_ai and the scripted runs), imported by the tests that use it."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed: pip install 'accord[inspect]'")
    from tests.samples import inspect_runs

    return inspect_runs


@pytest.fixture(scope="module")
def tool_log(inspect_runs: ModuleType, tmp_path_factory) -> Path:
    return inspect_runs.tool_run(tmp_path_factory.mktemp("inspect-logs"), "eval")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for _, line in iter_jsonl_lines(path)]


def _trajectories(study: Path) -> dict[str, dict]:
    return {row["id"]: row for row in _rows(StudyLayout.of(study).trajectories)}


def _ingest(log: Path, study: Path, capsys) -> dict[str, dict]:
    assert main(["ingest", str(log), "--adapter", "inspect", "--study", str(study), "--json"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    assert manifest["trajectories"] == 3
    return _trajectories(study)


def test_tool_run_turns_and_tool_calls_intact(tool_log: Path, tmp_path: Path, capsys) -> None:
    from inspect_ai.log import read_eval_log

    runs = _ingest(tool_log, tmp_path / "study", capsys)
    log = read_eval_log(str(tool_log))
    assert sorted(runs) == [f"{tool_log.stem}/{s.id}" for s in log.samples]
    for sample in log.samples:
        run = runs[f"{tool_log.stem}/{sample.id}"]
        assert (run["question"], run["references"], run["dataset"]) == (sample.input, [sample.target], "addition")
        assert (run["backbone"], run["family"]) == ("model", "unknown")  # mockllm/model names no family
        assert run["metadata"]["pair"] == sample.metadata["pair"]
        assert run["metadata"]["inspect"]["model"] == "mockllm/model" and run["metadata"]["inspect"]["sample_id"] == sample.id
        # every message but the tool results (folded into their calls) is a step, in order
        kept = [(i, m) for i, m in enumerate(sample.messages) if m.role != "tool"]
        assert [(s["index"], s["role"]) for s in run["steps"]] == [(i, m.role) for i, m in kept]
        results = {m.tool_call_id: m for m in sample.messages if m.role == "tool"}
        for step, (_, message) in zip(run["steps"], kept):
            assert step["text"] == (message.text or None)
            if message.role != "assistant":
                continue
            reasoning = [c.reasoning for c in message.content if c.type == "reasoning"]
            assert step["reasoning"] == (reasoning[0] if reasoning else None)
            assert [(c["name"], c["arguments"]) for c in step["tool_calls"]] == [
                (c.function, c.arguments) for c in message.tool_calls or []]
            for call, source in zip(step["tool_calls"], message.tool_calls or []):
                answer = results[source.id]
                assert call["success"] is (answer.error is None)
                assert call["result"] == (answer.text or f"{answer.error.type}: {answer.error.message}")
        assert run["final_answer"] == sample.output.completion and run["steps"][-1]["is_final"] is True
        assert sum(s["is_final"] for s in run["steps"]) == 1 and run["truncated"] is False
    # by hand, from the script: the tool really ran, and the bad call really failed
    s0, s1 = runs[f"{tool_log.stem}/s0"], runs[f"{tool_log.stem}/s1"]
    assert s0["steps"][2]["tool_calls"] == [
        {"name": "add", "arguments": {"x": 1, "y": 2}, "result": "3", "success": True}]
    assert s0["steps"][2]["reasoning"] == "The user wants 1+2." and s0["steps"][0]["role"] == "system"
    bad, retry = s1["steps"][2]["tool_calls"][0], s1["steps"][3]["tool_calls"][0]
    assert bad["success"] is False and "'y' is a required property" in bad["result"]
    assert (retry["result"], retry["success"], s1["final_answer"]) == ("7", True, "The sum is 8")


def test_json_log_reads_like_eval_log_and_ingest_is_deterministic(inspect_runs: ModuleType, tool_log: Path,
                                                                  tmp_path: Path, capsys) -> None:
    json_log = inspect_runs.tool_run(tmp_path / "json-logs", "json")
    assert json_log.suffix == ".json"
    from_eval, from_json = _ingest(tool_log, tmp_path / "a", capsys), _ingest(json_log, tmp_path / "b", capsys)

    def content(run: dict) -> dict:  # everything but what names the run (log file, ids inspect_ai draws at random)
        return {k: v for k, v in run.items() if k not in ("id", "metadata")}

    assert sorted(map(content, from_eval.values()), key=str) == sorted(map(content, from_json.values()), key=str)
    _ingest(tool_log, tmp_path / "c", capsys)
    first, again = (StudyLayout.of(tmp_path / name).trajectories.read_bytes() for name in ("a", "c"))
    assert first == again


def test_scores_import_as_judge_labels(tool_log: Path, tmp_path: Path, capsys) -> None:
    from inspect_ai.log import read_eval_log

    study = tmp_path / "study"
    _ingest(tool_log, study, capsys)
    log = read_eval_log(str(tool_log))
    # by hand: C -> correct, I -> incorrect, 1.0 -> correct, 0 -> incorrect; 0.5 has no correctness label
    mapped = {"C": "correct", "I": "incorrect", 1.0: "correct", 0: "incorrect"}
    units = {row["trajectory_id"]: row["unit_id"] for row in (json.loads(line) for _, line in
             iter_jsonl_lines(StudyLayout.of(study).units)) if row["kind"] == "correctness"}
    for scorer_name, judge in (("model_graded_qa", "grader"), ("match", "matcher"), ("half_credit", "partial")):
        code = main(["import", "judge-labels", str(tool_log), "--format", "inspect-scores", "--study", str(study),
                     "--judge", judge, "--trajectory-column", "trajectory", "--kind-column", "kind",
                     "--output-column", "label", "--where", f"scorer={scorer_name}", "--json"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        labels = {row["unit_id"]: row for row in _rows(Path(report["written"]))}
        assert report["rows"] == 3
        for sample in log.samples:
            value = sample.scores[scorer_name].value
            label = labels[units[f"{tool_log.stem}/{sample.id}"]]
            if value in mapped:
                assert (label["label"], label["parse_status"]) == (mapped[value], "ok")
            else:
                assert label["label"] is None and label["parse_status"] == "unscored"
                assert label["unscored_reason"].startswith("wrong_format: '0.5' is not a correctness label")
    grader = {json.loads(line)["unit_id"]: json.loads(line)["label"] for _, line in
              iter_jsonl_lines(StudyLayout.of(study).imported_judge_labels_dir / "grader.jsonl")}
    # the scripted grades: C, I, C
    assert [grader[units[f"{tool_log.stem}/s{i}"]] for i in range(3)] == ["correct", "incorrect", "correct"]


def test_two_scorers_need_a_choice(tool_log: Path, tmp_path: Path, capsys) -> None:
    study = tmp_path / "study"
    _ingest(tool_log, study, capsys)
    code = main(["import", "judge-labels", str(tool_log), "--format", "inspect-scores", "--study", str(study),
                 "--judge", "j", "--trajectory-column", "trajectory", "--kind-column", "kind",
                 "--output-column", "label"])
    assert code == 2
    assert "duplicate verdicts; nothing was written" in capsys.readouterr().err
    assert not (StudyLayout.of(study).imported_judge_labels_dir / "j.jsonl").exists()
    for where, message in (("scorer=nope", "no rows with {'scorer': 'nope'}; nothing to import"),
                           ("scorer", "--where 'scorer': expected COLUMN=VALUE")):
        assert main(["import", "judge-labels", str(tool_log), "--format", "inspect-scores", "--study", str(study),
                     "--judge", "j", "--trajectory-column", "trajectory", "--kind-column", "kind",
                     "--output-column", "label", "--where", where]) == 2
        assert message in capsys.readouterr().err
    assert not (StudyLayout.of(study).imported_judge_labels_dir / "j.jsonl").exists()


def test_bad_inputs(inspect_runs: ModuleType, tmp_path: Path, capsys) -> None:  # skipped as the others without it
    not_a_log = tmp_path / "runs.json"
    not_a_log.write_text('{"a": 1}')
    assert main(["ingest", str(not_a_log), "--adapter", "inspect", "--study", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert f"{not_a_log}: not an inspect_ai evaluation log" in err and "Traceback" not in err
    assert main(["ingest", str(not_a_log), "--adapter", "inspect", "--option", "colour=red",
                 "--study", str(tmp_path / "s")]) == 2
    assert "unknown option(s) ['colour']" in capsys.readouterr().err


def test_missing_extra_names_the_install(tool_log: Path, tmp_path: Path) -> None:
    """With inspect_ai unimportable (as on an install without the extra), one line with the install hint."""
    code = ("import sys; sys.modules['inspect_ai'] = None; sys.modules['inspect_ai.log'] = None\n"
            "from apps.cli import main\n"
            f"sys.exit(main(['ingest', {str(tool_log)!r}, '--adapter', 'inspect',"
            f" '--study', {str(tmp_path / 's')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "pip install 'accord[inspect]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.llama
def test_real_local_model_run(llama_server, tmp_path: Path, capsys) -> None:
    """SmolLM2 behind llama-server, through inspect_ai's OpenAI-compatible provider, no tools."""
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed: pip install 'accord[inspect]'")
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import GenerateConfig, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    model = get_model("openai-api/local/smollm2", base_url=llama_server.base_url + "/v1", api_key="none",
                      config=GenerateConfig(temperature=0, max_tokens=24, seed=0))
    questions = [("What is 2 + 2? Answer with a number.", "4"), ("What is the capital of France?", "Paris"),
                 ("Name the colour of the clear daytime sky.", "blue")]
    task = Task(dataset=[Sample(id=f"q{i}", input=q, target=a) for i, (q, a) in enumerate(questions)],
                solver=[generate()], scorer=includes(), name="trivia")
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    path, study = Path(log.location), tmp_path / "study"
    runs = _ingest(path, study, capsys)
    log = read_eval_log(str(path))
    for sample in log.samples:
        run = runs[f"{path.stem}/{sample.id}"]
        assert (run["backbone"], run["family"], run["dataset"]) == ("smollm2", "huggingface", "trivia")
        assert [s["role"] for s in run["steps"]] == [m.role for m in sample.messages] == ["user", "assistant"]
        assert run["final_answer"] == sample.output.completion and run["question"] == sample.input
    assert main(["import", "judge-labels", str(path), "--format", "inspect-scores", "--study", str(study), "--judge",
                 "includes", "--trajectory-column", "trajectory", "--kind-column", "kind", "--output-column", "label",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected_ok = sum(s.scores["includes"].value in ("C", "I") for s in log.samples)
    assert (report["rows"], report["ok"]) == (3, expected_ok)


def test_epochs_and_limits(inspect_runs: ModuleType, tmp_path: Path, capsys) -> None:
    """Each epoch is its own run (ids end /epoch<n>, scores match per epoch); a run cut by a message limit
    has no final answer and is truncated."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, use_tools

    MOCK, USAGE, add = inspect_runs.MOCK, inspect_runs.USAGE, inspect_runs.add
    samples = [Sample(id="p", input="What is 1 + 2?", target="3"), Sample(id="q", input="What is 2 + 2?", target="5")]
    replies = [ModelOutput(model=MOCK, usage=USAGE, choices=[ChatCompletionChoice(
        message=ChatMessageAssistant(content="3", model=MOCK), stop_reason="stop")]) for _ in range(4)]
    [log] = inspect_eval(Task(dataset=samples, solver=[generate()], scorer=match(), name="sums", epochs=2),
                         model=get_model(MOCK, custom_outputs=replies), max_samples=1, log_dir=str(tmp_path / "logs"),
                         display="none")
    assert log.status == "success", log.error
    path, study = Path(log.location), tmp_path / "study"
    assert main(["ingest", str(path), "--adapter", "inspect", "--study", str(study), "--json"]) == 0
    capsys.readouterr()
    runs = _trajectories(study)
    assert sorted(runs) == sorted(f"{path.stem}/{s}/epoch{e}" for s in "pq" for e in (1, 2))
    assert main(["import", "judge-labels", str(path), "--format", "inspect-scores", "--study", str(study), "--judge",
                 "m", "--trajectory-column", "trajectory", "--kind-column", "kind", "--output-column", "label",
                 "--json"]) == 0
    written = Path(json.loads(capsys.readouterr().out)["written"])
    units = {row["unit_id"]: row["trajectory_id"] for row in (json.loads(line) for _, line in
             iter_jsonl_lines(StudyLayout.of(study).units)) if row["kind"] == "correctness"}
    by_run = {units[row["unit_id"]]: row["label"] for row in _rows(written)}
    # by hand: every reply is "3"; p's target is 3 (correct), q's is 5 (incorrect), in both epochs
    assert by_run == {f"{path.stem}/{s}/epoch{e}": ("correct" if s == "p" else "incorrect")
                      for s in "pq" for e in (1, 2)}

    looping = [inspect_runs.output("Again.", None, (f"c{i}", {"x": i, "y": 1})) for i in range(3)]
    [cut] = inspect_eval(Task(dataset=samples[:1], solver=[use_tools(add()), generate()], scorer=match(),
                              name="loop", message_limit=4),
                         model=get_model(MOCK, custom_outputs=looping), log_dir=str(tmp_path / "cut"), display="none")
    [sample] = read_eval_log(cut.location).samples
    assert sample.limit is not None and sample.limit.type == "message"
    [run] = _ingest_one(Path(cut.location), tmp_path / "cut-study", capsys)
    assert run["truncated"] is True and run["final_answer"] is None and not any(s["is_final"] for s in run["steps"])
    assert run["metadata"]["inspect"]["limit"]["type"] == "message"
    assert [s["role"] for s in run["steps"]] == [m.role for m in sample.messages if m.role != "tool"]


def _ingest_one(log: Path, study: Path, capsys) -> list[dict]:
    assert main(["ingest", str(log), "--adapter", "inspect", "--study", str(study), "--json"]) == 0
    capsys.readouterr()
    return list(_trajectories(study).values())
