"""Start and stop the coding app (`accord app`) on a free loopback port, for browser tests and the benchmark."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.servers import serve_accord


@contextmanager
def coding_app(study: Path, *, name: str = "coding-app", timeout: float = 60.0) -> Iterator[str]:
    """Run `accord app --study STUDY` in its own process group (pid in .run/NAME.pid); yield its URL."""
    with serve_accord(["app", "--study", str(study)], name=name, log_path=study / f"{name}.log", timeout=timeout) as url:
        yield url
