"""Servers the judges tests need: the fault-injection server and the real llama-server."""

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


@pytest.fixture(scope="session")
def llama_server():
    """Both local models behind one llama-server, started through judges.local_server.

    Writes .run/llama-server-tests.pid (scripts/stop_services.sh ends a leftover) and
    stops the server at the end of the session. A missing build is a failure with the
    install command, never a silent skip.
    """
    from judges.local_server import LlamaServer
    from samples.errors import InputError

    server = LlamaServer(name="llama-server-tests", parallel=4, ctx_size=8192)
    try:
        server.start()
    except InputError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.stop()
