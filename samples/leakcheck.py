"""Leak detector: finds identity terms in a scrubbed text, independently of the scrubber.

It shares the vocabulary with ``samples.scrub`` (what to look for) but none of its
patterns or normalisation, so it can see what the scrubber missed. It first undoes
every disguise it knows, on the whole text: HTML entities, percent-encoding and
backslash escapes (three layers deep), NFKD with combining marks and format
characters dropped, Unicode look-alikes folded to ASCII, case folded. Then it
removes the separators that glue an identifier together (``-``, ``_``, spaced-out
letters "c l a u d e") and searches the letters for every identity term:

* distinctive terms (4+ letters, or listed as ``glued_short``) anywhere, even glued
  inside a word ("askclaude"), unless inside a listed ordinary word ("philanthropic");
* shorter terms as whole words (a version may follow: "o3-mini");
* ordinary-word terms ("sonnet", "Google") only in a model context: a version after
  them, a mask placeholder beside them, or self-identification ("I am Grok", "I was
  trained by Google");
* listed domains as host names.

Terms the study keeps are not searched. ``accord blind`` writes no task while this
finds anything.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache
from urllib.parse import unquote

import ahocorasick

from samples.confusables import fold_table
from samples.vocabulary import Vocabulary, default_vocabulary

_BACKSLASH = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2}))")
_SPACED_HINT = re.compile(r"[ .\-_*][a-z0-9][ .\-_*][a-z0-9][ .\-_*]")
_SPACED_LETTERS = re.compile(r"(?<![a-z0-9])(?:[a-z0-9][ .\-_*]){2,}[a-z0-9](?![a-z0-9])")
# Joiners removed, every other ASCII character but letters, digits and brackets made a space.
# (a byte table on the UTF-8 form: non-ASCII bytes stay as they are)
_LETTER_BYTES = bytes(b if b >= 128 or chr(b).isalnum() or chr(b) in "[]" else 32 for b in range(256))
_FIRST_PERSON = r"\b(?:i\s+am|i['’]m|this\s+is|my\s+name\s+is|call\s+me)\s+(?:an?\s+|the\s+)?"
_MADE_BY = r"(?:developed|created|trained|built|made|provided|fine-tuned)\s+by\s+(?:the\s+)?"


@lru_cache(maxsize=1)
def _reveal_table() -> dict[int, str | None]:
    """Format characters and combining marks dropped, look-alikes folded to ASCII."""
    table: dict[int, str | None] = dict(fold_table())
    for code in [*range(0x80, 0x30000), *range(0xE0000, 0xE1000)]:
        if unicodedata.category(chr(code)) in ("Mn", "Me", "Cf"):
            table[code] = None
    return table


def reveal(text: str) -> str:
    """``text`` as the detector reads it: escapes decoded, look-alikes folded, case folded."""
    def backslash(match: re.Match[str]) -> str:
        code = int(next(g for g in match.groups() if g), 16)
        return chr(code) if code <= 0x10FFFF else " "

    for _ in range(3):
        decoded = text
        if "\\" in text:  # surrogate pairs (JSON's form of letters beyond the BMP) joined back
            decoded = _BACKSLASH.sub(backslash, text).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        decoded = html.unescape(unquote(decoded))
        if decoded == text:
            break
        text = decoded
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).translate(_reveal_table())
    return text.casefold()


def _compact(term: str) -> str:
    return "".join(c for c in reveal(term) if c.isascii() and c.isalnum())


class LeakDetector:
    """Identity terms that survive in a text; built from the vocabulary, the study's values and its kept terms."""

    def __init__(self, vocabulary: Vocabulary | None = None, extra: Mapping[str, Iterable[str]] | None = None,
                 keep: Iterable[str] = ()) -> None:
        vocab = vocabulary or default_vocabulary()
        study = {_compact(t) for items in (extra or {}).values() for t in items if len(t.strip()) >= 2}
        kept = {_compact(t) for t in keep}
        ordinary = {_compact(t) for t in vocab.ordinary} - study - kept
        every = [t for t in [*vocab.models, *vocab.vendors, *vocab.harnesses] if "." not in t]  # "Z.ai": a domain
        every += [t for items in (extra or {}).values() for t in items if len(t.strip()) >= 2]
        glued = {_compact(t) for t in vocab.glued_short}
        # a single-letter part ("command-r") makes a term a whole word only: "commandant" is not "command a"
        whole_words = {_compact(t) for t in every if any(len(p) == 1 for p in t.replace("-", " ").replace("_", " ").split())}
        self._automaton = ahocorasick.Automaton()
        for term in sorted({_compact(t) for t in every} - kept):
            if term:
                kind = "ordinary" if term in ordinary else (
                    "glued" if term not in whole_words and (sum(c.isalpha() for c in term) >= 4 or term in glued)
                    else "word")
                self._automaton.add_word(term, (kind, term))
        for word in vocab.ordinary_containing:
            self._automaton.add_word(_compact(word), ("allow", word))
        self._automaton.make_automaton()
        self._domains = ahocorasick.Automaton()
        for domain in vocab.domains:
            self._domains.add_word(domain.lower(), domain.lower())
        self._domains.make_automaton()
        words = "|".join(sorted((re.escape(t) for t in ordinary), key=len, reverse=True)) or "(?!)"
        self._self_id = re.compile(
            rf"{_FIRST_PERSON}({words})(?![a-z])|\bas\s+({words})\s*,\s*i\b"
            rf"|\bi(?:\s+was|\s+am|['’]m|\s+have\s+been)\s+(?:[\w\-]+\s+){{0,4}}?{_MADE_BY}({words})(?![a-z])"
            rf"|\b(?:i\s+am|i['’]m|as|this\s+is)\s+(?:an?\s+)?(?:ai\s+)?(?:large\s+)?(?:language\s+model|model|assistant"
            rf"|chatbot)[^.\n]{{0,40}}?\b{_MADE_BY}({words})(?![a-z])")
        self._version = re.compile(rf"(?<![a-z0-9])({words})[\s\-_.]?v?\d")
        self._beside = re.compile(rf"\[(?:model|vendor|agent)\] ?(?:s )?({words})(?![a-z])"
                                  rf"|(?<![a-z0-9])({words}) ?\[(?:model|vendor|agent)\]")

    def find(self, text: str) -> list[str]:
        """Each surviving identity as "'term' in '...context...'" (empty when the text is clean)."""
        low = reveal(text)
        found: list[tuple[str, str]] = []
        n = len(low)
        for last, domain in self._domains.iter(low):
            start = last - len(domain) + 1
            if (start == 0 or low[start - 1] == "." or not (low[start - 1].isalnum() or low[start - 1] == "-")) and (
                    last + 1 == n or not (low[last + 1].isalnum() or low[last + 1] == "-")):
                found.append((domain, low[max(0, start - 20):last + 21]))
        if _SPACED_HINT.search(" " + low):
            low = _SPACED_LETTERS.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), low)
        letters = low.encode("utf-8", "surrogatepass").translate(_LETTER_BYTES, b"-_").decode("utf-8", "surrogatepass")
        hits, allowed, ordinary = [], [], False
        for last, (kind, term) in self._automaton.iter(letters):
            start = last - len(term) + 1
            if kind == "ordinary":
                ordinary = True
            elif kind == "allow":
                allowed.append((start, last + 1))
            elif kind == "glued" or (kind == "word" and (start == 0 or not letters[start - 1].isalnum())
                                     and (last + 1 == len(letters) or not letters[last + 1].isalpha())):
                hits.append((start, last + 1, term))
        for start, end, term in hits:
            if not any(a <= start and end <= b for a, b in allowed):
                found.append((term, letters[max(0, start - 20):end + 20]))
        for pattern, where in ((self._version, low), (self._beside, letters), (self._self_id, low)) if ordinary else ():
            for match in pattern.finditer(where):
                term = next(g for g in match.groups() if g)
                found.append((term, where[max(0, match.start() - 20):match.end() + 20]))
        return [f"{term!r} in {' '.join(context.split())!r}" for term, context in found]
