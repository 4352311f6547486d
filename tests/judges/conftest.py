"""The fault-injection server for the judges tests (the real llama-server fixture is session-wide, in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.judges.fault_server import FaultServer


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """A fresh in-process fault server on 127.0.0.1 (a thread: it ends with the test)."""
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()

