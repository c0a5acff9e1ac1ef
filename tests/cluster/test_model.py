"""The live model on a real API server: reads from memory equal direct reads, cost the API server
nothing, follow changes incrementally, and survive kinds coming and going."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl, crd, owner_ref, pod, running
from .test_workloads import _jobset_with_pods
from .util import BATCHTASK_DEF, definition_text, eventually

NS = "model-a"
NS2 = "model-b"


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> dict[str, Any]:
    for ns in (NS, NS2):
        kubectl.ensure_namespace(ns)
    out = {"a": _jobset_with_pods(kubectl, NS, "train-a"), "b": _jobset_with_pods(kubectl, NS2, "train-b")}
    # Deployment -> ReplicaSet (a kind with a definition, but part of the Deployment) -> pod
    web = kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
                         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                                  "template": {"metadata": {"labels": {"app": "web"}},
                                               "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    rs = kubectl.apply({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": "web-1", "namespace": NS, "ownerReferences": [owner_ref(web)]},
                        "spec": {"selector": {"matchLabels": {"app": "web"}},
                                 "template": {"metadata": {"labels": {"app": "web"}},
                                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    p = kubectl.apply(pod(NS, "web-1-x", rs, labels={"app": "web", "pod-template-hash": "1"}, node="n1"))
    kubectl.set_status(p, running("n1"))
    bare = kubectl.apply(pod(NS, "bare", None, node="n1"))
    kubectl.set_status(bare, running("n1"))
    return out


def _model(s: Server) -> dict[str, Any]:
    return httpx.get(s.url + "/model", timeout=10).json()


def _strip(doc: Any) -> Any:
    doc = dict(doc)
    doc.pop("freshness", None)
    if "resumeFrom" in (doc.get("metadata") or {}):  # the model's stream token: a direct read has no stream
        meta = {k: v for k, v in doc.pop("metadata").items() if k != "resumeFrom"}
        if meta:
            doc["metadata"] = meta
    if isinstance(doc.get("gang"), dict) and doc["gang"].get("pods"):
        doc["gang"] = dict(doc["gang"], pods=sorted(doc["gang"]["pods"], key=lambda p: p["pod"]))
    return doc


def api_requests(apiserver: ApiServer) -> int:
    """Non-watch requests the API server has served (its own apiserver_request_total)."""
    text = apiserver.call("GET", "/metrics", raw=True).decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels, value = line.rsplit(" ", 1)
            if 'verb="WATCH"' not in labels and 'verb="CONNECT"' not in labels:
                total += float(value)
    return int(total)


def test_model_answers_what_a_direct_read_answers(service: Server, direct: Server, world: dict) -> None:
    with service.client() as m, direct.client() as d:
        st = _model(service)
        assert st["enabled"] and st["synced"], st
        assert _model(direct) == {"enabled": False, "synced": False, "reason": "--cache false"}
        for path, params in ((f"/workloads/{NS}/train-a", {}), (f"/workloads/{NS}/train-a", {"kind": "jobset"}),
                             (f"/workloads/{NS}/train-a", {"kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha2"}),
                             (f"/workloads/{NS}/train-a", {"pods": "false"}), (f"/workloads/{NS}/web", {}),
                             (f"/workloads/{NS}/bare", {}), (f"/workloads/{NS}/nope", {}),
                             (f"/workloads/{NS}/train-a", {"kind": "pytorchjob"}),
                             ("/workloads", {"namespace": NS}), ("/workloads", {"namespace": NS2, "kind": "jobsets"}),
                             ("/workloads", {})):
            a, b = m.get(path, params=params), d.get(path, params=params)
            assert a.status_code == b.status_code, (path, params, a.text, b.text)
            if a.status_code == 200:
                assert a.json()["freshness"]["source"] == "model" and b.json()["freshness"]["source"] == "direct"
                assert _strip(a.json()) == _strip(b.json()), (path, params)
            else:
                assert a.json() == b.json(), (path, params)
        row = next(r for r in m.get("/workloads", params={"namespace": NS}).json()["items"]
                   if r["workload"]["name"] == "train-a")
        assert row["pods"] == {"ready": 4, "desired": 7} and row["gpus"] == 12
        ref = {"ref": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": NS, "name": "train-a"}}
        a, b = m.post("/interpret", json=ref), d.post("/interpret", json=ref)
        assert a.status_code == b.status_code == 200
        assert a.json()["freshness"]["source"] == "model" and _strip(a.json()) == _strip(b.json())


def test_reads_from_the_model_cost_the_api_server_nothing(service: Server, direct: Server, apiserver: ApiServer,
                                                          world: dict) -> None:
    with service.client() as m, direct.client() as d:
        m.get(f"/workloads/{NS}/train-a")  # settled, warm
        reads = [(f"/workloads/{NS}/train-a", {}), (f"/workloads/{NS2}/train-b", {"kind": "jobset"}),
                 ("/workloads", {"namespace": NS}), ("/workloads", {})]

        def cost(c: httpx.Client) -> int:
            before = api_requests(apiserver)
            for _ in range(5):
                for path, params in reads:
                    assert c.get(path, params=params).status_code == 200
            return api_requests(apiserver) - before - 1  # the second /metrics read counts itself

        model_cost, direct_cost = cost(m), cost(d)
    assert model_cost <= 2, model_cost  # background only (a lease, a definition event), never per read
    assert direct_cost >= 20 * 3, direct_cost  # each direct read lists and gets several resources


def test_pod_changes_update_readiness_without_reinterpreting(service: Server, kubectl: Kubectl,
                                                              world: dict) -> None:
    with service.client() as c:
        before = c.get(f"/workloads/{NS}/train-a").json()
        assert before["live"]["ready"] == 4
        count = _model(service)["interpretations"]
        target = kubectl.get("v1", "Pod", NS, "train-a-coordinator-0-0")
        start = time.monotonic()
        kubectl.set_status(target, {"conditions": [{"type": "PodScheduled", "status": "True"},
                                                   {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]})
        _, took = eventually(lambda: c.get(f"/workloads/{NS}/train-a").json()["live"]["ready"] == 3, timeout=2,
                             what="readiness followed from the pod event")
        row = next(r for r in c.get("/workloads", params={"namespace": NS}).json()["items"]
                   if r["workload"]["name"] == "train-a")
        assert row["pods"]["ready"] == 3
        # the JobSet itself did not change: its interpretation is reused, only pod facts moved
        assert _model(service)["interpretations"] == count, "a pod change re-interpreted the workload"
        kubectl.set_status(target, running("gpu-node-0"))
        eventually(lambda: c.get(f"/workloads/{NS}/train-a").json()["live"]["ready"] == 4, timeout=2)
        print(f"pod change visible on GET after {time.monotonic() - start:.3f} s (first: {took:.3f} s)")
        # an edit of the JobSet itself is interpreted again
        kubectl.patch(world["a"], {"metadata": {"labels": {"touched": "yes"}}})
        eventually(lambda: _model(service)["interpretations"] > count, timeout=2, what="re-interpreted on its edit")


def test_owned_workload_kinds_are_watched_but_not_listed(service: Server, world: dict) -> None:
    st = _model(service)
    modes = {(k["group"], k["kind"]): k["mode"] for k in st["kinds"]}
    assert modes[("apps", "ReplicaSet")] == "full"  # it has a definition: on the chain Deployment -> ReplicaSet -> Pod
    assert modes[("jobset.x-k8s.io", "JobSet")] == "full" and modes[("", "Pod")] == "full"
    with service.client() as c:
        web = c.get(f"/workloads/{NS}/web").json()
        names = [r["workload"]["name"] for r in c.get("/workloads", params={"namespace": NS}).json()["items"]]
    assert web["live"]["current"] == 1 and [p["name"] for p in web["live"]["pods"]] == ["web-1-x"]
    assert "web" in names and "web-1" not in names  # a ReplicaSet a Deployment controls is part of it


def test_objects_kept_are_projected(service: Server, world: dict) -> None:
    """What the model holds of a pod leaves out what nothing reads (managedFields, env, volumes)."""
    with service.client() as c:
        live = c.get(f"/workloads/{NS}/bare").json()
    assert live["status"]["phase"] == "Running"
    # GET /model reports the kept objects; their size is bounded by the projection, checked in
    # tests/model/test_records.py for every catalog fixture


def test_kinds_come_and_go_at_run_time(service: Server, kubectl: Kubectl, apiserver: ApiServer,
                                       cleanup: list) -> None:
    """A CRD installed after start, with a definition in a ConfigMap: its workloads appear without
    a restart; deleting the definition removes them; a CRD deleted empties the kind."""
    plural, group = "widgets", "late.example.com"
    definition = definition_text(BATCHTASK_DEF).replace("acme.example.com", group).replace("BatchTask", "Widget") \
        .replace("acme-example-com-batchtask", "late-example-com-widget")
    kubectl.apply({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "widget-def", "namespace": SERVICE_NS,
                                "labels": {"workload-map.dev/definitions": "true"}},
                   "data": {"widget.yaml": definition}})
    cleanup.append(("v1", "ConfigMap", SERVICE_NS, "widget-def"))
    with service.client() as c:
        eventually(lambda: any(d["kind"] == "Widget" for d in c.get("/definitions").json()["items"]),
                   what="the definition is served")
        from .kubeobjects import PLURALS

        PLURALS[(group, "Widget")] = (plural, True)
        kubectl.apply(crd(group, "Widget", plural, ["v1"]))
        kubectl.wait_crds([f"{plural}.{group}"])
        kubectl.ensure_namespace(NS)
        w = kubectl.apply({"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": NS},
                           "spec": {"workers": 2, "podTemplate": {"spec": {"containers": [
                               {"name": "main", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}})
        kubectl.set_status(w, {"state": "Active", "activeWorkers": 2})
        _, took = eventually(lambda: any(r["workload"]["name"] == "w1" and r["workload"]["kind"] == "Widget"
                                         for r in c.get("/workloads", params={"namespace": NS}).json()["items"]),
                             timeout=15, what="the new kind's workload listed")
        assert c.get("/workloads", params={"namespace": NS}).json()["freshness"]["source"] == "model"
        assert any(k["kind"] == "Widget" for k in _model(service)["kinds"])
        kubectl.delete("v1", "ConfigMap", SERVICE_NS, "widget-def")
        eventually(lambda: not any(r["workload"]["kind"] == "Widget"
                                   for r in c.get("/workloads", params={"namespace": NS}).json()["items"]),
                   timeout=10, what="the kind gone with its definition")
        eventually(lambda: not any(k["kind"] == "Widget" for k in _model(service)["kinds"]), timeout=10)
        apiserver.call("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}")
    print(f"a kind installed at run time was listed after {took:.2f} s")


def _samples(text: str) -> dict[tuple[str, frozenset], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {(smp.name, frozenset(smp.labels.items())): smp.value
            for fam in text_string_to_metric_families(text) for smp in fam.samples}


def test_metrics_of_workloads(service: Server, world: dict) -> None:
    with service.client() as c:
        c.get(f"/workloads/{NS}/train-a")  # settled
        text = c.get("/metrics/workloads").text
    got = _samples(text)
    w = {"namespace": NS, "group": "jobset.x-k8s.io", "kind": "JobSet", "name": "train-a"}

    def val(name: str, **extra: str) -> float | None:
        return got.get((name, frozenset((w | extra).items())))

    assert val("wlmap_workload_info", definition="jobset-x-k8s-io-jobset-v1alpha2") == 1
    assert val("wlmap_workload_phase", phase="Running") == 1 and val("wlmap_workload_phase", phase="Failed") == 0
    assert sum(v for (n, lb), v in got.items() if n == "wlmap_workload_phase" and set(w.items()) <= lb) == 1
    assert val("wlmap_workload_pods_desired") == 7 and val("wlmap_workload_pods_ready") in (3, 4)
    assert val("wlmap_workload_resource_requests", resource="nvidia.com/gpu") == 12
    assert (val("wlmap_workload_resource_requests", resource="cpu") or 0) > 0
    assert (val("wlmap_workload_resource_requests", resource="memory") or 0) >= 2**30
    assert val("wlmap_workload_gang_min_available") == 7
    names = {dict(lb).get("name") for (n, lb) in got if n == "wlmap_workload_info"}
    assert "train-b" in names and "bare" in names and "web" in names
    assert not any(n.startswith("train-a-") for n in names)  # nested Jobs and pods are part of the JobSet
    # the operational /metrics stays small: no per-workload series there
    assert "wlmap_workload_info" not in httpx.get(service.url + "/metrics").text


def test_watch_namespace_limits_the_model(apiserver: ApiServer, world: dict) -> None:
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--watch-namespace", NS2)
    try:
        eventually(lambda: _model(s)["synced"], timeout=20, what="scoped model synced")
        with s.client() as c:
            st = _model(s)
            assert st["namespaces"] == [NS2]
            rows = c.get("/workloads").json()
            assert {r["workload"]["namespace"] for r in rows["items"]} <= {NS2, None, ""}
            assert any(r["workload"]["name"] == "train-b" for r in rows["items"])
            assert any("watches namespaces" in w for w in rows["warnings"])
            inside = c.get(f"/workloads/{NS2}/train-b").json()
            assert inside["freshness"]["source"] == "model" and inside["live"]["ready"] == 4
            outside = c.get(f"/workloads/{NS}/train-a")  # another namespace: read directly
            assert outside.status_code == 200 and outside.json()["freshness"]["source"] == "direct"
            assert all(k["namespace"] in (NS2, None) for k in st["kinds"])
    finally:
        s.stop()


def test_start_sync_is_reported(service: Server) -> None:
    st = _model(service)
    assert st["synced"] and st["syncedAt"] and st["startedAt"] <= st["syncedAt"]
    assert st["server"].startswith("https://127.0.0.1:")
    for k in st["kinds"]:
        assert k["state"] in ("synced", "not-served", "forbidden"), k


@pytest.fixture
def cleanup(kubectl: Kubectl) -> Iterator[list]:
    items: list = []
    yield items
    for api, kind, ns, name in items:
        kubectl.delete(api, kind, ns, name)



def test_a_kind_whose_only_definition_is_invalid_says_so(apiserver: ApiServer, kubectl: Kubectl) -> None:
    """Started while the only definition of BatchTask is invalid: a lookup that finds no workload
    names the invalid definition and where it came from, instead of just "no workload named"."""
    broken = definition_text(BATCHTASK_DEF).replace("replicasPath: .spec.workers // 1", "replicasPath: .spec.workers |")
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "broken-batchtask", "namespace": SERVICE_NS,
                       "labels": {"workload-map.dev/definitions": "true"}},
          "data": {"batchtask.yaml": broken}}
    kubectl.apply(cm)
    kubectl.ensure_namespace(NS)
    kubectl.apply({"apiVersion": "acme.example.com/v1", "kind": "BatchTask", "metadata": {"name": "nightly", "namespace": NS},
                   "spec": {"workers": 1}})
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none")
    try:
        with s.client() as c:
            for params in ({}, {"kind": "batchtask"}):
                r = c.get(f"/workloads/{NS}/nightly", params=params)
                assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json", r.text
                body = r.json()
                assert body["type"].endswith("definition-invalid"), body
                assert "the only definition of BatchTask (acme.example.com/v1)" in body["detail"]
                assert "configmap:wlmap-system/broken-batchtask/batchtask.yaml" in body["detail"]
                assert body["errors"][0]["path"] == "configmap:wlmap-system/broken-batchtask/batchtask.yaml"
            # a name nobody has in a namespace without BatchTasks still mentions it: it may be one
            assert "is invalid" in c.get(f"/workloads/{NS2}/nobody").json()["detail"]
    finally:
        s.stop()
        kubectl.delete("v1", "ConfigMap", SERVICE_NS, "broken-batchtask")
        kubectl.delete("acme.example.com/v1", "BatchTask", NS, "nightly")


def _evaluations(c: httpx.Client) -> float:
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in c.get("/metrics").text.splitlines()
               if ln.startswith("wlmap_interpretations_total{"))


def test_a_pod_change_costs_its_part_not_an_evaluation(service: Server, kubectl: Kubectl, world: dict) -> None:
    """The model evaluates a workload once per version of its object (for its row); a read
    assembles the answer from that base and its pods' parts, and after one pod changes the next
    read computes that pod's part alone: the workload is not evaluated again."""
    with service.client() as c:
        made = _jobset_with_pods(kubectl, NS, "parts")
        eventually(lambda: c.get(f"/workloads/{NS}/parts").json()["live"]["current"] == 5, timeout=10,
                   what="the new workload's answer with its pods")
        before, counts = _evaluations(c), _model(service)["answerParts"]
        pod = kubectl.get("v1", "Pod", NS, "parts-trainer-0-0")
        kubectl.set_status(pod, {**pod["status"], "conditions": [{"type": "PodScheduled", "status": "True"},
                                                          {"type": "Ready", "status": "False"}]})
        body = eventually(lambda: (b := c.get(f"/workloads/{NS}/parts").json())["live"]["ready"] == 3 and b,
                          timeout=10, what="the pod's change in the answer")[0]
        assert body["workload"]["uid"] == made["metadata"]["uid"]
        row = next(p for p in body["live"]["pods"] if p["name"] == "parts-trainer-0-0")
        assert row["ready"] is False and row["instance"] == "trainer"
        after = _model(service)["answerParts"]
        assert _evaluations(c) == before, "the read evaluated the workload again"
        assert after["basesComputed"] == counts["basesComputed"]
        assert after["podPartsComputed"] - counts["podPartsComputed"] == 1, (counts, after)
        kubectl.delete("jobset.x-k8s.io/v1alpha2", "JobSet", NS, "parts")
