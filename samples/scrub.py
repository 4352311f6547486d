"""Identity scrubber: masks model, vendor and harness names before annotators see a text.

Terms come from the maintained vocabulary (``identity_vocabulary.toml``) plus the
study's own agent / backbone / family values. Text is first NFKC-normalised and
stripped of zero-width characters (so "Ｃｌａｕｄｅ" or "Cl\u200baude" cannot slip
through), then masked in this order:

1. URLs (``http(s)://``, ``www.``) containing any identity term or listed domain -> ``[URL]``;
   bare listed domains (``api.openai.com``) -> ``[URL]``;
2. self-identification ("I am an AI model developed by X") -> "... by [VENDOR]";
3. harness names -> ``[AGENT]``, vendors -> ``[VENDOR]``, model names with their
   version tail ("gpt-4o-2024-08-06", "Claude 3.5", "qwen3.5-9b") -> ``[MODEL]``.

Matching is case-insensitive and treats ``_``, ``-`` and punctuation as separators,
so identities inside tool names ("claude_search") are masked too. ``leaks`` re-checks
a scrubbed text with the plain term patterns: anything it finds fails the blind step.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from samples.vocabulary import Vocabulary, default_vocabulary, term_pattern

_ZERO_WIDTH = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"'`)\]]+", re.IGNORECASE)
_VERSION_TAIL = r"(?:\s?\d+(?:\.\d+)*(?![A-Za-z])|[-_.:/]?[A-Za-z0-9]*\d(?:[\w\-]|\.(?=\w))*|(?:[-_][A-Za-z0-9]+)+)?"
_SELF_ID = re.compile(
    r"(\b(?:I am|I'm|as|this is)\s+(?:an?\s+)?(?:AI\s+)?(?:large\s+)?(?:language\s+model|model|assistant|chatbot)"
    r"[^.\n]{0,40}?\b(?:developed|created|trained|built|made|provided)\s+by\s+)([A-Z][\w\-]*(?:\.[\w\-]+)*(?:\s+[A-Z][\w\-]*(?:\.[\w\-]+)*)?)",
    re.IGNORECASE)
IGNORED_STUDY_VALUES = frozenset({"", "unknown", "none", "other", "n/a", "null"})
PLACEHOLDERS = {"url": "[URL]", "self_identification": "[VENDOR]", "agent": "[AGENT]", "vendor": "[VENDOR]",
                "model": "[MODEL]"}


def normalise(text: str) -> str:
    return _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text))


def _alternation(terms: Iterable[str], tail: str = "") -> re.Pattern[str] | None:
    unique = sorted({t.strip() for t in terms if len(t.strip()) >= 2}, key=lambda t: (-len(t), t.lower()))
    if not unique:
        return None
    return re.compile("(?:" + "|".join(term_pattern(t) for t in unique) + ")" + tail, re.IGNORECASE)


def study_terms(values: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Identity terms from a study's own values: each whole value and its '/'-separated parts.

    ``values`` maps a category ("agent", "model") to strings such as
    "anthropic/claude-sonnet-5"; generic placeholders ("unknown", "none") are ignored.
    """
    out: dict[str, list[str]] = {}
    for category, items in values.items():
        terms = set()
        for value in items:
            for part in [value, *value.split("/")]:
                part = part.strip()
                if part.lower() not in IGNORED_STUDY_VALUES and len(part) >= 3:
                    terms.add(part)
        out[category] = sorted(terms)
    return out


@dataclass(frozen=True, kw_only=True)
class Hit:
    category: str
    matched: str


class Scrubber:
    """Masks identity terms; built once per study from the vocabulary and the study's values."""

    def __init__(self, vocabulary: Vocabulary | None = None, extra: Mapping[str, Iterable[str]] | None = None) -> None:
        vocab = vocabulary or default_vocabulary()
        extra = {k: list(v) for k, v in (extra or {}).items()}
        self.domains = sorted({d.lower() for d in vocab.domains}, key=len, reverse=True)
        agents = [*vocab.harnesses, *extra.get("agent", [])]
        vendors = [*vocab.vendors, *extra.get("vendor", [])]
        models = [*vocab.models, *extra.get("model", [])]
        self.terms = {"agent": agents, "vendor": vendors, "model": models}
        self.passes = [(c, p) for c, p in (("agent", _alternation(agents)), ("vendor", _alternation(vendors)),
                                           ("model", _alternation(models, _VERSION_TAIL))) if p is not None]
        self.domain_pattern = (re.compile(r"(?<![\w.\-])[\w.\-]*?(?:" + "|".join(re.escape(d) for d in self.domains)
                                          + r")(?![\w\-])(?:[/:]\S*)?", re.IGNORECASE) if self.domains else None)
        everything = [*agents, *vendors, *models, *self.domains]
        self.check_pattern = _alternation(everything)

    def _url_has_identity(self, url: str) -> bool:
        lowered = url.lower()
        return any(d in lowered for d in self.domains) or bool(self.check_pattern and self.check_pattern.search(url))

    def scrub(self, text: str) -> tuple[str, list[Hit]]:
        """The masked text and what was masked (category and the original string)."""
        hits: list[Hit] = []
        text = normalise(text)

        def url(match: re.Match[str]) -> str:
            if self._url_has_identity(match.group(0)):
                hits.append(Hit(category="url", matched=match.group(0)))
                return PLACEHOLDERS["url"]
            return match.group(0)

        text = _URL.sub(url, text)
        if self.domain_pattern is not None:
            text = self.domain_pattern.sub(lambda m: hits.append(Hit(category="url", matched=m.group(0))) or "[URL]", text)

        def self_id(match: re.Match[str]) -> str:
            hits.append(Hit(category="self_identification", matched=match.group(2)))
            return match.group(1) + PLACEHOLDERS["self_identification"]

        text = _SELF_ID.sub(self_id, text)
        for category, pattern in self.passes:
            text = pattern.sub(lambda m, c=category: hits.append(Hit(category=c, matched=m.group(0))) or PLACEHOLDERS[c], text)
        return text, hits

    def leaks(self, text: str) -> list[str]:
        """Identity strings still present in ``text`` (checked after normalisation)."""
        if self.check_pattern is None:
            return []
        return [m.group(0) for m in self.check_pattern.finditer(normalise(text))]
