"""The web UI in a real browser (the browser fixtures: tests/ui/browser.py, registered suite-wide),
against `wlmap serve` processes backed by the suite's real kube-apiserver (the `apiserver`,
`kubectl`, `service` and `secured` fixtures, registered suite-wide by tests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# apiserver, kubectl, service, secured, browser, page, shots...: suite-wide fixtures (tests/conftest.py)
from ..cluster.kubeobjects import Kubectl
from ..service.conftest import Server
from . import world as world_mod


@pytest.fixture(scope="session")
def world(kubectl: Kubectl) -> dict[str, Any]:
    return world_mod.build(kubectl)


@pytest.fixture(scope="session")
def bare() -> Iterator[Server]:
    """The service without a cluster (the embedded default: built-in catalog only)."""
    s = Server("--eval-deadline", "2")
    yield s
    s.stop()
