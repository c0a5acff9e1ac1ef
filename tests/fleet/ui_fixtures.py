"""The browser fixtures of tests/ui (tests/ui/conftest.py) for the fleet's pages: import them
into a test module (`from .ui_fixtures import browser, new_page, page, shots`).

`browser` is this module's own, module-scoped: the Playwright sync API runs one instance per
thread, so it must be closed before tests/ui's session-scoped browser starts (tests/fleet runs
before tests/ui).  Should tests/ui's browser be running already (tests/ui given first on the
command line), that browser is used instead of a second one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..ui.conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    _missing,
    new_page,
    page,
    shots,
    timings,
)

__all__ = ["browser", "new_page", "page", "shots", "timings"]


def _running_browser() -> Any:
    from playwright.sync_api import Browser

    return next((o for o in gc.get_objects() if isinstance(o, Browser) and o.is_connected()), None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        p = sync_playwright().start()
    except Error:  # another sync Playwright runs in this thread: tests/ui's browser
        running = _running_browser()
        if running is None:
            raise
        yield running
        return
    try:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
    finally:
        p.stop()
