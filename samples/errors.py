"""The one error type for user mistakes, shared by every accord package.

An ``InputError`` is a bad file, line, field or argument: the CLI prints its
message on one line and exits 2, never a traceback. Anything else is a bug.
"""

from __future__ import annotations


class InputError(ValueError):
    """A user mistake, with a message that names the file/line/field and what was expected."""

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        self.problems = list(problems or [])
        if self.problems:
            shown = "; ".join(self.problems[:20])
            more = f" (+{len(self.problems) - 20} more)" if len(self.problems) > 20 else ""
            message = f"{message}: {shown}{more}"
        super().__init__(message)
