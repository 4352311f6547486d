"""Leak detector: finds identity terms in a scrubbed text, independently of the scrubber.

It shares the vocabulary with ``samples.scrub`` (what to look for) but none of its
patterns or normalisation, so it can see what the scrubber missed. It first undoes
every disguise it knows, on the whole text: HTML entities, percent-encoding and
backslash escapes (three layers deep), NFKD with combining marks and format
characters dropped, Unicode look-alikes folded to ASCII, case folded. Text shown
right-to-left by an override (U+202E) is read reversed, as a reader sees it. Then it
removes the separators that glue an identifier together (``-``, ``_``, spaced-out
letters "c l a u d e") and searches the letters for every identity term:

* distinctive terms (4+ letters, or listed as ``glued_short``) anywhere, even glued
  inside a word ("askclaude"), unless inside a listed ordinary word ("philanthropic");
* shorter terms as whole words (a version may follow: "o3-mini");
* ordinary-word terms ("sonnet", "Google") only in a model context: a version after
  them, a mask placeholder beside them, or self-identification ("I am Grok", "I was
  trained by Google");
* listed domains as host names.

It then reads the text as a person does, in a second view where what a reader reads
through is gone: HTML tags inside a word ("Cl<b></b>aude"), separators and markup between letters ("C/l/a/u/d/e", "G|P|T",
"**Cl**aude", "Cl'aude", an emoji inside the word), letters spread one per line or
with double spaces, markdown links between the halves of a word ("[Cl](..)[aude](..)"),
a hyphen at a line break, quoted pieces of code concatenated (``"clau" + "de"``); and
in that view with leetspeak digits read as letters ("C1aude", "0penAI"). In these views
a term must stand as a word. Bare version strings of well-known models
("4o-mini-2024-07-18", "3-5-sonnet-20241022") count as model names; base64 and hex
tokens are decoded and read too (tool arguments). ``find_across`` reads the end of one
turn into the start of the next, for a name split across two turns.

A distinctive name of 5+ letters written backwards counts as a word ("edualc").
Terms the study keeps are not searched. ``accord blind`` writes no task while this
finds anything.
"""

from __future__ import annotations

import base64
import html
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from urllib.parse import unquote

import ahocorasick

from samples.confusables import fold_table
from samples.vocabulary import AGENT_NAME, Vocabulary, default_vocabulary, neutral_agent_name

_RLO = re.compile("\u202e([^\u202a-\u202e\u2066-\u2069\n]*)")  # right-to-left override: shown reversed
# The reader's view: what a person reads through between letters.
_LINK = re.compile(r"\[([^\[\]\n]{1,80})\]\([^()\s]{0,400}\)")
_TAG_RUN = r"(?:</?[a-z][a-z0-9]{0,20}(?:\s[^<>\n]{0,200})?/?>)+"
_TAGS = re.compile(rf"{_TAG_RUN}(?=\w)|(?<=\w){_TAG_RUN}")  # HTML tags inside a word or at its edge
_CONCAT = re.compile(r"(?<=\w)([\"'`])\s*(?:\+|\.\.?|\|\||&)?\s*\1(?=\w)")
_LINE_BREAK = re.compile(r"(?<=\w)-[ \t]*\r?\n\s*(?=\w)")
_SPREAD = re.compile(r"(?<![^\W_])(?:[^\W_](?P<gap>[\W_]{1,3}))(?:[^\W_](?P=gap))+[^\W_](?![^\W_])")
_INNER = re.compile(r"(?<=[^\W_])(?:[^\w\s]|_)+(?=[^\W_])")
_LEET = (str.maketrans("013457@$", "oleastas"), str.maketrans("013457@$", "oieastas"))  # 1 reads as l or i
_LEET_HINT = re.compile(r"[^\W\d_][0-9@$]|[0-9@$][^\W\d_]")
_DIGIT_LETTERS = bytes.maketrans(b"lioeast", b"1103457")  # leetspeak's letters as its digits, for a cheap look
_NOT_ALNUM = bytes(b for b in range(128) if not chr(b).isalnum())
_PROSE = b"abcdefghijklmnopqrstuvwxyz \t\n\r\f\v"
_LETTER_OR_SPACE = bytes.maketrans(_PROSE, b"x" * 26 + b" " * 6)
_BARE_VERSION = re.compile(
    r"(?<![\w.])(?:4o(?:-(?:mini|nano|audio|realtime|search))?(?:-\d{4}-\d\d-\d\d)?"
    r"|\d[.\-]\d-(?:turbo|sonnet|opus|haiku|flash|mini|nano)(?:-(?:preview|latest|exp|lite|\d{4}(?:-?\d\d){0,2}))*"
    r"|\d\.\d-pro(?:-(?:preview|latest|exp|\d{4}(?:-?\d\d){0,2}))*"
    r"|(?:sonnet|opus|haiku|turbo|mini|flash)-\d{4}-?\d\d-?\d\d)(?![\w.])")
_VERSION_WORDS = ("turbo", "sonnet", "opus", "haiku", "flash", "mini", "nano", "-pro")
_ENCODED = re.compile(r"(?<![\w+/=-])(?=[A-Za-z0-9+/_-]{8})[A-Za-z+/_-]*\d[A-Za-z0-9+/_-]*={0,2}(?![\w+/=-])")
_NOT_LETTERS = re.compile(r"[\W_]+")
_NOT_DIGITS = bytes(b for b in range(256) if not 48 <= b <= 57)
_KINDS = bytes(ord("d") if 48 <= b <= 57 else ord("x") if b < 128 and (chr(b).isalpha() or chr(b) in "+/_-") else 32
               for b in range(256))
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")
_HEADER = re.compile(r"\A\s*\[[^\]\n]{1,40}\](?: \([^\n]*\))?[ \t]*\n?")  # a turn's "[turn 3] (role)" line
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
    """Format characters, combining marks and blank fillers dropped, look-alikes folded to ASCII."""
    table: dict[int, str | None] = dict(fold_table())
    for code in [*range(0x80, 0x30000), *range(0xE0000, 0xE1000)]:
        if unicodedata.category(chr(code)) in ("Mn", "Me", "Cf"):
            table[code] = None
    for code in (0x115F, 0x1160, 0x3164, 0xFFA0):  # Hangul fillers: letters (Lo) that show as nothing
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
    if "\u202e" in text:
        text = _RLO.sub(lambda m: m.group(1)[::-1], text)
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).translate(_reveal_table())
    return text.casefold()


def _compact(term: str) -> str:
    return "".join(c for c in reveal(term) if c.isalnum())


def _read_through(low: str) -> str:
    """The revealed text without what a reader reads through between the letters of a word."""
    if "](" in low:
        low = _LINK.sub(r"\1", low)
    if "<" in low:
        low = _TAGS.sub("", low)
    if "'" in low or '"' in low or "`" in low:
        low = _CONCAT.sub("", low)
    if "-" in low:
        low = _LINE_BREAK.sub("", low)
    low = _SPREAD.sub(lambda m: re.sub(r"[\W_]", "", m.group(0)), low)
    return _INNER.sub("", low)


def decoded_token(token: str, hexadecimal: bool) -> str | None:
    """A base64 or hex token's text when it decodes to printable UTF-8, else None (the scrubber decodes with it too)."""
    try:
        if hexadecimal:
            raw = bytes.fromhex(token)
        else:
            token = token.rstrip("=").replace("-", "+").replace("_", "/")
            raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return text if all(c.isprintable() or c.isspace() for c in text) else None


class LeakDetector:
    """Identity terms that survive in a text; built from the vocabulary, the study's values and its kept terms."""

    def __init__(self, vocabulary: Vocabulary | None = None, extra: Mapping[str, Iterable[str]] | None = None,
                 keep: Iterable[str] = (), keep_roles: bool = False) -> None:
        vocab = vocabulary or default_vocabulary()
        self._role_words: tuple[str, ...] = ()
        if not keep_roles:  # a harness's speaker names, agent-name endings and stock replies
            names = sorted((name.lower() for name, _ in vocab.roles), key=len, reverse=True)
            ends = [name for name, _ in [*vocab.role_suffixes, *vocab.role_nouns]]
            stock = [name for name, _ in vocab.boilerplate]
            self._vocabulary = vocab
            self._role_words = (*names, *(w.lower() for w in [*ends, *stock]), "))")
            self._role_name = re.compile(rf"(?<![a-z])({'|'.join(map(re.escape, names)) or '(?!)'})(?![a-z])")
            # a stock reply, or a speaker line's Magentic-One mark ("(Orchestrator (-> WebSurfer))")
            self._role_mark = re.compile(rf"(?<![A-Za-z])({'|'.join(map(re.escape, stock)) or '(?!)'})(?![A-Za-z])"
                                         r"|^\s*\[[^\]\n]{1,40}\] \([^()\n]+ \([^()\n]+\)\)", re.MULTILINE)
        study = {_compact(t) for items in (extra or {}).values() for t in items if len(t.strip()) >= 2}
        kept = {_compact(t) for t in keep}
        ordinary = {_compact(t) for t in vocab.ordinary} - study - kept
        every = [t for t in [*vocab.models, *vocab.vendors, *vocab.harnesses] if "." not in t]  # "Z.ai": a domain
        every += [t for items in (extra or {}).values() for t in items if len(t.strip()) >= 2]
        glued = {_compact(t) for t in vocab.glued_short}
        # a term in another script is glued (Han and kana have no spaces; "ГРТ_key");
        # a single-letter part ("command-r") makes a term a whole word only: "commandant" is not "command a"
        whole_words = {_compact(t) for t in every if any(len(p) == 1 for p in t.replace("-", " ").replace("_", " ").split())}
        self._automaton = ahocorasick.Automaton()
        for term in sorted({_compact(t) for t in every} - kept):
            if term:
                kind = "ordinary" if term in ordinary else (
                    "glued" if term not in whole_words and (sum(c.isalpha() for c in term) >= 4 or term in glued
                                                            or not term.isascii()) else "word")
                self._automaton.add_word(term, (kind, term))
        for term in every:  # a name of several words as written ("Open AI", "Hugging Face"): a word in the letters view
            words = _letters(reveal(term)).split()
            spaced = " ".join(words)
            if len(words) > 1 and all(len(w) > 1 for w in words) and "".join(words) not in ordinary | kept \
                    and spaced not in self._automaton:
                self._automaton.add_word(spaced, ("word", spaced))
        for word in vocab.ordinary_containing:
            self._automaton.add_word(_compact(word), ("allow", word))
        for term, (kind, _) in list(self._automaton.items()):  # written backwards, as a word ("edualc")
            if kind == "glued" and term.isascii() and term.isalpha() and len(term) >= 5 and term[::-1] not in self._automaton:
                self._automaton.add_word(term[::-1], ("reversed", term))
        self._automaton.make_automaton()
        as_digits: dict[str, list[str]] = {}  # distinctive terms in leetspeak digits: is a reader's view worth building
        for term, (kind, _) in self._automaton.items():
            if kind == "glued" or (kind == "ordinary" and len(term) >= 5 and term.isascii()):
                spelled = term.encode("utf-8", "surrogatepass").translate(_DIGIT_LETTERS).decode("utf-8", "surrogatepass")
                as_digits.setdefault(spelled, []).append(term)
        self._glued = ahocorasick.Automaton()
        for spelled, terms in as_digits.items():
            self._glued.add_word(spelled, terms)
        self._glued.make_automaton()
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
        return [f"{term!r} in {' '.join(context.split())!r}" for term, context in self._hits(text)]

    def find_across(self, parts: list[str]) -> list[str]:
        """Identities spelled across the end of one part and the start of the next ("Clau" | "de"),
        as "parts i/i+1: 'term' in '...'"; a leading "[turn 3] (role)" line of a part is skipped."""
        out = []
        for i in range(len(parts) - 1):
            tail = parts[i].rstrip()[-40:]
            head = _HEADER.sub("", parts[i + 1], count=1).lstrip()[:40]
            if not tail or not head or not any(True for _ in self._glued.iter(_squeezed(reveal(tail + head)))):
                continue
            joined = self._hits(tail + head, decode=False)
            alone = Counter(t for t, _ in self._hits(tail, decode=False)) + Counter(t for t, _ in self._hits(head, decode=False))
            extra = Counter(t for t, _ in joined) - alone
            out += [f"parts {i}/{i + 1}: {term!r} in {' '.join((tail + ' | ' + head).split())!r}" for term in sorted(extra)]
        return out

    def _terms_in(self, letters: str, *, words_only: bool, leet_of: str | None = None) -> tuple[list, bool, Counter]:
        """(start, end, term) of every identity in a letters view, whether an ordinary-word term occurs, and
        the ordinary-word terms of 5+ letters standing as words (in a reader's view, more of them than the
        plain text has are spelled out or in leetspeak: "M1stral", "M.i.s.t.r.a.l")."""
        hits, allowed, ordinary, words = [], [], False, Counter()
        n = len(letters)
        after = leet_of or letters  # leetspeak turns a version's digits into letters: "m1stral7b" -> "mistraltb"
        for last, (kind, term) in self._automaton.iter(letters):
            start = last - len(term) + 1
            if kind == "allow":
                allowed.append((start, last + 1))
                continue
            bounded = (start == 0 or not letters[start - 1].isalnum()) and (last + 1 == n or not after[last + 1].isalpha())
            if kind == "ordinary":
                ordinary = True
                if len(term) < 5 or not term.isascii() or not bounded:
                    continue
                if not words_only:
                    words[term] += 1
                    continue
            if leet_of is not None and (len(term) < 4 or not any(not c.isalpha() for c in leet_of[start:last + 1])):
                continue  # leetspeak: distinctive terms only, and only where a digit was read as a letter
            if (kind in ("word", "reversed") and not bounded) or (
                    words_only and (kind not in ("glued", "ordinary") or (term.isascii() and not bounded))):
                continue  # in the reader's views: distinctive terms standing as words
            hits.append((start, last + 1, term))
        return [h for h in hits if not any(a <= h[0] and h[1] <= b for a, b in allowed)], ordinary, words

    def _hits(self, text: str, *, decode: bool = True) -> list[tuple[str, str]]:
        low = reveal(text)
        found: list[tuple[str, str]] = []
        n = len(low)
        for last, domain in self._domains.iter(low):
            start = last - len(domain) + 1
            if (start == 0 or low[start - 1] == "." or not (low[start - 1].isalnum() or low[start - 1] == "-")) and (
                    last + 1 == n or not (low[last + 1].isalnum() or low[last + 1] == "-")):
                found.append((domain, low[max(0, start - 20):last + 21]))
        for match in _BARE_VERSION.finditer(low) if _may_name_version(low) else ():
            found.append((match.group(0), low[max(0, match.start() - 20):match.end() + 20]))
        spaced = _SPACED_LETTERS.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), low) if _SPACED_HINT.search(" " + low) else low
        letters = _letters(spaced)
        hits, ordinary, words = self._terms_in(letters, words_only=False)
        if spaced is not low:  # ordinary words as written, not as joined from letters spelled out ("s.o.n.n.e.t")
            words = self._terms_in(_letters(low), words_only=False)[2]
        plain = Counter(term for _, _, term in hits) + words
        found += [(term, letters[max(0, a - 20):b + 20]) for a, b, term in hits]
        views = []
        if _worth_reading_through(low) and Counter(term for _, terms in self._glued.iter(_squeezed(low))
                                                   for term in terms) - plain:
            read = _letters(_read_through(low))  # only where some term's letters are spread apart
            views = [(read, None)]
            if _LEET_HINT.search(read):
                views += [(read.translate(table), read) for table in _LEET]
        reported = Counter(plain)
        for view, leet_of in views:
            more, _, _ = self._terms_in(view, words_only=True, leet_of=leet_of)
            seen: Counter = Counter()
            for a, b, term in more:
                seen[term] += 1
                if seen[term] > reported[term]:
                    reported[term] += 1
                    found.append((term, view[max(0, a - 20):b + 20]))
        for pattern, where in ((self._version, low), (self._beside, letters), (self._self_id, low)) if ordinary else ():
            for match in pattern.finditer(where):
                term = next(g for g in match.groups() if g)
                found.append((term, where[max(0, match.start() - 20):match.end() + 20]))
        if self._role_words and any(word in low for word in self._role_words):
            found += [(m.group(0), low[max(0, m.start() - 20):m.end() + 20]) for m in self._role_name.finditer(low)]
            shown = unicodedata.normalize("NFKC", text)
            found += [(m.group(0), shown[max(0, m.start() - 20):m.end() + 20]) for m in self._role_mark.finditer(shown)]
            found += [(m.group(0), shown[max(0, m.start() - 20):m.end() + 20]) for m in AGENT_NAME.finditer(shown)
                      if neutral_agent_name(m.group(0), self._vocabulary) is not None]
        if decode and _may_hold_token(text):
            for token in _ENCODED.finditer(text):  # base64 or hex, 8+ characters with a digit
                raw = token.group(0)
                hexadecimal = _HEX.fullmatch(raw) is not None
                if not hexadecimal and (raw.islower() or raw.isupper()):
                    continue  # base64 of text mixes cases; ordinary words do not
                inner = decoded_token(raw, hexadecimal)
                if inner:
                    kind = "hex" if hexadecimal else "base64"
                    found += [(term, f"{kind} {raw[:40]} = {context}") for term, context in self._hits(inner, decode=False)]
        return found


def _worth_reading_through(low: str) -> bool:
    """False for plain ASCII prose (letters and whitespace only, no letters spelled out one by one)."""
    if not low.isascii():
        return True
    data = low.encode("ascii")
    if data.translate(None, _PROSE):
        return True
    shape = b" " + data.translate(_LETTER_OR_SPACE) + b" "  # letters spelled out: " c l a u d e "
    return b" x x " in shape or b" x  x " in shape


def _squeezed(low: str) -> str:
    """Every separator gone and leetspeak's letters written as its digits: a cheap look for spread terms."""
    if "](" in low:
        low = _LINK.sub(r"\1", low)
    if "<" in low:
        low = _TAGS.sub("", low)
    data = (low if low.isascii() else _NOT_LETTERS.sub("", low)).encode("utf-8", "surrogatepass")
    return data.translate(_DIGIT_LETTERS, _NOT_ALNUM).decode("utf-8", "surrogatepass")


def _may_hold_token(text: str) -> bool:
    """A digit next to a letter, or eight digits in a row: where a base64 or hex token can be."""
    data = text.encode("utf-8", "surrogatepass")
    if not data.translate(None, _NOT_DIGITS):
        return False
    kinds = data.translate(_KINDS)
    return b"xd" in kinds or b"dx" in kinds or b"dddddddd" in kinds


def _may_name_version(low: str) -> bool:
    return "4o" in low or ("-" in low and any(word in low for word in _VERSION_WORDS))


def _letters(low: str) -> str:
    """Joiners '-' and '_' removed, every other ASCII character but letters, digits and brackets a space."""
    return low.encode("utf-8", "surrogatepass").translate(_LETTER_BYTES, b"-_").decode("utf-8", "surrogatepass")
