"""Codebooks for people: the judge prompts' criteria, one Markdown file per label scheme.

Annotators read the same criteria the LLM judge is given (ISE appendix D.3 for
Identify, Escalate, correctness and refusal; EHQ section 3.3 for the four response
classes; Aggarwal et al. section 2 for decisions), rewritten as instructions, so a
human label and a judge label answer the same question. Every label scheme has one.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path

from samples import InputError, Registry

_REGISTERED: Registry[Path] = Registry("codebook")


def register_codebook(scheme: str, path: str | Path) -> None:
    """Give a registered label scheme (``samples.schemes.register_scheme``) its Markdown codebook file,
    as the built-ins have theirs in this package."""
    from samples import get_scheme

    get_scheme(scheme)
    path = Path(path)
    if not path.is_file():
        raise InputError(f"codebook of scheme {scheme!r}: {str(path)!r} is not a file")
    _REGISTERED.register(scheme, path)


def codebook(scheme: str) -> str:
    """The Markdown codebook of a label scheme."""
    try:
        if scheme in _REGISTERED:
            return _REGISTERED[scheme].read_text(encoding="utf-8")
        return resources.files(__name__).joinpath(f"{scheme}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no codebook for label scheme {scheme!r}") from None


@functools.cache
def _shown(scheme: str) -> str:
    """The codebook text one process shows: read once, so the HTML drawn and the hash a label
    records (``codebook_sha256``) are of the same version even if the file changes meanwhile."""
    return codebook(scheme)


def codebook_sha256(scheme: str) -> str:
    """sha256 (hex) of the codebook file's UTF-8 bytes as this process shows it: the codebook
    version a label is given under (``HumanLabel.codebook_sha256``)."""
    return hashlib.sha256(_shown(scheme).encode("utf-8")).hexdigest()


@functools.cache
def codebook_html(scheme: str) -> str:
    """The codebook as HTML (Markdown rendered with raw HTML escaped, not passed on), for Label
    Studio's instructions and the coding app. markdown-it-py comes with rich, a core dependency."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(_shown(scheme))


def question(kind: str, scheme: str) -> str:
    """The question a person answers for a unit of ``kind`` labelled under ``scheme``: the kind's own
    (``samples.kinds``), else the title of the scheme's codebook (its first ``# `` line)."""
    from samples import get_kind

    own = get_kind(kind).question
    if own:
        return own
    title = next((line[2:].strip() for line in _shown(scheme).splitlines() if line.startswith("# ")), "")
    asked = title.split(": ", 1)[1] if ": " in title and title.rstrip().endswith("?") else title
    return asked[:1].upper() + asked[1:]


def codebook_for_kind(kind: str) -> str:
    """The codebook the unit-kind registry names for ``kind``."""
    from samples import get_kind

    return codebook(get_kind(kind).codebook)
