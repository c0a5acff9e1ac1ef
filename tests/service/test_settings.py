"""Settings from the environment, as a pod sees it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.service.settings import Settings, event_loop


def test_kubernetes_service_link_is_not_a_port(monkeypatch: pytest.MonkeyPatch) -> None:
    # every pod in a namespace with a Service named "wlmap" gets WLMAP_PORT=tcp://<ip>:<port>
    monkeypatch.setenv("WLMAP_PORT", "tcp://10.96.0.7:8080")
    assert Settings.from_env().port == 8080
    monkeypatch.setenv("WLMAP_PORT", "9090")
    assert Settings.from_env().port == 9090
    monkeypatch.setenv("WLMAP_PORT", "not-a-port")
    with pytest.raises(ValueError):
        Settings.from_env()


@pytest.mark.parametrize(("settings", "loop"), [
    (Settings(), "uvloop"),  # stateless: no API server to talk to
    (Settings(kubeconfig="/k"), "asyncio"),
    (Settings(clusters=["b=/k"]), "asyncio"),
    (Settings(cluster_secrets=True), "asyncio"),
    (Settings(kubeconfig="/k", loop="uvloop"), "uvloop"),
    (Settings(loop="asyncio"), "asyncio"),
])
def test_the_event_loop_is_asyncio_whenever_an_api_server_is_a_peer(settings: Settings, loop: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import app.service.settings as settings_mod

    monkeypatch.setattr(settings_mod, "in_cluster", lambda: False)
    assert event_loop(settings) == loop
    assert Settings.from_env().loop == "auto"
    monkeypatch.setenv("WLMAP_LOOP", "asyncio")
    assert Settings.from_env().loop == "asyncio" and Settings(loop="uvloop").to_env()["WLMAP_LOOP"] == "uvloop"


def test_in_a_pod_the_loop_is_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.service import settings

    monkeypatch.setattr(settings, "in_cluster", lambda: True)  # the service account's API server
    assert event_loop(Settings()) == "asyncio"


def test_tls_and_token_audiences_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WLMAP_TLS_CERT_FILE", "/etc/workload-map/tls/tls.crt")
    monkeypatch.setenv("WLMAP_TLS_KEY_FILE", "/etc/workload-map/tls/tls.key")
    monkeypatch.setenv("WLMAP_TOKEN_AUDIENCE", "workload-map, wlmap.example.com")
    s = Settings.from_env()
    assert (s.tls_cert_file, s.tls_key_file) == ("/etc/workload-map/tls/tls.crt", "/etc/workload-map/tls/tls.key")
    assert s.token_audiences == ["workload-map", "wlmap.example.com"]
    env = s.to_env()  # what worker processes get back
    assert (env["WLMAP_TLS_CERT_FILE"], env["WLMAP_TOKEN_AUDIENCE"]) == (s.tls_cert_file,
                                                                       "workload-map,wlmap.example.com")


def test_a_token_audience_without_token_reviews_is_refused() -> None:
    wlmap = Path(sys.executable).parent / "wlmap"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
    r = subprocess.run([str(wlmap), "serve", "--port", "0", "--auth", "none", "--token-audience", "wlmap"],
                       check=False, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "--token-audience needs --auth kubernetes" in r.stderr, r.stderr


def test_the_stream_and_pod_bounds_read_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings.from_env()
    assert (s.max_streams_per_caller, s.max_streams, s.max_pods) == (10, 1000, 10000)
    assert (s.max_inflight_body_bytes, s.body_read_timeout) == (32 * 1024 * 1024, 30.0)
    monkeypatch.setenv("WLMAP_MAX_STREAMS_PER_CALLER", "3")
    monkeypatch.setenv("WLMAP_MAX_STREAMS", "50")
    monkeypatch.setenv("WLMAP_MAX_PODS", "200")
    s = Settings.from_env()
    assert (s.max_streams_per_caller, s.max_streams, s.max_pods) == (3, 50, 200)
    env = s.to_env()
    assert (env["WLMAP_MAX_STREAMS_PER_CALLER"], env["WLMAP_MAX_STREAMS"], env["WLMAP_MAX_PODS"]) == ("3", "50", "200")
