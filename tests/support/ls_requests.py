"""Count the HTTP requests this process sends (every httpx client: the product's SDK clients and sessions, the test's).

Label Studio's CPU is mostly per request, so a test can pin how many requests an operation takes: a per-task loop
where one bulk call would do shows up as a count that grows with the tasks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

_NUMBER = re.compile(r"/\d+")


@contextmanager
def counted_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """``"METHOD /path"`` -> requests sent inside the block, numeric path segments as ``N`` (``DELETE /api/tasks/N/``)."""
    counts: Counter[str] = Counter()
    send = httpx.Client.send

    def counting(client: httpx.Client, request: httpx.Request, *args: Any, **kwargs: Any) -> httpx.Response:
        counts[f"{request.method} {_NUMBER.sub('/N', request.url.path)}"] += 1
        return send(client, request, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(httpx.Client, "send", counting)
        yield counts
