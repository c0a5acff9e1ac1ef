"""`GET /workloads/{namespace}/{name}?format=` on a real API server (docs/api-contract.md,
"Consumer formats"): the live object in Kueue's, Karmada's and KAI's shapes, equal to the shape of
the object the API server holds sent to POST /interpret, from the live model and from direct
reads; read with the caller's rights like the GET without a format."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .conftest import token
from .kubeobjects import Kubectl, reader_rbac
from .util import eventually, fixture_object

NS, OTHER = "wl-formats", "wl-formats-other"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
API = "jobset.x-k8s.io/v1alpha2"
LABELS = {"kai.scheduler/queue": "team-a", "priorityClassName": "inference", "kai.scheduler/preemptibility": "non-preemptible"}


@pytest.fixture(scope="module")
def jobset(kubectl: Kubectl) -> dict[str, Any]:
    for ns in (NS, OTHER):
        kubectl.ensure_namespace(ns)
    obj, status = fixture_object(JOBSET, NS, "shaped")
    obj["metadata"]["labels"] = LABELS
    js = kubectl.set_status(kubectl.apply(obj), status)
    other, status = fixture_object(JOBSET, OTHER, "unseen")
    kubectl.set_status(kubectl.apply(other), status)
    # carol may get JobSets in NS, not list its pods: enough for a format, which reads no pods
    for doc in reader_rbac("carol", NS, [("jobset.x-k8s.io", "jobsets")], pods=False):
        kubectl.apply(doc)
    return js


def _as(s: Server, user: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token(user)}"} if user else {}
    return httpx.Client(base_url=s.url, headers=headers, timeout=30)


@pytest.mark.parametrize("reader", ["service", "direct"])
def test_live_workload_in_each_format(reader: str, request: pytest.FixtureRequest, kubectl: Kubectl,
                                      jobset: dict[str, Any]) -> None:
    c = _as(request.getfixturevalue(reader))
    eventually(lambda: c.get(f"/workloads/{NS}/shaped").status_code == 200, what="the JobSet in the live model")
    held = kubectl.get(API, "JobSet", NS, "shaped")
    for fmt in ("kueue", "karmada", "kai"):
        r = c.get(f"/workloads/{NS}/shaped", params={"format": fmt})
        assert r.status_code == 200, r.text
        sent = c.post("/interpret", params={"format": fmt}, json={"object": held})
        assert r.json() == sent.json(), fmt  # the object the API server holds, whole
        ref = {"apiVersion": API, "kind": "JobSet", "namespace": NS, "name": "shaped"}
        assert c.post("/interpret", params={"format": fmt}, json={"ref": ref}).json() == r.json(), fmt
        twin = c.get(f"/clusters/local/workloads/{NS}/shaped", params={"format": fmt, "kind": "JobSet"})
        assert twin.status_code == 200 and twin.json() == r.json(), twin.text
    (group,) = c.get(f"/workloads/{NS}/shaped", params={"format": "kai"}).json()["podGroups"]
    assert group["metadata"]["ownerReferences"] == [
        {"apiVersion": API, "kind": "JobSet", "name": "shaped", "uid": held["metadata"]["uid"]}]
    assert group["metadata"]["namespace"] == NS
    assert {k: group["spec"].get(k) for k in ("queue", "priorityClassName", "preemptibility")} == {
        "queue": "team-a", "priorityClassName": "inference", "preemptibility": "non-preemptible"}
    sets = c.get(f"/workloads/{NS}/shaped", params={"format": "kueue"}).json()["podSets"]
    assert [(s["name"], s["count"]) for s in sets] == [("coordinator", 1), ("evaluator", 2), ("trainer", 4)]


def test_format_errors_on_the_live_route(service: Server, jobset: dict[str, Any]) -> None:
    c = _as(service)
    r = c.get(f"/workloads/{NS}/shaped", params={"format": "volcano"})
    assert r.status_code == 400 and r.json()["type"].endswith(":unknown-format")
    assert "kueue, karmada, kai" in r.json()["detail"]
    r = c.get(f"/workloads/{NS}/shaped", params={"format": "kai", "watch": "true"})
    assert r.status_code == 400 and r.json()["type"].endswith(":format-not-on-streams")
    r = c.get(f"/workloads/{NS}/no-such-workload", params={"format": "kai"})
    assert r.status_code == 404, r.text


def test_format_needs_the_callers_rights(secured: Server, jobset: dict[str, Any]) -> None:
    carol, bob = _as(secured, "carol"), _as(secured, "bob")
    # without a format, the pod view needs `list pods`; the shapes read no pods
    assert carol.get(f"/workloads/{NS}/shaped", params={"kind": "JobSet"}).status_code == 403
    r = carol.get(f"/workloads/{NS}/shaped", params={"kind": "JobSet", "format": "karmada"})
    assert r.status_code == 200 and [x["name"] for x in r.json()["components"]][-1] == "trainer", r.text
    # no rights: the same 403 as without a format, for what exists and for what does not
    for who, ns, name in ((bob, NS, "shaped"), (carol, OTHER, "unseen")):
        a = who.get(f"/workloads/{ns}/{name}", params={"kind": "JobSet", "format": "kai"})
        b = who.get(f"/workloads/{ns}/no-such-workload", params={"kind": "JobSet", "format": "kai"})
        plain = who.get(f"/workloads/{ns}/{name}", params={"kind": "JobSet"})
        assert a.status_code == 403 and a.json()["detail"] == b.json()["detail"] == plain.json()["detail"], a.text
    assert _as(secured).get(f"/workloads/{NS}/shaped", params={"format": "kai"}).status_code == 401
