"""Cluster Secrets on a real API server: a kubeconfig from a Secret is data.  Its `exec` never
runs, its `tokenFile` is never read and sent, an http:// server never gets its token, and each
refusal shows on GET /clusters and in the log; a valid inline Secret still serves its cluster.
The operator's own kubeconfigs (--cluster) keep full support: a `tokenFile` there still works.

The servers a refused Secret names are real HTTP(S) servers run here that record every request:
what the service sends them (nothing) is observed, not assumed."""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..cluster.apiserver import TOKENS
from ..cluster.fixtures import SERVICE_NS
from ..cluster.util import eventually
from ..service.conftest import Server
from .conftest import Fleet, settled
from .test_fleet_faults import _clusters, _secret, _when


class Recorder:
    """A real HTTP(S) server that records each request's method, path and Authorization header,
    and answers /version like an API server would (so a client that got this far would connect)."""

    def __init__(self, tmp: Path, tls: bool):
        self.requests: list[tuple[str, str, str | None]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.requests.append(("GET", self.path, self.headers.get("Authorization")))
                body = json.dumps({"major": "1", "minor": "20", "gitVersion": "v1.20.2"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.ca: bytes | None = None
        if tls:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", str(tmp / "rec.key"), "-out", str(tmp / "rec.crt")],
                           check=True, capture_output=True)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tmp / "rec.crt"), str(tmp / "rec.key"))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.ca = (tmp / "rec.crt").read_bytes()
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def kubeconfig(self, user: dict[str, Any]) -> dict[str, Any]:
        cluster: dict[str, Any] = {"server": self.url}
        if self.ca is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca).decode()
        return {"apiVersion": "v1", "kind": "Config", "current-context": "x",
                "clusters": [{"name": "x", "cluster": cluster}], "users": [{"name": "x", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[Recorder]:
    r = Recorder(tmp_path, tls=True)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def secrets_service(fleet: Fleet) -> Iterator[Server]:
    a = fleet.servers["a"]
    s = Server("--kubeconfig", str(a.kubeconfig("service")), "--cluster-name", "a", "--namespace", SERVICE_NS,
               "--karta-resources", "false", "--auth", "none", "--cluster-secrets", "true",
               "--cluster-probe-interval", "0.5")
    yield s
    s.stop()


@pytest.fixture
def cleanup(fleet: Fleet) -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for n in names:
        with contextlib.suppress(Exception):  # the test may not have got as far as making it
            fleet.kubectl["a"].delete("v1", "Secret", SERVICE_NS, n)


def _refused(s: Server, secret_name: str, field: str, harm: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """The /clusters item of a Secret once it shows its refusal (bounded wait), checking first
    that the harm the refusal prevents (a marker file, a recorded request...) has not happened,
    which is what happens instead when the Secret is trusted."""

    def refused() -> dict[str, Any] | None:
        return _when(_clusters(s).get(secret_name),
                     lambda i: i["lastError"] and f".{field} is refused" in i["lastError"])

    eventually(lambda: harm() or refused(), timeout=20, what=f"{secret_name} refused for {field}")
    assert not harm(), f"{secret_name}: the service did what its {field} asked"
    item, _ = eventually(refused, timeout=1)
    assert item["available"] is False and item["synced"] is False and item["origin"] == "secret"
    eventually(lambda: f"cluster Secret {secret_name}: " in s.output() and f".{field} is refused" in s.output()
               or None, timeout=10, what="the refusal in the log")
    return item


def _settle(s: Server) -> None:
    """One more full reconcile pass and probe interval: anything the service was going to do with
    a Secret it has done by now (the refused Secret is listed after its pass)."""
    with settled(s, ["a"]) as c:
        c.get("/clusters")


def test_a_secrets_exec_never_runs(secrets_service: Server, fleet: Fleet, recorder: Recorder, tmp_path: Path,
                                   cleanup: list[str]) -> None:
    marker = tmp_path / "exec-ran"
    credential = json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                             "status": {"token": "exec-made-token"}})
    exec_ = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh",
             "args": ["-c", f"touch {marker}; echo '{credential}'"]}
    cleanup.append("cluster-exec")
    fleet.kubectl["a"].apply(_secret("cluster-exec", recorder.kubeconfig({"exec": exec_})))
    item = _refused(secrets_service, "cluster-exec", "exec", lambda: marker.exists() or bool(recorder.requests))
    assert "run a command" in item["lastError"] and "touch" not in item["lastError"]
    _settle(secrets_service)
    assert not marker.exists()
    assert recorder.requests == []


def test_a_secrets_token_file_is_never_read_or_sent(secrets_service: Server, fleet: Fleet, recorder: Recorder,
                                                    tmp_path: Path, cleanup: list[str]) -> None:
    stolen = tmp_path / "token"
    stolen.write_text("pod-own-service-account-token")  # what /var/run/secrets/... would hold in a pod
    cleanup.append("cluster-tokenfile")
    fleet.kubectl["a"].apply(_secret("cluster-tokenfile", recorder.kubeconfig({"tokenFile": str(stolen)})))
    item = _refused(secrets_service, "cluster-tokenfile", "tokenFile", lambda: bool(recorder.requests))
    assert "read a file" in item["lastError"] and str(stolen) not in item["lastError"]
    _settle(secrets_service)
    assert recorder.requests == []  # no connection at all, so the file's content went nowhere
    assert "pod-own-service-account-token" not in httpx.get(secrets_service.url + "/clusters").text
    assert "pod-own-service-account-token" not in secrets_service.output()


def test_an_http_server_never_gets_the_token(secrets_service: Server, fleet: Fleet, tmp_path: Path,
                                             cleanup: list[str]) -> None:
    plain = Recorder(tmp_path, tls=False)
    try:
        cleanup.append("cluster-http")
        fleet.kubectl["a"].apply(_secret("cluster-http", plain.kubeconfig({"token": "clear-text-token"})))
        item = _refused(secrets_service, "cluster-http", "server", lambda: bool(plain.requests))
        assert "https://" in item["lastError"]
        _settle(secrets_service)
        assert plain.requests == []
    finally:
        plain.stop()


def test_a_valid_inline_secret_still_serves_and_an_edit_adding_exec_keeps_the_last_good_connection(
        secrets_service: Server, fleet: Fleet, tmp_path: Path, cleanup: list[str]) -> None:
    s, k = secrets_service, fleet.kubectl["a"]
    cleanup.append("cluster-valid")
    k.apply(_secret("cluster-valid", fleet.kubeconfig_doc("b", "service"), name="b"))
    item, _ = eventually(lambda: _when(_clusters(s).get("b"), lambda i: i["synced"] and i["available"]), timeout=20)
    assert (item["origin"], item["server"], item["lastError"]) == ("secret", fleet.servers["b"].url, None)
    with settled(s, ["a", "b"]) as c:
        assert c.get("/clusters/b/workloads/fleet/train-b").status_code == 200
    # edited to run a command: refused, the cluster stays on its last good connection and says why
    marker = tmp_path / "exec-ran"
    doc = fleet.kubeconfig_doc("b", "service")
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh",
                                        "args": ["-c", f"touch {marker}"]}}
    k.apply(_secret("cluster-valid", doc, name="b"))
    bad, _ = eventually(lambda: marker.exists() or _when(_clusters(s)["b"], lambda i: i["lastError"]), timeout=20)
    assert not marker.exists()
    assert "users[service].user.exec is refused" in bad["lastError"] and bad["available"] and bad["synced"]
    _settle(s)
    assert not marker.exists()
    with settled(s, ["b"]) as c:
        assert c.get("/clusters/b/workloads/fleet/train-b").status_code == 200


def test_insecure_only_when_allowed_and_the_operators_token_file_still_works(
        secrets_service: Server, fleet: Fleet, tmp_path: Path, cleanup: list[str]) -> None:
    insecure = fleet.kubeconfig_doc("b", "service")
    del insecure["clusters"][0]["cluster"]["certificate-authority-data"]
    insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    cleanup.append("cluster-insecure")
    fleet.kubectl["a"].apply(_secret("cluster-insecure", insecure, name="b-insecure"))
    item = _refused(secrets_service, "cluster-insecure", "insecure-skip-tls-verify",
                    lambda: "b-insecure" in _clusters(secrets_service))
    assert "--cluster-secret-allow-insecure" in item["lastError"]
    # The operator allows it; and gives cluster c by a kubeconfig file whose token is a tokenFile
    # (the operator's own files keep kubernetes-asyncio's full kubeconfig support).
    token = tmp_path / "c-token"
    token.write_text(TOKENS["service"][0])
    c_doc = fleet.kubeconfig_doc("c", "service")
    c_doc["users"][0]["user"] = {"tokenFile": str(token)}
    c_file = tmp_path / "c.kubeconfig"
    c_file.write_text(json.dumps(c_doc))
    a = fleet.servers["a"]
    s = Server("--kubeconfig", str(a.kubeconfig("service")), "--cluster-name", "a", "--namespace", SERVICE_NS,
               "--karta-resources", "false", "--auth", "none", "--cluster-secret", "cluster-insecure",
               "--cluster-secret-allow-insecure", "true", "--cluster", f"c={c_file}",
               "--cluster-probe-interval", "0.5")
    try:
        eventually(lambda: all((_clusters(s).get(n) or {}).get("synced") for n in ("b-insecure", "c")) or None,
                   timeout=30, what="the insecure Secret and the tokenFile flag cluster synced")
        items = _clusters(s)
        assert items["b-insecure"]["lastError"] is None and items["b-insecure"]["origin"] == "secret"
        assert items["c"]["lastError"] is None and items["c"]["origin"] == "flag" and items["c"]["available"]
        with settled(s, ["c"]) as c:
            assert c.get("/clusters/c/workloads/fleet/train-c").status_code == 200
    finally:
        s.stop()
