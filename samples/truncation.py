"""Was an evaluated response cut off? EHQ's truncation audit rule (seed 002, section 5.2), fixed before scores.

"A response is flagged when reported completion tokens reach the answer budget or when the text stops on a
function word, dangling separator, or unclosed quotation or bracket; missing sentence-final punctuation alone
is reported as a weaker model-level signal" (not a flag here). The budget evidence is the source's own record:
``finish_reason`` "length" (OpenAI-style) / ``stop_reason`` "max_tokens" (Anthropic), or ``completion_tokens``
at or above ``max_tokens``. A provider can cut an answer while reporting success, which only the text rule sees.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FUNCTION_WORDS: frozenset[str] = frozenset(
    "a an the and or but nor so yet of to in on at by for with from into onto about as than that which who whom "
    "whose if because while although though is are was were be been being am has have had do does did will would "
    "shall should can could may might must its their his her my our your this these those not".split())
"""Closed-class English words a finished sentence does not end on (articles, prepositions, conjunctions,
auxiliaries, possessive determiners)."""
DANGLING: str = ",;:-–—/&+(["
_LAST_WORD = re.compile(r"([A-Za-z']+)\W*$")
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"))


def budget_reason(metadata: Mapping[str, Any]) -> str | None:
    """The token-budget evidence of a record's metadata, or None."""
    for field, value in (("finish_reason", "length"), ("stop_reason", "max_tokens")):
        if metadata.get(field) == value:
            return f"the model hit its token budget ({field} {value!r})"
    used, budget = metadata.get("completion_tokens"), metadata.get("max_tokens")
    if isinstance(used, int) and isinstance(budget, int) and not isinstance(used, bool) and 0 < budget <= used:
        return f"its {used} completion tokens reached the budget of {budget}"
    return None


def text_reason(text: str) -> str | None:
    """The text rule: where the text stops says it was cut mid-sentence, or None."""
    stripped = text.rstrip()
    if not stripped:
        return None
    if stripped[-1] in DANGLING:
        return f"it stops on a dangling {stripped[-1]!r}"
    for opening, closing in _PAIRS:
        if stripped.count(opening) > stripped.count(closing):
            return f"it leaves a {opening!r} unclosed"
    if stripped.count('"') % 2:
        return "it leaves a quotation unclosed"
    word = _LAST_WORD.search(stripped)
    if word and stripped[-1].isalpha() and word.group(1).lower() in FUNCTION_WORDS:
        return f"it stops on the function word {word.group(1)!r}"
    return None


def truncation_reason(text: str, metadata: Mapping[str, Any]) -> str | None:
    """Why the response counts as truncated (budget evidence first), or None when it does not."""
    return budget_reason(metadata) or text_reason(text)
