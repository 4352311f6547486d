"""The annotator-name rule, shared by blinding (refused at blind time) and the coding app's store."""

from __future__ import annotations

import re

from samples.errors import InputError

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


def check_annotator_name(name: str, *, parameter: str = "name") -> str:
    """Annotator names become SQLite keys, Label Studio emails and file names: keep them plain."""
    if not isinstance(name, str) or not _NAME_PATTERN.match(name):
        raise InputError(
            f"{parameter} {name!r} is not a valid annotator name; expected 1-64 characters from letters, digits, "
            "'_', '.', '@', '-', starting with a letter or digit"
        )
    return name
