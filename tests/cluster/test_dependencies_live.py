"""Dependencies' `exists` in live answers, on a real API server: what the pods refer to is looked
up in the workload's cluster (metadata only), and a caller who may not read a kind there learns
nothing of it (`null`)."""

from __future__ import annotations

from typing import Any

import httpx

from ..service.conftest import Server
from .conftest import token
from .kubeobjects import Kubectl, reader_rbac
from .util import eventually, fixture_object

NS = "wl-deps"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"


def _needs_things(kubectl: Kubectl) -> None:
    kubectl.ensure_namespace(NS)
    kubectl.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": NS},
                   "data": {"k": "v"}})
    kubectl.apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": NS},
                   "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    kubectl.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "deps-high"},
                   "value": 1000})
    obj, status = fixture_object(JOBSET, NS, "needs")
    [rj] = [r for r in obj["spec"]["replicatedJobs"] if r["name"] == "trainer"]
    spec = rj["template"]["spec"]["template"]["spec"]
    spec.update(priorityClassName="deps-high", serviceAccountName="absent-sa", volumes=[
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "tok", "secret": {"secretName": "later"}},
    ])
    spec["containers"][0]["envFrom"] = [{"secretRef": {"name": "absent", "optional": True}}]
    kubectl.set_status(kubectl.apply(obj), status)


def _exists(body: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(d["kind"], d["name"]): d.get("exists", "unset") for d in body["dependencies"]}


def _live(c: httpx.Client) -> dict[str, Any] | None:
    r = c.get(f"/workloads/{NS}/needs")
    return r.json() if r.status_code == 200 else None


def test_live_answers_say_which_dependencies_exist(service: Server, kubectl: Kubectl) -> None:
    _needs_things(kubectl)
    c = service.client()
    body, _ = eventually(lambda: _live(c), what="the JobSet in the live model")
    assert _exists(body) == {
        ("ConfigMap", "cfg"): True,
        ("PersistentVolumeClaim", "data"): True,
        ("PriorityClass", "deps-high"): True,
        ("Secret", "absent"): False,
        ("Secret", "later"): False,
        ("ServiceAccount", "absent-sa"): False,
    }
    # a `ref` reads the same; a manifest sent inline was read from no cluster: no `exists`
    ref = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": NS, "name": "needs"}
    r = c.post("/interpret", json={"ref": ref})
    assert r.status_code == 200, r.text
    assert _exists(r.json()) == _exists(body)
    full = kubectl.get("jobset.x-k8s.io/v1alpha2", "JobSet", NS, "needs")
    inline = c.post("/interpret", json={"object": full}).json()
    assert set(_exists(inline).values()) == {"unset"} and len(inline["dependencies"]) == 6

    # a dependency created later reads true once the short-lived answer expires
    kubectl.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "later", "namespace": NS},
                   "stringData": {"t": "x"}})
    eventually(lambda: _exists(_live(c) or {"dependencies": []}).get(("Secret", "later")) is True, timeout=25,
               what="the new Secret")


def test_exists_is_null_where_the_caller_may_not_read(secured: Server, kubectl: Kubectl) -> None:
    _needs_things(kubectl)
    for doc in reader_rbac("erin", NS, [("jobset.x-k8s.io", "jobsets"), ("", "configmaps")]):
        kubectl.apply(doc)
    c = httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token('erin')}"}, timeout=30)
    body, _ = eventually(lambda: _live(c), what="the JobSet for erin")
    seen = _exists(body)
    assert seen[("ConfigMap", "cfg")] is True  # erin may get ConfigMaps there
    # ...and nothing else: neither what exists nor what does not
    assert {k: v for k, v in seen.items() if k[0] != "ConfigMap"} == {
        ("PersistentVolumeClaim", "data"): None, ("PriorityClass", "deps-high"): None,
        ("Secret", "absent"): None, ("Secret", "later"): None, ("ServiceAccount", "absent-sa"): None}
