"""The browser for the UI tests, suite-wide (tests/conftest.py registers this module): Debian's
Chromium driven by Playwright (no browser download), one per test module, for tests/ui and
tests/fleet (Playwright's sync API runs one instance per thread, so each closes before the next).

Screenshots of every page (1440x900) go to a folder of the test run (printed at the end; set
WLMAP_SCREENSHOTS_DIR to choose it).  With WLMAP_UPDATE_SCREENSHOTS=1 the docs' pictures in
docs/screenshots/ are refreshed too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.required import CI, missing

from ..needs import require

ROOT = Path(__file__).resolve().parents[2]
DOCS_SHOTS = ROOT / "docs" / "screenshots"
DOCS_NAMES = {"ui-list", "ui-workload", "ui-interpret"}
CHROMIUM = os.environ.get("WLMAP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1440, "height": 900}
_shots_dir: list[Path] = []


def _missing(reason: str) -> NoReturn:
    # `make test` (CI) sets WLMAP_REQUIRE_KUBE=1: there a missing browser is a failure, not a skip.
    missing(reason, "WLMAP_REQUIRE_BROWSER", CI)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One browser per test module: Playwright's sync API keeps an event loop running in this
    thread while it is open, which later tests' asyncio.run() must not meet."""
    require("browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


# The test modules import Playwright's names from here, where they are looked up on first use: a
# module imports without Playwright, and the browser fixture alone decides what its absence means.
def expect(*args: Any, **kwargs: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(*args, **kwargs)


def timeout_error() -> type[Exception]:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    return PlaywrightTimeout


class Page:
    """A fresh browser context (its own sessionStorage) at 1440x900; uncaught script errors
    fail the test."""

    def __init__(self, browser: Any, viewport: dict[str, int]):
        self.context = browser.new_context(viewport=viewport)
        self.context.set_default_timeout(15000)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))


@pytest.fixture()
def new_page(browser: Any) -> Iterator[Callable[..., Any]]:
    made: list[Page] = []

    def make(viewport: dict[str, int] | None = None) -> Any:
        p = Page(browser, viewport or VIEWPORT)
        made.append(p)
        return p.page

    yield make
    errors = [e for p in made for e in p.errors]
    for p in made:
        p.context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture()
def page(new_page: Callable[..., Any]) -> Any:
    return new_page()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Any, str], Path]:
    chosen = os.environ.get("WLMAP_SCREENSHOTS_DIR")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    _shots_dir.append(folder)
    update = os.environ.get("WLMAP_UPDATE_SCREENSHOTS") == "1"

    def shoot(page: Any, name: str) -> Path:
        page.evaluate("document.fonts.ready")
        page.wait_for_timeout(150)  # let the last layout settle
        path = folder / f"{name}.png"
        page.screenshot(path=str(path))
        if update and name in DOCS_NAMES:
            DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SHOTS / path.name)
        return path

    return shoot


_timings: list[tuple[str, float]] = []


@pytest.fixture(scope="session")
def timings() -> Callable[[str, float], None]:
    """Record how long a change in the cluster took to show in the browser (printed at the end)."""

    def note(what: str, seconds: float) -> None:
        _timings.append((what, seconds))
        print(f"{what}: {seconds * 1000:.0f} ms")

    return note


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _shots_dir and any(_shots_dir[0].glob("*.png")):
        terminalreporter.write_line(f"UI screenshots: {_shots_dir[0]}")
    if _timings:
        terminalreporter.write_line("UI live updates, change in the API server -> visible in Chromium:")
        for what, seconds in _timings:
            terminalreporter.write_line(f"  {seconds * 1000:6.0f} ms  {what}")
