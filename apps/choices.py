"""argparse ``choices`` that a registry owns, read when first used instead of when the parser is built.

A command's parser is built on every call, but its registries' built-in modules can be costly to
import (the judge engines' take ~2 s); ``Choices`` asks the registry only when an option's value is
checked or ``--help`` shows the choices, so a plugin's entries are offered and accepted as the
built-ins are. Give the option a ``metavar`` (argparse otherwise lists the choices while the parser
is built) and ``%(choices)s`` in its help.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload


class Choices(Sequence[str]):
    """The names ``names()`` gives, asked for once, on first use."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._names = names
        self._cached: tuple[str, ...] | None = None

    def _all(self) -> tuple[str, ...]:
        if self._cached is None:
            self._cached = tuple(self._names())
        return self._cached

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __contains__(self, value: object) -> bool:
        return value in self._all()


def engines() -> list[str]:
    """The registered judge engines (``judges.engines``)."""
    from judges import engine_names

    return engine_names()


def apis() -> list[str]:
    """Every wire API a registered provider speaks (``judges.providers.base.ProviderKind.apis``)."""
    from judges import api_names

    return api_names()


def parse_modes() -> tuple[str, ...]:
    """The output parsers' modes (``judges.parsers.PARSE_MODES``)."""
    from judges import PARSE_MODES

    return PARSE_MODES
