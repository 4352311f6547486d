"""Look-alike letters folded to ASCII, so identity terms are found through disguises.

The table is Unicode's confusables data (UTS #39 ``confusables.txt``) as shipped by
the ``confusable_homoglyphs`` package: every non-ASCII character that Unicode lists
as confusable with one ASCII letter, digit, hyphen, low line, dot or slash maps to it (Cyrillic 'а' -> 'a', Greek
'ο' -> 'o', Cyrillic 'С' -> 'C'); Latin letters with diacritics map to their base
letter ('á' -> 'a'); enclosed letters that NFKC leaves alone (negative squared and
negative circled letters, regional indicator symbols: '🅲🅻🅰🆄🅳🅴') map to their letter, and
so do small capitals ('ᴄʟᴀᴜᴅᴇ', which NFKC leaves alone too).
One character becomes one character, so a folded text keeps the positions of the
original and a match can be masked in place.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from importlib import resources

_JOINERS = "-_./"  # look-alike hyphens, low lines, dots and slashes join identifiers too
_LATIN_RANGES = (range(0x00C0, 0x0250), range(0x1E00, 0x1F00))
_ENCLOSED_RANGES = (range(0x2460, 0x2500), range(0x1F100, 0x1F200))
_SMALL_CAPITAL_RANGES = (range(0x0250, 0x02B0), range(0x1D00, 0x1D80), range(0xA720, 0xA800))
_SMALL_CAPITAL = re.compile(r"^LATIN LETTER SMALL CAPITAL ([A-Z])$")
_ENCLOSED_LETTER = re.compile(r"\b(?:LATIN (CAPITAL|SMALL) LETTER|REGIONAL INDICATOR SYMBOL LETTER) ([A-Z])$")


def _pick(char: str, candidates: set[str]) -> str:
    """The ASCII look-alike of ``char``: same letter case where Unicode offers it."""
    if char.isupper() and candidates == {"l"} and "PALOCHKA" not in unicodedata.name(char, ""):
        return "I"  # Greek Iota, Cyrillic I: Unicode's skeleton of capital I is 'l'
    letters = {c for c in candidates if c.isalnum()} or candidates
    same_case = sorted(c for c in letters if c.isupper() == char.isupper())
    return (same_case or sorted(letters))[0]


@lru_cache(maxsize=1)
def fold_table() -> dict[int, str]:
    """``str.translate`` table: non-ASCII look-alike -> its ASCII letter, digit or joiner."""
    data = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    table: dict[int, str] = {}
    for char, entries in data.items():
        if len(char) != 1 or char.isascii():
            continue
        ascii_alnum = {e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii()
                       and (e["c"].isalnum() or e["c"] in _JOINERS)}
        if ascii_alnum:
            table[ord(char)] = _pick(char, ascii_alnum)
    for block in _LATIN_RANGES:
        for code in block:
            base = unicodedata.normalize("NFKD", chr(code))
            if (code not in table and len(base) > 1 and base[0].isascii() and base[0].isalnum()
                    and all(unicodedata.combining(c) for c in base[1:])):
                table[code] = base[0]
    for block in _ENCLOSED_RANGES:
        for code in block:
            found = _ENCLOSED_LETTER.search(unicodedata.name(chr(code), ""))
            if found and code not in table:
                table[code] = found.group(2) if found.group(1) != "SMALL" else found.group(2).lower()
    for block in _SMALL_CAPITAL_RANGES:
        for code in block:
            found = _SMALL_CAPITAL.search(unicodedata.name(chr(code), ""))
            if found and code not in table:
                table[code] = found.group(1).lower()
    return table


def fold(text: str) -> str:
    """``text`` with look-alike letters replaced by ASCII (same length)."""
    return text if text.isascii() else text.translate(fold_table())
