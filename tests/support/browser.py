"""Real-browser helper: Playwright driving Debian's chromium (never a downloaded browser)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
]


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Debian's chromium is not installed: run `make test` (scripts/install_system.sh) or apt-get install chromium")
    return path


@contextmanager
def browser() -> Iterator[object]:
    """Yield a Playwright BrowserContext on Debian's chromium with a fresh profile and a tall viewport."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="accord-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 1800},
        )
        try:
            yield context
        finally:
            context.close()
