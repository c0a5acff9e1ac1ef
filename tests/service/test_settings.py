"""Settings from the environment, as a pod sees it."""

from __future__ import annotations

import pytest

from app.service.settings import Settings


def test_kubernetes_service_link_is_not_a_port(monkeypatch: pytest.MonkeyPatch) -> None:
    # every pod in a namespace with a Service named "wlmap" gets WLMAP_PORT=tcp://<ip>:<port>
    monkeypatch.setenv("WLMAP_PORT", "tcp://10.96.0.7:8080")
    assert Settings.from_env().port == 8080
    monkeypatch.setenv("WLMAP_PORT", "9090")
    assert Settings.from_env().port == 9090
    monkeypatch.setenv("WLMAP_PORT", "not-a-port")
    with pytest.raises(ValueError):
        Settings.from_env()
