"""Suite-wide fixtures: the real kube-apiserver and the services connected to it (one per run), and
the markers of what each test needs (tests/needs.py)."""

from collections.abc import Iterator

import pytest

from tests import needs
from tests.cluster.fixtures import apiserver, direct, kubectl, secured, service  # noqa: F401

pytest_plugins = ["tests.ui.browser"]  # the one browser of the UI tests (tests/ui, tests/fleet)


def pytest_configure(config: pytest.Config) -> None:
    for marker, what in needs.MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: needs {what}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    needs.mark(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    needs.running(item)
    try:
        return (yield)
    finally:
        needs.done()
