"""The maintained identity vocabulary (``identity_vocabulary.toml``) and family inference.

The vocabulary lists model families with their vendors, model name stems and
domains, plus agent harnesses and hosting providers. The scrubber masks all of
them; adapters use it to name a backbone's family when the source does not.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from samples.errors import InputError

VOCABULARY_PATH = Path(__file__).with_name("identity_vocabulary.toml")
UNKNOWN_FAMILY = "unknown"


@dataclass(frozen=True, kw_only=True)
class Vocabulary:
    """Identity terms by category; ``families`` maps family -> its model stems and vendors.

    ``ordinary`` terms are also ordinary words (masked only in a model context);
    ``glued_short`` short terms still masked inside a longer word; ``ordinary_containing``
    ordinary words that contain a term; ``variants`` words that may follow a model name.
    All are lower case. ``roles``, ``role_suffixes`` and ``boilerplate`` map a harness's
    speaker names, agent-name endings and stock replies to neutral ones (as written);
    ``role_nouns`` are endings read only after "_" (``neutral_agent_name``).
    """

    models: tuple[str, ...]
    vendors: tuple[str, ...]
    harnesses: tuple[str, ...]
    domains: tuple[str, ...]
    families: dict[str, tuple[str, ...]]
    ordinary: frozenset[str] = frozenset()
    glued_short: frozenset[str] = frozenset()
    ordinary_containing: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    roles: tuple[tuple[str, str], ...] = ()
    role_suffixes: tuple[tuple[str, str], ...] = ()
    role_nouns: tuple[tuple[str, str], ...] = ()
    boilerplate: tuple[tuple[str, str], ...] = ()


def _terms(table: dict, key: str, where: str) -> list[str]:
    values = table.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) and len(v.strip()) >= 2 for v in values):
        raise InputError(f"{where}: field '{key}' must be a list of strings of at least 2 characters")
    return [v.strip() for v in values]


def _neutral(table: dict, key: str, where: str) -> tuple[tuple[str, str], ...]:
    values = table.get(key, {})
    if not isinstance(values, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]+", k)
            and re.fullmatch(r"[A-Za-z][A-Za-z0-9_ ]+", v) for k, v in values.items()):
        raise InputError(f"{where}: field '{key}' must map names to neutral names (letters, digits, '_', ' '; "
                         "2+ characters)")
    return tuple(sorted(values.items()))


def load_vocabulary(path: str | Path = VOCABULARY_PATH) -> Vocabulary:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise InputError(f"{path}: cannot read the identity vocabulary ({error})") from None
    models: list[str] = []
    vendors: list[str] = []
    domains: list[str] = []
    families: dict[str, tuple[str, ...]] = {}
    for name, table in sorted(data.get("families", {}).items()):
        where = f"{path}: [families.{name}]"
        stems = _terms(table, "models", where)
        names = _terms(table, "vendors", where)
        models += stems
        vendors += names
        domains += _terms(table, "domains", where)
        families[name] = tuple(stems + names)
    harnesses = _terms(data.get("harnesses", {}), "names", f"{path}: [harnesses]")
    providers = data.get("providers", {})
    vendors += _terms(providers, "names", f"{path}: [providers]")
    domains += _terms(providers, "domains", f"{path}: [providers]")
    matching = data.get("matching", {})
    where = f"{path}: [matching]"
    known = {t.lower() for t in [*models, *vendors, *harnesses]}
    ordinary = {t.lower() for t in _terms(matching, "ordinary", where)}
    glued_short = {t.lower() for t in _terms(matching, "glued_short", where)}
    unknown = sorted((ordinary | glued_short) - known)
    if unknown:
        raise InputError(f"{where}: {unknown} are not vendors, models or harnesses listed above; expected identity terms")
    return Vocabulary(models=tuple(models), vendors=tuple(vendors), harnesses=tuple(harnesses),
                      domains=tuple(domains), families=families, ordinary=frozenset(ordinary),
                      glued_short=frozenset(glued_short),
                      ordinary_containing=tuple(t.lower() for t in _terms(matching, "ordinary_containing", where)),
                      variants=tuple(t.lower() for t in _terms(matching, "variants", where)),
                      **{field: _neutral(data.get("harness_roles", {}), key, f"{path}: [harness_roles]")
                         for field, key in (("roles", "names"), ("role_suffixes", "suffixes"),
                                            ("role_nouns", "nouns"), ("boilerplate", "boilerplate"))})


# An identifier starting with a capital (its parts joined by "_" or "-"), not inside a path or a dotted
# name: a candidate agent name.
AGENT_NAME = re.compile(r"(?<![A-Za-z0-9_./\\-])[A-Z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*(?![A-Za-z0-9_])")
_NAME_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def neutral_agent_name(token: str, vocabulary: Vocabulary) -> str | None:
    """The plain phrase an agent name (``AGENT_NAME``) is shown as, or None when ``token`` is no agent name.

    An agent name ends in a ``role_suffixes`` word, glued or after "_" ("VerificationExpert",
    "IMDB_Ratings_Specialist"), or in a ``role_nouns`` word after "_" ("Code_runner"); it becomes its words
    with the neutral ending ("Verification specialist", "IMDB ratings specialist", "Code runner"): the
    identifier shape a framework gives its agents is gone, the words a reader needs stay.
    """
    pieces = token.split("_")
    words = [part for piece in pieces for part in _NAME_PART.findall(piece)]
    if len(words) < 2 or token.isupper():  # "QWEN_CODE_RUNNER": a constant or a tool, not an agent
        return None
    ending = dict((k.casefold(), v) for k, v in vocabulary.role_suffixes)
    if len(pieces) > 1:
        ending |= {k.casefold(): v for k, v in vocabulary.role_nouns}
    neutral = ending.get(words[-1].casefold())
    if neutral is None:
        return None
    middle = [w if w.isupper() and len(w) > 1 else w.lower() for w in words[1:-1]]
    return " ".join([words[0], *middle, neutral])


@lru_cache(maxsize=1)
def default_vocabulary() -> Vocabulary:
    return load_vocabulary()


def term_pattern(term: str) -> str:
    """Regex for ``term`` as a token: not glued to letters/digits before, nor to letters after.

    Digits may follow (a version: "qwen3"); underscores and punctuation count as
    separators, so "claude_search" and "gpt-4o" match while "claudette" does not.
    Inner spaces and hyphens match any run of spaces, hyphens or underscores.
    """
    parts = [re.escape(p) for p in re.split(r"[\s\-_]+", term.strip()) if p]
    return r"(?<![A-Za-z0-9])" + r"[\s\-_]*".join(parts) + r"(?![A-Za-z])"


@lru_cache(maxsize=1)
def _family_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    vocab = default_vocabulary()
    out = []
    for family, terms in vocab.families.items():
        longest_first = sorted(terms, key=len, reverse=True)
        out.append((family, re.compile("|".join(term_pattern(t) for t in longest_first), re.IGNORECASE)))
    return tuple(out)


@lru_cache(maxsize=4096)
def infer_family(model_id: str) -> str:
    """Family of a model id such as 'anthropic/claude-sonnet-5' or 'qwen3.5-9b'; 'unknown' if none matches.

    The earliest match in the id wins, so a router prefix ("openrouter/...") does not
    decide unless it is itself a vendor of a family.
    """
    best: tuple[int, str] | None = None
    for family, pattern in _family_patterns():
        found = pattern.search(model_id)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), family)
    return best[1] if best else UNKNOWN_FAMILY
