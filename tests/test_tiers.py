"""The test tiers hold: a test that reaches a real service carries its marker, so `-m "not services"` starts none.

Checked on the tests this session collected and kept: in the in-process tier (`-m "not
services"`) that means none of them reaches a service fixture; in a full run, every one
that does is marked.
"""

from __future__ import annotations

import pytest

from tests.conftest import SERVICE_FIXTURES, SERVICE_MARKERS


def test_every_collected_test_that_reaches_a_service_is_marked(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    assert request.node in items
    unmarked = []
    for item in items:
        uses = set(getattr(item, "fixturenames", ())) & SERVICE_FIXTURES.keys()
        postgres_engine = getattr(getattr(item, "callspec", None), "params", {}).get("engine") == "postgresql"
        needs = {SERVICE_FIXTURES[f] for f in uses} | ({"postgres"} if postgres_engine else set())
        missing = sorted(m for m in needs if item.get_closest_marker(m) is None)
        service = any(item.get_closest_marker(m) for m in SERVICE_MARKERS)
        if missing or service != (item.get_closest_marker("services") is not None):
            unmarked.append(f"{item.nodeid}: {missing or 'services'}")
    assert unmarked == []
    if request.config.getoption("markexpr") == "not services":
        assert not any(item.get_closest_marker("services") for item in items)
