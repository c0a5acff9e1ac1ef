"""Faults: the API server absent at start, down mid-watch, ConfigMaps deleted and re-created,
evaluation workers killed mid-request.  Nothing crashes, hangs or loses a good definition."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.http_bench import cpu_ticks, process_tree

from ..service.conftest import Server
from .apiserver import ApiServer, ensure_binaries
from .conftest import SERVICE_NS
from .kubeobjects import Kubectl
from .test_sources import BATCHTASK, PYTORCHJOB, cleanup, configmap, sources, source_of  # noqa: F401
from .util import BATCHTASK_DEF, ROOT, definition_text, eventually


@pytest.mark.kube  # its own API server, started late
def test_apiserver_down_at_start_then_appears(tmp_path: Path) -> None:
    """Built-in definitions are served from the start; readiness and cluster definitions follow
    the API server's arrival."""
    assert ensure_binaries()
    api = ApiServer(tmp_path / "late")
    kc = tmp_path / "kubeconfig"  # the server's certificate does not exist yet: skip verification
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": api.url, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "x", "user": {"token": "test-admin-token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    s = Server("--kubeconfig", str(kc), "--namespace", "late", "--auth", "none", wait="/healthz")
    try:
        c = s.client()
        assert c.get("/readyz").status_code == 503
        assert source_of(c, PYTORCHJOB) == "builtin"
        r = c.get("/workloads/default/x")
        assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json"
        api.start()
        k = Kubectl(api)
        k.ensure_namespace("late")
        k.apply({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "d", "namespace": "late", "labels": {"workload-map.dev/definitions": "true"}},
                 "data": {"pytorch.yaml": definition_text("definitions/kubeflow.org/PyTorchJob/v1/definition.yaml")}})
        eventually(lambda: c.get("/readyz").status_code == 200, timeout=30, what="ready once the API server is up")
        eventually(lambda: source_of(c, PYTORCHJOB) == "configmap", timeout=10, what="cluster definitions served")
        assert c.get("/workloads", params={"namespace": "late"}).status_code == 200
    finally:
        s.stop()
        api.stop()


def test_good_definitions_survive_an_apiserver_outage(service: Server, apiserver: ApiServer, kubectl: Kubectl,
                                                      cleanup: list) -> None:
    c = service.client()
    kubectl.apply(configmap("outage", {"d.yaml": definition_text(BATCHTASK_DEF)}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "outage"))
    eventually(lambda: source_of(c, BATCHTASK) == "configmap", what="served before the outage")
    apiserver.stop_apiserver()
    try:
        eventually(lambda: sources(c)["configmap"]["state"] == "unavailable", what="outage noticed")
        for _ in range(5):  # still served, from memory, while the API server is away
            assert source_of(c, BATCHTASK) == "configmap"
            assert c.get("/healthz").status_code == 200
        r = c.get("/workloads", params={"namespace": "default"})
        assert r.status_code in (200, 503) and r.headers["content-type"].startswith("application/")
    finally:
        apiserver.start_apiserver()
    eventually(lambda: sources(c)["configmap"]["state"] == "synced", timeout=30, what="watch resumed")
    assert source_of(c, BATCHTASK) == "configmap"


def test_configmap_deleted_and_recreated(service: Server, kubectl: Kubectl, cleanup: list) -> None:
    c = service.client()
    cm = configmap("flip", {"d.yaml": definition_text(BATCHTASK_DEF)})
    kubectl.apply(cm)
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "flip"))
    eventually(lambda: source_of(c, BATCHTASK) == "configmap", what="served")
    for _ in range(3):
        kubectl.delete("v1", "ConfigMap", SERVICE_NS, "flip")
        eventually(lambda: source_of(c, BATCHTASK) == "HTTP 404", what="gone with its ConfigMap")
        kubectl.create(cm)
        eventually(lambda: source_of(c, BATCHTASK) == "configmap", what="back with the new ConfigMap")


def _busiest(pids: list[int]) -> int:
    before = {p: cpu_ticks(p) for p in pids}
    time.sleep(0.3)
    return max(pids, key=lambda p: cpu_ticks(p) - before[p])


def test_worker_killed_mid_request_is_retried(tmp_path: Path) -> None:
    """An evaluation worker killed mid-request (OOM killer, operator): the request is run again
    on another worker and succeeds; every later request is served."""
    s = Server("--eval-deadline", "20", "--eval-workers", "2")
    try:
        example = ROOT / "examples/definitions/acme.example.com/BatchTask/v1"
        definition = yaml.safe_load((example / "definition.yaml").read_text())
        scale = definition["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]
        scale["replicasPath"] = "(0 | until(. >= 500000; . + 1)) as $n | .spec.workers // 1"  # ~1 s of jq
        body = {"object": yaml.safe_load((example / "testdata/running.yaml").read_text()), "definition": definition}
        c = s.client()
        result: dict[str, Any] = {}
        # Both workers up first (they start with the first request that needs one): the kill below
        # is meant for the worker evaluating, not for one still starting.
        warm = [threading.Thread(target=lambda: c.post("/interpret", json=body, timeout=60)) for _ in range(2)]
        for w in warm:
            w.start()
        for w in warm:
            w.join(60)

        def call() -> None:
            r = c.post("/interpret", json=body, timeout=60)
            result["status"], result["body"] = r.status_code, r.json()

        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.3)
        busy = _busiest(process_tree(s.proc.pid)[1:])  # the worker evaluating this request
        os.kill(busy, signal.SIGKILL)
        t.join(60)
        assert result["status"] == 200, result
        assert result["body"]["totals"]["gpus"] == 3
        # and every later request too, the pool being whole again
        for _ in range(3):
            assert c.post("/interpret", json=body, timeout=60).status_code == 200
        metrics = c.get("/metrics").text
        assert "wlmap_evaluation_retries_total 1.0" in metrics
        assert "wlmap_evaluation_worker_restarts_total 1.0" in metrics
    finally:
        s.stop()


def test_network_drops_neither_kill_nor_wedge_the_service(apiserver: ApiServer, tmp_path: Path) -> None:
    """The cluster behind a relay that drops the network three times (open connections reset, new
    ones accepted then reset): the service stays up, says the cluster is unavailable, and answers
    from it again after each drop.  On uvloop 0.23 this killed the process or left every later
    connect failing with "File descriptor N is used by transport" (benchmarks/loop_faults.py), so
    a service that talks to an API server runs asyncio's loop."""
    from ..ui.relay import Relay

    relay = Relay(apiserver.port)
    doc = json.loads(apiserver.kubeconfig("service").read_text())
    doc["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
    kc = tmp_path / "relayed"
    kc.write_text(json.dumps(doc))
    s = Server("--kubeconfig", str(kc), "--namespace", SERVICE_NS, "--auth", "none", "--karta-resources", "false",
               "--cluster-probe-interval", "0.5")
    try:
        c = s.client()

        def cluster() -> dict[str, Any]:
            return c.get("/clusters").json()["items"][0]

        assert "asyncio" in s.output()  # the loop it said it runs on
        eventually(lambda: cluster()["available"] and cluster()["synced"], timeout=30, what="synced")
        for drop in range(3):
            relay.down()
            eventually(lambda: not cluster()["available"], timeout=15, what=f"drop {drop}: unavailable")
            time.sleep(2)  # reconnects keep failing meanwhile: the informers' and the probe's
            relay.up()
            eventually(lambda: cluster()["available"], timeout=30, what=f"drop {drop}: available again")
            assert s.proc.poll() is None, s.output()[-3000:]
        assert "is used by transport" not in s.output()
        eventually(lambda: cluster()["synced"], timeout=30, what="resynced")
        assert c.get(f"/workloads/{SERVICE_NS}/none", params={"kind": "PyTorchJob"}).status_code == 404
    finally:
        relay.up()
        s.stop()
        relay.close()
