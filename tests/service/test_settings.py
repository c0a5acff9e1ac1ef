"""Settings declared once: from flags and the environment (as a pod sees it), back to the\nenvironment for worker processes, checked together; and what `wlmap serve` says at start."""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import app.service.settings as settings_mod
from app.service import flags
from app.service.flags import add_serve_arguments, settings_from_args
from app.service.logs import setup_logging
from app.service.settings import Settings, event_loop

from .conftest import ROOT, Server


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
    monkeypatch.setattr(settings_mod, "in_cluster", lambda: False)
    assert event_loop(settings) == loop
    assert Settings.from_env().loop == "auto"
    monkeypatch.setenv("WLMAP_LOOP", "asyncio")
    assert Settings.from_env().loop == "asyncio" and Settings(loop="uvloop").to_env()["WLMAP_LOOP"] == "uvloop"


def test_in_a_pod_the_loop_is_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_mod, "in_cluster", lambda: True)  # the service account's API server
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


# -- one declaration: argparse, the environment and the docs are derived from it ----------------

def _other(name: str) -> Any:
    """A value of the field unlike its default (lists of two, separators inside items kept)."""
    default, k = Settings.model_fields[name].default, settings_mod.kind(name)
    if k is list:
        return ["/a,b", "/c d"] if name == "definitions" else ["x.example.com/one", "x.example.com/t*"]
    if k is bool:
        return not default
    if isinstance(k, tuple):
        return next(c for c in k if c != default)
    if k is int:
        return default + 7
    if k is float:
        return default + 0.25
    return {"store": "redis://r:6379/1", "gc_thresholds": "700,10,10"}.get(name, f"value-of-{name}")


def test_every_setting_survives_the_hand_off_to_worker_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings(**{name: _other(name) for name in settings_mod.OPTS})
    assert all(getattr(s, n) != Settings.model_fields[n].default for n in settings_mod.OPTS)
    for k in [k for k in os.environ if k.startswith("WLMAP_")]:
        monkeypatch.delenv(k)
    for k, v in s.to_env().items():
        monkeypatch.setenv(k, v)
    assert Settings.from_env() == s
    assert s.to_env()["WLMAP_DEFINITIONS"] == os.pathsep.join(["/a,b", "/c d"])  # a comma inside a path is kept
    assert s.to_env()["WLMAP_CLUSTERS"] == "x.example.com/one,x.example.com/t*"


def _serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(exit_on_error=False)
    add_serve_arguments(p)
    return p


def test_the_serve_flags_are_derived_from_the_declaration() -> None:
    actions = {a.dest: a for a in _serve_parser()._actions if a.dest != "help"}
    opts = {n: o for n, o in settings_mod.OPTS.items() if o.flag and o.serve}
    assert set(actions) == set(opts)
    for name, a in actions.items():
        assert a.option_strings == [opts[name].flag]
        assert opts[name].env in a.help  # the help names the variable and the default, never by hand
        default = flags.shown_default(name)
        assert default is None or f"default {default}" in a.help
    assert isinstance(actions["clusters"], argparse._AppendAction) and actions["clusters"].metavar == \
        "NAME=KUBECONFIG[#CONTEXT]"
    assert actions["cache"].metavar == "true|false" and actions["auth"].choices == ["auto", "none", "kubernetes"]
    assert "store_password" not in actions  # a Secret's value: the environment only


def test_flags_win_over_the_environment_and_repeatable_flags_add_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith("WLMAP_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("WLMAP_PORT", "9000")
    monkeypatch.setenv("WLMAP_WATCH_NAMESPACE", "a,b")
    monkeypatch.setenv("WLMAP_CACHE", "false")
    monkeypatch.setenv("WLMAP_CLUSTER_SECRET", "s1")
    s = settings_from_args(_serve_parser().parse_args(["--port", "9001", "--watch-namespace", "c"]))
    assert (s.port, s.watch_namespaces, s.cache, s.cluster_secrets) == (9001, ["a", "b", "c"], False, True)
    assert settings_from_args(_serve_parser().parse_args([])).port == 9000


@pytest.mark.parametrize(("given", "error"), [
    ({"role": "shard"}, "--role shard needs --store (a Redis or Valkey URL)"),
    ({"store": "http://r"}, "--store takes a redis://, rediss:// or unix:// URL"),
    ({"shard_buckets": 257}, "--shard-buckets takes 1 to 256"),
    ({"store_stream_length": 999}, "--store-stream-length takes at least 1000"),
    ({"store": "redis://r", "role": "all"},
     "--store with --role all needs a home cluster for its Leases: give --kubeconfig, or run in a pod"),
    ({"store": "redis://r", "role": "api", "cache": False},
     "--store shares the live model: it cannot be used with --cache false"),
    ({"auth": "kubernetes"}, "--auth kubernetes needs cluster access: give --kubeconfig, or run in a pod"),
    ({"token_audiences": ["x"], "auth": "none"},
     "--token-audience needs --auth kubernetes (no token is reviewed otherwise)"),
    ({"tls_key_file": "/k"}, "--tls-cert-file and --tls-key-file go together"),
    ({"cluster_secrets": True},
     "--cluster-secrets needs a home cluster to watch Secrets in: give --kubeconfig, or run in a pod"),
    ({"clusters": ["nope"]}, "expected NAME=KUBECONFIG[#CONTEXT]"),
])
def test_settings_that_cannot_work_are_refused_with_the_flag_named(given: dict[str, Any], error: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_mod, "in_cluster", lambda: False)
    args = argparse.Namespace(**given)  # as if each came from its flag
    with pytest.raises(ValueError) as e:
        settings_from_args(args).check()
    assert error in str(e.value)


def test_the_cluster_specs_are_computed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://k:6443}}]\n"
                          "users: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: home, context: {cluster: c, user: u}}]\ncurrent-context: home\n")
    s = Settings(kubeconfig=str(kubeconfig), clusters=[f"b={kubeconfig}"]).check()
    home, others = s.cluster_specs()
    assert (home.name if home else None, [o.name for o in others]) == ("home", ["b"])
    kubeconfig.unlink()  # what the service and the fleet take later is the result computed then
    assert s.cluster_specs() == (home, others)


def test_the_configuration_page_is_current() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_config_docs.py"), "--check"], check=False,
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


# -- first contact: where the service listens, and logs a person can read ----------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("choice", "stream", "text"), [("auto", _Terminal, True), ("auto", io.StringIO, False),
                                                         ("json", _Terminal, False), ("text", io.StringIO, True)])
def test_text_logs_on_a_terminal_json_lines_otherwise(choice: str, stream: type[io.StringIO], text: bool) -> None:
    out = stream()
    try:
        setup_logging("INFO", choice, out)
        logging.getLogger("wlmap.access").info("request", extra={"fields": {"route": "/interpret", "status": 200}})
    finally:
        setup_logging("INFO")
    line = out.getvalue().strip()
    if text:
        assert line.endswith("INFO    wlmap.access  request route=/interpret status=200"), line
    else:
        assert json.loads(line) | {"ts": 0} == {"ts": 0, "level": "info", "logger": "wlmap.access",
                                                "route": "/interpret", "status": 200}


def test_serve_says_where_it_listens_once_it_does() -> None:
    s = Server()  # not a terminal: JSON lines
    try:
        lines = [json.loads(x) for x in s.output().splitlines() if x.startswith("{")]
        said = [x for x in lines if "ui" in x]
        assert [x["ui"] for x in said] == [f"{s.url}/ui/"], lines
        assert said[0]["msg"].startswith(f"serving on {s.url}: the UI at {s.url}/ui/")
        for key in ("ui", "docs", "openapi"):
            assert httpx.get(said[0][key], timeout=10).status_code == 200, key
    finally:
        s.stop()


def test_several_workers_say_it_once_in_text() -> None:
    s = Server("--workers", "2", "--log-format", "text")
    try:
        deadline = time.monotonic() + 10
        while "serving on http" not in (out := s.output()) and time.monotonic() < deadline:
            time.sleep(0.1)
        said = [x for x in out.splitlines() if "serving on http" in x]
        assert len(said) == 1 and said[0].endswith(f"INFO    wlmap  serving on {s.url}: the UI at {s.url}/ui/, "
                                                   f"API docs at {s.url}/docs, OpenAPI at {s.url}/openapi.json"), out
        assert not any(x.startswith("{") for x in out.splitlines()), out
    finally:
        s.stop()


def test_on_a_terminal_serve_writes_text() -> None:
    """stderr a TTY (a person ran `make serve`): text lines, the URLs among them."""
    import pty
    import select

    from .conftest import free_port

    port, (master, slave) = free_port(), pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "wlmap"), "serve", "--port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out, deadline = b"", time.monotonic() + 30
    try:
        while b"OpenAPI at" not in out and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                out += os.read(master, 65536)
    finally:
        proc.terminate()
        proc.wait(10)
        os.close(master)
    text = out.decode()
    assert f"INFO    wlmap  serving on http://127.0.0.1:{port}: the UI at http://127.0.0.1:{port}/ui/" in text, text
    assert "{" not in text, text
