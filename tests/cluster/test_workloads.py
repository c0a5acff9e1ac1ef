"""Live workloads on a real API server: references, GET /workloads/{ns}/{name} with pods
attributed by owner references, the summary list, ambiguity, missing names, generic facts."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .kubeobjects import Kubectl, owner_ref, pod, running, unschedulable
from .util import fixture_object

NS = "wl-live"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"


def _jobset_with_pods(kubectl: Kubectl, ns: str, name: str) -> dict[str, Any]:
    """A JobSet (coordinator x1, trainer x2 jobs of 2 pods) as its controller would leave it:
    Jobs owned by the JobSet, pods owned by the Jobs; one trainer pod cannot be scheduled."""
    obj, status = fixture_object(JOBSET, ns, name)
    js = kubectl.set_status(kubectl.apply(obj), status)
    for rj, jobs, per_job, gpus in (("coordinator", 1, 1, 0), ("trainer", 2, 2, 2)):
        for i in range(jobs):
            job = kubectl.apply({"apiVersion": "batch/v1", "kind": "Job",
                                 "metadata": {"name": f"{name}-{rj}-{i}", "namespace": ns,
                                              "ownerReferences": [owner_ref(js)]},
                                 "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                                "containers": [{"name": "c", "image": "x"}]}}}})
            for p in range(per_job):
                stuck = rj == "trainer" and i == 1 and p == 1
                po = kubectl.apply(pod(ns, f"{name}-{rj}-{i}-{p}", job, gpus=gpus, node=None if stuck else f"gpu-node-{i}",
                                       labels={"jobset.sigs.k8s.io/replicatedjob-name": rj,
                                               "jobset.sigs.k8s.io/job-index": str(i)}))
                kubectl.set_status(po, unschedulable() if stuck else running(f"gpu-node-{i}"))
    return js


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> dict[str, Any]:
    kubectl.ensure_namespace(NS)
    out: dict[str, Any] = {}
    out["jobset"] = _jobset_with_pods(kubectl, NS, "llm-pretrain")
    # a pod with the JobSet's labels that nothing owns: labels never decide membership
    kubectl.apply(pod(NS, "stray", None, labels={"jobset.sigs.k8s.io/replicatedjob-name": "trainer"}))

    # a bare Pod is a workload of its own (the Pod definition), and its own pod
    debug = kubectl.apply(pod(NS, "debug-shell", None, node="cpu-node"))
    kubectl.set_status(debug, running("cpu-node"))

    # two workloads of different kinds sharing a name
    twin_js, st = fixture_object(JOBSET, NS, "twin")
    kubectl.set_status(kubectl.apply(twin_js), st)
    twin_pt, st = fixture_object("definitions/kubeflow.org/PyTorchJob/v1/testdata/created.yaml", NS, "twin")
    kubectl.set_status(kubectl.apply(twin_pt), st)

    # an InferenceService and the Deployment of the same name it controls: one workload
    isvc, st = fixture_object("definitions/serving.kserve.io/InferenceService/v1beta1/testdata/running-raw-gpu.yaml",
                              NS, "llama")
    isvc = kubectl.set_status(kubectl.apply(isvc), st)
    kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "llama", "namespace": NS, "ownerReferences": [owner_ref(isvc)]},
                   "spec": {"selector": {"matchLabels": {"app": "llama"}},
                            "template": {"metadata": {"labels": {"app": "llama"}},
                                         "spec": {"containers": [{"name": "c", "image": "x"}]}}}})

    # Deployment -> ReplicaSet (part of the Deployment) -> pods; one pod names a ReplicaSet of the same
    # name but another UID (a deleted and re-created owner): not part of the workload
    web = kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
                         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                  "template": {"metadata": {"labels": {"app": "web"}},
                                               "spec": {"containers": [{"name": "c", "image": "x",
                                                                        "resources": {"requests": {"cpu": "1"}}}]}}}})
    rs = kubectl.apply({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": "web-abc", "namespace": NS, "ownerReferences": [owner_ref(web)]},
                        "spec": {"selector": {"matchLabels": {"app": "web"}},
                                 "template": {"metadata": {"labels": {"app": "web"}},
                                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    p1 = kubectl.apply(pod(NS, "web-abc-1", rs, labels={"app": "web", "pod-template-hash": "abc"}, node="cpu-node"))
    kubectl.set_status(p1, running("cpu-node"))
    ghost = dict(rs, metadata=dict(rs["metadata"], uid="00000000-0000-0000-0000-000000000000"))
    kubectl.apply(pod(NS, "web-abc-old", ghost, labels={"app": "web", "pod-template-hash": "abc"}))

    # owner chains through objects without definitions (ConfigMaps here): 5 links is owned, 8 is not
    root, st = fixture_object("definitions/kubeflow.org/PyTorchJob/v1/testdata/created.yaml", NS, "chained")
    root = kubectl.set_status(kubectl.apply(root), st)
    for length in (5, 8):
        owner = root
        for i in range(length - 1):
            owner = kubectl.apply({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": f"link{length}-{i}", "namespace": NS,
                                                "ownerReferences": [owner_ref(owner)]}})
        po = kubectl.apply(pod(NS, f"chain-{length}", owner, labels={"training.kubeflow.org/replica-type": "worker"}))
        kubectl.set_status(po, running("n"))
    out["root"] = root
    return out


def get(c: httpx.Client, path: str, **params: Any) -> httpx.Response:
    return c.get(path, params={k: v for k, v in params.items() if v is not None})


def test_live_workload_places_owned_pods(service: Server, world: dict[str, Any]) -> None:
    r = get(service.client(), f"/workloads/{NS}/llm-pretrain")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["workload"]["kind"] == "JobSet" and body["workload"]["uid"] == world["jobset"]["metadata"]["uid"]
    assert body["status"]["phase"] == "Running"
    assert body["totals"] == {"pods": 7, "gpus": 12, "accelerators": {"nvidia.com/gpu": 12},
                              "requests": {"cpu": "82", "memory": "648Gi", "nvidia.com/gpu": "12"},
                              "requestValues": {"cpu": 82000, "memory": 648 * 2**30, "nvidia.com/gpu": 12}}
    live = body["live"]
    assert (live["current"], live["ready"], live["desired"]) == (5, 4, 7)
    assert live["deleting"] is False and live["stale"] is False
    names = [p["name"] for p in live["pods"]]
    assert "stray" not in names and len(names) == 5
    stuck = next(p for p in live["pods"] if p["name"] == "llm-pretrain-trainer-1-1")
    assert stuck == {"name": "llm-pretrain-trainer-1-1", "component": "replicated-job", "instance": "trainer",
                     "phase": "Pending", "ready": False, "node": None, "reason": "Unschedulable"}
    # per instance: trainer has 4 of its pods, 3 ready, on two nodes
    inst = {i["id"]: i for i in body["tree"]["children"][0]["instances"]}
    assert inst["trainer"]["live"] == {"current": 4, "ready": 3, "desired": 4, "nodes": ["gpu-node-0", "gpu-node-1"]}
    assert inst["coordinator"]["live"]["current"] == 1 and inst["coordinator"]["live"]["ready"] == 1


def test_kind_tokens_and_pods_false(service: Server, world: dict[str, Any]) -> None:
    c = service.client()
    for kind in ("JobSet", "jobset", "jobsets", "jobsets.jobset.x-k8s.io", "jobset.v1alpha2.jobset.x-k8s.io"):
        r = get(c, f"/workloads/{NS}/llm-pretrain", kind=kind)
        assert r.status_code == 200, (kind, r.text)
    r = get(c, f"/workloads/{NS}/llm-pretrain", kind="JobSet", apiVersion="jobset.x-k8s.io/v1alpha2", pods="false")
    assert r.status_code == 200 and "live" not in r.json()
    assert get(c, f"/workloads/{NS}/llm-pretrain", kind="pytorchjob").status_code == 404


def test_missing_and_ambiguous_names(service: Server, world: dict[str, Any]) -> None:
    c = service.client()
    r = get(c, f"/workloads/{NS}/does-not-exist")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    assert 'no workload named "does-not-exist"' in r.json()["detail"]

    r = get(c, f"/workloads/{NS}/twin")
    assert r.status_code == 409
    body = r.json()
    assert {(x["kind"], x["apiVersion"]) for x in body["candidates"]} == {
        ("JobSet", "jobset.x-k8s.io/v1alpha2"), ("PyTorchJob", "kubeflow.org/v1")}
    r = get(c, f"/workloads/{NS}/twin", kind="PyTorchJob")
    assert r.status_code == 200 and r.json()["workload"]["kind"] == "PyTorchJob"

    r = get(c, f"/workloads/{NS}/llm-pretrain", kind="JobSet", apiVersion="jobset.x-k8s.io/v9")
    assert r.status_code == 404


def test_controlled_object_of_the_same_name_is_not_ambiguous(service: Server, world: dict[str, Any]) -> None:
    r = get(service.client(), f"/workloads/{NS}/llama")
    assert r.status_code == 200, r.text
    assert r.json()["workload"]["kind"] == "InferenceService"


def test_owner_chain_rules(service: Server, world: dict[str, Any]) -> None:
    c = service.client()
    web = get(c, f"/workloads/{NS}/web", kind="Deployment").json()
    assert [p["name"] for p in web["live"]["pods"]] == ["web-abc-1"]  # the pod of the re-created owner is not
    assert (web["live"]["current"], web["live"]["ready"], web["live"]["desired"]) == (1, 1, 2)

    chained = get(c, f"/workloads/{NS}/chained", kind="PyTorchJob").json()
    owned = {p["name"] for p in chained["live"]["pods"]} | set(chained["live"].get("unplaced") or [])
    assert "chain-5" in owned and "chain-8" not in owned


def test_bare_pod_is_its_own_pod(service: Server, world: dict[str, Any]) -> None:
    live = get(service.client(), f"/workloads/{NS}/debug-shell").json()["live"]
    assert (live["current"], live["ready"], live["desired"]) == (1, 1, 1)
    assert [p["name"] for p in live["pods"]] == ["debug-shell"]


def test_generic_facts_stale_and_deleting(service: Server, kubectl: Kubectl, world: dict[str, Any]) -> None:
    c = service.client()
    obj, status = fixture_object(JOBSET, NS, "facts")
    js = kubectl.apply(obj)
    kubectl.set_status(js, dict(status, observedGeneration=js["metadata"]["generation"]))
    assert get(c, f"/workloads/{NS}/facts").json()["live"]["stale"] is False
    # a spec change bumps metadata.generation; the (absent) controller has not observed it
    kubectl.patch(js, {"spec": {"suspend": True}})
    assert get(c, f"/workloads/{NS}/facts").json()["live"]["stale"] is True
    # a finalizer keeps the object while it is being deleted
    kubectl.patch(js, {"metadata": {"finalizers": ["test.workload-map.dev/hold"]}})
    kubectl.delete("jobset.x-k8s.io/v1alpha2", "JobSet", NS, "facts")
    body = get(c, f"/workloads/{NS}/facts").json()
    assert body["live"]["deleting"] is True and body["status"]["deleting"] is True
    kubectl.patch(js, {"metadata": {"finalizers": None}})
    assert get(c, f"/workloads/{NS}/facts").status_code == 404


def test_interpret_by_reference(service: Server, world: dict[str, Any]) -> None:
    c = service.client()
    ref = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": NS, "name": "llm-pretrain"}
    r = c.post("/interpret", json={"ref": ref})
    assert r.status_code == 200, r.text
    by_ref = r.json()
    assert by_ref["workload"]["uid"] == world["jobset"]["metadata"]["uid"]
    by_manifest = c.post("/interpret", json=world["jobset"]).json()
    assert by_ref["totals"] == by_manifest["totals"] and by_ref["tree"] == by_manifest["tree"]

    r = c.post("/interpret", json={"ref": dict(ref, name="nope")})
    assert r.status_code == 404 and r.json()["type"].endswith("workload-not-found")
    r = c.post("/interpret", json={"ref": dict(ref, kind="NotAKind")})
    assert r.status_code == 404 and r.json()["type"].endswith("kind-not-served")
    r = c.post("/interpret", json={"ref": {"apiVersion": "ray.io/v1", "kind": "RayJob", "namespace": NS,
                                           "name": "x"}})
    assert r.status_code == 404 and "not served" in r.json()["detail"]


def test_summary_list(service: Server, world: dict[str, Any]) -> None:
    c = service.client()
    r = get(c, "/workloads", namespace=NS)
    assert r.status_code == 200, r.text
    rows = {(x["workload"]["kind"], x["workload"]["name"]): x for x in r.json()["items"]}
    # top level only: Jobs, their pods, the Deployment of the InferenceService, the web pod are nested
    assert ("Job", "llm-pretrain-trainer-0") not in rows and ("Pod", "llm-pretrain-trainer-0-0") not in rows
    assert ("Deployment", "llama") not in rows and ("Pod", "web-abc-1") not in rows
    assert ("Pod", "chain-5") not in rows
    assert {("JobSet", "llm-pretrain"), ("JobSet", "twin"), ("PyTorchJob", "twin"), ("InferenceService", "llama"),
            ("Deployment", "web"), ("Pod", "stray")} <= rows.keys()
    js = rows[("JobSet", "llm-pretrain")]
    assert js["phase"] == "Running" and js["pods"] == {"ready": 4, "desired": 7} and js["gpus"] == 12
    assert rows[("Deployment", "web")]["pods"] == {"ready": 1, "desired": 2}
    assert rows[("Pod", "debug-shell")]["pods"] == {"ready": 1, "desired": 1}

    only = get(c, "/workloads", namespace=NS, kind="jobsets").json()["items"]
    assert {x["workload"]["name"] for x in only} >= {"llm-pretrain", "twin"}
    assert {x["workload"]["kind"] for x in only} == {"JobSet"}
    everywhere = get(c, "/workloads").json()["items"]
    assert any(x["workload"]["namespace"] == NS for x in everywhere)
    empty = get(c, "/workloads", namespace="empty-ns-none").json()
    assert (empty["items"], empty["warnings"]) == ([], []) and empty["freshness"]["source"] in ("model", "direct")


def test_unknown_kinds_do_not_cause_discovery_storms(service: Server, world: dict[str, Any]) -> None:
    """Misses are cached: 40 requests naming kinds the cluster does not serve cost at most one
    discovery fetch per group-version, not one full re-discovery each."""
    c = service.client()

    def fetches() -> float:
        for line in c.get("/metrics").text.splitlines():
            if line.startswith("wlmap_discovery_fetches_total "):
                return float(line.split()[-1])
        raise AssertionError("no discovery metric")

    before = fetches()
    for i in range(20):
        for api, kind in (("nothing.example.com/v1", "Ghost"), ("jobset.x-k8s.io/v1alpha2", "NotAKind")):
            r = c.post("/interpret", json={"ref": {"apiVersion": api, "kind": kind, "namespace": NS, "name": f"x{i}"}})
            assert r.status_code == 404 and r.json()["type"].endswith("kind-not-served")
    assert fetches() - before <= 2
