"""Blinding against disguised identities, with meaning kept.

The tables are written by hand: each disguised identity with the text an annotator
must see after scrubbing, and ordinary sentences that must reach the annotator
unchanged. The leak detector is checked to be independent of the scrubber: it finds
every disguise in the raw text, and a naive scrubber (plain whole-word matching, as
blinding did before) makes blind refuse on every one of them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from apps.cli import main
from samples.blind import IdentityLeak, blind, blind_study
from samples.errors import InputError
from samples.ingest import ingest
from samples.leakcheck import LeakDetector
from samples.records import SampledUnit
from samples.sampler import sample_study
from samples.scrub import Hit, Scrubber
from samples.vocabulary import default_vocabulary

# (raw text, what the annotator sees); derived by hand from the masking rules. A name glued
# inside an identifier or path becomes a neutral word of its case shape ("my_model_tool"),
# so the mask leaves no telltale hole; elsewhere a placeholder ("[MODEL]").
DISGUISED = [
    ("the claudeSearch tool", "the modelSearch tool"),                       # camelCase tool name
    ("ClaudeSearch", "ModelSearch"),                                          # CamelCase
    ("GPT4oBrowser", "ModelBrowser"),                                         # model + version + product word
    ("searchWithClaude", "searchWithModel"),                                  # model at the end of an identifier
    ("my_gpt_tool", "my_model_tool"),                                         # snake_case
    ("chatgptplus", "modelplus"),                                             # glued product word, lower case
    ("askclaude", "askmodel"),                                                # glued, model last
    ('{"claude_api_key": "x"}', '{"model_api_key": "x"}'),                    # JSON argument key
    ("/v1/models/claude/messages", "/v1/models/model/messages"),              # URL path segment
    ("https://example.com/tools/gemini/run", "[URL]"),                          # URL naming a model
    ("DeepSeekClient", "VendorClient"),                                       # vendor in a class name
    ("tool: GeminiWebSearch", "tool: ModelWebSearch"),
    ("OpenHandsAgent", "AgentAgent"),                                         # harness in an identifier
    ("\u0421laude", "[MODEL]"),                                                 # Cyrillic Es for C
    ("G\u03a1\u03a4-4o", "[MODEL]"),                                            # Greek Rho and Tau
    ("\u0501eepseek", "[VENDOR]"),                                              # Cyrillic Komi De for d
    ("qw\u0435n3", "[MODEL]"),                                                  # Cyrillic Ie for e
    ("GEM\u0406N\u0406", "[MODEL]"),                                            # Cyrillic I for I
    ("\uff23\uff4c\uff41\uff55\uff44\uff45Search", "ModelSearch"),            # fullwidth letters
    ("\\u0043laude", "[MODEL]"),                                                # backslash escape in text
    ("\\ud835\\udc02laude", "[MODEL]"),                                         # JSON surrogate pair: bold C
    ("&#67;laude", "[MODEL]"),                                                  # HTML decimal entity
    ("&#x43;laude", "[MODEL]"),                                                 # HTML hex entity
    ("Cl&aacute;ude", "[MODEL]"),                                               # named entity + diacritic
    ("%43laude", "[MODEL]"),                                                    # percent-encoding
    ("%2543laude", "[MODEL]"),                                                  # percent-encoding twice
    ("Cla\u0301ude", "[MODEL]"),                                                # combining accent
    ("C\u0336laude", "[MODEL]"),                                                # combining overlay
    ("Open\u200bAI", "[VENDOR]"),                                               # zero-width space
    ("deep-seek", "[VENDOR]"),                                                  # split by a hyphen
    ("Open_AI", "[VENDOR]"),                                                    # split by an underscore
    ("Claude\u2011Sonnet\u20114", "[MODEL]"),                                    # non-breaking hyphens
    ("c l a u d e", "[MODEL]"),                                                 # spelled out
    ("Claude 3.5 Sonnet", "[MODEL] [MODEL]"),                                   # ordinary word in a model name
    ("llama3_runner", "model_runner"),                                        # ordinary word + version
    ("I was trained by Google.", "I was trained by [VENDOR]."),                 # self-identification
    ("As Grok, I think so.", "As [MODEL], I think so."),
    ("I\u2019m Devin, your engineer.", "I\u2019m [AGENT], your engineer."),
    ("Google Gemini answered", "[VENDOR] [MODEL] answered"),                    # vendor beside a model
    ("see api.openai.com and x.ai/api", "see [URL] and [URL]"),                 # bare domains
    ("anthropic_client.messages.create(model='claude-3-5-sonnet-20241022')",
     "vendor_client.messages.create(model='[MODEL]')"),
]

# Ordinary words that contain or equal an identity term; they must stay as written.
ORDINARY = [
    "Google translation of the page", "a sonnet by Shakespeare", "the llama grazed", "cursor.execute(query)",
    "phi = 1.618", "philanthropic foundations", "an autogenerated file", "the mistral wind",
    "run the command a second time", "GoogleSearch results", "a Microsoft Word document", "a moonshot idea",
    "replicate the result", "a coherent argument", "his magnum opus", "a haiku", "the bard of Avon",
    "grok the concept", "with open hands", "a deep seek", "Alibaba's revenue", "NVIDIA GPUs", "Devin Booker scored",
    "GLM regression", "the Geminids meteor shower", "claudette", "sonnets and odes",
    "sophisticated graphic philosophy", "metadata", "together we found", "vertex of the graph",
    "search https://www.google.com/search?q=weather",
]


def _unit(i: int, text: str, turns: list[str] | None = None) -> SampledUnit:
    return SampledUnit(unit_id=f"u_{i:04d}", trajectory_id=f"t{i}", kind="identify_turn" if turns else "correctness",
                       text=text, turns=turns, focus_turn=0 if turns else None,
                       strata={"agent": "ZetaHarness", "backbone": "acmebot-7b"}, stratum="s", inclusion_prob=0.5)


@pytest.mark.parametrize(("raw", "shown"), DISGUISED, ids=[repr(r)[:40] for r, _ in DISGUISED])
def test_a_disguised_identity_is_masked(raw: str, shown: str) -> None:
    text, hits = Scrubber().scrub(raw)
    assert text == shown
    assert any(h.kept is None for h in hits)
    assert LeakDetector().find(raw), "the detector sees the disguise on its own"
    assert LeakDetector().find(text) == []


def test_the_table_is_the_issue_probe_size() -> None:
    assert len(DISGUISED) >= 28 and len(ORDINARY) >= 28


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_words_stay_readable(text: str) -> None:
    shown, hits = Scrubber().scrub(text)
    assert shown == text
    assert all(h.kept == "ordinary_word" for h in hits)
    assert LeakDetector().find(text) == []


class _Naive(Scrubber):
    """Whole-word, case-insensitive matching of the vocabulary: what blinding did before disguises."""

    def __init__(self) -> None:
        vocab = default_vocabulary()
        words = sorted({*vocab.models, *vocab.vendors, *vocab.harnesses}, key=len, reverse=True)
        self.pattern = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, words)) + r")(?![A-Za-z])", re.IGNORECASE)

    def scrub(self, text: str) -> tuple[str, list[Hit]]:
        return self.pattern.sub("[MASKED]", text), []

    def scrub_across(self, parts: list[str]) -> tuple[list[str], list[Hit]]:
        return list(parts), []


def test_the_detector_catches_what_a_naive_scrubber_misses() -> None:
    disguised = [raw for raw, _ in DISGUISED if _Naive().scrub(raw)[0] == raw]
    assert len(disguised) >= 20  # the naive scrubber leaves most disguises whole
    units = [_unit(i, "Question.", turns=["plain turn", raw]) for i, raw in enumerate(disguised)]
    result = blind(units, annotators=["ann1"], salt=b"s", scrubber=_Naive())
    flagged = {re.search(r"\(unit (u_\d+)\) turns\[1\]", leak).group(1) for leak in result.leaks}
    assert flagged == {u.unit_id for u in units}
    clean = blind(units, annotators=["ann1"], salt=b"s")
    assert clean.leaks == []


def _study(tmp_path: Path, texts: list[str]) -> Path:
    run = {"id": "r0", "agent": "ZetaHarness", "backbone": "acmebot-7b", "dataset": "GAIA", "setting": "natural",
           "split": "control", "question": "What is 6 x 7?", "reference": ["42"], "truncated": False,
           "steps": [{"reasoning": None, "text": t, "tool_call": None} for t in texts],
           "final_turn": {"reasoning": None, "text": "42"}}
    (tmp_path / "runs.jsonl").write_text(json.dumps(run, ensure_ascii=False) + "\n", encoding="utf-8")
    ingest([tmp_path / "runs.jsonl"], tmp_path, adapter="ise")
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "all"\nkinds = ["identify_trajectory"]\nstrata = ["kind"]\nallocation = "fixed"\n'
                    'n_per_stratum = 10\none_per_trajectory = false\n')
    sample_study(tmp_path, plan)
    return tmp_path


def test_the_audit_counts_masked_and_kept_terms(tmp_path: Path) -> None:
    study = _study(tmp_path, ["Google translation says 42.", "askclaude and GPT4oBrowser agree.",
                              "Google Gemini 2.5 and ZetaHarness too."])
    blind_study(study, annotators=["ann1"], keep=["Google"])
    audit = json.loads((study / "blind" / "audit.json").read_text())
    tasks = (study / "blind" / "tasks.jsonl").read_text(encoding="utf-8")
    assert "Google translation says 42." in tasks and "Google [MODEL]" in tasks and "askmodel" in tasks
    # by hand: masked claude, gpt, gemini (model), ZetaHarness (agent); kept Google twice: as an ordinary
    # word (kept anyway) and beside Gemini (kept because the study keeps it); an identify_trajectory unit
    # shows each step twice (in its text and as a turn), so every count doubles
    assert audit["masked_by_category"] == {"agent": 2, "model": 6}
    assert audit["kept_by_category"] == {"vendor": 4}
    assert audit["kept_by_reason"] == {"ordinary_word": 2, "study_keep": 2}
    assert audit["study_kept_terms"] == 1 and audit["surviving_identity_strings"] == 0
    assert "google" not in json.dumps(audit).lower() and "claude" not in json.dumps(audit).lower()
    detail = json.loads((study / "sealed" / "scrub_detail.json").read_text())
    assert detail["terms"] == {"masked": {"claude": 2, "gemini": 2, "gpt": 2, "zetaharness": 2}, "kept": {"google": 4}}
    blind_study(study, annotators=["ann1"], replace=True)  # without the keep: ordinary use stays, model context masked
    tasks = (study / "blind" / "tasks.jsonl").read_text(encoding="utf-8")
    assert "Google translation says 42." in tasks and "[VENDOR] [MODEL]" in tasks
    audit = json.loads((study / "blind" / "audit.json").read_text())
    assert audit["kept_by_reason"] == {"ordinary_word": 2} and audit["masked_by_category"]["vendor"] == 2


@pytest.mark.parametrize(("term", "message"), [
    ("Claude", "model name"), ("gpt", "model name"), ("ZetaHarness", "study's own"), ("acmebot-7b", "study's own"),
    ("Foobar", "not in the identity vocabulary"), ("", "not a term"),
])
def test_keep_refuses_what_must_stay_masked(tmp_path: Path, term: str, message: str) -> None:
    study = _study(tmp_path, ["plain text"])
    with pytest.raises(InputError, match=message):
        blind_study(study, annotators=["ann1"], keep=[term])
    assert not (study / "blind").exists() and not (study / "sealed").exists()


def test_cli_keep_and_refusal(tmp_path: Path, capsys, monkeypatch) -> None:
    study = _study(tmp_path, ["Search Google for claudeSearch results."])
    assert main(["blind", str(study), "--annotators", "a,b", "--keep", "Google", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kept_by_category"] == {"vendor": 2} and summary["masked_by_category"] == {"model": 2}
    before = {p: p.read_bytes() for p in study.rglob("*") if p.is_file()}

    class Broken(Scrubber):
        def scrub(self, text: str) -> tuple[str, list[Hit]]:
            return text, []

    monkeypatch.setattr("samples.blind.Scrubber", Broken)  # a scrubber fault: the detector must stop it
    assert main(["blind", str(study), "--annotators", "a,b", "--replace"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(r"nothing written.*task t_[0-9a-f]{16} \(unit u_\w+\) (text|turns\[\d+\])", err[0])
    assert {p: p.read_bytes() for p in study.rglob("*") if p.is_file()} == before
    with pytest.raises(IdentityLeak):
        blind_study(study, annotators=["a"], replace=True)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


def test_real_trajectories_blind_without_refusal_and_keep_their_words(shared: Path) -> None:
    """All 184 Who&When runs (Magentic-One on GAIA/AssistantBench): nothing survives, web-search prose stays."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((shared / "data" / "who_and_when").rglob("*.json"))]
    texts = [s for run in runs for turn in run["history"] for s in _strings(turn)]
    assert len(runs) == 184 and len(texts) > 5000
    scrubber, detector = Scrubber(), LeakDetector()
    kept, shown = set(), []
    for text in texts:
        clean, hits = scrubber.scrub(text)
        assert detector.find(clean) == [], clean[:200]
        kept |= {h.matched.lower() for h in hits if h.kept}
        shown.append(clean)
    raw = "\n".join(texts).lower().replace("-", "").replace("_", "")
    joined = "\n".join(shown).lower().replace("-", "").replace("_", "")
    for name in ("magenticone", "autogen(?!erat)", "openai", "gpt4o"):  # the harness and model ("autogenerated" is a word)
        assert re.search(name, raw) and not re.search(name, joined), name
    assert {"google", "microsoft"} <= kept  # searched with, not identities
    assert sum("google" in t.lower() for t in shown) > 100
