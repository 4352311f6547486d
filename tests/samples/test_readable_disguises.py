"""Readable disguises of a model's name, through ingest -> sample -> blind on the CLI (issue #23).

Each case is one trajectory with a disguise a person reads straight through; the blinded
tasks (text and every turn, as the coding app shows them) must hold the hand-derived
masked form and never the disguise. Then: a name split across two turns that the
scrubber cannot mask makes `accord blind` refuse (exit 2, naming the task and turns);
an agent framework's speaker names (Who&When) become neutral roles, or are kept with
--keep-roles and counted in blind/audit.json; and the false positives on ordinary text
and on real trajectories are counted against bounds (README, "Blinding sees through
disguises").
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from apps.cli import main
from samples.leakcheck import LeakDetector
from samples.scrub import Scrubber

PLAN = ('name = "all"\nkinds = ["identify_trajectory"]\nstrata = ["kind"]\nallocation = "fixed"\n'
        'n_per_stratum = 10\none_per_trajectory = false\n')


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# (case, step texts or {"tool arguments"}, strings the annotator must see); the shown forms are
# derived by hand: a disguised name in prose becomes its placeholder, the text around it stays.
CASES = [
    ("slashes", ["ask C/l/a/u/d/e now"], ["ask [MODEL] now"]),
    ("pipes and a version", ["G|P|T-4 wrote it"], ["[MODEL] wrote it"]),
    ("commas", ["by C,l,a,u,d,e today"], ["by [MODEL] today"]),
    ("middle dots", ["by C\u00b7l\u00b7a\u00b7u\u00b7d\u00b7e today"], ["by [MODEL] today"]),
    ("double spaces", ["by C  l  a  u  d  e today"], ["by [MODEL] today"]),
    ("one letter per line", ["signed:\nC\nl\na\nu\nd\ne"], ["signed:\n[MODEL]"]),
    ("bold split", ["**Cl**aude wrote this"], ["**[MODEL] wrote this"]),
    ("apostrophe", ["Cl'aude wrote this"], ["[MODEL] wrote this"]),
    ("two links", ["see [Cl](https://a.example/x)[aude](https://b.example/y)"], ["see [[MODEL]](https://b.example/y)"]),
    ("hyphen at a line break", ["written by Clau-\nde today"], ["written by [MODEL] today"]),
    ("emoji inside", ["Clau\U0001f642de wrote this"], ["[MODEL] wrote this"]),
    ("leetspeak 1 for l", ["C1aude wrote this"], ["[MODEL] wrote this"]),
    ("leetspeak 0 for O", ["built by 0penAI"], ["built by [VENDOR]"]),
    ("leetspeak 3 and 1", ["G3m1n1 wrote this"], ["[MODEL] wrote this"]),
    ("negative squared letters", ["\U0001f172\U0001f17b\U0001f170\U0001f184\U0001f173\U0001f174 wrote this"],
     ["[MODEL] wrote this"]),
    ("right-to-left override", ["by \u202eedualC\u202c today"], ["by [MODEL] today"]),
    ("code concatenation", ['name = "clau" + "de"'], ['name = "[MODEL]"']),
    ("bare version", ["using 4o-mini-2024-07-18 here"], ["using [MODEL] here"]),
    ("bare dated version", ["the 3-5-sonnet-20241022 run"], ["the [MODEL] run"]),
    ("Russian", ["\u042f \u041a\u043b\u043e\u0434, \u043f\u043e\u043c\u043e\u0449\u043d\u0438\u043a"],
     ["\u042f [MODEL], \u043f\u043e\u043c\u043e\u0449\u043d\u0438\u043a"]),
    ("Russian GPT", ["\u043c\u043e\u0434\u0435\u043b\u044c \u0413\u041f\u0422-4 \u043e\u0442\u0432\u0435\u0442\u0438\u043b\u0430"],
     ["\u043c\u043e\u0434\u0435\u043b\u044c [MODEL] \u043e\u0442\u0432\u0435\u0442\u0438\u043b\u0430"]),
    ("Japanese", ["\u79c1\u306f\u30af\u30ed\u30fc\u30c9\u3067\u3059"], ["\u79c1\u306f[MODEL]\u3067\u3059"]),
    ("Chinese", ["\u6211\u662f\u514b\u52b3\u5fb7"], ["\u6211\u662f[MODEL]"]),
    ("Korean", ["\uc800\ub294 \ud074\ub85c\ub4dc\uc785\ub2c8\ub2e4"], ["\uc800\ub294 [MODEL]\uc785\ub2c8\ub2e4"]),
    ("Korean vendor", ["\uc564\ud2b8\ub85c\ud53d\uc774 \ub9cc\ub4e0"], ["[VENDOR]\uc774 \ub9cc\ub4e0"]),
    ("Chinese vendor", ["\u6df1\u5ea6\u6c42\u7d22\u7684\u6a21\u578b"], ["[VENDOR]\u7684\u6a21\u578b"]),
    ("Chinese model", ["\u901a\u4e49\u5343\u95ee\u56de\u7b54"], ["[MODEL]\u56de\u7b54"]),
    ("pinyin", ["Qianwen answered"], ["[MODEL] answered"]),
    ("LlamaIndex", ["built on LlamaIndex today"], ["built on [AGENT] today"]),
    ("Cyrillic argument key", {"\u0413\u0420\u0422_key": "x"}, ['{"MODEL_key": "x"}']),
    ("base64 argument", {"payload": _b64("model: claude-3-opus")}, [_b64("model: [MODEL]")]),
    ("hex argument", {"blob": b"claude".hex()}, [b"[MODEL]".hex()]),
    ("split across two turns", ["I am Clau", "de, your assistant"], ["I am [MODEL]", "[MODEL], your assistant"]),
]

# More disguises, from an independent audit of issue #23: the ones marked * leaked before it (neither the
# scrubber nor the detector saw them); the others held and stay as regressions.
MORE_CASES = [
    ("zero-width joiner", ["Cl\u200daude wrote this"], ["[MODEL] wrote this"]),
    ("full-width letters", ["\uff23\uff4c\uff41\uff55\uff44\uff45 wrote this"], ["[MODEL] wrote this"]),
    ("Greek look-alikes", ["G\u03a1\u03a4-4 wrote this"], ["[MODEL] wrote this"]),
    ("Cyrillic P in GPT", ["G\u0420T-4 wrote this"], ["[MODEL] wrote this"]),
    ("hyphens between letters", ["c-l-a-u-d-e wrote this"], ["[MODEL] wrote this"]),
    ("HTML entity", ["&#67;laude wrote this"], ["[MODEL] wrote this"]),
    ("URL-encoding", ["%43laude wrote this"], ["[MODEL] wrote this"]),
    ("reversed *", ["edualC wrote this"], ["[MODEL] wrote this"]),
    ("reversed Gemini *", ["inimeG wrote this"], ["[MODEL] wrote this"]),
    ("tool-call JSON key", {"claude_key": "x"}, ['{"model_key": "x"}']),
    ("file path", ["open /home/claude/notes.txt"], ["open /home/model/notes.txt"]),
    ("Qwen leetspeak", ["Qw3n wrote this"], ["[MODEL] wrote this"]),
    ("Qwen spelled out", ["Q w e n wrote this"], ["[MODEL] wrote this"]),
    ("Mixtral", ["Mixtral 8x7B wrote this"], ["[MODEL] wrote this"]),
    ("DeepSeek leetspeak", ["D33pS33k wrote this"], ["[VENDOR] wrote this"]),
    ("Gemini in Japanese", ["\u30b8\u30a7\u30df\u30cb\u304c\u66f8\u3044\u305f"], ["[MODEL]\u304c\u66f8\u3044\u305f"]),
    ("LLaMA with a version", ["LLaMA-3-70B wrote this"], ["[MODEL] wrote this"]),
    ("Llama in Russian *", ["\u044d\u0442\u043e \u041b\u043b\u0430\u043c\u0430 3"], ["\u044d\u0442\u043e [MODEL]"]),  # was "это Л[MODEL]"
    ("small capitals *", ["\u1d04\u029f\u1d00\u1d1c\u1d05\u1d07 wrote this"], ["[MODEL] wrote this"]),
    ("Hangul filler inside *", ["Clau\u3164de wrote this"], ["[MODEL] wrote this"]),
    ("HTML tags inside *", ["Cl<b></b>aude wrote this"], ["[MODEL] wrote this"]),
    ("HTML spans *", ["<span>Clau</span><span>de</span> wrote"], ["<span>[MODEL]</span> wrote"]),
    ("OpenRouter slug *", ["routed to x-ai/grok-4"], ["routed to vendor/model"]),
    ("Open AI in two words *", ["built by Open AI"], ["built by [VENDOR]"]),
    ("Arabic *", ["\u0623\u0646\u0627 \u0643\u0644\u0648\u062f"], ["\u0623\u0646\u0627 [MODEL]"]),
    ("ERNIE with a version *", ["ERNIE 4.0 answered"], ["[MODEL] answered"]),
    ("leetspeak with a version *", ["C1aude-3 wrote this"], ["Model-3 wrote this"]),  # a name glued to "-3": its shape
    ("ordinary-word name in leetspeak *", ["M1stral-7B wrote this"], ["Model-7B wrote this"]),
    ("ordinary-word name in leetspeak, spaced version *", ["L1ama 3 wrote this"], ["[MODEL] 3 wrote this"]),
    ("ordinary-word name spelled out *", ["M.i.s.t.r.a.l wrote this"], ["[MODEL] wrote this"]),
    ("ERNIE Bot in Chinese *", ["\u6587\u5fc3\u4e00\u8a00\u56de\u7b54"], ["[MODEL]\u56de\u7b54"]),
]
CASES += MORE_CASES


def _run(steps: list[str] | dict) -> dict:
    if isinstance(steps, dict):
        steps = [{"reasoning": None, "text": "Searching.", "tool_call": {"name": "lookup", "arguments": steps,
                                                                         "result": "ok", "success": True}}]
    else:
        steps = [{"reasoning": None, "text": t, "tool_call": None} for t in steps]
    return {"id": "r0", "agent": "ZetaHarness", "backbone": "acmebot-7b", "dataset": "GAIA", "setting": "natural",
            "split": "control", "question": "What is 6 x 7?", "reference": ["42"], "truncated": False,
            "steps": steps, "final_turn": {"reasoning": None, "text": "42"}}


def _cli_study(tmp_path: Path, runs: list[dict], *, adapter: str = "ise", name: str = "runs.jsonl") -> Path:
    source = tmp_path / "source" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    if adapter == "ise":
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in runs), encoding="utf-8")
    else:
        source.write_text(json.dumps(runs[0], ensure_ascii=False), encoding="utf-8")
    study = tmp_path / "study"
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    assert main(["ingest", str(source), "--adapter", adapter, "--study", str(study), "--json"]) == 0
    assert main(["sample", str(study), "--plan", str(plan), "--json"]) == 0
    return study


def _shown(study: Path) -> list[str]:
    """Every string an annotator is shown: each task's text and each of its turns."""
    tasks = [json.loads(line) for line in (study / "blind" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    return [s for t in tasks for s in [t["text"], *(t.get("turns") or [])]]


@pytest.mark.parametrize(("case", "steps", "shown"), CASES, ids=[c[0] for c in CASES])
def test_a_readable_disguise_is_masked_through_the_cli(tmp_path: Path, capsys, case: str, steps, shown: list[str]) -> None:
    study = _cli_study(tmp_path, [_run(steps)])
    capsys.readouterr()
    assert main(["blind", str(study), "--annotators", "a,b", "--json"]) == 0, capsys.readouterr().err
    texts = _shown(study)
    for form in shown:
        assert sum(form in t for t in texts) >= 2, (form, texts)  # in the task's text and in its turn
    raw = [s for pair in steps.items() for s in pair if s not in ("x", "payload", "blob")] if isinstance(steps, dict) \
        else steps
    for disguise in raw:
        assert not any(disguise in t for t in texts), disguise
    assert all(LeakDetector().find(t) == [] for t in texts)
    summary = json.loads(capsys.readouterr().out)
    assert sum(summary["masked_by_category"].values()) >= 2


def test_the_table_covers_the_issue_disguises() -> None:
    assert len(CASES) >= 30 + 31


@pytest.mark.parametrize(("case", "steps"), [c[:2] for c in MORE_CASES], ids=[c[0] for c in MORE_CASES])
def test_the_detector_sees_each_disguise_on_its_own(case: str, steps) -> None:
    """The detector is independent of the scrubber: it must find the raw disguise without it."""
    texts = [json.dumps(steps, ensure_ascii=False)] if isinstance(steps, dict) else steps
    assert all(LeakDetector().find(text) for text in texts), case


def test_what_cannot_be_masked_makes_blind_refuse_and_name_where(tmp_path: Path, capsys, monkeypatch) -> None:
    """A name split across two turns, with the scrubber's cross-turn masking out of action:
    the detector alone finds it, `accord blind` exits 2 naming the task and the turns, writes nothing."""
    study = _cli_study(tmp_path, [_run(["I am Clau", "de, your assistant"])])
    before = {p: p.read_bytes() for p in study.rglob("*") if p.is_file()}
    monkeypatch.setattr(Scrubber, "scrub_across", lambda self, parts: (list(parts), []))
    capsys.readouterr()
    assert main(["blind", str(study), "--annotators", "a,b"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing written" in err[0], err
    # the text's parts are the question and then each turn; the turns start at their own 0
    assert "turns parts 0/1: 'claude'" in err[0] and "text parts 1/2: 'claude'" in err[0], err[0]
    assert {p: p.read_bytes() for p in study.rglob("*") if p.is_file()} == before


WHO_AND_WHEN = {
    "question": "How many studio albums?", "ground_truth": "3", "question_ID": "x1",
    "history": [
        {"name": "Orchestrator (-> WebSurfer)", "role": "assistant", "content": "WebSurfer, please search the discography."},
        {"name": "WebSurfer", "role": "assistant", "content": "I searched and found 3 albums."},
        {"name": "Verification_Expert", "role": "assistant", "content": "Verified: 3. TERMINATE"},
        {"name": "Computer_terminal", "role": "assistant", "content": "exitcode: 0 (execution succeeded)"},
    ],
    "mistake_agent": "WebSurfer", "mistake_step": "1", "mistake_reason": "wrong count",
}


def test_harness_speaker_names_become_neutral_roles(tmp_path: Path, capsys) -> None:
    study = _cli_study(tmp_path, [WHO_AND_WHEN], adapter="who-and-when", name="1.json")
    capsys.readouterr()
    assert main(["blind", str(study), "--annotators", "a,b", "--json"]) == 0
    texts = _shown(study)
    joined = "\n".join(texts)
    # Issue #25: no framework's naming shape is left either ("Verification_Specialist", "Code_runner" and the
    # "(-> X)" mark of Magentic-One's log were what accord itself showed before).
    for neutral in ("[turn 0] (Coordinator to Browser)", "Browser, please search", "[turn 1] (Browser)",
                    "[turn 2] (Verification specialist)", "Verified: 3. DONE", "[turn 3] (Code runner)"):
        assert neutral in joined, neutral
    for harness in ("Orchestrator", "WebSurfer", "_Expert", "_Specialist", "Computer_terminal", "Code_runner",
                    "TERMINATE", "(->"):
        assert harness not in joined, harness
    audit = json.loads((study / "blind" / "audit.json").read_text())
    # by hand, per rendering: turn 0 names Orchestrator and WebSurfer in its line, its "(-> ...)" mark, and
    # WebSurfer in its text (4), turn 1 WebSurfer (1), turn 2 Verification_Expert and TERMINATE (2), turn 3
    # Computer_terminal (1): 8; the task shows every turn twice (its text and its turns)
    assert audit["masked_by_category"]["role"] == 16 and "role" not in audit["kept_by_category"]
    assert main(["blind", str(study), "--annotators", "a,b", "--keep-roles", "--json"]) == 0
    joined = "\n".join(_shown(study))
    assert "(Orchestrator (-> WebSurfer))" in joined and "(Verification_Expert)" in joined and "TERMINATE" in joined
    audit = json.loads((study / "blind" / "audit.json").read_text())
    assert audit["kept_by_category"]["role"] == 16 and "role" not in audit["masked_by_category"]
    assert audit["kept_by_reason"]["study_keep"] == 16


def test_who_and_when_through_ingest_sample_blind_shows_no_harness_shape(shared: Path, tmp_path: Path, capsys) -> None:
    """The real Who&When runs as the README's commands treat them: no harness speaker name, agent-name shape,
    log mark or stock reply is left in what annotators see (issue #25 found "Verification_Specialist",
    "Code_runner", "(Coordinator (-> Browser))" and "groupchat/tmp_code_..." paths after blinding)."""
    import re

    study, repo = tmp_path / "ww", Path(__file__).resolve().parents[2]
    assert main(["ingest", "--adapter", "who-and-when", str(shared / "data" / "who_and_when"), "--study", str(study),
                 "--kinds", "identify_turn"]) == 0
    assert main(["sample", str(study), "--plan", str(repo / "data" / "plans" / "who_and_when_turns.toml")]) == 0
    assert main(["blind", str(study), "--annotators", "a,b", "--json"]) == 0
    capsys.readouterr()
    shown = "\n".join(_shown(study))
    telltales = re.compile(r"[A-Za-z]_(?:Expert|Specialist|runner|terminal)\b|[a-z](?:Expert|Specialist)\b|\(->|"
                           r"\(thought\)|Orchestrator|WebSurfer|FileSurfer|ComputerTerminal|TERMINATE|groupchat|tmp_code")
    assert telltales.findall(shown) == []
    speakers = set(re.findall(r"\[turn \d+\] \(([^\n]*)\)\n", shown))
    assert {"Coordinator to Browser", "Browser", "Code runner", "Verification specialist"} <= speakers, speakers
    audit = json.loads((study / "blind" / "audit.json").read_text())
    assert audit["masked_by_category"]["role"] > 0 and audit["surviving_identity_strings"] == 0


def test_agent_names_of_any_domain_become_plain_phrases() -> None:
    """The rule, not a list: any capitalised identifier ending in an agent word ("_Expert", "_Specialist", glued
    or after "_"; "_runner", "_terminal", ... after "_") reads as words; code and constants stay."""
    scrubber = Scrubber()
    cases = {
        "(IMDB_Ratings_Specialist)": "(IMDB ratings specialist)", "BingAPI_Expert": "Bing API specialist",
        "VerificationExpert": "Verification specialist", "Blu-Ray_Expert": "Blu ray specialist",
        "Paper_Reviewer and Code_runner": "Paper reviewer and Code runner",
        "[turn 2] (Orchestrator (termination condition))": "[turn 2] (Coordinator, termination condition)",
        'File "/home/x/groupchat/tmp_code_1f43.py"': 'File "/home/x/workspace/snippet_1f43.py"',
    }
    for text, shown in cases.items():
        assert scrubber.scrub(text)[0] == shown, text
    for code in ("pool = ThreadPoolExecutor()", "r = TestRunner()", "my_runner = 1", "SEARCH_CODE_RUNNER",
                 "an Expert opinion", "call (see (a))", "the Data-Driven approach"):
        assert scrubber.scrub(code)[0] == code, code
    assert LeakDetector().find("[turn 1] (Data_Analysis_Expert)\nok") != []


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


# Identity strings (compact form) that the real data names: harnesses, their roles, models, vendors,
# hosting; hand-checked in context. Every other masked span is a false positive.
IDENTITIES = {
    "websurfer", "orchestrator", "expert", "autogen", "computerterminal", "filesurfer", "magenticone", "terminate",
    "gpt4o20240806", "gpt4o20240513", "openai", "captainagent", "azureopenai", "chatgpt", "gpt", "huggingface", "ag2",
    "metagpt", "chatdev", "hyperagent", "appworld", "google", "groupchat", "tmpcode", "specialist",
}


def test_false_positives_on_real_trajectories(shared: Path) -> None:
    """Who&When (184 runs), tau-bench (10 gpt-4o runs), MAD/MAST traces: nothing survives the
    detector, and the masked spans that are not identities are few and known. By hand, in
    Who&When: "O1"/"O10" (x3, x2) and "O3" are a paper's observation labels, "Claude" is in
    "Camille Claudel" and "Claude Pinoteau" (people): 8 spans; none in the other two sets."""
    data = shared / "data"
    sets = {
        "who_and_when": [s for p in sorted((data / "who_and_when").rglob("*.json"))
                         for s in _strings(json.loads(p.read_text(encoding="utf-8"))["history"])],
        "tau_bench": _strings(json.loads((data / "tau_bench" / "historical_trajectories" /
                                          "gpt-4o-airline.first10.json").read_text(encoding="utf-8"))),
        "mad_mast_lint": [s for p in sorted((data / "mad_mast_lint").rglob("*.json"))
                          for s in _strings(json.loads(p.read_text(encoding="utf-8")))],
    }
    scrubber, detector = Scrubber(), LeakDetector()
    false = {}
    for name, texts in sets.items():
        assert len(texts) > 500, name
        spans = []
        for text in texts:
            clean, hits = scrubber.scrub(text)
            assert detector.find(clean) == [], (name, clean[:200])
            spans += [h for h in hits if h.kept is None]
        false[name] = [h.matched for h in spans if h.category != "url" and h.term not in IDENTITIES]
    assert sorted(false["who_and_when"]) == sorted(["O1"] * 3 + ["O10"] * 2 + ["O3", "Claude", "Claude"])
    assert false["tau_bench"] == [] and false["mad_mast_lint"] == []


ORDINARY_MORE = [
    "e.g. the file/path and don't", "C, D, and E are options", "a b c d e f", "use a-\nb here", "x = 'a' + 'b'",
    "h264 and utf8 and v1beta", "[link](https://example.com)[other](https://example.org)", "0o17 is octal",
    "the 4-mini-golf course", "the orchestras played", "an Expert opinion", "terminate the process",
    "deep/seek and open/ai", "deadbeefcafe", "Claude Monet's water lilies",
]


def test_ordinary_text_is_left_alone() -> None:
    """What the new readings must not touch; the last two are changed, as a reader would read
    them: names read through a slash, and a person named Claude (a limit: masked like the model)."""
    scrubber = Scrubber()
    shown = {text: scrubber.scrub(text)[0] for text in ORDINARY_MORE}
    changed = [t for t, s in shown.items() if s != t]
    assert changed == ["deep/seek and open/ai", "Claude Monet's water lilies"], changed
    assert shown["deep/seek and open/ai"] == "[VENDOR] and [VENDOR]"  # read through the slash: as a reader would
