"""Codebooks for people: the judge prompts' criteria, one Markdown file per label scheme.

Annotators read the same criteria the LLM judge is given (ISE appendix D.3 for
Identify, Escalate, correctness and refusal; EHQ section 3.3 for the four response
classes; Aggarwal et al. section 2 for decisions), rewritten as instructions, so a
human label and a judge label answer the same question. Every label scheme has one.
"""

from __future__ import annotations

import functools
from importlib import resources

from samples.errors import InputError


def codebook(scheme: str) -> str:
    """The Markdown codebook of a label scheme."""
    try:
        return resources.files(__name__).joinpath(f"{scheme}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"no codebook for label scheme {scheme!r}") from None


@functools.cache
def codebook_html(scheme: str) -> str:
    """The codebook as HTML (Markdown rendered with raw HTML escaped, not passed on), for Label
    Studio's instructions and the coding app. markdown-it-py comes with rich, a core dependency."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(codebook(scheme))


def codebook_for_kind(kind: str) -> str:
    """The codebook the unit-kind registry names for ``kind``."""
    from samples.kinds import get_kind

    return codebook(get_kind(kind).codebook)
