"""What a test needs beyond Python, as markers: `make check` runs the tests that need none of them.

A test is marked from the fixtures it uses (tests/conftest.py calls `mark`); a test that starts one
of these itself carries the marker by hand.  Where each starts, `require` fails the running test if
it lacks the marker, so a test that needs a server cannot slip into the fast set unnoticed."""

from __future__ import annotations

import os

import pytest

MARKERS = {
    "kube": "a real kube-apiserver and etcd (scripts/kube-apiserver/build.sh)",
    "browser": "Chromium driven by Playwright",
    "redis": "a real redis-server",
    "soak": "half a minute or more of load held on a real server (a benchmark's fast variant)",
}

# fixture -> marker; a test using a fixture built on one of these has it in its closure too.
FIXTURES = {"apiserver": "kube", "browser": "browser", "redis_server": "redis"}

_running: list[pytest.Item] = []  # the test being run (set by tests/conftest.py)
# The same for the processes a test starts (benchmarks/churn_bench.py starts its own API server).
TEST_ENV, MARKS_ENV = "WLMAP_TEST", "WLMAP_TEST_MARKS"


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


def running(item: pytest.Item) -> None:
    """Note the test now running, here and in the environment its subprocesses inherit."""
    _running[:] = [item]
    os.environ[TEST_ENV] = item.nodeid
    os.environ[MARKS_ENV] = ",".join(m for m in MARKERS if item.get_closest_marker(m) is not None)


def done() -> None:
    _running.clear()
    os.environ.pop(TEST_ENV, None)
    os.environ.pop(MARKS_ENV, None)


def require(marker: str) -> None:
    """Fail the running test unless it carries `marker` (outside a test run: nothing to check)."""
    if _running:
        test, ok = _running[0].nodeid, _running[0].get_closest_marker(marker) is not None
    elif TEST_ENV in os.environ:  # a process started by a test
        test, ok = os.environ[TEST_ENV], marker in os.environ.get(MARKS_ENV, "").split(",")
    else:
        return
    if not ok:
        message = (f"{test} starts {MARKERS[marker]}: use its fixture or mark the test @pytest.mark.{marker} "
                   "(make check runs only the unmarked tests)")
        if not _running:
            raise SystemExit(message)
        pytest.fail(message, pytrace=False)
