"""Definitions from ConfigMaps and Karta resources, hot-reloaded from a real API server."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import SERVICE_NS
from .kubeobjects import Kubectl
from .util import BATCHTASK_DEF, PYTORCHJOB_DEF, definition_text, eventually, load

LABEL = {"workload-map.dev/definitions": "true"}
BATCHTASK = load("examples/definitions/acme.example.com/BatchTask/v1/testdata/running.yaml")
PYTORCHJOB = load("definitions/kubeflow.org/PyTorchJob/v1/testdata/created.yaml")


def configmap(name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": SERVICE_NS, "labels": LABEL if labels is None else labels},
            "data": data}


@pytest.fixture
def cleanup(kubectl: Kubectl, service: Server) -> Iterator[list[tuple[str, str, str | None, str]]]:
    """Objects to delete after the test.  Tests start and end with no cluster definitions served
    (other modules share the service)."""
    c = service.client()

    def clean() -> bool:
        return not [d for d in defs(c) if d["source"] in ("configmap", "cluster")]

    eventually(clean, what="no cluster definitions before the test")
    made: list[tuple[str, str, str | None, str]] = []
    yield made
    for api, kind, ns, name in made:
        kubectl.delete(api, kind, ns, name)
    eventually(clean, what="cluster definitions gone after cleanup")


def defs(c: httpx.Client, source: str | None = None) -> list[dict[str, Any]]:
    items = c.get("/definitions").json()["items"]
    return [i for i in items if source is None or i["source"] == source]


def source_of(c: httpx.Client, manifest: dict[str, Any]) -> str | None:
    r = c.post("/interpret", json=manifest)
    return r.json()["definition"]["source"] if r.status_code == 200 else f"HTTP {r.status_code}"


def sources(c: httpx.Client) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in c.get("/definitions").json()["sources"]}


def test_configmap_definition_is_served_within_2_seconds(service: Server, kubectl: Kubectl, cleanup: list) -> None:
    c = service.client()
    assert source_of(c, BATCHTASK) == "HTTP 404"  # nothing covers BatchTask yet
    kubectl.apply(configmap("acme-defs", {"batchtask.yaml": definition_text(BATCHTASK_DEF)}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "acme-defs"))
    _, took = eventually(lambda: source_of(c, BATCHTASK) == "configmap", what="BatchTask served from the ConfigMap")
    assert took < 2.0
    entry = next(d for d in defs(c, "configmap") if d["kind"] == "BatchTask")
    assert entry["state"] == "active"
    assert entry["origin"] == f"configmap:{SERVICE_NS}/acme-defs/batchtask.yaml"
    result = c.post("/interpret", json=BATCHTASK).json()
    assert result["status"]["phase"] == "Running" and result["totals"]["gpus"] == 3

    # Edits are picked up too (a second definition in the same key, as a YAML stream).
    lws = definition_text(BATCHTASK_DEF).replace("kind: BatchTask", "kind: BatchJobX")
    kubectl.apply(configmap("acme-defs", {"batchtask.yaml": definition_text(BATCHTASK_DEF) + "\n---\n" + lws}))
    eventually(lambda: any(d["kind"] == "BatchJobX" for d in defs(c, "configmap")), what="second document served")


def test_invalid_edit_keeps_last_good_and_is_reported(service: Server, apiserver: ApiServer, kubectl: Kubectl,
                                                      cleanup: list) -> None:
    c = service.client()
    good = definition_text(BATCHTASK_DEF)
    kubectl.apply(configmap("acme-edit", {"def.yaml": good}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "acme-edit"))
    eventually(lambda: source_of(c, BATCHTASK) == "configmap", what="good version served")
    digest = c.post("/interpret", json=BATCHTASK).json()["definition"]["digest"]
    failed_before = _metric(c, 'wlmap_definition_reloads_total{result="failed"}')

    bad = good.replace("rootComponent:", "rootComponentTypo:", 1)
    kubectl.apply(configmap("acme-edit", {"def.yaml": bad}))

    def states() -> dict[str, Any] | None:
        mine = [d for d in defs(c, "configmap") if d["origin"].startswith(f"configmap:{SERVICE_NS}/acme-edit/")]
        by_state = {d["state"]: d for d in mine}
        return by_state if {"last-good", "invalid"} <= by_state.keys() else None

    by_state, _ = eventually(states, what="last-good and invalid entries")
    assert by_state["last-good"]["digest"] == digest
    assert any("rootComponent: Required value" in e["message"] for e in by_state["invalid"]["errors"])
    # still served, by the same (last good) version
    r = c.post("/interpret", json=BATCHTASK).json()
    assert r["definition"]["digest"] == digest and r["definition"]["source"] == "configmap"
    assert _metric(c, 'wlmap_definition_reloads_total{result="failed"}') > failed_before

    # A Warning Event on the ConfigMap names the definition and the finding.
    def event() -> dict[str, Any] | None:
        evs = apiserver.call("GET", f"/api/v1/namespaces/{SERVICE_NS}/events")["items"]
        return next((e for e in evs if e["involvedObject"]["name"] == "acme-edit"
                     and e["reason"] == "InvalidDefinition"), None)

    ev, _ = eventually(event, what="InvalidDefinition event")
    assert ev["type"] == "Warning" and "rootComponent: Required value" in ev["message"]
    assert "last good version stays in service" in ev["message"]

    # A key that is not even YAML: reported as a source problem, last good kept.
    kubectl.apply(configmap("acme-edit", {"def.yaml": "spec: [unclosed"}))
    eventually(lambda: any("acme-edit/def.yaml" in p for p in sources(c)["configmap"]["problems"]),
               what="unreadable key reported")
    assert c.post("/interpret", json=BATCHTASK).json()["definition"]["digest"] == digest

    # Fixed again: the new good version replaces the last good one.
    kubectl.apply(configmap("acme-edit", {"def.yaml": good.replace("workers", "workers", 1)}))
    eventually(lambda: [d["state"] for d in defs(c, "configmap") if "acme-edit" in d["origin"]] == ["active"],
               what="back to one active definition")


def test_precedence_and_deletion_fall_back(service: Server, kubectl: Kubectl, cleanup: list) -> None:
    """configmap > cluster (Karta resources) > builtin, per GVK; deleting falls back a level."""
    c = service.client()
    assert source_of(c, PYTORCHJOB) == "builtin"
    karta = yaml.safe_load(definition_text(PYTORCHJOB_DEF))
    karta["metadata"] = {"name": karta["metadata"]["name"]}
    kubectl.apply(karta)
    cleanup.append(("run.ai/v1alpha1", "Karta", None, karta["metadata"]["name"]))
    eventually(lambda: source_of(c, PYTORCHJOB) == "cluster", what="Karta resource overrides the catalog")
    entry = next(d for d in defs(c) if d["source"] == "builtin" and d["kind"] == "PyTorchJob")
    assert entry["state"] == "shadowed"

    kubectl.apply(configmap("pytorch-override", {"pytorchjob.yaml": definition_text(PYTORCHJOB_DEF)}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "pytorch-override"))
    eventually(lambda: source_of(c, PYTORCHJOB) == "configmap", what="ConfigMap overrides the Karta resource")

    kubectl.delete("v1", "ConfigMap", SERVICE_NS, "pytorch-override")
    eventually(lambda: source_of(c, PYTORCHJOB) == "cluster", what="back to the Karta resource")
    kubectl.delete("run.ai/v1alpha1", "Karta", None, karta["metadata"]["name"])
    eventually(lambda: source_of(c, PYTORCHJOB) == "builtin", what="back to the catalog")


def test_two_configmaps_claiming_one_gvk_are_ambiguous(service: Server, kubectl: Kubectl, cleanup: list) -> None:
    c = service.client()
    text = definition_text(BATCHTASK_DEF)
    other = text.replace("name: acme-example-com-batchtask-v1", "name: acme-batchtask-other")
    assert other != text
    for name, body in (("amb-a", text), ("amb-b", other)):
        kubectl.apply(configmap(name, {"d.yaml": body}))
        cleanup.append(("v1", "ConfigMap", SERVICE_NS, name))

    def conflict() -> dict[str, Any] | None:
        r = c.post("/interpret", json=BATCHTASK)
        return r.json() if r.status_code == 409 else None

    body, _ = eventually(conflict, what="409 for two definitions of one GVK")
    assert "acme-batchtask-other" in body["detail"] and "acme-example-com-batchtask-v1" in body["detail"]
    assert {d["state"] for d in defs(c, "configmap") if d["kind"] == "BatchTask"} == {"ambiguous"}


def test_configmaps_without_the_label_are_ignored(service: Server, kubectl: Kubectl, cleanup: list) -> None:
    c = service.client()
    kubectl.apply(configmap("unlabelled", {"d.yaml": definition_text(BATCHTASK_DEF)}, labels={}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "unlabelled"))
    kubectl.apply(configmap("marker", {"note": "x"}, labels={"other": "1"}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "marker"))
    time.sleep(1.0)
    assert not [d for d in defs(c, "configmap") if "unlabelled" in d["origin"]]


def test_watch_survives_apiserver_restart(service: Server, apiserver: ApiServer, kubectl: Kubectl,
                                          cleanup: list) -> None:
    c = service.client()
    before = sources(c)["configmap"]
    apiserver.restart_apiserver(down_for=1.0)
    kubectl.apply(configmap("after-restart", {"d.yaml": definition_text(BATCHTASK_DEF)}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "after-restart"))
    eventually(lambda: source_of(c, BATCHTASK) == "configmap", timeout=30, what="edit after a restart served")
    after = sources(c)["configmap"]
    assert after["reconnects"] > before["reconnects"]
    assert after["state"] == "synced"
    assert c.get("/readyz").status_code == 200


def test_watch_relists_after_410(service: Server, apiserver: ApiServer, kubectl: Kubectl, cleanup: list) -> None:
    """Force a 410: while the API server is down, move etcd's revision on and compact it, so the
    watcher's resourceVersion is gone when it resumes."""
    c = service.client()
    before = sources(c)["configmap"]
    apiserver.stop_apiserver()
    etcd = f"http://127.0.0.1:{apiserver.etcd_port}/v3/kv"
    urllib.request.urlopen(urllib.request.Request(f"{etcd}/put", method="POST",
                                                  data=json.dumps({"key": "d2xtYXAtYnVtcA==", "value": "MQ=="}).encode()),
                           timeout=10).read()
    apiserver.compact()
    apiserver.start_apiserver()
    kubectl.apply(configmap("after-410", {"d.yaml": definition_text(BATCHTASK_DEF)}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "after-410"))
    eventually(lambda: source_of(c, BATCHTASK) == "configmap", timeout=30, what="edit after a 410 served")
    after = sources(c)["configmap"]
    assert after["relists"] > before["relists"], (before, after)
    # the relist came from a 410 on resuming the watch (not only from a forbidden warm-up)
    assert f'configmap: resourceVersion {before["resourceVersion"]} is too old; listing again' in service.output()


def test_readyz_waits_for_first_sync(tmp_path: Any) -> None:
    """An API server that is not there: built-in definitions are served, /readyz says why it is not ready."""
    kc = tmp_path / "kubeconfig"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:9", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    s = Server("--kubeconfig", str(kc), "--auth", "none", wait="/healthz")
    try:
        c = s.client()
        r = c.get("/readyz")
        assert r.status_code == 503
        assert "first sync" in r.json()["detail"] and "configmap" in r.json()["detail"]
        assert source_of(c, PYTORCHJOB) == "builtin"  # the catalog is served meanwhile
        src = sources(c)
        assert src["configmap"]["state"] in ("starting", "unavailable")
        eventually(lambda: sources(c)["configmap"]["state"] == "unavailable", what="unavailable reported")
        assert "cannot reach" in (sources(c)["configmap"]["error"] or "")
    finally:
        s.stop()


def _metric(c: httpx.Client, name: str) -> float:
    for line in c.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


def test_runaway_expression_in_a_hot_reloaded_definition(service: Server, kubectl: Kubectl, cleanup: list) -> None:
    """A ConfigMap definition whose expression never ends: cut at the deadline with the expression
    named, while other requests are served."""
    doc = yaml.safe_load(definition_text(BATCHTASK_DEF))
    root = doc["spec"]["structureDefinition"]["rootComponent"]
    root["statusDefinition"]["phaseDefinition"]["path"] = "def f: f; f"
    kubectl.apply(configmap("runaway", {"d.yaml": yaml.safe_dump(doc)}))
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "runaway"))
    c = service.client()
    eventually(lambda: source_of(c, BATCHTASK) != "HTTP 404", what="runaway definition served")
    started = time.monotonic()
    r = c.post("/interpret", json=BATCHTASK)
    took = time.monotonic() - started
    assert r.status_code == 422 and r.json()["type"].endswith("evaluation-deadline-exceeded")
    err = r.json()["errors"][0]
    assert err["expression"] == "def f: f; f" and "phaseDefinition" in err["path"]
    # cut, not hung: the deadline (2 s), plus at most one evaluation ahead of it (the live model
    # interprets the same runaway definition in the background, but never on the last worker)
    assert took < 2 * 2 + 3
    assert source_of(c, PYTORCHJOB) == "builtin"  # everyone else is served
    assert c.get("/healthz").status_code == 200
