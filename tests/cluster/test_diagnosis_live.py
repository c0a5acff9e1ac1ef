"""Why a workload is not running, on a real API server: pods with the conditions and container
states the scheduler and the kubelet write, real Event objects from "controllers", read through
the live model (from its watch: no API request per read) and directly (`--cache false`), which
must agree; the list row's reason, the caller's right to Events, and Events coming and going."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .diagnosis_cases import (
    PVC_MSG,
    QUOTA_MSG,
    UNSCHEDULABLE_MSG,
    event,
    image_pull_backoff,
    oom_crash_loop,
    unschedulable,
)
from .fixtures import SERVICE_NS, token
from .kubeobjects import Kubectl, owner_ref, pod, reader_rbac
from .test_model import api_requests
from .util import eventually, fixture_object

NS = "wl-diag"
JOBSET = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/pending.yaml"


def _job(kubectl: Kubectl, js: dict[str, Any], name: str) -> dict[str, Any]:
    return kubectl.apply({"apiVersion": "batch/v1", "kind": "Job",
                          "metadata": {"name": name, "namespace": NS, "ownerReferences": [owner_ref(js)]},
                          "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                         "containers": [{"name": "c", "image": "x"}]}}}})


def _trainer_pod(kubectl: Kubectl, job: dict[str, Any], name: str, index: int, status: dict[str, Any],
                 node: str | None) -> dict[str, Any]:
    p = pod(NS, name, job, gpus=2, node=node, labels={"jobset.sigs.k8s.io/replicatedjob-name": "trainer",
                                                      "jobset.sigs.k8s.io/job-index": str(index)})
    return kubectl.set_status(kubectl.apply(p), status)


@pytest.fixture(scope="module")
def world(kubectl: Kubectl) -> dict[str, Any]:
    """A JobSet stuck four ways: its coordinator Job refused by a quota (no pod at all), two trainer
    pods short of GPUs, one pulling an image that does not exist, one OOM-killed in a crash loop."""
    kubectl.ensure_namespace(NS)
    obj, status = fixture_object(JOBSET, NS, "stuck")
    js = kubectl.set_status(kubectl.apply(obj), status)
    coord = _job(kubectl, js, "stuck-coordinator-0")
    t0, t1 = _job(kubectl, js, "stuck-trainer-0"), _job(kubectl, js, "stuck-trainer-1")
    p00 = _trainer_pod(kubectl, t0, "stuck-trainer-0-0", 0, unschedulable(), None)
    _trainer_pod(kubectl, t0, "stuck-trainer-0-1", 0, unschedulable(), None)
    p10 = _trainer_pod(kubectl, t1, "stuck-trainer-1-0", 1, oom_crash_loop(), "gpu-node-3")
    _trainer_pod(kubectl, t1, "stuck-trainer-1-1", 1, image_pull_backoff(), "gpu-node-3")
    kubectl.create(event("stuck-coordinator-0.quota", NS, coord, "FailedCreate", QUOTA_MSG, "job-controller", 14))
    # repeats of what the pods' state says: left out
    kubectl.create(event("stuck-trainer-0-0.sched", NS, p00, "FailedScheduling", UNSCHEDULABLE_MSG, "default-scheduler"))
    kubectl.create(event("stuck-trainer-1-0.backoff", NS, p10, "BackOff", "Back-off restarting failed container",
                         "kubelet", 9))
    # an event too old to matter, and a Normal one: neither is kept
    kubectl.create(event("stuck-trainer-1.old", NS, t1, "FailedCreate", "long ago", "job-controller", ago=7200))
    normal = event("stuck-trainer-1.ok", NS, t1, "SuccessfulCreate", "Created pod", "job-controller")
    kubectl.create(dict(normal, type="Normal"))
    # a bare pod waiting for its volume claim
    bare = pod(NS, "needs-data", None)
    bare["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "dataset"}}]
    kubectl.set_status(kubectl.apply(bare), unschedulable(PVC_MSG))
    return {"jobset": js, "coordinator": coord}


EXPECTED = [  # (severity, reason, component, pods)
    ("error", "Unschedulable", "replicated-job", 2),
    ("error", "ImagePullBackOff", "replicated-job", 1),
    ("error", "OOMKilled", "replicated-job", 1),
    ("error", "FailedCreate", None, 0),
    ("warning", "GangMinimumNotMet", None, 0),
]


def _diagnosis(s: Server, name: str = "stuck", **headers: str) -> list[dict[str, Any]] | None:
    """The workload's diagnosis, without NoCapacity: whether its waiting pods fit depends on the
    nodes other tests hold in the shared API server (the verdict: tests/cluster/test_fit_http.py)."""
    r = httpx.get(f"{s.url}/workloads/{NS}/{name}", headers=headers, timeout=30)
    if r.status_code != 200:
        return None
    return [e for e in r.json().get("diagnosis") or [] if e["reason"] != "NoCapacity"]


def _brief(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["severity"], e["reason"], e["component"], e["pods"]) for e in entries]


def test_the_model_and_a_direct_read_explain_it_the_same(service: Server, direct: Server, world: dict[str, Any]
                                                         ) -> None:
    got, _ = eventually(lambda: (d := _diagnosis(service)) and len(d) == len(EXPECTED) and d,
                        what="the diagnosis in the model")
    assert _brief(got) == EXPECTED
    by = {e["reason"]: e for e in got}
    assert by["Unschedulable"]["message"] == UNSCHEDULABLE_MSG
    assert by["Unschedulable"]["insufficient"] == ["nvidia.com/gpu"]
    assert by["Unschedulable"]["instances"] == by["OOMKilled"]["instances"] == ["trainer"]
    assert by["Unschedulable"]["since"] == "2026-12-01T10:00:00Z"
    assert by["FailedCreate"]["message"] == "Job stuck-coordinator-0: " + QUOTA_MSG
    assert "exit code 137" in by["OOMKilled"]["message"]
    assert by["GangMinimumNotMet"]["message"].startswith("2 of the 7 pods the gang needs")  # 1 + 2 x 2 + 1 x 2
    assert _diagnosis(direct) == got

    bare = _diagnosis(service, "needs-data")
    assert bare is not None and _brief(bare) == [("error", "PendingVolumeClaim", "pod", 1)]
    assert "claims: dataset" in bare[0]["message"] and _diagnosis(direct, "needs-data") == bare


def test_rows_carry_the_top_reason(service: Server, direct: Server, world: dict[str, Any]) -> None:
    def reasons(s: Server) -> dict[str, Any]:
        rows = httpx.get(f"{s.url}/workloads", params={"namespace": NS}, timeout=30).json()["items"]
        return {r["workload"]["name"]: r["reason"] for r in rows}

    want = {"stuck": "Unschedulable", "needs-data": "PendingVolumeClaim"}
    eventually(lambda: reasons(service) == want, what="the reasons on the model's rows")
    assert reasons(direct) == want


def test_reads_from_the_model_cost_the_api_server_nothing(apiserver: ApiServer, service: Server, direct: Server,
                                                          world: dict[str, Any]) -> None:
    eventually(lambda: (d := _diagnosis(service)) and len(d) == len(EXPECTED), what="the model's diagnosis")

    def cost(s: Server) -> int:
        before = api_requests(apiserver)
        for _ in range(10):
            assert _brief(_diagnosis(s) or []) == EXPECTED
        return api_requests(apiserver) - before - 1  # the second /metrics read counts itself

    model, direct_cost = cost(service), cost(direct)
    assert model <= 2, model  # background only (a lease, a definition event), never per read
    assert direct_cost >= 10 * 3, direct_cost  # the same reads, direct: the object, its pods, the Events...


def test_events_coming_and_going_reach_the_answer_and_the_row(service: Server, kubectl: Kubectl,
                                                              world: dict[str, Any]) -> None:
    eventually(lambda: (d := _diagnosis(service)) and len(d) == len(EXPECTED), what="the model's diagnosis")
    job = world["coordinator"]
    kubectl.delete("v1", "Event", NS, "stuck-coordinator-0.quota")
    eventually(lambda: "FailedCreate" not in {e["reason"] for e in _diagnosis(service) or [{"reason": "FailedCreate"}]},
               what="the deleted event leaving the diagnosis")
    webhook = ('Error creating: admission webhook "validate.kyverno.svc" denied the request: '
               "policy gpu-limits: GPU requests above 4 need the team label")
    kubectl.create(event("stuck-coordinator-0.webhook", NS, job, "FailedCreate", webhook, "job-controller"))
    eventually(lambda: any(e["message"] == "Job stuck-coordinator-0: " + webhook for e in _diagnosis(service) or []),
               what="the new event in the diagnosis")
    kubectl.delete("v1", "Event", NS, "stuck-coordinator-0.webhook")
    kubectl.create(event("stuck-coordinator-0.quota", NS, job, "FailedCreate", QUOTA_MSG, "job-controller", 14))


def _streamed_reasons(s: Server, headers: dict[str, str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with httpx.stream("GET", f"{s.url}/workloads", params={"namespace": NS, "watch": "true"}, headers=headers,
                      timeout=30) as r:
        for line in r.iter_lines():
            if line.strip():
                row = json.loads(line)["object"]
                seen[row["workload"]["name"]] = row["reason"]
            if len(seen) == 2:
                return seen
    return seen


def test_events_need_the_callers_right_to_list_them(apiserver: ApiServer, kubectl: Kubectl, world: dict[str, Any]
                                                    ) -> None:
    """With auth on, a caller who may read the JobSet and its pods but not Events gets the pods'
    reasons only, and is told why; the row's reason is left out for them."""
    for doc in reader_rbac("carol", NS, [("jobset.x-k8s.io", "jobsets")]):
        kubectl.apply(doc)
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
               "--auth", "kubernetes", "--karta-resources", "false")
    try:
        auth = {"Authorization": f"Bearer {token('carol')}"}
        got, _ = eventually(lambda: _diagnosis(s, **auth), what="carol's diagnosis")
        assert [e[1] for e in _brief(got)] == ["Unschedulable", "ImagePullBackOff", "OOMKilled", "GangMinimumNotMet"]
        body = httpx.get(f"{s.url}/workloads/{NS}/stuck", headers=auth, timeout=30).json()
        assert "not allowed to list events in namespace wl-diag, so the diagnosis leaves Events out" in body["warnings"]
        rows = httpx.get(f"{s.url}/workloads", params={"namespace": NS}, headers=auth, timeout=30).json()
        assert {r["workload"]["name"]: r["reason"] for r in rows["items"]} == {"stuck": None, "needs-data": None}
        assert _streamed_reasons(s, auth) == {"stuck": None, "needs-data": None}  # as the list shows them
        admin = {"Authorization": f"Bearer {token('admin')}"}
        assert _streamed_reasons(s, admin) == {"stuck": "Unschedulable", "needs-data": "PendingVolumeClaim"}
        assert _brief(eventually(lambda: _diagnosis(s, **admin), what="admin's diagnosis")[0]) == EXPECTED
    finally:
        s.stop()
