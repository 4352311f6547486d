"""The local model server the end-to-end demo study needs, started through the judges' own helper."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def llama_server():
    """SmolLM2 and Gemma 3 behind one llama-server (judges.local_server), stopped at the end.

    Writes .run/llama-server-study-tests.pid (scripts/stop_services.sh ends a
    leftover). A missing build is a failure naming the install command, never a skip.
    """
    from judges.local_server import LlamaServer
    from samples.errors import InputError

    server = LlamaServer(name="llama-server-study-tests", parallel=4, ctx_size=8192)
    try:
        server.start()
    except InputError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.stop()
