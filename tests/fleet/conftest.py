"""Three real API servers for the fleet tests: the suite's own (cluster `a`, the home cluster)
and two more started here (`b`, `c`), each with the framework CRDs, the service user's RBAC and
a namespace of JobSet -> Job -> Pod chains.  The fleet services under test connect to all three
as the non-admin `wlmap-service` user."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..cluster.apiserver import TOKENS, ApiServer
from ..cluster.fixtures import SERVICE_NS
from ..cluster.kubeobjects import Kubectl, crd, service_rbac
from ..cluster.test_workloads import _jobset_with_pods
from ..consistency import settle
from ..service.conftest import Server

NS = "fleet"
CRDS = [("jobset.x-k8s.io", "JobSet", "jobsets", ["v1alpha2"]), ("kubeflow.org", "PyTorchJob", "pytorchjobs", ["v1"])]


def prepare(srv: ApiServer) -> Kubectl:
    k = Kubectl(srv)
    for group, kind, plural, versions in CRDS:
        k.apply(crd(group, kind, plural, versions))
    k.wait_crds([f"{p}.{g}" for g, _, p, _ in CRDS])
    for ns in (SERVICE_NS, NS):
        k.ensure_namespace(ns)
    for doc in service_rbac("wlmap-service", SERVICE_NS):
        k.apply(doc)
    return k


class Fleet:
    """The three API servers, a kubectl for each, and the workloads made on each."""

    def __init__(self, servers: dict[str, ApiServer]):
        self.servers = servers
        self.kubectl = {n: Kubectl(s) for n, s in servers.items()}
        self.made: dict[str, list[str]] = {n: [] for n in servers}

    def kubeconfig_doc(self, name: str, user: str = "service", token: str | None = None) -> dict[str, Any]:
        """A self-contained kubeconfig (CA inline) for one cluster: what a cluster Secret holds."""
        srv = self.servers[name]
        ca = base64.b64encode(srv.ca.read_bytes()).decode()
        return {"apiVersion": "v1", "kind": "Config", "current-context": name,
                "clusters": [{"name": name, "cluster": {"server": srv.url, "certificate-authority-data": ca}}],
                "users": [{"name": user, "user": {"token": token or TOKENS[user][0]}}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": user}}]}

    def merged_kubeconfig(self, path: Path, user: str = "service") -> Path:
        """One kubeconfig with a context per cluster (current: a), as `kubectl config` merges them."""
        docs = [self.kubeconfig_doc(n, user) for n in self.servers]
        merged = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
                  "clusters": [c for d in docs for c in d["clusters"]],
                  "users": [{"name": user, "user": {"token": TOKENS[user][0]}}],
                  "contexts": [c for d in docs for c in d["contexts"]]}
        path.write_text(json.dumps(merged))
        return path


@pytest.fixture(scope="session")
def fleet(apiserver: ApiServer) -> Iterator[Fleet]:
    b, c = ApiServer().start(), ApiServer().start()
    try:
        servers = {"a": apiserver, "b": b, "c": c}
        for srv in servers.values():
            prepare(srv)
        f = Fleet(servers)
        for name in servers:
            _jobset_with_pods(f.kubectl[name], NS, f"train-{name}")
            f.made[name].append(f"train-{name}")
        for name in ("b", "c"):  # the same name in two clusters
            _jobset_with_pods(f.kubectl[name], NS, "shared")
            f.made[name].append("shared")
        yield f
    finally:
        b.stop()
        c.stop()


def fleet_args(f: Fleet, *extra: str) -> list[str]:
    a, b, c = (f.servers[n] for n in "abc")
    return ["--kubeconfig", str(a.kubeconfig("service")), "--cluster-name", "a", "--namespace", SERVICE_NS,
            "--cluster", f"b={b.kubeconfig('service')}", "--cluster", f"c={c.kubeconfig('service')}",
            "--karta-resources", "false", "--cluster-probe-interval", "0.5", *extra]


def settled(server: Server, clusters: list[str]) -> httpx.Client:
    """A client that, before each request, waits for every named cluster's model to have applied
    the tests' last write there (tests/consistency.py, per cluster)."""

    def on_request(request: httpx.Request) -> None:
        if request.url.path != "/model":
            for n in clusters:
                settle(server.url, None, token=request.headers.get("authorization"), cluster=n)

    return httpx.Client(base_url=server.url, timeout=30, event_hooks={"request": [on_request]})


def wait_synced(server: Server, clusters: list[str], timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = {i["name"]: i for i in httpx.get(server.url + "/clusters", timeout=10).json().get("items", [])}
        if all(items.get(n, {}).get("synced") and items[n].get("available") for n in clusters):
            return
        time.sleep(0.1)
    raise AssertionError(f"clusters did not sync: {httpx.get(server.url + '/clusters').text}")


@pytest.fixture(scope="module")
def fleet_service(fleet: Fleet) -> Iterator[Server]:
    s = Server(*fleet_args(fleet, "--auth", "none"))
    wait_synced(s, ["a", "b", "c"])
    yield s
    s.stop()
