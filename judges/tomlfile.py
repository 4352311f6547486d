"""Reading the TOML files judges/ takes from users (prompts, judge configs, price tables)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from samples import InputError


def load_toml(path: str | Path, what: str) -> tuple[dict[str, Any], bytes]:
    """Parsed content and raw bytes; a missing or malformed file is an InputError naming it."""
    from samples import read_settings

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: {what} not found")
    raw = read_settings(path, what)
    try:
        return tomllib.loads(raw.decode("utf-8")), raw
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a valid TOML {what} ({error})") from None
