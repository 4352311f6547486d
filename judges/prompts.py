"""Versioned judge prompt files: the shipped ISE prompts and any the user adds.

A prompt file is TOML (format in judges/prompts/README.md). Its sha256 over the file
bytes enters every judge fingerprint, so editing a prompt can never silently mix
labels from two versions. An optional ``[user]`` table gives a user-message template per
unit kind, with the placeholders the kind offers (``samples.kinds``); without one the
kind's default message is sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from samples import InputError, unit_kinds

PROMPTS_DIR = Path(__file__).with_name("prompts")
_REQUIRED = ("name", "version", "output", "unit_kinds", "source", "system")


@dataclass(frozen=True, kw_only=True)
class PromptSpec:
    name: str
    version: str
    output: str
    scheme: str
    unit_kinds: tuple[str, ...]
    source: str
    system: str
    path: str
    sha256: str
    user: Mapping[str, str] = field(default_factory=dict)
    """Unit kind -> user-message template (``samples.kinds.judge_message``)."""


def load_prompt(path: str | Path) -> PromptSpec:
    """Read and validate one prompt file; errors name the file and the field."""
    from judges.parsers import get_output_kind
    from judges.tomlfile import load_toml
    from samples import check_template

    path = Path(path)
    data, raw = load_toml(path, "prompt file")
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise InputError(f"{path}: missing field(s) {missing}; a prompt file needs {list(_REQUIRED)}")
    unknown = sorted(set(data) - set(_REQUIRED) - {"scheme", "user"})
    if unknown:
        raise InputError(f"{path}: unknown field(s) {unknown}")
    try:
        output = get_output_kind(str(data["output"]))
    except InputError as error:
        raise InputError(f"{path}: field output: {error}") from None
    scheme = str(data.get("scheme", output.scheme))
    if scheme != output.scheme:
        raise InputError(f"{path}: scheme {scheme!r} does not match output {output.name!r} (scheme {output.scheme!r})")
    kinds = data["unit_kinds"]
    if not isinstance(kinds, list) or not kinds or any(k not in unit_kinds() for k in kinds):
        raise InputError(f"{path}: unit_kinds must be a non-empty list drawn from {list(unit_kinds())}, got {kinds!r}")
    if not isinstance(data["system"], str) or not data["system"].strip():
        raise InputError(f"{path}: system must be a non-empty string")
    user = data.get("user", {})
    if not isinstance(user, dict):
        raise InputError(f"{path}: user must be a table of unit kind -> template, got {user!r}")
    for kind, template in user.items():
        if kind not in kinds:
            raise InputError(f"{path}: user.{kind}: not one of this prompt's unit_kinds {kinds}")
        if not isinstance(template, str) or not template.strip():
            raise InputError(f"{path}: user.{kind}: expected a non-empty template string")
        check_template(kind, template, where=f"{path}: user.{kind}")
    return PromptSpec(
        name=str(data["name"]), version=str(data["version"]), output=output.name, scheme=scheme,
        unit_kinds=tuple(kinds), source=str(data["source"]), system=data["system"], path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(), user=dict(user),
    )


def builtin_prompts() -> dict[str, PromptSpec]:
    """The shipped prompt files by name."""
    return {spec.name: spec for spec in map(load_prompt, sorted(PROMPTS_DIR.glob("*.toml")))}


def resolve_prompt(ref: str) -> PromptSpec:
    """A shipped prompt by name, or a prompt file by path."""
    if ref.endswith(".toml") or "/" in ref:
        return load_prompt(ref)
    shipped = builtin_prompts()
    if ref not in shipped:
        raise InputError(f"unknown prompt {ref!r}: give a shipped name {sorted(shipped)} or a path to a .toml prompt file")
    return shipped[ref]
