r"""Identity scrubber: masks model, vendor and harness names before annotators see a text.

Terms come from the maintained vocabulary (``identity_vocabulary.toml``) plus the
study's own agent / backbone / family values. The text is NFKC-normalised, stripped
of zero-width characters and of combining marks glued to Latin letters, and an
escaped word ("\u0043laude", "&#67;laude", "%43laude") is decoded when its decoded
form names an identity. Matching runs on a view of the text with look-alike letters
folded to ASCII (``samples.confusables``) and lower-cased, of the same length, so
every match is masked in place:

1. URLs containing an identity or a listed domain, and bare listed domains -> ``[URL]``;
2. self-identification ("I am an AI model developed by X", "I was trained by X") -> "... by [VENDOR]";
3. harness names -> ``[AGENT]``, vendors -> ``[VENDOR]``, model names with their version
   tail ("gpt-4o-2024-08-06", "Claude 3.5", "qwen3.5-9b") -> ``[MODEL]``.

What a reader reads straight through is masked too, in a reader's view of the text
that deletes it and maps back to the text: separators and markup between letters
("C/l/a/u/d/e", "**Cl**aude", "[Cl](..)[aude](..)", "Clau-" + newline + "de"),
letters spelled out one by one, quoted pieces joined by a code operator, and
leetspeak digits ("C1aude"); there a distinctive term, or an ordinary-word name of 5+
letters ("M1stral", "M.i.s.t.r.a.l"), must stand as a word. Also
masked: bare version strings ("4o-mini-2024-07-18"), base64 and hex tokens whose text
names an identity (scrubbed and encoded again), text under a right-to-left override
(read reversed), a distinctive name of 5+ letters written backwards as a word ("edualC"), names in other scripts (listed in the vocabulary), and, with
``scrub_across``, a name split over two turns. A masked name glued inside an
identifier or path becomes a neutral word of its shape ("my_model_tool"), so no hole
shows. A harness's speaker and role names ("Orchestrator (-> WebSurfer)",
"Verification_Expert", "TERMINATE") become neutral roles, or stay with ``keep_roles``.

Terms are found in one pass by an Aho-Corasick automaton (pyahocorasick). A term
starts and ends at a word or CamelCase boundary ("claudeSearch" -> "[MODEL]Search",
"GPT4oBrowser" -> "[MODEL]Browser", "claude_search"); terms of 4+ letters are also
masked glued inside a word ("askclaude") unless the word is a listed ordinary word
("philanthropic"). Terms that are ordinary words ("Google", "sonnet", "cursor") are
masked only in a model context (a version, next to another masked identity, or in
self-identification) and kept elsewhere; terms the study keeps are kept too. Every
masked and every kept occurrence is a ``Hit``. Whether anything survived is decided
by an independent detector (``samples.leakcheck``), not here.
"""

from __future__ import annotations

import base64
import bisect
import html
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import ahocorasick

from samples.confusables import fold
from samples.errors import InputError
from samples.leakcheck import decoded_token
from samples.vocabulary import AGENT_NAME, Vocabulary, default_vocabulary, neutral_agent_name

_ZERO_WIDTH = re.compile("[\u00ad\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\u3164\ufeff\uffa0]")  # Hangul fillers too
_OVERRIDE = re.compile("\u202e([^\u202a-\u202e\u2066-\u2069\n]*)")  # right-to-left override: the reader sees it reversed
_STRAY_MARKS = re.compile("(?<=[A-Za-z])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"'`)\]]+", re.IGNORECASE)
_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\x[0-9a-fA-F]{2}|&#[xX][0-9a-fA-F]{1,6};|&#[0-9]{1,7};"
                     r"|&[A-Za-z][A-Za-z0-9]{1,31};|%[0-9a-fA-F]{2}")
# Escapes that can stand for a letter an identity is spelled with: Latin, Greek, Cyrillic, Armenian,
# Cherokee, phonetic and letterlike blocks, zero-width and fullwidth forms, mathematical letters
# (UTF-16 high surrogate D835), and every entity or percent-encoding.
_MAY_HIDE_LETTERS = re.compile(r"\\u(?:0[0-5]|1|2|[fF][eEfF]|[dD]835)|\\U|\\x|&|%")
_ESCAPED_RUN = re.compile(r"(?:" + _ESCAPE.pattern + r"|[A-Za-z0-9])*")
_PERCENT_RUN = re.compile(r"(?:%[0-9a-fA-F]{2})+")
_BACKSLASH = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"  # a UTF-16 surrogate pair
                        r"|\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2}))")
_ENTITY = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
_NAME = r"(?-i:[A-Z][\w\-]*(?:\.[\w\-]+)*(?:\s+[A-Z][\w\-]*(?:\.[\w\-]+)*)?)|[\w\-]+"
_SELF_ID = re.compile(
    r"(\b(?:I am|I['’]m|as|this is)\s+(?:an?\s+)?(?:AI\s+)?(?:large\s+)?(?:language\s+model|model|assistant|chatbot)"
    r"[^.\n]{0,40}?\b(?:developed|created|trained|built|made|provided)\s+by\s+(?:the\s+)?)(" + _NAME + ")",
    re.IGNORECASE)
_SELF_ID_FIRST_PERSON = re.compile(
    r"(\bI(?:\s+was|\s+am|['’]m|\s+have\s+been)\s+(?:[\w\-]+\s+){0,4}?(?:developed|created|trained|built|made|provided|"
    r"fine-tuned)\s+by\s+(?:the\s+)?)(" + _NAME + ")", re.IGNORECASE)
_BEFORE_OWN_NAME = re.compile(r"(?:\bi\s+am|\bi['’]m|\bthis\s+is|\bmy\s+name\s+is|\bcall\s+me)\s+(?:an?\s+|the\s+)?\Z")
_BEFORE_AS = re.compile(r"\bas\s+\Z")
_AFTER_AS = re.compile(r"\s*,\s*i\b")
# A word split by joiners ("deep-seek", "Open_AI", "Clau-de") or spelled out ("c l a u d e").
_JOINED_WORD = re.compile(r"[a-z0-9]+(?:[\-_]+[a-z0-9]+)+")
# What a reader reads through inside a word, deleted in the reader's view of a text: HTML tags
# ("Cl<b></b>aude", "<span>Clau</span><span>de</span>"), a markdown link's brackets and target ("[Cl](..)[aude](..)"), quotes joined by a code operator
# ('"clau" + "de"'), a hyphen at a line break, and punctuation, markup or an emoji between
# letters ("C/l/a/u/d/e", "**Cl**aude", "Cl'aude"); and the separators of letters spelled out
# one by one ("c l a u d e", "C, l, a", one letter per line).
_TAGS = r"(?:</?[a-z][a-z0-9]{0,20}(?:\s[^<>\n]{0,200})?/?>)+"  # HTML tags, which a rendered page does not show
_TAGS_BETWEEN = re.compile(rf"{_TAGS}(?=\w)|(?<=\w){_TAGS}")  # inside a word or at its edge
_READ_THROUGH = re.compile(_TAGS_BETWEEN.pattern + r"|\[(?=[^\[\]\n]{1,80}\]\([^()\s]{0,400}\))|\]\([^()\s]{0,400}\)"
                           r"|(?<=\w)([\"'`])\s*(?:\+|\.\.?|\|\||&)?\s*\1(?=\w)|(?<=\w)-[ \t]*\r?\n\s*(?=\w)"
                           r"|(?<=[^\W_])(?:[^\w\s]|_)+(?=[^\W_])")
_LINK_TARGET = re.compile(r"\]\([^()\s]{0,400}\)")
_SPELLED = re.compile(r"(?<![^\W_])[^\W_]([\W_]{1,3})(?:[^\W_]\1)+[^\W_](?![^\W_])")  # one separator throughout
_SPELLED_SEPARATOR = re.compile(r"[\W_]+")
_LEETSPEAK = (str.maketrans("013457@$", "oleastas"), str.maketrans("013457@$", "oieastas"))  # 1 reads as l or i
_SQUEEZE = re.compile(r"[\W_]+")
_NOT_ALNUM_BYTES = bytes(b for b in range(128) if not chr(b).isalnum())
# ASCII text of letters and spaces alone (plain prose) has nothing to read through unless it
# spells letters out one by one (letters 'a', spaces ' ').
_LETTERS_AND_SPACES = bytes(b for b in range(128) if chr(b).isalpha() or chr(b).isspace())
_AS_LETTERS_AND_SPACES = bytes.maketrans(bytes(range(128)), bytes(ord("a") if chr(b).isalpha() else ord(" ")
                                                                   for b in range(128)))
_LEET_DIGIT = re.compile(r"[^\W\d_][0-9@$]|[0-9@$][^\W\d_]")
# Letters that leetspeak writes as digits, turned into those digits: "C1aude" and "claude" read
# alike ("c14ud3"), and so do "G3m1n1" and "gemini"; a cheap look at every leetspeak spelling.
_AS_DIGITS = str.maketrans("lioeast", "1103457")  # (for the terms; texts use the bytes table)
_AS_DIGITS_BYTES = bytes.maketrans(b"lioeast", b"1103457")
# Version strings of well-known models without their name ("4o-mini-2024-07-18", "3-5-sonnet-20241022").
_DATE = r"\d{4}(?:-?\d\d){0,2}"
_BARE_VERSION = re.compile(rf"(?<![\w.])(?:4o(?:-(?:mini|nano|audio|realtime|search))?(?:-\d{{4}}-\d\d-\d\d)?"
                           rf"|\d[.\-]\d-(?:turbo|sonnet|opus|haiku|flash|mini|nano)(?:-(?:preview|latest|exp|lite|{_DATE}))*"
                           rf"|\d\.\d-pro(?:-(?:preview|latest|exp|{_DATE}))*"
                           rf"|(?:sonnet|opus|haiku|turbo|mini|flash)-\d{{4}}-?\d\d-?\d\d)(?![\w.])")
_VERSION_WORDS = ("turbo", "sonnet", "opus", "haiku", "flash", "mini", "nano", "-pro")
# base64 and hex tokens (tool arguments, 8+ characters with a digit): decoded, scrubbed and encoded
# again when they hide an identity.
_ENCODED = re.compile(r"(?<![\w+/=-])(?=[A-Za-z0-9+/_-]{8})[A-Za-z+/_-]*\d[A-Za-z0-9+/_-]*={0,2}(?![\w+/=-])")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")
_TOKEN_SHAPE = bytes.maketrans(bytes(range(256)), bytes(
    ord("0") if chr(b).isdigit() else ord("a") if b < 128 and (chr(b).isalpha() or chr(b) in "+/_-") else ord(" ")
    for b in range(256)))
# The first word of a turn, and its leading "[turn 3] (role)" line.
_FIRST_WORD = re.compile(r"\s*(\S+)")
# A speaker line's nested mark: "[turn 3] (Orchestrator (-> WebSurfer))", "(Orchestrator (thought))".
_SPEAKER_MARK = re.compile(r"(?m)^(\s*\[[^\]\n]{1,40}\] \([^()\n]+?)( \((?:-> ([^()\n]+)|([^()\n]+))\))\)")
_PART_HEADER = re.compile(r"\s*\[[^\]\n]{1,40}\](?: \([^\n]*\))?[ \t]*(?:\n|\Z)")
# A masked name inside an identifier or path becomes a neutral word of its shape ("my_model_tool").
NEUTRAL = {"model": "model", "vendor": "vendor", "agent": "agent"}
_IDENTIFIER_JOINERS = "_/\\.-"
_GAP = re.compile(r"(?:'s)?[\s\-_/.:]{0,2}")
IGNORED_STUDY_VALUES = frozenset({"", "unknown", "none", "other", "n/a", "null"})
ROLE = "role"  # the Hit category of a harness's speaker or role name
PLACEHOLDERS = {"url": "[URL]", "self_identification": "[VENDOR]", "agent": "[AGENT]", "vendor": "[VENDOR]",
                "model": "[MODEL]"}
CATEGORIES = ("agent", "vendor", "model")
GLUE_MIN_LETTERS = 4
REVERSED_MIN_LETTERS = 5  # shorter names read backwards are ordinary words too ("tpg", "newq")
KEPT_ORDINARY = "ordinary_word"
KEPT_BY_STUDY = "study_keep"


def normalise(text: str) -> str:
    """NFKC, without zero-width and bidirectional control characters (a right-to-left override's
    text turned as the reader sees it) and without combining marks glued to Latin letters."""
    if text.isascii():
        return text
    if "\u202e" in text:
        text = _OVERRIDE.sub(lambda m: m.group(1)[::-1], text)
    return _STRAY_MARKS.sub("", _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text)))


def compact(term: str) -> str:
    """A term's letters and digits (any script), lower case: the form keep lists and audits count by."""
    return re.sub(r"[\W_]+", "", fold(unicodedata.normalize("NFKC", term)).lower())


def _decode_run(run: str) -> str:
    """Percent-encoding, backslash escapes and HTML entities decoded, up to three layers deep."""
    def backslash(match: re.Match[str]) -> str:
        high, low = match.group(1, 2)
        if high:
            return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
        code = int(next(g for g in match.groups() if g), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else match.group(0)

    for _ in range(3):
        decoded = _ENTITY.sub(lambda m: html.unescape(m.group(0)),
                              _BACKSLASH.sub(backslash, _PERCENT_RUN.sub(lambda m: unquote(m.group(0)), run)))
        if decoded == run:
            break
        run = decoded
    return run


def _stem(part: str) -> str | None:
    """The name in a versioned id ("acmebot" in "acmebot-7b", "qwen" in "qwen3.5-9b")."""
    found = re.match(r"([A-Za-z]{4,})(?:[-_.]?\d)", part)
    return found.group(1) if found else None


def study_terms(values: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Identity terms from a study's own values: each whole value, its '/'-separated parts and their stems.

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
                    stem = _stem(part)
                    if stem and stem.lower() not in IGNORED_STUDY_VALUES:
                        terms.add(stem)
        out[category] = sorted(terms)
    return out


@dataclass(frozen=True, kw_only=True)
class Hit:
    """One identity occurrence: masked (``kept`` None) or left readable (``kept`` says why)."""

    category: str
    matched: str
    term: str = ""
    kept: str | None = None


@dataclass(frozen=True)
class _Term:
    category: str
    term: str  # compact form
    pattern: re.Pattern[str]
    glue: bool
    ordinary: bool


@dataclass
class _Span:
    start: int
    end: int
    category: str
    term: str
    placeholder: str | None = None
    kept: str | None = None
    ordinary: bool = False


def _term_regex(term: str, tail: str) -> re.Pattern[str]:
    parts = [p for p in re.split(r"[\s\-_]+", term.strip().lower()) if p]
    joined = re.escape(parts[0])
    for part in parts[1:]:
        joined += (r"[\-_]?" if len(part) == 1 else r"[\s\-_]*") + re.escape(part)
    return re.compile(f"(?P<core>{joined})(?P<tail>{tail})")


def _spellings(term: str) -> list[str]:
    """The forms of a term the automaton looks for: its parts joined by nothing, a space, '-' or '_'."""
    parts = [p for p in re.split(r"[\s\-_]+", term.strip().lower()) if p]
    forms = [parts[0]]
    for part in parts[1:]:
        joiners = ("", "-", "_") if len(part) == 1 else ("", " ", "-", "_")
        forms = [f + j + part for f in forms for j in joiners]
    return forms


def _version_tail(variants: Sequence[str]) -> str:
    words = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
    segment = r"(?:[a-z]*\d[a-z0-9]*(?:\.\d+[a-z0-9]*)*" + (f"|(?:{words})" if words else "") + r")(?![a-z])"
    return r"(?:\d[a-z0-9]*(?:\.\d+[a-z0-9]*)*)?(?:(?:[\-_.:/]|\s(?=\d))" + segment + ")*"


def _lower(text: str) -> str:
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _word_char(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _camel_split(cased: str, i: int) -> bool:
    """A CamelCase boundary before position ``i`` ("claude|Search", "GPT|Browser")."""
    a, b = cased[i - 1], cased[i]
    return (a.islower() and b.isupper()) or (a.isupper() and b.isupper() and i + 1 < len(cased) and cased[i + 1].islower())


class Scrubber:
    """Masks identity terms; built once per study from the vocabulary, the study's values and its kept terms."""

    def __init__(self, vocabulary: Vocabulary | None = None, extra: Mapping[str, Iterable[str]] | None = None,
                 keep: Iterable[str] = (), keep_roles: bool = False) -> None:
        vocab = vocabulary or default_vocabulary()
        self.keep_roles = keep_roles
        self._vocabulary = vocab
        self._role_names = {name.lower(): neutral for name, neutral in vocab.roles}
        self._boilerplate = dict(vocab.boilerplate)
        self._role_words = [*self._role_names, *(w.lower() for w in self._boilerplate),
                            *(w.lower() for w, _ in [*vocab.role_suffixes, *vocab.role_nouns])]
        names = "|".join(re.escape(n) for n in sorted(self._role_names, key=len, reverse=True)) or "(?!)"
        stock = "|".join(re.escape(n) for n in self._boilerplate) or "(?!)"
        # a name as a word or at a CamelCase boundary ("WebSurferTool"); a stock reply in capitals ("TERMINATE")
        self._roles = re.compile(rf"(?i:(?<![A-Za-z])(?P<name>{names})(?![a-z]))|(?<![A-Za-z])(?P<stock>{stock})(?![A-Za-z])")
        extra = {k: [t for t in v if len(t.strip()) >= 2] for k, v in (extra or {}).items()}
        study = {compact(t) for items in extra.values() for t in items}
        self.keep = check_keep(keep, vocab, extra)
        listed = {"agent": vocab.harnesses, "vendor": vocab.vendors, "model": vocab.models}
        tails = {"model": _version_tail(vocab.variants)}
        terms: dict[str, list[_Term]] = {}
        seen: set[tuple[str, str]] = set()
        for category in CATEGORIES:
            for raw in [*listed[category], *extra.get(category, [])]:
                name = compact(raw)
                if not name or (category, raw.lower()) in seen:
                    continue
                seen.add((category, raw.lower()))
                ordinary = raw.lower() in vocab.ordinary and name not in study
                letters = sum(c.isalpha() for c in name)
                one_letter_part = any(len(p) == 1 for p in re.split(r"[\s\-_]+", raw.strip()))  # "command-r"
                glue = not ordinary and not one_letter_part and (letters >= GLUE_MIN_LETTERS or not name.isascii()
                                                                 or raw.lower() in vocab.glued_short)
                folded = fold(unicodedata.normalize("NFKC", raw))  # the text is matched folded: "ГРТ" as "ГPT"
                term = _Term(category=category, term=name, glue=glue, ordinary=ordinary,
                             pattern=_term_regex(folded, tails.get(category, "")))
                for key in _spellings(folded):
                    terms.setdefault(key, []).append(term)
        self._terms = terms
        self._glue_keys = {key for key, group in terms.items() if any(t.glue for t in group)}
        # looked for in a reader's views too: an ordinary-word name spelled out or in leetspeak ("M1stral-7B")
        # is no ordinary word any more
        self._spread_keys = self._glue_keys | {key for key, group in terms.items() if key.isalpha() and key.isascii()
                                               and any(_reads_spread(t) for t in group)}
        self._domains = sorted({d.lower() for d in vocab.domains})
        self._allow = vocab.ordinary_containing
        automaton = ahocorasick.Automaton()
        for key in self._terms:
            automaton.add_word(key, ("term", key))
        for domain in self._domains:
            automaton.add_word(domain, ("domain", domain))
        for word in self._allow:
            automaton.add_word(word, ("allow", word))
        for key in self._glue_keys:  # a distinctive name written backwards, as a word ("edualC")
            if key.isascii() and key.isalpha() and len(key) >= REVERSED_MIN_LETTERS and key[::-1] not in automaton:
                automaton.add_word(key[::-1], ("reversed", key))
        automaton.make_automaton()
        self._automaton = automaton
        as_digits: dict[str, list[str]] = {}  # distinctive terms alone, in leetspeak digits: a cheap first look
        for key in self._spread_keys:
            if key.replace(" ", "") == key:
                as_digits.setdefault(key.translate(_AS_DIGITS), []).append(key)
        self._glued = ahocorasick.Automaton()
        for spelled, keys in as_digits.items():
            self._glued.add_word(spelled, keys)
        self._glued.make_automaton()

    # -- finding ------------------------------------------------------------------------------

    def _candidates(self, cased: str, low: str) -> tuple[list[_Span], list[_Span]]:
        """(term candidates, domain spans) in the folded text ``cased`` and its lower-case view ``low``."""
        n = len(low)
        found: list[_Span] = []
        domains: list[_Span] = []
        allowed: list[tuple[int, int]] = []
        plain_glued: Counter = Counter()
        for last, (kind, key) in self._automaton.iter(low):
            start, end = last - len(key) + 1, last + 1
            if kind == "term" and key in self._spread_keys:
                plain_glued[key] += 1
            if kind == "allow":
                allowed.append((start, end))
            elif kind == "reversed":
                if (start == 0 or not _word_char(low[start - 1])) and (end == n or not _word_char(low[end])):
                    term = next(t for t in self._terms[key] if t.glue)
                    found.append(_Span(start, end, term.category, term.term, PLACEHOLDERS[term.category]))
            elif kind == "domain":
                if (start == 0 or low[start - 1] == "." or not (_word_char(low[start - 1]) or low[start - 1] == "-")) \
                        and (end == n or not (_word_char(low[end]) or low[end] == "-")):
                    while start > 0 and (_word_char(low[start - 1]) or low[start - 1] in "._-"):
                        start -= 1
                    if end < n and low[end] in "/:":
                        while end < n and not low[end].isspace():
                            end += 1
                    domains.append(_Span(start, end, "url", key, PLACEHOLDERS["url"]))
            else:
                best: _Span | None = None
                for term in self._terms[key]:
                    match = term.pattern.match(low, start)
                    if match is None:
                        continue
                    core = match.end("core")
                    if not term.glue and not ((start == 0 or not _word_char(low[start - 1]) or _camel_split(cased, start))
                                              and (core == n or not (low[core].isascii() and low[core].isalpha())
                                                   or _camel_split(cased, core))):
                        continue
                    stop = match.end()
                    for k in range(core + 1, stop):
                        if _camel_split(cased, k):
                            stop = k
                            break
                    if best is None or stop > best.end:
                        best = _Span(start, stop, term.category, term.term, PLACEHOLDERS[term.category],
                                     ordinary=term.ordinary and not any(c.isdigit() for c in low[core:stop]))
                if best is not None:
                    found.append(best)
        if self._spread_apart(low, plain_glued):  # one cheap look for terms spread over separators
            if ("-" in low or "_" in low) and self._glued_across_joiners(low, plain_glued):
                found += self._split_words(low, _JOINED_WORD)
            found += self._read_through(low)
        for version in _BARE_VERSION.finditer(low) if "4o" in low or (
                "-" in low and any(word in low for word in _VERSION_WORDS)) else ():
            found.append(_Span(version.start(), version.end(), "model", version.group(0), PLACEHOLDERS["model"]))
        if allowed:
            found = [s for s in found if not any(a <= s.start and s.end <= b for a, b in allowed)]
        found.sort(key=lambda s: (s.start, -s.end))
        chosen: list[_Span] = []
        for span in found:
            if not chosen or span.start >= chosen[-1].end:
                chosen.append(span)
        return chosen, domains

    def _glued_across_joiners(self, low: str, plain: Counter) -> bool:
        """Whether removing '-' and '_' reveals a glued term the plain pass did not see (one cheap C pass)."""
        joined = Counter(key for _, (kind, key) in self._automaton.iter(low.replace("-", "").replace("_", ""))
                         if kind == "term" and key in self._glue_keys)
        return bool(joined - plain)

    def _spread_apart(self, low: str, plain: Counter) -> bool:
        """Whether the text with every separator removed, or its words with digits read as
        leetspeak, hold a distinctive term more often than the plain pass found it."""
        if low.isascii():
            data = low.encode("ascii")
            if not data.translate(None, _LETTERS_AND_SPACES):
                spaced = b" " + data.translate(_AS_LETTERS_AND_SPACES) + b" "
                if b" a a " not in spaced and b" a  a " not in spaced:
                    return False
        if "](" in low:
            low = _LINK_TARGET.sub("", low)  # "[Cl](..)[aude](..)": the targets stand between the letters
        if "<" in low:
            low = _TAGS_BETWEEN.sub("", low)  # "Cl<b></b>aude": the tags' letters stand between the letters
        if low.isascii():
            reading = low.encode("ascii").translate(_AS_DIGITS_BYTES, _NOT_ALNUM_BYTES).decode("ascii")
        else:
            reading = _SQUEEZE.sub("", low).encode("utf-8", "surrogatepass").translate(_AS_DIGITS_BYTES).decode(
                "utf-8", "surrogatepass")
        return bool(Counter(key for _, keys in self._glued.iter(reading) for key in keys) - plain)

    def _read_through(self, low: str) -> list[_Span]:
        """Distinctive terms a reader reads through separators, markup, spelled-out letters or
        leetspeak ("C/l/a/u/d/e", "**Cl**aude", "C1aude"), standing as a word in the reader's view.

        The view deletes characters, so each of its positions maps back to the text.
        """
        deleted = [(m.start(), m.end()) for m in _READ_THROUGH.finditer(low)]
        for word in _SPELLED.finditer(low):
            deleted += [(word.start() + m.start(), word.start() + m.end())
                        for m in _SPELLED_SEPARATOR.finditer(word.group(0))]
        deleted.sort()
        kept, origin, last = [], [], 0  # the view's pieces and where each starts in ``low``
        for start, end in deleted:
            if start > last:
                kept.append(low[last:start])
                origin.append(last)
            last = max(last, end)
        kept.append(low[last:])
        origin.append(last)
        view = "".join(kept)
        firsts = list(itertools.accumulate((len(k) for k in kept[:-1]), initial=0))

        def place(i: int) -> int:
            piece = bisect.bisect_right(firsts, i) - 1
            return origin[piece] + i - firsts[piece]

        views = [(view, None)]
        if _LEET_DIGIT.search(view):
            views += [(view.translate(table), view) for table in _LEETSPEAK]
        out, n = [], len(view)
        for seen, leet_of in views:
            for last_char, (kind, key) in self._automaton.iter(seen):
                start = last_char - len(key) + 1
                if kind != "term" or (leet_of is not None and not any(not c.isalpha() for c in leet_of[start:last_char + 1])):
                    continue
                if key.isascii() and not ((start == 0 or not seen[start - 1].isalnum())
                                          and (last_char + 1 == n or not (leet_of or seen)[last_char + 1].isalpha())):
                    continue  # in these views a term stands as a word: "src/open/ai" is not read as one
                term = max((t for t in self._terms[key] if _reads_spread(t) and t.pattern.match(seen, start)
                            and (leet_of is None or len(t.term) >= GLUE_MIN_LETTERS)), default=None,
                           key=lambda t: len(t.term))
                if term is None:
                    continue
                end = term.pattern.match(seen, start).end()
                first, stop = place(start), place(end - 1) + 1
                if stop - first != end - start or leet_of is not None:
                    out.append(_Span(first, stop, term.category, term.term, PLACEHOLDERS[term.category]))
        return out

    def _split_words(self, low: str, words: re.Pattern[str]) -> list[_Span]:
        """Glued terms spelled across joiners inside one word ("deep-seek", "c l a u d e" -> one mask)."""
        out = []
        for word in words.finditer(low):
            positions = [i for i in range(word.start(), word.end()) if low[i].isalnum()]
            squeezed = "".join(low[i] for i in positions)
            matches = [(last - len(key) + 1, last + 1, kind, key) for last, (kind, key) in self._automaton.iter(squeezed)]
            allowed = [(a, b) for a, b, kind, _ in matches if kind == "allow"]
            for first, last, kind, key in matches:
                start, end = positions[first], positions[last - 1] + 1
                if kind != "term" or end - start == len(key) or any(a <= first and last <= b for a, b in allowed):
                    continue  # not split (the plain pass sees it), or inside an ordinary word
                term = max((t for t in self._terms[key] if t.glue and t.pattern.fullmatch(key)), default=None,
                           key=lambda t: len(t.term))
                if term is not None:
                    out.append(_Span(start, end, term.category, term.term, PLACEHOLDERS[term.category]))
        return out

    def _decide(self, low: str, spans: list[_Span]) -> None:
        """Mark ordinary-word and kept candidates; an ordinary word is masked only in a model context."""
        for span in spans:
            if span.ordinary:
                if _BEFORE_OWN_NAME.search(low, max(0, span.start - 30), span.start) or (
                        _BEFORE_AS.search(low, max(0, span.start - 4), span.start) and _AFTER_AS.match(low, span.end)):
                    span.category, span.ordinary = "self_identification", False
                else:
                    span.kept = KEPT_ORDINARY
            elif span.term in self.keep:
                span.kept = KEPT_BY_STUDY
        changed = True
        while changed:  # "Claude Sonnet", "Google Gemini": an ordinary word next to a masked identity
            changed = False
            for i, span in enumerate(spans):
                if span.kept != KEPT_ORDINARY:
                    continue
                if (i > 0 and spans[i - 1].kept is None and _GAP.fullmatch(low, spans[i - 1].end, span.start)) or (
                        i + 1 < len(spans) and spans[i + 1].kept is None and _GAP.fullmatch(low, span.end, spans[i + 1].start)):
                    span.kept = KEPT_BY_STUDY if span.term in self.keep else None
                    changed = changed or span.kept is None

    def _spans(self, text: str) -> list[_Span]:
        """Every masked and kept span of a normalised text, non-overlapping, in order."""
        cased = fold(text)
        low = _lower(cased)
        terms, domains = self._candidates(cased, low)
        self._decide(low, terms)
        masked = sorted(domains, key=lambda s: (s.start, -s.end))
        identities = sorted((s for s in [*terms, *domains] if s.kept is None), key=lambda s: s.start)
        starts = [s.start for s in identities]
        for url in _URL.finditer(low) if "http" in low or "www." in low else ():
            first = bisect.bisect_left(starts, url.start())
            if first < len(starts) and starts[first] < url.end():
                masked.append(_Span(url.start(), url.end(), "url", identities[first].term, PLACEHOLDERS["url"]))
        if " by " in low and (" i " in low or "\ni " in low or low.startswith("i ") or "i'm" in low or "i’m" in low
                              or "as " in low or "this is" in low):
            for pattern in (_SELF_ID, _SELF_ID_FIRST_PERSON):
                for found in pattern.finditer(cased):
                    masked.append(_Span(found.start(2), found.end(2), "self_identification",
                                        compact(found.group(2)), PLACEHOLDERS["self_identification"]))
        out: list[_Span] = []
        for span in sorted(masked, key=lambda s: (s.start, -s.end)):
            if not out or span.start >= out[-1].end:
                out.append(span)
            elif span.end > out[-1].end and span.category == "url" == out[-1].category:
                out[-1].end = span.end
        blocked, j = list(out), 0
        for span in terms:  # sorted by start, as are the blocked spans (which do not overlap)
            while j < len(blocked) and blocked[j].end <= span.start:
                j += 1
            if j == len(blocked) or blocked[j].start >= span.end:
                out.append(span)
        return sorted(out, key=lambda s: s.start)

    def _decode_escapes(self, text: str) -> str:
        """Decode an escaped word where its decoded form names an identity; leave the rest as written."""
        if "\\" not in text and "&" not in text and "%" not in text:
            return text
        parts, last, scanned = [], 0, 0
        for escape in _ESCAPE.finditer(text):
            if escape.start() < scanned:
                continue  # inside the run just read
            start = escape.start()
            while start > scanned and _word_char(text[start - 1]):
                start -= 1
            scanned = _ESCAPED_RUN.match(text, escape.start()).end()
            run = text[start:scanned]
            if not _MAY_HIDE_LETTERS.search(run):
                continue  # only escapes of scripts that fold to no ASCII letter (CJK, emoji halves...)
            decoded = normalise(_decode_run(run))
            if decoded != run and any(s.kept is None for s in self._spans(decoded)):
                parts += [text[last:start], decoded]
                last = scanned
        return "".join(parts) + text[last:] if parts else text

    def _encoded(self, text: str) -> tuple[str, list[Hit]]:
        """base64 and hex tokens whose text names an identity, scrubbed and encoded again (same encoding)."""
        hits: list[Hit] = []

        def rescrub(token: re.Match[str]) -> str:
            raw = token.group(0)
            hexadecimal = _HEX.fullmatch(raw) is not None
            if not hexadecimal and (raw.islower() or raw.isupper()):
                return raw  # base64 of text mixes cases (and has a digit); ordinary words do not
            decoded = decoded_token(raw, hexadecimal)
            if decoded is None:
                return raw
            clean, found = self.scrub(decoded, encoded=False)
            if clean == decoded:
                return raw
            hits.extend(found)
            data = clean.encode("utf-8")
            if hexadecimal:
                return data.hex().upper() if raw.isupper() else data.hex()
            urlsafe = "-" in raw or "_" in raw
            out = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode("ascii")
            return out if raw.endswith("=") else out.rstrip("=")

        if not _may_encode(text):
            return text, hits
        return _ENCODED.sub(rescrub, text), hits

    def scrub(self, text: str, *, encoded: bool = True) -> tuple[str, list[Hit]]:
        """The masked text and every identity occurrence (masked or kept, with the original string).

        A masked name glued inside an identifier or path becomes a neutral word of the same
        case shape ("claude_search" -> "model_search", "DeepSeekClient" -> "VendorClient"),
        elsewhere a placeholder ("[MODEL]"). ``encoded``: also base64 and hex tokens.
        """
        text = self._decode_escapes(normalise(text))
        hits: list[Hit] = []
        if encoded:
            text, hits = self._encoded(text)
        pieces, last = [], 0
        for span in self._spans(text):
            hits.append(Hit(category=span.category, matched=text[span.start:span.end], term=span.term, kept=span.kept))
            if span.kept is None:
                pieces += [text[last:span.start], _mask(text, span)]
                last = span.end
        return self._neutral_roles("".join(pieces) + text[last:], hits)

    def scrub_across(self, parts: Sequence[str]) -> tuple[list[str], list[Hit]]:
        """Scrubbed parts (turns) with a name split across the end of one and the start of the
        next ("... I am Clau" | "de, your assistant") masked in both halves; a leading
        "[turn 3] (role)" line of a part is not its start."""
        parts, hits = list(parts), []
        for i in range(len(parts) - 1):
            kept = parts[i].rstrip()
            left = kept.rsplit(None, 1)[-1] if kept else ""
            header = _PART_HEADER.match(parts[i + 1])
            head = _FIRST_WORD.match(parts[i + 1], header.end() if header else 0)
            if not left or head is None:
                continue
            right, cut = head.group(1), len(kept) - len(left)
            joined = left + right
            low = _lower(fold(joined)).encode("utf-8", "surrogatepass").translate(_AS_DIGITS_BYTES, _NOT_ALNUM_BYTES)
            if next(self._glued.iter(low.decode("utf-8", "surrogatepass")), None) is None:
                continue  # no distinctive term in the two words at all: the common case, decided cheaply
            for span in self._spans(joined):
                if span.kept is None and span.start < len(left) < span.end:
                    hits.append(Hit(category=span.category, matched=joined[span.start:span.end], term=span.term))
                    parts[i] = parts[i][:cut + span.start] + span.placeholder + parts[i][len(kept):]
                    parts[i + 1] = (parts[i + 1][:head.start(1)] + span.placeholder
                                    + parts[i + 1][head.start(1) + span.end - len(left):])
                    break
        return parts, hits

    def _neutral_roles(self, text: str, hits: list[Hit]) -> tuple[str, list[Hit]]:
        """A harness's speaker and role names replaced by neutral ones ("Orchestrator (-> WebSurfer)" ->
        "Coordinator to Browser", "Verification_Expert" -> "Verification specialist"), or kept and counted.
        A speaker line's nested marks ("(-> X)", "(thought)": Magentic-One's log format) become words too."""
        lowered = text.lower()
        if not any(word in lowered for word in self._role_words) and "))" not in text:
            return text, hits

        def count(name: str, term: str | None = None) -> None:
            hits.append(Hit(category=ROLE, matched=name, term=compact(term or name),
                            kept=KEPT_BY_STUDY if self.keep_roles else None))

        def neutral(found: re.Match[str]) -> str:
            if found.group("name"):
                name = found.group("name")
                new = self._role_names[name.lower()]
                new = new.upper() if name.isupper() else new if name[0].isupper() else new.lower()
            else:
                name = found.group("stock")
                new = self._boilerplate[name]
            count(name)
            return found.group(0) if self.keep_roles else new

        def agent(found: re.Match[str]) -> str:
            new = neutral_agent_name(found.group(0), self._vocabulary)
            if new is None or found.group(0).lower() in self._role_names:  # a listed name: counted by that pass
                return found.group(0)
            count(found.group(0), re.split(r"[_\s]|(?<=[a-z])(?=[A-Z])", found.group(0))[-1])  # the telltale: its ending
            return found.group(0) if self.keep_roles else new

        def speaker(found: re.Match[str]) -> str:
            count(found.group(2))
            if self.keep_roles:
                return found.group(0)
            return found.group(1) + (f" to {found.group(3)})" if found.group(3) else f", {found.group(4)})")

        text = AGENT_NAME.sub(agent, self._roles.sub(neutral, text))
        return _SPEAKER_MARK.sub(speaker, text), hits


def _reads_spread(term: _Term) -> bool:
    """Whether a term counts in a reader's views: a distinctive one, or an ordinary word of 5+ letters."""
    return term.glue or (term.ordinary and len(term.term) >= REVERSED_MIN_LETTERS)


def _may_encode(text: str) -> bool:
    """Whether a base64 or hex token can be here: a digit beside a letter (or a run of digits)."""
    shape = text.encode("utf-8", "surrogatepass").translate(_TOKEN_SHAPE)
    return b"a0" in shape or b"0a" in shape or b"00000000" in shape


def _mask(text: str, span: _Span) -> str:
    """The placeholder of a span, or a neutral word of its case shape inside an identifier or path."""
    neutral = NEUTRAL.get(span.category)
    if neutral is None:
        return span.placeholder

    def glued(i: int, step: int) -> bool:
        if not 0 <= i < len(text):
            return False
        c = text[i]
        if c.isascii() and c.isalnum():
            return True
        after = i + step
        return c in _IDENTIFIER_JOINERS and 0 <= after < len(text) and (
            (text[after].isascii() and text[after].isalnum()) or c in "/\\")

    if not (glued(span.start - 1, -1) or glued(span.end, 1)):
        return span.placeholder
    shown = text[span.start:span.end]
    letters = [c for c in shown if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return neutral.upper()
    return neutral.capitalize() if letters and letters[0].isupper() else neutral



def check_keep(keep: Iterable[str], vocabulary: Vocabulary, extra: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The study's kept terms (compact forms): vendor or harness names of the vocabulary only.

    Model names and the study's own agent/backbone/family values are always masked.
    """
    models = {compact(t) for t in vocabulary.models} - {compact(t) for t in vocabulary.ordinary}
    keepable = {compact(t) for t in [*vocabulary.vendors, *vocabulary.harnesses, *vocabulary.ordinary]}
    study = {compact(t) for items in extra.values() for t in items}
    out = set()
    for term in keep:
        name = compact(term) if isinstance(term, str) else ""
        if not name:
            raise InputError(f"keep: {term!r} is not a term; expected a vendor or harness name such as 'Google'")
        if name in study:
            raise InputError(f"keep: {term!r} is one of the study's own agent/backbone/family values; those are always masked")
        if name in models:
            raise InputError(f"keep: {term!r} is a model name; model names are always masked")
        if name not in keepable:
            raise InputError(f"keep: {term!r} is not in the identity vocabulary (samples/identity_vocabulary.toml); "
                             "nothing to keep")
        out.add(name)
    return frozenset(out)
